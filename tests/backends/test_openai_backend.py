"""``--backend openai`` against fake engines (tests/fake_engine.py :class:`FakeEngine`: vLLM and llama.cpp's server
over ``httpx.MockTransport``, the fake logits log-softmaxed in float32 as each engine does): its records equal
the fake backend's over the same logits in every mode; llama.cpp's slot-restricted fallback; retries and
their bounds; a run whose engine dies mid-way, resumed; every refusal before anything is scored; the context
limit an engine leaves a prompt. No model, no server, no network.
"""

from __future__ import annotations

import functools
import math
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from fake_engine import ENGINE_URL, SERVED, FakeEngine, engine_backend, fake_reference
from fakes import VOCAB, FakeBackend, FakeTokenizer

from scorer import Scorer, cli
from scorer.backends import BackendConfig
from scorer.backends import openai_backend as ob
from scorer.core.errors import EngineError, ValidationError
from scorer.formats.records import read_records
from scorer.formats.rows import parse_decision
from scorer.scoring.modes import prepare

KINDS = ("vllm", "llamacpp")
MODES = ("direct", "serial", "shared")
LIFT = {"A": 6.0, "B": 6.0, "C": 6.0, "D": 6.0}
"""Slot bias that puts every slot in llama.cpp's top 20 (a N(0, 1) logit + 6 against 4,176 N(0, 1) logits):
no fallback, and an allowed-token mass far from 0."""
SUNK = {"A": -3.0, "B": -3.0, "C": -3.0, "D": -3.0}
"""Slot bias that puts every slot far below llama.cpp's top 20: every decision goes through the fallback."""
FALLBACK_TOL = 1e-5
"""Probabilities through llama.cpp's fallback: float32 rounding of ``logit + 100`` (a 7.6e-6 step near 100)
moves a slot's relative log-probability by up to 3.8e-6 (the dialect's documented ~1e-5)."""
_VOLATILE = ("timing", "run", "cache_hit", "cache")  # cache: what the process's earlier rows left cached
_Transport = ob.Transport


def _rows(n_states: int = 3) -> list[dict[str, Any]]:
    """``n_states`` states × 3 criteria with 2, 3 and 4 options (so shared mode has groups of three)."""
    out = []
    for s in range(n_states):
        state = {"ticket": f"T-{s}", "note": f"customer {s} asks about order {100 + s}", "items": [s, s + 1]}
        for q, k in enumerate((2, 3, 4)):
            opts = [{"id": o, "description": f"the answer is {o}"} for o in ("yes", "no", "unsure", "n/a")[:k]]
            out.append({"id": f"s{s}-q{q}", "state": state, "question": f"Is criterion {q} met?", "options": opts})
    return out


def _records(backend: Any, mode: str, rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    with Scorer(backend=backend, mode=mode, slots="letters") as s:  # one position: the remote engine's readout
        return [d.record for d in s.decide_many(rows or _rows())]


def _stable(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in _VOLATILE} for r in recs]


def _assert_same_numbers(got: list[dict[str, Any]], want: list[dict[str, Any]], prob_tol: float = 1e-6,
                         mass: str = "exact") -> None:
    """Records of the openai backend against the fake backend's over the same logits: the same prompts and
    ids, probabilities within ``prob_tol``, the same choice and tie; the allowed-token mass within 1e-6 (and
    1e-5 relative) when ``mass`` is ``exact``, at least the true mass when it is ``bound``."""
    assert [r["id"] for r in got] == [r["id"] for r in want]
    for g, w in zip(got, want, strict=True):
        for k in ("prompt_sha256", "tokens_sha256", "input_tokens", "option_ids", "letters", "choice", "tie",
                  "tied_option_ids", "mode", "prefix_tokens", "suffix_tokens", "prefix_sha256"):
            assert g[k] == w[k], (g["id"], k, g[k], w[k])
        dp = float(np.max(np.abs(np.subtract(g["probabilities"], w["probabilities"]))))
        assert dp <= prob_tol, (g["id"], dp)
        gm, wm = g["allowed_token_mass"], w["allowed_token_mass"]
        if mass == "exact":
            assert abs(gm - wm) <= 1e-6 and abs(gm / wm - 1.0) <= 1e-5, (g["id"], gm, wm)
        else:
            assert gm >= wm, (g["id"], gm, wm)


