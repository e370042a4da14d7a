"""``semif score`` (decisions in, records out) and ``semif show`` (a records file as a table)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from scorer import __version__
from scorer.cli.arguments import (
    add_echo_arg,
    add_exact_args,
    add_layout_args,
    add_max_batch_tokens_arg,
    add_mode_arg,
    add_model_args,
    add_prefix_cache_arg,
    add_preset_arg,
    add_slots_arg,
    backend_config,
    exact_policy,
    layout_options,
    load_model,
    positive_float,
    positive_int,
    sequence_norm,
)
from scorer.cli.calibrate import add_score_args as add_calibration_args
from scorer.cli.calibrate import check_score_args as check_calibration_args
from scorer.cli.calibrate import report_batch
from scorer.cli.preset import check_rows, preset_args
from scorer.core.checks import DEFAULT_MAX_BATCH_TOKENS, check_slots_backend
from scorer.core.errors import ValidationError
from scorer.core.hashing import sha256_file
from scorer.core.io import RecordsOutput, os_error_text, refuse_overwrite
from scorer.scoring.options import ScoreConfig
from scorer.scoring.radix_cache import DEFAULT_BUDGET_BYTES, RadixCache
from scorer.scoring.sequence import check_sequence_options
from scorer.serving.ray_data import RayOptions


def register(sub: Any) -> None:
    """Add ``semif score`` and ``semif show``."""
    p = sub.add_parser("score", help="score decisions (JSONL in, JSONL records out)")
    p.add_argument("--input", required=True, help="decisions, one JSON object per line")
    p.add_argument("--output", required=True, help="records (JSONL); never overwritten")
    add_mode_arg(p, "direct")
    add_max_batch_tokens_arg(p)
    add_slots_arg(p)
    add_prefix_cache_arg(p)
    p.add_argument("--resume", action="store_true",
                   help="continue a killed run into the same --output (refused, file unchanged, unless every record "
                        "in it is from this same configuration; an empty file is accepted)")
    p.add_argument("--summary", action="store_true", help="print a table of the decisions when done")
    p.add_argument("--permute", type=positive_int, default=1, metavar="K",
                   help="average option probabilities over K cyclic option orderings, aligned by id (K passes)")
    p.add_argument("--temperature", type=positive_float, metavar="T",
                   help="probabilities = softmax(option_logits / T), recorded in each record (semif calibrate)")
    add_echo_arg(p)
    add_model_args(p, decision_api=True)
    add_layout_args(p)
    add_exact_args(p)
    add_calibration_args(p)
    add_preset_arg(p)
    _add_engine_args(p)
    _add_route_args(p)
    _add_systemone_args(p)
    p.set_defaults(func=_cmd_score)

    p = sub.add_parser("show", help="print a readable table of a records file: the choice to act on (calibrated "
                                    "when present), the raw one beside it, typed answers, label counts")
    p.add_argument("run", help="records (JSONL) of semif score")
    add_policy_args(p)
    p.set_defaults(func=_cmd_show)


def add_policy_args(p: argparse.ArgumentParser) -> None:
    """``--policy MARGIN|T.json`` and ``--min-mass F``: an abstention policy (scorer.decision.policy)."""
    p.add_argument("--policy", metavar="MARGIN|T.json",
                   help="abstention policy: act only on decisions whose (calibrated) margin is at least MARGIN, or "
                        "at least their signature's threshold in a `semif calibrate thresholds` file")
    p.add_argument("--min-mass", type=float, metavar="F",
                   help="with --policy: never act when allowed_token_mass < F (a threshold file's own floor otherwise)")


def policy_arg(args: argparse.Namespace) -> Any:
    """The :class:`scorer.decision.policy.Policy` of ``--policy``/``--min-mass`` (None without --policy)."""
    from scorer.core.checks import OptionError
    from scorer.core.errors import InputError
    from scorer.decision.policy import policy_of, unit_interval

    if args.min_mass is not None:
        if args.policy is None:
            raise InputError("--min-mass", None, None, "given without --policy", "--policy MARGIN|T.json --min-mass F")
        try:
            unit_interval(args.min_mass, "--min-mass")
        except OptionError as exc:
            raise InputError("--min-mass", None, None, exc.problem, "a number from 0 to 1") from None
    return None if args.policy is None else policy_of(args.policy, "--policy", args.min_mass)


def _add_engine_args(p: argparse.ArgumentParser) -> None:
    """``--engine`` and the Ray options of ``semif score``."""
    g = p.add_argument_group("engine")
    g.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local: this process; ray: a pool of Ray Data actors (the ray extra)")
    g.add_argument("--address", help="ray: cluster address (default: start a local cluster)")
    g.add_argument("--actors", type=positive_int, default=1, help="ray: scoring actors, one model each")
    g.add_argument("--cpus-per-actor", type=float, default=1.0, help="ray: CPUs per actor (and its threads)")
    g.add_argument("--gpus-per-actor", type=float, default=0.0, help="ray: GPUs per actor")


def _add_route_args(p: argparse.ArgumentParser) -> None:
    """Live two-path routing: ``--fast SPEC --accurate SPEC --escalate-below M``."""
    g = p.add_argument_group("live routing (every decision on --fast; low-margin ones re-scored on --accurate)")
    g.add_argument("--fast", metavar="SPEC",
                   help="the fast engine: key=value pairs (backend, model, base_url, served_model, mode, threads, "
                        "calibration, ...) or @FILE.json; replaces the model options")
    g.add_argument("--accurate", metavar="SPEC", help="the accurate engine (same form as --fast)")
    g.add_argument("--escalate-below", metavar="MARGIN|FILE",
                   help="escalate decisions whose (calibrated) fast margin is below this, or ties; a number from 0 "
                        "to 1 or the threshold file `semif route --threshold-output` wrote")


def _route_policy(args: argparse.Namespace) -> tuple[Any, Any, str | None] | None:
    """(fast backend config, RoutePolicy factory, fast mode) of the routing options, checked before anything loads;
    None without --fast."""
    from scorer.cli.arguments import parse_spec
    from scorer.core.errors import InputError

    given = [f for f, v in (("--fast", args.fast), ("--accurate", args.accurate),
                            ("--escalate-below", args.escalate_below)) if v is not None]
    if not given:
        return None
    missing = [f for f in ("--fast", "--accurate", "--escalate-below") if f not in given]
    if missing:
        raise InputError(missing[0], None, None, "missing", "--fast SPEC --accurate SPEC --escalate-below MARGIN "
                         "together")
    for flag, on in (("--engine ray", args.engine == "ray"), ("--batch-calibrate", bool(args.batch_calibrate)),
                     ("--calibration", args.calibration is not None), ("--permute", args.permute > 1),
                     ("--temperature", args.temperature is not None), ("--slots", args.slots != "letters")):
        if on:
            raise InputError(flag, None, None, "given with live routing",
                             "per-engine calibration in the SPECs (calibration=FILE); no --permute/--temperature; "
                             "the letters' readout")
    threshold, source = _threshold(args.escalate_below)
    fast_cfg, fast_mode, fast_cal = parse_spec(args.fast, "--fast")
    acc_cfg, acc_mode, acc_cal = parse_spec(args.accurate, "--accurate")
    from scorer.calibration.core import load_calibration

    cal_f = load_calibration(fast_cal) if fast_cal else None  # bad files refused before any model loads
    cal_a = load_calibration(acc_cal) if acc_cal else None

    def make(accurate: Any, demos: Any) -> Any:
        from scorer.scoring.routing import RoutePolicy

        return RoutePolicy(accurate, threshold, acc_mode or "direct", cal_f, cal_a, args.max_batch_tokens, source,
                           demos)

    return (fast_cfg, acc_cfg), make, fast_mode


def _threshold(text: str) -> tuple[float, str]:
    """``--escalate-below``: a margin, or a `semif route --threshold-output` file (its threshold, and its path
    and sha256 as the source)."""
    import math

    from scorer.core.errors import InputError
    from scorer.scoring.routing import read_threshold

    try:
        v = float(text)
    except ValueError:
        path = Path(text)
        if not path.exists():
            raise InputError("--escalate-below", None, None, f"{text!r} is neither a number nor a file",
                             "a margin from 0 to 1, or a `semif route --threshold-output` file") from None
        t = read_threshold(path)
        return t, f"{path} (sha256 {sha256_file(path)})"
    if not (math.isfinite(v) and 0 <= v <= 1):
        raise InputError("--escalate-below", None, None, f"{text!r}", "a margin from 0 to 1")
    return v, "given"


def _add_systemone_args(p: argparse.ArgumentParser) -> None:
    """The options of ``--backend systemone`` (a remote System One decision API) besides the model group's."""
    from scorer.scoring.systemone_wire import QUESTION_TYPES

    g = p.add_argument_group("remote decision API (--backend systemone --base-url URL [--served-model NAME] "
                             "[--api-key-env NAME])")
    g.add_argument("--question-types", choices=QUESTION_TYPES,
                   help="native (default): yesno rows asked as noul questions, score rows as score questions, the "
                        "rest as choice questions; choice: every row a choice question over its option ids")
    g.add_argument("--request-timeout", type=positive_float, metavar="S",
                   help="seconds one request may take before it is retried (default 60)")


