"""The ``semif`` command line: argument parsing, progress bars, exit codes and error messages.

Exit status: 0 success, 2 bad input / refused model / refused output / validation failure (a one-line
message, no traceback), 1 environment fault (an ``OSError``: disk full, read-only folder, a directory where
a file should be; one line with the errno text and the path), 130 interrupted by SIGINT, 143 by SIGTERM
(partial output kept and reported; rerun with ``--resume``).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from scorer import __version__, store
from scorer.backends import BACKENDS, BackendConfig, load_backend
from scorer.errors import SemifError, Terminated
from scorer.io import RecordsOutput, os_error_text, refuse_overwrite


def _err(msg: str) -> None:
    print(f"semif: error: {msg}", file=sys.stderr)


def _progress(total: int, desc: str, initial: int = 0) -> Any:
    from scorer.progress import bar

    return bar(total, desc, initial)


def _add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model", default=store.DEFAULT_MODEL,
                   help=f"registry key ({', '.join(store.REGISTRY)}), .gguf path, local HF folder, or ORG/NAME "
                        f"(with --revision); default {store.DEFAULT_MODEL}")
    g.add_argument("--revision", help="hub commit (40 hex) for ORG/NAME models")
    g.add_argument("--backend", choices=BACKENDS, default="torch")
    g.add_argument("--device", choices=("cpu", "cuda", "mps"), default="cpu", help="torch device")
    g.add_argument("--dtype", choices=("float32", "bfloat16", "float16"),
                   help="torch dtype (default fp32 on cpu, bf16 on cuda)")
    g.add_argument("--threads", "--llama-threads", type=positive_int,
                   help="CPU threads (torch intra-op / llama.cpp n_threads), >= 1")
    g.add_argument("--gguf", help="llama.cpp: GGUF file to load (default: the model store's file for --model)")
    g.add_argument("--llama-gpu-layers", default="0", help="llama.cpp: layers to offload, N or auto (default 0)")


def backend_config(args: argparse.Namespace) -> BackendConfig:
    return BackendConfig(model=args.model, revision=args.revision, backend=args.backend, device=args.device,
                         dtype=args.dtype, threads=args.threads, gguf=args.gguf,
                         llama_gpu_layers=args.llama_gpu_layers)


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (``0`` and negatives are refused, never silently ignored)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1")
    return int(text)


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (v > 0 and v != float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number > 0")
    return v


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- score -------------------------------------------------------------------------------------------
def _cmd_score(args: argparse.Namespace) -> int:
    from scorer.calibration.cli import check_score_args as check_calibration_args
    from scorer.runs.drift import load_report, policy_from_args
    from scorer.runs.score import resume_point, run_score
    from scorer.schema import load_decisions

    inp, out = Path(args.input), Path(args.output)
    decisions = load_decisions(inp)  # every line validated before the model loads
    exact = policy_from_args(args)
    ray_opts = None
    if args.engine == "ray":  # options the Ray engine does not do are refused before anything is opened
        from scorer.ray_engine import options_from_args

        ray_opts = options_from_args(args)
    if exact is not None and exact.report is not None:
        load_report(exact.report)  # a bad report path fails before the model loads
    calibration = check_calibration_args(args)  # a bad calibration file too
    if ray_opts is not None and (calibration is not None or args.batch_calibrate):
        from scorer.errors import ValidationError

        raise ValidationError("--calibration and --batch-calibrate are not available with --engine ray yet (score "
                              "with the Ray engine, then `semif calibrate apply` the records)")
    total = len(decisions)
    parts = {"input_sha256": file_sha256(inp), "semif": __version__}
    bar: Any = None

    def start(n: int, skip: int) -> None:
        nonlocal bar
        if skip:
            print(f"[semif] resuming: {skip} of {n} records already in {out}", file=sys.stderr)
        bar = _progress(n, f"score {args.mode}", skip)

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
    kw = {"on_record": lambda _r: bar.update(1), "on_start": start, "permute": args.permute,
          "temperature": args.temperature, "exact": exact}
    try:
        with sink:
            try:
                if args.resume:  # a file that is not this input's records is refused before the model loads
                    resume_point(sink.read(), records_path, None, decisions)
                if ray_opts is not None:
                    from scorer.ray_engine import run_score_ray

                    run_score_ray(decisions, backend_config(args), sink, args.mode, parts, args.max_batch_tokens,
                                  ray_opts, on_record=lambda _r: bar.update(1), on_start=start)
                else:
                    backend = load_backend(backend_config(args))
                    if args.batch_calibrate:
                        from scorer.calibration.batch import run_batch_calibrated
                        from scorer.calibration.cli import report_batch

                        report_batch(run_batch_calibrated(decisions, backend, out, args.mode, parts, args.resume,
                                                          args.batch_calibrate, args.calibration_min_rows,
                                                          max_batch_tokens=args.max_batch_tokens, raw_sink=sink,
                                                          **kw))
                    else:
                        run_score(decisions, backend, sink, args.mode, parts, args.resume, args.max_batch_tokens,
                                  calibration=calibration, **kw)
            finally:
                if bar is not None:
                    bar.close()
    except KeyboardInterrupt as exc:
        code = _stop_code(exc)
        _err(f"{_stop_word(code)}; {sink.kept_note(total)}")
        return code
    except OSError as exc:
        _err(f"{os_error_text(exc)}; {sink.kept_note(total)}")
        return 1
    if calibration is not None:
        from scorer.calibration.batch import mix_warnings
        from scorer.schema import read_records

        for w in mix_warnings(read_records(out)):  # a stored prior shows a skewed batch (README: calibration)
            print(f"[semif] warning: {w}", file=sys.stderr)
    if exact is not None:
        print(f"[semif] exact: bound {exact.bound:.3g} ({exact.block.get('source')}, max |dp| "
              f"{exact.block.get('max_abs_dp'):.3g}, safety {exact.safety:g}); {exact.escalated} decisions re-scored "
              f"fresh in {exact.escalate_s:.2f} s, probe {exact.probe_s:.2f} s", file=sys.stderr)
    print(f"[semif] wrote {out}", file=sys.stderr)
    if args.summary:
        from scorer.report import print_table
        from scorer.schema import read_records

        print_table(read_records(out))
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from scorer.report import print_table
    from scorer.schema import read_records

    print_table(read_records(Path(args.run)))
    return 0


# --- prompt ------------------------------------------------------------------------------------------
def _cmd_prompt(args: argparse.Namespace) -> int:
    from scorer.errors import InputError
    from scorer.prompt import render
    from scorer.schema import load_decisions

    decisions = {d.id: d for d in load_decisions(Path(args.input))}
    if args.id not in decisions:
        raise InputError(args.input, None, "id", f"no row with id {args.id!r}", "an id present in the file")
    backend_cfg = backend_config(args)
    backend = load_backend(backend_cfg)
    p = render(backend.tokenizer, decisions[args.id])
    doc = {"id": args.id, "prompt_version": p.version, "prompt_template": p.template, "prompt": p.text,
           "token_ids": p.ids, "input_tokens": len(p.ids), "letters": p.letters, "slot_token_ids": p.slot_ids,
           "prompt_sha256": p.sha256, "tokens_sha256": p.tokens_sha256, "plain_spans": p.plain_spans,
           "hash_rules": {"prompt_sha256": "sha256 of the prompt string, UTF-8",
                          "tokens_sha256": "sha256 of the token ids as little-endian int32 bytes",
                          "token_ids": "the template's control tokens parsed; plain_spans (state, question, "
                                       "options, instructions) tokenized as text, never as control tokens"},
           "model": backend.model_info()}
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        print(p.text)
        print(f"\n--- {len(p.ids)} tokens: {p.ids}", file=sys.stdout)
        slots = dict(zip(p.letters, p.slot_ids, strict=True))
        print(f"prompt_sha256 {p.sha256}\ntokens_sha256 {p.tokens_sha256}\nslots {slots}")
    return 0


# --- models ------------------------------------------------------------------------------------------
def _cmd_models(args: argparse.Namespace) -> int:
    keys = args.keys or ([] if args.action == "list" else [store.DEFAULT_MODEL])
    if args.action == "list":
        print(f"{'key':<14} {'status':<10} {'size':>12}  {'licence':<36} description")
        for e in store.REGISTRY.values():
            print(f"{e.key:<14} {store.status(e):<10} {e.size:>12,}  {e.licence:<36} {e.description}")
        print(f"cache: {store.cache_dir()}")
        return 0
    for key in keys:
        entry = store.get_entry(key)
        if args.action == "fetch":
            path = store.fetch(entry)
            print(f"{key}: ok {path}")
        else:
            sha = store.verify(entry)
            print(f"{key}: ok sha256 {sha}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from scorer.calibration.cli import add_score_args as add_calibration_args
    from scorer.runs.drift import add_exact_args

    ap = argparse.ArgumentParser(prog="semif", description="Typed decisions from option-letter logits.")
    ap.add_argument("--version", action="version", version=f"semif {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("score", help="score decisions (JSONL in, JSONL records out)")
    p.add_argument("--input", required=True, help="decisions, one JSON object per line")
    p.add_argument("--output", required=True, help="records (JSONL); never overwritten")
    p.add_argument("--mode", choices=("direct", "serial", "shared"), default="direct")
    p.add_argument("--max-batch-tokens", type=positive_int, default=4096,
                   help="shared mode: suffix tokens per pass, >= 1")
    p.add_argument("--resume", action="store_true",
                   help="continue a killed run into the same --output (refused, file unchanged, unless every record "
                        "in it is from this same configuration; an empty file is accepted)")
    p.add_argument("--summary", action="store_true", help="print a table of the decisions when done")
    p.add_argument("--permute", type=positive_int, default=1, metavar="K",
                   help="average option probabilities over K cyclic option orderings, aligned by id (K passes)")
    p.add_argument("--temperature", type=_positive_float, metavar="T",
                   help="probabilities = softmax(option_logits / T), recorded in each record (semif calibrate)")
    _add_model_args(p)
    add_exact_args(p)
    add_calibration_args(p)
    from scorer.ray_engine import add_engine_args

    add_engine_args(p)
    p.set_defaults(func=_cmd_score)

    p = sub.add_parser("show", help="print a readable table of a records file")
    p.add_argument("run")
    p.set_defaults(func=_cmd_show)

    p = sub.add_parser("prompt", help="print the exact prompt, token ids and hashes of one row")
    p.add_argument("--input", required=True)
    p.add_argument("--id", required=True)
    p.add_argument("--json", action="store_true")
    _add_model_args(p)
    p.set_defaults(func=_cmd_prompt)

    p = sub.add_parser("models", help="the embedded model store")
    p.add_argument("action", choices=("list", "fetch", "verify"))
    p.add_argument("keys", nargs="*", help=f"registry keys (default {store.DEFAULT_MODEL})")
    p.set_defaults(func=_cmd_models)

    # Further commands live next to their runs: each module has ``register(subparsers)``.
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return ap


# Modules that add subcommands (import must be cheap: no torch at import time).
COMMAND_MODULES: tuple[str, ...] = (
    "scorer.runs.versus",
    "scorer.trace",
    "scorer.runs.eval",
    "scorer.runs.drift",
    "scorer.runs.bench",
    "scorer.runs.compare",
    "scorer.runs.quant",
    "scorer.serve",
)


def _stop_code(exc: KeyboardInterrupt) -> int:
    return int(getattr(exc, "exit_code", 130))


def _stop_word(code: int) -> str:
    return "terminated (SIGTERM)" if code == Terminated.exit_code else "interrupted"


def _on_sigterm(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated()


def _handle_sigterm() -> Callable[[], None]:
    """SIGTERM is handled like SIGINT (the run stops between records, says what it kept, exits 143).
    Returns the function that restores the previous handler (signals can only be set in the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    return lambda: signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    from scorer.calibration.cli import legacy_argv

    args = build_parser().parse_args(legacy_argv(sys.argv[1:] if argv is None else argv))
    restore = _handle_sigterm()
    try:
        return int(args.func(args) or 0)
    except SemifError as exc:
        _err(str(exc))
        return exc.exit_code
    except KeyboardInterrupt as exc:
        code = _stop_code(exc)
        _err(f"{_stop_word(code)}; outputs written so far are kept (a records run: rerun with --resume to continue)")
        return code
    except OSError as exc:  # an environment fault (disk full, permissions, a directory where a file should be)
        _err(os_error_text(exc))
        return 1
    finally:
        restore()


if __name__ == "__main__":
    sys.exit(main())