@pytest.fixture(autouse=True)
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every backoff's wait, recorded instead of slept."""
    out: list[float] = []
    monkeypatch.setattr(time, "sleep", out.append)
    return out


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``serve(engine)``: the CLI's ``--backend openai`` reaches ``engine``. ``cli.load_backend`` builds the real
    OpenAIBackend from the command line's config (base URL, API key, retries), with the fake tokenizer as the
    reference and its Transport speaking to the engine instead of the network."""

    def use(engine: FakeEngine, tokenizer: FakeTokenizer | None = None) -> FakeEngine:
        monkeypatch.setattr(ob, "Transport", functools.partial(_Transport, wire=engine.wire))
        monkeypatch.setattr(cli, "load_backend", lambda cfg: ob.OpenAIBackend(cfg, reference=fake_reference(tokenizer)))
        return engine

    return use


def _write_rows(tmp_path: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    p = tmp_path / "rows.jsonl"
    p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows or _rows()))
    return p


def _score(tmp_path: Path, out: Path, *extra: str, base_url: str = ENGINE_URL) -> int:
    return cli.main(["score", "--input", str(_write_rows(tmp_path)), "--output", str(out), "--backend", "openai",
                     "--base-url", base_url, *extra])


def _one_line_error(err: str) -> str:
    lines = [x for x in err.splitlines() if x.startswith("semif: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# --- 1. the same records as the fake backend over the same logits ----------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("kind", "bias"), [("vllm", {}), ("vllm", LIFT), ("llamacpp", LIFT)],
                         ids=["vllm", "vllm-lifted", "llamacpp-lifted"])
def test_records_equal_the_fake_backends_over_the_same_logits(kind: str, bias: dict[str, float], mode: str) -> None:
    engine = FakeEngine(kind, bias=bias)
    backend = engine_backend(engine)
    before = engine.count("/v1/completions")
    got = _records(backend, mode)
    want = _records(FakeBackend(bias=bias), mode)
    _assert_same_numbers(got, want)
    for g, w in zip(got, want, strict=True):
        assert g["full_vocab_argmax"] == w["full_vocab_argmax"]  # the engine's greedy token is in every answer
        assert g["kernel"] == w["kernel"].replace("fake.packed", "openai.engine-batch").replace("fake.", "openai.")
        assert g["model"]["backend"] == "openai" and g["model"]["engine"]["kind"] == kind
    info = backend.model_info()["engine"]
    assert info["slot_fallbacks"] == 0 and info["retried"] == 0
    # one completion per decision, plus one warm-up per prefix in the modes that prefill
    prefills = 0 if mode == "direct" else len({orjson.dumps(r["state"]) for r in _rows()})
    assert engine.count("/v1/completions") - before == len(got) + prefills
    if kind == "vllm":  # exactly the slots are asked for (in shared mode the requests of a group run at once)
        asked = [b["logprob_token_ids"] for _, p, b in engine.log if p == "/v1/completions" and "logprobs" in b]
        assert sorted(asked) == sorted([ord(letter) + 16 for letter in r["letters"]] for r in got)
    backend.close()


def test_the_probabilities_are_the_softmax_over_the_slots_log_probabilities() -> None:
    """What the engine answered, read back: the record's option logits are the engine's log-probabilities of
    the slots, and the probabilities their softmax."""
    engine = FakeEngine("vllm")
    backend = engine_backend(engine)
    (rec,) = _records(backend, "direct", _rows(1)[:1])
    body = next(b for m, p, b in reversed(engine.log) if p == "/v1/completions")
    x = engine.logits(body["prompt"]).astype(np.float64)
    lp = x - (x.max() + math.log(float(np.exp(x - x.max()).sum())))
    slots = body["logprob_token_ids"]
    assert np.allclose(rec["option_logits"], lp[slots], atol=2e-6, rtol=0)
    e = np.exp(lp[slots] - lp[slots].max())
    assert np.allclose(rec["probabilities"], e / e.sum(), atol=1e-6, rtol=0)
    assert rec["allowed_token_mass"] == pytest.approx(float(np.exp(lp[slots]).sum()), rel=1e-5)


class _BosTokenizer(FakeTokenizer):
    """A reference that prepends a BOS token (id 1) to every encoding, as the GGUF tokenizers of Llama-family
    models do; the engine's tokenize (add_special false) leaves it out."""

    def __init__(self) -> None:
        super().__init__()
        self.bos_id_prepended = 1

    def encode(self, text: str, plain: Any = ()) -> list[int]:
        ids = super().encode(text, plain)
        return ids if ids[:1] == [1] else [1, *ids]


