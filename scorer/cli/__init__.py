"""The ``semif`` command line: argument parsing, progress bars, exit codes and error messages.

One module per command group (``scorer.cli.score``, ``.eval``, ``.versus``…), each with
``register(subparsers)`` and its ``_cmd_*`` functions; :mod:`scorer.cli.arguments` holds the options several
commands share. Commands turn their arguments into the typed configs of the runs (:mod:`scorer.scoring`,
:mod:`scorer.serving.service`…), which never see argparse. Nothing outside this package imports it.
:mod:`scorer.cli.reference` writes the command-line reference (``docs/cli.md``) from these definitions.

Exit status: 0 success, 2 bad input / refused model / refused output / validation failure (a one-line
message, no traceback), 1 environment fault (an ``OSError``: disk full, read-only folder, a directory where
a file should be; one line with the errno text and the path), 130 interrupted by SIGINT, 143 by SIGTERM
(partial output kept and reported; rerun with ``--resume``).
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from scorer import __version__
from scorer.backends import load_backend
from scorer.core.errors import SemifError, Terminated
from scorer.core.io import os_error_text

__all__ = ["build_parser", "check_calibration_model", "load_backend", "main"]

_SHIPPED_LOADER = load_backend
"""SemIf's own loader; :data:`load_backend` is the seam a test (fake backends) or an embedder replaces."""

COMMAND_MODULES: tuple[str, ...] = (
    "scorer.cli.score",
    "scorer.cli.ask",
    "scorer.cli.prompt",
    "scorer.cli.models",
    "scorer.cli.versus",
    "scorer.cli.trace",
    "scorer.cli.eval",
    "scorer.cli.calibrate",
    "scorer.cli.perturb",
    "scorer.cli.order",
    "scorer.cli.route",
    "scorer.cli.drift",
    "scorer.cli.bench",
    "scorer.cli.compare",
    "scorer.cli.quant",
    "scorer.cli.serve",
    "scorer.cli.mcp",
    "scorer.cli.engine",
    "scorer.cli.site",
)
"""Modules that add subcommands, in the order ``semif --help`` lists them (imports must be cheap: no torch)."""


def check_calibration_model(calibration: Any, cfg: Any) -> None:
    """Refuse, before the model loads, a calibration file that holds nothing for the model ``cfg`` names
    (:func:`scorer.calibration.apply.check_config`). Only SemIf's own loader says before loading what a config
    loads; with another one in :data:`load_backend` the model is checked once loaded (every record's is)."""
    if load_backend is _SHIPPED_LOADER:
        from scorer.calibration.apply import check_config

        check_config(calibration, cfg)


def err(msg: str) -> None:
    """One ``semif: error: …`` line on stderr."""
    print(f"semif: error: {msg}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="semif", description="Typed decisions from option-letter logits.")
    ap.add_argument("--version", action="version", version=f"semif {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return ap


def stop_code(exc: KeyboardInterrupt) -> int:
    """The exit status of an interruption: 130 (SIGINT) or 143 (SIGTERM)."""
    return int(getattr(exc, "exit_code", 130))


def stop_word(code: int) -> str:
    return "terminated (SIGTERM)" if code == Terminated.exit_code else "interrupted"


def stop_note(args: argparse.Namespace) -> str:
    """What an interrupted command leaves: a command's own ``stop_note`` (``semif serve``, ``semif mcp``: the server
    stopped), else what was written; ``--resume`` is suggested only by the commands that take it."""
    note = getattr(args, "stop_note", None)
    if note:
        return str(note)
    if hasattr(args, "resume"):
        return "outputs written so far are kept (rerun with --resume to continue)"
    return "outputs written so far are kept"


def _on_sigterm(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated()


def _handle_sigterm() -> Callable[[], None]:
    """SIGTERM is handled like SIGINT (the run stops between records, says what it kept, exits 143).
    Returns the function that restores the previous handler (signals can only be set in the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGTERM, _on_sigterm)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


def main(argv: list[str] | None = None) -> int:
    from scorer.cli.calibrate import legacy_argv

    args = build_parser().parse_args(legacy_argv(sys.argv[1:] if argv is None else argv))
    restore = _handle_sigterm()
    try:
        return int(args.func(args) or 0)
    except SemifError as exc:
        err(str(exc))
        return exc.exit_code
    except KeyboardInterrupt as exc:
        code = stop_code(exc)
        err(f"{stop_word(code)}; {stop_note(args)}")
        return code
    except OSError as exc:  # an environment fault (disk full, permissions, a directory where a file should be)
        err(os_error_text(exc))
        return 1
    finally:
        restore()


if __name__ == "__main__":
    sys.exit(main())
