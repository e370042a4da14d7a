"""The ground floor: what every other package may use and that knows nothing of decisions. Standard library plus
orjson; no model, no numpy.

Modules, in the order a run meets them:

* :mod:`~scorer.core.errors` — the errors the command line turns into one line and an exit status;
* :mod:`~scorer.core.checks` — one check per option value, one message (``threads: 0 is not an integer >= 1``);
* :mod:`~scorer.core.jsonl` — input documents and JSONL files decoded strictly (line numbers, repeated keys);
* :mod:`~scorer.core.package_data` — the data files shipped inside the package;
* :mod:`~scorer.core.hashing` — sha256 and canonical JSON, the one home of both;
* :mod:`~scorer.core.io` — create-only outputs, locks, atomic writes, resume points;
* :mod:`~scorer.core.progress` — progress bars on stderr;
* :mod:`~scorer.core.threads` — how many CPU threads the kernels run and how they wait (the OpenMP wait policy);
* :mod:`~scorer.core.machine` — what the machine and its libraries are, for reports.
"""
