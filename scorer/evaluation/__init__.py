"""Judging decisions against labels, from records alone (no model): the metrics, the tables for people, the
perturbations of rows, and the reports ``semif eval``, ``order``, ``route`` and ``compare`` write.

* :mod:`~scorer.evaluation.metrics` — accuracy, balanced accuracy, F1, NLL, Brier, ECE, bootstrap intervals;
* :mod:`~scorer.evaluation.tables` — readable tables of records;
* :mod:`~scorer.evaluation.perturb` — deterministic perturbations of rows (order, wording);
* :mod:`~scorer.evaluation.before_after` — a raw readout and its calibrated view, paired;
* :mod:`~scorer.evaluation.report_files` — what every evaluation report shares;
* :mod:`~scorer.evaluation.eval_report`, :mod:`~scorer.evaluation.order_report`,
  :mod:`~scorer.evaluation.route_report`, :mod:`~scorer.evaluation.compare` — one report kind each.

A new report kind is a module here (its writer) and one drawing function in :mod:`scorer.site.charts`.
"""
