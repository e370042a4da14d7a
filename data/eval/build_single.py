#!/usr/bin/env python3
"""Build the labelled single-request set from authored content (stdlib only).

Writes, next to this script:
  single.jsonl  typed decisions (choice / yesno / score) about realistic states in eight
                families (returns, incident, hr, contract, review, travel, health-admin,
                moderation); every scenario ("group") is one state asked 2-4 questions,
                each answerable on its own, with a one-sentence `why` for its gold label.
                Rows that hold a distractor, a stated exception, negation or a small
                calculation carry "difficulty": "hard".

The set measures how often the answers to ONE request about a never-seen question are
right: no calibration or batch statistics are meant to be fitted on it.

All content below is hand-written by the SemIf team; nothing is random, so the output
is byte-for-byte reproducible: python data/eval/build_single.py
"""
import json
import os

HARD = "hard"


def opts(*pairs):
    return [{"id": i, "description": d} for i, d in pairs]


YN = opts(("yes", "Yes"), ("no", "No"))

# ordered scales (score questions), lowest first
REFUND3 = opts(("none", "None of it"), ("part", "Part of it"), ("full", "All of it"))
SEVERITY = opts(
    ("low", "Low: cosmetic, or a single user affected; no business impact"),
    ("medium", "Medium: a feature is degraded for some users, and a workaround exists"),
    ("high", "High: a key function (such as login, checkout or payments) fails for many or all users, "
             "while the rest of the service works"),
    ("critical", "Critical: the whole service is down for everyone, or customer data is lost or exposed"))
PRIORITY = opts(
    ("low", "Low: no deadline, or the deadline is more than 30 days away"),
    ("medium", "Medium: the deadline is 8 to 30 days away"),
    ("high", "High: the deadline is within 7 days"))
SENTIMENT5 = opts(
    ("1", "Very negative: only complaints, nothing good said"),
    ("2", "Negative: mainly complaints, with some small praise"),
    ("3", "Mixed: praise and complaints weigh about the same"),
    ("4", "Positive: mainly praise, with some small complaint"),
    ("5", "Very positive: only praise, no complaints"))
CHANGES3 = opts(
    ("none", "Date changes are not allowed"),
    ("fee", "Date changes are allowed for a fee"),
    ("free", "Date changes are allowed free of charge"))
BOOKING4 = opts(
    ("later", "In more than 28 days"),
    ("weeks", "In 8 to 28 days"),
    ("week", "In 1 to 7 days"),
    ("today", "Today"))
ACTION4 = opts(
    ("none", "No action"),
    ("warn", "Remove the post and warn the author"),
    ("suspend", "Remove the post, warn the author and suspend them for 7 days"),
    ("ban", "Permanent ban"))

# ---------------------------------------------------------------------------
# Each group: (family, state, [(slug, type, question, options, label, why[, HARD]), ...])
GROUPS = []

# --- returns ----------------------------------------------------------------
GROUPS.append(("returns", (
    "Returns policy (Northwind Home): unused items in their original packaging may be returned within 30 days of "
    "delivery for a refund to the original payment method. Items marked 'final sale' cannot be returned. Return "
    "shipping is free on orders of 50 EUR or more; on smaller orders a 6 EUR return label fee is deducted from the "
    "refund.\n\nOrder NH-40211 (order total 45.00 EUR) was delivered on 2 May. Today is 19 May. Item: one linen "
    "duvet cover at the regular price, not final sale.\n\nCustomer message: \"The colour is much darker than in the "
    "photos on your website. I haven't used it, it's still folded in the sealed bag. Can I send it back?\""), [
    ("window", "yesno", "Is this return request within the policy's return window?", YN, "yes",
     "The cover was delivered on 2 May and today is 19 May, 17 days later, inside the 30-day window."),
    ("amount", "choice", "If the return is accepted, what refund should the customer get?",
     opts(("credit", "45.00 EUR as store credit"), ("full", "45.00 EUR to the original payment method"),
          ("fee", "39.00 EUR to the original payment method"), ("none", "No refund")), "fee",
     "The order total of 45 EUR is under 50 EUR, so the 6 EUR label fee is deducted, leaving 39 EUR for the "
     "original payment method.", HARD),
    ("reason", "choice", "What is the customer's reason for returning the item?",
     opts(("damaged", "It arrived damaged"), ("wrong", "A different item was sent than the one ordered"),
          ("late", "It arrived too late"), ("mind", "The customer changed their mind; nothing is wrong with it"),
          ("looks", "It looks different from the product photos")), "looks",
     "The customer says the colour is much darker than in the photos on the website."),
    ("left", "score", "How much time is left in the return window today?",
     opts(("closed", "None: the window has closed"), ("short", "1 to 7 days"), ("mid", "8 to 14 days"),
          ("long", "15 days or more")), "mid",
     "The 30-day window that began on 2 May ends on 1 June, 13 days after today, 19 May.", HARD),
]))

GROUPS.append(("returns", (
    "Returns policy (Voltio Electronics): electronics may be returned within 14 days of delivery for a full refund "
    "if they are complete and reset to factory settings. After 14 days no refund is possible, but faulty devices "
    "are covered by a 12-month warranty: we repair the device, or replace it if the repair fails.\n\nTicket 88213. "
    "Product: Voltio Air 13 laptop, delivered on 1 March. Today is 20 March.\n\nCustomer message: \"Since the first "
    "day the screen has flickered every few minutes. I've installed the latest drivers and it still happens. I'd "
    "like my money back, please.\""), [
    ("refund", "yesno", "Can the customer still get a refund under the 14-day return rule?", YN, "no",
     "The laptop was delivered on 1 March, 19 days before today, so the 14-day refund period is over."),
    ("offer", "choice", "What should the agent offer the customer?",
     opts(("repair", "A warranty repair of the laptop"), ("refund", "A full refund"),
          ("exchange", "An exchange for a different laptop model"),
          ("nothing", "Nothing, because the request falls outside every policy")), "repair",
     "The refund period is over, but the faulty laptop is within the 12-month warranty, which starts with a "
     "repair.", HARD),
    ("money", "score", "How much of the purchase price can be refunded now?", REFUND3, "none",
     "The 14-day refund period has passed, and the warranty gives a repair or replacement, not money back."),
]))

GROUPS.append(("returns", (
    "Returns policy (Fernway Outfitters): clearance items marked 'final sale' cannot be returned or exchanged. This "
    "does not apply to our own mistakes: if you receive a wrong or damaged item, including a final-sale item, we "
    "send the correct item with a prepaid label for returning the wrong one, or give a full refund if the correct "
    "item is out of stock.\n\nOrder FO-5530: Alpine shell jacket, size M, final sale, 59 EUR.\n\nCustomer message: "
    "\"The jacket in the parcel is size L, the label clearly says L, but my order confirmation says M. What now?\""
    "\n\nStock today: Alpine shell jacket size M: 4 in stock; size L: 2 in stock."), [
    ("returnable", "yesno", "Can this final-sale item be sent back?", YN, "yes",
     "The shop sent size L instead of the ordered M, and the policy lets wrong items be returned even when they "
     "are final sale.", HARD),
    ("action", "choice", "What should the shop do for this customer?",
     opts(("refund", "Refund the 59 EUR"), ("swap", "Send a size M jacket with a prepaid label for returning the L"),
          ("decline", "Decline, because final-sale items cannot be returned"),
          ("discount", "Let the customer keep the L with a discount")), "swap",
     "Size M is in stock, so the policy says to send the correct item with a prepaid label for the wrong one."),
    ("fault", "choice", "Who made the mistake with this order?",
     opts(("customer", "The customer, who ordered the wrong size"),
          ("carrier", "The carrier, who damaged the parcel"),
          ("shop", "The shop, which sent a different size than the one ordered")), "shop",
     "The order confirmation says M but the jacket sent is size L."),
]))

GROUPS.append(("returns", (
    "Returns inspection rules (Kettleby Kitchen):\nGrade A: unopened or unused, all parts present: full refund.\n"
    "Grade B: opened or lightly used, all parts present, no damage: refund minus a 15% restocking fee.\nGrade C: "
    "damaged by the customer, or parts missing: no refund; the item is sent back to the customer.\n\nInspection "
    "note, return RMA-7714, burr coffee grinder, price 120 EUR: \"Box opened. All parts present, including the "
    "cleaning brush and both hoppers. Light coffee residue in the burr chamber, so it has been used. No scratches, "
    "dents or cracks. Powers on and grinds normally.\""), [
    ("grade", "choice", "Which grade should this return get?",
     opts(("a", "Grade A"), ("b", "Grade B"), ("c", "Grade C")), "b",
     "The grinder was used but is complete and undamaged, which is Grade B."),
    ("refund", "score", "How much of the price should be refunded?", REFUND3, "part",
     "A Grade B return is refunded minus a 15% restocking fee, so only part of the price comes back."),
    ("sendback", "yesno", "Should the grinder be sent back to the customer?", YN, "no",
     "Only Grade C items are sent back, and this grinder is complete and undamaged."),
    ("amount", "choice", "How much money does the customer get back?",
     opts(("eur0", "0 EUR"), ("eur18", "18 EUR"), ("eur120", "120 EUR"), ("eur102", "102 EUR")), "eur102",
     "A Grade B refund is 120 EUR minus the 15% fee of 18 EUR, which is 102 EUR.", HARD),
]))

