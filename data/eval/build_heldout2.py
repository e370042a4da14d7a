#!/usr/bin/env python3
"""Build the second held-out labelled single-request set from authored content (stdlib only).

Writes, next to this script:
  heldout2.jsonl  typed decisions (choice / yesno / score) about realistic states in eight
                  families (customs, energy-billing, library-loans, school-attendance,
                  building-permits, food-safety, grant-review, trial-eligibility); every
                  scenario ("group") is one state asked 2-4 questions, each answerable on its
                  own, with a one-sentence `why` for its gold label. Rows that hold a
                  distractor, a stated exception, negation or a small date or amount
                  calculation carry "difficulty": "hard".

The set is HELD OUT: no default, method or readout was chosen on it, and none may be. It
exists to measure the shipped defaults and the peer on a second draw of families never used
for selection; none of its families appears in any other labelled file of the project
(single.jsonl, heldout.jsonl, authored.jsonl, boundary.jsonl, the demos or the examples). No
calibration or batch statistics are meant to be fitted on it either.

All content below is hand-written by the SemIf team; nothing is random, so the output
is byte-for-byte reproducible: python data/eval/build_heldout2.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the row form, option helpers and writer are build_single.py's: one convention for every set
from build_single import HARD, YN, dump, opts, rows_from

# Each group: (family, state, [(slug, type, question, options, label, why[, HARD]), ...])
GROUPS = []

# --- customs ----------------------------------------------------------------
CUSTOMS_GUIDE = (
    "Customs guide extract (Veldora Border Agency):\n"
    "- Duty is charged on the customs value: the price paid for the goods plus shipping.\n"
    "- Consignments with a customs value of 150 EUR or less pay no duty.\n"
    "- Duty rates: clothing 12%, footwear 8%, bags 5%, electronics 3%, books 0%.\n"
    "- A set sold at one price pays the rate of the item that makes up most of its price.\n"
    "- VAT of 20% is due on every import, even one that pays no duty, except under the two reliefs below.\n"
    "- Gift relief: a gift from one private person to another, with goods worth 45 EUR or less (shipping not "
    "counted), pays no duty and no VAT.\n"
    "- Returned goods relief: goods sent back to Veldora unchanged within 12 months of leaving it pay no duty and no "
    "VAT, if the export declaration is shown.\n\n")
DUTY4 = opts(("none", "None"), ("low", "0.01 to 10.00 EUR"), ("mid", "10.01 to 50.00 EUR"),
             ("high", "More than 50.00 EUR"))
DUTY_Q = "How much duty is due on this consignment?"

GROUPS.append(("customs", CUSTOMS_GUIDE + (
    "Declaration CD-4471. Importer: Lena Marsh, a private buyer.\nGoods: two knitted wool jumpers (clothing), bought "
    "from an online shop in Canada.\nShop invoice: 2 x 70.00 EUR = 140.00 EUR. Shipping paid: 25.00 EUR.\n"
    "Sender's label: \"Sale of goods\"."), [
    ("duty", "yesno", "Is duty charged on this consignment?", YN, "yes",
     "The customs value is 140 + 25 = 165 EUR, more than the 150 EUR below which no duty is paid.", HARD),
    ("rate", "choice", "At which rate is duty charged on this consignment?",
     opts(("books", "0%, the books rate"), ("electronics", "3%, the electronics rate"), ("bags", "5%, the bags rate"),
          ("clothing", "12%, the clothing rate"), ("footwear", "8%, the footwear rate")), "clothing",
     "The goods are two knitted wool jumpers, declared as clothing, which pays 12%."),
    ("amount", "score", DUTY_Q, DUTY4, "mid",
     "Duty is 12% of the 165 EUR customs value, 19.80 EUR, inside the 10.01 to 50.00 EUR band.", HARD),
    ("charges", "choice", "Which charges are due on this consignment?",
     opts(("nothing", "Nothing"), ("vat", "VAT only"), ("duty", "Duty only"), ("both", "Duty and VAT")), "both",
     "The 165 EUR customs value is over 150 EUR, so duty is due, and VAT is due because the jumpers were bought, "
     "not a gift or returned goods.", HARD),
]))

GROUPS.append(("customs", CUSTOMS_GUIDE + (
    "Parcel PR-2208 from Ana Ruiz, a private person in Spain, to her brother Marco Ruiz in Veldora.\nCustoms label: "
    "\"Gift. Contents: one leather handbag, value 40.00 EUR.\"\nShipping: 12.00 EUR, paid by the sender.\nNo "
    "invoice; Ana's note inside the parcel reads \"Happy birthday, Marco!\""), [
    ("vat", "yesno", "Is VAT due on this parcel?", YN, "no",
     "It is a gift between private persons with goods worth 40 EUR, within the 45 EUR gift relief, which does not "
     "count the 12 EUR shipping.", HARD),
    ("rule", "choice", "Which rule means that this parcel pays no VAT?",
     opts(("gift", "The gift relief"), ("threshold", "The 150 EUR limit below which no duty is paid"),
          ("returned", "The returned goods relief"), ("set", "The rule for sets sold at one price")), "gift",
     "Only the two reliefs remove VAT, and this is a gift between private persons worth 40 EUR."),
    ("amount", "score", "How much duty is due on this parcel?", DUTY4, "none",
     "The gift relief removes duty as well as VAT for a 40 EUR gift between private persons."),
]))

GROUPS.append(("customs", CUSTOMS_GUIDE + (
    "Declaration CD-5120. Importer: Brightlane Ltd, a gift shop.\nGoods: 40 \"travel kits\", each a canvas bag "
    "(bags) with a pair of slippers (footwear) inside, sold as one item at one price.\nSupplier's cost breakdown per "
    "kit: bag 18.00 EUR, slippers 7.00 EUR.\nInvoice: 40 x 25.00 EUR = 1,000.00 EUR. Shipping: 200.00 EUR."), [
    ("rate", "choice", "At which rate is duty charged on the travel kits?",
     opts(("clothing", "12%, the clothing rate"), ("footwear", "8%, the footwear rate"), ("bags", "5%, the bags rate"),
          ("split", "5% on the bags and 8% on the slippers")), "bags",
     "Each kit is a set sold at one price, and the bag makes up 18 of its 25 EUR, so the whole kit pays the bags "
     "rate.", HARD),
    ("slippers", "yesno", "Are the slippers charged at the footwear rate?", YN, "no",
     "The slippers are part of a set whose main item by price is the bag, so they pay the bags rate."),
    ("amount", "score", DUTY_Q, DUTY4, "high",
     "Duty is 5% of the 1,000 + 200 = 1,200 EUR customs value, 60 EUR, more than 50 EUR.", HARD),
    ("vat", "yesno", "Is VAT due on this import?", YN, "yes",
     "Brightlane is a shop buying goods, so neither the gift relief nor the returned goods relief applies."),
]))

GROUPS.append(("customs", CUSTOMS_GUIDE + (
    "Declaration CD-6032. Importer: Tomas Berg, a private person in Veldora.\nGoods: one camera (electronics), "
    "value 900.00 EUR; return shipping 30.00 EUR.\nTomas's note: \"I sold this camera to a buyer in Iceland and "
    "sent it on 10 May 2024. He returned it unused on 2 March 2025 because it was the wrong model.\"\nAttached: "
    "export declaration EX-2231, dated 10 May 2024, for the same camera, serial number matching."), [
    ("relief", "yesno", "Does the returned goods relief apply to the camera?", YN, "yes",
     "The unused camera came back on 2 March 2025, within 12 months of leaving on 10 May 2024, and the export "
     "declaration is attached."),
    ("gap", "score", "How long after leaving Veldora did the camera come back?",
     opts(("short", "Less than 3 months"), ("half", "3 to 6 months"), ("year", "More than 6 and up to 12 months"),
          ("long", "More than 12 months")), "year",
     "From 10 May 2024 to 2 March 2025 is nearly 10 months."),
    ("action", "choice", "What should the customs officer do?",
     opts(("duty", "Charge 3% duty and VAT"), ("vat", "Charge VAT only"),
          ("release", "Release the camera with no duty and no VAT"),
          ("proof", "Hold it until the export declaration is shown")), "release",
     "The returned goods relief applies, so the camera pays neither duty nor VAT."),
]))

GROUPS.append(("customs", CUSTOMS_GUIDE + (
    "Declaration CD-7311. Importer: Kessel Audio, a speaker maker in Veldora.\nGoods: 5 speakers (electronics) "
    "returned unsold and unchanged by a shop in Portugal, value 5 x 400.00 EUR = 2,000.00 EUR; shipping 100.00 "
    "EUR.\nExport declaration EX-1180 attached: Kessel exported these speakers on 3 January 2024.\nThe speakers "
    "arrived back in Veldora on 15 April 2025."), [
    ("relief", "yesno", "Does the returned goods relief apply to these speakers?", YN, "no",
     "They came back on 15 April 2025, more than 12 months after leaving on 3 January 2024.", HARD),
    ("fails", "choice", "Which condition of the returned goods relief is not met?",
     opts(("proof", "The export declaration is not shown"), ("changed", "The speakers were changed abroad"),
          ("sender", "They were sent back by a shop, not by the exporter"),
          ("late", "They came back more than 12 months after leaving")), "late",
     "The declaration is attached and the speakers are unchanged, but 3 January 2024 to 15 April 2025 is more than "
     "12 months."),
    ("amount", "score", DUTY_Q, DUTY4, "high",
     "Without the relief, duty is 3% of the 2,000 + 100 = 2,100 EUR customs value, 63 EUR."),
]))

GROUPS.append(("customs", CUSTOMS_GUIDE + (
    "Declaration CD-8120. Importer: Rui Alves, a private buyer.\nGoods: one pair of running shoes (footwear).\n"
    "Sender's label: \"Gift\".\nAttached shop invoice from Stride Online, USA: running shoes 95.00 EUR, shipping "
    "20.00 EUR, paid by Rui Alves with his card.\nRui's note to customs: \"The shop marks every parcel as a gift "
    "to save its customers money.\""), [
    ("duty", "score", DUTY_Q, DUTY4, "none",
     "The customs value is 95 + 20 = 115 EUR, not more than 150 EUR, so no duty is paid."),
    ("gift", "yesno", "Does the gift relief apply to the shoes?", YN, "no",
     "Despite the gift label, the invoice shows that Rui bought the shoes from a shop, so they are not a gift "
     "between private persons.", HARD),
    ("charge", "choice", "What should the customs officer charge?",
     opts(("both", "Duty at 8% and VAT"), ("duty", "Duty at 8% only"), ("vat", "VAT only"),
          ("nothing", "Nothing")), "vat",
     "The 115 EUR consignment pays no duty, but VAT is due because no relief applies to bought goods.", HARD),
]))

# --- energy-billing ---------------------------------------------------------
ENERGY_TERMS = (
    "Tariff and billing terms (Lumen Energy, Home Fix 12):\n"
    "- Unit rate 0.25 EUR per kWh; standing charge 0.50 EUR per day.\n"
    "- Bills use actual meter readings; where we have none we estimate the reading and mark it \"E\". If a customer "
    "sends a dated reading or photo showing that an estimated bill was too high, we reissue the bill with that "
    "reading within 10 working days.\n"
    "- Paying by direct debit gives 5% off the unit charges; the discount does not apply to the standing charge.\n"
    "- A 15 EUR late-payment fee is added to a bill still unpaid 28 days after its issue date.\n"
    "- A debt of more than 300 EUR that has been unpaid for 60 days or more since it was first billed may lead to a "
    "disconnection notice, but never for a customer on the Priority Services Register between 1 November and 31 "
    "March.\n\n")
KWH4 = opts(("under-250", "Fewer than 250 kWh"), ("250-299", "250 to 299 kWh"), ("300-349", "300 to 349 kWh"),
            ("350-plus", "350 kWh or more"))
DAYS4 = opts(("under-30", "Under 30 days"), ("30-59", "30 to 59 days"), ("60-89", "60 to 89 days"),
             ("90-plus", "90 days or more"))
NOTICE_Q = "May Lumen send this customer a disconnection notice today?"

GROUPS.append(("energy-billing", ENERGY_TERMS + (
    "Bill LE-20114-06, issued 2 July, for 1-30 June. Meter readings: 1 June 14,200 (actual); 30 June 14,560 E. "
    "Units billed: 360 kWh. Payment method: direct debit.\nCustomer email, 3 July: \"I read my meter on the evening "
    "of 30 June and it showed 14,480. Your bill is too high, please fix it.\" A photo of the meter showing 14,480, "
    "taken 30 June, is attached."), [
    ("reading", "choice", "Which closing reading should the corrected June bill use?",
     opts(("14200", "14,200"), ("14480", "14,480, from the customer's photo"), ("14560", "14,560, the estimate"),
          ("average", "The average of the estimate and the customer's reading")), "14480",
     "The customer's dated photo shows 14,480 on 30 June, and the terms reissue the bill with that reading."),
    ("action", "choice", "What should Lumen do with the June bill?",
     opts(("reissue", "Reissue it within 10 working days using the customer's reading"),
          ("keep", "Keep it as it is: estimates are final"),
          ("fee", "Add the late-payment fee"), ("refund", "Cancel the whole bill")), "reissue",
     "The customer sent a dated photo showing the estimated bill was too high, and the terms then reissue the "
     "bill with that reading."),
    ("units", "score", "How many kWh should the corrected June bill charge for?", KWH4, "250-299",
     "The customer's reading gives 14,480 - 14,200 = 280 kWh.", HARD),
    ("discount", "yesno", "Does the direct debit discount reduce the standing charge on this bill?", YN, "no",
     "The 5% discount applies to the unit charges only, not to the standing charge.", HARD),
]))

GROUPS.append(("energy-billing", ENERGY_TERMS + (
    "Account LE-33071. Bill for February, issued 4 March, total 96.40 EUR. Payment method: bank transfer. "
    "Priority Services Register: no.\nPayments received since 4 March: none.\nCustomer note on the account, 30 "
    "March: \"Will pay next week, sorry, money is tight this month.\"\nToday is 8 April."), [
    ("fee", "yesno", "Should the late-payment fee be added to the February bill?", YN, "yes",
     "From 4 March to 8 April is 35 days, so the bill is still unpaid more than 28 days after its issue date.", HARD),
    ("owed", "score", "How much will the customer owe once any fee due is added?",
     opts(("under-100", "Less than 100 EUR"), ("100-120", "100 to 120 EUR"), ("over-120", "More than 120 EUR")),
     "100-120", "The bill of 96.40 EUR plus the 15 EUR fee makes 111.40 EUR."),
    ("notice", "yesno", NOTICE_Q, YN, "no",
     "The debt is far below the more than 300 EUR needed for a disconnection notice."),
]))

GROUPS.append(("energy-billing", ENERGY_TERMS + (
    "Account LE-41920. Priority Services Register: yes, since 2022 (reason recorded: home dialysis machine).\n"
    "Debt: 612.00 EUR, first billed on 10 September; no payment since.\nToday is 20 November.\nCollections queue "
    "note: \"Over 60 days and over 300 EUR: send the disconnection notice?\""), [
    ("notice", "yesno", NOTICE_Q, YN, "no",
     "The debt meets the amount and time conditions, but the customer is on the Priority Services Register and "
     "today falls between 1 November and 31 March.", HARD),
    ("rule", "choice", "Which term decides what Lumen may do about this debt today?",
     opts(("fee", "The late-payment fee"), ("debt", "The 300 EUR and 60-day rule for disconnection notices"),
          ("priority", "The Priority Services Register protection from 1 November to 31 March"),
          ("estimate", "The rule for estimated bills")), "priority",
     "The debt would qualify for a notice, but the Priority Services Register protection rules it out in "
     "November."),
    ("days", "score", "How long has the debt been unpaid since it was first billed?", DAYS4, "60-89",
     "From 10 September to 20 November is 20 + 31 + 20 = 71 days.", HARD),
    ("met", "choice", "Leaving the register aside, which conditions for a disconnection notice does this debt meet?",
     opts(("neither", "Neither the amount nor the time"), ("amount", "Only the amount"), ("time", "Only the time"),
          ("both", "Both the amount and the time")), "both",
     "The debt of 612 EUR is more than 300 EUR and has been unpaid for 71 days, more than 60.", HARD),
]))

GROUPS.append(("energy-billing", ENERGY_TERMS + (
    "Bill LE-50288-01 for January (31 days). Meter readings: 1 January 8,020 (actual); 31 January 8,420 "
    "(actual).\nPayment method: direct debit.\nDraft bill lines: units 400 kWh x 0.25 EUR; standing charge 31 days x "
    "0.50 EUR; direct debit discount: to be worked out."), [
    ("total", "score", "What should the January bill total be?",
     opts(("under-100", "Less than 100 EUR"), ("100-114", "100.00 to 114.99 EUR"),
          ("115-129", "115.00 to 129.99 EUR"), ("130-plus", "130 EUR or more")), "100-114",
     "Units cost 400 x 0.25 = 100 EUR, less 5% is 95 EUR, plus a 15.50 EUR standing charge makes 110.50 EUR.", HARD),
    ("actual", "yesno", "Is the January bill based on actual meter readings?", YN, "yes",
     "Both the opening and the closing readings are marked actual."),
    ("discount", "choice", "How much direct debit discount should the January bill show?",
     opts(("all", "5.78 EUR: 5% of the unit and standing charges"), ("none", "None"),
          ("units", "5.00 EUR: 5% of the unit charges")), "units",
     "The discount is 5% of the 100 EUR unit charges only, which is 5.00 EUR."),
]))

GROUPS.append(("energy-billing", ENERGY_TERMS + (
    "Bill LE-61533-05 for May, issued 3 June, paid by bank transfer on 10 June. Meter readings: 1 May 3,100 "
    "(actual); 31 May 3,460 (actual, read by our meter reader on 31 May).\nCustomer email, 12 June: \"This bill is "
    "much higher than last May's. It must be one of your estimates, please redo it.\""), [
    ("estimate", "yesno", "Is the May bill based on an estimated reading?", YN, "no",
     "Both readings are actual, and the closing one was taken by the meter reader on 31 May."),
    ("paid", "score", "How long after its issue date was the May bill paid?",
     opts(("week", "7 days or fewer"), ("month", "8 to 28 days"), ("late", "More than 28 days")), "week",
     "The bill was issued on 3 June and paid on 10 June, 7 days later."),
    ("action", "choice", "What should Lumen do in reply to the email?",
     opts(("reissue", "Reissue the bill with a new estimate"), ("discount", "Apply the direct debit discount"),
          ("fee", "Add the late-payment fee"),
          ("explain", "Keep the bill and explain that it uses actual readings")), "explain",
     "The bill rests on actual readings, so there is no estimate to correct."),
    ("units", "score", "How many kWh does the May bill charge for?", KWH4, "350-plus",
     "The readings give 3,460 - 3,100 = 360 kWh."),
]))

GROUPS.append(("energy-billing", ENERGY_TERMS + (
    "Account LE-70410. Priority Services Register: no.\nDebt: 340.00 EUR, first billed on 2 January; no payment "
    "since.\nToday is 15 February.\nCollections queue note: \"Debt over 300 EUR and the customer is not on the "
    "register: send the disconnection notice?\""), [
    ("notice", "yesno", NOTICE_Q, YN, "no",
     "The debt is over 300 EUR, but it has been unpaid for only 44 days, fewer than the 60 days required.", HARD),
    ("days", "score", "How long has the debt been unpaid since it was first billed?", DAYS4, "30-59",
     "From 2 January to 15 February is 29 + 15 = 44 days."),
    ("missing", "choice", "Which condition for a disconnection notice is not yet met?",
     opts(("time", "The debt must be unpaid for 60 days or more"), ("amount", "The debt must be more than 300 EUR"),
          ("priority", "The customer must not be protected by the Priority Services Register"),
          ("none", "None: every condition is met")), "time",
     "The debt is over 300 EUR and the customer is not on the register, but 44 days is less than 60."),
]))

# --- library-loans ----------------------------------------------------------
LIBRARY_RULES = (
    "Lending rules (Ashgrove Public Library):\n"
    "- Adult members may have up to 12 items on loan at once; child members up to 6.\n"
    "- Loan periods: books 21 days, DVDs 7 days, laptops 3 days; laptops are lent only to members aged 18 or over.\n"
    "- An item may be renewed at most twice, and not at all once another member has reserved it.\n"
    "- Overdue fines per day late: books 0.20 EUR, DVDs 1.00 EUR, laptops 5.00 EUR; children's books have no "
    "fines. The fine on one item never goes above 10.00 EUR.\n"
    "- A member who owes 8.00 EUR or more in fines cannot borrow or renew until they pay.\n"
    "- A lost item is charged at its replacement cost plus a 5.00 EUR processing fee; any overdue fine on that item "
    "is cancelled.\n\n")
FINE4 = opts(("none", "None"), ("low", "0.01 to 4.99 EUR"), ("mid", "5.00 to 9.99 EUR"), ("cap", "10.00 EUR"))

GROUPS.append(("library-loans", LIBRARY_RULES + (
    "Desk record, 14 October. Member: Priya Natarajan, adult card.\nItems on loan now: 11 (9 books, 2 DVDs), none "
    "overdue.\nFines owed: 2.40 EUR.\nPriya brings 3 books to the desk and says: \"I'd like to take these three "
    "home today, please.\""), [
    ("all", "yesno", "Can Priya borrow all 3 books today?", YN, "no",
     "She already has 11 items on loan, and 11 + 3 = 14 is more than the adult limit of 12.", HARD),
    ("count", "score", "How many more items can Priya borrow today?",
     opts(("none", "None"), ("one", "One"), ("few", "2 to 5"), ("many", "6 or more")), "one",
     "With 11 items on loan and a limit of 12 she can take one more, as her 2.40 EUR in fines is under 8 EUR."),
    ("limit", "choice", "What limits how many of the books Priya can take today?",
     opts(("fines", "Her unpaid fines"), ("adult", "The 12-item limit for adults"),
          ("child", "The 6-item limit for children"), ("none", "Nothing: she can take all three")), "adult",
     "Her fines of 2.40 EUR are under 8 EUR, so only the 12-item adult limit holds her back."),
]))

GROUPS.append(("library-loans", LIBRARY_RULES + (
    "Desk record, 21 May. Member: Owen Hale, adult card.\nReturned today: DVD \"Coastline\", borrowed 2 May, due 9 "
    "May.\nOther fines owed before today: none.\nOwen then asks to renew his book \"Salt Roads\" (due 24 May, "
    "renewed once so far, no reservations on it)."), [
    ("fine", "score", "What fine is due on the DVD \"Coastline\"?", FINE4, "cap",
     "The DVD is 12 days late, and 12 x 1.00 EUR = 12 EUR is capped at 10.00 EUR.", HARD),
    ("renew", "yesno", "Can Owen renew \"Salt Roads\" today without paying first?", YN, "no",
     "The DVD fine of 10.00 EUR means he owes 8.00 EUR or more, so he cannot renew until he pays."),
    ("stops", "choice", "What stops Owen from renewing \"Salt Roads\" today?",
     opts(("twice", "The book has already been renewed twice"), ("reserved", "Another member has reserved it"),
          ("nothing", "Nothing stops it"), ("fines", "He owes 8.00 EUR or more in fines")), "fines",
     "The book was renewed once and has no reservations, but his 10.00 EUR DVD fine bars renewals until he pays."),
]))

GROUPS.append(("library-loans", LIBRARY_RULES + (
    "Desk record, 15 March. Member: Mia Costa, child card (age 9).\nReturned today: \"The Lantern Fox\" (children's "
    "book), due 1 March; \"Planets for Kids\" (children's DVD), due 8 March, returned 3 days late.\nHer father "
    "asks: \"What do we owe? And can Mia borrow one of your laptops for a school project?\""), [
    ("owed", "score", "How much does Mia owe in fines?", FINE4, "low",
     "The children's book has no fine, and the DVD is 3 days late at 1.00 EUR a day, which makes 3.00 EUR.", HARD),
    ("dvd", "yesno", "Is a fine due on \"Planets for Kids\"?", YN, "yes",
     "Only children's books are free of fines, and \"Planets for Kids\" is a DVD, 3 days late.", HARD),
    ("laptop", "yesno", "Can Mia borrow a laptop?", YN, "no",
     "Laptops are lent only to members aged 18 or over, and Mia is 9."),
    ("max", "choice", "How many items may Mia have on loan at once?",
     opts(("twelve", "12"), ("none", "There is no limit"), ("three", "3"), ("six", "6")), "six",
     "Mia has a child card, and child members may have up to 6 items on loan."),
]))

GROUPS.append(("library-loans", LIBRARY_RULES + (
    "Desk record, 20 May. Member: Daniel Yeo, adult card.\nBook \"Modern Ceramics\", due 3 April, not returned; "
    "replacement cost 32.00 EUR.\nDaniel says: \"I'm afraid I've lost it, I think it was left on a train.\"\nOther "
    "fines owed: none."), [
    ("charge", "score", "How much should Daniel be charged for the lost book?",
     opts(("under-20", "Less than 20.00 EUR"), ("20-35", "20.00 to 35.00 EUR"), ("35-45", "35.01 to 45.00 EUR"),
          ("over-45", "More than 45.00 EUR")), "35-45",
     "He pays the 32.00 EUR replacement cost plus the 5.00 EUR processing fee, 37.00 EUR, as the overdue fine is "
     "cancelled.", HARD),
    ("overdue", "score", "What overdue fine is charged on the lost book?", FINE4, "none",
     "Any overdue fine on a lost item is cancelled."),
    ("parts", "choice", "Which charges apply to the lost book?",
     opts(("cost-fee", "The replacement cost and the 5.00 EUR processing fee"), ("fine", "The overdue fine only"),
          ("cost", "The replacement cost only"),
          ("all", "The replacement cost, the processing fee and the overdue fine")), "cost-fee",
     "A lost item is charged at its replacement cost plus the processing fee, and its overdue fine is cancelled."),
]))

GROUPS.append(("library-loans", LIBRARY_RULES + (
    "Laptop loan record. Member: Grace Holm, adult card (age 34).\nLaptop L-07: borrowed 3 June, due back 6 June, "
    "returned 7 June.\nFines owed before this return: none.\nAt the desk on 7 June Grace asks to borrow two DVDs "
    "and says she will pay any fine next week."), [
    ("late", "score", "How many days late was the laptop returned?",
     opts(("none", "It was not late"), ("one", "1 day"), ("two", "2 days"), ("more", "3 days or more")), "one",
     "It was due back on 6 June and came back on 7 June."),
    ("fine", "score", "What fine is due on the laptop?", FINE4, "mid",
     "The laptop is 1 day late at 5.00 EUR a day, which makes 5.00 EUR."),
    ("borrow", "yesno", "Can Grace borrow the two DVDs today without paying the fine first?", YN, "yes",
     "She owes 5.00 EUR, less than the 8.00 EUR that stops borrowing."),
]))

GROUPS.append(("library-loans", LIBRARY_RULES + (
    "Online renewal request, 10 July. Member: Tom Reilly, adult card.\nBook \"Deep Water\": due 12 July, renewed "
    "once so far.\nReservations on \"Deep Water\": one, placed by another member on 8 July.\nFines owed: 0.60 EUR.\n"
    "Tom's message: \"I'm only halfway through, could I have it for another three weeks?\""), [
    ("renew", "yesno", "Can Tom renew \"Deep Water\"?", YN, "no",
     "Although the book has been renewed only once, another member reserved it on 8 July, and reserved items "
     "cannot be renewed.", HARD),
    ("stops", "choice", "What prevents the renewal?",
     opts(("reserved", "Another member's reservation"), ("twice", "The book has already been renewed twice"),
          ("fines", "Tom's unpaid fines"), ("overdue", "The book is overdue")), "reserved",
     "The book was renewed once, it is not overdue and Tom owes only 0.60 EUR, so only the reservation stops it."),
    ("left", "score", "Without the reservation, how many more times could \"Deep Water\" be renewed?",
     opts(("none", "None"), ("one", "Once"), ("two", "Twice")), "one",
     "An item may be renewed at most twice, and this one has been renewed once."),
]))

# --- school-attendance ------------------------------------------------------
SCHOOL_POLICY = (
    "Attendance policy extract (Millbrook Secondary School):\n"
    "- Each school day has two sessions, morning and afternoon.\n"
    "- Parents must report an absence by 9:30 on each day of absence. An absence not reported this way is "
    "unauthorised, unless a doctor's note covering it is brought in within 3 school days of the pupil's return.\n"
    "- Authorised reasons: illness; medical or dental appointments; the death of a close relative (parent, sibling, "
    "grandparent or child), for up to 3 days. Holidays in term time are never authorised.\n"
    "- A pupil who arrives after 8:50 is marked late; one who arrives after 9:20 gets an unauthorised absence for the "
    "morning, unless the reason for arriving late is an authorised one.\n"
    "- 5 or more unauthorised sessions so far in a term lead to a warning letter to the parents.\n"
    "- If a pupil attends fewer than 90% of the sessions so far in a term, the head of year must meet the "
    "parents.\n\n")
SESSIONS4 = opts(("none", "None"), ("few", "1 to 4"), ("some", "5 to 9"), ("many", "10 or more"))

GROUPS.append(("school-attendance", SCHOOL_POLICY + (
    "Pupil: Leo Barnes, Year 9. Absent Monday 10 to Wednesday 12 March.\nParent email, Monday 10 March, 08:45: \"Leo "
    "has a high temperature and will stay at home today.\"\nNo message on Tuesday or Wednesday.\nLeo returned on "
    "Thursday 13 March with a doctor's note dated 10 March: \"Unwell, unfit for school from 10 to 12 March.\""), [
    ("tuewed", "yesno", "Should Leo's absence on Tuesday and Wednesday be recorded as authorised?", YN, "yes",
     "Those days were not reported, but the doctor's note covering them came in on the day he returned, within 3 "
     "school days.", HARD),
    ("reason", "choice", "Under which reason is Leo's absence authorised?",
     opts(("illness", "Illness"), ("appointment", "A medical or dental appointment"),
          ("bereavement", "The death of a close relative"), ("holiday", "A holiday"),
          ("none", "It is not authorised")), "illness",
     "The parent's email and the doctor's note both say Leo was unwell."),
    ("unauth", "score", "How many of Leo's absent sessions are unauthorised?", SESSIONS4, "none",
     "Monday was reported in time and the doctor's note covers all three days, so every session is authorised."),
]))

GROUPS.append(("school-attendance", SCHOOL_POLICY + (
    "Absence request form, submitted 1 May. Pupil: Ava Lindqvist, Year 7, with no absences so far this term.\n"
    "\"Please excuse Ava from Monday 19 to Friday 23 May (5 school days, in term time). We are taking a family "
    "holiday in Crete because flights are much cheaper before half-term. Ava will catch up on all her work.\""), [
    ("authorise", "yesno", "Can this absence be authorised?", YN, "no",
     "It is a holiday in term time, which is never authorised."),
    ("sessions", "score", "How many unauthorised sessions would the trip add to Ava's record?", SESSIONS4, "many",
     "Five school days of two sessions each make 10 unauthorised sessions."),
    ("letter", "yesno", "If Ava goes on the trip, will a warning letter be sent?", YN, "yes",
     "The trip would give her 10 unauthorised sessions, more than the 5 that lead to a warning letter."),
    ("rule", "choice", "Which rule decides this request?",
     opts(("holiday", "Holidays in term time are never authorised"), ("report", "The 9:30 reporting rule"),
          ("note", "The doctor's note rule"), ("late", "The rule for arriving late")),
     "holiday", "The request is for a family holiday during term time."),
]))

GROUPS.append(("school-attendance", SCHOOL_POLICY + (
    "Morning register, Thursday 6 February, Year 10 form 10B.\nSam Okafor: arrived 9:05, no note.\nNina Reyes: "
    "arrived 9:35 with a dental appointment card for 8:30 that morning; her mother had emailed the office at "
    "7:50.\nJack Hume: arrived 9:40, said he had overslept.\nAll other pupils arrived before 8:50."), [
    ("sam", "choice", "How should Sam be marked for the morning?",
     opts(("present", "Present and on time"), ("late", "Late"), ("unauth", "Unauthorised absence for the morning"),
          ("auth", "Authorised absence for the morning")), "late",
     "Sam arrived at 9:05, after 8:50 but not after 9:20."),
    ("nina", "yesno", "Should Nina get an unauthorised absence for the morning?", YN, "no",
     "She arrived after 9:20, but her reason, a dental appointment, is an authorised one.", HARD),
    ("jack", "yesno", "Should Jack get an unauthorised absence for the morning?", YN, "yes",
     "He arrived at 9:40, after 9:20, and oversleeping is not an authorised reason."),
    ("count", "score", "How many pupils in 10B get an unauthorised absence for this morning?",
     opts(("none", "None"), ("one", "One"), ("two", "Two"), ("three", "Three or more")), "one",
     "Only Jack does: Sam was late but before 9:20, and Nina's lateness had an authorised reason."),
]))

GROUPS.append(("school-attendance", SCHOOL_POLICY + (
    "Attendance summary, autumn term so far (weeks 1-6, 60 sessions).\nPupil: Ella Marsh, Year 10.\nSessions "
    "attended: 52.\nAuthorised absences: 5 sessions (illness, reported each morning).\nUnauthorised absences: 3 "
    "sessions.\nForm tutor's note: \"Ella has been ill a lot this term; otherwise a very committed pupil.\""), [
    ("rate", "score", "What share of this term's sessions so far has Ella attended?",
     opts(("below-80", "Below 80%"), ("80-89", "80% to 89.9%"), ("90-94", "90% to 94.9%"),
          ("95-plus", "95% or more")), "80-89",
     "She attended 52 of 60 sessions, about 86.7%.", HARD),
    ("unauth", "score", "How many unauthorised sessions does Ella have so far this term?", SESSIONS4, "few",
     "The summary lists 3 unauthorised sessions."),
    ("letter", "yesno", "Should a warning letter be sent to Ella's parents?", YN, "no",
     "She has 3 unauthorised sessions, fewer than the 5 that lead to a warning letter."),
    ("step", "choice", "Which step does the policy require now?",
     opts(("nothing", "Nothing yet"), ("letter", "A warning letter only"),
          ("both", "A warning letter and a meeting with the head of year"),
          ("meeting", "A meeting with the head of year only")), "meeting",
     "Her attendance is below 90%, but she has fewer than 5 unauthorised sessions."),
]))

GROUPS.append(("school-attendance", SCHOOL_POLICY + (
    "Pupil: Kofi Mensah, Year 8, with no other absences this term.\nKofi's mother phoned the office at 8:30 each "
    "morning from Monday 2 to Friday 6 June: \"Kofi's grandfather died on Saturday and the family is together this "
    "week; the funeral is on Friday.\"\nKofi was absent all five days and returned on Monday 9 June."), [
    ("days", "score", "How many of Kofi's five days off can be authorised?",
     opts(("none", "None"), ("some", "1 or 2 days"), ("three", "3 days"), ("all", "All 5 days")), "three",
     "The death of a grandparent authorises up to 3 days, so 3 of the 5 days can be authorised.", HARD),
    ("reason", "choice", "Under which authorised reason do some of Kofi's days off fall?",
     opts(("illness", "Illness"), ("appointment", "A medical or dental appointment"),
          ("bereavement", "The death of a close relative"), ("none", "None of them")), "bereavement",
     "Kofi's grandfather died, and the policy counts grandparents as close relatives."),
    ("letter", "yesno", "Will Kofi's absence this week lead to a warning letter?", YN, "no",
     "The 2 days beyond the 3 authorised make 4 unauthorised sessions, fewer than 5.", HARD),
]))

# --- building-permits -------------------------------------------------------
BUILD_GUIDE = (
    "Householder guide extract (Elmford Town Council, building permits):\n"
    "- No permit is needed for: a garden shed with a floor area up to 10 m² and a height up to 2.5 m; a fence up to "
    "2.0 m high, or up to 1.0 m high where it runs next to a road; internal changes that do not touch a load-bearing "
    "wall.\n"
    "- A permit is needed for: any extension; a new window or door in a wall that faces a street; removing or "
    "opening up a load-bearing wall; any work at all on a listed building, including like-for-like repairs.\n"
    "- Rear extensions reaching up to 4 m from the house's original rear wall go fast-track (fee 120 EUR); deeper "
    "ones need a full application (fee 400 EUR). Work on a listed building needs listed-building consent: no fee, "
    "but a heritage survey must be sent with it.\n"
    "- Neighbours within 20 m of the work are told of the application and have 21 days from that notice to object; "
    "later objections are not considered.\n\n")
FEE3 = opts(("none", "No fee"), ("fast", "120 EUR"), ("full", "400 EUR"))
FEE_Q = "What fee is due for this application?"
ROUTE4 = opts(("none", "No permit needed"), ("fast", "Fast-track"), ("full", "Full application"),
              ("listed", "Listed-building consent"))

GROUPS.append(("building-permits", BUILD_GUIDE + (
    "Enquiry from Marta Kowalski, 14 Birch Lane (not a listed building):\n\"I want to put a garden shed at the back, "
    "3 m by 3 m and 2.4 m high. I'd also like a 1.5 m wooden fence along the front garden, where it meets the "
    "road. Do I need permits for these?\""), [
    ("shed", "yesno", "Does Marta need a permit for the shed?", YN, "no",
     "The shed's floor area is 3 x 3 = 9 m², within 10 m², and it is 2.4 m high, within 2.5 m."),
    ("fence", "yesno", "Does Marta need a permit for the front fence?", YN, "yes",
     "The fence runs next to the road, where only 1.0 m is allowed without a permit, and it is 1.5 m high.", HARD),
    ("which", "choice", "Which of Marta's plans need a permit?",
     opts(("none", "Neither"), ("shed", "Only the shed"), ("fence", "Only the front fence"), ("both", "Both")),
     "fence", "The 9 m² shed of 2.4 m is permit-free, but the 1.5 m fence next to the road is not."),
    ("height", "score", "How high could the front fence be without a permit?",
     opts(("one-m", "Up to 1.0 m"), ("two-m", "Up to 2.0 m"), ("two-half-m", "Up to 2.5 m")), "one-m",
     "A fence that runs next to a road is permit-free only up to 1.0 m."),
]))

GROUPS.append(("building-permits", BUILD_GUIDE + (
    "Application EL-2291, 8 Mill Road (not listed).\nPlan: a single-storey rear extension. A conservatory built in "
    "2015 already reaches 2.5 m from the house's original rear wall; the new extension replaces it and reaches 5.0 m "
    "from the original rear wall.\nNearby: no. 6 (8 m from the work), no. 10 (9 m), and a farmhouse 60 m behind "
    "the garden."), [
    ("route", "choice", "Which route does this application take?", ROUTE4, "full",
     "The extension reaches 5.0 m from the original rear wall, more than the 4 m allowed for fast-track.", HARD),
    ("fee", "score", FEE_Q, FEE3, "full",
     "A rear extension reaching 5.0 m from the original rear wall needs a full application, at 400 EUR."),
    ("told", "choice", "Who must be told of the application?",
     opts(("all", "No. 6, no. 10 and the farmhouse"), ("six-ten", "No. 6 and no. 10 only"), ("six", "No. 6 only"),
          ("nobody", "Nobody")), "six-ten",
     "Neighbours within 20 m are told, which takes in no. 6 at 8 m and no. 10 at 9 m but not the farmhouse at 60 m."),
]))

GROUPS.append(("building-permits", BUILD_GUIDE + (
    "Enquiry about 3 Church Walk, a listed building.\nThe owner writes: \"The wooden back door has rotted. I want "
    "to replace it with a new wooden door of exactly the same design. It faces the back garden, not the street, so "
    "I assume I can just go ahead?\"\nNo other work is planned."), [
    ("permit", "yesno", "Does the new back door need a permit?", YN, "yes",
     "Any work at all on a listed building needs a permit, including like-for-like repairs, wherever the door "
     "faces.", HARD),
    ("send", "choice", "What must the owner send with the application?",
     opts(("fee", "A 400 EUR fee"), ("nothing", "Nothing"), ("fast", "A 120 EUR fee"),
          ("survey", "A heritage survey")), "survey",
     "Work on a listed building needs listed-building consent, which must come with a heritage survey."),
    ("fee", "score", FEE_Q, FEE3, "none",
     "Listed-building consent has no fee."),
]))

GROUPS.append(("building-permits", BUILD_GUIDE + (
    "Enquiry from Farid Haddad, 22 Quay Street (not listed):\n\"We want to knock through between the kitchen and the "
    "dining room to make one open room. Nothing changes outside.\"\nStructural engineer's report, attached: \"The "
    "wall between the kitchen and the dining room carries the floor joists of the bedroom above; it is "
    "load-bearing.\""), [
    ("permit", "yesno", "Does Farid need a permit for this work?", YN, "yes",
     "The engineer's report says the wall is load-bearing, and opening up a load-bearing wall needs a permit."),
    ("why", "choice", "Why is a permit needed?",
     opts(("street", "It makes a new opening in a wall facing a street"), ("listed", "The house is listed"),
          ("extension", "It is an extension"), ("bearing", "It opens up a load-bearing wall")), "bearing",
     "The house is not listed and nothing changes outside, but the wall to be opened is load-bearing."),
    ("if-not", "yesno", "Would the work be permit-free if the wall were not load-bearing?", YN, "yes",
     "Internal changes that do not touch a load-bearing wall need no permit."),
]))

GROUPS.append(("building-permits", BUILD_GUIDE + (
    "Application EL-3310, 41 Fenn Close (not listed). Plan: a single-storey rear extension reaching 3.5 m from the "
    "house's original rear wall. Submitted and paid 2 September.\nNeighbours within 20 m: no. 39 and no. 43, both "
    "told of the application on 2 September.\nNo. 43 sent an objection on 30 September: \"It will block the "
    "afternoon sun on our patio.\""), [
    ("route", "choice", "Which route does this application take?",
     opts(("full", "Full application"), ("fast", "Fast-track"), ("none", "No permit needed"),
          ("listed", "Listed-building consent")), "fast",
     "The rear extension reaches 3.5 m from the original rear wall, within the 4 m for fast-track."),
    ("fee", "score", FEE_Q, FEE3, "fast", "A fast-track application costs 120 EUR."),
    ("objection", "yesno", "Must No. 43's objection be considered?", YN, "no",
     "It came 28 days after the 2 September notice, later than the 21 days allowed.", HARD),
]))

GROUPS.append(("building-permits", BUILD_GUIDE + (
    "Enquiry from Ian Tran, 5 Orchard Row (not listed):\n\"I'd like to put up a 1.8 m fence along the side of my "
    "back garden, where it borders my neighbour's garden; it is nowhere near a road. I also want a garden shed of 4 "
    "m by 3 m, 2.4 m high, in the corner. What needs a permit?\""), [
    ("height", "score", "How high could Ian's side fence be without a permit?",
     opts(("one-m", "Up to 1.0 m"), ("two-m", "Up to 2.0 m"), ("two-half-m", "Up to 2.5 m")), "two-m",
     "The fence does not run next to a road, so it is permit-free up to 2.0 m."),
    ("shed", "yesno", "Does the shed need a permit?", YN, "yes",
     "Its floor area is 4 x 3 = 12 m², more than the 10 m² allowed without a permit, even though its height is "
     "fine.", HARD),
    ("which", "choice", "Which of Ian's plans need a permit?",
     opts(("shed", "Only the shed"), ("both", "Both"), ("fence", "Only the fence"), ("none", "Neither")), "shed",
     "The 12 m² shed is over the 10 m² limit, while the 1.8 m fence away from the road is permit-free."),
]))

# --- food-safety ------------------------------------------------------------
FOOD_CODE = (
    "Food safety code extract (Harlow City Council), used by inspectors:\n"
    "- Cold food must be kept at 5 °C or below and hot food at 63 °C or above; food found outside these limits is a "
    "breach, and food that has been outside them for more than 2 hours must also be thrown away.\n"
    "- Raw meat and fish must be stored below ready-to-eat food.\n"
    "- Every handwash basin must have hot water, soap and paper towels.\n"
    "- Written allergen information must be available for every dish on the menu.\n"
    "- Floors and equipment must be clean and in good repair.\n"
    "Rating: start at 5, deduct 2 points for each major breach and 1 point for each minor breach; the rating never "
    "goes below 0, and a rating of 0 closes the premises at once. Major breaches: food kept at an unsafe "
    "temperature, raw meat or fish stored above ready-to-eat food, no hot water at a handwash basin. Every other "
    "breach is minor.\n\n")
RATING4 = opts(("closed", "0: the premises close at once"), ("poor", "1 or 2"), ("fair", "3"), ("good", "4 or 5"))
RATING_Q = "What rating should the premises get from this inspection?"

GROUPS.append(("food-safety", FOOD_CODE + (
    "Inspection report, Sunny Noodle Bar, 14 March, 11:00.\nWalk-in fridge: 4 °C. Raw chicken on the top shelf, "
    "directly above tubs of cooked rice and salad.\nHot counter: soup at 68 °C.\nHandwash basin: hot water, soap "
    "and paper towels present.\nAllergen booklet: covers all 22 dishes.\nFloors and equipment: clean."), [
    ("fridge", "yesno", "Is the walk-in fridge at a safe temperature?", YN, "yes",
     "The fridge is at 4 °C, within the limit of 5 °C or below."),
    ("breach", "choice", "Which breach did the inspection find?",
     opts(("storage", "Raw meat stored above ready-to-eat food"), ("temp", "Food kept at an unsafe temperature"),
          ("basin", "No hot water at a handwash basin"), ("allergen", "Missing allergen information"),
          ("none", "No breach")), "storage",
     "The raw chicken is on the top shelf above cooked rice and salad."),
    ("rating", "score", RATING_Q, RATING4, "fair",
     "One major breach takes 2 points off 5, which leaves 3.", HARD),
]))

GROUPS.append(("food-safety", FOOD_CODE + (
    "Inspection report, Casa Verde, 2 June, 11:40.\nWalk-in fridge: 3 °C; raw beef on the bottom shelf.\n"
    "Hot-holding counter: lasagne at 55 °C; the chef's log shows it went into the counter at 11:00.\nHandwash "
    "basin: hot water and soap, but no paper towels.\nAllergen information: written for 15 of the 16 dishes; none "
    "for the new fish stew.\nFloors and equipment: clean."), [
    ("throw", "yesno", "Must the lasagne be thrown away now?", YN, "no",
     "It is below 63 °C, but it has been in the counter only 40 minutes, not more than 2 hours.", HARD),
    ("rating", "score", RATING_Q, RATING4, "poor",
     "The lasagne at 55 °C is a major breach (2 points) and the missing towels and allergen information are minor "
     "(1 point each), which leaves 5 - 4 = 1.", HARD),
    ("count", "choice", "How many breaches did the inspection find?",
     opts(("one", "One"), ("two", "Two"), ("three", "Three"), ("four", "Four")), "three",
     "The lasagne below 63 °C, the missing paper towels and the missing allergen information for the fish stew are "
     "three breaches."),
    ("towels", "score", "How many points does the lack of paper towels take off the rating?",
     opts(("zero", "None"), ("one", "1 point"), ("two", "2 points")), "one",
     "Only a lack of hot water at a handwash basin is major, so the missing paper towels are a minor breach, 1 "
     "point."),
]))

GROUPS.append(("food-safety", FOOD_CODE + (
    "Inspection report, Grill Shack, 19 August, 12:30.\nFridge: 9 °C; its display shows it has been at 9 °C since a "
    "power cut at 06:00; contents: cooked ham and coleslaw, with raw burgers on the shelf above the coleslaw.\n"
    "Handwash basin: cold water only (the boiler is broken); soap and paper towels present.\nAllergen information: "
    "complete.\nFloors and equipment: clean."), [
    ("throw", "yesno", "Must the cooked ham and coleslaw be thrown away?", YN, "yes",
     "They have been at 9 °C, above 5 °C, since 06:00, six and a half hours by 12:30, more than 2 hours.", HARD),
    ("rating", "score", RATING_Q, RATING4, "closed",
     "Three major breaches take 6 points off 5, and the rating stops at 0."),
    ("not", "choice", "Which of these was NOT a breach at this inspection?",
     opts(("temp", "Food kept at an unsafe temperature"), ("storage", "Raw meat stored above ready-to-eat food"),
          ("basin", "No hot water at a handwash basin"), ("allergen", "Missing allergen information")), "allergen",
     "The allergen information was complete, while the fridge, the burgers and the basin were all breaches.", HARD),
]))

GROUPS.append(("food-safety", FOOD_CODE + (
    "Inspection report, Bean There Café, 7 November, 10:15.\nFridge: 5 °C; raw bacon in a sealed box on the bottom "
    "shelf, sandwiches on the shelf above.\nHot food: none served.\nHandwash basin: hot water, soap and paper towels.\n"
    "Allergen information: none written for the new \"autumn soup\", added to the menu this week; the manager listed "
    "its ingredients from memory when asked.\nFloors and equipment: clean."), [
    ("fridge", "yesno", "Is the fridge temperature a breach?", YN, "no",
     "The fridge is at 5 °C, and cold food must be kept at 5 °C or below, so 5 °C is allowed.", HARD),
    ("allergen", "yesno", "Is there a breach about allergen information?", YN, "yes",
     "The code needs written allergen information for every dish, and there is none for the autumn soup."),
    ("rating", "score", RATING_Q, RATING4, "good",
     "The only breach, the missing written allergen information, is minor and leaves 5 - 1 = 4."),
    ("kind", "choice", "What kind of breach is the missing allergen information?",
     opts(("major", "A major breach"), ("minor", "A minor breach"),
          ("none", "Not a breach, since the manager knew the ingredients")), "minor",
     "The code needs written information, and a breach not on the list of major ones is minor."),
]))

GROUPS.append(("food-safety", FOOD_CODE + (
    "Inspection report, Curry Corner, 22 April, 15:00.\nHot counter: chicken curry at 58 °C; holding log for the "
    "curry: 12:00, 64 °C; 12:30, 61 °C; 14:00, 59 °C. Rice at 66 °C.\nFridge: 4 °C; raw lamb on the bottom shelf.\n"
    "Handwash basin: hot water, soap and paper towels.\nAllergen information: complete.\nFloors and equipment: "
    "clean."), [
    ("curry", "yesno", "Must the chicken curry be thrown away?", YN, "yes",
     "The log shows it below 63 °C since 12:30 at the latest, two and a half hours before 15:00, more than 2 hours.",
     HARD),
    ("which", "choice", "Which food on the hot counter must be thrown away?",
     opts(("none", "Neither"), ("rice", "The rice only"), ("curry", "The curry only"), ("both", "Both")), "curry",
     "The curry has been below 63 °C for more than 2 hours, while the rice is at 66 °C."),
    ("rating", "score", RATING_Q, RATING4, "fair",
     "The curry below 63 °C is the only breach, a major one, which leaves 5 - 2 = 3."),
]))

GROUPS.append(("food-safety", FOOD_CODE + (
    "Inspection report, Harbour Fish Bar, 30 January, 17:45.\nFridge: 2 °C; raw fish in trays on the bottom shelf, "
    "below cooked prawns.\nHot cabinet: chips at 75 °C.\nHandwash basin: hot water, soap and paper towels.\n"
    "Allergen information: a chart covers every dish.\nInspector's note: \"Floor behind the fryer thick with old "
    "grease.\""), [
    ("fish", "yesno", "Is the raw fish stored as the code requires?", YN, "yes",
     "The raw fish is on the bottom shelf, below the cooked prawns."),
    ("rating", "score", RATING_Q, RATING4, "good",
     "The greasy floor is the only breach, a minor one, which leaves 5 - 1 = 4."),
    ("which", "choice", "Which finding is a breach of the code?",
     opts(("fridge", "The fridge at 2 °C"), ("fish", "The raw fish below the cooked prawns"),
          ("chips", "The chips at 75 °C"), ("floor", "The greasy floor behind the fryer")), "floor",
     "Floors must be clean, while the fridge, the fish and the chips all meet the code."),
]))

# --- grant-review -----------------------------------------------------------
GRANT_GUIDE = (
    "Guidance, Riverside Arts Fund small grants, 2025 round:\n"
    "- Registered charities and community groups based in Riverside county may apply; individuals may not.\n"
    "- The most the fund awards is 5,000 EUR; an application asking for more is ineligible.\n"
    "- The fund pays at most 50% of a project's total cost; the rest must come from other sources.\n"
    "- Projects must end by 31 March 2026.\n"
    "- The deadline is 15 May 2025 at 17:00; applications that arrive later are not considered, whatever the "
    "reason.\n"
    "- The panel scores each eligible application from 1 to 5 on community benefit, feasibility and value for money. "
    "A total of 11 or more is funded, 8 to 10 goes on the reserve list, and under 8 is rejected.\n\n")
OUTCOME4 = opts(("ineligible", "Not scored: ineligible or late"), ("rejected", "Rejected: total score under 8"),
                ("reserve", "Reserve list: total score 8 to 10"), ("funded", "Funded: total score 11 or more"))
OUTCOME_Q = "What is the outcome of this application?"
ELIGIBLE_Q = "Is this application eligible?"

GROUPS.append(("grant-review", GRANT_GUIDE + (
    "Application RAF-118. Applicant: Hillside Youth Choir, a community group based in Riverside county.\nSubmitted: "
    "14 May 2025, 16:20.\nProject: a summer singing course, June to August 2025.\nTotal cost: 8,000 EUR. Request: "
    "4,000 EUR; the rest from course fees and a local business sponsor.\nPanel scores: community benefit 4, "
    "feasibility 4, value for money 3."), [
    ("eligible", "yesno", ELIGIBLE_Q, YN, "yes",
     "A Riverside community group applied on time for 4,000 EUR, half of the cost, for a project ending in August "
     "2025."),
    ("outcome", "score", OUTCOME_Q, OUTCOME4, "funded",
     "The scores add up to 4 + 4 + 3 = 11, which is funded.", HARD),
    ("share", "choice", "What share of the project's total cost would the fund pay?",
     opts(("quarter", "25%"), ("third", "About 33%"), ("half", "50%"), ("most", "75%")), "half",
     "The request of 4,000 EUR is half of the 8,000 EUR total cost."),
]))

GROUPS.append(("grant-review", GRANT_GUIDE + (
    "Application RAF-131. Applicant: Mara Quinn, a painter living in Riverside county, applying in her own name.\n"
    "Submitted: 2 May 2025.\nProject: a mural on the outside wall of the town library, finished by October 2025.\n"
    "Total cost: 4,000 EUR. Request: 2,000 EUR.\nAttached: a letter of support from the library's manager."), [
    ("eligible", "yesno", ELIGIBLE_Q, YN, "no",
     "Mara Quinn applies as an individual, and individuals may not apply."),
    ("rule", "choice", "Which rule decides this application?",
     opts(("applicant", "Who may apply"), ("deadline", "The deadline"), ("amount", "The 5,000 EUR maximum"),
          ("match", "The 50% limit"), ("end", "The end date for projects")), "applicant",
     "The application is on time, within the amount and share limits and ends in 2025, but it comes from an "
     "individual."),
    ("outcome", "score", OUTCOME_Q, OUTCOME4, "ineligible",
     "An application from an individual is ineligible and is not scored."),
]))

GROUPS.append(("grant-review", GRANT_GUIDE + (
    "Application RAF-140. Applicant: Eastbank Heritage Trust, a registered charity based in Riverside county.\n"
    "Submitted: 15 May 2025, 17:12 (system timestamp).\nEmail from the applicant, 15 May, 17:15: \"Our internet went "
    "down at 16:50, sorry for the few minutes' delay.\"\nProject: oral-history recordings, ending December 2025.\n"
    "Total cost: 9,000 EUR. Request: 4,500 EUR."), [
    ("considered", "yesno", "Will this application be considered?", YN, "no",
     "It arrived at 17:12, after the 17:00 deadline, and late applications are not considered whatever the reason.",
     HARD),
    ("outcome", "score", OUTCOME_Q, OUTCOME4, "ineligible",
     "A late application is not considered, so it is not scored."),
    ("fails", "choice", "Which condition does this application fail?",
     opts(("applicant", "Who may apply"), ("amount", "The 5,000 EUR maximum"), ("match", "The 50% limit"),
          ("end", "The end date for projects"), ("deadline", "The deadline")), "deadline",
     "The charity, the 4,500 EUR request at 50% and the 2025 end date are fine, but it arrived after 17:00."),
]))

GROUPS.append(("grant-review", GRANT_GUIDE + (
    "Application RAF-152. Applicant: Northfield Community Garden, a community group based in Riverside county.\n"
    "Submitted: 10 May 2025.\nProject: raised beds and a tool shed, finished by November 2025.\nTotal cost: 6,000 "
    "EUR. Request: 4,000 EUR. Other funding: 2,000 EUR from the parish council."), [
    ("max", "yesno", "Is the request within the fund's 5,000 EUR maximum?", YN, "yes",
     "The request of 4,000 EUR is less than 5,000 EUR."),
    ("eligible", "yesno", ELIGIBLE_Q, YN, "no",
     "The 4,000 EUR request is two thirds of the 6,000 EUR cost, more than the 50% the fund may pay.", HARD),
    ("share", "score", "What share of the project's total cost does the request cover?",
     opts(("quarter", "Up to 25%"), ("half", "26% to 50%"), ("two-thirds", "51% to 75%"), ("most", "More than 75%")),
     "two-thirds", "4,000 EUR of 6,000 EUR is about 67%."),
    ("largest", "choice", "What is the largest request this project could make and still be eligible?",
     opts(("2000", "2,000 EUR"), ("3000", "3,000 EUR"), ("4000", "4,000 EUR"), ("5000", "5,000 EUR")), "3000",
     "The fund pays at most 50% of the 6,000 EUR total cost, which is 3,000 EUR.", HARD),
]))

GROUPS.append(("grant-review", GRANT_GUIDE + (
    "Application RAF-160. Applicant: Riverside Deaf Theatre Company, a registered charity based in Riverside county."
    "\nSubmitted: 12 May 2025.\nProject: touring signed theatre performances, September 2025 to February 2026.\n"
    "Total cost: 12,000 EUR. Request: 5,000 EUR; the rest from ticket sales and a national trust.\nPanel scores: "
    "community benefit 5, feasibility 2, value for money 3.\nPanel note: \"Very strong need; the touring plan looks "
    "thin.\""), [
    ("outcome", "score", OUTCOME_Q, OUTCOME4, "reserve",
     "The scores add up to 5 + 2 + 3 = 10, which goes on the reserve list."),
    ("limits", "yesno", "Is the request within the fund's limits on amount and share of cost?", YN, "yes",
     "The 5,000 EUR request is exactly the maximum, and it is about 42% of the 12,000 EUR cost, within 50%.", HARD),
    ("short", "score", "How far is the total score from the 11 points needed for funding?",
     opts(("none", "Not short: it reaches 11"), ("one", "1 point short"), ("two", "2 or 3 points short"),
          ("more", "4 or more points short")), "one",
     "The total of 10 is 1 point short of 11."),
    ("lowest", "choice", "On which criterion did the application score lowest?",
     opts(("benefit", "Community benefit"), ("feasibility", "Feasibility"), ("value", "Value for money")),
     "feasibility", "Feasibility scored 2, below community benefit (5) and value for money (3)."),
]))

GROUPS.append(("grant-review", GRANT_GUIDE + (
    "Application RAF-171. Applicant: Westmoor Film Club, a community group based in Riverside county.\nSubmitted: 9 "
    "May 2025.\nProject: a three-day outdoor film festival in July 2025.\nTotal cost: 14,000 EUR. Request: 7,000 "
    "EUR; the rest from ticket sales.\nCover letter: \"We ask for exactly half of our costs, as your rules allow.\""),
    [
    ("half", "yesno", "Is the request within the 50% limit on the share of costs?", YN, "yes",
     "7,000 EUR is exactly half of the 14,000 EUR total cost."),
    ("eligible", "yesno", ELIGIBLE_Q, YN, "no",
     "The request of 7,000 EUR is more than the 5,000 EUR maximum, even though it is half of the cost.", HARD),
    ("rule", "choice", "Which rule does the application break?",
     opts(("match", "The 50% limit"), ("amount", "The 5,000 EUR maximum"), ("deadline", "The deadline"),
          ("applicant", "Who may apply")), "amount",
     "The request of 7,000 EUR is above the 5,000 EUR maximum."),
    ("outcome", "score", OUTCOME_Q, OUTCOME4, "ineligible",
     "An application asking for more than 5,000 EUR is ineligible and is not scored."),
]))

# --- trial-eligibility ------------------------------------------------------
TRIAL_CHECKLIST = (
    "Screening checklist, study ORB-204 (Orbis Research Unit). A person can be enrolled only if they meet every "
    "inclusion criterion and no exclusion criterion.\n"
    "Inclusion:\n- Aged 18 to 65 on the screening date.\n- Type 2 diabetes diagnosed at least 6 months before the "
    "screening date.\n- HbA1c from 7.0% to 10.0%, both included.\n"
    "Exclusion:\n- Any insulin use in the 3 months before screening.\n- eGFR below 45.\n- Pregnant or "
    "breastfeeding.\n- Taking part in another drug trial in the 90 days before screening.\n"
    "If a value needed for a criterion is missing, the outcome is \"pending\" until it is measured; a person who "
    "already fails a criterion is not eligible whatever is missing.\n\n")
INCLUSION4 = opts(("none", "None of the three"), ("one", "One of the three"), ("two", "Two of the three"),
                  ("all", "All three"))
INCLUSION_Q = "How many of the three inclusion criteria does this person meet?"
EXCLUSION3 = opts(("none", "None"), ("one", "One"), ("two", "Two or more"))
OUTCOME_TRIAL_Q = "What is the screening outcome?"

GROUPS.append(("trial-eligibility", TRIAL_CHECKLIST + (
    "Screening record S-031, screening date 12 March 2025.\nDate of birth: 2 April 1959.\nType 2 diabetes "
    "diagnosed: 2019.\nHbA1c: 8.2%.\nMedicines: metformin, atorvastatin; insulin never used.\neGFR: 71.\nOther "
    "trials: none.\nPregnancy or breastfeeding: not applicable."), [
    ("age", "yesno", "Is this person within the age limits on the screening date?", YN, "yes",
     "Born on 2 April 1959, the person is 65 on 12 March 2025, three weeks before turning 66.", HARD),
    ("outcome", "choice", OUTCOME_TRIAL_Q,
     opts(("eligible", "Eligible"), ("not-eligible", "Not eligible"), ("pending", "Pending: a value is missing")),
     "eligible", "Every inclusion criterion is met, no exclusion applies and no value is missing."),
    ("inclusion", "score", INCLUSION_Q, INCLUSION4, "all",
     "Age 65, diabetes since 2019 and an HbA1c of 8.2% meet all three inclusion criteria."),
]))

GROUPS.append(("trial-eligibility", TRIAL_CHECKLIST + (
    "Screening record S-044, screening date 3 June 2025.\nAge: 52.\nType 2 diabetes diagnosed: 20 January 2025.\n"
    "HbA1c: 9.1%.\nInsulin: never used.\neGFR: 80.\nOther trials: none.\nPregnant or breastfeeding: no.\nNurse's "
    "note: \"Very keen to take part; lives close to the unit.\""), [
    ("duration", "yesno", "Was the diabetes diagnosed long enough before screening?", YN, "no",
     "From 20 January to 3 June 2025 is about four and a half months, less than the 6 months required.", HARD),
    ("since", "score", "How long before screening was the diabetes diagnosed?",
     opts(("under-6m", "Less than 6 months"), ("6-12m", "6 to 12 months"), ("1-5y", "More than 1 year, up to 5"),
          ("over-5y", "More than 5 years")), "under-6m",
     "From 20 January to 3 June 2025 is about four and a half months."),
    ("inclusion", "score", INCLUSION_Q, INCLUSION4, "two",
     "The age of 52 and the HbA1c of 9.1% meet their criteria, but the diagnosis is less than 6 months old."),
    ("outcome", "choice", OUTCOME_TRIAL_Q,
     opts(("pending", "Pending: a value is missing"), ("not-eligible", "Not eligible"), ("eligible", "Eligible")),
     "not-eligible", "The diagnosis is less than 6 months old, so an inclusion criterion is not met."),
]))

GROUPS.append(("trial-eligibility", TRIAL_CHECKLIST + (
    "Screening record S-057, screening date 20 August 2025.\nAge: 47.\nType 2 diabetes diagnosed: 2016.\nHbA1c: "
    "10.0%.\nMedicines: metformin; insulin glargine, stopped on 1 July 2025 after a switch to tablets.\neGFR: 62.\n"
    "Other trials: none.\nPregnant or breastfeeding: no."), [
    ("hba1c", "yesno", "Is the HbA1c inside the range the study requires?", YN, "yes",
     "The range is 7.0% to 10.0% with both ends included, so 10.0% is inside it.", HARD),
    ("insulin", "yesno", "Does the insulin history exclude this person?", YN, "yes",
     "Insulin was used until 1 July 2025, less than 3 months before the 20 August screening.", HARD),
    ("decides", "choice", "Which criterion decides the outcome?",
     opts(("age", "Age"), ("hba1c", "HbA1c"), ("egfr", "eGFR"), ("trial", "Another drug trial in the past 90 days"),
          ("insulin", "Insulin use in the past 3 months")), "insulin",
     "Age, HbA1c and eGFR are all within limits, but insulin was used 7 weeks before screening."),
    ("exclusions", "score", "How many exclusion criteria does this person meet?", EXCLUSION3, "one",
     "Only recent insulin use applies, since the eGFR of 62 is not below 45 and there is no pregnancy or other "
     "trial."),
]))

GROUPS.append(("trial-eligibility", TRIAL_CHECKLIST + (
    "Screening record S-062, screening date 5 May 2025.\nAge: 38.\nType 2 diabetes diagnosed: 2021.\nHbA1c: 7.4%.\n"
    "Insulin: never used.\neGFR: not yet available; sample sent to the lab, result due 8 May.\nOther trials: a "
    "vitamin D supplement study (not a drug trial), ended March 2025.\nPregnant: no (negative test). "
    "Breastfeeding: no."), [
    ("outcome", "choice", OUTCOME_TRIAL_Q,
     opts(("not-eligible", "Not eligible"), ("eligible", "Eligible"), ("pending", "Pending: a value is missing")),
     "pending", "Every criterion that can be checked is met, but the eGFR result is still missing."),
    ("vitamin", "yesno", "Does the vitamin D study exclude this person?", YN, "no",
     "Only another drug trial excludes, and the vitamin D study was not a drug trial.", HARD),
    ("inclusion", "score", INCLUSION_Q, INCLUSION4, "all",
     "Age 38, diabetes since 2021 and an HbA1c of 7.4% meet all three inclusion criteria."),
]))

GROUPS.append(("trial-eligibility", TRIAL_CHECKLIST + (
    "Screening record S-078, screening date 14 October 2025.\nAge: 29.\nType 2 diabetes diagnosed: 2022.\nHbA1c: "
    "6.6%.\nInsulin: never used.\neGFR: 95.\nOther trials: drug trial ORB-150, last dose and final visit on 1 August "
    "2025.\nPregnant: yes, 14 weeks."), [
    ("exclusions", "score", "How many exclusion criteria does this person meet?", EXCLUSION3, "two",
     "The drug trial ended 74 days before screening, within 90 days, and the person is pregnant."),
    ("trial", "yesno", "Does the earlier drug trial exclude this person?", YN, "yes",
     "From 1 August to 14 October 2025 is 74 days, within the 90 days before screening.", HARD),
    ("hba1c", "yesno", "Is the HbA1c inside the range the study requires?", YN, "no",
     "An HbA1c of 6.6% is below 7.0%."),
    ("outcome", "choice", OUTCOME_TRIAL_Q,
     opts(("eligible", "Eligible"), ("pending", "Pending: a value is missing"), ("not-eligible", "Not eligible")),
     "not-eligible", "The HbA1c is below the range and two exclusion criteria apply."),
]))

GROUPS.append(("trial-eligibility", TRIAL_CHECKLIST + (
    "Screening record S-090, screening date 9 January 2025.\nDate of birth: 20 January 2007.\nType 2 diabetes "
    "diagnosed: 2022.\nHbA1c: 7.8%.\nInsulin: never used.\neGFR: 110.\nOther trials: none.\nPregnant or "
    "breastfeeding: no.\nReferral letter: \"Turns 18 this month, keen to join.\""), [
    ("age", "yesno", "Is this person old enough to join the study on the screening date?", YN, "no",
     "Born on 20 January 2007, the person is still 17 on 9 January 2025.", HARD),
    ("inclusion", "score", INCLUSION_Q, INCLUSION4, "two",
     "Diabetes since 2022 and an HbA1c of 7.8% meet their criteria, but the person is under 18."),
    ("outcome", "choice", OUTCOME_TRIAL_Q,
     opts(("pending", "Pending: a value is missing"), ("eligible", "Eligible"), ("not-eligible", "Not eligible")),
     "not-eligible", "The person is 17 on the screening date, below the minimum age of 18."),
]))


def rows_heldout2():
    return rows_from(GROUPS)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    dump(os.path.join(here, "heldout2.jsonl"), rows_heldout2())


if __name__ == "__main__":
    main()
