"""The decision-quality study of issue #22 item 6: which prompt, readout and calibration make a model's decisions
right, measured out of fold, with what each costs.

On labelled decision sets (``--sets authored,boundary,shape-full`` or paths) and one model, every configuration of
the grid — layout (state-major, question-major) × k demonstrations (0, 2, 4, 8) × readout (every value of
``--slots`` the code accepts, where its rule allows it) × calibration (none, the label-free prior, the fitted bias)
— is scored through the public API (:meth:`scorer.api.Scorer.score_decisions`, one :class:`~scorer.api.Scorer` per
run on the one loaded backend, so records equal ``semif score``'s for the set's file) and judged out of fold on
group-disjoint folds (:mod:`benchmarks.quality_study_plan`, :mod:`benchmarks.quality_study_table`).

    .venv/bin/python benchmarks/quality_study.py run --model qwen2.5-1.5b --sets authored,boundary,shape-full \\
        --output data/results/quality-study-q15.json [--work DIR] [--resume] [--dry-run] [--write-preset accurate]
    .venv/bin/python benchmarks/quality_study.py table data/results/quality-study-q15.json   # the Markdown table
    .venv/bin/python benchmarks/quality_study.py preset data/results/quality-study-q15.json --name accurate

Every run's records are kept in the work folder (default: the output's name with ``.runs``), one JSONL file per run
and a one-line ``.meta.jsonl`` beside it (its scoring seconds, the configuration hash, the rows); ``--resume``
reuses each finished run after checking it (schema, rows in order, configuration hash of this very model and code) and
scores the rest. ``--dry-run`` prints the runs and decisions to score and an estimate of the time (from the
finished runs' own rate, or ``--seconds-per-decision``). One report (kind ``quality-study``), create-only; the
Markdown table on stdout; progress on stderr. Quote timings only from a quiet machine (load averages inside).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.quality_study_plan import (  # noqa: E402
    CALIBRATIONS,
    DEFAULT_GROUP_FIELDS,
    DEFAULT_SEED,
    K_VALUES,
    READOUTS,
    Plan,
    RunSpec,
    StudySet,
    fold_demos,
    load_file_demos,
    load_set,
    plan,
)
from benchmarks.quality_study_table import (  # noqa: E402
    BASELINE,
    BIAS,
    CEILINGS,
    PRIOR,
    ceiling,
    ceiling_summary,
    demo_costs,
    fallback_summary,
    markdown,
    prior_fallbacks,
    run_cost,
    table,
    winner,
)
from scorer import __version__  # noqa: E402
from scorer.calibration.temperature import DEFAULT_FOLDS  # noqa: E402
from scorer.core.checks import MODES  # noqa: E402
from scorer.core.errors import InputError, SemifError  # noqa: E402
from scorer.core.hashing import sha256_file, sha256_hex  # noqa: E402
from scorer.core.io import check_writable, os_error_text, write_atomic  # noqa: E402
from scorer.core.machine import load_average, load_span  # noqa: E402
from scorer.evaluation import metrics  # noqa: E402
from scorer.formats.envelope import carried_inputs, make_report, write_report  # noqa: E402
from scorer.formats.records import dumps_record, read_records  # noqa: E402
from scorer.prompting.layouts import LAYOUTS  # noqa: E402

FORMAT = "semif-quality-study-v1"
KIND = "quality-study"
Loader = Callable[[Any], Any]


def _log(msg: str) -> None:
    print(f"[quality-study] {msg}", file=sys.stderr, flush=True)


def _words(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _ints(text: str, flag: str) -> list[int]:
    try:
        return [int(x) for x in _words(text)]
    except ValueError:
        raise InputError(flag, None, None, f"{text!r}", "a comma list of integers") from None


_META_KEYS = ("run", "set", "layout", "k", "readout", "fold", "rows", "config_sha256", "scoring_s", "decisions", "cost",
              "resumed", "records_sha256")


# --- the runs' files ------------------------------------------------------------------------------------------------
class Work:
    """The work folder: one records file and one meta file per run (module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def records_path(self, r: RunSpec) -> Path:
        return self.folder / f"{r.key}.jsonl"

    def meta_path(self, r: RunSpec) -> Path:
        return self.folder / f"{r.key}.meta.jsonl"  # one JSON line: not a .json report where the site looks

    def finished(self, r: RunSpec, expected_hash: str | None, ids: list[str]) -> dict[str, Any] | None:
        """The finished run's meta (records checked), None when it has not run; a file that is not this run's is
        refused (an :class:`InputError` naming it), never rescored over."""
        rec_p, meta_p = self.records_path(r), self.meta_path(r)
        if not rec_p.exists() and not meta_p.exists():
            return None
        if not meta_p.exists():
            raise InputError(str(rec_p), None, None, "records without their .meta.jsonl (the run did not finish)",
                             "remove both files to score the run again")
        try:
            meta = orjson.loads(meta_p.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise InputError(str(meta_p), 1, None, f"invalid JSON ({exc})", "the meta line this study wrote") from None
        missing = [k for k in _META_KEYS if not isinstance(meta, dict) or k not in meta]
        if missing:
            raise InputError(str(meta_p), 1, missing[0], "missing", "the meta line this study wrote")
        records = read_records(rec_p)  # every record schema-checked
        got = [rec.get("id") for rec in records]
        if got != ids:
            raise InputError(str(rec_p), None, "id", f"{len(got)} records that are not this run's rows in order",
                             f"the {len(ids)} rows of {r.key}")
        if sha256_file(rec_p) != meta.get("records_sha256"):
            raise InputError(str(meta_p), None, "records_sha256", "does not match the records file",
                             "the records this meta was written with")
        hashes = {rec["run"]["config_sha256"] for rec in records}
        if expected_hash is not None and hashes != {expected_hash}:
            raise InputError(str(rec_p), None, "run.config_sha256",
                             f"{sorted(h[:12] for h in hashes)} is not this run's configuration ({expected_hash[:12]}: "
                             "same model, code version, set, layout, demonstrations and readout)",
                             "a work folder of this very study (or another --work)")
        return meta

    def write(self, r: RunSpec, records: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
        """Write the run's records, then its meta (with the records' sha256), each whole and create-only; returns
        the meta as written."""
        data = b"".join(dumps_record(rec) for rec in records)
        write_atomic(self.records_path(r), data)
        meta = {**meta, "records_sha256": sha256_hex(data)}
        write_atomic(self.meta_path(r), orjson.dumps(meta) + b"\n")
        return meta


# --- scoring --------------------------------------------------------------------------------------------------------
class Runner:
    """Scores runs on one loaded backend through the public API, one fresh :class:`~scorer.api.Scorer` (and so one
    fresh radix cache) per run, so a run's cost does not depend on what ran before it."""

    def __init__(self, backend: Any, mode: str, max_batch_tokens: int, seed: int, demos_file: str | None) -> None:
        self.backend, self.mode, self.max_batch_tokens, self.seed = backend, mode, max_batch_tokens, seed
        self.demos_file = demos_file
        self._file_demos: dict[int, Any] = {}

    def _demos(self, s: StudySet, r: RunSpec) -> Any:
        """The run's demonstrations: none (k 0), the file's (read once per k), or the fold's training rows."""
        from scorer.prompting.demos import load_demos

        k = r.config.k
        if k == 0:
            return None
        if r.fold is not None:
            return fold_demos(s, r.fold, k, self.seed)
        if self.demos_file is None:
            raise AssertionError(f"run {r.key} is not per fold but the study shows no demonstrations file")
        if k not in self._file_demos:
            self._file_demos[k] = load_demos(self.demos_file, k, self.seed)
        return self._file_demos[k]

    def _scorer(self, s: StudySet, r: RunSpec) -> Any:
        from scorer.api import Scorer

        c = r.config
        demos = self._demos(s, r)
        slots, norm = READOUTS[c.readout]
        return Scorer(backend=self.backend, mode=self.mode, max_batch_tokens=self.max_batch_tokens, slots=slots,
                      sequence_norm=norm, layout=c.layout, demos=demos)

    def parts(self, s: StudySet) -> dict[str, Any]:
        return {"input_sha256": s.sha256, "semif": __version__}

    def expected_hash(self, s: StudySet, r: RunSpec) -> str:
        from scorer.scoring.options import config_sha256

        sc = self._scorer(s, r)
        rows = [s.decisions[i] for i in r.rows]
        return config_sha256(sc.run_config(rows, self.parts(s), self.backend.model_info(), self.mode, r.config.layout))

    def score(self, s: StudySet, r: RunSpec) -> tuple[list[dict[str, Any]], float]:
        with self._scorer(s, r) as sc:
            t0 = time.perf_counter()
            recs = sc.score_decisions([s.decisions[i] for i in r.rows], self.parts(s), indices=list(r.rows))
            return recs, time.perf_counter() - t0


def unusable_readouts(backend: Any, sets: list[StudySet], layouts: list[str], readouts: list[str]) -> dict[Any, str]:
    """(set, layout, readout) → why the readout cannot render some row (every row rendered on the model's own
    tokenizer by the code's own renderer, without demonstrations: e.g. an option id that is not one token)."""
    from scorer.prompting.demos import prompt_for
    out: dict[Any, str] = {}
    for s in sets:
        for layout in layouts:
            for readout in readouts:
                for d in s.decisions:
                    try:
                        prompt_for(backend.tokenizer, d, layout, None, READOUTS[readout][0])
                    except SemifError as exc:
                        out[(s.name, layout, readout)] = f"row {d.id!r}: {exc}"
                        break
    return out


# --- the command ----------------------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="quality_study.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="score the grid and write the report")
    p.add_argument("--model", required=True)
    p.add_argument("--backend", default="torch", choices=("torch", "llamacpp"))
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype")
    p.add_argument("--threads", type=int)
    p.add_argument("--sets", default="authored,boundary,shape-full",
                   help="comma list of set names (authored, boundary, shape-full) or JSONL paths")
    p.add_argument("--layouts", default=",".join(LAYOUTS))
    p.add_argument("--k", default=",".join(map(str, K_VALUES)), help="demonstrations per decision (comma list)")
    p.add_argument("--k-for", action="append", default=[], metavar="LAYOUT=K,K",
                   help="a layout's own k values in place of --k (repeatable), e.g. state-major=0")
    p.add_argument("--readouts", default=",".join(READOUTS), help=f"comma list of {', '.join(READOUTS)}")
    p.add_argument("--calibrations", default=",".join(CALIBRATIONS))
    p.add_argument("--folds", type=int, default=DEFAULT_FOLDS, help="group-disjoint folds (at most one per group)")
    p.add_argument("--group-field", default=",".join(DEFAULT_GROUP_FIELDS),
                   help="row fields naming the group, first present wins (default group,state_id; id: every row its "
                        "own group)")
    p.add_argument("--demos", metavar="FILE",
                   help="show demonstrations from this labelled file (checked to share no state with the sets) "
                        "instead of the training folds; what a preset with demonstrations needs")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the demonstrations' seed")
    p.add_argument("--mode", choices=MODES, default="shared")
    p.add_argument("--max-batch-tokens", type=int, default=4096)
    p.add_argument("--reps", type=int, default=metrics.BOOTSTRAP_REPS, help="bootstrap replicates")
    p.add_argument("--bootstrap-seed", type=int, default=metrics.BOOTSTRAP_SEED)
    p.add_argument("--output", required=True, help="the report (JSON); never overwritten")
    p.add_argument("--work", help="the runs' folder (default: OUTPUT without .json, plus .runs)")
    p.add_argument("--resume", action="store_true", help="reuse the finished runs in --work (each one checked)")
    p.add_argument("--dry-run", action="store_true", help="print the runs, the decisions and a time estimate; score "
                                                         "nothing")
    p.add_argument("--seconds-per-decision", type=float, help="--dry-run: the rate to estimate with when no run has "
                                                             "finished yet")
    p.add_argument("--write-preset", metavar="NAME", help="write scorer/data/presets/NAME.json from the winner")
    p.add_argument("--presets-dir", default=str(ROOT / "scorer" / "data" / "presets"))
    t = sub.add_parser("table", help="print a report's table (Markdown)")
    t.add_argument("report")
    w = sub.add_parser("preset", help="write a finished study's winner as a preset (what run --write-preset "
                                      "writes), from the report and its cited records, scoring nothing")
    w.add_argument("report")
    w.add_argument("--name", required=True, help="the preset's name: scorer/data/presets/NAME.json")
    w.add_argument("--presets-dir", default=str(ROOT / "scorer" / "data" / "presets"))
    return ap


def _work_folder(args: argparse.Namespace) -> Path:
    if args.work:
        return Path(args.work)
    out = Path(args.output)
    return out.with_name(out.name.removesuffix(".json") + ".runs")


def _meta_or_none(path: Path) -> dict[str, Any] | None:
    """A finished run's meta for the dry run's estimate (unchecked: the run itself checks it on --resume)."""
    try:
        meta = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return meta if isinstance(meta, dict) and isinstance(meta.get("scoring_s"), (int, float)) else None


def _estimate(p: Plan, done: dict[str, dict[str, Any]], rate_given: float | None) -> str:
    todo = sum(len(r.rows) for r in p.runs if r.key not in done)
    timed = [m for m in done.values() if m.get("decisions")]
    if timed:
        rate = sum(m["scoring_s"] for m in timed) / sum(m["decisions"] for m in timed)
        src = f"{rate:.3f} s/decision measured on the {len(timed)} finished runs"
    elif rate_given is not None:
        rate, src = rate_given, f"{rate_given:g} s/decision given"
    else:
        return f"{todo} decisions to score; no rate yet (no finished run): pass --seconds-per-decision S for a time"
    return f"{todo} decisions to score × {src} ≈ {todo * rate / 60:.1f} min (rates differ by layout and k)"


def _ks_for(values: list[str]) -> dict[str, list[int]]:
    """``--k-for LAYOUT=K,K,…`` (repeatable) as layout → its k values."""
    out: dict[str, list[int]] = {}
    for v in values:
        layout, eq, ks = v.partition("=")
        if not eq or not layout.strip() or layout.strip() in out:
            raise InputError("--k-for", None, None, f"{v!r}",
                             "LAYOUT=K,K,… once per layout, e.g. state-major=0")
        out[layout.strip()] = _ints(ks, "--k-for")
    return out


def cmd_run(args: argparse.Namespace, load: Loader) -> int:
    layouts, readouts, cals = _words(args.layouts), _words(args.readouts), _words(args.calibrations)
    ks, ks_for = _ints(args.k, "--k"), _ks_for(args.k_for)
    if args.folds < 2:
        raise InputError("--folds", None, None, f"{args.folds}", "an integer >= 2")
    group_fields = tuple(_words(args.group_field)) or DEFAULT_GROUP_FIELDS
    sets = [load_set(n, group_fields, args.folds) for n in _words(args.sets)]
    names = [s.name for s in sets]
    if len(set(names)) != len(names) or not names:
        raise InputError("--sets", None, None, f"{names}", "one or more sets with distinct names")
    k_max = max([*ks, *(k for v in ks_for.values() for k in v)])
    demos_file = load_file_demos(args.demos, k_max or 1, args.seed, sets) if args.demos else None
    out, work = Path(args.output), Work(_work_folder(args))
    check_writable(out)  # create-only, checked before anything is scored
    if work.folder.exists() and any(work.folder.iterdir()) and not args.resume and not args.dry_run:
        raise InputError(str(work.folder), None, None, "holds runs of an earlier study",
                         "--resume to reuse them (each one checked), or another --work")
    # the grid checked before the model loads
    pre = plan(sets, layouts, ks, readouts, cals, demos_file is not None, ks_for=ks_for)
    if args.dry_run:
        done = {r.key: m for r in pre.runs if (m := _meta_or_none(work.meta_path(r))) is not None}
        print(f"{len(pre.configs)} configurations × {len(cals)} calibrations = {len(pre.configs) * len(cals)} table "
              f"rows; {len(pre.skipped)} skipped; {len(pre.runs)} scoring runs ({len(done)} finished), "
              f"{pre.decisions()} decisions in all")
        for s in pre.skipped:
            print(f"  skipped {s['set']} {s['layout']} k={s['k']} {s['readout']}: {s['reason']}")
        print("  (a readout may also be skipped once the model's tokenizer has rendered every row)")
        print(f"  {_estimate(pre, done, args.seconds_per_decision)}")
        return 0
    if args.write_preset:  # the name and the file checked before anything is scored
        from scorer.scoring.presets import NAME_RULE

        if not NAME_RULE.match(args.write_preset):
            raise InputError("--write-preset", None, None, f"{args.write_preset!r} is not a preset name",
                             "lower-case letters, digits, '.', '_', '-'")
        check_writable(Path(args.presets_dir) / f"{args.write_preset}.json", False,
                       "a preset is never overwritten: choose another name")
    from scorer.backends import BackendConfig

    before = load_average()
    cfg = BackendConfig(model=args.model, backend=args.backend, device=args.device, dtype=args.dtype,
                        threads=args.threads)
    _log(f"loading {args.model} ({args.backend})")
    backend = load(cfg)
    runner = Runner(backend, args.mode, args.max_batch_tokens, args.seed, args.demos)
    p = plan(sets, layouts, ks, readouts, cals, demos_file is not None,
             unusable_readouts(backend, sets, layouts, readouts), ks_for=ks_for)
    by_name = {s.name: s for s in sets}
    work.folder.mkdir(parents=True, exist_ok=True)
    metas: dict[str, dict[str, Any]] = {}
    total, done_n, t_start = p.decisions(), 0, time.perf_counter()
    _log(f"{len(p.runs)} runs, {total} decisions; {len(p.skipped)} configurations skipped")
    for n, r in enumerate(p.runs, start=1):
        s = by_name[r.config.set]
        expected = runner.expected_hash(s, r)
        meta = work.finished(r, expected, [s.decisions[i].id for i in r.rows]) if args.resume else None
        if meta is not None:
            meta = {**meta, "resumed": True}
            _log(f"run {n}/{len(p.runs)} {r.key}: kept ({len(r.rows)} records checked)")
        else:
            recs, secs = runner.score(s, r)
            meta = {"run": r.key, "set": s.name, "layout": r.config.layout, "k": r.config.k,
                    "readout": r.config.readout, "fold": r.fold, "rows": len(r.rows), "config_sha256": expected,
                    "scoring_s": secs, "decisions": len(recs), "cost": run_cost(recs, secs), "resumed": False}
            meta = work.write(r, recs, meta)
            done_n += len(r.rows)
            rate = (time.perf_counter() - t_start) / max(done_n, 1)
            left = sum(len(x.rows) for x in p.runs[n:])
            _log(f"run {n}/{len(p.runs)} {r.key}: {len(recs)} decisions in {secs:.1f} s "
                 f"(≈ {left * rate / 60:.1f} min left)")
        metas[r.key] = meta
    report = build_report(args, sets, p, cals, work, metas, backend.model_info(), before, demos_file)
    write_report(out, report)
    _log(f"wrote {out}")
    sys.stdout.write(markdown(report))
    if args.write_preset:
        from benchmarks.quality_study_preset import write_winner

        w = report["winner"]
        fold_free = w is not None and (w["k"] == 0 or args.demos is not None)  # else write_winner refuses it
        winner_recs = [rec for r in p.runs if fold_free and r.fold is None
                       and (r.config.layout, r.config.k, r.config.readout) == (w["layout"], w["k"], w["readout"])
                       for rec in read_records(work.records_path(r))]
        path = write_winner(args.write_preset, Path(args.presets_dir), report, out, sets, winner_recs, args.demos,
                            args.seed)
        _log(f"wrote preset {path} ({w['name'] if w else ''})")
    return 0


def build_report(args: argparse.Namespace, sets: list[StudySet], p: Plan, cals: list[str], work: Work,
                 metas: dict[str, dict[str, Any]], model: dict[str, Any], before: Any, demos_file: Any
                 ) -> dict[str, Any]:
    """The enveloped report: the grid, the sets and their folds, every run (its records cited by path and sha256,
    its cost), the table, the skipped configurations and the winner."""
    cache: dict[str, dict[int, dict[str, Any]]] = {}

    def records(r: RunSpec) -> dict[int, dict[str, Any]]:
        if r.key not in cache:
            cache[r.key] = dict(zip(r.rows, read_records(work.records_path(r)), strict=True))
        return cache[r.key]

    rows = table(sets, p, cals, records, lambda r: metas[r.key]["cost"], args.reps, args.bootstrap_seed)
    ceil = ceiling(sets, p, records)
    fallbacks = prior_fallbacks(sets, p, records)
    body = {
        "title": f"Decision quality study · {model.get('key') or args.model} · {model.get('backend', args.backend)}",
        "model": model,
        "scoring": {"entry": "scorer.api.Scorer.score_decisions (one Scorer per run, one backend)", "mode": args.mode,
                    "max_batch_tokens": args.max_batch_tokens},
        "grid": {"layouts": _words(args.layouts), "k": _ints(args.k, "--k"), "k_for": _ks_for(args.k_for),
                 "readouts": _words(args.readouts),
                 "calibrations": cals, "baseline": dict(zip(("layout", "k", "readout", "calibration"), BASELINE,
                                                            strict=True))},
        "folds": {"requested": args.folds, "group_fields": _words(args.group_field),
                  "assignment": "groups sorted by sha256(group name), dealt round-robin "
                                "(scorer.calibration.temperature.group_folds)"},
        "demonstrations": ({"source": "file", "path": str(args.demos), "sha256": demos_file.source.get("sha256"),
                            "seed": args.seed, "disjoint": "no state of the file is a state of a set (sha256)"}
                           if demos_file is not None else
                           {"source": "training folds", "seed": args.seed,
                            "rule": "run f shows only rows outside fold f; fold f's numbers come from run f alone"}),
        "calibrations": {"prior": PRIOR, "bias": BIAS, "fitted_on": "the training folds' records of the same run"},
        "bootstrap": {"reps": args.reps, "seed": args.bootstrap_seed, "level": metrics.CI_LEVEL,
                      "resamples": "groups"},
        "sets": [s.describe() for s in sets],
        "runs": [{**{k: metas[r.key][k] for k in ("run", "set", "layout", "k", "readout", "fold", "rows",
                                                   "config_sha256", "scoring_s", "cost", "resumed")},
                  "records": {"path": str(work.records_path(r)), "sha256": metas[r.key]["records_sha256"]}}
                 for r in p.runs],
        "skipped": p.skipped,
        "table": rows,
        "demo_costs": demo_costs(rows),
        "winner": winner(rows, [s.name for s in sets]),
        "ceiling": {"measures": CEILINGS, "configurations": ceil, "summary": ceiling_summary(rows, ceil)},
        "prior_fallbacks": {"configurations": fallbacks, "summary": fallback_summary(fallbacks)},
        "load_average": load_span(before),
    }
    return make_report(KIND, FORMAT, carried_inputs(body), body)


def read_study(path: Path) -> dict[str, Any]:
    """A quality-study report, refused (file, field) unless it is one."""
    try:
        doc = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise InputError(str(path), None, None, f"invalid JSON ({exc})", "a quality-study report") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND or doc.get("format") != FORMAT:
        raise InputError(str(path), None, "kind", f"{doc.get('kind') if isinstance(doc, dict) else doc!r}",
                         f"a {KIND} report ({FORMAT})")
    return doc


def cmd_table(args: argparse.Namespace) -> int:
    sys.stdout.write(markdown(read_study(Path(args.report))))
    return 0


def _cited(path: Path, field: str, cite: dict[str, Any]) -> Path:
    """The file a report cites, refused unless its bytes are the ones the report hashed."""
    target = Path(cite["path"])
    if not target.is_file():
        raise InputError(str(path), None, field, f"cites {target}, which does not exist",
                         "the report's files where it wrote them (run from the folder the study ran in)")
    if sha256_file(target) != cite["sha256"]:
        raise InputError(str(path), None, field, f"{target} has changed since the study (sha256 differs)",
                         "the very file the study read or wrote")
    return target


def cmd_preset(args: argparse.Namespace) -> int:
    """``preset REPORT --name NAME``: the winner of a finished study as a preset, from the report's own citations
    (its sets, demonstrations file and the winner's records, each checked against the sha256 the report holds):
    the same files ``run --write-preset`` writes at the end of a run, without loading a model."""
    from benchmarks.quality_study_preset import write_winner

    path = Path(args.report)
    doc = read_study(path)
    w = doc.get("winner")
    if not w:
        raise InputError(str(path), None, "winner", "the study has no winner", "a study whose grid ran on every set")
    folds = doc["folds"]
    sets = []
    for n, cite in enumerate(doc["sets"]):
        s = load_set(str(_cited(path, f"sets[{n}]", cite)), tuple(folds["group_fields"]), folds["requested"])
        sets.append(dataclasses.replace(s, name=cite["name"]))  # a named set keeps its name, not its file's stem
    demo = doc.get("demonstrations") or {}
    demos_path = str(_cited(path, "demonstrations", demo)) if demo.get("source") == "file" else None
    runs = [r for r in doc["runs"] if r["fold"] is None
            and (r["layout"], r["k"], r["readout"]) == (w["layout"], w["k"], w["readout"])]
    recs = [rec for r in runs for rec in read_records(_cited(path, f"runs[{r['run']}].records",
                                                                             r["records"]))]
    if w["k"] > 0 and demos_path is None:
        recs = []  # write_winner refuses it with the reason
    written = write_winner(args.name, Path(args.presets_dir), doc, path, sets, recs, demos_path,
                           int(demo.get("seed", DEFAULT_SEED)))
    _log(f"wrote preset {written} ({w['name']})")
    return 0


def main(argv: list[str] | None = None, load: Loader | None = None) -> int:
    """The command; ``load`` builds the backend from a :class:`~scorer.backends.BackendConfig` (default: the model
    store's loader; tests pass a fake)."""
    args = _parser().parse_args(argv)
    try:
        if args.cmd == "table":
            return cmd_table(args)
        if args.cmd == "preset":
            return cmd_preset(args)
        if load is None:
            from scorer.backends import load_backend as load
        return cmd_run(args, load)
    except SemifError as exc:
        _log(f"error: {exc}")
        return exc.exit_code
    except OSError as exc:
        _log(f"error: {os_error_text(exc)}")
        return 1
    except KeyboardInterrupt:
        _log("interrupted: the finished runs are kept in the work folder (--resume reuses them)")
        return 130


if __name__ == "__main__":
    sys.exit(main())
