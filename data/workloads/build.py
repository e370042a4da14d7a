#!/usr/bin/env python3
"""Build the shape workload: 37 states x 21 criteria (stdlib only, deterministic).

Writes, next to this script:
  shape-full.jsonl   37 states x 21 criteria = 777 rows
  shape-small.jsonl  first 2 states x 21 criteria = 42 rows (same bytes as the
                     first 42 lines of shape-full.jsonl)

Each state is a JSON object: a support-queue snapshot holding one primary ticket
(named by "primary_ticket") buried among 4-6 short background tickets from other
customers. The 21 criteria ask about the primary ticket only; every gold label
is computed from the generated fields, so it is correct by construction.

Run: python data/workloads/build.py   (rewrites both files byte-for-byte)
"""
import datetime as dt
import json
import os
import random

SEED = 3721
N_STATES = 37
N_SMALL = 2

FIRST = ["Amira", "Ben", "Chloe", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas",
         "Kofi", "Lena", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Sven", "Tara",
         "Umar", "Vera", "Wei", "Yara", "Zoe", "Liam", "Maya", "Noah", "Olga", "Pavel"]
LAST = ["Adeyemi", "Berg", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito",
        "Jansen", "Kowalski", "Lindqvist", "Moreau", "Novak", "Okafor", "Petrov", "Rossi",
        "Schmidt", "Tanaka", "Varga", "Weber", "Young", "Zhang", "Murphy", "Silva"]
# (name, category)
PRODUCTS = [("Aero X2 router", "hardware"), ("Lumen desk lamp", "hardware"),
            ("Pulse fitness band", "hardware"), ("Nimbus 4K webcam", "hardware"),
            ("Orbit smart thermostat", "hardware"), ("Quill e-reader", "hardware"),
            ("CloudVault backup", "software"), ("Ledgerly invoicing", "software"),
            ("PhotoForge editor", "software"), ("TaskHive planner", "software"),
            ("SecureNest VPN", "software"), ("Chorus team chat", "software")]
COUNTRIES = ["Germany", "France", "Spain", "Netherlands", "Ireland", "Poland", "Sweden",
             "Italy", "United Kingdom", "Austria"]
LANGS = ["English", "German", "French", "Spanish", "Dutch", "Polish", "Swedish", "Italian"]
PLANS = ["Free", "Basic", "Pro", "Enterprise"]
CHANNELS = ["email", "chat", "phone", "web form"]
STATUSES = ["open", "pending customer", "escalated", "resolved"]
PRIORITIES = ["low", "normal", "high", "urgent"]
PAYMENTS = ["credit card", "PayPal", "bank transfer", "invoice"]
AGENTS = ["K. Brandt", "L. Osei", "M. Ruiz", "S. Holm", "D. Kaur", "T. Nguyen"]
BG_NOTES = [
    "asks for a refund on a duplicate charge",
    "reports the parcel arrived two weeks late",
    "wants to cancel the annual subscription",
    "screen cracked on arrival, requests replacement",
    "cannot log in after password reset",
    "asks whether the promo code SPRING20 still works",
    "threatens a chargeback over a missing order",
    "requests an invoice with a VAT number",
    "app crashes when exporting to PDF",
    "asks to move the account to another email",
    "wants to upgrade to the Enterprise plan",
    "question about data export format",
]

CRITERIA = [
    ("c01", "Does the primary customer ask for a refund?"),
    ("c02", "Was the primary customer's account opened more than one year before the snapshot date?"),
    ("c03", "Is the primary ticket's priority high or urgent?"),
    ("c04", "Is the primary ticket still unresolved (status other than resolved)?"),
    ("c05", "Was the primary ticket submitted by phone?"),
    ("c06", "Is the order amount in the primary ticket above 100 EUR?"),
    ("c07", "Does the primary customer report that the product is damaged or not working?"),
    ("c08", "Is the primary customer on the Enterprise plan?"),
    ("c09", "Does the primary ticket include at least one attachment?"),
    ("c10", "Has the primary customer opened more than three previous tickets?"),
    ("c11", "Does the primary customer ask to cancel their subscription?"),
    ("c12", "Is the primary customer based in Germany?"),
    ("c13", "Does the primary customer report a late or missing delivery?"),
    ("c14", "Was the primary ticket opened less than 7 days before the snapshot date?"),
    ("c15", "Has the primary ticket been assigned to an agent?"),
    ("c16", "Does the primary customer threaten legal action or a chargeback?"),
    ("c17", "Is the primary ticket's product a hardware device?"),
    ("c18", "Does the primary customer prefer to be contacted in English?"),
    ("c19", "Did the primary customer rate their last support interaction 3 or lower (out of 5)?"),
    ("c20", "Was the primary order paid by credit card?"),
    ("c21", "Does the primary customer mention a promo or discount code?"),
]

OPTIONS = [{"id": "yes", "description": "Yes"}, {"id": "no", "description": "No"}]