GROUPS.append(("returns", (
    "Returns policy (Brightleaf Toys): the normal return window is 30 days from delivery. Holiday extension: "
    "anything delivered between 1 November and 24 December can be returned until 31 January. Gift returns with a "
    "gift receipt are refunded as store credit to the gift recipient; money back to a card or bank account goes "
    "only to the original buyer.\n\nToday is 20 January.\n\nCustomer message: \"I was given this wooden train set "
    "as a present. It was delivered to my sister on 2 December and she gave it to me. I have the gift receipt. Can "
    "I return it and get the money paid into my bank account?\""), [
    ("window", "yesno", "Is the return still within the allowed return window?", YN, "yes",
     "It was delivered on 2 December, inside the holiday period, so it can be returned until 31 January, which is "
     "after today.", HARD),
    ("bank", "yesno", "Can the money be paid into the customer's bank account?", YN, "no",
     "The customer is the gift recipient, not the original buyer, and money back goes only to the original buyer."),
    ("method", "choice", "If the return is accepted, how will the customer be refunded?",
     opts(("credit", "As store credit for the customer"), ("card", "To the original buyer's card"),
          ("bank", "By transfer to the customer's bank account"), ("cash", "In cash at a shop")), "credit",
     "Gift returns with a gift receipt are refunded as store credit to the gift recipient."),
]))

GROUPS.append(("returns", (
    "Returns policy (Coastline Apparel): unworn clothing with its tags attached can be returned within 30 days of "
    "delivery. Swimwear can only be returned with the hygiene liner still in place. Sunglasses can only be returned "
    "unworn and undamaged.\n\nOrder CA-2291 was delivered on 10 July. Today is 24 July.\n\nCustomer message: \"I'd "
    "like to return three things. The striped T-shirt is too big; it's unworn and the tags are still on. The "
    "swimsuit doesn't fit either, but I took the liner out before trying it on. The sunglasses have a small scratch "
    "on the left lens because I wore them at the beach last weekend.\""), [
    ("which", "choice", "Which items can be returned under the policy?",
     opts(("all", "All three items"), ("tee", "Only the T-shirt"), ("teeswim", "The T-shirt and the swimsuit"),
          ("teesun", "The T-shirt and the sunglasses"), ("none", "None of them")), "tee",
     "The T-shirt is unworn with its tags on, but the swimsuit's liner was removed and the sunglasses were worn and "
     "scratched."),
    ("swim", "yesno", "Can the swimsuit be returned?", YN, "no",
     "Swimwear needs the hygiene liner in place, and the customer took it out.", HARD),
    ("count", "score", "How many of the three items can be returned?",
     opts(("0", "None"), ("1", "One"), ("2", "Two"), ("3", "All three")), "1",
     "Only the T-shirt meets the policy; the swimsuit has no liner and the sunglasses were worn and scratched."),
    ("window", "yesno", "Is the order still inside the 30-day return window?", YN, "yes",
     "It was delivered on 10 July and today is 24 July, 14 days later."),
]))

GROUPS.append(("returns", (
    "Returns policy (Harbour & Hearth): items that arrive damaged are refunded in full, including the original "
    "shipping cost, if the customer reports the damage with a photo within 48 hours of delivery. Damage reported "
    "after 48 hours is compensated with store credit only. Damaged items worth under 30 EUR do not need to be sent "
    "back.\n\nOrder HH-1187, one large stoneware serving bowl (24 EUR plus 4.90 EUR shipping), was delivered this "
    "morning at 09:10. Customer message at 15:25 the same day, with a photo attached: \"The box was crushed when it "
    "arrived and the bowl is broken in three pieces.\""), [
    ("refund", "score", "How much of what the customer paid should be refunded?", REFUND3, "full",
     "The damage was reported with a photo about six hours after delivery, within 48 hours, so the refund is in "
     "full, shipping included."),
    ("cause", "choice", "What went wrong with this order?",
     opts(("wrong", "The wrong item was sent"), ("transit", "The item was damaged in transit"),
          ("late", "The parcel arrived late"), ("missing", "The parcel never arrived"),
          ("mind", "The customer changed their mind")), "transit",
     "The box arrived crushed and the bowl inside was broken."),
]))

# --- incident ---------------------------------------------------------------
RUNBOOK = ("Runbook: page the on-call engineer at once, at any hour, for high or critical incidents; lower "
           "severities go to the owning team's queue for the next business day.")

GROUPS.append(("incident", (
    "Alert, 03:12 UTC Saturday: the primary PostgreSQL volume on db-orders-1 is at 100% disk usage. Since 03:05 "
    "every write to the orders database fails with 'could not extend file: No space left on device'. Customers in "
    "all regions cannot place orders; browsing the catalogue and logging in still work. There is no workaround.\n\n"
    + RUNBOOK), [
    ("severity", "score", "How severe is this incident on our severity scale?", SEVERITY, "high",
     "Placing orders fails for all customers with no workaround while browsing and login still work, which is the "
     "scale's definition of high."),
    ("team", "choice", "Which team should own this incident?",
     opts(("frontend", "Web frontend team"), ("payments", "Payments team"), ("database", "Database team"),
          ("network", "Network team"), ("identity", "Identity and login team")), "database",
     "The failure is a full disk on the orders database server, so every write to the database fails."),
    ("page", "yesno", "Should the on-call engineer be paged now?", YN, "yes",
     "The incident is high severity, and the runbook pages for high incidents at any hour."),
]))

GROUPS.append(("incident", (
    "Ticket from the marketing team, Tuesday 10:40: on the public pricing page the word 'annually' is misspelled "
    "as 'anually' under the Team plan. Prices, links and the sign-up button all work. No customer has complained; "
    "we spotted it ourselves.\n\n" + RUNBOOK), [
    ("severity", "score", "How severe is this incident on our severity scale?", SEVERITY, "low",
     "A cosmetic spelling mistake with no business impact is low severity."),
    ("page", "yesno", "Should the on-call engineer be paged now?", YN, "no",
     "A low-severity issue goes to the team's queue; paging is only for high or critical incidents."),
    ("team", "choice", "Which team should fix this?",
     opts(("billing", "Billing team"), ("web", "Web team (public website and pricing pages)"),
          ("mobile", "Mobile app team"), ("database", "Database team")), "web",
     "The typo is on the public pricing page, which the web team owns."),
]))

GROUPS.append(("incident", (
    "Security report, Wednesday 14:05: a customer emailed that after logging in, the 'My invoices' page showed "
    "invoices of another company, including contact names and billing addresses. Support reproduced it with two "
    "test accounts: since the deploy at 13:30, invoice pages sometimes return another customer account's "
    "documents. Everything else in the app works normally.\n\nRunbook: any exposure of customer data is handled by "
    "the security team, and the on-call engineer is paged at once. Otherwise, page only for high or critical "
    "incidents."), [
    ("severity", "score", "How severe is this incident on our severity scale?", SEVERITY, "critical",
     "Other companies' invoices with names and addresses are being shown, which is customer data exposed, rated "
     "critical even though the rest of the app works.", HARD),
    ("team", "choice", "Which team should handle this incident?",
     opts(("security", "Security team"), ("billing", "Billing team"), ("frontend", "Web frontend team"),
          ("database", "Database team")), "security",
     "The runbook says any exposure of customer data is handled by the security team.", HARD),
    ("deploy", "yesno", "Did the problem start after a deployment?", YN, "yes",
     "Support found that invoice pages have returned other customers' documents since the deploy at 13:30."),
]))

GROUPS.append(("incident", (
    "Support ticket, Thursday 11:20: about 8% of Android users say push notifications for new messages arrive 10 "
    "to 20 minutes late. iOS users are not affected. Messages appear immediately when the app is opened, so nobody "
    "misses content. Engineers traced the delay to the battery-saving setting added in Android app version 5.2; "
    "users on older versions get their notifications on time.\n\n" + RUNBOOK), [
    ("severity", "score", "How severe is this incident on our severity scale?", SEVERITY, "medium",
     "Notifications are late for some Android users, and opening the app shows messages at once, which is a "
     "workaround."),
    ("team", "choice", "Which team should fix this?",
     opts(("ios", "iOS app team"), ("backend", "Messaging backend team"), ("network", "Network team"),
          ("android", "Android app team")), "android",
     "The delay comes from a setting added in Android app version 5.2."),
    ("page", "yesno", "Should the on-call engineer be paged now?", YN, "no",
     "A medium-severity incident goes to the team's queue; paging is only for high or critical incidents."),
    ("share", "score", "What share of Android users is affected?",
     opts(("none", "None"), ("few", "Under 10%"), ("some", "10% to 50%"), ("most", "Over 50%")), "few",
     "The ticket says about 8% of Android users get late notifications."),
]))

