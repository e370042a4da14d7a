#!/usr/bin/env python3
"""Build the third held-out labelled single-request set from authored content (stdlib only).

Writes, next to this script:
  heldout3.jsonl  typed decisions (choice / yesno / score) about realistic states in seven
                  families (vet-triage, lab-flags, licence-compliance, parking-appeals,
                  youth-sports, pool-chemistry, vehicle-inspection); every scenario ("group")
                  is one state asked 2-4 questions, each answerable on its own, with a
                  one-sentence `why` for its gold label. Rows that hold a distractor, a stated
                  exception, negation or a small date or amount calculation carry
                  "difficulty": "hard".

The set is HELD OUT: no default, method or readout was chosen on it, and none may be. It
exists to measure the shipped defaults and the peer on a third draw of families never used
for selection; none of its families appears in any other labelled file of the project
(single.jsonl, heldout.jsonl, heldout2.jsonl, authored.jsonl, boundary.jsonl, the demos or
the examples). No calibration or batch statistics are meant to be fitted on it either.

All content below is hand-written by the SemIf team; nothing is random, so the output
is byte-for-byte reproducible: python data/eval/build_heldout3.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the row form, option helpers and writer are build_single.py's: one convention for every set
from build_single import HARD, YN, dump, opts, rows_from

# Each group: (family, state, [(slug, type, question, options, label, why[, HARD]), ...])
GROUPS = []

# --- vet-triage -------------------------------------------------------------
VET_RULES = (
    "Phone triage rules (Hollybank Veterinary Clinic):\n"
    "- Red, seen at once: breathing difficulty, collapse, a seizure, a dog with a swollen hard belly after eating, "
    "a male cat straining without passing urine, or a known poison eaten within the last 2 hours.\n"
    "- Amber, seen within 1 hour: vomiting more than 3 times in 24 hours, a wound that is still bleeding, or a "
    "female cat that has passed no urine for 12 hours or more.\n"
    "- Green, seen the same day: everything else.\n"
    "- Chocolate is a poison for dogs from 3 g per kg of body weight (dark) or 14 g per kg (milk).\n"
    "- Out of hours (18:00 to 08:00) a 60 EUR emergency fee is added for Red and Amber cases.\n\n")
TRIAGE3 = opts(("green", "Green: seen the same day"), ("amber", "Amber: seen within 1 hour"),
               ("red", "Red: seen at once"))
TRIAGE_Q = "Which triage category does this call get?"
FEE_Q = "Is the 60 EUR emergency fee added for this visit?"

GROUPS.append(("vet-triage", VET_RULES + (
    "Call at 14:20. Owner: Priya Shah. Dog: Bella, Labrador, 20 kg.\nOwner: \"Bella ate a whole 100 g bar of dark "
    "chocolate off the table about 40 minutes ago. She seems completely fine, bright and wagging, and hasn't been "
    "sick.\""), [
    ("dose", "yesno", "Did Bella eat enough chocolate to count as a poison under the clinic's rule?", YN, "yes",
     "Bella ate 100 g of dark chocolate at 20 kg, which is 5 g per kg, above the 3 g per kg limit.", HARD),
    ("triage", "score", TRIAGE_Q, TRIAGE3, "red",
     "Despite Bella seeming well, she ate a poisonous amount of chocolate 40 minutes ago, within 2 hours.", HARD),
    ("fee", "yesno", FEE_Q, YN, "no", "The call is at 14:20, inside opening hours, so no emergency fee is added."),
    ("rule", "choice", "Which triage rule decides Bella's category?",
     opts(("vomit", "Vomiting more than 3 times in 24 hours"), ("wound", "A wound that is still bleeding"),
          ("poison", "A known poison eaten within the last 2 hours"), ("other", "None: everything else is Green")),
     "poison", "Bella ate a poisonous dose of dark chocolate 40 minutes before the call."),
]))

GROUPS.append(("vet-triage", VET_RULES + (
    "Call at 21:30. Owner: Tom Reyes. Cat: Milo, male, 4 years old.\nOwner: \"Since about five o'clock Milo keeps "
    "going in and out of the litter tray and squatting, straining, but nothing comes out. He ate his dinner "
    "normally and he isn't being sick.\""), [
    ("triage", "score", TRIAGE_Q, TRIAGE3, "red",
     "A male cat straining without passing urine is Red, even though he is eating and not vomiting.", HARD),
    ("fee", "yesno", FEE_Q, YN, "yes", "The call is at 21:30, out of hours, and the case is Red."),
    ("advice", "choice", "What should the receptionist tell Tom?",
     opts(("tomorrow", "Book Milo in for tomorrow"), ("hour", "Bring Milo in within the hour, with no fee"),
          ("hour-fee", "Bring Milo in within the hour; a 60 EUR fee is added"),
          ("now-fee", "Bring Milo in at once; a 60 EUR fee is added")), "now-fee",
     "Milo is a Red case out of hours, so he is seen at once and the 60 EUR fee is added."),
]))

GROUPS.append(("vet-triage", VET_RULES + (
    "Call at 10:15. Owner: Greta Novak. Dog: Daisy, spaniel cross, 30 kg.\nOwner: \"Daisy got into the kids' "
    "Easter basket an hour ago and ate about 200 g of milk chocolate, wrappers and all. She has been sick twice since "
    "then, but she's drinking water and wants to play.\""), [
    ("dose", "yesno", "Did Daisy eat enough chocolate to count as a poison under the clinic's rule?", YN, "no",
     "Daisy ate 200 g of milk chocolate at 30 kg, under 7 g per kg, below the 14 g per kg limit.", HARD),
    ("triage", "score", TRIAGE_Q, TRIAGE3, "green",
     "The chocolate dose is not poisonous and two bouts of vomiting are not more than 3, so no Red or Amber rule "
     "applies.", HARD),
    ("more", "choice", "How many more times would Daisy have to vomit in these 24 hours to become an Amber case?",
     opts(("one", "1 more time"), ("two", "2 more times"), ("three", "3 more times"), ("four", "4 more times")),
     "two", "Amber needs more than 3 bouts, so at least 4 in all, which is 2 more than the 2 so far.", HARD),
]))

GROUPS.append(("vet-triage", VET_RULES + (
    "Call at 19:05. Owner: Karl Weber. Dog: Rex, German shepherd, 35 kg.\nOwner: \"Rex wolfed down a big dinner at "
    "half past five. Now his belly is swollen and feels hard like a drum, and he keeps trying to be sick but nothing "
    "comes up. He is pacing and won't lie down.\""), [
    ("triage", "score", TRIAGE_Q, TRIAGE3, "red", "Rex is a dog with a swollen hard belly after eating."),
    ("fee", "yesno", FEE_Q, YN, "yes", "The call is at 19:05, after 18:00, and the case is Red."),
    ("rule", "choice", "Which triage rule decides Rex's category?",
     opts(("poison", "A known poison eaten within the last 2 hours"),
          ("belly", "A swollen hard belly after eating"), ("vomit", "Vomiting more than 3 times in 24 hours"),
          ("breath", "Breathing difficulty")), "belly",
     "Rex's belly is swollen and hard after a big dinner, and he has not actually vomited."),
    ("when", "choice", "When should Rex be seen?",
     opts(("tomorrow", "Tomorrow"), ("today", "Later today"), ("hour", "Within 1 hour"), ("now", "At once")),
     "now", "Rex is a Red case, and Red cases are seen at once."),
]))

GROUPS.append(("vet-triage", VET_RULES + (
    "Call at 16:00. Owner: Ines Duarte. Cat: Pepper, female, 9 years old.\nOwner: \"Pepper hasn't used her litter "
    "tray since six this morning, and she seems a bit quiet. She also has a small scratch on her ear from the "
    "neighbour's cat; it bled a little at lunchtime but it stopped long ago.\""), [
    ("triage", "score", TRIAGE_Q, TRIAGE3, "green",
     "Pepper has passed no urine for 10 hours, under 12, and her scratch has stopped bleeding, so no Amber rule "
     "applies.", HARD),
    ("scratch", "yesno", "Does the scratch make Pepper an Amber case?", YN, "no",
     "Only a wound that is still bleeding is Amber, and Pepper's scratch stopped bleeding long ago."),
    ("when", "choice", "When should Pepper be seen?",
     opts(("now", "At once"), ("hour", "Within 1 hour"), ("today", "Later today"),
          ("tomorrow", "Tomorrow")), "today", "Pepper is a Green case, which is seen the same day."),
]))

GROUPS.append(("vet-triage", VET_RULES + (
    "Call at 07:30. Owner: Sam Okoro. Dog: Luna, terrier, 8 kg.\nOwner: \"Luna cut her paw on broken glass on our "
    "early walk. I wrapped it in a tea towel twenty minutes ago but blood is still soaking through. She's limping "
    "but otherwise herself.\""), [
    ("triage", "score", TRIAGE_Q, TRIAGE3, "amber", "Luna has a wound that is still bleeding."),
    ("fee", "yesno", FEE_Q, YN, "yes",
     "The call is at 07:30, before 08:00 and so out of hours, and the case is Amber.", HARD),
    ("advice", "choice", "What should the receptionist tell Sam?",
     opts(("today", "Bring Luna in later today, with no fee"), ("now", "Bring Luna in at once"),
          ("hour", "Bring Luna in within 1 hour, with no fee"),
          ("hour-fee", "Bring Luna in within 1 hour; a 60 EUR fee is added")), "hour-fee",
     "Luna is an Amber case called in before 08:00, so she is seen within 1 hour and the fee is added.", HARD),
]))

GROUPS.append(("vet-triage", VET_RULES + (
    "Call at 12:40. Owner: Dana Kim. Cat: Suki, female, 6 years old.\nOwner: \"Suki has been vomiting since last "
    "night: five times so far, the last time an hour ago. She hasn't eaten breakfast. She's breathing normally and "
    "walking around.\""), [
    ("triage", "score", TRIAGE_Q, TRIAGE3, "amber", "Suki has vomited five times since last night, more than 3."),
    ("fee", "yesno", FEE_Q, YN, "no", "The call is at 12:40, inside opening hours."),
    ("rule", "choice", "Which triage rule decides Suki's category?",
     opts(("urine", "A female cat that has passed no urine for 12 hours"),
          ("breath", "Breathing difficulty"), ("poison", "A known poison eaten within the last 2 hours"),
          ("vomit", "Vomiting more than 3 times in 24 hours")), "vomit",
     "Suki has vomited five times, and nothing in the call points to poison or breathing trouble."),
]))

# --- lab-flags --------------------------------------------------------------
LAB_RULES = (
    "Result flagging rules (Eastgate Hospital laboratory, adults aged 16 and over):\n"
    "- Reference ranges: potassium 3.5-5.0 mmol/L; sodium 135-145 mmol/L; fasting glucose 3.9-5.5 mmol/L; "
    "haemoglobin 130-170 g/L for men and 120-155 g/L for women.\n"
    "- A result outside its range is flagged L (low) or H (high).\n"
    "- Critical values must be phoned to the requesting doctor within 30 minutes of the result: potassium below 2.8 "
    "or above 6.2; sodium below 120 or above 160; fasting glucose below 2.5 or above 25.0; haemoglobin below 70.\n"
    "- A potassium result from a haemolysed sample is not reported; a new sample is requested instead.\n"
    "- Patients under 16 are checked against the children's ranges, not these.\n\n")
FLAG3 = opts(("normal", "Normal: within the reference range"),
             ("abnormal", "Abnormal: outside the range but not critical"), ("critical", "Critical: phone the doctor"))

GROUPS.append(("lab-flags", LAB_RULES + (
    "Sample 24-4411. Patient: man, 58. Ward: cardiology. Sample condition: clear, not haemolysed.\nResults "
    "(authorised 10:05): potassium 6.5 mmol/L; sodium 138 mmol/L."), [
    ("potassium", "score", "How should the potassium result be classed?", FLAG3, "critical",
     "A potassium of 6.5 mmol/L is above the critical limit of 6.2."),
    ("sodium", "yesno", "Is the sodium result flagged?", YN, "no", "A sodium of 138 lies inside 135-145 mmol/L."),
    ("action", "choice", "What must the laboratory do with the potassium result?",
     opts(("report", "Report it with no flag"), ("flag", "Report it flagged H and do nothing more"),
          ("phone", "Report it and phone the doctor by 10:35"), ("resample", "Ask for a new sample")), "phone",
     "The result is critical, so the doctor is phoned within 30 minutes of 10:05, by 10:35."),
    ("high", "yesno", "Does the potassium result carry the flag H?", YN, "yes",
     "A potassium of 6.5 mmol/L is above the 5.0 top of the range."),
]))

GROUPS.append(("lab-flags", LAB_RULES + (
    "Sample 24-5120. Patient: woman, 34. Clinic: antenatal booking. Fasting sample, not haemolysed.\nResults: "
    "haemoglobin 125 g/L; fasting glucose 6.1 mmol/L.\nNote from the clinic: \"Please flag any haemoglobin under "
    "130, as for our male patients.\""), [
    ("hb", "score", "How should the haemoglobin result be classed?", FLAG3, "normal",
     "For a woman the range is 120-155 g/L, so 125 is normal whatever the clinic's note says.", HARD),
    ("glucose", "yesno", "Is the fasting glucose result flagged?", YN, "yes",
     "A fasting glucose of 6.1 mmol/L is above the 5.5 top of the range."),
    ("hbflag", "choice", "Which flag does the haemoglobin result get?",
     opts(("low", "L"), ("high", "H"), ("critical", "Critical, to be phoned"), ("none", "No flag")), "none",
     "The lab's rules use 120-155 g/L for women, and 125 lies inside it.", HARD),
    ("gclass", "score", "How should the fasting glucose result be classed?", FLAG3, "abnormal",
     "A glucose of 6.1 mmol/L is above 5.5 but far below the critical 25.0."),
]))

GROUPS.append(("lab-flags", LAB_RULES + (
    "Sample 24-6032. Patient: man, 71. Ward: general medicine.\nSample condition: marked \"haemolysed\" by the "
    "analyser.\nResults: potassium 6.8 mmol/L; sodium 131 mmol/L.\nThe ward nurse has rung twice asking for the "
    "potassium."), [
    ("phone", "yesno", "Should the potassium of 6.8 mmol/L be phoned to the doctor as a critical value?", YN, "no",
     "The sample is haemolysed, so the potassium is not reported at all and a new sample is asked for.", HARD),
    ("action", "choice", "What should the laboratory do about the potassium?",
     opts(("resample", "Ask for a new sample and do not report this result"), ("phone", "Phone it as critical"),
          ("flag", "Report it flagged H"), ("plain", "Report it with no flag")), "resample",
     "A potassium from a haemolysed sample is never reported; a new sample is requested."),
    ("sodium", "score", "How should the sodium result be classed?", FLAG3, "abnormal",
     "A sodium of 131 mmol/L is below 135 but not below the critical 120."),
]))

GROUPS.append(("lab-flags", LAB_RULES + (
    "Sample 24-7004. Patient: girl, 12. Clinic: children's outpatients.\nResults: sodium 133 mmol/L; haemoglobin "
    "118 g/L.\nA junior scientist has drafted the report with both results flagged L, using the ranges in the "
    "rules above."), [
    ("adult", "yesno", "Should these results be judged against the ranges listed in these rules?", YN, "no",
     "The patient is 12, and patients under 16 are checked against the children's ranges instead.", HARD),
    ("detail", "choice", "Which fact about the patient decides which ranges apply?",
     opts(("sex", "Her sex"), ("clinic", "The clinic that sent the sample"), ("age", "Her age"),
          ("time", "The time the sample was taken")), "age",
     "The adult ranges apply from age 16, and she is 12."),
    ("draft", "choice", "What should happen to the draft report?",
     opts(("recheck", "Check both results again against the children's ranges"), ("send", "Send it out as it is"),
          ("phone", "Phone both results to the doctor as critical"), ("high", "Change both flags to H")),
     "recheck", "The draft used the adult ranges, which do not apply to a 12-year-old."),
]))

GROUPS.append(("lab-flags", LAB_RULES + (
    "Sample 24-8120. Patient: man, 45. Emergency department. Fasting sample, not haemolysed.\nResults: fasting "
    "glucose 2.3 mmol/L; sodium 146 mmol/L; haemoglobin 150 g/L."), [
    ("glucose", "score", "How should the glucose result be classed?", FLAG3, "critical",
     "A fasting glucose of 2.3 mmol/L is below the critical limit of 2.5."),
    ("sodium", "score", "How should the sodium result be classed?", FLAG3, "abnormal",
     "A sodium of 146 mmol/L is just above the 145 top of the range and far from the critical 160.", HARD),
    ("hb", "yesno", "Is the haemoglobin result flagged?", YN, "no",
     "A haemoglobin of 150 g/L lies inside the 130-170 range for men."),
    ("count", "choice", "How many of this patient's three results are flagged?",
     opts(("none", "None"), ("one", "One"), ("two", "Two"), ("three", "Three")), "two",
     "The glucose of 2.3 and the sodium of 146 are outside their ranges, while the haemoglobin is not.", HARD),
]))

GROUPS.append(("lab-flags", LAB_RULES + (
    "Sample 24-9215. Patient: woman, 80. Ward: orthopaedics. Not haemolysed.\nResults (authorised 14:10): "
    "haemoglobin 68 g/L; potassium 3.4 mmol/L.\nCall log: Dr Osei phoned with the haemoglobin at 14:55."), [
    ("hb", "score", "How should the haemoglobin result be classed?", FLAG3, "critical",
     "A haemoglobin of 68 g/L is below the critical limit of 70."),
    ("time", "yesno", "Was the doctor phoned within the time the rules allow?", YN, "no",
     "The call came 45 minutes after the 14:10 result, more than the 30 minutes allowed.", HARD),
    ("k", "score", "How should the potassium result be classed?", FLAG3, "abnormal",
     "A potassium of 3.4 mmol/L is just below the 3.5 bottom of the range but above the critical 2.8.", HARD),
    ("which", "choice", "Which result had to be phoned to the doctor?",
     opts(("k", "The potassium only"), ("hb", "The haemoglobin only"), ("both", "Both results"),
          ("neither", "Neither result")), "hb", "Only the haemoglobin of 68 g/L is a critical value."),
]))

# --- licence-compliance -----------------------------------------------------
LICENCE_POLICY = (
    "Open-source licence policy (Corvid Software):\n"
    "- MIT, BSD and Apache-2.0 components are allowed; a product shipped to customers must carry each one's licence "
    "text in its NOTICE file.\n"
    "- LGPL-2.1 components are allowed if dynamically linked; static linking needs Legal approval.\n"
    "- GPL-2.0 and GPL-3.0 components are not allowed in products shipped to customers; they are allowed in internal "
    "tools that are never given to anyone outside Corvid.\n"
    "- AGPL-3.0 components are not allowed anywhere, including internal tools and hosted services.\n"
    "- A component with no licence file is not allowed until Legal confirms its licence.\n"
    "- Any exception needs written Legal approval, recorded in the component register.\n\n")
STATUS3 = opts(("ok", "Allowed as it is"), ("action", "Allowed only after an action (a NOTICE entry or Legal "
               "approval)"), ("blocked", "Not allowed"))
STATUS_Q = "What is the status of {} under the policy?"

GROUPS.append(("licence-compliance", LICENCE_POLICY + (
    "Release review: Corvid Ledger 4.2, a desktop app shipped to customers.\nComponents:\n- fastjson (MIT), licence "
    "text present in the NOTICE file.\n- libchart (LGPL-2.1), statically linked into the app.\nComponent register: "
    "no entries for Ledger 4.2.\nRelease manager's note: \"Both are permissive licences, good to go.\""), [
    ("libchart", "score", STATUS_Q.format("libchart"), STATUS3, "action",
     "libchart is LGPL-2.1 and statically linked, which needs Legal approval that the register does not show.", HARD),
    ("fastjson", "score", STATUS_Q.format("fastjson"), STATUS3, "ok",
     "fastjson is MIT and its licence text is already in the NOTICE file."),
    ("ship", "yesno", "Can Ledger 4.2 ship today as it is?", YN, "no",
     "Despite the release manager's note, the statically linked libchart still lacks Legal approval.", HARD),
    ("fix", "choice", "What is needed before Ledger 4.2 can ship?",
     opts(("remove", "Remove fastjson"),
          ("libchart", "Legal approval for libchart, or linking it dynamically"),
          ("notice", "A NOTICE entry for fastjson"), ("nothing", "Nothing")), "libchart",
     "Only libchart falls short, and either Legal approval or dynamic linking puts it right."),
]))

GROUPS.append(("licence-compliance", LICENCE_POLICY + (
    "Review: the internal build dashboard, used only by Corvid engineers on the company network and never given to "
    "customers or partners.\nComponents:\n- graphlet (GPL-3.0), draws the build charts.\n- pyserve (AGPL-3.0), "
    "serves the dashboard pages.\nComponent register: no entries for the dashboard."), [
    ("graphlet", "yesno", "Is graphlet allowed in the dashboard?", YN, "yes",
     "GPL-3.0 is allowed in internal tools never given to anyone outside Corvid, which the dashboard is.", HARD),
    ("pyserve", "yesno", "Is pyserve allowed in the dashboard?", YN, "no",
     "AGPL-3.0 is not allowed anywhere, internal tools included.", HARD),
    ("pstatus", "score", STATUS_Q.format("pyserve"), STATUS3, "blocked",
     "pyserve is AGPL-3.0, which is not allowed anywhere, and no exception is recorded."),
    ("action", "choice", "Which change does the review require?",
     opts(("none", "None"), ("graphlet", "Remove graphlet"), ("both", "Remove graphlet and pyserve"),
          ("pyserve", "Remove pyserve")), "pyserve",
     "The internal tool may keep the GPL-3.0 graphlet, but the AGPL-3.0 pyserve must go."),
]))

GROUPS.append(("licence-compliance", LICENCE_POLICY + (
    "Release review: Corvid Mobile 2.0, an app shipped to customers through the app stores.\nComponent: tinyzip, "
    "copied from a public repository. The repository has no licence file; its README says \"Free for anyone to "
    "use, have fun!\"\nComponent register: no entry for tinyzip; Legal has not been asked."), [
    ("allowed", "yesno", "Is tinyzip allowed in Mobile 2.0 today?", YN, "no",
     "tinyzip has no licence file and Legal has not confirmed a licence, whatever the README says.", HARD),
    ("status", "score", STATUS_Q.format("tinyzip"), STATUS3, "blocked",
     "A component with no licence file is not allowed until Legal confirms its licence, which has not happened."),
    ("next", "choice", "What must happen before tinyzip can ship in Mobile 2.0?",
     opts(("notice", "Add the README text to the NOTICE file"), ("link", "Link it dynamically"),
          ("nothing", "Nothing, the README allows any use"), ("legal", "Legal must confirm its licence")), "legal",
     "The policy allows a component with no licence file only once Legal confirms its licence."),
]))

GROUPS.append(("licence-compliance", LICENCE_POLICY + (
    "Release review: Corvid Server 7, installed by customers on their own machines.\nComponents:\n- reqlib "
    "(Apache-2.0): licence text missing from the NOTICE file.\n- hashkit (BSD): licence text in the NOTICE file.\n- "
    "dbdriver (GPL-2.0).\nComponent register: \"dbdriver in Server 7: exception approved in writing by Legal, 12 "
    "March.\""), [
    ("dbdriver", "yesno", "Is dbdriver allowed in Server 7?", YN, "yes",
     "GPL-2.0 is normally barred from shipped products, but a written Legal exception for Server 7 is recorded.",
     HARD),
    ("reqlib", "score", STATUS_Q.format("reqlib"), STATUS3, "action",
     "Apache-2.0 is allowed, but its licence text must first be added to the NOTICE file."),
    ("count", "choice", "How many components still need an action before Server 7 ships?",
     opts(("zero", "None"), ("one", "One"), ("two", "Two"), ("three", "Three")), "one",
     "Only reqlib needs its NOTICE entry, since hashkit has one and dbdriver has a recorded exception.", HARD),
    ("hashkit", "yesno", "Does hashkit need any action before Server 7 ships?", YN, "no",
     "hashkit is BSD and its licence text is already in the NOTICE file."),
]))

GROUPS.append(("licence-compliance", LICENCE_POLICY + (
    "Review: Corvid Cloud, a hosted service that customers use through their web browsers; the software itself is "
    "never given to customers.\nComponents:\n- mapcore (AGPL-3.0), draws the maps.\n- colorize (MIT).\nComponent "
    "register: no entries for Corvid Cloud.\nEngineer's note: \"Nothing is shipped, so licences don't matter "
    "here.\""), [
    ("mapcore", "yesno", "Is mapcore allowed in Corvid Cloud?", YN, "no",
     "AGPL-3.0 is not allowed anywhere, hosted services included, even though no software is shipped.", HARD),
    ("mstatus", "score", STATUS_Q.format("mapcore"), STATUS3, "blocked",
     "mapcore is AGPL-3.0 with no recorded exception, so it is not allowed."),
    ("colorize", "yesno", "Is colorize allowed in Corvid Cloud?", YN, "yes",
     "MIT components are allowed, and the NOTICE duty applies only to products shipped to customers."),
]))

GROUPS.append(("licence-compliance", LICENCE_POLICY + (
    "Release review: Corvid Desk 3.1, shipped to customers.\nComponents:\n- audiofx (LGPL-2.1), dynamically "
    "linked.\n- parsekit (MIT), licence text in the NOTICE file.\n- xmlfast (LGPL-2.1), statically linked.\n"
    "Component register: \"xmlfast static linking in Desk 3.1: approved in writing by Legal, 3 February.\""), [
    ("xmlfast", "yesno", "Does xmlfast stop Desk 3.1 from shipping?", YN, "no",
     "Its static linking has the written Legal approval the policy asks for.", HARD),
    ("audiofx", "score", STATUS_Q.format("audiofx"), STATUS3, "ok",
     "audiofx is LGPL-2.1 and dynamically linked, which the policy allows with no further step."),
    ("approval", "choice", "Which component needed Legal approval under the policy?",
     opts(("parsekit", "parsekit"), ("xmlfast", "xmlfast"), ("audiofx", "audiofx"), ("none", "None of them")),
     "xmlfast", "Static linking of an LGPL-2.1 component needs Legal approval, and only xmlfast is statically linked."),
    ("ship", "yesno", "Can Desk 3.1 ship as it is?", YN, "yes",
     "Every component is allowed: audiofx is dynamic, parsekit has its NOTICE entry, and xmlfast is approved."),
]))

# --- parking-appeals --------------------------------------------------------
PARKING_RULES = (
    "Penalty charge rules (Marlow City Council):\n"
    "- A penalty charge is 70 EUR, reduced to 35 EUR if paid within 14 days of the date it was issued.\n"
    "- An appeal must reach us within 28 days of the issue date; a later appeal is rejected.\n"
    "- Paying the charge closes the case: no appeal is possible after payment.\n"
    "- An appeal succeeds only if the driver shows that the car was parked lawfully at the time (a valid ticket or "
    "permit, or the blue-badge allowance), that the signs were missing or unreadable, or that the car had broken "
    "down (with a recovery invoice).\n"
    "- Blue-badge holders may park free for up to 3 hours in a paid bay, with the badge and an arrival-time clock "
    "on display.\n"
    "- In a loading bay a vehicle may stay up to 20 minutes, and only while goods are being moved.\n\n")
OWE3 = opts(("nothing", "Nothing"), ("35", "35 EUR"), ("70", "70 EUR"))

GROUPS.append(("parking-appeals", PARKING_RULES + (
    "Penalty charge MC-1021, issued 3 May at 10:40 in a paid bay on Hollow Street. Not paid.\nAppeal received 20 "
    "May from the driver, Ruth Cole: \"I had paid!\" Attached: a photo of a pay-and-display ticket for that bay, "
    "valid 3 May from 09:30 to 11:30, showing the car's registration."), [
    ("time", "yesno", "Did the appeal reach the council in time?", YN, "yes",
     "It arrived on 20 May, 17 days after the 3 May issue date, within 28 days.", HARD),
    ("succeed", "yesno", "Should the appeal succeed?", YN, "yes",
     "The ticket was valid at 10:40, so the car was parked lawfully when the charge was issued."),
    ("owe", "score", "How much should Ruth pay once the appeal is decided by the rules?", OWE3, "nothing",
     "A successful appeal cancels the charge."),
    ("ground", "choice", "Which ground for a successful appeal does Ruth show?",
     opts(("signs", "Missing or unreadable signs"), ("lawful", "Parked lawfully with a valid ticket"),
          ("breakdown", "A breakdown with a recovery invoice"), ("badge", "The blue-badge allowance")), "lawful",
     "Her ticket covered 09:30 to 11:30 and the charge was issued at 10:40."),
]))

GROUPS.append(("parking-appeals", PARKING_RULES + (
    "Penalty charge MC-2210, issued 1 June in a paid bay on Mill Lane.\nPayment: 35 EUR received 10 June.\nAppeal "
    "received 15 June from the driver, Omar Haddad: \"The parking signs at the entrance are completely hidden by a "
    "hedge; see my photos. Please cancel the charge and refund me.\" The photos do show the signs covered by "
    "leaves."), [
    ("consider", "yesno", "Can the council still consider Omar's appeal?", YN, "no",
     "Omar paid on 10 June, and paying closes the case, however strong the photos are.", HARD),
    ("outcome", "choice", "What happens to Omar's appeal?",
     opts(("refund", "It succeeds and the 35 EUR is refunded"), ("late", "It is rejected as too late"),
          ("paid", "It is rejected because the charge has been paid"),
          ("court", "It is passed to a court")), "paid",
     "The appeal came within 28 days, but payment on 10 June had already closed the case.", HARD),
    ("more", "score", "How much more does Omar have to pay on this charge?", OWE3, "nothing",
     "He paid the reduced 35 EUR on 10 June, 9 days after issue, within the 14 days, which closed the case."),
]))

GROUPS.append(("parking-appeals", PARKING_RULES + (
    "Penalty charge MC-3305, issued 2 March in a paid bay on Station Road. Not paid.\nAppeal received 4 April from "
    "the driver, Felix Brandt: \"My car broke down there and I was waiting for the tow truck.\" Attached: a "
    "recovery invoice from Marlow Rescue dated 2 March for that car and street.\nToday is 4 April."), [
    ("time", "yesno", "Did the appeal reach the council in time?", YN, "no",
     "The 28 days from 2 March ended on 30 March, and the appeal came on 4 April.", HARD),
    ("why", "choice", "What is the reason to reject Felix's appeal?",
     opts(("ground", "He shows no valid ground"), ("paid", "He has already paid"),
          ("invoice", "He sent no recovery invoice"), ("late", "It reached the council too late")), "late",
     "A breakdown with a recovery invoice is a valid ground, but the appeal came after the 28 days.", HARD),
    ("owe", "score", "How much must Felix pay if he pays today?", OWE3, "70",
     "Today, 4 April, is 33 days after issue, past the 14 days for the 35 EUR rate.", HARD),
    ("ground", "choice", "Which ground does Felix's appeal rely on?",
     opts(("breakdown", "A breakdown with a recovery invoice"), ("signs", "Missing or unreadable signs"),
          ("ticket", "A valid ticket or permit"), ("badge", "The blue-badge allowance")), "breakdown",
     "Felix says his car broke down and attaches a recovery invoice for that day and street."),
]))

GROUPS.append(("parking-appeals", PARKING_RULES + (
    "Penalty charge MC-4418, issued 12 July at 15:10 in a paid bay on Castle Street. Not paid.\nWarden's notes: "
    "\"No pay-and-display ticket. Blue badge on the dashboard, clock set to 13:00.\"\nAppeal received 15 July from "
    "the driver, Agnes Moore: \"I'm a blue-badge holder and I had been there barely two hours.\""), [
    ("long", "yesno", "Had the car been there longer than the free blue-badge allowance when the charge was issued?",
     YN, "no", "From 13:00 to 15:10 is 2 hours 10 minutes, less than 3 hours.", HARD),
    ("succeed", "yesno", "Should the appeal succeed?", YN, "yes",
     "With the badge and clock on display and under 3 hours parked, the car was parked lawfully.", HARD),
    ("owe", "score", "How much should Agnes pay once the appeal is decided by the rules?", OWE3, "nothing",
     "The appeal succeeds, so the charge is cancelled."),
    ("ground", "choice", "Which rule decides this appeal?",
     opts(("signs", "Missing or unreadable signs"), ("ticket", "A valid pay-and-display ticket"),
          ("badge", "The 3-hour blue-badge allowance"), ("loading", "The loading-bay rule")), "badge",
     "Agnes had no ticket but displayed her blue badge and clock in a paid bay."),
]))

GROUPS.append(("parking-appeals", PARKING_RULES + (
    "Penalty charge MC-5502, issued 8 September at 09:00 to a courier van in the loading bay on Baker Street. Not "
    "paid.\nWarden's notes: \"Watched the van from 08:30 to 09:00. No goods were moved; the driver was in the café "
    "opposite.\"\nAppeal received 9 September from the driver: \"I was making a delivery.\""), [
    ("allowed", "yesno", "Was the van allowed to be in the loading bay when the charge was issued?", YN, "no",
     "It had stayed 30 minutes, over the 20 allowed, and no goods were being moved."),
    ("reason", "choice", "What is the best reason to reject the appeal?",
     opts(("loading", "The van stayed over 20 minutes with no goods being moved"),
          ("late", "The appeal came too late"), ("paid", "The charge was already paid"),
          ("ticket", "The van had no pay-and-display ticket")), "loading",
     "The appeal was on time and nothing was paid, but the warden saw 30 minutes with no goods moved."),
    ("pay", "score", "If the charge is paid on 18 September, how much is due?", OWE3, "35",
     "18 September is 10 days after the 8 September issue date, within the 14 days for the 35 EUR rate.", HARD),
]))

GROUPS.append(("parking-appeals", PARKING_RULES + (
    "Penalty charge MC-6630, issued 1 October in a paid bay on Quay Road. Not paid.\nAppeal received 5 October "
    "from the driver, Lina Berg: \"The pay machine was broken, so I couldn't buy a ticket.\" No photo or other "
    "proof is attached.\nCouncil machine log: the Quay Road machine sold 41 tickets on 1 October and reported no "
    "fault.\nToday is 20 October."), [
    ("ground", "yesno", "Does Lina show one of the grounds for a successful appeal?", YN, "no",
     "She shows no ticket, permit, badge, sign problem or breakdown, and the log shows the machine working."),
    ("time", "yesno", "Did the appeal reach the council in time?", YN, "yes",
     "It arrived on 5 October, 4 days after issue, well inside 28 days."),
    ("outcome", "choice", "What is the outcome of Lina's appeal?",
     opts(("succeeds", "It succeeds"), ("late", "It is rejected as too late"),
          ("noground", "It is rejected because no valid ground is shown"),
          ("paid", "It is rejected because the charge was paid")), "noground",
     "The appeal was on time and the charge unpaid, but Lina shows no ground the rules accept."),
    ("owe", "score", "How much must Lina pay if she pays today?", OWE3, "70",
     "Today, 20 October, is 19 days after the 1 October issue, past the 14 days for the 35 EUR rate.", HARD),
]))

# --- youth-sports -----------------------------------------------------------
LEAGUE_RULES = (
    "Registration rules (Riverdale Youth Football League, 2025-26 season):\n"
    "- Age groups go by a player's age on 31 August 2025: Under-10 (aged 8 or 9), Under-12 (10 or 11), Under-14 "
    "(12 or 13), Under-16 (14 or 15).\n"
    "- A player may also play one age group above their own, never below it.\n"
    "- The season fee is 120 EUR; a second or later child from the same family pays 90 EUR. Registrations made "
    "after 15 September 2025 add a 20 EUR late fee.\n"
    "- Before a first match a player needs a signed parental consent form and a photo on file.\n"
    "- A player transferring from another club may not play until 14 days after the league receives the transfer "
    "form.\n\n")
AGE4 = opts(("u10", "Under-10"), ("u12", "Under-12"), ("u14", "Under-14"), ("u16", "Under-16"))
AGE_Q = "Which age group is this player in by age?"
FEE4 = opts(("90", "90 EUR"), ("110", "110 EUR"), ("120", "120 EUR"), ("140", "140 EUR"))
FEE_LEAGUE_Q = "What fee is due for this registration?"

GROUPS.append(("youth-sports", LEAGUE_RULES + (
    "Registration R-0112. Player: Noah Brennan, born 14 March 2014.\nRegistered: 2 September 2025. Other children "
    "of the family in the league: none.\nConsent form: signed. Photo: on file.\nParent's note: \"Noah's best friend "
    "plays Under-14, can he join him?\""), [
    ("age", "score", AGE_Q, AGE4, "u12", "Noah is 11 on 31 August 2025, which puts him in Under-12.", HARD),
    ("fee", "score", FEE_LEAGUE_Q, FEE4, "120",
     "Noah is the family's first child and registered on 2 September, before the late-fee date."),
    ("up", "yesno", "May Noah play in the Under-14 team?", YN, "yes",
     "Under-14 is one age group above his own Under-12, which the rules allow."),
    ("teams", "choice", "In which age groups may Noah play?",
     opts(("u12-u14", "Under-12 or Under-14"), ("u10-u12", "Under-10 or Under-12"), ("u12", "Under-12 only"),
          ("u14", "Under-14 only")), "u12-u14",
     "He may play in his own Under-12 group or one above it, but never below it."),
]))

GROUPS.append(("youth-sports", LEAGUE_RULES + (
    "Registration R-0245. Player: Ava Lindqvist, born 2 October 2011.\nRegistered: 20 September 2025. Her brother "
    "Erik registered in August and is the family's first child in the league.\nConsent form: signed. Photo: not yet "
    "on file.\nAva's first match: 27 September 2025."), [
    ("age", "score", AGE_Q, AGE4, "u14",
     "Ava turns 14 only on 2 October 2025, so she is 13 on 31 August 2025, which is Under-14.", HARD),
    ("fee", "score", FEE_LEAGUE_Q, FEE4, "110",
     "As a second child Ava pays 90 EUR, plus 20 EUR because she registered after 15 September.", HARD),
    ("play", "yesno", "May Ava play in her first match as things stand?", YN, "no",
     "Her photo is not yet on file, and a player needs one before a first match."),
    ("missing", "choice", "What is still missing before Ava's first match?",
     opts(("consent", "The signed consent form"), ("photo", "A photo on file"),
          ("transfer", "The end of a transfer wait"), ("fee", "The late fee")), "photo",
     "The consent form is signed and she is not a transfer, but no photo is on file yet."),
]))

GROUPS.append(("youth-sports", LEAGUE_RULES + (
    "Registration R-0301. Player: Leo Martins, born 5 August 2010.\nRegistered: 1 September 2025. First child of "
    "the family in the league. Consent form and photo: on file.\nParent's note: \"All of Leo's school friends play "
    "Under-14, so please put him there.\""), [
    ("age", "score", AGE_Q, AGE4, "u16", "Leo turned 15 on 5 August 2025, so he is Under-16.", HARD),
    ("u14", "yesno", "May Leo play in the Under-14 team?", YN, "no",
     "Under-14 is below his own Under-16 group, and no player may play below their age group.", HARD),
    ("teams", "choice", "In which of the league's age groups may Leo play?",
     opts(("u14", "Under-14 only"), ("both", "Under-14 or Under-16"), ("u16", "Under-16 only"),
          ("any", "Any age group")), "u16",
     "Leo belongs to Under-16, the league has no older group, and he may not play below it."),
]))

GROUPS.append(("youth-sports", LEAGUE_RULES + (
    "Registration R-0388. Player: Mia Kowalski, born 30 August 2016.\nRegistered: 10 September 2025. First child of "
    "the family in the league. Consent form and photo: on file.\nCoach's note: \"Mia is tall for her age, she could "
    "train with the Under-12s.\""), [
    ("age", "score", AGE_Q, AGE4, "u10",
     "Mia turned 9 on 30 August 2025, the day before the cut-off, so she is Under-10.", HARD),
    ("fee", "score", FEE_LEAGUE_Q, FEE4, "120",
     "Mia is the first child and registered on 10 September, before the late-fee date."),
    ("u12", "yesno", "May Mia play in the Under-12 team?", YN, "yes",
     "Under-12 is one age group above her own Under-10."),
]))

GROUPS.append(("youth-sports", LEAGUE_RULES + (
    "Registration R-0420. Player: Ethan Doyle, born 1 January 2012, moving from Northside FC.\nTransfer form "
    "received by the league: 10 October 2025. Fee paid; consent form and photo on file.\nHis new team's next "
    "matches: 18 October, 25 October and 1 November 2025."), [
    ("first", "yesno", "May Ethan play on 18 October?", YN, "no",
     "18 October is only 8 days after the transfer form arrived on 10 October, short of 14 days.", HARD),
    ("earliest", "choice", "Which is the first of these matches Ethan may play?",
     opts(("oct18", "18 October"), ("oct25", "25 October"), ("nov1", "1 November"), ("none", "None of them")),
     "oct25", "25 October is 15 days after the form arrived on 10 October, past the 14-day wait.", HARD),
    ("age", "score", AGE_Q, AGE4, "u14", "Ethan is 13 on 31 August 2025, which is Under-14."),
]))

GROUPS.append(("youth-sports", LEAGUE_RULES + (
    "Registration R-0467. Player: Sofia Almeida, born 12 May 2015.\nRegistered: 5 September 2025. Her brother "
    "Lucas registered in August as the family's first child.\nConsent form: signed. Photo: on file.\nParent's "
    "question: \"Which teams can Sofia play for this season?\""), [
    ("fee", "score", FEE_LEAGUE_Q, FEE4, "90",
     "Sofia is the family's second child and registered before 15 September, so she pays 90 EUR with no late fee."),
    ("age", "score", AGE_Q, AGE4, "u12", "Sofia is 10 on 31 August 2025, which is Under-12."),
    ("late", "yesno", "Does Sofia's registration carry the late fee?", YN, "no",
     "She registered on 5 September, before the 15 September cut-off."),
    ("teams", "choice", "In which age groups may Sofia play?",
     opts(("u10", "Under-10 or Under-12"), ("u12", "Under-12 only"), ("u12-u14", "Under-12 or Under-14"),
          ("u14", "Under-14 only"), ("u16", "Under-16")), "u12-u14",
     "She may play in her own Under-12 group or one above it, Under-14."),
]))

# --- pool-chemistry ---------------------------------------------------------
POOL_RULES = (
    "Pool water rules (Seabrook Leisure Centre, main pool), tested every 2 hours:\n"
    "- Free chlorine target: 1.0 to 3.0 mg/L. Below 0.5 or above 5.0 mg/L: close the pool until it is back in "
    "target.\n"
    "- pH target: 7.2 to 7.6. Below 7.0 or above 7.8: close the pool until it is back in target.\n"
    "- A reading outside its target but not in the closing range: correct the dosing and retest within 30 minutes; "
    "the pool stays open.\n"
    "- Faecal incident: clear the pool at once, raise free chlorine to at least 2.0 mg/L, then keep the pool closed "
    "for 30 minutes after that level is reached for a solid stool, or 8 hours for diarrhoea.\n\n")
POOL3 = opts(("none", "No action needed"), ("retest", "Correct the dosing and retest within 30 minutes"),
             ("close", "Close the pool"))
POOL_Q = "What does this test result require?"

GROUPS.append(("pool-chemistry", POOL_RULES + (
    "Test log, 10:00. Free chlorine: 0.8 mg/L. pH: 7.4.\nPool: open, 23 swimmers, two lane sessions booked.\n"
    "Duty manager's note: \"Chlorine is a little low, but the dosing pump was serviced yesterday.\""), [
    ("action", "score", POOL_Q, POOL3, "retest",
     "A free chlorine of 0.8 is below the 1.0 target but not below the 0.5 closing limit.", HARD),
    ("close", "yesno", "Must the pool be closed?", YN, "no",
     "Neither reading is in its closing range: 0.8 is above 0.5 and pH 7.4 is in target."),
    ("which", "choice", "Which reading is outside its target?",
     opts(("ph", "pH only"), ("chlorine", "Free chlorine only"), ("both", "Both readings"), ("neither", "Neither")),
     "chlorine", "Free chlorine of 0.8 is below 1.0, while pH 7.4 lies inside 7.2 to 7.6."),
]))

GROUPS.append(("pool-chemistry", POOL_RULES + (
    "Test log, 14:00. Free chlorine: 2.2 mg/L. pH: 7.9.\nPool: open, school swimming lesson in progress.\nDuty "
    "manager's note: \"Water looks crystal clear and nobody has complained; the lesson ends at 14:45.\""), [
    ("action", "score", POOL_Q, POOL3, "close",
     "A pH of 7.9 is above the 7.8 closing limit, however clear the water looks.", HARD),
    ("chlorine", "yesno", "Is the free chlorine reading within its target?", YN, "yes",
     "A free chlorine of 2.2 mg/L lies inside 1.0 to 3.0."),
    ("reason", "choice", "Why must the pool be closed?",
     opts(("cl-low", "Free chlorine is below 0.5"), ("cl-high", "Free chlorine is above 5.0"),
          ("ph-high", "pH is above 7.8"), ("ph-low", "pH is below 7.0")), "ph-high",
     "The pH of 7.9 is above 7.8, while the chlorine is in target."),
    ("when", "choice", "When must the pool be closed?",
     opts(("1445", "At 14:45, when the lesson ends"), ("now", "Straight away"),
          ("retest", "Only if a retest within 30 minutes is still above 7.8"),
          ("1600", "At the next 2-hourly test, at 16:00")), "now",
     "A reading in the closing range closes the pool straight away, whatever lesson is running.", HARD),
]))

GROUPS.append(("pool-chemistry", POOL_RULES + (
    "Incident log. 11:15: solid stool found in the shallow end; pool cleared at 11:16 and closed.\n11:20: extra "
    "chlorine dosed.\n12:05: free chlorine 2.3 mg/L, pH 7.4.\n12:10: a swim club coach asks whether his session at "
    "12:20 can go ahead."), [
    ("reopen", "choice", "What is the earliest time the pool may reopen?",
     opts(("1145", "11:45"), ("1205", "12:05"), ("1235", "12:35"), ("2005", "20:05")), "1235",
     "For a solid stool the pool stays closed 30 minutes after 2.0 mg/L is reached at 12:05, so until 12:35.", HARD),
    ("session", "yesno", "May the 12:20 session go ahead in the pool?", YN, "no",
     "At 12:20 only 15 of the required 30 minutes have passed since 12:05.", HARD),
    ("level", "yesno", "Had free chlorine reached the level that starts the waiting time by 12:05?", YN, "yes",
     "At 12:05 free chlorine was 2.3 mg/L, at least the 2.0 required."),
]))

GROUPS.append(("pool-chemistry", POOL_RULES + (
    "Incident log. 09:00: a child with diarrhoea had an accident in the main pool; pool cleared and closed at "
    "09:02.\n09:10: extra chlorine dosed.\n10:30: free chlorine 2.0 mg/L, pH 7.3.\nThe 11:00 aqua-fit class has 30 "
    "people booked."), [
    ("reopen", "choice", "What is the earliest time the pool may reopen?",
     opts(("1100", "11:00"), ("1700", "17:00"), ("1900", "19:00"), ("1830", "18:30")), "1830",
     "For diarrhoea the pool stays closed 8 hours after 2.0 mg/L is reached at 10:30, so until 18:30.", HARD),
    ("class", "yesno", "May the 11:00 aqua-fit class use the pool?", YN, "no",
     "Thirty minutes would be enough for a solid stool, but diarrhoea needs 8 hours after 10:30.", HARD),
    ("wait", "score", "How long must the pool stay closed after free chlorine reaches 2.0 mg/L?",
     opts(("30m", "30 minutes"), ("2h", "2 hours"), ("8h", "8 hours")), "8h",
     "The incident was diarrhoea, which needs 8 hours."),
]))

GROUPS.append(("pool-chemistry", POOL_RULES + (
    "Test log, 16:00. Free chlorine: 5.4 mg/L. pH: 7.5.\nPool: open, 12 swimmers.\nNote: the dosing pump was "
    "turned up at 14:30 after the 14:00 test showed 0.9 mg/L."), [
    ("action", "score", POOL_Q, POOL3, "close", "A free chlorine of 5.4 mg/L is above the 5.0 closing limit."),
    ("ph", "yesno", "Is the pH reading within its target?", YN, "yes", "A pH of 7.5 lies inside 7.2 to 7.6."),
    ("what", "choice", "What should the duty manager do now?",
     opts(("nothing", "Nothing"), ("retest", "Correct the dosing and retest within 30 minutes, staying open"),
          ("close", "Close the pool until free chlorine is back within 1.0 to 3.0 mg/L"),
          ("raise", "Raise the chlorine further")), "close",
     "Free chlorine above 5.0 closes the pool until it is back in target."),
]))

GROUPS.append(("pool-chemistry", POOL_RULES + (
    "Test log, 12:00. Free chlorine: 1.8 mg/L. pH: 7.6.\nPool: open, public session.\nNote from the previous shift: "
    "\"pH has been creeping up all week, keep an eye on it.\""), [
    ("action", "score", POOL_Q, POOL3, "none",
     "Free chlorine of 1.8 is in target, and a pH of 7.6 is at the top of its target but still inside it.", HARD),
    ("retest", "yesno", "Does this result call for a retest within 30 minutes?", YN, "no",
     "Both readings are within their targets, so no correction or early retest is needed."),
    ("count", "choice", "How many readings in this test are outside their target?",
     opts(("zero", "None"), ("one", "One"), ("two", "Two")), "zero",
     "Free chlorine of 1.8 and pH 7.6 both lie inside their targets."),
]))

GROUPS.append(("pool-chemistry", POOL_RULES + (
    "Test log, 18:00. Free chlorine: 0.4 mg/L. pH: 6.9.\nPool: open, evening club training, 40 swimmers.\nNote: "
    "the chlorine delivery due this afternoon has not arrived."), [
    ("action", "score", POOL_Q, POOL3, "close",
     "Free chlorine of 0.4 is below 0.5 and pH 6.9 is below 7.0, both in their closing ranges."),
    ("both", "yesno", "Are both readings in their closing ranges?", YN, "yes",
     "Free chlorine of 0.4 is below 0.5 and pH 6.9 is below 7.0."),
    ("what", "choice", "What should the duty manager do?",
     opts(("retest", "Correct the dosing and retest within 30 minutes, staying open"),
          ("wait", "Wait for the chlorine delivery before deciding"), ("nothing", "Nothing"),
          ("close", "Close the pool until both readings are back in target")), "close",
     "Both readings are in their closing ranges, so the pool closes until they are back in target."),
]))

# --- vehicle-inspection -----------------------------------------------------
TEST_RULES = (
    "Roadworthiness test rules for cars (Kestrel Vehicle Testing):\n"
    "- Tyre tread depth of at least 1.6 mm on every tyre; less is a major defect.\n"
    "- Brake efficiency: service brake at least 50%, parking brake at least 16%; less on either is a major "
    "defect.\n"
    "- A headlamp aimed too high is a minor defect; a headlamp that does not work is a major defect.\n"
    "- Any brake fluid leak is a dangerous defect.\n"
    "- A car passes with no defects or only minor ones and fails with any major or dangerous defect. A car with a "
    "dangerous defect must not be driven away from the test centre.\n"
    "- A retest is free if the car returns within 10 working days (Monday to Friday) of the failed test with the "
    "failed items fixed; otherwise the full 55 EUR fee is charged.\n\n")
WORST4 = opts(("none", "No defect"), ("minor", "Minor"), ("major", "Major"), ("dangerous", "Dangerous"))
WORST_Q = "What is the most serious defect found in this test?"
PASS_Q = "Does the car pass the test?"

GROUPS.append(("vehicle-inspection", TEST_RULES + (
    "Test T-5101, car AB-123-C, 14 May 2025.\nTyre tread: front left 3.0 mm, front right 3.1 mm, rear left 1.4 "
    "mm, rear right 2.8 mm.\nBrakes: service 58%, parking 20%. No fluid leaks.\nLamps: all working; left headlamp "
    "aimed too high."), [
    ("worst", "score", WORST_Q, WORST4, "major",
     "The rear left tyre at 1.4 mm is below 1.6 mm, a major defect, and the headlamp aim is only minor.", HARD),
    ("pass", "yesno", PASS_Q, YN, "no", "The rear left tyre below 1.6 mm is a major defect, which fails the car."),
    ("defects", "choice", "Which defects did the test find?",
     opts(("minor", "One minor defect only"), ("major-minor", "One major and one minor defect"),
          ("two-major", "Two major defects"), ("none", "No defects")), "major-minor",
     "The 1.4 mm tyre is a major defect and the high-aimed headlamp a minor one."),
    ("drive", "yesno", "May the owner drive the car away from the test centre?", YN, "yes",
     "The car failed, but only a dangerous defect stops it being driven away, and it has none.", HARD),
]))

GROUPS.append(("vehicle-inspection", TEST_RULES + (
    "Test T-5188, car CD-456-E, 20 May 2025.\nTyre tread: 2.5 mm on all four tyres.\nBrakes: service 52%, parking "
    "15%. No fluid leaks.\nLamps: all working and correctly aimed.\nOwner's comment: \"The brakes were all replaced "
    "last year.\""), [
    ("pass", "yesno", PASS_Q, YN, "no", "The parking brake at 15% is below the 16% minimum, a major defect.", HARD),
    ("worst", "score", WORST_Q, WORST4, "major", "A parking brake below 16% is a major defect."),
    ("item", "choice", "Which item makes the car fail?",
     opts(("tread", "Tyre tread"), ("service", "Service brake"), ("parking", "Parking brake"),
          ("lamp", "Headlamps")), "parking",
     "The service brake at 52% meets its 50% minimum, but the parking brake at 15% misses its 16%.", HARD),
]))

GROUPS.append(("vehicle-inspection", TEST_RULES + (
    "Test T-5230, car EF-789-G, 22 May 2025.\nTyre tread: 4.0 mm on all four tyres.\nBrakes: service 64%, parking "
    "22%. Brake fluid leaking from the rear left brake pipe.\nLamps: all working and correctly aimed.\nOwner: \"My "
    "garage is only two streets away, I'll drive it straight there.\""), [
    ("worst", "score", WORST_Q, WORST4, "dangerous", "Any brake fluid leak is a dangerous defect."),
    ("drive", "yesno", "May the owner drive the car to the garage?", YN, "no",
     "A car with a dangerous defect must not be driven away, however short the trip.", HARD),
    ("result", "choice", "What is the result of the test?",
     opts(("pass", "Pass"), ("pass-minor", "Pass with a minor defect"), ("fail-major", "Fail with a major defect"),
          ("fail-danger", "Fail with a dangerous defect; the car must not be driven away")), "fail-danger",
     "The brake fluid leak is a dangerous defect, which fails the car and keeps it off the road."),
]))

GROUPS.append(("vehicle-inspection", TEST_RULES + (
    "Test T-5302, car GH-012-J, 27 May 2025.\nTyre tread: 1.6 mm on all four tyres.\nBrakes: service 60%, parking "
    "25%. No fluid leaks.\nLamps: all working; right headlamp aimed too high.\nTester's note: \"Tyres are right on "
    "the limit, advise the owner to replace them soon.\""), [
    ("pass", "yesno", PASS_Q, YN, "yes",
     "Tread of exactly 1.6 mm meets the minimum, and a high-aimed headlamp is only a minor defect.", HARD),
    ("worst", "score", WORST_Q, WORST4, "minor", "The only defect is the headlamp aimed too high, which is minor.",
     HARD),
    ("result", "choice", "What is the result of the test?",
     opts(("pass-minor", "Pass with a minor defect"), ("fail-major", "Fail with a major defect"),
          ("fail-danger", "Fail with a dangerous defect"), ("pass", "Pass with no defects")), "pass-minor",
     "The tyres meet the 1.6 mm minimum and the headlamp aim is a minor defect, so the car passes with it."),
]))

GROUPS.append(("vehicle-inspection", TEST_RULES + (
    "Car JK-345-L failed test T-5120 on Tuesday 3 June 2025: service brake 45%, all other items fine.\nThe brakes "
    "were repaired on 12 June. The car came back for a retest on Monday 16 June 2025.\nRetest results: service brake "
    "55%, parking brake 21%, all other items unchanged. There were no public holidays in June."), [
    ("free", "yesno", "Is the retest free?", YN, "yes",
     "Monday 16 June is 9 working days after Tuesday 3 June, within 10, and the brakes were fixed.", HARD),
    ("gap", "score", "How many working days after the failed test did the car come back?",
     opts(("1-5", "1 to 5 working days"), ("6-10", "6 to 10 working days"), ("11-plus", "11 or more working days")),
     "6-10", "Counting Monday to Friday from 4 June to 16 June gives 9 working days.", HARD),
    ("pass", "yesno", "Does the car pass the retest?", YN, "yes",
     "The service brake now reaches 55%, above 50%, and nothing else was found."),
    ("fee", "choice", "What should the retest cost?",
     opts(("free", "Nothing"), ("half", "27.50 EUR"), ("full", "55 EUR"), ("double", "110 EUR")), "free",
     "The car came back after 9 working days, within 10, with the failed brakes fixed.", HARD),
]))

GROUPS.append(("vehicle-inspection", TEST_RULES + (
    "Car LM-678-N failed test T-4980 on Friday 2 May 2025: left headlamp not working, all other items fine.\nThe "
    "bulb was replaced the same week. The owner was away and brought the car back for a retest on Monday 26 May "
    "2025. There were no public holidays in May.\nOwner: \"It was fixed within days, the retest should be free.\""), [
    ("free", "yesno", "Is the retest free?", YN, "no",
     "Monday 26 May is 16 working days after Friday 2 May, more than 10, even though the lamp was fixed quickly.",
     HARD),
    ("fee", "choice", "What should the retest cost?",
     opts(("free", "Nothing"), ("half", "27.50 EUR"), ("full", "55 EUR"), ("double", "110 EUR")), "full",
     "The car came back after more than 10 working days, so the full 55 EUR fee is charged.", HARD),
    ("worst", "score", "What was the most serious defect found in the failed test?", WORST4, "major",
     "A headlamp that does not work is a major defect."),
]))

GROUPS.append(("vehicle-inspection", TEST_RULES + (
    "Test T-5415, car PQ-901-R, 4 June 2025.\nTyre tread: front tyres 5.2 mm, rear tyres 4.8 mm.\nBrakes: service "
    "71%, parking 30%. No fluid leaks.\nLamps: all working and correctly aimed.\nOwner's comment: \"First test on "
    "this car since I bought it.\""), [
    ("worst", "score", WORST_Q, WORST4, "none",
     "Every tyre, brake and lamp meets its standard, so no defect is found."),
    ("pass", "yesno", PASS_Q, YN, "yes", "The car has no defects at all."),
    ("result", "choice", "What is the result of the test?",
     opts(("fail-major", "Fail with a major defect"), ("pass-minor", "Pass with a minor defect"),
          ("fail-danger", "Fail with a dangerous defect"), ("pass", "Pass with no defects")), "pass",
     "All readings meet the standards and the lamps work and are aimed correctly."),
]))


def rows_heldout3():
    return rows_from(GROUPS)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    dump(os.path.join(here, "heldout3.jsonl"), rows_heldout3())


if __name__ == "__main__":
    main()
