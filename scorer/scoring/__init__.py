"""The scoring engine: decisions in, records out, on any backend, in three modes.

* :mod:`~scorer.scoring.options` — what a scorer and a run are (:class:`~scorer.scoring.options.ScorerOptions`,
  the one options object every face builds from) and what names a run;
* :mod:`~scorer.scoring.radix_cache` — prefilled states reused at any depth;
* :mod:`~scorer.scoring.modes` — direct, serial and shared scoring, written once over the backend contract;
* :mod:`~scorer.scoring.sequence` — the full-sequence readout; :mod:`~scorer.scoring.permuted` — option orderings;
* :mod:`~scorer.scoring.drift`, :mod:`~scorer.scoring.exact` — how far the fast paths drift, and re-scoring what
  drift could flip;
* :mod:`~scorer.scoring.routing` — two engines, escalating by the one rule;
* :mod:`~scorer.scoring.presets` — committed configurations;
* :mod:`~scorer.scoring.file_run` — a run into a records file, resumable;
* :mod:`~scorer.scoring.systemone_wire`, :mod:`~scorer.scoring.systemone_run` — the same records file from a remote
  TypeSafe System One decision API (its probabilities, no logits: no backend, an engine of its own);
* :mod:`~scorer.scoring.generation` — generated answers (the versus lanes).
"""
