#!/usr/bin/env python3
"""Build the labelled evaluation sets from authored content (stdlib only).

Writes, next to this script:
  authored.jsonl  families evidence / rule / routing / missing; every source
                  scenario ("group") has 3-4 variants that keep or flip the answer
  boundary.jsonl  "Is the person currently enrolled as a student?" boundary cases,
                  each with a one-sentence rationale for its gold label

All content below is hand-written by the SemIf team; nothing is random, so the
output is byte-for-byte reproducible: python data/eval/build.py
"""
import json
import os

EV_OPTIONS = [
    {"id": "supported", "description": "The evidence supports the claim"},
    {"id": "contradicted", "description": "The evidence contradicts the claim"},
    {"id": "insufficient", "description": "The evidence is not enough to decide either way"},
]
YN = [{"id": "yes", "description": "Yes"}, {"id": "no", "description": "No"}]
YNU = [{"id": "yes", "description": "Yes"}, {"id": "no", "description": "No"},
       {"id": "unknown", "description": "Unknown: the information given does not say"}]

# ---------------------------------------------------------------------------
# evidence: (claim, supported evidence, contradicted evidence, insufficient evidence)
EVIDENCE = [
    ("The Riverside Library is open on Sundays.",
     "Riverside Library opening hours: Mon-Fri 9:00-20:00, Sat 10:00-17:00, Sun 12:00-17:00.",
     "Riverside Library opening hours: Mon-Fri 9:00-20:00, Sat 10:00-17:00. Closed on Sundays and public holidays.",
     "Riverside Library was renovated in 2022 and now has a children's reading room and 40 study desks."),
    ("Alba Ferreira won the women's race of the 2023 Lisbon Half Marathon.",
     "Lisbon Half Marathon 2023, women's results: 1. Alba Ferreira 1:09:12; 2. Joana Reis 1:09:40; 3. Ruth Kiprop 1:10:05.",
     "Lisbon Half Marathon 2023, women's results: 1. Joana Reis 1:09:12; 2. Alba Ferreira 1:09:40; 3. Ruth Kiprop 1:10:05.",
     "Before the 2023 Lisbon Half Marathon, Alba Ferreira told reporters she hoped to finish in the top three."),
    ("Tallis Software's revenue grew in 2023 compared with 2022.",
     "Tallis Software annual report: revenue 41.2 million EUR in 2022 and 46.8 million EUR in 2023.",
     "Tallis Software annual report: revenue fell from 41.2 million EUR in 2022 to 38.5 million EUR in 2023.",
     "Tallis Software opened a new office in Leeds in 2023 and hired 60 engineers."),
    ("Corvalex tablets should be taken with food.",
     "Corvalex patient leaflet: take one tablet daily with a meal to reduce stomach upset.",
     "Corvalex patient leaflet: take on an empty stomach, at least one hour before eating, because food reduces absorption.",
     "Corvalex patient leaflet: store below 25 C and keep out of the reach of children."),
    ("Flight LX 318 landed on time on 5 May.",
     "LX 318 Zurich-London, 5 May: scheduled arrival 10:05, actual arrival 10:02.",
     "LX 318 Zurich-London, 5 May: scheduled arrival 10:05, actual arrival 11:47 (delay caused by late incoming aircraft).",
     "LX 318 Zurich-London, 5 May: boarded at gate A54, aircraft type A220-300, 112 passengers."),
    ("Tenants of the Linden Court apartment are allowed to keep pets.",
     "Linden Court lease, clause 12: tenants may keep up to two cats or dogs after giving written notice to the landlord.",
     "Linden Court lease, clause 12: no animals of any kind may be kept in the apartment.",
     "Linden Court listing: two bedrooms, a balcony, five minutes' walk from the park."),
    ("The Veloce 14 laptop's battery lasts more than 10 hours.",
     "Review of the Veloce 14: in our standard video playback test the battery lasted 13 h 20 min.",
     "Review of the Veloce 14: in our standard video playback test the battery lasted 6 h 45 min, well short of the advertised figure.",
     "Review of the Veloce 14: the laptop weighs 1.3 kg and charges over USB-C at up to 65 W."),
    ("The Elm Street Bakery closed permanently in 2024.",
     "Photo of the shop window, March 2024: 'After 31 years the Elm Street Bakery has closed for good. Thank you for everything!'",
     "Local paper, 10 January 2025: 'The Elm Street Bakery, trading without interruption since 1993, is still baking six days a week.'",
     "Local paper, February 2024: the Elm Street Bakery raised its bread prices by 10 percent."),
    ("ReportDesk can export reports to PDF.",
     "ReportDesk help centre: reports can be exported as PDF, CSV or XLSX from the Share menu.",
     "ReportDesk help centre: export formats are CSV and XLSX; PDF export is not supported, use your browser's print function instead.",
     "ReportDesk help centre: reports can be shared with teammates via a link and scheduled to refresh daily."),
    ("Mount Kelby is taller than 3,000 metres.",
     "Regional atlas: Mount Kelby (3,412 m) is the highest peak of the range.",
     "Regional atlas: Mount Kelby rises to 2,871 m and is the second-highest peak of the range.",
     "Regional atlas: Mount Kelby is popular with hikers; a mountain hut stands on its southern ridge at 2,100 m."),
    ("The Harlow Museum offers free entry to children under 12.",
     "Harlow Museum tickets: adults 14 EUR, students 9 EUR, children under 12 free.",
     "Harlow Museum tickets: adults 14 EUR, children aged 4-12 6 EUR, children under 4 free.",
     "Harlow Museum visitor information: step-free access throughout and a cafe on the ground floor."),
    ("The Brenner supply contract renews automatically at the end of its term.",
     "Brenner supply contract, clause 9.1: this agreement renews automatically for successive 12-month periods unless either party gives 60 days' notice.",
     "Brenner supply contract, clause 9.1: this agreement ends at the end of the initial term; any renewal requires a new written agreement signed by both parties.",
     "Brenner supply contract, clause 9.1: either party may terminate for material breach with 30 days' written notice."),
]

