#!/usr/bin/env python3
"""Per-step cost of grammar masking for the constrained lane: xgrammar vs llguidance vs outlines-core
(and llama.cpp's own grammar sampler for reference). Writes one JSON file.

What is measured, per engine, on the real tokenizer of ``--model`` (no weights are loaded):

* ``compile_s``: vocabulary conversion + grammar compilation, once (what ``semif versus`` pays before its runs).
* Per decoding step along the canonical answer ``["yes", "no", …]`` (N values, then the stop token):
  ``mask_us``, the engine's own call that computes the allowed-token set (bitmask / token list), and
  ``step_us``, everything the decoding loop does with the grammar (mask, turn it into a boolean vector
  over the logits, argmax over the allowed logits, advance the grammar). Medians over ``--repeats``
  walks of the whole answer; the logits are random, so the argmax is not the canonical token and every
  step takes the slow (masked) path.

Grammar: the ``scorer.prompting.grammar.ArrayGrammar`` GBNF (llguidance, xgrammar, llama.cpp) or the equivalent
regular expression (outlines-core, which takes regexes only).

    .venv/bin/python benchmarks/grammar-mask-probe.py --model qwen2.5-1.5b --criteria 21 \\
        --output benchmarks/results/grammar-mask-probe-qwen2.5-1.5b.json

Engines whose package is not installed are recorded as such (``pip install xgrammar==0.2.8
outlines-core==0.2.14`` to include them; llguidance is a project dependency). On a shared machine the
numbers are rough; the choice only needs their order of magnitude.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scorer.prompting.grammar import ArrayGrammar

FORMAT = "semif-grammar-mask-probe-v1"


def _dist_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def _bits_to_bool(bits: np.ndarray, n_logits: int) -> np.ndarray:
    allowed = np.zeros(n_logits, dtype=bool)
    unpacked = np.unpackbits(bits.view(np.uint8), bitorder="little")
    k = min(n_logits, len(unpacked))
    allowed[:k] = unpacked[:k].astype(bool)
    return allowed


def _walk(start: Callable[[], Any], mask: Callable[[Any], np.ndarray], advance: Callable[[Any, int], None],
          path: list[int], n_logits: int, repeats: int, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    mask_us: list[float] = []
    step_us: list[float] = []
    for _ in range(repeats):
        state = start()
        for tid in path:
            logits = rng.normal(size=n_logits).astype(np.float32)
            t0 = time.perf_counter()
            allowed = mask(state)
            t1 = time.perf_counter()
            if not allowed[tid]:
                raise RuntimeError(f"the engine refuses the canonical token {tid}")
            int(np.argmax(np.where(allowed, logits, -np.inf)))
            advance(state, tid)
            t2 = time.perf_counter()
            mask_us.append((t1 - t0) * 1e6)
            step_us.append((t2 - t0) * 1e6)
    return {"steps": len(path), "walks": repeats, "mask_us_median": round(statistics.median(mask_us), 2),
            "step_us_median": round(statistics.median(step_us), 2),
            "step_us_p90": round(float(np.percentile(step_us, 90)), 2)}


def probe_llguidance(hf: Any, gbnf: str, stops: list[int], path: list[int], n_logits: int, repeats: int
                     ) -> dict[str, Any]:
    import llguidance
    from llguidance.hf import from_tokenizer
    from llguidance.numpy import fill_next_token_bitmask

    t0 = time.perf_counter()
    tok = from_tokenizer(hf, eos_token=stops)
    grammar = llguidance.grammar_from("gbnf", gbnf)
    compile_s = time.perf_counter() - t0
    n = (tok.vocab_size + 31) // 32

    def start() -> Any:
        return llguidance.LLMatcher(tok, grammar, log_level=0), np.full((1, n), -1, dtype=np.int32)

    def mask(st: Any) -> np.ndarray:
        fill_next_token_bitmask(st[0], st[1])
        return _bits_to_bool(st[1][0], n_logits)

    def advance(st: Any, tid: int) -> None:
        assert st[0].consume_token(tid)

    return {"version": llguidance.__version__, "compile_s": round(compile_s, 4),
            **_walk(start, mask, advance, path, n_logits, repeats)}


def probe_xgrammar(hf: Any, gbnf: str, stops: list[int], path: list[int], n_logits: int, repeats: int
                   ) -> dict[str, Any]:
    import xgrammar as xgr

    t0 = time.perf_counter()
    info = xgr.TokenizerInfo.from_huggingface(hf, vocab_size=n_logits, stop_token_ids=stops)
    compiled = xgr.GrammarCompiler(info).compile_grammar(gbnf)
    compile_s = time.perf_counter() - t0

    def start() -> Any:
        return xgr.GrammarMatcher(compiled), xgr.allocate_token_bitmask(1, info.vocab_size)

    def mask(st: Any) -> np.ndarray:
        st[0].fill_next_token_bitmask(st[1])
        return _bits_to_bool(st[1][0].numpy(), n_logits)

    def advance(st: Any, tid: int) -> None:
        assert st[0].accept_token(tid)

    return {"version": _dist_version("xgrammar"), "compile_s": round(compile_s, 4),
            **_walk(start, mask, advance, path, n_logits, repeats)}


def _token_bytes(hf: Any) -> dict[int, bytes]:
    """Byte-level BPE token texts back to bytes (the GPT-2 byte-to-unicode table, inverted)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    inv = {c: b for b, c in table.items()}
    out = {}
    for tid in range(len(hf)):
        piece = hf.convert_ids_to_tokens(tid)
        if piece is None or tid in hf.all_special_ids:
            continue
        try:
            out[tid] = bytes(inv[c] for c in piece)
        except KeyError:
            out[tid] = piece.encode("utf-8")
    return out


