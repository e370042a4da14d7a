#!/usr/bin/env python3
"""Build the held-out labelled single-request set from authored content (stdlib only).

Writes, next to this script:
  heldout.jsonl  typed decisions (choice / yesno / score) about realistic states in eight
                 families (insurance, it-access, payables, tenancy, shipping, fraud,
                 admissions, bug-triage); every scenario ("group") is one state asked 2-4
                 questions, each answerable on its own, with a one-sentence `why` for its
                 gold label. Rows that hold a distractor, a stated exception, negation or a
                 small date or amount calculation carry "difficulty": "hard".

The set is HELD OUT: no default, method or readout was chosen on it, and none may be. It
exists to measure the shipped defaults and the peer on families never used for selection;
none of its families appears in any other labelled file of the project (single.jsonl,
authored.jsonl, boundary.jsonl, the demos or the examples). No calibration or batch
statistics are meant to be fitted on it either.

All content below is hand-written by the SemIf team; nothing is random, so the output
is byte-for-byte reproducible: python data/eval/build_heldout.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the row form, option helpers and writer are build_single.py's: one convention for both sets
from build_single import HARD, YN, dump, opts, rows_from

# Each group: (family, state, [(slug, type, question, options, label, why[, HARD]), ...])
GROUPS = []

# --- insurance --------------------------------------------------------------
INS_POLICY = (
    "Policy wording extract (Harbourline Home Contents):\n"
    "- Report a loss within 30 days; claims reported later than that are declined.\n"
    "- An excess of 150 EUR is deducted once from every claim that is paid.\n"
    "- Theft is covered only with signs of forced entry, or if the item was taken from the person by force.\n"
    "- Accidental damage is covered only if the schedule includes the accidental damage add-on.\n"
    "- Wear and tear, and gradual damage such as damp, rot or a slow leak, are never covered.\n"
    "- A single item worth more than 2,000 EUR is covered only if it is listed on the schedule.\n\n")
PAYOUT4 = opts(("zero", "Nothing: the claim is declined"), ("low", "1 to 500 EUR"), ("mid", "501 to 1,500 EUR"),
               ("high", "More than 1,500 EUR"))
PAYOUT_Q = "How much should the insurer pay on this claim?"

GROUPS.append(("insurance", INS_POLICY + (
    "Schedule, policy HC-20931: accidental damage add-on: not included. Listed items: none.\n\nClaim form, received "
    "12 June. Date of loss: 3 June. \"We came back from a weekend away and found the back door open. A laptop "
    "(bought last year for 1,200 EUR) and a gold ring (valued at 400 EUR) had been taken.\"\nAttachments: police "
    "report 55-1187, which notes that the back door lock had been forced; the laptop's purchase receipt."), [
    ("covered", "yesno", "Is this theft covered by the policy?", YN, "yes",
     "The police report notes that the back door lock was forced, which meets the policy's condition of forced "
     "entry."),
    ("proof", "choice", "Which attachment shows that the condition for theft cover is met?",
     opts(("receipt", "The laptop's purchase receipt"), ("schedule", "The policy schedule"),
          ("police", "The police report"), ("none", "None of the attachments")), "police",
     "Only the police report records the forced lock, the sign of forced entry that the policy requires."),
    ("payout", "score", PAYOUT_Q, PAYOUT4, "mid",
     "The items come to 1,200 + 400 = 1,600 EUR, and after the 150 EUR excess 1,450 EUR is paid, inside the 501 to "
     "1,500 EUR band.", HARD),
]))

GROUPS.append(("insurance", INS_POLICY + (
    "Schedule, policy HC-31402: accidental damage add-on: not included. Listed items: none.\n\nClaim by phone, 9 "
    "August, call notes: the customer was moving a bookcase on 6 August and knocked the television off its stand; "
    "the screen is cracked and it no longer turns on. The television cost 900 EUR two years ago. No one else was "
    "involved and nothing was taken."), [
    ("cause", "choice", "What kind of loss is this claim about?",
     opts(("theft", "Theft"), ("accident", "Accidental damage"), ("wear", "Wear and tear"),
          ("leak", "Water damage")), "accident",
     "The customer knocked the television off its stand while moving a bookcase."),
    ("covered", "yesno", "Is this loss covered by the policy?", YN, "no",
     "Accidental damage is covered only with the add-on, and this schedule does not include it."),
    ("payout", "score", PAYOUT_Q, PAYOUT4, "zero",
     "Accidental damage without the add-on is not covered, so nothing is paid."),
]))

GROUPS.append(("insurance", INS_POLICY + (
    "Schedule, policy HC-18876: accidental damage add-on: included. Listed items: none.\n\nClaim received 2 "
    "February. The customer noticed a brown stain spreading on the bedroom ceiling on 28 January. Surveyor's "
    "report: \"The seal around the bath upstairs has failed. Water has been seeping through slowly for many months, "
    "and the joist below is starting to rot. The ceiling plaster and one joist need replacing.\"\nAmount claimed: "
    "2,300 EUR for repairs."), [
    ("covered", "yesno", "Is the ceiling repair covered by the policy?", YN, "no",
     "The surveyor describes a slow leak over many months with rot, gradual damage that is never covered, even "
     "with the add-on.", HARD),
    ("clause", "choice", "Which part of the policy wording decides this claim?",
     opts(("deadline", "The 30-day rule for reporting a loss"), ("addon", "The accidental damage add-on"),
          ("gradual", "The exclusion of wear and tear and gradual damage"),
          ("listed", "The rule for single items worth more than 2,000 EUR")), "gradual",
     "The damage came from a slow leak over many months, which falls under the gradual damage exclusion.", HARD),
    ("share", "score", "How much of the 2,300 EUR claimed should be paid?",
     opts(("none", "None of it"), ("part", "Part of it"), ("all", "All of it")), "none",
     "Gradual damage is never covered, so none of the claim is paid."),
]))

GROUPS.append(("insurance", INS_POLICY + (
    "Schedule, policy HC-27750: accidental damage add-on: not included. Listed items: none.\n\nClaim form, received "
    "8 April. Date of loss: 2 March. \"My bike was stolen from the garage while I was at work. The padlock on the "
    "garage door was cut off.\" Bike value: 850 EUR. Attachment: police report 61-0442, which records the cut "
    "padlock.\nThe customer adds: \"Sorry this is late, I was abroad for most of March.\""), [
    ("time", "yesno", "Was this loss reported within the time the policy allows?", YN, "no",
     "From 2 March to 8 April is 37 days, more than the 30 days the policy allows.", HARD),
    ("decision", "choice", "What should the claims handler decide?",
     opts(("late", "Decline it: the loss was reported too late"), ("pay", "Pay the claim less the excess"),
          ("police", "Ask for a police report first"), ("forced", "Decline it: there was no forced entry")), "late",
     "The claim came 37 days after the loss, and the policy declines claims reported after 30 days whatever the "
     "reason for the delay.", HARD),
    ("delay", "score", "How long after the loss was the claim reported?",
     opts(("week", "Within 7 days"), ("month", "8 to 30 days"), ("two", "31 to 60 days"),
          ("more", "More than 60 days")), "two",
     "The loss was on 2 March and the claim came on 8 April, 37 days later.", HARD),
]))

GROUPS.append(("insurance", INS_POLICY + (
    "Schedule, policy HC-40518: accidental damage add-on: included. Listed items: diamond necklace, 3,500 EUR.\n\n"
    "Claim form, received 22 October. Date of loss: 19 October. \"I was pushed to the ground outside the station "
    "and a man pulled my watch off my wrist.\" Watch value: 2,800 EUR, with a valuation certificate from 2023.\n"
    "Attachment: police report 70-9931, recording a robbery with force."), [
    ("theft", "yesno", "Does the way the watch was taken meet the policy's condition for theft cover?", YN, "yes",
     "The watch was pulled off the customer's wrist by force, which is theft from the person by force."),
    ("watch", "yesno", "Is the watch covered under this policy?", YN, "no",
     "The watch is worth 2,800 EUR, more than 2,000 EUR, and only the necklace is listed on the schedule.", HARD),
    ("reason", "choice", "What decides whether the watch is covered?",
     opts(("force", "Whether it was taken by force"), ("late", "Whether the claim was reported in time"),
          ("addon", "Whether the schedule includes the accidental damage add-on"),
          ("unlisted", "Its value of more than 2,000 EUR without a listing on the schedule")), "unlisted",
     "The robbery and the prompt claim meet the policy, so only the watch's value without a listing rules it out."),
    ("payout", "score", PAYOUT_Q, PAYOUT4, "zero",
     "The only item claimed is an unlisted watch worth more than 2,000 EUR, which is not covered."),
]))

GROUPS.append(("insurance", INS_POLICY + (
    "Schedule, policy HC-12093: accidental damage add-on: included. Listed items: upright piano, 6,000 EUR.\n\n"
    "Claim form, received 15 May. Date of loss: 11 May. \"My son knocked over a lit candle during a party. It burnt "
    "the top of the piano and the sideboard next to it.\"\nRepair quote for the piano: 1,900 EUR. Replacement "
    "sideboard: 600 EUR. No other items are claimed."), [
    ("covered", "yesno", "Is this damage covered by the policy?", YN, "yes",
     "It is accidental damage, reported 4 days after the loss, and the schedule includes the accidental damage "
     "add-on."),
    ("excess", "choice", "How much excess should be deducted from this claim?",
     opts(("none", "None"), ("once", "150 EUR"), ("each", "300 EUR: 150 EUR for each item"),
          ("pct", "10% of the amount claimed")), "once",
     "The policy deducts the 150 EUR excess once from every claim that is paid, not once per item.", HARD),
    ("payout", "score", PAYOUT_Q, PAYOUT4, "high",
     "The repair and replacement come to 2,500 EUR, and after the 150 EUR excess 2,350 EUR is paid, more than 1,500 "
     "EUR.", HARD),
]))

# --- it-access --------------------------------------------------------------
ACCESS_POLICY = (
    "IT access policy (Corvel Logistics):\n"
    "- Every access request needs approval from the requester's line manager.\n"
    "- Admin access also needs approval from the system owner, and it expires 90 days after it is granted; renewing "
    "it is a new request.\n"
    "- The production database is open only to the Platform and Data teams.\n"
    "- Contractors may have standard or read-only access, never admin access; their accounts end on their contract "
    "end date.\n"
    "- Each person requests their own access; requests made for someone else are refused.\n\n")
ACCESS4 = opts(("none", "No access"), ("read", "Read-only access"), ("standard", "Standard access"),
               ("admin", "Admin access"))
LEVEL_Q = "What is the highest level of access that can be granted on this request?"

GROUPS.append(("it-access", ACCESS_POLICY + (
    "Ticket IT-5521, 3 February. Requester: Lena Ortiz, accounts assistant, Finance team, permanent employee.\n"
    "\"Hi, I started last week and need to submit and approve expense claims in the Expenses system. My manager Tom "
    "Reyes has approved this (approval attached).\"\nAttachment: approval from Tom Reyes, line manager, for "
    "standard access to Expenses."), [
    ("grant", "yesno", "Can the access Lena asked for be granted?", YN, "yes",
     "She asks for her own standard access to Expenses with her line manager's approval, which is all the policy "
     "needs."),
    ("missing", "choice", "What is still needed before the access can be granted?",
     opts(("nothing", "Nothing: it can be granted now"), ("manager", "Approval from the line manager"),
          ("owner", "Approval from the system owner"), ("contract", "A contract end date")), "nothing",
     "Standard access needs only the line manager's approval, and Tom Reyes's approval is attached."),
    ("level", "score", LEVEL_Q, ACCESS4, "standard",
     "Lena asked for standard access with her manager's approval, and nothing in the policy limits her to less."),
]))

GROUPS.append(("it-access", ACCESS_POLICY + (
    "Ticket IT-5604, 11 March. Requester: Marco Bellini, contractor (Brightpath Consulting), Platform team, "
    "contract end date 30 September.\n\"I need admin rights on the build server to fix the deploy pipeline.\"\n"
    "Attachments: approval from his line manager, Sara Kim, for admin access; approval from the build server's "
    "system owner, Dev Patel."), [
    ("admin", "yesno", "Can Marco be given admin access to the build server?", YN, "no",
     "Marco is a contractor, and contractors are never given admin access, whatever approvals they hold.", HARD),
    ("level", "score", "What is the highest level of access the policy allows Marco to have on the build server?",
     ACCESS4, "standard", "As a contractor Marco may have standard or read-only access but never admin access."),
    ("ends", "choice", "When will Marco's account end?",
     opts(("d90", "90 days after access is granted"), ("never", "It does not end"),
          ("owner", "When the system owner removes it"), ("contract", "On 30 September, his contract end date")),
     "contract", "The policy ends contractors' accounts on their contract end date, which for Marco is 30 September."),
]))

GROUPS.append(("it-access", ACCESS_POLICY + (
    "Ticket IT-5730, 2 April. Requester: Aisha Rahman, data engineer, Data team, permanent employee.\n\"Please give "
    "me admin access to the production database so I can create the new reporting tables.\"\nAttachment: approval "
    "from her line manager, Ben Ford.\nService desk note: \"Approval requested from the database's system owner, "
    "Olga Nowak, on 2 April; no reply yet.\""), [
    ("team", "yesno", "Is Aisha in a team that may use the production database?", YN, "yes",
     "Aisha is in the Data team, one of the two teams the production database is open to."),
    ("now", "yesno", "Can the admin access be granted today?", YN, "no",
     "Admin access also needs the system owner's approval, and Olga Nowak has not replied yet."),
    ("missing", "choice", "What is still needed before the admin access can be granted?",
     opts(("nothing", "Nothing"), ("manager", "The line manager's approval"),
          ("owner", "The system owner's approval"), ("team", "A move to the Platform team")), "owner",
     "The line manager has approved, but the system owner, Olga Nowak, has not replied yet."),
]))

GROUPS.append(("it-access", ACCESS_POLICY + (
    "Ticket IT-5811, 14 April. Requester: Jonas Weber, campaign analyst, Marketing team, permanent employee.\n\"I "
    "only need read-only access to the production database to check campaign sign-ups myself. My manager has "
    "already approved it.\"\nAttachment: approval from his line manager, Clara Diaz."), [
    ("grant", "yesno", "Can Jonas be given read-only access to the production database?", YN, "no",
     "The production database is open only to the Platform and Data teams, and Jonas is in Marketing, even for "
     "read-only access.", HARD),
    ("reason", "choice", "Which rule decides this request?",
     opts(("team", "The production database being open only to two teams"),
          ("manager", "The need for line manager approval"), ("contractor", "The limits on contractors"),
          ("someone", "The rule against requests for someone else")), "team",
     "Jonas has his manager's approval and asks for himself, but he is not in the Platform or Data team."),
    ("level", "score", LEVEL_Q, ACCESS4, "none",
     "Marketing staff may not use the production database at all, so no access can be granted.", HARD),
]))

GROUPS.append(("it-access", ACCESS_POLICY + (
    "Ticket IT-5902, Tuesday 15 April 2025. Requester: Pieter de Vries, platform engineer, Platform team, permanent "
    "employee.\n\"My admin access to the monitoring system was granted on 10 January. Can you just extend it for "
    "another 90 days?\"\nAccess log: admin access to the monitoring system granted to Pieter de Vries on 10 January "
    "2025, with approvals from his line manager and the system owner."), [
    ("active", "yesno", "Is Pieter's admin access from 10 January still active on 15 April?", YN, "no",
     "Ninety days after 10 January 2025 is 10 April, so the access expired five days before 15 April.", HARD),
    ("needs", "choice", "What does Pieter need to get admin access to the monitoring system again?",
     opts(("nothing", "Nothing: the service desk can just extend it"), ("manager", "Only his line manager's approval"),
          ("both", "A new request approved by his line manager and the system owner"),
          ("security", "A sign-off from the security team")), "both",
     "Renewing admin access is a new request, and admin access needs both the line manager's and the system "
     "owner's approval.", HARD),
    ("expired", "score", "How long ago had the admin access expired by 15 April?",
     opts(("not", "It has not expired"), ("week", "1 to 7 days ago"), ("month", "8 to 31 days ago"),
          ("older", "More than 31 days ago")), "week",
     "The 90 days from 10 January 2025 ended on 10 April, five days before 15 April.", HARD),
]))

GROUPS.append(("it-access", ACCESS_POLICY + (
    "Ticket IT-6017, 6 May. Requester: Hana Sato, site reliability engineer, Platform team, permanent employee.\n"
    "\"Please set me up with read-only access to the production database for the on-call rota. Also add the same "
    "for Priya Nair, she's on leave this week and asked me to sort it for her.\"\nAttachment: approval from Hana's "
    "line manager, Luis Romero, for Hana's read-only access."), [
    ("self", "yesno", "Can Hana's own access be granted?", YN, "yes",
     "Hana is in the Platform team, asks for her own read-only access and has her line manager's approval."),
    ("priya", "yesno", "Can access for Priya Nair be granted from this ticket?", YN, "no",
     "Hana is asking on Priya's behalf, and requests made for someone else are refused."),
    ("level", "score", "What is the highest level of access Hana can be given on this ticket?", ACCESS4, "read",
     "Hana asked for read-only access, and that is what her manager approved."),
]))

GROUPS.append(("it-access", ACCESS_POLICY + (
    "Ticket IT-6120, 3 November. Requester: Tomasz Lis, contractor (Northgate Staffing), Customer Service team, "
    "contract end date 31 December.\n\"Could I get standard access to the support wiki so I can edit the help "
    "articles?\"\nAttachment: approval from his line manager, Eva Brandt, for standard access to the support "
    "wiki."), [
    ("grant", "yesno", "Can Tomasz be given standard access to the support wiki?", YN, "yes",
     "Contractors may have standard access and his line manager has approved it, since only admin access is barred "
     "to contractors.", HARD),
    ("ends", "choice", "When will Tomasz's account end?",
     opts(("d90", "1 February, 90 days from now"), ("never", "It does not end"),
          ("manager", "When his line manager asks for it"), ("dec31", "31 December, his contract end date")),
     "dec31", "Contractors' accounts end on their contract end date, which for Tomasz is 31 December."),
]))

# --- payables ---------------------------------------------------------------
AP_RULES = (
    "Accounts payable rules (Brightwell Foods):\n"
    "- Pay an invoice only if it matches the purchase order (PO) and the goods receipt. A unit price up to 2% away "
    "from the PO price is accepted; a larger difference goes back to the buyer.\n"
    "- Pay only for the quantity received; the rest waits for the next delivery.\n"
    "- Payment is due 30 days after the invoice date, unless the supplier record gives other terms.\n"
    "- Invoices of 10,000 EUR or more need the finance director's approval before payment.\n"
    "- A change of supplier bank details must be confirmed by a phone call to the number already on file before "
    "anything is paid to the new account.\n\n")
PRICE3 = opts(("same", "Same as the PO price"), ("within", "Different, but within 2% of the PO price"),
              ("over", "More than 2% away from the PO price"))
PRICE_Q = "How far is the invoiced unit price from the PO price?"

GROUPS.append(("payables", AP_RULES + (
    "Invoice GV-2291 from Greenvale Dairy, dated 5 May, total 4,200 EUR: 1,400 kg of butter at 3.00 EUR/kg.\n"
    "PO 45-1180: 1,400 kg of butter at 3.00 EUR/kg.\nGoods receipt GR-7734: 1,400 kg of butter received on 3 May.\n"
    "Supplier record, Greenvale Dairy: payment terms 45 days from the invoice date."), [
    ("match", "yesno", "Does this invoice match the PO and the goods receipt?", YN, "yes",
     "The quantity and price on the invoice are the same as on the PO, and all 1,400 kg were received."),
    ("due", "choice", "When is this invoice due for payment?",
     opts(("may5", "5 May"), ("jun4", "4 June"), ("jun19", "19 June"), ("jul5", "5 July")), "jun19",
     "Greenvale's supplier record gives 45-day terms, and 45 days after 5 May is 19 June.", HARD),
    ("price", "score", PRICE_Q, PRICE3, "same", "The invoice and the PO both give 3.00 EUR/kg."),
]))

GROUPS.append(("payables", AP_RULES + (
    "Invoice HM-0917 from Hartley Mills, dated 12 June, total 5,150 EUR: 500 bags of flour at 10.30 EUR.\nPO "
    "45-1302: 500 bags of flour at 10.00 EUR.\nGoods receipt GR-7810: 500 bags of flour received on 10 June.\n"
    "Supplier email: \"Prices have gone up across the market, sorry for the short notice.\"\nSupplier record, "
    "Hartley Mills: standard terms."), [
    ("price", "score", PRICE_Q, PRICE3, "over",
     "The invoiced 10.30 EUR is 3% above the PO price of 10.00 EUR, more than the 2% accepted.", HARD),
    ("pay", "yesno", "Can this invoice be paid as it stands?", YN, "no",
     "Its unit price is 3% above the PO, more than the 2% accepted, so it goes back to the buyer."),
    ("next", "choice", "What should accounts payable do with this invoice?",
     opts(("director", "Send it to the finance director for approval"), ("pay", "Pay it, since the goods arrived"),
          ("buyer", "Send it back to the buyer"),
          ("reject", "Reject it and ask the supplier for a new one at the PO price")), "buyer",
     "The rules send a price difference of more than 2% back to the buyer."),
]))

GROUPS.append(("payables", AP_RULES + (
    "Invoice CS-5540 from Coldstream Logistics, dated 2 September, total 12,400 EUR: cold storage of 40 pallets for "
    "August at 310 EUR per pallet.\nPO 45-1415: cold storage of 40 pallets for August at 305 EUR per pallet.\n"
    "Goods receipt GR-8022: service confirmed for 40 pallets for August.\nSupplier record: standard terms.\n"
    "Approvals on file: none yet."), [
    ("price", "score", PRICE_Q, PRICE3, "within",
     "310 EUR is 5 EUR, about 1.6%, above the PO price of 305 EUR, so it is within 2%.", HARD),
    ("before", "choice", "What must happen before this invoice can be paid?",
     opts(("nothing", "Nothing: it can be paid now"), ("director", "Approval from the finance director"),
          ("buyer", "A price check by the buyer"), ("phone", "A phone call to confirm the bank details")),
     "director",
     "The invoice is 12,400 EUR, over the 10,000 EUR limit, with no approval on file, while its price is within "
     "the 2% tolerance.", HARD),
    ("director", "yesno", "Does this invoice need the finance director's approval?", YN, "yes",
     "Its total of 12,400 EUR is 10,000 EUR or more."),
]))

GROUPS.append(("payables", AP_RULES + (
    "Invoice PB-3318 from Pinebrook Packaging, dated 1 October, total 3,100 EUR; it matches PO 45-1502 and goods "
    "receipt GR-8140 exactly.\nEmail from accounts@pinebrook-packaging.com, 3 October: \"We have moved banks. "
    "Please pay this and all future invoices to IBAN DE89 3704 0044 0532 0130 00.\"\nThe AP clerk replied asking "
    "the supplier to confirm; the answer, also by email, said: \"Confirmed, the new account is correct.\"\nNo phone "
    "call has been made."), [
    ("new", "yesno", "Can this invoice be paid to the new bank account now?", YN, "no",
     "A change of bank details needs a phone call to the number on file first, and only emails have been "
     "exchanged.", HARD),
    ("next", "choice", "What should the clerk do next?",
     opts(("pay", "Pay to the new account"), ("old", "Pay to the old account without telling the supplier"),
          ("email", "Reply to the email asking for a second confirmation"),
          ("file", "Call the supplier on the phone number already on file")), "file",
     "The rules require the change to be confirmed by a call to the number already on file."),
    ("match", "yesno", "Does the invoice match its PO and goods receipt?", YN, "yes",
     "The invoice matches PO 45-1502 and goods receipt GR-8140 exactly."),
]))

GROUPS.append(("payables", AP_RULES + (
    "Invoice OF-7720 from Office Frame Ltd, dated 18 November, total 16,000 EUR: 200 office chairs at 80 EUR.\nPO "
    "45-1633: 200 office chairs at 80 EUR, to be delivered in two loads.\nGoods receipt GR-8301: 150 office chairs "
    "received on 17 November; the other 50 are expected in December.\nApprovals on file: finance director, for "
    "invoice OF-7720."), [
    ("full", "yesno", "Can the invoice be paid in full now?", YN, "no",
     "Only 150 of the 200 chairs invoiced have been received, and only the quantity received is paid."),
    ("qty", "choice", "How many chairs can be paid for now?",
     opts(("all", "200"), ("rest", "50"), ("got", "150"), ("zero", "None")), "got",
     "150 chairs were received, and the rules pay for the quantity received."),
    ("price", "score", PRICE_Q, PRICE3, "same", "The invoice and the PO both price the chairs at 80 EUR."),
]))

GROUPS.append(("payables", AP_RULES + (
    "Today is 18 December. Invoice NL-4410 from Northlight Electrical, dated 20 November, total 2,380 EUR; it "
    "matches PO 45-1690 and goods receipt GR-8355.\nSupplier record, Northlight Electrical: standard terms.\n"
    "Supplier email, 18 December: \"Friendly reminder, invoice NL-4410 is now overdue, please pay today.\""), [
    ("overdue", "yesno", "Is invoice NL-4410 overdue today?", YN, "no",
     "Standard terms make it due 30 days after 20 November, on 20 December, two days after today.", HARD),
    ("left", "score", "How long is left until the invoice is due?",
     opts(("over", "None: it is overdue"), ("week", "1 to 7 days"), ("month", "8 to 30 days")), "week",
     "It is due on 20 December, two days after today, 18 December.", HARD),
    ("terms", "choice", "Which payment terms apply to this invoice?",
     opts(("d30", "30 days"), ("d14", "14 days"), ("d45", "45 days"), ("d60", "60 days")), "d30",
     "The supplier record gives standard terms, which are 30 days from the invoice date."),
]))

GROUPS.append(("payables", AP_RULES + (
    "Invoice RW-8812 from Riverway Cleaning, dated 10 February, total 2,450 EUR, stamped \"REMINDER\".\nPayment "
    "log: RW-8812, Riverway Cleaning, 2,450 EUR, paid on 14 March to the account on file, bank reference "
    "BW-55731.\nSupplier note: \"We still show this invoice as open on our side.\""), [
    ("paid", "yesno", "Has invoice RW-8812 already been paid?", YN, "yes",
     "The payment log shows RW-8812 paid in full on 14 March."),
    ("action", "choice", "What should accounts payable do?",
     opts(("pay", "Pay the invoice again"), ("director", "Send it to the finance director"),
          ("proof", "Reply with the details of the 14 March payment"), ("buyer", "Send it back to the buyer")),
     "proof",
     "The invoice was already paid on 14 March, so the supplier should get the payment details rather than a "
     "second payment."),
]))

# --- tenancy ----------------------------------------------------------------
TEN_POLICY = (
    "Repairs policy (Oakridge Lettings):\n"
    "- Emergency, contractor on site within 24 hours: no heating, or no hot water, between October and April; a gas "
    "smell; flooding; or a home that cannot be locked.\n"
    "- Urgent, within 5 working days: a fault that stops a toilet, oven, fridge or washing machine being used.\n"
    "- Routine, within 28 days: everything else, including a heating fault from May to September.\n"
    "- The landlord pays for wear and tear; the tenant pays for damage caused by the tenant, their family or their "
    "guests.\n"
    "- Light bulbs and smoke alarm batteries are the tenant's own job.\n"
    "Working days are Monday to Friday.\n\n")
TEN_PRI = opts(("routine", "Routine: within 28 days"), ("urgent", "Urgent: within 5 working days"),
               ("emergency", "Emergency: within 24 hours"))
PRI_Q = "Under the policy, how quickly must this repair be attended?"

GROUPS.append(("tenancy", TEN_POLICY + (
    "Tenant report, 14 January, 07:40, flat 3, 18 Quay Street:\n\"The boiler stopped overnight. No heating and no "
    "hot water, and it's below freezing outside.\"\nBoiler engineer's note from last year's service: \"Boiler is "
    "14 years old; the main heat exchanger is corroded with age and will need replacing soon.\""), [
    ("priority", "score", PRI_Q, TEN_PRI, "emergency", "There is no heating or hot water in January, an emergency."),
    ("pays", "choice", "Who should pay for this repair?",
     opts(("tenant", "The tenant"), ("landlord", "The landlord"), ("split", "Tenant and landlord, half each"),
          ("council", "The local council")), "landlord",
     "The engineer blames corrosion from age, which is wear and tear that the landlord pays for."),
    ("by", "yesno", "Must a contractor be on site by 07:40 on 15 January?", YN, "yes",
     "An emergency must be attended within 24 hours of the report made at 07:40 on 14 January."),
]))

GROUPS.append(("tenancy", TEN_POLICY + (
    "Tenant report, 10 July, 11 Birch Close:\n\"None of the radiators warm up when I turn the heating on. Hot water "
    "from the taps is fine. It isn't cold at the moment, but I'd like it sorted before winter.\""), [
    ("priority", "score", PRI_Q, TEN_PRI, "routine",
     "A heating fault in July, with the hot water working, is routine under the policy.", HARD),
    ("emergency", "yesno", "Is this an emergency under the policy?", YN, "no",
     "Lost heating is only an emergency from October to April, and this report is from July with hot water "
     "working.", HARD),
    ("book", "choice", "Within what time must a contractor attend this repair?",
     opts(("h24", "Within 24 hours"), ("d5", "Within 5 working days"), ("d28", "Within 28 days"),
          ("winter", "Any time before October")), "d28",
     "A heating fault from May to September is routine, which means within 28 days."),
]))

GROUPS.append(("tenancy", TEN_POLICY + (
    "Tenant report, Monday 9 June, flat 7, 2 Mill Row:\n\"Our only toilet is blocked and won't flush. My "
    "four-year-old flushed a toy car down it yesterday. Plunging hasn't helped.\"\nThe flat has one bathroom."), [
    ("priority", "score", PRI_Q, TEN_PRI, "urgent",
     "The only toilet cannot be used, which is urgent and none of the emergency cases."),
    ("pays", "choice", "Who should pay for this repair?",
     opts(("landlord", "The landlord"), ("agency", "Oakridge Lettings"), ("plumber", "The plumber"),
          ("tenant", "The tenant")), "tenant",
     "The tenant's child caused the blockage, and the tenant pays for damage caused by their family."),
    ("tenant", "yesno", "Should the tenant pay for clearing the toilet?", YN, "yes",
     "The blockage was caused by the tenant's child, and damage caused by the tenant's family is the tenant's to "
     "pay."),
]))

GROUPS.append(("tenancy", TEN_POLICY + (
    "Tenant report, 22 March, 23:15, 5 Elm Terrace:\n\"Someone tried to break in this evening. The front door lock "
    "is smashed and the door won't lock or even stay shut. Also, while I'm writing: the bathroom light bulb has "
    "gone.\"\nPolice incident number: 4471-22M."), [
    ("priority", "score", "Under the policy, how quickly must the front door be attended?", TEN_PRI, "emergency",
     "A home that cannot be locked is an emergency."),
    ("bulb", "yesno", "Should Oakridge send someone to replace the bathroom light bulb?", YN, "no",
     "Light bulbs are the tenant's own job."),
    ("which", "choice", "Which of the reported problems is the most urgent?",
     opts(("bulb", "The bathroom light bulb"), ("lock", "The front door lock"), ("both", "Both are equally urgent"),
          ("neither", "Neither is urgent")), "lock",
     "A home that cannot be locked is an emergency, while the light bulb is the tenant's own job."),
]))

GROUPS.append(("tenancy", TEN_POLICY + (
    "Tenant report, Tuesday 4 March 2025, 4 Hill Road:\n\"The oven stopped heating on Sunday. The grill and the hob "
    "still work.\"\nContractor's note from a visit last year: \"Oven is about 15 years old; the elements are worn "
    "and near the end of their life.\""), [
    ("priority", "score", PRI_Q, TEN_PRI, "urgent",
     "The oven cannot be used even though the grill and hob work, which makes it urgent.", HARD),
    ("date", "choice", "By which date must a contractor attend, at the latest?",
     opts(("mar5", "Wednesday 5 March"), ("mar9", "Sunday 9 March"), ("mar11", "Tuesday 11 March"),
          ("apr1", "Tuesday 1 April")), "mar11",
     "An urgent repair reported on Tuesday 4 March must be attended within 5 working days, which run to Tuesday 11 "
     "March.", HARD),
    ("landlord", "yesno", "Does the landlord pay for this repair?", YN, "yes",
     "The contractor's note points to worn elements on a 15-year-old oven, which is wear and tear."),
]))

GROUPS.append(("tenancy", TEN_POLICY + (
    "Tenant report, 2 May, flat 12, Harbour View:\n\"The smoke alarm in the hallway has been chirping every minute "
    "since yesterday, and its little screen says LOW BATTERY. The kitchen tap also drips all the time.\""), [
    ("alarm", "choice", "What should the reply say about the smoke alarm?",
     opts(("visit", "A contractor will come within 24 hours"), ("battery", "The tenant should replace the battery"),
          ("replace", "The landlord will fit a new alarm"), ("ignore", "No action is needed")), "battery",
     "The alarm needs a new battery, and smoke alarm batteries are the tenant's own job."),
    ("tap", "score", "Under the policy, how quickly must the dripping tap be attended?", TEN_PRI, "routine",
     "A dripping tap is none of the emergency or urgent cases, so it is routine."),
    ("may20", "yesno", "Would a plumber's visit on 20 May meet the policy's deadline for the tap?", YN, "yes",
     "The tap is routine, with 28 days from 2 May, and 20 May is 18 days after the report.", HARD),
]))

GROUPS.append(("tenancy", TEN_POLICY + (
    "Tenant report, 30 August, 08:05, flat 2, 9 Canal Street:\n\"Water is pouring through my kitchen ceiling from "
    "the flat upstairs. There's about a centimetre of water on the floor and it's still coming.\"\nThe flat "
    "upstairs is let by a different agency."), [
    ("priority", "score", PRI_Q, TEN_PRI, "emergency",
     "Water pouring in and covering the floor is flooding, an emergency in any month."),
    ("august", "yesno", "Is this an emergency even though it is August?", YN, "yes",
     "Flooding is an emergency in any month; only heating faults depend on the time of year."),
]))

# --- shipping ---------------------------------------------------------------
SHIP_RULES = (
    "Exception handbook (Parcelway parcel service):\n"
    "- A parcel with no new tracking scan for more than 5 working days is declared lost, and the sender is offered "
    "a claim.\n"
    "- Claims for lost or damaged parcels pay the declared value, up to 500 EUR unless the sender bought extra "
    "cover.\n"
    "- Damage must be reported within 7 days of delivery, with photos of the damaged item and of the outer "
    "packaging.\n"
    "- After 2 failed delivery attempts the parcel goes to the nearest pickup point, where it is kept for 10 days "
    "and then sent back to the sender.\n"
    "- The delivery address can be changed until the parcel is out for delivery, not after.\n"
    "Working days are Monday to Friday.\n\n")
CLAIM3 = opts(("none", "Nothing"), ("part", "Part of the declared value"), ("full", "The full declared value"))
CLAIM_Q = "How much should a claim on this parcel pay?"
STAGE5 = opts(("label", "Label created, not yet collected"), ("transit", "In transit between hubs"),
              ("depot", "At the local delivery depot"), ("out", "Out for delivery"), ("delivered", "Delivered"))
STAGE_Q = "How far along its journey is the parcel?"

GROUPS.append(("shipping", SHIP_RULES + (
    "Today: Wednesday 12 November 2025.\nParcel PW-88410 tracking:\n- Thursday 30 October: collected from sender, "
    "Porto\n- Monday 3 November, 06:12: arrived at hub, Lyon\nNo scans since.\nDeclared value: 800 EUR; no extra "
    "cover bought.\nSender's message: \"The recipient still hasn't got the parcel. What's going on?\""), [
    ("lost", "yesno", "Should the parcel now be declared lost?", YN, "yes",
     "Its last scan was on Monday 3 November, seven working days before Wednesday 12 November, more than the 5 "
     "the handbook allows.", HARD),
    ("claim", "score", CLAIM_Q, CLAIM3, "part",
     "The declared value is 800 EUR, but without extra cover a claim pays at most 500 EUR.", HARD),
    ("reply", "choice", "What should the reply to the sender offer?",
     opts(("wait", "Ask the sender to wait another week"), ("claim", "A claim for the lost parcel"),
          ("resend", "A free redelivery attempt"), ("return", "Return of the parcel to the sender")), "claim",
     "The parcel counts as lost, and the handbook offers the sender a claim."),
]))

GROUPS.append(("shipping", SHIP_RULES + (
    "Parcel PW-90127, declared value 120 EUR, delivered on Tuesday 2 September.\nDamage report from the recipient, "
    "Saturday 6 September: \"The ceramic vase inside was broken into three pieces.\" Attached: two photos of the "
    "broken vase.\nNo other attachments."), [
    ("intime", "yesno", "Was the damage reported within the time the handbook allows?", YN, "yes",
     "It was reported on 6 September, four days after delivery on 2 September, within 7 days."),
    ("missing", "choice", "What is still missing from the damage report?",
     opts(("nothing", "Nothing"), ("item", "Photos of the damaged item"), ("receipt", "A receipt for the vase"),
          ("box", "Photos of the outer packaging")), "box",
     "The report has photos of the broken vase but none of the outer packaging, which the handbook also requires."),
    ("claim", "score", "If the missing evidence arrives in time, how much should the claim pay?", CLAIM3, "full",
     "The declared value of 120 EUR is under the 500 EUR limit, so the full value is paid.", HARD),
]))

GROUPS.append(("shipping", SHIP_RULES + (
    "Parcel PW-91550 tracking:\n- Monday 13 October: delivery attempt 1, no one home\n- Tuesday 14 October: "
    "delivery attempt 2, no one home\n- Tuesday 14 October, 17:30: at pickup point, Rue Garnier kiosk\n"
    "Recipient's message, Monday 27 October: \"I was away for two weeks. Can I pick up my parcel at the kiosk "
    "today?\""), [
    ("collect", "yesno", "Can the recipient still collect the parcel at the kiosk on 27 October?", YN, "no",
     "The parcel reached the kiosk on 14 October and is kept only 10 days, until 24 October, before it goes back to "
     "the sender.", HARD),
    ("where", "choice", "Under the handbook, where should the parcel be by now?",
     opts(("van", "On a van for a third delivery attempt"), ("kiosk", "At the Rue Garnier kiosk"),
          ("sender", "Sent back to the sender"), ("depot", "At the local depot")), "sender",
     "The 10 days at the pickup point ended on 24 October, after which parcels go back to the sender.", HARD),
]))

GROUPS.append(("shipping", SHIP_RULES + (
    "Parcel PW-92003 tracking, Friday 7 March:\n- 06:10: arrived at local depot, Ghent\n- 08:12: out for delivery\n"
    "Recipient's chat message at 09:30: \"I'm at work today, please deliver to my office at Kortrijksesteenweg 120 "
    "instead of my home.\""), [
    ("change", "yesno", "Can the delivery address still be changed?", YN, "no",
     "The parcel went out for delivery at 08:12, before the 09:30 request, and the address cannot be changed after "
     "that."),
    ("stage", "score", STAGE_Q, STAGE5, "out", "The latest scan, at 08:12, is out for delivery."),
    ("reply", "choice", "What should the chat reply say?",
     opts(("cannot", "The address can no longer be changed because the parcel is out for delivery"),
          ("done", "The address has been changed to the office"),
          ("pickup", "The parcel will go straight to a pickup point"),
          ("return", "The parcel will be returned to the sender")), "cannot",
     "The parcel is already out for delivery, so the address can no longer be changed."),
]))

GROUPS.append(("shipping", SHIP_RULES + (
    "Parcel PW-92118 tracking:\n- Wednesday 9 April, 14:02: in transit, hub Antwerp\n- Wednesday 9 April, 19:40: "
    "arrived at local depot, Bruges\nRecipient's email, Thursday 10 April, 07:05: \"Could you deliver it to my "
    "neighbour at number 14 instead? I won't be home.\"\nNo further scans yet."), [
    ("change", "yesno", "Can the delivery address still be changed?", YN, "yes",
     "The latest scan shows the parcel at the local depot, not yet out for delivery."),
    ("stage", "score", STAGE_Q, STAGE5, "depot",
     "The latest scan, at 19:40 on 9 April, puts it at the local depot in Bruges."),
    ("reply", "choice", "What should the reply to the recipient say?",
     opts(("cannot", "The address can no longer be changed"), ("done", "The parcel will be delivered to number 14"),
          ("pickup", "The parcel will go to a pickup point"), ("return", "The parcel will go back to the sender")),
     "done", "The parcel is not yet out for delivery, so the address can be changed to the neighbour's."),
]))

GROUPS.append(("shipping", SHIP_RULES + (
    "Parcel PW-93301, declared value 60 EUR, delivered on Tuesday 3 June.\nDamage report, Sunday 15 June: \"The lamp "
    "inside is bent and the bulb holder snapped.\" Attached: photos of the lamp and of the dented outer box.\n"
    "Sender's note: \"The box was obviously dropped.\""), [
    ("intime", "yesno", "Was the damage reported within the time the handbook allows?", YN, "no",
     "It was reported on 15 June, 12 days after delivery on 3 June, more than the 7 days allowed.", HARD),
    ("claim", "score", CLAIM_Q, CLAIM3, "none",
     "The damage was reported after the 7-day limit, so no claim is paid, even with both sets of photos."),
    ("reason", "choice", "Why should this claim be declined?",
     opts(("photos", "The photos are incomplete"), ("value", "The declared value is above the limit"),
          ("lost", "The parcel was lost"), ("late", "The damage was reported more than 7 days after delivery")),
     "late", "The report came 12 days after delivery, while both required sets of photos were sent."),
]))

GROUPS.append(("shipping", SHIP_RULES + (
    "Today: Friday 21 February 2025.\nParcel PW-94477, declared value 900 EUR; the sender bought extra cover up to "
    "1,000 EUR.\nTracking: last scan Wednesday 12 February, \"in transit, hub Rotterdam\"; nothing since.\nSender's "
    "message: \"A customer is waiting for this camera. Can you tell me what's happening?\""), [
    ("limit", "yesno", "Does the 500 EUR limit apply to a claim on this parcel?", YN, "no",
     "The sender bought extra cover up to 1,000 EUR, so the 500 EUR limit does not apply."),
    ("claim", "score", CLAIM_Q, CLAIM3, "full",
     "The parcel has had no scan for 7 working days, so it is lost, and extra cover up to 1,000 EUR pays the full "
     "900 EUR.", HARD),
    ("status", "choice", "What is the parcel's status under the handbook?",
     opts(("transit", "Still in transit"), ("lost", "Lost: the sender is offered a claim"),
          ("pickup", "At a pickup point"), ("returned", "On its way back to the sender")), "lost",
     "The last scan was on Wednesday 12 February, seven working days before today, more than the 5 allowed.", HARD),
]))

# --- fraud ------------------------------------------------------------------
FRAUD_RULES = (
    "Card fraud desk rules (Meridian Bank):\n"
    "Risk level of an alert: low for a single unusual transaction under 100 EUR; medium for unusual transactions of "
    "100 to 1,000 EUR in total; high for more than 1,000 EUR in total, or for any transaction in a country where "
    "the customer has never used the card.\n"
    "- If the customer says a transaction is not theirs, block the card at once and open a dispute.\n"
    "- If the customer confirms every flagged transaction, close the alert and keep the card active.\n"
    "- If the customer cannot be reached: for a low-risk alert keep the card active and send an SMS; for medium or "
    "high, block the card.\n"
    "- Disputed transactions are refunded only if reported within 13 months, and never if the customer shared their "
    "PIN or a one-time passcode.\n"
    "- Never ask a customer for their full card number, PIN or a one-time passcode.\n\n")
RISK3 = opts(("low", "Low"), ("medium", "Medium"), ("high", "High"))
RISK_Q = "What is the risk level of this alert under the desk rules?"

GROUPS.append(("fraud", FRAUD_RULES + (
    "Alert 7731-A, customer Greta Holm; card used only in Sweden so far.\nFlagged transactions: 45 EUR and 380 EUR "
    "at TechZone online store, Sweden, at 02:14 and 02:16.\nCall transcript: \"No, I was asleep at two in the "
    "morning. I've never shopped there. Neither of those is mine.\""), [
    ("risk", "score", RISK_Q, RISK3, "medium",
     "The two unusual transactions total 425 EUR in Sweden, where the card is used, which is between 100 and 1,000 "
     "EUR.", HARD),
    ("block", "yesno", "Should the card be blocked?", YN, "yes",
     "The customer says the transactions are not hers, which means blocking the card at once."),
    ("action", "choice", "What should the agent do?",
     opts(("keep", "Close the alert and keep the card active"), ("sms", "Keep the card active and send an SMS"),
          ("pin", "Ask the customer for her PIN to confirm her identity"),
          ("block", "Block the card and open a dispute")), "block",
     "The customer denies both transactions, so the card is blocked and a dispute opened."),
]))

GROUPS.append(("fraud", FRAUD_RULES + (
    "Alert 7790-C, customer Diego Marín; card history: used only in Spain.\nFlagged transaction: 62 EUR at a petrol "
    "station in Lisbon, Portugal.\nCall transcript: \"Yes, that's me, I'm driving to Lisbon for a week of holiday. "
    "Everything on the card is mine.\""), [
    ("risk", "score", RISK_Q, RISK3, "high",
     "The transaction is in Portugal, a country where the card has never been used, which makes the alert high "
     "risk whatever the amount.", HARD),
    ("block", "yesno", "Should the card be blocked?", YN, "no",
     "The customer confirms the flagged transaction, so the alert is closed and the card kept active.", HARD),
    ("action", "choice", "What should the agent do?",
     opts(("block", "Block the card and open a dispute"), ("keep", "Close the alert and keep the card active"),
          ("sms", "Keep the card active and send an SMS"),
          ("code", "Send a one-time passcode and ask the customer to read it out")), "keep",
     "The customer confirms every flagged transaction, so the alert is closed with the card active."),
]))

GROUPS.append(("fraud", FRAUD_RULES + (
    "Dispute call, 8 May, customer Ruth Okafor; card used only in Ireland.\nDisputed: a card payment of 700 EUR at "
    "an online jewellery shop in Ireland on 7 May.\nTranscript: \"Yesterday someone rang saying they were from "
    "Meridian's fraud team. They said my card was at risk and asked me to read out the six-digit code the bank had "
    "just texted me, so I did. Then this payment appeared. It wasn't me.\""), [
    ("refund", "yesno", "Should the 700 EUR be refunded?", YN, "no",
     "The customer read out the one-time passcode to the caller, and payments are never refunded when a passcode "
     "was shared.", HARD),
    ("block", "yesno", "Should the card be blocked?", YN, "yes",
     "The customer says the 700 EUR payment is not hers, which means blocking the card at once."),
    ("risk", "score", "What risk level do the desk rules give this disputed payment?", RISK3, "medium",
     "A single unusual payment of 700 EUR in the customer's usual country is between 100 and 1,000 EUR."),
]))

GROUPS.append(("fraud", FRAUD_RULES + (
    "Chat, alert 7812-B, customer Sam Whitfield. Flagged: a 240 EUR payment at Hotel Aurora in the customer's home "
    "country, where the card is always used. The customer has not yet said whether it is theirs.\nDraft reply "
    "written by a trainee agent: \"Hello Sam, before we look at this payment, please confirm it's you by telling us "
    "the last four digits of your card and your date of birth. Then let us know whether the 240 EUR payment at Hotel "
    "Aurora was yours.\""), [
    ("breaks", "yesno", "Does the draft reply break the desk rules?", YN, "no",
     "It asks only for the last four digits and the date of birth, not the full card number, PIN or a passcode.",
     HARD),
    ("risk", "score", RISK_Q, RISK3, "medium",
     "One unusual payment of 240 EUR in the usual country is between 100 and 1,000 EUR."),
    ("ask", "choice", "Which of these may an agent never ask a customer for?",
     opts(("last4", "The last four digits of the card"), ("dob", "The date of birth"),
          ("merchant", "Whether they know the merchant"), ("pin", "The card's PIN")), "pin",
     "The rules forbid asking for the PIN, while the other details are not on the forbidden list."),
]))

GROUPS.append(("fraud", FRAUD_RULES + (
    "Dispute email received 20 May 2025 from customer Anil Mehta; card used only in India:\n\"Going through old "
    "statements I found a charge of 89 EUR from StreamMax on 3 February 2024. I never signed up for it and I have "
    "never shared my PIN or any code with anyone. Please refund it.\""), [
    ("refund", "yesno", "Can this charge be refunded?", YN, "no",
     "3 February 2024 is more than 15 months before 20 May 2025, beyond the 13-month limit.", HARD),
    ("age", "score", "How long before the dispute was the charge made?",
     opts(("recent", "Less than 6 months"), ("year", "6 to 13 months"), ("old", "More than 13 months")), "old",
     "From 3 February 2024 to 20 May 2025 is more than 15 months."),
    ("rule", "choice", "Which rule decides whether the charge is refunded?",
     opts(("code", "The rule on shared PINs and passcodes"), ("time", "The 13-month limit for reporting"),
          ("risk", "The risk level of the alert"), ("reach", "The rule for customers who cannot be reached")),
     "time", "The customer shared no PIN or code, but the charge is more than 13 months old.", HARD),
]))

GROUPS.append(("fraud", FRAUD_RULES + (
    "Alert 7856-D, customer Lotte Visser; card used only in the Netherlands.\nFlagged transaction: 35 EUR to a music "
    "streaming service in the Netherlands, the first payment to that merchant.\nCalls at 10:02 and 10:30 went to "
    "voicemail; the customer cannot be reached."), [
    ("risk", "score", RISK_Q, RISK3, "low",
     "It is one unusual transaction of 35 EUR, under 100 EUR, in the customer's usual country."),
    ("block", "yesno", "Should the card be blocked?", YN, "no",
     "The customer cannot be reached and the alert is low risk, so the card stays active.", HARD),
    ("action", "choice", "What should the agent do now?",
     opts(("sms", "Keep the card active and send an SMS"), ("block", "Block the card"),
          ("dispute", "Open a dispute for the 35 EUR"), ("close", "Close the alert with no further contact")),
     "sms", "A low-risk alert where the customer cannot be reached keeps the card active and gets an SMS."),
]))

GROUPS.append(("fraud", FRAUD_RULES + (
    "Alert 7901-F, customer Paul Brenner; card used only in Germany.\nFlagged transactions, all in Germany, 14 "
    "August: 400 EUR at an electronics shop, 450 EUR at a second electronics shop, 300 EUR at a jeweller.\nCalls at "
    "15:10 and 15:40 were not answered; an SMS sent at 15:12 has had no reply."), [
    ("risk", "score", RISK_Q, RISK3, "high",
     "The three transactions total 1,150 EUR, more than 1,000 EUR.", HARD),
    ("block", "yesno", "Should the card be blocked?", YN, "yes",
     "The customer cannot be reached and the alert is above low risk, so the card is blocked."),
    ("action", "choice", "What should the agent do now?",
     opts(("sms", "Keep the card active and send another SMS"), ("close", "Close the alert"),
          ("wait", "Keep the card active until the customer calls back"), ("block", "Block the card")), "block",
     "The customer cannot be reached and 1,150 EUR in total makes the alert high risk, which means blocking the "
     "card.", HARD),
]))

# --- admissions -------------------------------------------------------------
ADM_RULES = (
    "Admissions rules, MSc Data Science (Larchmont University), autumn intake:\n"
    "- Deadline: 31 March. Later applications are considered only while places remain, and none after 30 June.\n"
    "- Academic entry: a bachelor's degree with an average of 65% or more; or 60 to 64% together with at least two "
    "years of relevant full-time work.\n"
    "- English: IELTS 6.5 overall with no part below 6.0; not needed if the bachelor's degree was taught in "
    "English.\n"
    "- An applicant who meets every requirement gets an unconditional offer; one whose degree is not yet finished, "
    "but who meets every other requirement, gets a conditional offer.\n\n")
ADM_FIT = opts(("below", "Does not meet the academic entry requirement"),
               ("work", "Meets it only through the work-experience route"),
               ("grade", "Meets it on the degree average alone"))
FIT_Q = "How does the applicant stand against the academic entry requirement?"

GROUPS.append(("admissions", ADM_RULES + (
    "Application A-2041, received 12 February. Bachelor's in Economics, completed, Universidad de Sevilla, taught in "
    "Spanish; average 71%. IELTS: overall 7.0; listening 7.5, reading 7.5, speaking 7.0, writing 5.5. Work "
    "experience: none."), [
    ("english", "yesno", "Does the applicant meet the English requirement?", YN, "no",
     "The writing score of 5.5 is below the 6.0 minimum for each part, even though the overall 7.0 is high "
     "enough.", HARD),
    ("gap", "choice", "Which part of the application falls short of the rules?",
     opts(("degree", "The degree average"), ("deadline", "The application date"),
          ("none", "None: it meets every rule"), ("ielts", "The IELTS writing score")), "ielts",
     "Only the writing score of 5.5 misses a rule, since every IELTS part must be 6.0 or more."),
    ("fit", "score", FIT_Q, ADM_FIT, "grade", "An average of 71% meets the 65% requirement on its own."),
]))

GROUPS.append(("admissions", ADM_RULES + (
    "Application A-2117, received 10 March. Bachelor's in Mathematics, University of Leeds, taught in English, "
    "final year, finishing in June; average so far 68%. No IELTS score sent. Work experience: a summer "
    "internship."), [
    ("outcome", "choice", "What should the applicant be offered?",
     opts(("reject", "A rejection"), ("unconditional", "An unconditional offer"),
          ("conditional", "A conditional offer"), ("waitlist", "A place on a waiting list")), "conditional",
     "The degree is not finished until June, and every other requirement is met."),
    ("ielts", "yesno", "Does the applicant need to send an IELTS score?", YN, "no",
     "The bachelor's degree is taught in English, so no English test is needed."),
    ("fit", "score", FIT_Q, ADM_FIT, "grade", "The average so far of 68% is above 65%."),
]))

GROUPS.append(("admissions", ADM_RULES + (
    "Application A-2160, received 20 March. Bachelor's in Statistics, completed, University of Porto, taught in "
    "Portuguese; average 62%. IELTS: overall 7.0, no part below 6.5. Work experience: three years full-time as a "
    "data analyst at an insurance company."), [
    ("fit", "score", FIT_Q, ADM_FIT, "work",
     "An average of 62% is under 65% but qualifies together with three years of relevant full-time work.", HARD),
    ("eligible", "yesno", "Does the applicant meet every entry requirement?", YN, "yes",
     "The 62% average with three years as a data analyst meets the academic rule, and the IELTS scores meet the "
     "English rule.", HARD),
    ("outcome", "choice", "What should the applicant be offered?",
     opts(("conditional", "A conditional offer"), ("reject", "A rejection"),
          ("unconditional", "An unconditional offer"), ("interview", "An interview first")), "unconditional",
     "The degree is finished and every requirement is met."),
]))

GROUPS.append(("admissions", ADM_RULES + (
    "Application A-1984, received 15 January. Bachelor's in Computer Science, completed, National University of "
    "Singapore, taught in English; average 62%. Work experience: one year full-time as a software tester, and two "
    "summers of part-time tutoring.\nReferee: \"One of the most able students I have taught.\""), [
    ("fit", "score", FIT_Q, ADM_FIT, "below",
     "A 62% average needs two years of full-time work and the applicant has only one, whatever the reference says.",
     HARD),
    ("eligible", "yesno", "Does the applicant meet the academic entry requirement?", YN, "no",
     "With a 62% average, two years of full-time work are needed and the applicant has one."),
    ("outcome", "choice", "What should the applicant be offered?",
     opts(("unconditional", "An unconditional offer"), ("conditional", "A conditional offer"),
          ("reject", "A rejection"), ("interview", "An interview first")), "reject",
     "The applicant does not meet the academic entry requirement, so no offer can be made."),
]))

GROUPS.append(("admissions", ADM_RULES + (
    "Application A-2388, received 14 May. Bachelor's in Physics, completed, University of Cape Town, taught in "
    "English; average 66%.\nAdmissions office note, 14 May: \"Autumn intake: 4 places remain.\""), [
    ("consider", "yesno", "Can this late application be considered?", YN, "yes",
     "It came after 31 March but before 30 June, while 4 places remain.", HARD),
    ("outcome", "choice", "If it is considered, what should the applicant be offered?",
     opts(("reject", "A rejection"), ("conditional", "A conditional offer"), ("next", "A place in next year's intake"),
          ("unconditional", "An unconditional offer")), "unconditional",
     "The degree is finished with 66% and was taught in English, so every requirement is met."),
    ("fit", "score", FIT_Q, ADM_FIT, "grade", "A 66% average meets the 65% requirement on its own."),
]))

GROUPS.append(("admissions", ADM_RULES + (
    "Application A-2455, received 3 July. Bachelor's in Biology, completed, University of Bristol, taught in "
    "English; average 74%.\nAdmissions office note, 3 July: \"Autumn intake: 10 places remain.\"\nApplicant's "
    "cover email: \"I know I'm late, but my grades are strong and I hope you can still fit me in.\""), [
    ("consider", "yesno", "Can this application be considered for the autumn intake?", YN, "no",
     "It arrived on 3 July, after 30 June, when no application is considered even though places remain.", HARD),
    ("reply", "choice", "What should the reply say?",
     opts(("closed", "Applications for this intake closed on 30 June"), ("offer", "An unconditional offer"),
          ("conditional", "A conditional offer"), ("places", "No places remain")), "closed",
     "The application came after 30 June, the last date for any application, although 10 places remain.", HARD),
    ("fit", "score", FIT_Q, ADM_FIT, "grade", "A 74% average meets the 65% requirement on its own."),
]))

GROUPS.append(("admissions", ADM_RULES + (
    "Application A-2290, received 28 March. Bachelor's in Software Engineering, Warsaw University of Technology, "
    "taught in Polish, final year, finishing in July; average so far 64%. IELTS: overall 6.5; listening 7.0, "
    "reading 6.5, speaking 6.0, writing 6.0. Work experience: 26 months full-time as a junior data engineer before "
    "university."), [
    ("english", "yesno", "Does the applicant meet the English requirement?", YN, "yes",
     "The overall score is 6.5 and no part is below 6.0, exactly what the rule asks.", HARD),
    ("fit", "score", FIT_Q, ADM_FIT, "work",
     "64% is under 65%, but 26 months of full-time work is more than the two years needed with 60 to 64%.", HARD),
    ("outcome", "choice", "What should the applicant be offered?",
     opts(("unconditional", "An unconditional offer"), ("reject", "A rejection"),
          ("interview", "An interview first"), ("conditional", "A conditional offer")), "conditional",
     "The degree is not finished until July, and every other requirement is met."),
]))

# --- bug-triage -------------------------------------------------------------
BUG_GUIDE = (
    "Bug triage guide (Tallyo invoicing app):\n"
    "Severity: S1 for data loss, a security hole, or the whole app unusable; S2 for a main feature broken for many "
    "users with no workaround; S3 for a feature broken with a workaround, or broken for only a few users; S4 for "
    "cosmetic problems (typos, layout, colours).\n"
    "Labels: needs-info if the report lacks the app version, the steps to reproduce, or what was expected versus "
    "what happened; wontfix if it is about a version older than the two latest releases; duplicate if an open issue "
    "already describes the same bug; otherwise triaged.\n"
    "Releases: 4.2 (current), 4.1, 4.0, 3.9.\n\n")
SEV4 = opts(("s4", "S4: cosmetic"), ("s3", "S3: broken with a workaround, or for only a few users"),
            ("s2", "S2: a main feature broken for many users, no workaround"),
            ("s1", "S1: data loss, a security hole, or the whole app unusable"))
SEV_Q = "What severity should this bug get?"
LABEL_Q = "Which label should this report get?"

GROUPS.append(("bug-triage", BUG_GUIDE + (
    "Issue #1204, filed by a customer success manager.\nVersion: 4.2.\nSteps: open Invoices, pick any month, click "
    "Export CSV.\nExpected: a CSV file downloads. Actual: the spinner runs forever and nothing downloads.\n\"This "
    "happens for all our customers. For now they can get the same data through the API export, which works "
    "fine.\"\nOpen issues mentioning export: none."), [
    ("sev", "score", SEV_Q, SEV4, "s3",
     "The CSV export is broken for everyone, but the API export gives the same data, a workaround that makes it "
     "S3.", HARD),
    ("complete", "yesno", "Does the report give everything the guide requires?", YN, "yes",
     "It gives the version, the steps, and what was expected versus what happened."),
    ("label", "choice", LABEL_Q,
     opts(("triaged", "triaged"), ("needs-info", "needs-info"), ("wontfix", "wontfix"),
          ("duplicate", "duplicate")), "triaged",
     "The report is complete, about the current release, and no open issue mentions export."),
]))

GROUPS.append(("bug-triage", BUG_GUIDE + (
    "Issue #1219.\nTitle: ALL OUR DRAFTS ARE GONE!!!\nBody: \"We've lost about 60 draft invoices since this "
    "morning. They're not in the bin either. Fix this now.\"\nVersion: not given.\nOpen issues mentioning drafts: "
    "none."), [
    ("sev", "score", SEV_Q, SEV4, "s1", "About 60 draft invoices have been lost, which is data loss."),
    ("complete", "yesno", "Does the report give everything the guide requires?", YN, "no",
     "It gives no version, no steps to reproduce and no expected result."),
    ("label", "choice", LABEL_Q,
     opts(("triaged", "triaged"), ("duplicate", "duplicate"), ("wontfix", "wontfix"),
          ("needs-info", "needs-info")), "needs-info",
     "The report lacks the version, the steps and the expected result, which calls for needs-info."),
]))

GROUPS.append(("bug-triage", BUG_GUIDE + (
    "Issue #1227.\nVersion: 3.9.\nSteps: open Settings, then Notifications.\nExpected: the label reads \"Receive "
    "email alerts\". Actual: it reads \"Recieve email alerts\".\nOpen issues mentioning Notifications: none."), [
    ("sev", "score", SEV_Q, SEV4, "s4", "A misspelt label is a typo, which is cosmetic."),
    ("open", "yesno", "Should this report stay open?", YN, "no",
     "Version 3.9 is older than the two latest releases, 4.2 and 4.1, so the report is closed as wontfix.", HARD),
    ("label", "choice", LABEL_Q,
     opts(("triaged", "triaged"), ("wontfix", "wontfix"), ("needs-info", "needs-info"),
          ("duplicate", "duplicate")), "wontfix",
     "The report is complete but about version 3.9, older than 4.2 and 4.1."),
]))

GROUPS.append(("bug-triage", BUG_GUIDE + (
    "Issue #1231.\nVersion: 4.1.\nSteps: as a user whose company signs in with single sign-on, click \"Sign in with "
    "SSO\".\nExpected: the dashboard opens. Actual: error 502.\nReporter: \"Only the three users at Kestrel Ltd are "
    "affected. They can sign in with email and password meanwhile.\"\nOpen issues mentioning SSO: none."), [
    ("supported", "yesno", "Is version 4.1 recent enough for this bug to stay open?", YN, "yes",
     "4.1 is one of the two latest releases, together with 4.2.", HARD),
    ("sev", "score", SEV_Q, SEV4, "s3",
     "Sign-in is broken for only three users, who have a workaround, which makes it S3."),
    ("label", "choice", LABEL_Q,
     opts(("wontfix", "wontfix"), ("needs-info", "needs-info"), ("duplicate", "duplicate"),
          ("triaged", "triaged")), "triaged",
     "The report is complete, about a supported release, and no open issue mentions SSO."),
]))

GROUPS.append(("bug-triage", BUG_GUIDE + (
    "Issue #1240.\nVersion: 4.2.\nSteps: click Reports in the menu.\nExpected: the reports page opens. Actual: a "
    "blank page with \"Something went wrong\".\nReporter: \"It happens for every user in every account we've "
    "checked, and there's no other way to get the reports. Invoicing, payments and everything else work "
    "normally.\"\nOpen issues mentioning Reports: none."), [
    ("sev", "score", SEV_Q, SEV4, "s2",
     "Reports, a main feature, is broken for every user with no workaround while the rest of the app works, which "
     "is S2 rather than S1.", HARD),
    ("rest", "yesno", "According to the reporter, does the rest of the app still work?", YN, "yes",
     "The reporter says invoicing, payments and everything else work normally."),
    ("label", "choice", LABEL_Q,
     opts(("needs-info", "needs-info"), ("triaged", "triaged"), ("wontfix", "wontfix"),
          ("duplicate", "duplicate")), "triaged",
     "The report gives version, steps and expected versus actual, is about 4.2, and no open issue mentions "
     "Reports."),
]))

GROUPS.append(("bug-triage", BUG_GUIDE + (
    "Issue #1246.\nVersion: 4.2.\nSteps: sign in as a user of company A, open any invoice, then change the number at "
    "the end of the address bar to another invoice number.\nExpected: an access-denied message. Actual: an invoice "
    "of another company, B, opens with its customer names and amounts.\nOpen issues mentioning invoices: #1101 "
    "\"Invoice PDF logo blurry\"."), [
    ("kind", "choice", "What kind of problem is this?",
     opts(("cosmetic", "A cosmetic problem"), ("slow", "A performance problem"), ("security", "A security hole"),
          ("crash", "A crash")), "security",
     "Users of one company can open another company's invoices, which is a security hole."),
    ("sev", "score", SEV_Q, SEV4, "s1", "A security hole is S1."),
    ("duplicate", "yesno", "Is this report a duplicate of an open issue?", YN, "no",
     "The only open issue about invoices, #1101, is about a blurry logo, a different bug."),
]))

GROUPS.append(("bug-triage", BUG_GUIDE + (
    "Issue #1252.\nVersion: 4.2.\nSteps: turn on dark mode, open any invoice.\nExpected: the Save button is clearly "
    "visible. Actual: the Save button is dark grey on a black background and almost invisible; it still works "
    "when clicked.\nOpen issues: #1188 \"Save button hard to see in dark mode\" (version 4.2); #1190 \"Dark mode: "
    "dates in the wrong format\"."), [
    ("label", "choice", LABEL_Q,
     opts(("triaged", "triaged"), ("needs-info", "needs-info"), ("wontfix", "wontfix"),
          ("dup1190", "duplicate of #1190"), ("dup1188", "duplicate of #1188")), "dup1188",
     "Open issue #1188 already describes the Save button being hard to see in dark mode."),
    ("sev", "score", SEV_Q, SEV4, "s4", "A button in the wrong colour that still works is a cosmetic problem."),
    ("dup", "yesno", "Is this report a duplicate of an open issue?", YN, "yes",
     "Open issue #1188 already describes the same hard-to-see Save button in dark mode."),
]))


def rows_heldout():
    return rows_from(GROUPS)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    dump(os.path.join(here, "heldout.jsonl"), rows_heldout())


if __name__ == "__main__":
    main()