# ---------------------------------------------------------------------------
# rule: (policy, question, [(case, label), ...])
RULES = [
    ("Expense claims over 500 EUR need a manager's approval before they can be reimbursed. Claims of 500 EUR or less need no approval.",
     "Can this expense claim be reimbursed now under the policy?",
     [("Claim: 320 EUR for train tickets. Manager approval: none recorded.", "yes"),
      ("Claim: 780 EUR for a hotel stay. Manager approval: none recorded yet.", "no"),
      ("Claim: 1,150 EUR conference fee. Manager approval: approved by J. Ortiz on 4 March.", "yes")]),
    ("Check-in starts at 15:00. Check-in before 15:00 is only possible for Gold members, and only if their room is ready.",
     "Should the guest be allowed to check in now?",
     [("Time: 12:30. Guest: standard member. Room status: ready.", "no"),
      ("Time: 13:00. Guest: Gold member. Room status: being cleaned.", "no"),
      ("Time: 16:10. Guest: standard member. Room status: ready.", "yes")]),
    ("Returns are accepted within 30 days of delivery if the item is unused and the receipt is provided.",
     "Should this return be accepted?",
     [("Delivered 2 May. Return requested 20 May. Item unused, receipt provided.", "yes"),
      ("Delivered 2 May. Return requested 15 June. Item unused, receipt provided.", "no"),
      ("Delivered 2 May. Return requested 10 May. Item used once, receipt provided.", "no")]),
    ("Employees may work remotely up to 2 days per week. More than 2 remote days per week requires HR approval.",
     "Is the employee's remote-work schedule allowed under the policy?",
     [("Schedule: remote Monday and Friday, office Tuesday to Thursday. HR approval: none.", "yes"),
      ("Schedule: remote Monday, Tuesday and Wednesday, office Thursday and Friday. HR approval: none.", "no"),
      ("Schedule: remote Monday to Thursday, office Friday. HR approval: granted on 1 February.", "yes")]),
    ("An applicant qualifies for the loan only if their monthly debt payments are at most 40% of their monthly income and they have been in their current job for at least 6 months.",
     "Does the applicant qualify for the loan?",
     [("Monthly income 4,000 EUR; monthly debt payments 1,200 EUR; in current job for 2 years.", "yes"),
      ("Monthly income 3,000 EUR; monthly debt payments 1,500 EUR; in current job for 3 years.", "no"),
      ("Monthly income 5,000 EUR; monthly debt payments 1,000 EUR; in current job for 4 months.", "no")]),
    ("Each passenger may take one cabin bag weighing at most 8 kg plus one small personal item into the cabin. Cabin bags over 8 kg must be checked in.",
     "Is the passenger's cabin baggage within the policy?",
     [("Cabin bag: 7.2 kg. Personal item: a laptop sleeve.", "yes"),
      ("Cabin bag: 9.5 kg. Personal item: none.", "no"),
      ("Cabin bag: 8.0 kg. Personal item: a small backpack.", "yes")]),
    ("Hours worked beyond 40 in a calendar week are paid at 150%. Hours worked on a public holiday are paid at 200%, whatever the weekly total.",
     "Is the employee owed an overtime or holiday premium for this week?",
     [("Hours this week: 38, none of them on a public holiday.", "no"),
      ("Hours this week: 44, none of them on a public holiday.", "yes"),
      ("Hours this week: 36, of which 8 were worked on Monday, a public holiday.", "yes")]),
    ("Visitors must sign in at reception and must be accompanied by an employee at all times while on site.",
     "Did the visitor comply with the visitor policy?",
     [("The visitor signed in at reception and was accompanied by her host for the whole visit.", "yes"),
      ("The visitor signed in at reception, then walked alone to the lab and waited there for 20 minutes.", "no"),
      ("The visitor was accompanied by his host the whole time but never signed in at reception.", "no")]),
    ("Members may have at most 5 books on loan at once. Members with an overdue book may not borrow until it is returned.",
     "Can the member borrow the requested book now?",
     [("The member currently has 3 books on loan, none overdue.", "yes"),
      ("The member currently has 5 books on loan, none overdue.", "no"),
      ("The member returned her only overdue book at the desk ten minutes ago and now has 1 book on loan, not overdue.", "yes")]),
    ("A zone B parking permit is issued only to residents who live in zone B and whose car is registered at that zone B address.",
     "Should a zone B parking permit be issued?",
     [("The applicant lives in zone B and the car is registered at the same zone B address.", "yes"),
      ("The applicant lives in zone C with the car registered there; she works in zone B.", "no"),
      ("The applicant lives in zone B, but the car is registered at his parents' address in zone D.", "no")]),
]