def probe_outlines(hf: Any, regex: str, stops: list[int], path: list[int], n_logits: int, repeats: int
                   ) -> dict[str, Any]:
    from outlines_core import Guide, Index, Vocabulary

    t0 = time.perf_counter()
    by_bytes: dict[bytes, list[int]] = {}
    for tid, b in _token_bytes(hf).items():
        by_bytes.setdefault(b, []).append(tid)
    vocab = Vocabulary(stops[0], by_bytes)
    index = Index(regex, vocab)
    compile_s = time.perf_counter() - t0
    n = (n_logits + 31) // 32

    def start() -> Any:
        return Guide(index), np.zeros(n, dtype=np.int32)

    def mask(st: Any) -> np.ndarray:
        st[0].write_mask_into(st[1].ctypes.data, st[1].size, st[1].itemsize)
        return _bits_to_bool(st[1], n_logits)

    def advance(st: Any, tid: int) -> None:
        if tid != stops[0]:  # the stop token ends generation; outlines-core has no state after it
            st[0].advance(tid)

    walk_path = [t for t in path if t not in stops] + [stops[0]]  # outlines knows one EOS
    return {"version": _dist_version("outlines-core"), "compile_s": round(compile_s, 4),
            **_walk(start, mask, advance, walk_path, n_logits, repeats)}


def probe_llamacpp(gguf: Path, gbnf: str, path: list[int], repeats: int) -> dict[str, Any]:
    import llama_cpp

    from scorer.backends.llamacpp_grammar import LlamaConstraint

    llama_cpp.llama_backend_init()
    mp = llama_cpp.llama_model_default_params()
    mp.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(gguf).encode(), mp)
    vocab = llama_cpp.llama_model_get_vocab(model)
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    t0 = time.perf_counter()
    LlamaConstraint(llama_cpp, vocab, gbnf.encode(), n_vocab).close()
    compile_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    full, fast = [], []
    for _ in range(repeats):
        con = LlamaConstraint(llama_cpp, vocab, gbnf.encode(), n_vocab)
        for tid in path:
            logits = rng.normal(size=n_vocab).astype(np.float32)
            t0 = time.perf_counter()
            con.pick(logits)  # random logits: the argmax is refused, so this is the full-vocabulary apply
            t1 = time.perf_counter()
            logits[tid] = 100.0
            con.pick(logits)  # the model's argmax allowed: the one-token check only
            t2 = time.perf_counter()
            con.advance(tid)
            full.append((t1 - t0) * 1e6)
            fast.append((t2 - t1) * 1e6)
        con.close()
    llama_cpp.llama_model_free(model)
    return {"version": llama_cpp.__version__, "compile_s": round(compile_s, 4), "steps": len(path), "walks": repeats,
            "step_us_median_full_apply": round(statistics.median(full), 2),
            "step_us_median_argmax_allowed": round(statistics.median(fast), 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--criteria", type=int, default=21)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    from scorer.core.machine import load_average, load_span
    from scorer.formats.envelope import make_report, write_report
    from scorer.models import store
    from scorer.prompting.tokenizer import load_reference_tokenizer

    load0 = load_average()

    ref = store.resolve(args.model, None)
    gguf, sha = store.gguf_for(ref)
    hf, _ = load_reference_tokenizer(ref, gguf, sha)
    g = ArrayGrammar(tuple(("yes", "no") for _ in range(args.criteria)))
    gbnf = g.gbnf()
    regex = r'\["(?:yes|no)"(?:, ?"(?:yes|no)"){' + str(args.criteria - 1) + r'}\]'
    answer = json.dumps(["yes" if i % 3 else "no" for i in range(args.criteria)])  # '["no", "yes", …]'
    eos = hf.convert_tokens_to_ids(["<|im_end|>"])[0]
    stops = [eos] if eos is not None and eos != hf.unk_token_id else [hf.eos_token_id]
    path = list(hf(answer, add_special_tokens=False)["input_ids"]) + stops[:1]
    n_logits = len(hf)
    results: dict[str, Any] = {}
    probes: dict[str, Callable[[], dict[str, Any]]] = {
        "llguidance": lambda: probe_llguidance(hf, gbnf, stops, path, n_logits, args.repeats),
        "xgrammar": lambda: probe_xgrammar(hf, gbnf, stops, path, n_logits, args.repeats),
        "outlines-core": lambda: probe_outlines(hf, regex, stops, path, n_logits, args.repeats),
        "llama.cpp": lambda: probe_llamacpp(gguf, gbnf, path, args.repeats),
    }
    for name, fn in probes.items():
        try:
            results[name] = fn()
        except ImportError as exc:
            results[name] = {"error": f"not installed ({exc})"}
        except Exception as exc:  # a probe that fails is a result too (e.g. a tokenizer the engine cannot read)
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"{name}: {results[name]}", file=sys.stderr)
    body = {"model": args.model, "vocab": n_logits, "criteria": args.criteria,
            "answer": answer, "answer_tokens": len(path), "grammar": gbnf, "regex": regex,
            "load_average": load_span(load0),
            "note": "rough: measured on a shared machine; only the order of magnitude between engines matters here",
            "engines": results}
    inputs = {"model.gguf": {"path": str(gguf), "sha256": sha}}
    out = Path(args.output)
    write_report(out, make_report("grammar-mask-probe", FORMAT, inputs, body))
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
