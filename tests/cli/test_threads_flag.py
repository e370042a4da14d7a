"""``--threads N|auto`` at the command line: every face that takes it parses ``auto`` and refuses the rest in the
rule's words."""

from __future__ import annotations

import argparse

import pytest

from scorer.cli import arguments
from scorer.core.errors import InputError


def test_the_model_group_takes_auto_and_numbers():
    p = argparse.ArgumentParser()
    arguments.add_model_args(p)
    assert p.parse_args(["--threads", "auto"]).threads == "auto"
    assert p.parse_args(["--llama-threads", "3"]).threads == 3
    assert arguments.backend_config(p.parse_args(["--threads", "auto"])).threads == "auto"


def test_a_spec_takes_auto_and_refuses_zero():
    cfg, _, _ = arguments.parse_spec("backend=llamacpp,model=smollm2-135m,threads=auto", "--fast")
    assert cfg.threads == "auto"
    cfg, _, _ = arguments.parse_spec("backend=torch,model=smollm2-135m,threads=2", "--fast")
    assert cfg.threads == 2
    with pytest.raises(InputError, match="is not an integer >= 1 or 'auto'"):
        arguments.parse_spec("backend=torch,model=smollm2-135m,threads=0", "--fast")


def test_engine_start_takes_auto(capsys):
    from scorer import cli

    parser = cli.build_parser()
    assert parser.parse_args(["engine", "start", "llama-server", "--threads", "auto"]).threads == "auto"
    with pytest.raises(SystemExit):
        parser.parse_args(["engine", "start", "llama-server", "--threads", "0"])
    assert "0 is not an integer >= 1 or 'auto'" in capsys.readouterr().err
