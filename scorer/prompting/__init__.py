"""How a decision becomes tokens: prompt versions rendered with the model's own chat template, layouts (where state,
question and demonstrations go), demonstrations, the reference tokenizer, and the generated lanes' grammar.

* :mod:`~scorer.prompting.prompt` — prompt versions, answer slots, rendering, encoding, hashes;
* :mod:`~scorer.prompting.tokenizer` — the reference tokenizer every backend encodes with;
* :mod:`~scorer.prompting.layouts` — state-major, question-major, auto;
* :mod:`~scorer.prompting.demos` — labelled demonstrations chosen per decision;
* :mod:`~scorer.prompting.grammar` — the constrained lane's JSON-array grammar.

A new way of asking (a layout, an answer slot) is a prompt version here; its readout lives in
:mod:`scorer.decision.readout` and, when it needs the model's help, :mod:`scorer.scoring`.
"""