# ---------------------------------------------------------------------------
# routing: (question, options, [(state, label), ...])
def opts(*pairs):
    return [{"id": i, "description": d} for i, d in pairs]


ROUTING = [
    ("Which IT helpdesk queue should take this request?",
     opts(("network", "Network: Wi-Fi, VPN, connectivity"), ("hardware", "Hardware: laptops, monitors, printers"),
          ("accounts", "Accounts: passwords, lockouts, permissions"), ("software", "Software: installing and fixing applications")),
     [("The Wi-Fi on the third floor keeps dropping every few minutes; wired desks are fine.", "network"),
      ("My external monitor has a dead vertical line down the middle of the screen.", "hardware"),
      ("I entered the wrong password too many times and now my account is locked.", "accounts")]),
    ("Which council department should receive this letter?",
     opts(("waste", "Waste and recycling"), ("parking", "Parking and permits"),
          ("tax", "Council tax"), ("housing", "Social housing")),
     [("Our bins on Mill Lane have not been collected for two weeks running.", "waste"),
      ("I was fined for parking outside my own house even though my resident permit was displayed.", "parking"),
      ("My council tax bill charges for three adults but only I live at this address.", "tax")]),
    ("Which claims team should handle this insurance claim?",
     opts(("auto", "Motor insurance"), ("home", "Home and contents insurance"), ("travel", "Travel insurance"),
          ("health", "Health insurance"), ("life", "Life insurance")),
     [("The airline lost my suitcase on the way to Rome and I had to buy clothes for the week.", "travel"),
      ("A pipe burst under the sink overnight and flooded the kitchen floor.", "home"),
      ("I was rear-ended at a red light; the bumper and boot of my car are damaged.", "auto")]),
    ("Which practice area should this legal enquiry go to?",
     opts(("employment", "Employment law"), ("family", "Family law"), ("immigration", "Immigration law")),
     [("I was dismissed a week after I reported safety problems at the warehouse to my manager.", "employment"),
      ("My ex-husband and I cannot agree on the custody arrangements for our two children.", "family"),
      ("My application to renew my work visa was refused and I have 30 days to leave.", "immigration")]),
    ("Which inbox should this email to our online shop go to?",
     opts(("orders", "Orders: order status and changes"), ("returns", "Returns and exchanges"),
          ("payments", "Payments and invoices"), ("product", "Product questions before buying"),
          ("partnerships", "Wholesale and partnerships"), ("careers", "Jobs and careers")),
     [("Does the Fjord rain jacket run small? I usually wear a medium.", "product"),
      ("I run a gift shop in Bergen and would like to stock your jackets. Do you offer wholesale prices?", "partnerships"),
      ("Is the warehouse assistant position advertised last week still open?", "careers")]),
    ("Which tool should the assistant call first for this task?",
     opts(("sql_query", "sql_query: run a read-only query on the company sales database"),
          ("send_email", "send_email: send an email on the user's behalf"),
          ("web_search", "web_search: search the public web"),
          ("python", "python: run Python code for calculations and charts")),
     [("How many orders did we receive last month? The numbers are in our sales database.", "sql_query"),
      ("Let the client at Orbis Ltd know by email that their delivery will be two days late.", "send_email"),
      ("Compute the compound interest on 10,000 EUR at 3.5% a year over 7 years and plot the balance per year.", "python")]),
    ("Which component should this bug report be filed under?",
     opts(("frontend", "Web frontend (browser UI)"), ("backend_api", "Backend API"),
          ("database", "Database"), ("mobile_app", "Mobile apps (iOS and Android)")),
     [("On the checkout page in desktop Firefox, the Pay button overlaps the address field.", "frontend"),
      ("POST /orders returns HTTP 500 whenever quantity is greater than 99; smaller quantities work.", "backend_api"),
      ("The iOS app crashes as soon as I open the camera to scan a barcode.", "mobile_app")]),
    ("Which section of the journal should handle this submission?",
     opts(("physics", "Physics"), ("biology", "Biology"), ("economics", "Economics"), ("linguistics", "Linguistics")),
     [("Title: Gene knockout of tbx5 disrupts fin development in zebrafish embryos.", "biology"),
      ("Title: Minimum wage increases and teenage employment: evidence from 40 US counties.", "economics"),
      ("Title: The vowel shift in Glasgow English, 1970-2020: a corpus study.", "linguistics")]),
    ("Which language queue should this customer message be routed to?",
     opts(("english", "English-speaking agents"), ("spanish", "Spanish-speaking agents"), ("french", "French-speaking agents")),
     [("Hola, mi pedido llegó incompleto, falta una de las dos lámparas. ¿Pueden enviarla?", "spanish"),
      ("Bonjour, ma commande est arrivée incomplète, il manque une des deux lampes. Pouvez-vous l'envoyer ?", "french"),
      ("Hello, my order arrived incomplete: one of the two lamps is missing. Can you send it?", "english")]),
    ("Which contractor should be assigned to this job?",
     opts(("electrician", "Electrician"), ("plumber", "Plumber"), ("roofer", "Roofer"),
          ("painter", "Painter and decorator"), ("carpenter", "Carpenter")),
     [("Rewire the kitchen and add four new sockets above the worktop.", "electrician"),
      ("The pipe under the bathroom sink is leaking and the shut-off valve is stuck.", "plumber"),
      ("Several roof tiles blew off in the storm and water is coming into the attic.", "roofer")]),
]