GROUPS.append(("incident", (
    "Incident timeline, Sunday (times UTC):\n09:02 Alert: login success rate fell from 99% to 40%. Users who were "
    "already signed in were not affected.\n09:10 Identity on-call acknowledges; cause found: an expired TLS "
    "certificate on the single sign-on gateway.\n09:26 New certificate deployed.\n09:31 Login success rate back at "
    "99%; monitoring for 30 minutes.\n10:05 Incident closed; post-mortem booked for Tuesday."), [
    ("ongoing", "yesno", "Is the incident still ongoing?", YN, "no",
     "The timeline ends with the incident closed at 10:05 after logins recovered at 09:31."),
    ("cause", "choice", "What caused the incident?",
     opts(("cert", "An expired certificate"), ("deploy", "A faulty code deploy"),
          ("attack", "A traffic spike or attack"), ("database", "A database failure")), "cert",
     "The 09:10 entry names an expired TLS certificate on the single sign-on gateway as the cause."),
    ("duration", "score", "How long did users have trouble logging in?",
     opts(("under15", "Less than 15 minutes"), ("15to60", "15 to 60 minutes"), ("1to4h", "1 to 4 hours"),
          ("over4h", "More than 4 hours")), "15to60",
     "Logins failed from the 09:02 alert until the success rate recovered at 09:31, about 29 minutes."),
    ("severity", "score", "How severe was this incident on our severity scale?", SEVERITY, "high",
     "Login, a key function, failed for many users while signed-in users were unaffected, which the scale rates "
     "high."),
]))

GROUPS.append(("incident", (
    "Alert digest, Monday 09:15:\n- payments-api: p99 latency rose from 180 ms to 2,400 ms at 08:50; about half of "
    "card payments time out.\n- Investigation: 30% packet loss on core switch sw-b7, which carries the payments-api "
    "traffic. The payments-api code and its database show no errors and normal load.\n- Customers whose payment "
    "times out can retry; about half of the retries succeed.\n\nRunbook: the team that owns the failing component "
    "fixes it."), [
    ("team", "choice", "Which team should fix this?",
     opts(("payments", "Payments team (payments-api)"), ("database", "Database team"),
          ("network", "Network team (switches and routing)"), ("frontend", "Web frontend team")), "network",
     "The failing component is the core switch losing packets, while the payments code and database show no "
     "errors.", HARD),
    ("retry", "yesno", "Can customers whose payment times out try again?", YN, "yes",
     "The digest says customers can retry and about half of the retries succeed."),
]))

GROUPS.append(("incident", (
    "Ticket, Friday 16:45: one user reports that uploading a profile picture fails with 'file type not "
    "supported'. The file is a 14 MB HEIC photo from a phone; the help page says only JPG and PNG files up to 5 MB "
    "are accepted. The user uploaded a PNG version successfully a few minutes later. No other reports.\n\n"
    + RUNBOOK), [
    ("severity", "score", "How severe is this incident on our severity scale?", SEVERITY, "low",
     "A single user was affected, and the upload worked with a PNG, so there is no business impact."),
    ("limits", "yesno", "Is the failed upload explained by the documented upload rules?", YN, "yes",
     "The file was a 14 MB HEIC, while the help page accepts only JPG and PNG files up to 5 MB."),
]))

GROUPS.append(("incident", (
    "Alert, 19:48 UTC Thursday: every request to the shop website and the public API returns HTTP 503 from the "
    "load balancers in all regions. Customers can neither browse, log in nor pay. Cause so far: a configuration "
    "push to the load balancers at 19:45 removed all backend pools; the application servers and databases are "
    "healthy but receive no traffic.\n\n" + RUNBOOK), [
    ("severity", "score", "How severe is this incident on our severity scale?", SEVERITY, "critical",
     "The whole service returns errors for every customer in all regions, which is critical."),
    ("team", "choice", "Which team should own this incident?",
     opts(("database", "Database team"), ("network", "Network and load-balancer team"), ("payments", "Payments team"),
          ("identity", "Identity and login team")), "network",
     "The outage comes from a configuration push that removed the load balancers' backend pools, while servers "
     "and databases are healthy."),
    ("page", "yesno", "Should the on-call engineer be paged now?", YN, "yes",
     "The incident is critical, and the runbook pages for critical incidents at any hour."),
]))

# --- hr ---------------------------------------------------------------------
GROUPS.append(("hr", (
    "HR ticket, sent 1 September: \"Hi, my partner is due to give birth on 14 October, and I'd like to take the "
    "two weeks straight after the birth off to be at home with the baby. I've already used 18 of my 25 annual "
    "leave days this year.\"\n\nLeave types at this company: annual leave (paid, taken from the yearly allowance); "
    "sick leave (the employee's own illness); parental leave (birth or adoption of the employee's child, up to 16 "
    "weeks, does not use the annual allowance); unpaid leave (any other reason, needs manager approval)."), [
    ("type", "choice", "Which leave type fits this request?",
     opts(("annual", "Annual leave"), ("sick", "Sick leave"), ("unpaid", "Unpaid leave"),
          ("parental", "Parental leave")), "parental",
     "The leave is for the birth of the employee's child, which is parental leave, whatever the annual balance.",
     HARD),
    ("allowance", "yesno", "Will this leave use days from the employee's annual leave allowance?", YN, "no",
     "It is parental leave, which does not use the annual allowance."),
    ("days", "score", "How many annual leave days will this request use?",
     opts(("d0", "None"), ("d1to5", "1 to 5 days"), ("d6to10", "6 to 10 days"), ("d11plus", "More than 10 days")),
     "d0", "The two weeks are parental leave, which does not use the annual allowance.", HARD),
    ("priority", "score", "What priority should this HR ticket get?", PRIORITY, "low",
     "The leave starts with the birth on 14 October, 43 days after the ticket of 1 September, more than 30 days "
     "away."),
]))

GROUPS.append(("hr", (
    "Expense policy: meals on travel days are reimbursed up to 40 EUR per day in total; alcohol is never "
    "reimbursed; any item over 25 EUR needs an itemised receipt.\n\nClaim EXP-3302, one travel day in Lyon:\n"
    "- lunch, 18.50 EUR, itemised receipt attached;\n- dinner, 34.00 EUR, of which 9.00 EUR is wine, itemised "
    "receipt attached."), [
    ("alcohol", "yesno", "Does the claim include anything the policy never reimburses?", YN, "yes",
     "The dinner includes 9.00 EUR of wine, and alcohol is never reimbursed."),
    ("amount", "choice", "How much of this claim should be reimbursed?",
     opts(("all", "52.50 EUR (everything claimed)"), ("nowine", "43.50 EUR (everything except the wine)"),
          ("cap", "40.00 EUR (the daily meal limit)"), ("dinner", "25.00 EUR (only the dinner without the wine)")),
     "cap",
     "Without the wine the meals come to 43.50 EUR, above the 40 EUR daily limit, so 40 EUR is reimbursed.", HARD),
    ("receipts", "yesno", "Is a required receipt missing from the claim?", YN, "no",
     "Both meals have itemised receipts attached."),
    ("wine", "score", "How much of the 9.00 EUR spent on wine can be reimbursed?", REFUND3, "none",
     "The policy says alcohol is never reimbursed."),
]))

GROUPS.append(("hr", (
    "Policy on working abroad: employees may work from another country for up to 20 working days per calendar "
    "year with their manager's approval. Longer stays need approval from both HR and the tax team.\n\nRequest sent "
    "on 26 August: \"I'd like to work from my family's home in Portugal for 20 working days, starting on 2 "
    "September. My manager has approved it. Earlier this year I worked 5 days from Spain.\""), [
    ("manageronly", "yesno", "Can this request go ahead with the manager's approval alone?", YN, "no",
     "With the 5 days in Spain the year's total would be 25 working days, over the 20-day limit, so HR and the tax "
     "team must also approve.", HARD),
    ("approvers", "choice", "Who else has to approve this request?",
     opts(("nobody", "Nobody else: the manager's approval is enough"), ("hrtax", "HR and the tax team"),
          ("ceo", "The chief executive"), ("it", "IT security")), "hrtax",
     "The year's total of 25 days abroad exceeds 20, and longer stays need HR and the tax team."),
    ("priority", "score", "What priority should this HR request get?", PRIORITY, "high",
     "The stay starts on 2 September, 7 days after the request of 26 August."),
    ("overrun", "score", "By how much would the employee exceed the yearly limit for working abroad?",
     opts(("none", "Not at all"), ("few", "By 1 to 5 working days"), ("many", "By more than 5 working days")),
     "few", "Five days in Spain plus 20 in Portugal make 25, five working days over the 20-day limit."),
]))

GROUPS.append(("hr", (
    "Message to the People team, sent 3 June: \"My payslip for May shows 160 hours at the normal rate, but I also "
    "worked 12 hours of overtime on 18 and 19 May, which my manager approved in the time system. The overtime is "
    "missing from the payslip. Can this be corrected in the June payroll? The June run closes on 20 June.\""), [
    ("team", "choice", "Which HR team should handle this message?",
     opts(("recruiting", "Recruiting"), ("benefits", "Benefits (pension, insurance)"),
          ("learning", "Learning and training"), ("payroll", "Payroll"), ("it", "IT helpdesk")), "payroll",
     "The employee asks for missing overtime pay to be added to a payslip."),
    ("approved", "yesno", "Was the overtime approved by the employee's manager?", YN, "yes",
     "The employee says the manager approved the overtime in the time system."),
    ("priority", "score", "What priority should this message get?", PRIORITY, "medium",
     "The deadline is the June payroll close on 20 June, 17 days after the message of 3 June."),
]))