_TOKEN_LEVEL_HINT = "a remote decision API answers option probabilities, not logits; score locally for it"


def _systemone_config(args: argparse.Namespace) -> Any:
    """The :class:`~scorer.scoring.systemone_run.SystemOneConfig` of ``--backend systemone``; every option that needs
    token-level work, a local model or another engine is refused naming its flag (exit 2), before any output opens."""
    from scorer.core.errors import InputError
    from scorer.models import store
    from scorer.scoring.systemone_run import SystemOneConfig

    refused = (
        ("--exact", bool(args.exact)), ("--drift-report", args.drift_report is not None),
        ("--permute", args.permute > 1), (f"--slots {args.slots}", args.slots != "letters"),
        ("--sequence-norm", args.sequence_norm is not None), ("--demos", args.demos is not None),
        ("--demos-k", args.demos_k is not None), ("--seed", args.seed is not None),
        (f"--layout {args.layout}", args.layout != "state-major"), (f"--mode {args.mode}", args.mode != "direct"),
        ("--max-batch-tokens", args.max_batch_tokens != DEFAULT_MAX_BATCH_TOKENS),
        ("--prefix-cache-bytes", args.prefix_cache_bytes != DEFAULT_BUDGET_BYTES),
        ("--revision", args.revision is not None), ("--gguf", args.gguf is not None),
        ("--dtype", args.dtype is not None), ("--threads", args.threads is not None),
        (f"--device {args.device}", args.device != "cpu"),
        ("--llama-gpu-layers", args.llama_gpu_layers != "0"),
    )
    for flag, on in refused:
        if on:
            raise InputError(flag, None, None, "given with --backend systemone", _TOKEN_LEVEL_HINT)
    elsewhere = (
        ("--engine ray", args.engine == "ray", "the remote engine sends its own requests (--concurrency N)"),
        ("--fast", args.fast is not None, "score each engine into its own records, then `semif route`"),
        ("--accurate", args.accurate is not None, "score each engine into its own records, then `semif route`"),
        ("--escalate-below", args.escalate_below is not None,
         "score each engine into its own records, then `semif route`"),
        ("--preset", args.preset is not None, "a preset configures a local model's prompt and readout"),
        ("--calibration", args.calibration is not None, "score, then `semif calibrate apply` the records"),
        ("--batch-calibrate", bool(args.batch_calibrate), "score, then `semif calibrate prior` and `apply`"),
    )
    for flag, on, hint in elsewhere:
        if on:
            raise InputError(flag, None, None, "given with --backend systemone", hint)
    if not args.base_url:
        raise InputError("--base-url", None, None, "missing for --backend systemone",
                         "--base-url http://HOST:PORT, the System One server's root")
    model = args.model if args.model != store.DEFAULT_MODEL else None  # --model NAME names the served model too
    if model is not None and args.served_model is not None and model != args.served_model:
        raise InputError("--model", None, None, f"{model!r} differs from --served-model {args.served_model!r}",
                         "one model name (--served-model NAME) for --backend systemone")
    cfg = SystemOneConfig(base_url=args.base_url, model=args.served_model or model, api_key_env=args.api_key_env,
                          concurrency=args.concurrency, retries=args.retries,
                          timeout_s=args.request_timeout if args.request_timeout is not None else 60.0,
                          question_types=args.question_types or "native")
    cfg.api_key()  # an unset variable is refused here, before the output is created
    return cfg


