"""One definition of how a scorer scores, for the four faces (issue #37): the Python API's keywords, the command
line's flags (``semif ask``, ``semif serve``, ``semif mcp``), the HTTP service's config and MCP's ``serve_mcp`` have
:class:`~scorer.scoring.options.ScorerOptions`' names and defaults, and a face given nothing scores with its
defaults."""

from __future__ import annotations

import argparse
import inspect
from dataclasses import fields

import pytest
from fakes import FakeBackend

from scorer import Scorer, cli
from scorer.backends import BackendConfig
from scorer.cli.arguments import scorer_options
from scorer.scoring.options import ScorerOptions
from scorer.serving.mcp import serve_mcp
from scorer.serving.service import ServeConfig

DEFAULTS = {f.name: f.default for f in fields(ScorerOptions)}
DEST = {"on_uncovered": "uncovered"}
"""Where a flag's name is not the option's (``--uncovered raw`` is ``on_uncovered="raw"``)."""


def test_the_api_keywords_are_the_options_with_their_defaults():
    params = inspect.signature(Scorer.__init__).parameters
    assert set(DEFAULTS) <= set(params), sorted(set(DEFAULTS) - set(params))
    assert {n: params[n].default for n in DEFAULTS} == DEFAULTS


def _parse(argv: list[str]) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser.parse_args(argv), sub.choices[argv[0]]


@pytest.mark.parametrize("argv", [["ask", "--state", "s", "--yesno", "r=Refund?"], ["serve"], ["mcp"]])
def test_the_command_line_has_a_flag_per_option_and_its_defaults(argv):
    args, parser = _parse(argv)
    dests = {a.dest for a in parser._actions}
    missing = {DEST.get(n, n) for n in DEFAULTS} - dests
    assert not missing, sorted(missing)
    assert scorer_options(args) == ScorerOptions()


def test_a_flag_given_reaches_the_options_as_the_api_keyword():
    args, _ = _parse(["serve", "--mode", "serial", "--slots", "ids", "--layout", "question-major",
                      "--max-batch-tokens", "512", "--echo", "full", "--prefix-cache-bytes", "64M"])
    assert scorer_options(args) == ScorerOptions(mode="serial", slots="ids", layout="question-major",
                                                 max_batch_tokens=512, echo="full", prefix_cache_bytes=64 << 20)


def test_the_http_service_and_mcp_take_the_options_object():
    assert ServeConfig().options == ScorerOptions()
    param = inspect.signature(serve_mcp).parameters["options"]
    assert "ScorerOptions" in str(param.annotation) and param.default is None  # None: ScorerOptions()


def test_a_scorer_built_from_the_options_equals_one_built_from_keywords():
    opts = ScorerOptions(mode="serial", slots="ids", echo="digest", max_batch_tokens=256)
    by_options = Scorer.from_options(BackendConfig(model="smollm2-135m"), opts)
    by_keywords = Scorer("smollm2-135m", "torch", **opts.kwargs())
    for s in (by_options, by_keywords):
        assert (s.mode, s.slots, s.echo, s.max_batch_tokens, s.options) == ("serial", "ids", "digest", 256, opts)


def test_every_face_gives_the_same_answer_with_the_defaults(monkeypatch):
    """The API, the command line (semif ask) and the service's scorer, all with nothing given, agree."""
    import scorer.backends as backends

    monkeypatch.setattr(backends, "load_backend", lambda cfg: FakeBackend())
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    q = {"refund": {"type": "yesno", "question": "Refund?"}}
    with Scorer(backend=FakeBackend()) as api:
        want = api.ask("my card was charged twice", q).to_json()
    with Scorer.from_options(BackendConfig(), ServeConfig().options) as served:
        assert served.ask("my card was charged twice", q).to_json() == want