# ---------------------------------------------------------------------------
# missing: (question, absent, distractor, yes, no); labels unknown, unknown, yes, no
MISSING = [
    ("Has the payment for order 5512 been received?",
     {"order": 5512, "items": "2 x desk chair", "ship_to": "Lyon", "created": "3 May"},
     {"order": 5512, "items": "2 x desk chair", "created": "3 May",
      "other_orders": [{"order": 5498, "payment": "received 1 May"}]},
     {"order": 5512, "items": "2 x desk chair", "created": "3 May", "payment": "received 3 May"},
     {"order": 5512, "items": "2 x desk chair", "created": "3 May", "payment": "awaiting payment"}),
    ("Is Dr. Amal Noor available for appointments this Thursday?",
     "Dr. Amal Noor, cardiology, room 214. Accepting new patients.",
     "Dr. Amal Noor, cardiology, room 214. This week Dr. Peter Haas (dermatology) has open slots all day Thursday.",
     "Dr. Amal Noor, cardiology, room 214. This week: open slots on Thursday at 10:30 and 14:00.",
     "Dr. Amal Noor, cardiology, room 214. This week: away at a conference from Thursday to Friday, no appointments."),
    ("Does the listing for Flat A include a parking space?",
     "Flat A: 2 rooms, 58 m2, third floor with lift, balcony, 1,150 EUR per month.",
     "Flat A: 2 rooms, 58 m2, third floor with lift, 1,150 EUR per month. Flat B, listed by the same agency, includes an underground parking space.",
     "Flat A: 2 rooms, 58 m2, third floor with lift, 1,150 EUR per month. The rent includes one underground parking space.",
     "Flat A: 2 rooms, 58 m2, third floor with lift, 1,150 EUR per month. No parking space; street parking only."),
    ("Has the patient received the flu vaccine for the 2024-25 season?",
     {"patient": "H. Okoye", "allergies": "penicillin", "blood_pressure": "128/82 (12 Oct 2024)"},
     {"patient": "H. Okoye", "allergies": "penicillin", "note": "Spouse received the 2024-25 flu vaccine on 14 Oct 2024."},
     {"patient": "H. Okoye", "allergies": "penicillin", "immunisations": [{"vaccine": "influenza 2024-25", "given": "14 Oct 2024"}]},
     {"patient": "H. Okoye", "allergies": "penicillin", "immunisations": [{"vaccine": "influenza 2024-25", "status": "declined by patient on 14 Oct 2024"}]}),
    ("Is the candidate willing to relocate to Munich for this job?",
     "Candidate: Laura Benz. 7 years as a backend engineer (Go, PostgreSQL). Currently based in Hamburg.",
     "Candidate: Laura Benz. 7 years as a backend engineer, based in Hamburg. Recruiter note: the previous candidate for this role, J. Park, said he would relocate to Munich.",
     "Candidate: Laura Benz. 7 years as a backend engineer, based in Hamburg. Cover letter: 'I am happy to relocate to Munich for this role.'",
     "Candidate: Laura Benz. 7 years as a backend engineer, based in Hamburg. Cover letter: 'I am not willing to relocate; I can only work from Hamburg or remotely.'"),
    ("Was shipment SH-204 insured?",
     {"shipment": "SH-204", "cargo": "3 pallets", "route": "Rotterdam to Gdansk", "picked_up": "2 June", "delivered": "5 June"},
     {"shipment": "SH-204", "cargo": "3 pallets", "route": "Rotterdam to Gdansk",
      "related": [{"shipment": "SH-205", "insurance": "insured for 20,000 EUR"}]},
     {"shipment": "SH-204", "cargo": "3 pallets", "route": "Rotterdam to Gdansk", "insurance": "policy CI-7781, 15,000 EUR"},
     {"shipment": "SH-204", "cargo": "3 pallets", "route": "Rotterdam to Gdansk", "insurance": "declined by shipper"}),
    ("Has the tenant paid the March rent?",
     "Tenant: K. Boateng, flat 4B, lease since 2022. Rent 900 EUR per month, due on the 1st.",
     "Tenant: K. Boateng, flat 4B. Rent 900 EUR per month, due on the 1st. February rent: received 1 February.",
     "Tenant: K. Boateng, flat 4B. Rent 900 EUR per month, due on the 1st. March rent: 900 EUR received 2 March.",
     "Tenant: K. Boateng, flat 4B. Rent 900 EUR per month, due on the 1st. March rent: not received; reminder sent 15 March."),
    ("Does this TypeKit Pro licence permit commercial use?",
     {"product": "TypeKit Pro", "seats": 1, "term": "perpetual", "updates": "12 months included"},
     {"product": "TypeKit Pro", "seats": 1, "term": "perpetual",
      "note": "TypeKit Team, a different product tier, permits commercial use."},
     {"product": "TypeKit Pro", "seats": 1, "term": "perpetual", "usage": "personal and commercial projects permitted"},
     {"product": "TypeKit Pro", "seats": 1, "term": "perpetual", "usage": "personal, non-commercial use only"}),
    ("Did the driver hold a valid driving licence at the time of the accident?",
     "Accident report, 12 January: junction of Ash Road and Bell Street. Driver: M. Ivers. Damage to front bumper, no injuries.",
     "Accident report, 12 January: junction of Ash Road and Bell Street. Driver: M. Ivers. Passenger R. Ivers holds a valid driving licence.",
     "Accident report, 12 January: junction of Ash Road and Bell Street. Driver: M. Ivers. Licence check for the driver: valid, expires 2027.",
     "Accident report, 12 January: junction of Ash Road and Bell Street. Driver: M. Ivers. Licence check for the driver: suspended since 3 November of the previous year."),
    ("Can restaurant Olmo seat a party of 8 tonight at 20:00?",
     {"restaurant": "Olmo", "cuisine": "Italian", "hours": "18:00-23:00", "seating": "indoor and terrace"},
     {"restaurant": "Olmo", "hours": "18:00-23:00", "availability_tomorrow": "20:00: table for 8 available"},
     {"restaurant": "Olmo", "hours": "18:00-23:00", "availability_tonight": "20:00: table for up to 10 available"},
     {"restaurant": "Olmo", "hours": "18:00-23:00", "availability_tonight": "fully booked from 19:30 to 22:00"}),
]