GROUPS.append(("hr", (
    "Sick leave policy: employees report sickness to their manager by 9:00 on the first day of absence. A doctor's "
    "certificate is required from the fourth consecutive calendar day of absence.\n\nCase: an employee was off sick "
    "from Monday 3 March to Wednesday 5 March and was back at work on Thursday 6 March. She phoned her manager at "
    "8:10 on Monday to report sick. She has not handed in a doctor's certificate."), [
    ("certificate", "yesno", "Was a doctor's certificate needed for this absence?", YN, "no",
     "The absence lasted three days, and a certificate is only required from the fourth day."),
    ("reported", "yesno", "Did the employee report her absence in time?", YN, "yes",
     "She phoned her manager at 8:10 on the first day, before the 9:00 deadline."),
    ("action", "choice", "What should HR do about this absence?",
     opts(("record", "Record it as sick leave; nothing else is needed"),
          ("cert", "Ask her for a doctor's certificate"), ("warning", "Give her a warning for reporting late"),
          ("unpaid", "Record the days as unpaid leave")), "record",
     "She reported in time and a three-day absence needs no certificate, so it is simply recorded as sick leave."),
]))

GROUPS.append(("hr", (
    "Compliance training status, 1 April: the annual data-protection course (4 modules) must be completed by 30 "
    "April. Rule: employees who have finished fewer than half of the modules by 1 April get a reminder from their "
    "manager.\n\nEmployee E-2047: modules completed: 0 of 4. Last login to the training portal: never.\nEmployee "
    "E-2051: modules completed: 4 of 4, completed on 12 March."), [
    ("remind2047", "yesno", "Should the manager of employee E-2047 send a reminder now?", YN, "yes",
     "E-2047 has finished 0 of 4 modules, fewer than half, on 1 April."),
    ("progress2047", "score", "How far along is employee E-2047 with the course?",
     opts(("notstarted", "Not started"), ("partway", "Partly done"), ("done", "Completed")), "notstarted",
     "E-2047 has completed 0 of 4 modules and has never logged in."),
    ("progress2051", "score", "How far along is employee E-2051 with the course?",
     opts(("notstarted", "Not started"), ("partway", "Partly done"), ("done", "Completed")), "done",
     "E-2051 completed all 4 modules on 12 March."),
]))

GROUPS.append(("hr", (
    "Message to HR, sent 24 May: \"I've switched banks. Please pay my May salary into my new account; the details "
    "are below. Salary is paid on 28 May.\"\n\nHR procedure: bank details can only be changed by the employee in "
    "the self-service portal. For security, HR never changes bank details on the basis of an email. Changes made in "
    "the portal by the 25th of a month apply to that month's salary."), [
    ("priority", "score", "What priority should this HR message get?", PRIORITY, "high",
     "The portal deadline for the May salary is 25 May, one day after the message of 24 May."),
    ("email", "yesno", "Can HR change the bank details on the basis of this email?", YN, "no",
     "The procedure says HR never changes bank details on the basis of an email."),
    ("reply", "choice", "What should HR reply?",
     opts(("done", "Confirm that the new account has been saved"),
          ("june", "Say that a change can only apply from the June salary"),
          ("portal", "Ask the employee to change the details in the self-service portal by 25 May"),
          ("statement", "Ask for a bank statement by email")), "portal",
     "Only the employee can change bank details in the portal, and changes made by 25 May still apply to May's "
     "salary."),
]))

# --- contract ---------------------------------------------------------------
GROUPS.append(("contract", (
    "Clause 11 (Term and renewal). This Agreement starts on 1 January 2025 and runs for an initial term of 24 "
    "months. After that it renews automatically for successive periods of 12 months, unless either party gives "
    "written notice of non-renewal at least 90 days before the end of the current term. Notice by email counts as "
    "written notice if it is sent to the address listed in Schedule 1."), [
    ("auto", "yesno", "Does this agreement renew automatically?", YN, "yes",
     "The clause says it renews automatically for 12-month periods unless notice is given."),
    ("stop", "choice", "What must a party do to stop the first automatic renewal?",
     opts(("n30-2026", "Give notice at least 30 days before 31 December 2026"),
          ("n90-2025", "Give notice at least 90 days before 31 December 2025"),
          ("n90-2026", "Give notice at least 90 days before 31 December 2026"),
          ("nothing", "Nothing: the agreement ends by itself after the initial term")), "n90-2026",
     "The 24-month initial term from 1 January 2025 ends on 31 December 2026, and notice is due at least 90 days "
     "before the end of the term.", HARD),
    ("period", "score", "How long is each renewal period?",
     opts(("m6", "6 months or less"), ("m12", "12 months"), ("m24", "24 months"), ("m36", "36 months or more")),
     "m12", "The agreement renews for successive periods of 12 months; 24 months is only the initial term."),
]))

GROUPS.append(("contract", (
    "Clause 7 (Term). This equipment lease runs for 36 months from the delivery date and ends automatically at the "
    "end of that period; it does not renew.\nClause 8 (Early termination). The customer may end the lease early "
    "with 60 days' written notice by paying 50% of the remaining monthly fees. The supplier may end the lease early "
    "only if the customer is more than 30 days late with a payment."), [
    ("auto", "yesno", "Does the lease renew automatically?", YN, "no",
     "Clause 7 says the lease ends at the end of 36 months and does not renew."),
    ("who", "choice", "Which party can end the lease early simply by giving notice and paying a fee?",
     opts(("supplier", "The supplier"), ("customer", "The customer"), ("both", "Both parties"),
          ("neither", "Neither party")), "customer",
     "Only the customer may end early with notice and a fee; the supplier may end early only for late payment."),
    ("late", "yesno", "May the supplier end the lease if the customer is 10 days late with a payment?", YN, "no",
     "The supplier may end the lease only when a payment is more than 30 days late.", HARD),
    ("fee", "score", "What share of the remaining monthly fees does the customer pay to end the lease early?",
     opts(("none", "None"), ("quarter", "25%"), ("half", "50%"), ("all", "100%")), "half",
     "Clause 8 sets the early termination payment at 50% of the remaining monthly fees."),
]))

GROUPS.append(("contract", (
    "Clause 14 (Confidential information). During the term of this Agreement and for two years after it ends, the "
    "Consultant shall not disclose to any third party any non-public information about the Client's products, "
    "prices or customers that the Consultant learns while performing the Services, unless disclosure is required "
    "by law. Nothing in this clause prevents the Consultant from working for other clients, including competitors "
    "of the Client."), [
    ("kind", "choice", "What kind of obligation does this clause create?",
     opts(("confidentiality", "Confidentiality: not disclosing information"),
          ("noncompete", "Non-compete: not working for competitors"), ("payment", "Payment of fees"),
          ("indemnity", "Indemnity: covering the other party's losses"),
          ("warranty", "Warranty about the quality of the work")), "confidentiality",
     "The clause forbids disclosing non-public information and expressly allows working for competitors.", HARD),
    ("duration", "score", "How long does the obligation last after the agreement ends?",
     opts(("none", "It ends with the agreement"), ("upto1", "Up to 1 year"),
          ("upto3", "More than 1 year and up to 3 years"), ("longer", "More than 3 years, or without end")), "upto3",
     "The duty lasts for two years after the agreement ends."),
    ("law", "yesno", "May the Consultant disclose the information if the law requires it?", YN, "yes",
     "The clause makes an exception where disclosure is required by law."),
    ("competitor", "yesno", "Does this clause stop the Consultant from working for the Client's competitors?",
     YN, "no", "The last sentence says nothing in the clause prevents working for competitors of the Client."),
]))

GROUPS.append(("contract", (
    "Clause 5 (Fees and payment). The Supplier invoices monthly in arrears. Invoices are payable within 45 days of "
    "the invoice date. Late amounts bear interest of 1% per month. The Customer may withhold any amount it disputes "
    "in good faith if it notifies the Supplier in writing within 10 days of the invoice date; all undisputed "
    "amounts remain payable on time.\n\nSituation: an invoice dated 1 March is for 12,000 EUR. On 6 March the "
    "Customer notified the Supplier in writing that it disputes 2,000 EUR of it."), [
    ("pay", "choice", "How much must the Customer pay by the due date?",
     opts(("all", "12,000 EUR"), ("disputed", "2,000 EUR"), ("undisputed", "10,000 EUR"),
          ("nothing", "Nothing until the dispute is settled")), "undisputed",
     "The 2,000 EUR dispute was notified in time, so only the undisputed 10,000 EUR is payable on time.", HARD),
    ("intime", "yesno", "Was the dispute raised in time?", YN, "yes",
     "It was notified in writing on 6 March, 5 days after the invoice date, within the 10 days allowed."),
    ("term", "score", "How long after the invoice date is payment due?",
     opts(("d14", "Up to 14 days"), ("d30", "15 to 30 days"), ("d60", "31 to 60 days"), ("d90", "More than 60 days")),
     "d60", "Invoices are payable within 45 days of the invoice date."),
]))

