"""``semif calibrate {temperature,prior,bias,apply,report}`` and the calibration options of ``semif score``.

The fits, files and reports are :mod:`scorer.calibration` and :mod:`scorer.calibration.temperature_report`;
this module parses their options, checks outputs and prints.

``semif calibrate RUN …`` (the form before these subcommands existed) still works: it means
``semif calibrate temperature RUN …`` (:func:`legacy_argv` rewrites it before parsing).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from scorer.calibration.core import Calibration, load_calibration, write_calibration
from scorer.cli.arguments import Given, add_model_args, add_report_args, add_uncovered_arg, backend_config, comma_list
from scorer.core.errors import InputError
from scorer.core.hashing import sha256_file
from scorer.core.io import FORCE_HINT, check_writable, write_atomic
from scorer.evaluation import metrics
from scorer.formats.signature import load_rows, record_signatures

SUBCOMMANDS = ("temperature", "prior", "bias", "apply", "report", "thresholds")


def legacy_argv(argv: list[str]) -> list[str]:
    """``calibrate RUN …`` → ``calibrate temperature RUN …`` (the old form keeps working)."""
    if len(argv) >= 2 and argv[0] == "calibrate" and argv[1] not in SUBCOMMANDS and argv[1] not in ("-h", "--help"):
        return [argv[0], "temperature", *argv[1:]]
    return argv


# --- shared loading -----------------------------------------------------------------------------------------------
def _rows(paths: list[str] | None) -> list[Any] | None:
    """Decision rows of every ``--input``/``--labels`` file (ids must be unique across them)."""
    if not paths:
        return None
    out: dict[str, Any] = {}
    for p in paths:
        for d in load_rows(p) or []:
            if d.id in out and out[d.id] != d:
                raise InputError(p, None, "id", f"row {d.id!r} also appears, differently, in another rows file",
                                 "row ids unique across --input/--labels files")
            out[d.id] = d
    return list(out.values())


def load_runs(runs: list[str], rows_paths: list[str] | None) -> tuple[list[dict[str, Any]], list[str]]:
    """Records of every run file and their signatures (v1 records: computed from the rows files)."""
    from scorer.formats.records import read_records

    rows = _rows(rows_paths)
    recs: list[dict[str, Any]] = []
    sigs: list[str] = []
    for run in runs:
        r = read_records(run)
        sigs += record_signatures(r, rows, run, "--input/--labels")
        recs += r
    return recs, sigs


def _sources(runs: list[str]) -> list[dict[str, Any]]:
    return [{"path": r, "sha256": sha256_file(Path(r))} for r in runs]


def _print_file(cal: Calibration, out: Path, sha: str) -> None:
    levels: dict[str, int] = {}
    for e in cal.entries:
        levels[e.level] = levels.get(e.level, 0) + 1
    lv = ", ".join(f"{n} {k}" for k, n in levels.items()) or "no entries"
    print(f"[semif] wrote {out} ({cal.method}, {cal.estimator}: {lv}; {len(cal.uncalibrated)} signature(s) "
          f"without their own entry) sha256 {sha}", file=sys.stderr)


# --- semif calibrate prior ----------------------------------------------------------------------------------------
def _cmd_prior(args: argparse.Namespace) -> int:
    from scorer.calibration.batch import mix_warnings
    from scorer.calibration.prior import content_free_prior, fit_prior

    out = Path(args.output)
    check_writable(out, args.force)
    if args.min_rows < 1:
        raise InputError("--min-rows", None, None, f"{args.min_rows}", "an integer >= 1")
    recs, sigs = load_runs(args.runs, args.input)
    meta = {"runs": _sources(args.runs), "row_files": _sources(args.input or [])}
    if args.estimator == "content-free":
        from scorer.backends import load_backend
        from scorer.scoring.modes import fresh_scorer

        if not args.input:
            raise InputError("--input", None, None, "missing", "the rows the runs scored (content-free rebuilds their "
                                                               "questions)")
        backend = load_backend(backend_config(args))
        cal = content_free_prior(backend.model_info(), _rows(args.input) or [], recs, sigs, fresh_scorer(backend),
                                 meta=meta)
    else:
        rows = {d.id: d.question for d in _rows(args.input) or []}
        questions = {s: rows[r["id"]] for r, s in zip(recs, sigs, strict=True) if r.get("id") in rows}
        cal = fit_prior(recs, sigs, args.estimator, args.min_rows, args.fallback, meta=meta, questions=questions)
    sha = write_calibration(cal, out, args.force)
    n_sig = len(set(sigs))
    print(f"{len(recs)} records, {n_sig} signatures: {sum(e.level == 'signature' for e in cal.entries)} calibrated "
          f"from their own rows ({args.estimator})")
    applied = list(cal.apply_all(recs, sigs)) if cal.entries or cal.uncalibrated else []
    level = {r["calibrated"]["signature"]: r["calibrated"]["level"] for r in applied}
    for s in cal.uncalibrated:
        lv = level.get(s.signature)
        what = f"no entry of its own, covered by the {lv} level" if lv else "uncalibrated"
        print(f"  {what}: signature {s.signature[:12]}… {s.reason}")
    for w in mix_warnings(applied):
        print(f"  warning: {w}")
    _print_file(cal, out, sha)
    return 0


# --- semif calibrate bias -----------------------------------------------------------------------------------------
def _cmd_bias(args: argparse.Namespace) -> int:
    from scorer.calibration.bias import fit_bias
    from scorer.calibration.evaluate import out_of_fold
    from scorer.evaluation.before_after import before_after, print_before_after

    out = Path(args.output)
    check_writable(out, args.force)
    levels = comma_list(args.levels)
    recs, sigs = load_runs(args.runs, [args.labels, *(args.input or [])])
    labs = metrics.labels_from_decisions(args.labels)
    gold = {lb.id: lb.label for lb in labs}
    meta = {"runs": _sources(args.runs), "labels": {"path": args.labels, "sha256": sha256_file(Path(args.labels))}}

    def fit(r: list[dict[str, Any]], s: list[str]) -> Calibration:
        try:
            return fit_bias(r, s, gold, args.min_rows, args.temperature, args.l2, args.balanced, levels)
        except ValueError as exc:
            raise InputError("--levels" if "levels" in str(exc) else args.labels, None, None, str(exc),
                             "labelled records and levels among signature, family, global") from None

    cal = fit(recs, sigs)
    held, folds = out_of_fold(recs, sigs, labs, fit, args.folds)
    raw = [r for r in recs if r.get("id") in gold]
    ev = before_after(labs, raw, held, args.reps, args.seed)
    cal.meta.update(meta)
    cal.meta["out_of_fold"] = {"folds": len(folds), "fold_assignment": "groups sorted by sha256(group name), dealt "
                               "round-robin", "per_fold": folds, **ev}
    sha = write_calibration(cal, out, args.force)
    print_before_after(f"bias offsets ({cal.estimator}), out of fold over {len(folds)} group-disjoint folds", ev)
    if not ev["beats_uncalibrated"]:
        print("  the fit does NOT beat the uncalibrated readout out of fold (mean per-family balanced accuracy "
              f"{ev['balanced_accuracy_gain']:+.3f}); applying it is not recommended")
    _print_file(cal, out, sha)
    return 0


# --- semif calibrate apply ----------------------------------------------------------------------------------------
def _cmd_apply(args: argparse.Namespace) -> int:
    from scorer.formats.record_schema import RECORD_SCHEMA
    from scorer.formats.records import dumps_record

    out = Path(args.output)
    check_writable(out)
    cal = load_calibration(args.calibration)
    recs, sigs = load_runs([args.run], args.input)
    lines = []
    for r, s in zip(recs, sigs, strict=True):
        rec = cal.apply({**r, "schema": RECORD_SCHEMA, "signature": s})
        lines.append(dumps_record(rec))
    write_atomic(out, b"".join(lines))
    print(f"[semif] wrote {len(lines)} calibrated records ({cal.method}, {cal.source['sha256'][:12]}) to {out}",
          file=sys.stderr)
    return 0


# --- semif calibrate thresholds -----------------------------------------------------------------------------------
def _cmd_thresholds(args: argparse.Namespace) -> int:
    from scorer.calibration.thresholds import labelled_rows, thresholds_report
    from scorer.core.checks import OptionError
    from scorer.decision.policy import THRESHOLDS_FORMAT, THRESHOLDS_KIND, load_policy, unit_interval
    from scorer.formats.envelope import carried_inputs, make_report, write_report

    out = Path(args.output)
    check_writable(out, args.force)
    for flag, value in (("--precision", args.precision), ("--min-mass", args.min_mass)):
        try:
            unit_interval(value, flag)
        except OptionError as exc:
            raise InputError(flag, None, None, exc.problem, "a number from 0 to 1") from None
    for flag, value in (("--min-accepted", args.min_accepted), ("--folds", args.folds)):
        if value < 1:
            raise InputError(flag, None, None, f"{value}", "an integer >= 1")
    recs, sigs = load_runs(args.runs, [args.labels, *(args.input or [])])
    labs = metrics.labels_from_decisions(args.labels)
    rows = labelled_rows(recs, sigs, labs, args.min_mass)
    body = {"runs": _sources(args.runs), "labels": {"path": args.labels, "sha256": sha256_file(Path(args.labels))},
            **thresholds_report(rows, args.precision, args.min_accepted, args.min_mass, args.folds)}
    write_report(out, make_report(THRESHOLDS_KIND, THRESHOLDS_FORMAT, carried_inputs(body), body), args.force)
    load_policy(out)  # what was written reads back as a policy
    oof = body["out_of_fold"]
    never = sum(1 for e in body["thresholds"].values() if e["threshold"] is None)
    prec = "n/a (nothing acted on)" if oof["precision"] is None else f"{oof['precision']:.3f}"
    print(f"{len(body['thresholds'])} signatures, target precision {args.precision:g}: {never} never reach it; "
          f"fallback {body['fallback']['threshold']}")
    print(f"out of fold ({oof['folds']} group-disjoint folds): acted on {oof['acted']}/{len(rows)} "
          f"({100 * oof['acted_share']:.1f} %), precision {prec}")
    print(f"[semif] wrote {out}", file=sys.stderr)
    return 0


# --- semif score options ------------------------------------------------------------------------------------------
def add_score_args(p: argparse.ArgumentParser) -> None:
    """``--calibration FILE`` and ``--batch-calibrate [ESTIMATOR]`` for ``semif score``."""
    from scorer.calibration.prior import BATCH_ESTIMATORS, DEFAULT_FALLBACK, DEFAULT_MIN_ROWS, FALLBACKS

    g = p.add_argument_group("calibration (records keep their raw numbers and gain a `calibrated` block)")
    x = g.add_mutually_exclusive_group()
    x.add_argument("--calibration", metavar="FILE", action=Given,
                   help="apply a prior or bias file (semif calibrate prior|bias); checked against the model and every "
                        "row's signature")
    x.add_argument("--batch-calibrate", nargs="?", const="mean", choices=BATCH_ESTIMATORS, metavar="ESTIMATOR",
                   help="fit the option prior per signature over this run's own rows, then apply it "
                        f"(estimator {', '.join(BATCH_ESTIMATORS)}; default mean). Raw records go to OUT.raw.jsonl "
                        "first, the calibrated ones to OUT when every row is scored")
    g.add_argument("--calibration-min-rows", type=int, metavar="N",
                   help=f"--batch-calibrate: signatures with fewer rows get no prior of their own (default "
                        f"{DEFAULT_MIN_ROWS})")
    g.add_argument("--calibration-fallback", choices=FALLBACKS, metavar="|".join(FALLBACKS),
                   help="--batch-calibrate: what covers those signatures: none (they stay raw; default "
                        f"{DEFAULT_FALLBACK}), family, pooled (family, else the same options, else per option id)")
    add_uncovered_arg(g)


def check_score_args(args: argparse.Namespace) -> Calibration | None:
    """Validate the calibration options before any model loads (and settle ``calibration_min_rows``);
    the loaded calibration file, if any."""
    from scorer.calibration.batch import raw_path, refuse_raw
    from scorer.calibration.prior import DEFAULT_FALLBACK, DEFAULT_MIN_ROWS, FALLBACKS

    for flag, value, form in (("--calibration-min-rows", args.calibration_min_rows, "N"),
                              ("--calibration-fallback", args.calibration_fallback, "|".join(FALLBACKS))):
        if value is not None and not args.batch_calibrate:
            raise InputError(flag, None, None, "given without --batch-calibrate",
                             f"--batch-calibrate [ESTIMATOR] {flag} {form}")
    if args.calibration_min_rows is None:
        args.calibration_min_rows = DEFAULT_MIN_ROWS
    if args.calibration_fallback is None:
        args.calibration_fallback = DEFAULT_FALLBACK
    if args.calibration_min_rows < 1:
        raise InputError("--calibration-min-rows", None, None, f"{args.calibration_min_rows}", "an integer >= 1")
    if args.uncovered != "error" and not getattr(args, "calibration", None):
        raise InputError("--uncovered", None, None, f"{args.uncovered} given without --calibration",
                         "--calibration FILE --uncovered raw")
    if args.batch_calibrate and raw_path(Path(args.output)).exists() and not args.resume:
        raise refuse_raw(Path(args.output))
    return load_calibration(args.calibration) if getattr(args, "calibration", None) else None


def report_batch(res: Any) -> None:
    """Stderr lines after a batch-calibrated run: where things went, warnings, the phase-2 overhead."""
    for w in res.warnings:
        print(f"[semif] warning: {w}", file=sys.stderr)
    share = res.fit_s / res.scoring_s if res.scoring_s else 0.0
    print(f"[semif] batch calibration: raw records in {res.raw_path}; {res.records} calibrated records; fit + apply "
          f"{res.fit_s:.3f} s = {100 * share:.3f} % of the {res.scoring_s:.1f} s of scoring (no extra forward pass)",
          file=sys.stderr)


# --- registration -------------------------------------------------------------------------------------------------
def register(sub: Any) -> None:
    """Add ``semif calibrate`` and its subcommands."""
    from scorer.calibration.bias import DEFAULT_L2, LEVELS
    from scorer.calibration.bias import DEFAULT_MIN_ROWS as BIAS_MIN_ROWS
    from scorer.calibration.prior import DEFAULT_FALLBACK, DEFAULT_MIN_ROWS, ESTIMATORS, FALLBACKS
    from scorer.calibration.thresholds import DEFAULT_MIN_ACCEPTED

    p = sub.add_parser("calibrate", help="calibration: temperature (also the bare form `calibrate RUN`), prior, bias, "
                                         "apply, thresholds, report")
    csub = p.add_subparsers(dest="calibrate_command", required=True)
    temp = csub.add_parser("temperature", help="fit one temperature by NLL; ECE before/after out of fold "
                                               "(never changes a choice)")
    temp.add_argument("run", help="records (JSONL) of semif score")
    temp.add_argument("--folds", type=int, default=5, help="group-disjoint folds for the out-of-fold check")
    temp.add_argument("--apply", help="also write the run's records with the temperature applied to this JSONL")
    temp.add_argument("--temperature", type=float, help="with --apply: use this T instead of the fitted one")
    add_report_args(temp)
    temp.set_defaults(func=_cmd_temperature)

    q = csub.add_parser("prior", help="label-free option prior per decision signature -> PRIOR.json")
    q.add_argument("runs", nargs="+", help="records (JSONL) of semif score")
    q.add_argument("--output", required=True, help="calibration file to write (never overwritten without --force)")
    q.add_argument("--input", action="append", help="rows the runs scored (needed for v1 records, which carry no "
                                                     "signature, and for --estimator content-free); repeatable")
    q.add_argument("--estimator", choices=ESTIMATORS, default="mean",
                   help="mean (probability space, default), geometric (log space), balanced (uniform predicted "
                        "mass), content-free (scores each question with content-free states: needs the model)")
    q.add_argument("--min-rows", type=int, default=DEFAULT_MIN_ROWS,
                   help=f"signatures with fewer scored rows stay uncalibrated (default {DEFAULT_MIN_ROWS})")
    q.add_argument("--fallback", choices=FALLBACKS, default=DEFAULT_FALLBACK,
                   help="what covers a signature under --min-rows: none (it stays raw; default), family (the prior "
                        "of its family's rows with the same options), pooled (family, else every row with the same "
                        "options, else the model's prior per option id); the level is in each calibrated block")
    q.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    add_model_args(q)
    q.set_defaults(func=_cmd_prior)

    b = csub.add_parser("bias", help="labelled per-option logit offsets (signature -> family -> global), fitted by "
                                     "NLL, judged out of fold -> BIAS.json")
    b.add_argument("runs", nargs="+", help="records (JSONL) of semif score")
    b.add_argument("--labels", required=True, help="labelled rows (label, family, group); also the rows for v1 records")
    b.add_argument("--input", action="append", help="further rows files for v1 records' signatures; repeatable")
    b.add_argument("--output", required=True, help="calibration file to write (never overwritten without --force)")
    b.add_argument("--min-rows", type=int, default=BIAS_MIN_ROWS,
                   help=f"labelled rows a signature needs for its own entry (default {BIAS_MIN_ROWS})")
    b.add_argument("--levels", default=",".join(LEVELS), help=f"comma list of {', '.join(LEVELS)}")
    b.add_argument("--temperature", action="store_true", help="also fit a temperature per entry")
    b.add_argument("--l2", type=float, default=DEFAULT_L2, help=f"ridge on the offsets (default {DEFAULT_L2})")
    b.add_argument("--balanced", action="store_true",
                   help="weigh rows by 1/(rows with their label): offsets for balanced accuracy")
    b.add_argument("--folds", type=int, default=5, help="group-disjoint folds for the out-of-fold check")
    b.add_argument("--reps", type=int, default=metrics.BOOTSTRAP_REPS,
                   help=f"bootstrap replicates of the intervals (default {metrics.BOOTSTRAP_REPS})")
    b.add_argument("--seed", type=int, default=metrics.BOOTSTRAP_SEED,
                   help=f"seed of the bootstrap and the folds (default {metrics.BOOTSTRAP_SEED})")
    b.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    b.set_defaults(func=_cmd_bias)

    a = csub.add_parser("apply", help="add calibrated blocks to an existing run's records (v1 records become v2)")
    a.add_argument("run", help="records (JSONL) of semif score")
    a.add_argument("--calibration", required=True, help="a file of semif calibrate prior|bias")
    a.add_argument("--output", required=True, help="calibrated records (JSONL); never overwritten")
    a.add_argument("--input", action="append", help="rows the run scored (for v1 records)")
    a.set_defaults(func=_cmd_apply)

    t = csub.add_parser("thresholds", help="abstention thresholds per signature for a target precision, chosen and "
                                           "judged out of fold -> T.json (semif ask/show --policy T.json)")
    t.add_argument("runs", nargs="+", help="records (JSONL) of semif score (calibrated ones: thresholds on the "
                                           "calibrated margin)")
    t.add_argument("--labels", required=True, help="labelled rows (label, group); also the rows for v1 records")
    t.add_argument("--input", action="append", help="further rows files for v1 records' signatures; repeatable")
    t.add_argument("--precision", type=float, required=True, help="target precision of the decisions acted on")
    t.add_argument("--min-accepted", type=int, default=DEFAULT_MIN_ACCEPTED,
                   help=f"labelled decisions a threshold must accept (default {DEFAULT_MIN_ACCEPTED})")
    t.add_argument("--min-mass", type=float, default=0.0, help="never act below this allowed_token_mass (default 0)")
    t.add_argument("--folds", type=int, default=5, help="group-disjoint folds for the out-of-fold check")
    t.add_argument("--output", required=True, help="threshold file to write (never overwritten without --force)")
    t.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    t.set_defaults(func=_cmd_thresholds)

    p = csub.add_parser("report", help="every calibration method on a labelled set: label-free, stored, out of fold, "
                                       "bound, skew, routing -> JSON report (create-only)")
    p.add_argument("--run", required=True, help="records of the plain run (the reference path for --route-fast)")
    p.add_argument("--labels", required=True, help="the labelled rows the run scored")
    p.add_argument("--permuted", help="semif score --permute K records of the same rows")
    p.add_argument("--permuted-reversed", help="semif score --permute K records of the reversed rows")
    p.add_argument("--family-field", default="family", help="row field that names the family (default family)")
    p.add_argument("--group-field", default="group", help="row field that names the group (default group)")
    p.add_argument("--folds", default="5", help="group-disjoint folds, or `groups` for leave-one-group-out")
    p.add_argument("--label-free", action="store_true", help="skip the labelled (out-of-fold) bias fits")
    p.add_argument("--skew", action="store_true", help="class-skewed subsamples of the binary signatures")
    p.add_argument("--route-fast", help="records of a fast path on the same rows: routing tables")
    p.add_argument("--escalate", default="0.1,0.25,0.5,0.75",
                   help="routing: shares of lowest-margin decisions sent to the reference (comma list)")
    p.add_argument("--output", required=True, help="JSON report (never overwritten)")
    p.add_argument("--reps", type=int, default=metrics.BOOTSTRAP_REPS,
                   help=f"bootstrap replicates of the intervals (default {metrics.BOOTSTRAP_REPS})")
    p.add_argument("--seed", type=int, default=metrics.BOOTSTRAP_SEED,
                   help=f"seed of the bootstrap and the folds (default {metrics.BOOTSTRAP_SEED})")
    p.set_defaults(func=_cmd_report)


# --- semif calibrate temperature ----------------------------------------------------------------------------------
def _cmd_temperature(args: argparse.Namespace) -> int:
    from scorer.calibration.temperature_report import apply_file, calibrate_report, print_calibrate
    from scorer.evaluation.report_files import check_outputs, default_out, save_report

    report_out = Path(args.output) if args.output else default_out("calibrate", args.run)
    if args.apply:  # every output is checked before any work or output
        check_outputs(report_out, args.force, Path(args.apply))
    else:
        check_writable(report_out, args.force, FORCE_HINT)
    rep = calibrate_report(args.run, args.labels, args.folds, args.reps, args.seed)
    print_calibrate(rep)
    save_report(rep, report_out, args.force)
    if args.apply:
        t = args.temperature if args.temperature is not None else rep["fit_all_rows"]["temperature"]
        n = apply_file(args.run, Path(args.apply), t)
        print(f"[semif] wrote {n} records with T = {t:.6g} to {args.apply}", file=sys.stderr)
    return 0


# --- semif calibrate report ---------------------------------------------------------------------------------------
def _cmd_report(args: argparse.Namespace) -> int:
    from scorer.calibration.methods_report import print_report, report
    from scorer.formats.envelope import write_report

    out = Path(args.output)
    check_writable(out, hint="reports are create-only; choose another --output")
    folds = None if args.folds == "groups" else int(args.folds)
    try:
        shares = tuple(float(x) for x in args.escalate.split(","))
    except ValueError:
        raise InputError("--escalate", None, None, f"{args.escalate!r}", "a comma list of shares in [0, 1]") from None
    if any(not 0 <= x <= 1 for x in shares):
        raise InputError("--escalate", None, None, f"{args.escalate!r}", "shares in [0, 1]")
    rep = report(args.run, args.labels, args.permuted, args.permuted_reversed, args.family_field, args.group_field,
                 folds, not args.label_free, args.skew, args.route_fast, shares, args.reps, args.seed)
    print_report(rep)
    write_report(out, rep, hint="reports are create-only; choose another --output")
    print(f"[semif] wrote {out}", file=sys.stderr)
    return 0
