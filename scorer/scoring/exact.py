"""The ``--exact`` policy: re-score on the fresh path every fast-path decision that drift could have flipped.

A fast-path decision whose margin is at least the bound (:func:`scorer.scoring.drift.exact_bound`, from the
drift measured by a ``semif drift`` report of this very configuration or by a probe of the run's first
rows) has the fresh path's choice; every other one is re-scored fresh. Used by ``semif score --exact``,
``semif bench`` and ``semif versus`` (where it is on by default). See :mod:`scorer.scoring.drift` for why
the bound holds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scorer.backends.base import Backend
from scorer.core.errors import InputError, ValidationError
from scorer.scoring.drift import (
    DEFAULT_PROBE_ROWS,
    DEFAULT_SAFETY,
    ESCALATION_RULE,
    FAST_MODES,
    compare,
    dtype_epsilon,
    exact_bound,
    fast_tokens,
    identity_mismatch,
    load_report,
    numerics_identity,
)
from scorer.scoring.modes import Item, kernel_name, make_record, score_items

# Readout fields an escalation replaces; the fast path's values are kept under ``fast_path``.
_FAST_KEYS = ("kernel", "probabilities", "option_logits", "choice", "margin", "tie", "tied_option_ids",
              "allowed_token_mass", "full_vocab_argmax", "timing")


@dataclass
class ExactPolicy:
    """Re-score on the fresh path every fast-path decision whose margin is below a measured bound."""

    safety: float = DEFAULT_SAFETY
    """Multiplier (>= 1) on 2 × the measured max |Δp|."""
    probe_rows: int = DEFAULT_PROBE_ROWS
    """Without a drift report: how many leading rows to score both ways to measure δ."""
    report: Path | None = None
    """A drift report of this very configuration (identity checked); replaces the probe."""
    bound: float | None = None
    """The escalation bound, set by :meth:`calibrate`."""
    block: dict[str, Any] = field(default_factory=dict)
    """What every record of the run carries under ``exact``."""
    probe_s: float = 0.0
    """Seconds the probe took (0 with a drift report)."""
    probe_tokens: int = 0
    """Tokens the probe ran through the model: its rows fresh, plus their fast path (each prefix once)."""
    escalated: int = 0
    """Decisions re-scored so far."""
    escalate_s: float = 0.0
    """Seconds spent re-scoring them."""
    _fresh: dict[int, np.ndarray] = field(default_factory=dict)
    """Fresh logits of probed rows, by item index (reused if such a row escalates)."""
    _report_sha: str | None = None

    def config(self) -> dict[str, Any]:
        """What must match for ``--resume`` (goes into the run's config hash)."""
        if self.report is not None:
            _, sha = load_report(self.report)
            return {"safety": self.safety, "drift_report_sha256": sha}
        return {"safety": self.safety, "probe_rows": self.probe_rows}

    def calibrate(self, backend: Backend, items: list[Item], mode: str, max_batch_tokens: int) -> None:
        """Set the bound: from the drift report (refused unless it was measured under this very
        configuration) or by scoring the first ``probe_rows`` rows both ways."""
        if mode not in FAST_MODES:
            raise ValidationError(f"--exact applies to the fast modes ({', '.join(FAST_MODES)}); mode {mode!r} "
                                  "already is the fresh path")
        dtype = backend.logits_dtype
        if self.report is not None:
            rep, sha = load_report(self.report)
            want = numerics_identity(backend, mode, max_batch_tokens)
            bad = identity_mismatch(rep["identity"], want)
            if bad:
                raise InputError(str(self.report), None, f"identity.{bad.split(':', 1)[0]}",
                                 f"measured under another configuration ({bad})",
                                 "a drift report of this model, backend, dtype, threads, libraries, CPU, mode and "
                                 "batch budget (run `semif drift` with the same options)")
            delta = float(rep["summary"]["max_abs_dp"])
            self._report_sha = sha
            self.block = {"source": "drift-report", "drift_report": str(self.report), "drift_report_sha256": sha,
                          "measured_rows": int(rep["summary"]["rows"])}
        else:
            if self.probe_rows < 1:
                raise ValidationError(f"--exact-probe {self.probe_rows} (expected >= 1 row, or pass --drift-report)")
            t0 = time.perf_counter()
            probe = items[: min(self.probe_rows, len(items))]
            # The probe's records are scored like the run's own (the same group prefixes, same kernel), in
            # memory; its fresh logits are kept so an escalated probe row costs nothing more.
            fast = list(score_items(backend, probe, mode, {"config_sha256": "probe"}, 0, max_batch_tokens))
            info = backend.model_info()
            fresh = []
            for it in probe:
                self._fresh[it.index] = backend.score_fresh(it.prompt.ids, want=it.prompt.slot_ids)
                fresh.append(make_record(it, self._fresh[it.index], backend, info, "direct",
                                         {"encode_s": 0.0, "forward_s": 0.0, "total_s": 0.0}, None,
                                         {"config_sha256": "probe"}))
            delta = compare(fresh, fast)["max_abs_dp"]
            self.probe_tokens = sum(len(it.prompt.ids) for it in probe) + fast_tokens(fast)
            self.probe_s = time.perf_counter() - t0
            self.block = {"source": "probe", "probe_rows": len(probe), "probe_s": round(self.probe_s, 6)}
        self.bound = exact_bound(delta, dtype, self.safety)
        self.block = {"bound": self.bound, "max_abs_dp": delta, "safety": self.safety,
                      "dtype_epsilon": dtype_epsilon(dtype), "rule": ESCALATION_RULE, **self.block}

    def escalates(self, rec: dict[str, Any]) -> bool:
        if self.bound is None:
            raise ValidationError("ExactPolicy.calibrate must run before escalation")
        return bool(rec["tie"]) or float(rec["margin"]) < self.bound

    def apply(self, backend: Backend, items: list[Item], mode: str,
              records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """Pass records through, re-scoring fresh those under the bound (order and fields kept)."""
        info = backend.model_info()
        for rec in records:
            if not self.escalates(rec):
                yield {**rec, "exact": self.block}
                continue
            idx = int(rec["run"]["index"])
            it = items[idx]
            t0 = time.perf_counter()
            logits = self._fresh.get(idx)
            from_probe = logits is not None
            if logits is None:
                logits = backend.score_fresh(it.prompt.ids, want=it.prompt.slot_ids)
            dt = time.perf_counter() - t0
            t = dict(rec["timing"])
            timing = {**t, "escalate_s": dt, "forward_s": t["forward_s"] + dt, "total_s": t["total_s"] + dt}
            # the fast path's prefix fields stay: they say what the fast pass reused
            cache: dict[str, Any] = {k: rec[k] for k in ("prefix_tokens", "suffix_tokens", "cache_hit",
                                                         "prefix_sha256", "cache") if k in rec}
            run = {k: v for k, v in rec["run"].items() if k != "index"}
            new = make_record(it, logits, backend, info, mode, timing, cache, run)
            new.update(escalated=True, kernel=kernel_name(backend, "direct"),
                       fast_path={k: rec[k] for k in _FAST_KEYS},
                       exact={**self.block, "fresh_from": "probe" if from_probe else "rescore"})
            self.escalated += 1
            self.escalate_s += dt
            yield new