GROUPS.append(("contract", (
    "Clause 12 (Limitation of liability). Each party's total liability under this Agreement is limited to the fees "
    "paid by the Customer in the 12 months before the claim. This limit does not apply to breaches of "
    "confidentiality, to death or personal injury caused by negligence, or to the Customer's obligation to pay the "
    "fees. Neither party is liable for lost profits."), [
    ("confid", "yesno", "Is the Supplier's liability for a breach of confidentiality limited to 12 months of fees?",
     YN, "no", "Breaches of confidentiality are expressly excluded from the limit.", HARD),
    ("late", "yesno", "Is a claim for late delivery of the software subject to the 12-month fee limit?", YN, "yes",
     "Late delivery is not among the listed exceptions, so the general limit applies."),
    ("cap", "choice", "What is the limit on each party's total liability?",
     opts(("unlimited", "There is no limit"), ("fixed", "A fixed 100,000 EUR"),
          ("total", "All fees payable over the whole agreement"),
          ("fees12", "The fees paid in the 12 months before the claim")), "fees12",
     "The clause limits liability to the fees paid in the 12 months before the claim."),
]))

GROUPS.append(("contract", (
    "Schedule 2 (Service levels). Monthly availability target: 99.9%. If availability in a month is below the "
    "target, the Customer receives a service credit on the next invoice: below 99.9% but at least 99.0%: 5% of that "
    "month's fee; below 99.0% but at least 95.0%: 15%; below 95.0%: 30%. Service credits are the Customer's only "
    "remedy for missed availability.\n\nMeasured availability in June: 98.4%. The June fee is 8,000 EUR."), [
    ("tier", "score", "Which service-credit level applies for June?",
     opts(("none", "No credit: the target was met"), ("c5", "5% of the month's fee"), ("c15", "15% of the month's fee"),
          ("c30", "30% of the month's fee")), "c15",
     "June's 98.4% is below 99.0% but at least 95.0%, the 15% band."),
    ("amount", "choice", "How much is the service credit for June?",
     opts(("eur400", "400 EUR"), ("eur1200", "1,200 EUR"), ("eur2400", "2,400 EUR"), ("eur0", "0 EUR")), "eur1200",
     "The 15% band applies to the 8,000 EUR June fee, which gives 1,200 EUR."),
    ("terminate", "yesno", "Can the Customer terminate the contract because June missed the availability target?",
     YN, "no", "Service credits are the Customer's only remedy for missed availability.", HARD),
]))

GROUPS.append(("contract", (
    "Clause 6 (Price changes). The Supplier may raise its prices once per contract year by giving the Customer at "
    "least 3 months' written notice. An increase may not exceed the change in the consumer price index over the "
    "previous 12 months plus 2 percentage points. If an increase exceeds 5%, the Customer may terminate the "
    "Agreement within 30 days of receiving the notice.\n\nSituation: on 1 September the Supplier gives written "
    "notice of a 7% price increase from 1 January. The consumer price index rose by 4% over the previous 12 months. "
    "This is the first increase this contract year."), [
    ("within", "yesno", "Is the notified 7% increase within the allowed maximum?", YN, "no",
     "The maximum is the 4% index change plus 2 percentage points, 6%, and 7% is above it.", HARD),
    ("max", "choice", "What is the largest price increase the Supplier may make this year?",
     opts(("p2", "2%"), ("p4", "4%"), ("p5", "5%"), ("p6", "6%"), ("p7", "7%")), "p6",
     "The cap is the 4% rise in the consumer price index plus 2 percentage points, which is 6%.", HARD),
    ("notice", "score", "How much notice did the Supplier give?",
     opts(("lt1", "Less than 1 month"), ("m1to3", "At least 1 month but less than 3 months"),
          ("m3plus", "3 months or more")), "m3plus",
     "Notice given on 1 September for an increase from 1 January is four months."),
]))

# --- review -----------------------------------------------------------------
GROUPS.append(("review", (
    "Product review, Trailmark 30L hiking backpack: \"Bought this for a week of hut-to-hut hiking. It carried "
    "everything comfortably, the hip belt took the weight off my shoulders, and the rain cover kept my things dry "
    "through two days of downpour. The pockets are exactly where you want them. Worth every cent, and I'd buy it "
    "again tomorrow.\""), [
    ("sentiment", "score", "How positive is this review overall?", SENTIMENT5, "5",
     "The reviewer praises comfort, the hip belt, the rain cover and the pockets and complains about nothing."),
    ("problem", "yesno", "Does the reviewer mention any problem with the backpack?", YN, "no",
     "Every remark in the review is praise."),
    ("use", "choice", "What did the reviewer use the backpack for?",
     opts(("hiking", "A multi-day hiking trip"), ("commute", "Commuting to work"),
          ("flight", "City travel by plane"), ("school", "Carrying school books")), "hiking",
     "The reviewer bought it for a week of hut-to-hut hiking."),
]))

GROUPS.append(("review", (
    "Product review, Brisa 2 desk fan: \"It stopped working after nine days. Before that it rattled on every speed "
    "setting, and the so-called quiet mode was louder than my old fan. I contacted support twice and never got an "
    "answer. I'm returning it.\""), [
    ("sentiment", "score", "How positive is this review overall?", SENTIMENT5, "1",
     "The review lists only complaints (breaking down, rattling, noise, no support reply) and no praise."),
    ("notcomplain", "choice", "Which of these does the reviewer NOT complain about?",
     opts(("noise", "Noise"), ("support", "Customer support"), ("durability", "How long it lasted"),
          ("price", "The price")), "price",
     "The reviewer complains about noise, support and the fan breaking after nine days, but never mentions the "
     "price.", HARD),
    ("returning", "yesno", "Is the reviewer returning the fan?", YN, "yes",
     "The review ends with \"I'm returning it.\""),
]))

GROUPS.append(("review", (
    "Product review, Lumo smart bulb set (4 bulbs): \"Mixed feelings. Setup took two minutes and the colours are "
    "lovely. On the other hand, the app logs me out every few days, and one of the four bulbs flickers at low "
    "brightness. It does what it says, with some annoyances.\""), [
    ("sentiment", "score", "How positive is this review overall?", SENTIMENT5, "3",
     "The reviewer has mixed feelings: two points of praise (setup, colours) against two complaints (app, "
     "flicker)."),
    ("works", "choice", "Which part of the product does the reviewer say works well?",
     opts(("setup", "Setting it up"), ("app", "The mobile app"), ("dimming", "Dimming to low brightness"),
          ("range", "Wireless range")), "setup",
     "The reviewer says setup took two minutes; the app and low-brightness dimming are complaints."),
    ("app", "yesno", "Does the reviewer report a problem with the app?", YN, "yes",
     "The reviewer says the app logs them out every few days."),
]))

GROUPS.append(("review", (
    "Product review, Halden cast-iron pan: \"Heats evenly and gives a great crust on steaks. After three months of "
    "daily use the seasoning is holding up well, and it cleans easily. My only gripe: it's heavy, so tossing "
    "vegetables one-handed is hard. Still very happy with it.\""), [
    ("sentiment", "score", "How positive is this review overall?", SENTIMENT5, "4",
     "The review is mainly praise with one small complaint, the pan's weight."),
    ("complaint", "choice", "What does the reviewer complain about?",
     opts(("heat", "Uneven heating"), ("price", "The price"), ("cleaning", "Difficult cleaning"),
          ("delivery", "Late delivery"), ("weight", "The pan's weight")), "weight",
     "The reviewer's only gripe is that the pan is heavy."),
    ("months", "yesno", "Has the reviewer used the pan for more than a month?", YN, "yes",
     "The reviewer mentions three months of daily use."),
]))

GROUPS.append(("review", (
    "Product review, Pico wireless earbuds: \"Ordered these as a gift. Delivery took 19 days instead of the "
    "promised 3 to 5, and the box arrived crushed. The earbuds sound decent, I'll give them that, but the charging "
    "case doesn't close properly and the left bud disconnects several times an hour. Disappointed overall.\""), [
    ("sentiment", "score", "How positive is this review overall?", SENTIMENT5, "2",
     "The review is mostly complaints with one small piece of praise for the sound, and ends disappointed."),
    ("delivery", "choice", "Which complaint is about the delivery rather than the earbuds themselves?",
     opts(("case", "The charging case does not close"), ("late", "It arrived 19 days late"),
          ("drops", "The left earbud disconnects"), ("sound", "The sound quality")), "late",
     "A 19-day delivery instead of 3 to 5 days is about the delivery; the other options are about the product."),
    ("sound", "yesno", "Does the reviewer say anything good about the sound?", YN, "yes",
     "The reviewer says the earbuds sound decent."),
]))

GROUPS.append(("review", (
    "Product review, Verra standing desk:\nOriginal review: \"Arrived with a bent leg, and the motor buzzed loudly. "
    "Not impressed.\"\nUpdate two weeks later: \"The company sent a new leg and a replacement motor within four "
    "days, no questions asked. Now the desk is rock solid and silent, and it moves up and down smoothly. The "
    "support team was excellent. I've changed my mind completely: I'd recommend this desk to anyone.\""), [
    ("now", "score", "What is the reviewer's opinion of the desk now?",
     opts(("negative", "Negative"), ("mixed", "Mixed"), ("positive", "Positive")), "positive",
     "The later update says the problems were fixed and the reviewer would recommend the desk to anyone.", HARD),
    ("praise", "choice", "Who does the reviewer praise?",
     opts(("courier", "The delivery courier"), ("sales", "The shop's sales staff"),
          ("designer", "The desk's designer"), ("support", "The support team")), "support",
     "The update says the support team was excellent."),
    ("against", "yesno", "Does the reviewer now advise others against buying the desk?", YN, "no",
     "In the update the reviewer says they would recommend the desk to anyone.", HARD),
]))