def _check_systemone_flags(args: argparse.Namespace) -> None:
    """``--question-types`` and ``--request-timeout`` are the remote decision API's: refused with another backend."""
    from scorer.core.errors import InputError

    for flag, value in (("--question-types", args.question_types), ("--request-timeout", args.request_timeout)):
        if value is not None:
            raise InputError(flag, None, None, f"given with --backend {args.backend}", "--backend systemone")


def _cmd_score_systemone(args: argparse.Namespace, decisions: list[Any]) -> int:
    """``semif score --backend systemone``: the rows asked of a remote System One server, records written as for a
    local run (create-only, locked, resumable)."""
    from scorer.cli import err, stop_code, stop_word
    from scorer.scoring.file_run import resume_point
    from scorer.scoring.systemone_run import run_systemone

    cfg = _systemone_config(args)
    inp, out = Path(args.input), Path(args.output)
    parts = {"input_sha256": sha256_file(inp), "semif": __version__}
    bar: Any = None

    def start(n: int, skip: int) -> None:
        nonlocal bar
        if skip:
            print(f"[semif] resuming: {skip} of {n} records already in {out}", file=sys.stderr)
        bar = _progress(n, "score systemone", skip)

    sink = RecordsOutput.resume(out) if args.resume else RecordsOutput.create(out)
    try:
        with sink:
            try:
                if args.resume:  # a file that is not this input's records is refused before any request
                    sink.count_kept(resume_point(sink.read(), out, None, decisions))
                run_systemone(decisions, cfg, sink, parts, temperature=args.temperature, echo=args.echo,
                              on_record=lambda _r: bar.update(1), on_start=start)
            finally:
                if bar is not None:
                    bar.close()
    except KeyboardInterrupt as exc:
        code = stop_code(exc)
        err(f"{stop_word(code)}; {sink.kept_note(len(decisions))}")
        return code
    except OSError as exc:
        err(f"{os_error_text(exc)}; {sink.kept_note(len(decisions))}")
        return 1
    print(f"[semif] wrote {out} (asked {cfg.base_url}/v1/systemone)", file=sys.stderr)
    if args.summary:
        from scorer.evaluation.tables import print_table
        from scorer.formats.records import read_records

        print_table(read_records(out))
    return 0