@pytest.mark.parametrize("kind", KINDS)
def test_a_reference_that_prepends_bos_is_checked_and_sent_with_it(kind: str) -> None:
    engine = FakeEngine(kind, bias=LIFT)
    backend = engine_backend(engine, _BosTokenizer())
    got = _records(backend, "shared")
    _assert_same_numbers(got, _records(FakeBackend(tokenizer=_BosTokenizer(), bias=LIFT), "shared"))
    assert all(b["prompt"][0] == 1 for _, p, b in engine.log if p == "/v1/completions")


@pytest.mark.parametrize(("ignored", "message"), [
    ("logprob_token_ids", r"returned no log-probability for token ids \[82\] .* older than 0\.32"),
    ("return_tokens_as_token_ids", "named a token 'A' .* return_tokens_as_token_ids was not honoured"),
])
def test_a_vllm_that_ignores_what_the_backend_needs_is_refused(ignored: str, message: str) -> None:
    engine = FakeEngine("vllm", ignores=[ignored], bias={"A": 30.0})  # the greedy token is the slot A
    with pytest.raises(EngineError, match=message):
        _records(engine_backend(engine), "direct", _rows(1)[:1])


# --- 2. llama.cpp: slots outside the top 20 ---------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_llamacpp_slots_outside_the_top_k_are_read_further_down_the_vocabulary(mode: str) -> None:
    engine = FakeEngine("llamacpp", bias=SUNK)
    backend = engine_backend(engine)
    got = _records(backend, mode)
    want = _records(FakeBackend(bias=SUNK), mode)
    _assert_same_numbers(got, want, prob_tol=1e-6)  # exact, the mass too: no bound, no fallback
    asked = [b["n_probs"] for _, p, b in engine.log if p == "/v1/completions" and "n_probs" in b
             and not b.get("post_sampling_probs")]
    assert 20 in asked and max(asked) > 20  # the top 20 first, then more of the vocabulary
    assert max(asked) <= VOCAB


@pytest.mark.parametrize("mode", MODES)
def test_llamacpp_one_slot_in_the_top_k_fixes_the_exact_mass(mode: str) -> None:
    bias = {"A": 6.0, "B": -1.0, "C": -1.0, "D": -1.0}
    engine = FakeEngine("llamacpp", bias=bias)
    backend = engine_backend(engine)
    got = _records(backend, mode)
    want = _records(FakeBackend(bias=bias), mode)
    _assert_same_numbers(got, want, prob_tol=FALLBACK_TOL, mass="exact")
    assert backend.model_info()["engine"]["slot_fallbacks"] == len(got)


def test_llamacpp_a_slot_the_sampler_drops_is_an_engine_error() -> None:
    """A slot whose post-sampling probability is 0 is left out by the server: refused, not guessed."""
    engine = FakeEngine("llamacpp", bias={"A": 60.0, "B": -60.0})
    backend = engine_backend(engine)
    with pytest.raises(EngineError, match="expected exactly the slots"):
        _records(backend, "direct", _rows(1)[:1])


# --- 3. retries ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fault", [503, "connect"])
def test_a_busy_engine_is_retried_to_the_same_records(kind: str, fault: int | str, waits: list[float]) -> None:
    clean = _records(engine_backend(FakeEngine(kind, bias=LIFT)), "shared")
    engine = FakeEngine(kind, bias=LIFT)
    backend = engine_backend(engine)
    engine.fail(2, fault, path="/v1/completions")
    got = _records(backend, "shared")
    assert _stable(got) == _stable(clean)
    assert backend.model_info()["engine"]["retried"] == 2
    assert len(waits) == 2 and all(0 < w <= 8.0 for w in waits)


@pytest.mark.parametrize(("retry_after", "wait"), [("3", 3.0), ("0.5", 0.5), ("3600", 30.0),
                                                   ("Wed, 21 Oct 2015 07:28:00 GMT", None)])
def test_429_waits_as_long_as_retry_after_says_within_bounds(retry_after: str, wait: float | None,
                                                             waits: list[float]) -> None:
    engine = FakeEngine("vllm")
    backend = engine_backend(engine)
    engine.fail(1, 429, retry_after=retry_after, path="/v1/completions")
    _records(backend, "direct", _rows(1)[:1])
    assert len(waits) == 1
    if wait is None:  # an HTTP date: the first backoff (0.125 to 0.25 s)
        assert 0.125 <= waits[0] <= 0.25
    else:  # at least the backoff, at most 30 s
        assert waits[0] == wait