GROUPS.append(("review", (
    "Product review, Oakridge espresso machine: \"Six months in and I still look forward to every morning. Shots "
    "are consistent, the steam wand makes silky milk, and it heats up in under a minute. Descaling is a two-minute "
    "job. Honestly the best kitchen purchase I've made.\""), [
    ("sentiment", "score", "How positive is this review overall?", SENTIMENT5, "5",
     "The review praises the shots, the steam wand, the heat-up time and descaling and has no complaint."),
    ("owned", "choice", "How long has the reviewer owned the machine?",
     opts(("w1", "About a week"), ("m1", "About a month"), ("m6", "About six months"), ("y2", "About two years")),
     "m6", "The review begins \"Six months in\"."),
]))

GROUPS.append(("review", (
    "Product review, Cirro robot vacuum: \"Gets stuck under the sofa on every single run, can't find its way back "
    "to the dock, and the app crashes whenever I try to set no-go zones. It missed half of the kitchen floor. "
    "Customer service told me to reset it, which changed nothing. Avoid.\""), [
    ("sentiment", "score", "How positive is this review overall?", SENTIMENT5, "1",
     "The review is only complaints and ends with \"Avoid.\""),
    ("service", "choice", "What did customer service suggest?",
     opts(("return", "Return it for a refund"), ("reset", "Reset the robot"), ("update", "Update the app"),
          ("replace", "Wait for a replacement unit")), "reset",
     "The reviewer says customer service told them to reset it."),
]))

# --- travel -----------------------------------------------------------------
GROUPS.append(("travel", (
    "Fare rules, Basic economy (ticket BX-55120): date and name changes are not permitted. If the passenger "
    "cancels, the fare is not refunded; only the airport taxes of 38 EUR are returned on request. Seat selection "
    "costs extra.\n\nPassenger message, sent 10 days before departure: \"I need to move my flight from 14 May to 16 "
    "May because of a work meeting. Can I change it, and what would it cost? If not, what do I get back if I "
    "cancel?\""), [
    ("change", "yesno", "Is a date change allowed on this ticket?", YN, "no",
     "The fare rules say date changes are not permitted."),
    ("cancel", "choice", "If the passenger cancels, what do they get back?",
     opts(("taxes", "Only the 38 EUR airport taxes"), ("full", "The full fare"),
          ("voucher", "A travel voucher for the fare"), ("nothing", "Nothing at all")), "taxes",
     "The fare is not refunded, but the 38 EUR airport taxes are returned on request."),
    ("flex", "score", "How flexible is this ticket for date changes?", CHANGES3, "none",
     "Date changes are not permitted on this fare."),
]))

GROUPS.append(("travel", (
    "Fare rules, Standard fare: date changes are allowed up to 24 hours before departure for a change fee of 50 "
    "EUR plus any difference in fare. If the new fare is lower, the difference is not refunded. Changes within 24 "
    "hours of departure are not allowed.\n\nBooking: Lisbon to Oslo, departing 12 June at 07:15, fare paid 210 EUR. "
    "Today is 9 June. The passenger wants to move to 15 June, when the same fare class costs 260 EUR."), [
    ("allowed", "yesno", "Can the passenger change the flight to 15 June?", YN, "yes",
     "Today is 9 June, more than 24 hours before the 12 June departure, so a change is allowed."),
    ("cost", "choice", "What will the change cost the passenger?",
     opts(("eur0", "Nothing"), ("eur50", "50 EUR"), ("eur100", "100 EUR"), ("eur260", "260 EUR"),
          ("eur310", "310 EUR")), "eur100",
     "The 50 EUR change fee plus the 50 EUR fare difference (260 minus 210) make 100 EUR.", HARD),
    ("flex", "score", "How flexible is this ticket for date changes?", CHANGES3, "fee",
     "Date changes are allowed up to 24 hours before departure for a 50 EUR fee plus any fare difference."),
]))

GROUPS.append(("travel", (
    "Hotel booking HB-3310: 4 nights, arriving 20 August, 120 EUR per night, 480 EUR in total. Cancellation "
    "policy: free cancellation until 14:00 local time on 17 August (three days before arrival). Later "
    "cancellations are charged the first night. No-shows are charged the full stay.\n\nThe guest cancelled by "
    "email on 18 August at 09:30."), [
    ("charge", "score", "How much of the stay will the guest be charged for?",
     opts(("nothing", "Nothing"), ("first", "The first night"), ("full", "The whole stay")), "first",
     "The guest cancelled on 18 August, after the free-cancellation deadline of 17 August, and did not simply fail "
     "to show up, so the first night is charged."),
    ("amount", "choice", "How much will the guest be charged?",
     opts(("eur0", "0 EUR"), ("eur120", "120 EUR"), ("eur360", "360 EUR"), ("eur480", "480 EUR")), "eur120",
     "A late cancellation is charged the first night, which costs 120 EUR."),
]))

GROUPS.append(("travel", (
    "Baggage rules for this booking (Economy Light): one cabin bag up to 8 kg and 55 x 40 x 20 cm is included. "
    "Checked bags are not included; each costs 35 EUR if added online before check-in, or 60 EUR at the airport. "
    "Sports equipment counts as a checked bag.\n\nTraveller message: \"I'm bringing my skis in a ski bag, plus a "
    "cabin trolley that weighs 7 kg and measures 55 x 40 x 20 cm. I'll add the skis online tonight, before "
    "check-in. What will I pay in total for my bags?\""), [
    ("total", "choice", "How much will the traveller pay for baggage in total?",
     opts(("eur0", "Nothing"), ("eur35", "35 EUR"), ("eur60", "60 EUR"), ("eur95", "95 EUR")), "eur35",
     "The cabin trolley is included, and the skis count as one checked bag added online for 35 EUR.", HARD),
    ("cabin", "yesno", "Is the cabin trolley within the included cabin allowance?", YN, "yes",
     "It weighs 7 kg and measures 55 x 40 x 20 cm, within the 8 kg and size limits."),
]))

GROUPS.append(("travel", (
    "Airline delay policy: for an arrival delay of 3 hours or more caused by the airline, passengers receive "
    "compensation of 250 EUR for flights up to 1,500 km, 400 EUR for flights of 1,500 to 3,500 km, and 600 EUR for "
    "longer flights. No compensation is paid when the delay is caused by extraordinary circumstances such as severe "
    "weather or air traffic control strikes.\n\nFlight: 2,100 km. Scheduled arrival 18:40, actual arrival 22:55. "
    "Delay reason recorded by the airline: technical fault in the aircraft's hydraulic system."), [
    ("entitled", "yesno", "Is the passenger entitled to compensation?", YN, "yes",
     "The arrival was 4 hours 15 minutes late because of a technical fault, which is not an extraordinary "
     "circumstance in the policy."),
    ("level", "score", "What compensation applies to this flight?",
     opts(("eur0", "No compensation"), ("eur250", "250 EUR"), ("eur400", "400 EUR"), ("eur600", "600 EUR")),
     "eur400", "A delay of over 3 hours on a 2,100 km flight falls in the 1,500 to 3,500 km band, 400 EUR.", HARD),
    ("extraordinary", "yesno", "Was the delay caused by extraordinary circumstances under the policy?", YN, "no",
     "The recorded reason is a technical fault in the aircraft, not weather or a strike."),
    ("delay", "score", "How late did the flight arrive?",
     opts(("under1", "Less than 1 hour"), ("h1to3", "1 hour to less than 3 hours"), ("over3", "3 hours or more")),
     "over3", "Scheduled arrival was 18:40 and actual arrival 22:55, 4 hours 15 minutes late."),
]))

GROUPS.append(("travel", (
    "Ticket conditions (Nordrail Saver): tickets are personal and cannot be transferred to another person. The "
    "travel date can be changed once, free of charge, up to the day before travel. Refunds are not available.\n\n"
    "Message from the ticket holder, sent on Wednesday: \"I can't travel on Friday any more. Could my colleague use "
    "my ticket instead? If not, I'd like to move the trip to the following Monday.\" The ticket has not been "
    "changed before."), [
    ("colleague", "yesno", "Can the colleague travel on this ticket?", YN, "no",
     "Saver tickets are personal and cannot be transferred to another person."),
    ("monday", "yesno", "Can the holder move the trip to Monday free of charge?", YN, "yes",
     "It is the ticket's first change, asked for on Wednesday, before the Thursday cut-off (the day before "
     "Friday's trip)."),
    ("grant", "choice", "Which part of the request can be granted?",
     opts(("both", "Both the transfer and the date change"), ("transfer", "Only the transfer to the colleague"),
          ("neither", "Neither"), ("date", "Only the date change")), "date",
     "The transfer is not allowed, but one free date change up to the day before travel is."),
    ("flex", "score", "How flexible is this ticket for date changes?", CHANGES3, "free",
     "The date can be changed once, free of charge, up to the day before travel."),
    ("refund", "score", "How much of the fare can be refunded if the holder cancels instead?", REFUND3, "none",
     "The ticket conditions say refunds are not available."),
]))

