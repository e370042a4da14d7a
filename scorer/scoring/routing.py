"""Live two-path routing (``semif score --fast SPEC --accurate SPEC --escalate-below M``).

Every decision is scored on the fast engine; a decision whose margin (the calibrated margin when the fast SPEC
has a calibration) is below the threshold, or that is a tie, is re-scored on the accurate engine inside the same
run, before its record is written. The record's top-level readout is the one that decided; ``route`` says which
engine decided and why, and keeps the other readout (``route.fast`` for an escalated decision: its probabilities,
logits, choice, margin, calibrated block, model and timing), so both are auditable from the record alone.

A :class:`RoutePolicy` is a :class:`~scorer.scoring.options.RecordPolicy`, like ``--exact``: it sees the fast records
in input order and replaces some of them. Escalations are batched (a window of :data:`WINDOW` consecutive fast
records) so an accurate engine in shared mode prefills a state once for all of that state's escalated
criteria. The accurate prompts are rendered and validated for every row before anything is scored.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorer.backends.base import Backend
from scorer.calibration.apply import check_decisions
from scorer.calibration.core import Calibration
from scorer.calibration.temperature import group_folds
from scorer.core.errors import InputError, ValidationError
from scorer.decision.policy import acting, escalates
from scorer.evaluation import metrics
from scorer.prompting.demos import Demos
from scorer.prompting.layouts import STATE_MAJOR
from scorer.scoring.modes import DEFAULT_MAX_BATCH_TOKENS, Item, prepare, score_items

WINDOW = 32
"""Fast records buffered before their escalations are scored together."""
_READOUT = ("probabilities", "option_logits", "choice", "margin", "tie", "tied_option_ids", "allowed_token_mass",
            "full_vocab_argmax", "score_kind", "prompt_sha256", "tokens_sha256", "signature", "mode", "kernel",
            "timing", "calibrated")


def read_threshold(path: Path) -> float:
    """The threshold of a ``semif route --threshold-output`` file (a ``route-threshold`` report), checked."""
    import orjson


    try:
        rep = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise InputError(str(path), None, None, f"not JSON ({exc})",
                         "a `semif route --threshold-output` file") from None
    if not isinstance(rep, dict) or rep.get("kind") != "route-threshold":
        raise InputError(str(path), None, "kind", f"{rep.get('kind') if isinstance(rep, dict) else rep!r}",
                         '"route-threshold" (a file written by `semif route --threshold-output`)')
    t = rep.get("threshold")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= float(t) <= 1:
        raise InputError(str(path), None, "threshold", f"{t!r}", "a margin from 0 to 1")
    return float(t)


def check_threshold(value: float, where: str = "--escalate-below") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= float(value) <= 1:
        raise ValidationError(f"{where} {value!r} (expected a margin from 0 to 1)")
    return float(value)


def _engine(info: dict[str, Any]) -> dict[str, Any]:
    got = info.get("engine")
    eng: dict[str, Any] = got if isinstance(got, dict) else {}
    return {"key": info.get("key"), "backend": info.get("backend"), "dtype": info.get("dtype"),
            "gguf_sha256": info.get("gguf_sha256"), "engine": eng.get("kind"), "version": eng.get("version"),
            "base_url": eng.get("base_url")}


@dataclass
class RoutePolicy:
    """Escalate low-margin fast decisions to ``accurate`` (see the module docstring)."""

    accurate: Backend
    """The accurate engine."""
    threshold: float
    """Escalate when the (calibrated) fast margin is below this, or on a tie."""
    accurate_mode: str = "direct"
    """How the accurate engine scores the escalated rows (direct, serial or shared)."""
    fast_calibration: Calibration | None = None
    """Applied to every fast record before the margin is read."""
    accurate_calibration: Calibration | None = None
    """Applied to every accurate record."""
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    """Shared mode on the accurate engine: suffix tokens per pass."""
    threshold_source: str | None = None
    """Where the threshold came from (a number given, or a `semif route` threshold file and its sha256)."""
    demos: Demos | None = None
    """The run's demonstrations, rendered for the accurate engine too."""
    _items: list[Item] = field(default_factory=list)
    escalated: int = 0
    """Decisions escalated so far (this process)."""

    def __post_init__(self) -> None:
        self.threshold = check_threshold(self.threshold)

    def config(self) -> dict[str, Any]:
        info = self.accurate.model_info()
        ident = {k: info.get(k) for k in ("key", "source", "gguf_sha256", "revision", "dtype", "device", "backend")}
        if isinstance(info.get("engine"), dict):
            ident["engine"] = {k: info["engine"].get(k) for k in ("kind", "version", "served_model")}
        return {"threshold": self.threshold, "accurate": ident, "accurate_mode": self.accurate_mode,
                "fast_calibration": self.fast_calibration.source.get("sha256") if self.fast_calibration else None,
                "accurate_calibration": (self.accurate_calibration.source.get("sha256")
                                         if self.accurate_calibration else None)}

    def calibrate(self, backend: Backend, items: list[Item], mode: str, max_batch_tokens: int) -> None:
        """Render and validate every row for the accurate engine in the fast run's layout, with its demonstrations
        (before any record is written); check that the calibrations cover the rows on their own engine."""
        decisions = [it.decision for it in items]
        layout = items[0].prompt.layout if items else STATE_MAJOR  # resolved: what the fast engine renders
        self._items = prepare(self.accurate, decisions, with_prefix=self.accurate_mode != "direct", layout=layout,
                              demos=self.demos)

        if self.fast_calibration is not None:
            check_decisions(self.fast_calibration, decisions, backend.model_info(), 1)
        if self.accurate_calibration is not None:
            check_decisions(self.accurate_calibration, decisions, self.accurate.model_info(), 1)

    def apply(self, backend: Backend, items: list[Item], mode: str,
              records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        window: list[dict[str, Any]] = []
        for rec in records:
            if self.fast_calibration is not None:
                rec = self.fast_calibration.apply(rec)
            window.append(rec)
            if len(window) >= WINDOW:
                yield from self._route(backend, window)
                window = []
        if window:
            yield from self._route(backend, window)

    def _route(self, fast: Backend, window: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        up = [rec for rec in window if escalates(rec, self.threshold)]  # the acting (calibrated) margin
        acc: dict[int, dict[str, Any]] = {}
        if up:
            sel = [self._items[int(rec["run"]["index"])] for rec in up]
            sub = [Item(k, it.decision, it.prompt, it.encode_s, it.prefix) for k, it in enumerate(sel)]
            run = {"config_sha256": "route-accurate"}
            for rec, a in zip(up, score_items(self.accurate, sub, self.accurate_mode, run, 0, self.max_batch_tokens),
                              strict=True):
                if self.accurate_calibration is not None:
                    a = self.accurate_calibration.apply(a)
                acc[int(rec["run"]["index"])] = a
        fast_engine = _engine(fast.model_info())
        acc_engine = _engine(self.accurate.model_info()) if up else None
        for rec in window:
            idx = int(rec["run"]["index"])
            r = acting(rec)
            used = "calibrated" if r is not rec else "raw"
            route: dict[str, Any] = {"policy": "margin", "threshold": self.threshold,
                                     "threshold_source": self.threshold_source, "margin_used": used,
                                     "fast_margin": r["margin"], "fast_tie": r["tie"], "fast_engine": fast_engine}
            hit = acc.get(idx)
            if hit is None:
                route.update(path="fast", decided_by="fast",
                             why=f"fast {used} margin {r['margin']:.4f} >= {self.threshold:g}")
                yield {**rec, "escalated": False, "route": route}
                continue
            a = hit
            self.escalated += 1
            why = ("a tie on the fast engine" if r["tie"]
                   else f"fast {used} margin {r['margin']:.4f} < {self.threshold:g}")
            route.update(path="reference", decided_by="accurate", why=why, accurate_engine=acc_engine,
                         fast={k: rec[k] for k in _READOUT if k in rec} | {"model": _engine(rec["model"])})
            t_fast, t_acc = float(rec["timing"]["total_s"]), float(a["timing"]["total_s"])
            timing = {**a["timing"], "total_s": round(t_fast + t_acc, 6), "fast_total_s": round(t_fast, 6),
                      "accurate_total_s": round(t_acc, 6)}
            yield {**a, "run": rec["run"], "extra": rec.get("extra", a.get("extra")), "timing": timing,
                   "escalated": True, "route": route}


# --- choosing the threshold out of fold (semif route --threshold-output) --------------------------------------------
def routed(fast: dict[str, dict[str, Any]], ref: dict[str, dict[str, Any]], ids: list[str],
           threshold: float) -> list[dict[str, Any]]:
    """The records live routing would act on at ``threshold`` (the acting readout of the fast record, or of the
    reference record when the fast one's acting margin is below it or a tie), shaped for :func:`metrics.align`."""
    out = []
    for rid in ids:
        f = fast.get(rid)
        esc = f is None or bool(acting(f)["tie"]) or float(acting(f)["margin"]) < threshold
        src = ref.get(rid) if esc else f
        if src is None:
            continue
        a = acting(src)
        out.append({**src, "choice": a["choice"], "probabilities": a["probabilities"], "margin": a["margin"],
                    "tie": a["tie"], "escalated": esc})
    return out


def choose_threshold(fast: list[dict[str, Any]], ref: list[dict[str, Any]], labels: list[Any],
                     candidates: tuple[float, ...], folds: int = 5) -> dict[str, Any]:
    """The margin threshold that maximises balanced accuracy (ties: the smallest share escalated), chosen on
    group-disjoint training folds and judged on each held-out fold, then chosen on all rows for deployment.
    Balanced accuracy is taken within each family and averaged over families (what ``semif eval`` reports): an
    option letter means different things in different families, so pooling them would let a letter that is
    gold once in one family weigh as much as one gold in half the set."""

    fmap, rmap = {r["id"]: r for r in fast}, {r["id"]: r for r in ref}

    def judge(rows: list[Any], t: float) -> tuple[float, float]:
        recs = routed(fmap, rmap, [lb.id for lb in rows], t)
        table, _ = metrics.align(rows, recs)
        share = sum(1 for r in recs if r["escalated"]) / max(1, len(rows))
        return metrics.family_balanced_accuracy(table), share

    def best(rows: list[Any]) -> float:
        scored = [(judge(rows, t), t) for t in candidates]
        return max(scored, key=lambda s: (s[0][0], -s[0][1], -s[1]))[1]

    groups = [lb.group for lb in labels]
    k = max(2, min(folds, len(set(groups))))
    fold_of = group_folds(groups, k)
    per_fold, oof_ids, oof_recs = [], [], []
    for f in range(k):
        train = [lb for lb in labels if fold_of[lb.group] != f]
        test = [lb for lb in labels if fold_of[lb.group] == f]
        if not test or not train:
            continue
        t = best(train)
        recs = routed(fmap, rmap, [lb.id for lb in test], t)
        ba, share = judge(test, t)
        per_fold.append({"fold": f, "rows": len(test), "threshold": t, "balanced_accuracy": ba,
                         "escalated_share": share})
        oof_ids += [lb.id for lb in test]
        oof_recs += recs
    by_id = {lb.id: lb for lb in labels}
    table, _ = metrics.align([by_id[i] for i in oof_ids], oof_recs)
    deployed = best(labels)
    ba_all, share_all = judge(labels, deployed)
    fast_t, _ = metrics.align(labels, fast)
    ref_t, _ = metrics.align(labels, ref)
    return {"threshold": deployed, "candidates": list(candidates), "folds": k,
            "rule": "maximise balanced accuracy (per family, averaged over families) of the routed decisions, ties "
                    "broken by the smaller escalated share, "
                    "then the smaller threshold; margins of the acting readout (calibrated when the records carry it)",
            "out_of_fold": {"balanced_accuracy": metrics.family_balanced_accuracy(table),
                            "accuracy": metrics.accuracy(table),
                            "escalated_share": sum(1 for r in oof_recs if r["escalated"]) / max(1, len(oof_recs)),
                            "per_fold": per_fold},
            "in_sample_at_threshold": {"balanced_accuracy": ba_all, "escalated_share": share_all},
            "fast_only": {"balanced_accuracy": metrics.family_balanced_accuracy(fast_t)},
            "reference_only": {"balanced_accuracy": metrics.family_balanced_accuracy(ref_t)}}
