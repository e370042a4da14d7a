"""The trace formats ``semif-trace-v1`` and ``semif-trace-v2``: write, load, verify, summarise, export.

A trace is plain JSON (schemas ``scorer/formats/schemas/trace-v1.json``, ``trace-v2.json``) that holds one versus
experiment: where it ran, what it ran, every run of every path with its timestamps and logit evidence,
and the summary medians. v1 has two paths (typed, generated); v2, which ``semif versus`` writes, has
three (typed, free, constrained), labels and right/wrong per decision, optional calibrated typed
probabilities with their provenance, and a capped/invalid verdict per generated run. Both verify,
summarise and export. Nothing here needs torch: a trace can be checked and rendered anywhere.

Checksums are sha256 over *canonical JSON*: UTF-8, object keys sorted, no whitespace, numbers as
orjson writes them (``orjson.dumps(x, option=OPT_SORT_KEYS)``). ``verify`` recomputes them, checks
the schema, and re-derives what can be re-derived (the parse of each generated output, per-criterion
agreement, the summary) so a trace whose numbers were edited by hand does not verify.

The package is split by what it does: :mod:`~scorer.trace.format` (format names, canonical JSON, checksums,
schemas), :mod:`~scorer.trace.derive` (what fields are derived from), :mod:`~scorer.trace.summary` (the
summary block and its text), :mod:`~scorer.trace.files` (finalize, write, load), :mod:`~scorer.trace.verify`
and :mod:`~scorer.trace.export` (Chrome/Perfetto). Everything public is importable from ``scorer.trace``.
"""

from __future__ import annotations

from scorer.trace.derive import (
    agreement,
    calibrated_block,
    event_t,
    labels_correct,
    measured,
    parse_array,
    token_limit,
    verdict,
)
from scorer.trace.export import to_chrome
from scorer.trace.files import MAX_DEPTH, _check_depth, dumps, finalize, load, write
from scorer.trace.format import (
    ANSWERS,
    FORMATS,
    GENERATED_EVENTS,
    GENERATED_PATHS,
    TRACE_FORMAT,
    TRACE_FORMAT_V2,
    TYPED_EVENTS,
    canonical,
    checksums,
    experiment_id,
    inputs_digest,
    schema,
    schema_errors,
    sha256_json,
    trace_name,
)
from scorer.trace.summary import compute_summary, compute_summary_v2, summary_text
from scorer.trace.verify import SOFTMAX_TOL, _check_softmax, load_verified, verify

__all__ = [
    "ANSWERS", "FORMATS", "GENERATED_EVENTS", "GENERATED_PATHS", "MAX_DEPTH", "SOFTMAX_TOL", "TRACE_FORMAT",
    "TRACE_FORMAT_V2", "TYPED_EVENTS", "_check_depth", "_check_softmax", "agreement", "calibrated_block", "canonical",
    "checksums", "compute_summary", "compute_summary_v2", "dumps", "event_t", "experiment_id", "finalize",
    "inputs_digest", "labels_correct", "load", "load_verified", "measured", "parse_array", "schema", "schema_errors",
    "sha256_json", "summary_text", "to_chrome", "token_limit", "trace_name", "verdict", "verify", "write",
]