GROUPS.append(("travel", (
    "Car rental agreement RA-8821: pick-up Monday 09:00, return due Friday 09:00. Late returns: up to 59 minutes "
    "late is free; 1 to 3 hours late is charged half a day (25 EUR); more than 3 hours late is charged a full extra "
    "day (50 EUR). Fuel policy: full-to-full; if the tank is not full on return, refuelling costs 3 EUR per missing "
    "litre.\n\nReturn record: car returned on Friday at 13:20 with a full tank and no new damage."), [
    ("late", "score", "What late-return charge applies?",
     opts(("none", "No charge"), ("half", "Half a day (25 EUR)"), ("full", "A full extra day (50 EUR)")), "full",
     "The car came back at 13:20 instead of 09:00, 4 hours 20 minutes late, more than 3 hours."),
    ("howlate", "choice", "How late was the car returned?",
     opts(("ontime", "On time"), ("m20", "20 minutes late"), ("h1m20", "1 hour 20 minutes late"),
          ("h4m20", "4 hours 20 minutes late")), "h4m20",
     "It was due on Friday at 09:00 and returned at 13:20."),
]))

# --- health-admin -----------------------------------------------------------
GROUPS.append(("health-admin", (
    "Message to the clinic front desk: \"Hello, I need a new repeat prescription for my asthma inhaler. My last "
    "medication review with the nurse was 4 months ago and nothing has changed. I'm happy to do it online.\"\n\n"
    "Clinic rules: repeat prescriptions are handled by the pharmacy team through the online prescription form, "
    "with no appointment, if the patient had a medication review in the last 12 months. Otherwise the patient must "
    "first book a review appointment with a nurse."), [
    ("route", "choice", "Where should this request go?",
     opts(("doctor", "Book an appointment with a doctor"), ("nurse", "Book a nurse review appointment"),
          ("urgent", "The urgent same-day phone line"),
          ("pharmacy", "The pharmacy team, via the online prescription form")), "pharmacy",
     "The last medication review was 4 months ago, within 12 months, so the pharmacy team handles it online."),
    ("review", "yesno", "Does the patient need to book a review appointment first?", YN, "no",
     "A review 4 months ago is within the last 12 months, so no review appointment is needed."),
]))

GROUPS.append(("health-admin", (
    "Task for reception, Monday 2 June 2025. Clinician's note after today's visit: \"Patient to come back for a "
    "follow-up in about 10 days, around 12 June, to go through the blood test results. No need for an earlier "
    "slot.\" The patient prefers mornings and cannot come on Wednesdays.\n\nFree slots with the same clinician: "
    "Tuesday 3 June 09:00; Wednesday 11 June 09:30; Thursday 12 June 10:00; Friday 13 June 15:30."), [
    ("when", "score", "How soon should this follow-up take place?", BOOKING4, "weeks",
     "The clinician asks for a follow-up in about 10 days, around 12 June."),
    ("slot", "choice", "Which free slot should reception book?",
     opts(("tue3", "Tuesday 3 June 09:00"), ("wed11", "Wednesday 11 June 09:30"), ("thu12", "Thursday 12 June 10:00"),
          ("fri13", "Friday 13 June 15:30")), "thu12",
     "Thursday 12 June at 10:00 is the requested date and a morning; 11 June is a Wednesday and 13 June is an "
     "afternoon.", HARD),
]))

GROUPS.append(("health-admin", (
    "Clinic policy: patients who cancel less than 24 hours before their appointment, or who do not attend, are "
    "charged a 30 EUR fee, unless the clinic cancelled the appointment or the patient was admitted to hospital.\n\n"
    "Log: appointment booked for Tuesday at 14:00. The patient phoned on Monday at 16:30 to cancel because of a "
    "work meeting. The clinic did not cancel, and there is no hospital admission."), [
    ("fee", "yesno", "Should the 30 EUR late-cancellation fee be charged?", YN, "yes",
     "Monday 16:30 is 21.5 hours before Tuesday 14:00, less than 24 hours, and neither exception applies.", HARD),
    ("record", "choice", "How should this appointment be recorded?",
     opts(("late", "Cancelled by the patient with less than 24 hours' notice"), ("attended", "Attended"),
          ("intime", "Cancelled by the patient with 24 hours' notice or more"), ("dna", "Did not attend"),
          ("clinic", "Cancelled by the clinic")), "late",
     "The patient cancelled by phone 21.5 hours before the appointment."),
    ("notice", "score", "How much notice did the patient give?",
     opts(("lt24", "Less than 24 hours"), ("h24to72", "24 to 72 hours"), ("gt72", "More than 72 hours")), "lt24",
     "The call on Monday at 16:30 came 21.5 hours before the Tuesday 14:00 appointment."),
]))

GROUPS.append(("health-admin", (
    "Registration rules, Riverside Family Practice: we register new patients who live inside our catchment area, "
    "postcodes RV1 to RV4. Existing patients who move out of the area may stay registered if they can still get to "
    "the practice. New patients living outside the area cannot register.\n\nApplication: the applicant lives at "
    "postcode RV6, works in an office next door to the practice in RV2, and has never been registered here "
    "before."), [
    ("register", "yesno", "Can this applicant register as a new patient?", YN, "no",
     "The applicant lives in RV6, outside the RV1 to RV4 area; working in RV2 does not count.", HARD),
    ("reply", "choice", "What should reception tell the applicant?",
     opts(("decline", "We cannot register you because you live outside our area"),
          ("accept", "Registration accepted"), ("waitlist", "You are on the waiting list"),
          ("proof", "Please send proof of your work address")), "decline",
     "New patients who live outside the catchment area cannot register, and the applicant lives in RV6."),
]))

GROUPS.append(("health-admin", (
    "Policy on copies of medical records: copies are free of charge and are sent within 30 days of the request. A "
    "request made on behalf of another adult needs that adult's signed consent.\n\nRequest received: an adult "
    "patient's daughter asks for a copy of her father's records to help him with an insurance claim. She has "
    "attached a consent form signed by her father."), [
    ("release", "yesno", "Can the records be sent to the daughter?", YN, "yes",
     "The request for another adult comes with that adult's signed consent, as the policy requires."),
    ("missing", "choice", "What is still needed before the request can be processed?",
     opts(("nothing", "Nothing: the request can be processed"), ("consent", "The father's signed consent"),
          ("payment", "Payment of a fee"), ("court", "A court order")), "nothing",
     "The signed consent is attached and copies are free, so nothing else is required."),
    ("deadline", "score", "Within how long must the copies be sent?",
     opts(("d7", "Within 7 days"), ("d14", "Within 14 days"), ("d30", "Within 30 days"), ("d60", "Within 60 days")),
     "d30", "The policy says copies are sent within 30 days of the request."),
]))

GROUPS.append(("health-admin", (
    "Flu clinic booking rules this autumn: free flu vaccination appointments are offered to patients aged 65 or "
    "over, pregnant patients, and patients on the practice's long-term-conditions register. Everyone else can book "
    "a paid appointment for 25 EUR.\n\nBooking request: a 58-year-old patient asks for a free flu appointment. The "
    "practice system shows that the patient is on the long-term-conditions register."), [
    ("free", "yesno", "Is the patient eligible for a free flu appointment?", YN, "yes",
     "The patient is under 65 but on the long-term-conditions register, which also qualifies.", HARD),
    ("ground", "choice", "On which ground is the patient eligible, if any?",
     opts(("register", "On the long-term-conditions register"), ("age", "Aged 65 or over"),
          ("pregnant", "Pregnancy"), ("none", "Not eligible; a paid appointment only")), "register",
     "The patient is 58, so age does not apply, but the system shows them on the long-term-conditions register."),
]))

GROUPS.append(("health-admin", (
    "Reception rules for prescription requests: if the patient's medicine runs out today or tomorrow, the request "
    "is handled the same day; if it runs out within 7 days, within 2 working days; otherwise within 5 working "
    "days.\n\nPhone message, 10:15: \"This is about my blood pressure tablets. I took the last one from the packet "
    "this morning, so I have none for tomorrow. Could the new prescription be sent to the pharmacy on Elm Street, "
    "please?\""), [
    ("urgency", "score", "How quickly must this request be handled?",
     opts(("d5", "Within 5 working days"), ("d2", "Within 2 working days"), ("today", "The same day")), "today",
     "The patient has no tablets left for tomorrow, and medicine running out today or tomorrow is handled the same "
     "day."),
    ("pharmacy", "choice", "Where should the prescription be sent?",
     opts(("collect", "For collection at the clinic"), ("post", "By post to the patient's home"),
          ("hospital", "To the hospital pharmacy"), ("elm", "To the pharmacy on Elm Street")), "elm",
     "The patient asks for it to be sent to the pharmacy on Elm Street."),
]))

GROUPS.append(("health-admin", (
    "Recall log, 5 January: the annual diabetes eye screening for patient record P-10482 is due in April. The "
    "screening service asks practices to book recall appointments no earlier than 6 weeks before the due month. "
    "The patient's last screening was on 14 April last year, with no follow-up needed."), [
    ("when", "score", "How soon does this screening appointment need to take place?", BOOKING4, "later",
     "The screening is due in April, about three months after 5 January."),
    ("booknow", "yesno", "Should reception book the appointment today?", YN, "no",
     "Today, 5 January, is more than 6 weeks before April, and recalls are booked no earlier than that.", HARD),
]))