def test_a_refusal_that_is_not_for_load_is_not_retried(waits: list[float]) -> None:
    engine = FakeEngine("vllm")
    backend = engine_backend(engine)
    engine.fail(1, 400, path="/v1/completions", body='{"error": {"message": "bad request"}}')
    with pytest.raises(EngineError, match=r"refused POST /v1/completions: HTTP 400"):
        _records(backend, "direct", _rows(1)[:1])
    assert waits == [] and backend.model_info()["engine"]["retried"] == 0


@pytest.mark.parametrize("kind", KINDS)
def test_retries_exhausted_exit_1_with_one_line_naming_the_url_and_resume(tmp_path: Path, capsys: Any, serve: Any,
                                                                          waits: list[float], kind: str) -> None:
    engine = serve(FakeEngine(kind, bias=LIFT))
    engine.fail(1000, 503, path="/v1/completions",
                body="<html>\n<head><title>503 Service Temporarily Unavailable</title></head>\n</html>\n")
    out = tmp_path / "out.jsonl"
    assert _score(tmp_path, out, "--mode", "direct", "--retries", "2") == 1
    line = _one_line_error(capsys.readouterr().err)
    assert ENGINE_URL in line and "--resume" in line and "after 3 tries" in line and "HTTP 503" in line
    assert len(waits) == 2  # no wait after the last try
    assert not out.exists()  # nothing was written: the empty file this run created is gone


# --- 4. an engine that dies mid-run, then --resume ----------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_engine_dies_mid_run_then_resume_equals_uninterrupted(tmp_path: Path, capsys: Any, serve: Any, kind: str,
                                                              mode: str) -> None:
    rows = _rows(4)
    inp = _write_rows(tmp_path, rows)
    args = ["--input", str(inp), "--backend", "openai", "--base-url", ENGINE_URL, "--mode", mode, "--retries", "2"]
    full = tmp_path / "full.jsonl"
    serve(FakeEngine(kind, bias=LIFT))
    assert cli.main(["score", "--output", str(full), *args]) == 0
    want = read_records(full)

    engine = serve(FakeEngine(kind, bias=LIFT))
    # 7 completions: direct, 7 rows; serial, a warm-up and 3 rows, a warm-up and 2 rows; shared, one whole group
    # (a warm-up and 3 rows), the second dies with its third row (a group is written once it is done)
    engine.die_after(7)
    part = tmp_path / "part.jsonl"
    capsys.readouterr()
    assert cli.main(["score", "--output", str(part), *args]) == 1
    line = _one_line_error(capsys.readouterr().err)
    assert ENGINE_URL in line and "--resume" in line
    kept = read_records(part)
    assert len(kept) == {"direct": 7, "serial": 5, "shared": 3}[mode]
    assert _stable(kept) == _stable(want[:len(kept)])

    engine.heal()
    assert cli.main(["score", "--output", str(part), "--resume", *args]) == 0
    got = read_records(part)
    assert _stable(got) == _stable(want)
    assert got[-1]["run"]["resumed_from"] == len(kept)
    assert {r["run"]["config_sha256"] for r in got} == {want[0]["run"]["config_sha256"]}


def test_resume_against_another_engine_version_is_refused(tmp_path: Path, capsys: Any, serve: Any) -> None:
    rows = _write_rows(tmp_path)
    part = tmp_path / "part.jsonl"
    args = ["--input", str(rows), "--backend", "openai", "--base-url", ENGINE_URL, "--retries", "0"]
    engine = serve(FakeEngine("vllm"))
    engine.die_after(2)
    assert cli.main(["score", "--output", str(part), "--mode", "direct", *args]) == 1
    before = part.read_bytes()
    serve(FakeEngine("vllm", version="0.33.0"))
    capsys.readouterr()
    assert cli.main(["score", "--output", str(part), "--mode", "direct", "--resume", *args]) == 2
    assert "run.config_sha256" in _one_line_error(capsys.readouterr().err)
    assert part.read_bytes() == before


# --- 5. refusals before anything is scored ----------------------------------------------------------------------
class _SplitLetter(FakeTokenizer):
    """Encodes the probe prompts as the reference does, but the letter P alone as two tokens."""

    def encode(self, text: str, plain: Any = ()) -> list[int]:
        return [ord("P") + 16, 0] if text == "P" else super().encode(text, plain)


