"""The decision domain, as plain math over a record's numbers: question types, the readout from logits to a typed
decision, the order-averaged readout, and the one rule for when a decision may be acted on. No I/O, no model.

* :mod:`~scorer.decision.readout` — from one position's logits to probabilities over the declared options;
* :mod:`~scorer.decision.permute` — merging the readouts of several option orderings;
* :mod:`~scorer.decision.policy` — acting readout, the one escalation rule, abstention policies;
* :mod:`~scorer.decision.questions` — question types (choice, yes/no, score), options in any form, typed answers.

A new question type goes in :mod:`~scorer.decision.questions` (its spec, its answer) and, if it reads the logits
differently, a readout here.
"""