GROUPS.append(("health-admin", (
    "Booking rules: appointments that need a sign-language or spoken-language interpreter must be booked at least 5 "
    "working days ahead, so that the interpreter service can confirm. Standard appointments can be booked from the "
    "next working day. Working days are Monday to Friday.\n\nRequest on Tuesday 4 March 2025: a patient asks for a "
    "nurse appointment with a Polish interpreter. The earliest free nurse slots are Wednesday 5 March, Monday 10 "
    "March and Wednesday 12 March."), [
    ("slot", "choice", "Which is the earliest free slot that can be booked for this appointment?",
     opts(("wed5", "Wednesday 5 March"), ("mon10", "Monday 10 March"), ("wed12", "Wednesday 12 March")), "wed12",
     "With an interpreter at least 5 working days are needed; 10 March is only 4 working days after 4 March, and "
     "12 March is 6.", HARD),
    ("notice", "score", "How far ahead must this appointment be booked?",
     opts(("none", "No advance booking needed"), ("d1", "From the next working day"),
          ("d5", "At least 5 working days ahead"), ("d10", "At least 10 working days ahead")), "d5",
     "The appointment needs an interpreter, and those must be booked at least 5 working days ahead."),
]))

# --- moderation -------------------------------------------------------------
FORUM_RULES = (
    "Community rules (Spokes cycling forum):\n"
    "1. No insults or name-calling aimed at other members.\n"
    "2. No advertising or shop links outside the Marketplace board.\n"
    "3. Stay on topic: posts must be about cycling, except on the Forum help board.\n"
    "4. No threats of violence.\n"
    "5. Do not post other people's personal contact details.\n"
    "Enforcement: if a post breaks no rule, no action is taken. If it breaks a rule, remove it and warn the author; "
    "if the author already had 2 or more warnings in the last 90 days, also suspend them for 7 days. A threat of "
    "violence leads to a permanent ban at once, whatever the author's history.\n\n")
RULE_OPTS = opts(
    ("r1", "Rule 1: insults or name-calling"), ("r2", "Rule 2: advertising outside the Marketplace"),
    ("r3", "Rule 3: off-topic"), ("r4", "Rule 4: threats of violence"),
    ("r5", "Rule 5: other people's contact details"), ("none", "No rule is broken"))
RULE_Q = "Which rule does this post break?"
ACTION_Q = "What action should the moderator take?"
BREAKS_Q = "Does this post break any of the community rules?"

GROUPS.append(("moderation", FORUM_RULES + (
    "Board: Forum help. Today: 15 June. Author's warnings: none.\nPost: \"Mods, someone in the sales thread posted "
    "another member's home phone number. I'm not repeating it here. Could you take a look and remove it?\""), [
    ("breaks", "yesno", BREAKS_Q, YN, "no",
     "The post asks the moderators for help on the Forum help board and does not repeat the number, so it breaks "
     "no rule itself.",
     HARD),
    ("rule", "choice", RULE_Q, RULE_OPTS, "none",
     "Reporting a shared phone number on the Forum help board without repeating it breaks none of the five "
     "rules.", HARD),
    ("action", "score", ACTION_Q, ACTION4, "none", "A post that breaks no rule needs no action."),
]))

GROUPS.append(("moderation", FORUM_RULES + (
    "Board: Maintenance. Today: 15 June. Author's warnings: none.\nPost: \"Great question about squeaky disc "
    "brakes! I had the same problem. I now sell a cleaning spray that fixes it in a week: 20% off with code "
    "SPOKES20 at quietbrake-shop.example.\""), [
    ("breaks", "yesno", BREAKS_Q, YN, "yes",
     "The post advertises a spray with a discount code and a shop link on the Maintenance board."),
    ("rule", "choice", RULE_Q, RULE_OPTS, "r2",
     "It advertises a product with a shop link outside the Marketplace board."),
    ("action", "score", ACTION_Q, ACTION4, "warn",
     "It breaks a rule and the author has no earlier warnings, so the post is removed and the author warned."),
]))

GROUPS.append(("moderation", FORUM_RULES + (
    "Board: Commuting. Today: 15 June. Author's warnings: 3 May (insult) and 28 May (insult).\nPost, replying to "
    "another member: \"Only an idiot rides without lights at night. You clearly are one, so don't bother giving "
    "advice here.\""), [
    ("breaks", "yesno", BREAKS_Q, YN, "yes", "The reply calls another member an idiot."),
    ("rule", "choice", RULE_Q, RULE_OPTS, "r1", "The reply calls another member an idiot, which is name-calling."),
    ("action", "score", ACTION_Q, ACTION4, "suspend",
     "The author already had 2 warnings in the last 90 days (3 May and 28 May), so a 7-day suspension is added.",
     HARD),
]))

GROUPS.append(("moderation", FORUM_RULES + (
    "Board: Commuting. Today: 15 June. Author's warnings: none.\nPost, replying to another member after an "
    "argument about the canal path: \"If I ever see you on the canal path again I will knock you off your bike "
    "and make sure you don't get up.\""), [
    ("history", "yesno", "Does the author's warning history change the action to take here?", YN, "no",
     "A threat of violence leads to a permanent ban whatever the author's history.", HARD),
    ("rule", "choice", RULE_Q, RULE_OPTS, "r4", "The post threatens to knock another member off their bike."),
    ("action", "score", ACTION_Q, ACTION4, "ban", "A threat of violence leads to a permanent ban at once."),
]))

GROUPS.append(("moderation", FORUM_RULES + (
    "Board: Racing. Today: 15 June. Author's warnings: 10 February (off-topic) and 2 June (off-topic).\nPost: "
    "\"Anyone watching the football final tonight? Who do you think will win?\""), [
    ("february", "yesno", "Does the warning of 10 February count towards the author's warnings in the last 90 "
     "days?", YN, "no", "10 February is 125 days before 15 June, outside the 90-day period.", HARD),
    ("rule", "choice", RULE_Q, RULE_OPTS, "r3", "A post about a football final is not about cycling."),
    ("action", "score", ACTION_Q, ACTION4, "warn",
     "Only the 2 June warning falls in the last 90 days, fewer than 2, so the post is removed and the author "
     "warned without a suspension.", HARD),
]))

GROUPS.append(("moderation", FORUM_RULES + (
    "Board: Marketplace. Today: 15 June. Author's warnings: none.\nPost: \"Selling my road bike, 54 cm frame, new "
    "chain and tyres, 300 EUR. More photos and details on my shop page: ridewell-used.example.\""), [
    ("breaks", "yesno", BREAKS_Q, YN, "no",
     "It is a sale post with a shop link on the Marketplace board, where advertising is allowed.", HARD),
    ("rule", "choice", RULE_Q, RULE_OPTS, "none",
     "Advertising is only forbidden outside the Marketplace board, and this post is on it.", HARD),
    ("action", "score", ACTION_Q, ACTION4, "none", "The post breaks no rule, so no action is taken."),
]))

GROUPS.append(("moderation", FORUM_RULES + (
    "Board: Club rides. Today: 15 June. Author's warnings: 20 April (off-topic) and 25 May (off-topic).\nPost: "
    "\"Route change for Sunday! Just call our ride leader directly: her mobile is 555-0142, and she lives at "
    "12 Mill Lane if you want to drop off the forms.\""), [
    ("breaks", "yesno", BREAKS_Q, YN, "yes", "The post shares the ride leader's mobile number and home address."),
    ("rule", "choice", RULE_Q, RULE_OPTS, "r5", "It posts another person's mobile number and home address."),
    ("action", "score", ACTION_Q, ACTION4, "suspend",
     "The author had 2 warnings in the last 90 days (20 April and 25 May), so a 7-day suspension is added."),
]))

GROUPS.append(("moderation", FORUM_RULES + (
    "Board: Components. Today: 15 June. Author's warnings: none.\nPost: \"Third broken derailleur from this brand "
    "in a year. Their customer service is useless and the company should be ashamed of itself. Has anyone found a "
    "more reliable brand for gravel bikes?\" (The brand has no account on the forum.)"), [
    ("breaks", "yesno", BREAKS_Q, YN, "no",
     "Harsh criticism of a brand that is not a forum member is not an insult aimed at a member, and the post is "
     "about bike parts.", HARD),
    ("rule", "choice", RULE_Q, RULE_OPTS, "none",
     "The post criticises a company, not a member, and stays on the topic of cycling.", HARD),
    ("action", "score", ACTION_Q, ACTION4, "none", "A post that breaks no rule needs no action."),
]))

def rows_from(groups):
    """The rows of ``groups`` ((family, state, questions) each): ids, groups and fields as every set built here has
    them (``build_heldout.py`` builds with it too)."""
    out = []
    counters = {}
    for family, state, questions in groups:
        counters[family] = counters.get(family, 0) + 1
        group = f"{family}-{counters[family]:02d}"
        for slug, qtype, question, options, label, why, *hard in questions:
            row = {"id": f"{group}-{slug}", "state": state, "question": question, "options": options,
                   "type": qtype, "label": label, "family": family, "group": group, "why": why}
            if hard:
                row["difficulty"] = hard[0]
            out.append(row)
    return out


def rows_single():
    return rows_from(GROUPS)


def dump(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    dump(os.path.join(here, "single.jsonl"), rows_single())


if __name__ == "__main__":
    main()