def _listing(engine: FakeEngine, answer: Any) -> FakeEngine:
    engine.models_answer = answer
    return engine


REFUSED = {
    "another tokenizer": (lambda k: FakeEngine(k, tokenizer=FakeTokenizer(merges=["ti", "on"])), [],
                          r"tokenizes a probe prompt differently .* it serves another model or tokenizer"),
    "colliding letters": (lambda k: FakeEngine(k, tokenizer=FakeTokenizer(broken="collide")), [],
                          "another model or tokenizer"),
    "a letter in two tokens": (lambda k: FakeEngine(k, tokenizer=_SplitLetter()), [],
                               r"encodes the answer letter 'P' as \[96, 0\]"),
    "served model not served": (lambda k: FakeEngine(k), ["--served-model", "other"],
                                f"does not serve 'other' \\(it serves {SERVED}\\)"),
    "two models, none named": (lambda k: FakeEngine(k, served=("a", "b")), [],
                               r"serves 2 models \(a, b\): name one with --served-model"),
    "owned_by unknown": (lambda k: FakeEngine(k, owned_by="sglang"), [],
                         "owned by 'sglang'; this backend knows vLLM"),
    "no models listed": (lambda k: _listing(FakeEngine(k), {"object": "list", "data": []}), [],
                         "lists no model at /v1/models"),
    "models not JSON": (lambda k: _listing(FakeEngine(k), b"<html>\n<body>It works!</body>\n</html>"), [],
                        r"answered GET /v1/models with non-JSON: '<html> <body>It works!"),
    "api key required": (lambda k: FakeEngine(k, api_key="sekrit"), [], "refused GET /v1/models: HTTP 401"),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_an_engine_that_cannot_be_used_is_refused_before_any_completion(tmp_path: Path, capsys: Any, serve: Any,
                                                                        case: str, kind: str) -> None:
    make, extra, message = REFUSED[case]
    engine = serve(make(kind))
    out = tmp_path / "out.jsonl"
    assert _score(tmp_path, out, *extra) == 1
    assert re.search(message, _one_line_error(capsys.readouterr().err))
    assert engine.count("/v1/completions") == 0
    assert not out.exists()


@pytest.mark.parametrize(("url", "field"), [
    ("ftp://fake-engine:8000", "--base-url"), ("http://", "--base-url"), ("http://:8000", "--base-url"),
    ("fake-engine:8000", "--base-url"), ("http://fake-engine:99999", "bad port"), ("http://fake-engine:x", "bad port"),
])
def test_a_bad_base_url_is_a_validation_error(tmp_path: Path, capsys: Any, serve: Any, url: str, field: str) -> None:
    engine = serve(FakeEngine("vllm"))
    assert _score(tmp_path, tmp_path / "out.jsonl", base_url=url) == 2
    line = _one_line_error(capsys.readouterr().err)
    assert "--base-url" in line and field in line and repr(url) in line
    assert engine.log == []


def test_options_the_backend_refuses(tmp_path: Path, capsys: Any, serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = serve(FakeEngine("vllm"))
    monkeypatch.delenv("SEMIF_TEST_NO_SUCH_KEY", raising=False)
    assert _score(tmp_path, tmp_path / "o.jsonl", "--api-key-env", "SEMIF_TEST_NO_SUCH_KEY") == 2
    assert "--api-key-env SEMIF_TEST_NO_SUCH_KEY: that environment variable is not set" in \
        _one_line_error(capsys.readouterr().err)
    with pytest.raises(SystemExit) as stop:  # argparse refuses it by the API's rule (scorer.core.checks)
        _score(tmp_path, tmp_path / "o.jsonl", "--retries", "-1")
    assert stop.value.code == 2
    assert "argument --retries: -1 is not an integer >= 0" in capsys.readouterr().err
    assert cli.main(["score", "--input", str(_write_rows(tmp_path)), "--output", str(tmp_path / "o.jsonl"),
                     "--backend", "openai"]) == 2
    assert "needs --base-url" in _one_line_error(capsys.readouterr().err)
    assert engine.log == []


@pytest.mark.parametrize("kind", KINDS)
def test_the_api_key_is_sent_as_a_bearer_token(tmp_path: Path, serve: Any, monkeypatch: pytest.MonkeyPatch,
                                               kind: str) -> None:
    engine = serve(FakeEngine(kind, api_key="sekrit", bias=LIFT))
    monkeypatch.setenv("SEMIF_TEST_ENGINE_KEY", "sekrit")
    out = tmp_path / "out.jsonl"
    assert _score(tmp_path, out, "--api-key-env", "SEMIF_TEST_ENGINE_KEY", "--mode", "direct") == 0
    assert len(read_records(out)) == len(_rows())
    assert engine.headers and all(h.get("authorization") == "Bearer sekrit" for h in engine.headers)
    assert "sekrit" not in out.read_text()  # the key is never recorded


@pytest.mark.parametrize("kind", KINDS)
def test_the_served_model_named_is_the_one_asked(serve: Any, tmp_path: Path, kind: str) -> None:
    engine = serve(FakeEngine(kind, served=("first", "second"), bias=LIFT))
    out = tmp_path / "out.jsonl"
    assert _score(tmp_path, out, "--served-model", "second", base_url=f"{ENGINE_URL}/v1/") == 0
    recs = read_records(out)
    assert recs[0]["model"]["engine"]["served_model"] == "second"
    assert {b["model"] for _, p, b in engine.log if p == "/v1/completions"} == {"second"}


# --- the context an engine leaves a prompt --------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_a_prompt_that_fills_the_engines_context_is_refused_before_any_request(kind: str) -> None:
    """Each request generates one token after the prompt: vLLM takes prompt + max_tokens <= max_model_len,
    llama-server a prompt shorter than n_ctx. A row's prompt must leave room for one more token on every
    backend (runs.score.prepare), so the longest prompt sent is n_ctx - 1 tokens, which both take; a prompt
    of n_ctx tokens is a ValidationError before any request, never the engine's HTTP 400 mid-run."""
    rows = _rows(1)[:1]
    n = len(prepare(FakeBackend(), [parse_decision(rows[0], "mem", None)], with_prefix=False)[0].prompt.ids)
    fits = FakeEngine(kind, n_ctx=n + 1)
    backend = engine_backend(fits)
    assert backend.n_ctx == n + 1
    assert len(_records(backend, "direct", rows)) == 1
    full = FakeEngine(kind, n_ctx=n)
    with pytest.raises(ValidationError, match=f"is {n} tokens and its answer 1 but the model's context holds {n}"):
        _records(engine_backend(full), "direct", rows)
    assert full.count("/v1/completions") == 0


def test_the_context_is_the_smaller_of_the_engines_and_the_references() -> None:
    engine = FakeEngine("vllm", n_ctx=4096)
    t = ob.Transport(ENGINE_URL, None, 0, 5.0, 1, wire=engine.wire)
    cfg = BackendConfig(backend="openai", base_url=ENGINE_URL)
    assert ob.OpenAIBackend(cfg, transport=t, reference=fake_reference(n_ctx=1000)).n_ctx == 1000
    backend = engine_backend(engine)
    assert backend.n_ctx == 4096 and backend.n_vocab == VOCAB


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
def test_direct_mode_reuses_no_cached_prefix_and_the_fast_modes_do(kind: str, mode: str) -> None:
    """A fresh (direct) request must not depend on what the engine ran before (llama.cpp's cache_prompt reuses a
    slot's last prefix and moved p by 0.06 between two runs of the same rows): it opts out of the prefix cache
    (vLLM: a unique cache_salt; llama.cpp: cache_prompt false); serial and shared mode reuse it."""
    engine = FakeEngine(kind)
    _records(engine_backend(engine), mode)
    bodies = [b for _, p, b in engine.log if p == "/v1/completions"]
    assert bodies
    if kind == "vllm":
        salts = [b.get("cache_salt") for b in bodies]
        if mode == "direct":
            assert all(salts) and len(set(salts)) == len(salts)
        else:
            assert not any(salts)
    else:
        assert {b["cache_prompt"] for b in bodies} == ({False} if mode == "direct" else {True})


def test_the_api_takes_the_engine_options_by_name() -> None:
    """``Scorer(backend="openai", base_url=…)`` builds the same BackendConfig the CLI does (checked when made)."""
    from scorer import Scorer
    from scorer.core.checks import OptionError

    s = Scorer(model="smollm2-135m", backend="openai", base_url=ENGINE_URL, served_model=SERVED, concurrency=2)
    assert s._config is not None and s._config.base_url == ENGINE_URL and s._config.concurrency == 2
    with pytest.raises(OptionError, match="concurrency"):
        Scorer(model="smollm2-135m", backend="openai", base_url=ENGINE_URL, concurrency=0)