# ---------------------------------------------------------------------------
# boundary: (group, state, label, rationale)
BQ = "Is the person currently enrolled as a student?"
BOUNDARY = [
    ("not-yet-started",
     "Today is 15 October 2024. Sofia Brandt received an admission letter from Delft University of Technology for the MSc Robotics programme starting in September 2025. She has not registered for any course and works full-time at a logistics firm.",
     "no", "Admission to a programme that starts in 2025 is not an active registration today."),
    ("not-yet-started",
     "Today is 15 October 2024. Kwame Asante accepted his offer from the University of Leeds and paid the 500 GBP deposit last week. His programme begins with registration week on 13 January 2025.",
     "no", "Accepting an offer and paying a deposit precede registration, which only happens in January 2025."),
    ("not-yet-started",
     "Today is 15 October 2024. Lina Haddad was admitted to the University of Vienna for the winter semester 2024/25 but was granted a one-year deferral; her place is held for October 2025 and she is travelling until then.",
     "no", "A deferred place is held for a future term, so she has no registration for the current semester."),
    ("finishing",
     "Today is 15 October 2024. Tom Reilly graduated with a BSc from University College Dublin in June 2024. He still uses his alumni email address and his alumni library card.",
     "no", "He graduated in June 2024, and alumni email or library access is not a student registration."),
    ("finishing",
     "Today is 15 October 2024. Jonas Weber submitted his master's thesis at the University of Hamburg on 30 September 2024. His oral defence is scheduled for 20 November, and the registrar confirms that his registration for the winter semester 2024/25 is active.",
     "yes", "The registrar confirms an active registration for the current semester, even though his thesis is already submitted."),
    ("away-but-registered",
     "Today is 15 October 2024. Aiko Mori is spending the autumn 2024 semester at the University of Copenhagen as an exchange student. Her home university, Kyoto University, lists her status as 'enrolled - on exchange', and she has paid this term's tuition there.",
     "yes", "She holds an active registration at her home university for this term while studying abroad on exchange."),
    ("away-but-registered",
     "Today is 15 October 2024. Mei Lin is a third-year doctoral candidate at ETH Zurich. Since August she has been on a six-month research stay at a company lab in Munich; ETH lists her doctoral registration as active for the autumn semester 2024.",
     "yes", "Her doctoral registration at ETH is active this semester; working off-site does not end it."),
    ("away-but-registered",
     "Today is 15 October 2024. Ahmed Said is registered for the autumn 2024 semester at Politecnico di Milano. This semester his only module is a credit-bearing internship at an engineering firm, so he is rarely on campus.",
     "yes", "He is registered for the current semester; a credit-bearing internship module is part of that registration."),
    ("proxy-applicant",
     "Today is 15 October 2024. Person in question: Maria Lopez, the applicant. Maria is applying for a student bus pass on behalf of her son Diego, who is in his second year at Valencia Polytechnic. Maria works full-time as a nurse and is not registered at any school or university.",
     "no", "The person in question is the parent, who is not registered anywhere; only her son is a student."),
    ("proxy-applicant",
     "Today is 15 October 2024. Person in question: Diego Lopez. His mother Maria filled in the student bus pass form on his behalf. Diego is registered as a second-year student at Valencia Polytechnic for the 2024/25 academic year, and the registrar's certificate is attached.",
     "yes", "Diego holds a registrar-certified registration for the current academic year; who filled in the form does not matter."),
    ("registration-stopped",
     "Today is 15 October 2024. Priya Nair enrolled at the University of Toronto for the fall 2024 term but officially withdrew on 2 October 2024. The registrar shows her status as 'withdrawn' and her courses have been dropped.",
     "no", "She withdrew on 2 October, so her registration for the term is no longer active."),
    ("registration-stopped",
     "Today is 15 October 2024. Ella Svensson was suspended by Lund University for the autumn 2024 semester after a disciplinary hearing. Her registration is blocked until January 2025, when she may return.",
     "no", "Her registration is blocked for the current semester because of the suspension."),
    ("registration-stopped",
     "Today is 15 October 2024. Omar Farouk is on an approved medical leave of absence from Northbridge College for the autumn 2024 term. College records show his registration as inactive during the leave; he takes no courses and plans to return in January 2025.",
     "no", "College records show his registration as inactive for the current term while he is on leave."),
    ("payment-status",
     "Today is 15 October 2024. Daniel Moreno's registration at Northbridge College for the autumn 2024 term was cancelled on 8 October 2024 because his fees were still unpaid after the deadline. He says he intends to pay and re-register next term.",
     "no", "His registration was cancelled on 8 October, and an intention to re-register later is not a registration."),
    ("payment-status",
     "Today is 15 October 2024. Fatima Zahra is registered for the autumn 2024 semester at Sciences Po. Her tuition instalment is due on 31 October 2024 and has not been paid yet; the registrar lists her registration as active.",
     "yes", "The registrar lists her registration as active, and the unpaid instalment is not yet overdue."),
    ("document-vs-record",
     "Today is 15 October 2024. Hannah Kim's student ID card, marked 'valid until 30/09/2024', has expired and she has not collected a new one yet. The registrar's system shows her registered full-time at the University of Edinburgh for the 2024/25 academic year.",
     "yes", "The registrar's record shows an active registration; an expired ID card does not change it."),
    ("document-vs-record",
     "Today is 15 October 2024. Luca Bianchi still carries a University of Bologna student ID card valid until 2025, but he formally withdrew from his degree in June 2024 and has not registered for the 2024/25 year.",
     "no", "He withdrew in June and is not registered for 2024/25, whatever the date printed on his old ID card."),
    ("document-vs-record",
     "Today is 15 October 2024. On a discount application Ryan Cole wrote 'I am a student at Westfield University.' Westfield's registrar answered the verification request: no current registration; last registered in spring 2023.",
     "no", "The registrar reports no current registration, which overrides his own claim."),
    ("nonstandard-mode",
     "Today is 15 October 2024. Marek Novak works 30 hours a week and is enrolled part-time at Charles University this semester, taking two courses towards a bachelor's degree. His registration for the winter semester is confirmed.",
     "yes", "Part-time students hold an active registration too, and his registration for this semester is confirmed."),
    ("nonstandard-mode",
     "Today is 15 October 2024. Grace Otieno studies from Nairobi and is registered on the online BSc Computer Science programme of the University of London for the 2024/25 session; she has paid her module fees for the October 2024 study session.",
     "yes", "She is registered with a university for the current session; studying online does not affect this."),
    ("nonstandard-mode",
     "Today is 15 October 2024. Ben Carter, 17, is a senior at Lincoln High School and, under a dual-enrolment scheme, is also registered this fall term for one calculus course at Riverside Community College.",
     "yes", "He is a registered high-school student and also holds a current course registration at a college."),
    ("nonstandard-mode",
     "Today is 15 October 2024. Rosa Delgado works days as a receptionist. She is registered for the autumn 2024 term at Hillside Adult College, where she attends an evening accounting diploma course twice a week that started on 16 September.",
     "yes", "She holds an active registration at an adult college for the current term, even though she studies in the evening."),
    ("informal-attendance",
     "Today is 15 October 2024. Pierre Lambert, a retired engineer, sits in on a philosophy lecture at the Sorbonne every week with the professor's informal permission. He has never registered with the university and has no student record there or anywhere else.",
     "no", "Attending lectures informally without any registration does not make him an enrolled student."),
    ("returning",
     "Today is 15 October 2024. After a gap year working in Australia, Noah Fischer re-registered at the University of Cologne; his enrolment certificate for the winter semester 2024/25 is dated 1 October 2024 and lectures began on 7 October.",
     "yes", "He re-registered for the current semester, as his enrolment certificate shows, after the gap year ended."),
]


