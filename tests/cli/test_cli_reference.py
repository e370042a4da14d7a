"""The command-line reference, docs/cli.md, is generated from the argparse definitions (scorer.cli.reference;
scripts/cli_reference.py writes it): the committed page must be what the code makes, and every argument and command
must have a help text."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from scorer.cli import build_parser
from scorer.cli.reference import commands, missing_help, reference

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli.md"


def test_the_committed_cli_reference_is_fresh() -> None:
    assert PAGE.read_text(encoding="utf-8") == reference(build_parser()), (
        "docs/cli.md is stale: run python scripts/cli_reference.py")


def test_every_argument_and_command_has_a_help_text() -> None:
    assert missing_help(build_parser()) == []


def test_missing_help_names_the_argument() -> None:
    ap = argparse.ArgumentParser(prog="semif")
    sub = ap.add_subparsers()
    p = sub.add_parser("x", help="a command")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("file", help="a file")
    sub.add_parser("y")
    assert missing_help(ap) == ["semif x --quiet", "semif y"]


def test_the_page_lists_every_command_argument_and_default() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for path, _, p in commands(build_parser()):
        if len(path) > 1:
            assert f"\n## {' '.join(path)}\n" in text, path
        for a in p._actions:
            for flag in a.option_strings:
                if flag not in ("-h", "--help", "--version"):
                    assert f"`{flag}`" in text, (path, flag)
    # defaults as a reader types them, never a machine's path
    assert "| `--input` | `INPUT` | `scorer/data/versus/ticket-21.json` |" in text
    assert str(ROOT) not in text


def test_calibrate_help_lists_thresholds() -> None:
    out = subprocess.run([sys.executable, "-m", "scorer.cli", "--help"], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout
    calibrate = " ".join(out.split("calibrate  ", 1)[1].split("perturb", 1)[0].split())
    assert "thresholds" in calibrate, calibrate
    sub = subprocess.run([sys.executable, "-m", "scorer.cli", "calibrate", "--help"], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert "thresholds" in sub


def test_the_script_checks_and_writes_the_same_page(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "cli_reference.py"), "--check"], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