def message(r, f, product, category, order_id):
    parts = [r.choice(["Hello,", "Hi team,", "Good morning,", "Hi,"]),
             f"this is about order {order_id} ({product})."]
    if f["delivery"]:
        # a product that never arrived cannot also be reported broken
        if category == "hardware":
            late = "It arrived twelve days after the promised date."
            lost = "The parcel still has not arrived; tracking promised last week."
        else:
            late = "The licence key was delivered nine days late."
            lost = "The licence key was never delivered to me."
        parts.append(late if f["defect"] else r.choice([late, lost]))
    if f["defect"]:
        parts.append(r.choice([
            "The casing is cracked and it will not power on.",
            "It stopped working after two days.",
        ]) if category == "hardware" else r.choice([
            "The app crashes on startup every time.",
            "Since the update it fails to sync (error 503).",
        ]))
    if f["promo"]:
        parts.append(r.choice([
            "My discount code WELCOME15 was not applied.",
            "The promo code AUTUMN10 did not reduce the total.",
        ]))
    if f["refund"]:
        parts.append(r.choice([
            "Please refund the full amount.",
            "I would like my money back for this order.",
        ]))
    elif f["refund_decoy"]:
        parts.append("I don't want a refund, just a fix.")
    if f["cancel"]:
        parts.append(r.choice([
            "Please also cancel my subscription.",
            "I want to cancel my subscription before the next renewal.",
        ]))
    if f["legal"]:
        parts.append(r.choice([
            "If this is not solved I will file a chargeback.",
            "Otherwise my lawyer will handle this.",
        ]))
    if not any(f[k] for k in ("delivery", "defect", "promo", "refund", "cancel", "legal")):
        parts.append(r.choice([
            "How do I change the billing address?",
            "Which version should I be on?",
        ]))
    parts.append(r.choice(["Thanks.", "Regards.", "Thank you in advance."]))
    return " ".join(parts)


def build_state(i):
    r = random.Random(SEED * 1000 + i)
    snapshot = dt.date(2024, 6, 1) + dt.timedelta(days=r.randrange(0, 28))
    used_names = set()

    def name():
        while True:
            n = f"{r.choice(FIRST)} {r.choice(LAST)}"
            if n not in used_names:
                used_names.add(n)
                return n

    product, category = r.choice(PRODUCTS)
    f = {k: r.random() < 0.5 for k in ("refund", "delivery", "defect", "promo", "cancel", "legal")}
    f["refund_decoy"] = (not f["refund"]) and r.random() < 0.5
    acct_days = r.choice([r.randrange(40, 330), r.randrange(400, 2200)])
    opened_days = r.choice([r.randrange(0, 6), r.randrange(9, 40)])
    order_id = f"ORD-{r.randrange(100000, 999999)}"
    ticket_id = f"T-{r.randrange(1000, 9999)}"
    primary = {
        "ticket": ticket_id,
        "customer": name(),
        "account_opened": (snapshot - dt.timedelta(days=acct_days)).isoformat(),
        "plan": "Enterprise" if r.random() < 0.4 else r.choice(PLANS[:3]),
        "country": "Germany" if r.random() < 0.4 else r.choice(COUNTRIES[1:]),
        "preferred_language": "English" if r.random() < 0.5 else r.choice(LANGS[1:]),
        "product": product,
        "product_type": category,
        "opened": (snapshot - dt.timedelta(days=opened_days)).isoformat(),
        "channel": "phone" if r.random() < 0.45 else r.choice(CHANNELS[:2] + CHANNELS[3:]),
        "status": "resolved" if r.random() < 0.45 else r.choice(STATUSES[:3]),
        "priority": r.choice(PRIORITIES),
        "assigned_to": r.choice(AGENTS) if r.random() < 0.5 else None,
        "order_amount_eur": round(r.choice([r.uniform(9, 99), r.uniform(101, 480)]), 2),
        "payment": "credit card" if r.random() < 0.45 else r.choice(PAYMENTS[1:]),
        "previous_tickets": r.randrange(0, 8),
        "last_csat": r.choice([1, 2, 3, 4, 5, None]),
        "attachments": r.choice([0, 0, 0, 1, 2]),
        "message": "",
    }
    primary["message"] = message(r, f, product, category, order_id)
    bg = []
    for _ in range(r.randrange(4, 7)):
        while True:
            tid = f"T-{r.randrange(1000, 9999)}"
            if tid != ticket_id and all(b["ticket"] != tid for b in bg):
                break
        bg.append({"ticket": tid, "customer": name(), "note": r.choice(BG_NOTES)})
    pos = r.randrange(1, len(bg))  # never first, never last
    tickets = bg[:pos] + [primary] + bg[pos:]
    state = {"snapshot_date": snapshot.isoformat(),
             "primary_ticket": ticket_id, "tickets": tickets}

    p = primary
    labels = {
        "c01": f["refund"],
        "c02": acct_days > 366,
        "c03": p["priority"] in ("high", "urgent"),
        "c04": p["status"] != "resolved",
        "c05": p["channel"] == "phone",
        "c06": p["order_amount_eur"] > 100,
        "c07": f["defect"],
        "c08": p["plan"] == "Enterprise",
        "c09": p["attachments"] >= 1,
        "c10": p["previous_tickets"] > 3,
        "c11": f["cancel"],
        "c12": p["country"] == "Germany",
        "c13": f["delivery"],
        "c14": opened_days < 7,
        "c15": p["assigned_to"] is not None,
        "c16": f["legal"],
        "c17": category == "hardware",
        "c18": p["preferred_language"] == "English",
        "c19": p["last_csat"] is not None and p["last_csat"] <= 3,
        "c20": p["payment"] == "credit card",
        "c21": f["promo"],
    }
    return state, labels


def rows():
    out = []
    for i in range(1, N_STATES + 1):
        state, labels = build_state(i)
        sid = f"s{i:02d}"
        for cid, question in CRITERIA:
            out.append({"id": f"{sid}-{cid}", "state": state, "question": question,
                        "options": OPTIONS, "state_id": sid, "criterion_id": cid,
                        "label": "yes" if labels[cid] else "no"})
    return out


def dump(path, rs):
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rs:
            fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    rs = rows()
    dump(os.path.join(here, "shape-full.jsonl"), rs)
    dump(os.path.join(here, "shape-small.jsonl"), rs[: N_SMALL * len(CRITERIA)])


if __name__ == "__main__":
    main()