def rows_authored():
    out = []
    for gi, (claim, sup, con, ins) in enumerate(EVIDENCE, 1):
        group = f"evidence-{gi:02d}"
        for label, ev in (("supported", sup), ("contradicted", con), ("insufficient", ins)):
            state = ({"claim": claim, "evidence": ev} if gi % 2 == 0
                     else f"Claim: {claim}\n\nEvidence: {ev}")
            out.append({"id": f"{group}-{label}", "state": state,
                        "question": "Does the evidence support the claim?",
                        "options": EV_OPTIONS, "label": label, "family": "evidence", "group": group})
    for gi, (policy, question, cases) in enumerate(RULES, 1):
        group = f"rule-{gi:02d}"
        for vi, (case, label) in enumerate(cases):
            state = ({"policy": policy, "case": case} if gi % 2 == 0
                     else f"Policy: {policy}\n\nCase: {case}")
            out.append({"id": f"{group}-{'abc'[vi]}", "state": state, "question": question,
                        "options": YN, "label": label, "family": "rule", "group": group})
    for gi, (question, options, cases) in enumerate(ROUTING, 1):
        group = f"routing-{gi:02d}"
        for vi, (text, label) in enumerate(cases):
            out.append({"id": f"{group}-{'abc'[vi]}", "state": text, "question": question,
                        "options": options, "label": label, "family": "routing", "group": group})
    for gi, (question, absent, distractor, yes, no) in enumerate(MISSING, 1):
        group = f"missing-{gi:02d}"
        for suffix, state, label in (("absent", absent, "unknown"), ("distractor", distractor, "unknown"),
                                     ("yes", yes, "yes"), ("no", no, "no")):
            out.append({"id": f"{group}-{suffix}", "state": state, "question": question,
                        "options": YNU, "label": label, "family": "missing", "group": group})
    return out


def rows_boundary():
    return [{"id": f"boundary-{i:02d}", "state": state, "question": BQ, "options": YN,
             "label": label, "family": "boundary", "group": f"boundary-{group}", "rationale": why}
            for i, (group, state, label, why) in enumerate(BOUNDARY, 1)]


def dump(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    dump(os.path.join(here, "authored.jsonl"), rows_authored())
    dump(os.path.join(here, "boundary.jsonl"), rows_boundary())


if __name__ == "__main__":
    main()