def _ray_options(args: argparse.Namespace) -> RayOptions:
    """The :class:`RayOptions` of ``semif score``'s arguments; refuses what the Ray engine does not do."""
    for flag, on in (("--permute", args.permute > 1), ("--temperature", args.temperature is not None),
                     ("--exact", bool(getattr(args, "exact", False))), ("--echo", args.echo is not None),
                     (f"--slots {args.slots}", args.slots != "letters"), ("--demos", args.demos is not None),
                     (f"--layout {args.layout}", args.layout != "state-major")):
        if on:
            raise ValidationError(f"{flag} is not supported with --engine ray (use the local engine)")
    if not args.cpus_per_actor > 0 or args.gpus_per_actor < 0:
        raise ValidationError("--cpus-per-actor must be > 0 and --gpus-per-actor >= 0")
    return RayOptions(args.address, args.actors, args.cpus_per_actor, args.gpus_per_actor)


def _progress(total: int, desc: str, initial: int = 0) -> Any:
    from scorer.core.progress import bar

    return bar(total, desc, initial)


def _cmd_score(args: argparse.Namespace) -> int:
    from scorer.cli import err, stop_code, stop_word
    from scorer.formats.rows import load_decisions
    from scorer.scoring.drift import load_report
    from scorer.scoring.file_run import resume_point, run_score

    inp, out = Path(args.input), Path(args.output)
    decisions = load_decisions(inp)  # every line validated before the model loads
    if args.backend == "systemone":
        return _cmd_score_systemone(args, decisions)
    _check_systemone_flags(args)
    preset = preset_args(args)  # a preset fills the options not given, its files checked by sha256
    if preset is not None and (args.engine == "ray" or args.fast is not None):
        from scorer.core.errors import InputError

        raise InputError("--preset", None, None, "given with " + ("--engine ray" if args.engine == "ray" else "--fast"),
                         "the local engine without live routing (their records could not name the preset)")
    layout, demos = layout_options(args)  # and every demonstration
    check_rows(preset, demos, decisions)  # never rows whose state a preset's demonstration shows
    norm = sequence_norm(args)
    check_slots_backend(args.slots, args.backend)
    exact = exact_policy(args)
    if norm is not None:  # before the output is created
        check_sequence_options(args.permute, exact, None, args.slots)
    ray_opts = _ray_options(args) if args.engine == "ray" else None  # refused before anything is opened
    if exact is not None and exact.report is not None:
        load_report(exact.report)  # a bad report path fails before the model loads
    calibration = check_calibration_args(args)  # a bad calibration file too
    routing = _route_policy(args)  # bad SPECs, threshold and calibration files too
    if calibration is not None and routing is None and ray_opts is None:
        from scorer import cli

        cli.check_calibration_model(calibration, backend_config(args))  # another model's file: refused before load
    if ray_opts is not None and (calibration is not None or args.batch_calibrate):
        raise ValidationError("--calibration and --batch-calibrate are not available with --engine ray yet (score "
                              "with the Ray engine, then `semif calibrate apply` the records)")
    total = len(decisions)
    parts = {"input_sha256": sha256_file(inp), "semif": __version__}
    bar: Any = None

    def start(n: int, skip: int) -> None:
        nonlocal bar
        if skip:
            print(f"[semif] resuming: {skip} of {n} records already in {out}", file=sys.stderr)
        bar = _progress(n, f"score {mode}", skip)

    # The output is created (or, with --resume, opened) and locked before the model loads: a second run on
    # the same --output is refused here, and nothing is written or cut until the configuration is checked.
    # A batch-calibrated run streams its raw phase into OUT.raw.jsonl (that is the locked records file);
    # OUT itself appears whole, atomically, once the in-run prior is fitted.
    if args.batch_calibrate:
        from scorer.calibration.batch import raw_path

        if out.exists() and not args.resume:
            raise refuse_overwrite(out, "pass --resume to continue that run, or choose another --output")
        records_path = raw_path(out)
    else:
        records_path = out
    sink = RecordsOutput.resume(records_path) if args.resume else RecordsOutput.create(records_path)
    mode = (routing[2] or args.mode) if routing else args.mode
    prefixes = RadixCache(args.prefix_cache_bytes)
    cfg = ScoreConfig(mode=mode, run_parts=parts, resume=args.resume, max_batch_tokens=args.max_batch_tokens,
                      permute=args.permute, temperature=args.temperature, exact=exact, calibration=calibration,
                      on_uncovered=args.uncovered, echo=args.echo, slots=args.slots, sequence_norm=norm,
                      layout=layout, demos=demos, prefix_cache=prefixes, preset=preset)

    def chose(c: Any) -> None:
        print(f"[semif] {c.describe()}", file=sys.stderr)

    try:
        with sink:
            try:
                if args.resume:  # a file that is not this input's records is refused before the model loads
                    sink.count_kept(resume_point(sink.read(), records_path, None, decisions))
                if ray_opts is not None:
                    from scorer.serving.ray_data import run_score_ray

                    run_score_ray(decisions, backend_config(args), sink, args.mode, parts, args.max_batch_tokens,
                                  ray_opts, on_record=lambda _r: bar.update(1), on_start=start)
                elif routing is not None:
                    from dataclasses import replace

                    from scorer import cli

                    (fast_cfg, acc_cfg), make, _ = routing
                    backend = cli.load_backend(fast_cfg)
                    policy = make(cli.load_backend(acc_cfg), demos)
                    run_score(decisions, backend, sink, replace(cfg, route=policy),
                              on_record=lambda _r: bar.update(1), on_start=start)
                    print(f"[semif] routing: {policy.escalated} decisions escalated to the accurate engine "
                          f"(margin < {policy.threshold:g} or a tie)", file=sys.stderr)
                else:
                    backend = load_model(args)
                    if args.batch_calibrate:
                        from scorer.scoring.file_run import run_batch_calibrated

                        report_batch(run_batch_calibrated(decisions, backend, out, cfg, args.batch_calibrate,
                                                          args.calibration_min_rows, args.calibration_fallback,
                                                          raw_sink=sink,
                                                          on_record=lambda _r: bar.update(1), on_start=start,
                                                          on_layout=chose))
                    else:
                        run_score(decisions, backend, sink, cfg, on_record=lambda _r: bar.update(1), on_start=start,
                                  on_layout=chose)
            finally:
                if bar is not None:
                    bar.close()
                prefixes.clear()
    except KeyboardInterrupt as exc:
        code = stop_code(exc)
        err(f"{stop_word(code)}; {sink.kept_note(total)}")
        return code
    except OSError as exc:
        err(f"{os_error_text(exc)}; {sink.kept_note(total)}")
        return 1
    if calibration is not None:
        from scorer.calibration.batch import mix_warnings
        from scorer.formats.records import read_records

        for w in mix_warnings(read_records(out)):  # a stored prior shows a skewed batch (docs: calibration)
            print(f"[semif] warning: {w}", file=sys.stderr)
    if exact is not None:
        print(f"[semif] exact: bound {exact.bound:.3g} ({exact.block.get('source')}, max |dp| "
              f"{exact.block.get('max_abs_dp'):.3g}, safety {exact.safety:g}); {exact.escalated} decisions re-scored "
              f"fresh in {exact.escalate_s:.2f} s, probe {exact.probe_s:.2f} s", file=sys.stderr)
    if prefixes.stats.hits + prefixes.stats.partial + prefixes.stats.misses:
        print(f"[semif] {prefixes.summary()}", file=sys.stderr)
    print(f"[semif] wrote {out}", file=sys.stderr)
    if args.summary:
        from scorer.evaluation.tables import print_table
        from scorer.formats.records import read_records

        print_table(read_records(out))
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from scorer.evaluation.tables import print_table
    from scorer.formats.records import read_records

    policy = policy_arg(args)  # checked before the records are read
    print_table(read_records(Path(args.run)), policy)
    return 0
