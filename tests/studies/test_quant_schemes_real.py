"""``semif quant --schemes`` end to end on SmolLM2-135M: every scheme produced with a minimal calibration, scored
where it runs, reused on a re-run, refused when tampered.

The outputs are built in a private ``SEMIF_CACHE`` (hard links to the shared model and fp32 cache, a link to the
shared peer venvs so llm-compressor's venv is built once per machine): the first run really produces every
scheme, and the tampering never touches the shared cache. The first run on a machine also builds llm-compressor's
venv under ``~/.cache/semif/peers/`` (a ~1 GB download from PyPI).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from scorer.cli import main
from scorer.engines import vllm
from scorer.formats.envelope import envelope_problems
from scorer.formats.records import read_records
from scorer.models import store

pytestmark = [
    # Part of make test since 2026-12-02: timed alone on the quiet AVX-512 machine, the whole file took 314 s with
    # llm-compressor's venv already built (producing every scheme 87 s: AWQ 47 s, GPTQ 30 s, W8A8 9 s, Q8_0 1 s;
    # vLLM's W8A8 run 93 s; the re-run 45 s); building that venv took 98 s from pip's cache, a few minutes cold.
    pytest.mark.slow, pytest.mark.llamacpp,
]

SMOL = store.REGISTRY[store.TEST_MODEL]
SCHEMES = "gguf:Q8_0,w8a8,awq-w4a16,gptq-w4a16"
MINIMAL = ["--calibration-samples", "2", "--max-seq-length", "64", "--group-size", "64"]
"""A minimal calibration; group size 64, since SmolLM2-135M's 576-wide layers cannot be grouped by the default 128."""


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scorer.backends.torch_backend import dequantize_gguf

    gguf = store.fetch(SMOL, progress=False)
    folder = dequantize_gguf(gguf, SMOL.sha256)
    peers = store.cache_dir() / "peers"
    root = tmp_path_factory.mktemp("quant-cache")
    (root / "models").mkdir()
    shutil.copytree(gguf.parent, root / "models" / SMOL.key, copy_function=os.link)
    shutil.copytree(folder, root / store.DEQUANT_LAYOUT / SMOL.sha256, copy_function=os.link)
    peers.mkdir(parents=True, exist_ok=True)
    (root / "peers").symlink_to(peers)
    return root


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    lines = (data_dir / "workloads" / "shape-small.jsonl").read_text().splitlines()[:3]
    path = tmp_path_factory.mktemp("rows") / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(cache: Path, rows: Path, out: Path, schemes: str = SCHEMES,
         engines: bool = False) -> tuple[int, dict[str, Any] | None]:
    mp = pytest.MonkeyPatch()
    mp.setenv("SEMIF_CACHE", str(cache))
    try:
        rc = main(["quant", "--model", SMOL.key, "--input", str(rows), "--output", str(out), "--schemes", schemes,
                   "--threads", "2", *MINIMAL, *([] if engines else ["--no-engines"])])
    finally:
        mp.undo()
    return rc, (orjson.loads(out.read_bytes()) if rc == 0 else None)


@pytest.fixture(scope="module")
def first(cache: Path, rows: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    rc, rep = _run(cache, rows, tmp_path_factory.mktemp("first") / "q.json")
    assert rc == 0 and rep is not None
    return rep


def _by(rep: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["scheme"]: s for s in rep["schemes"]}


def test_every_scheme_is_produced_and_scored_where_it_runs(first: dict[str, Any], cache: Path) -> None:
    assert first["kind"] == "quant-schemes" and not envelope_problems(first)
    assert first["calibration"]["samples_used"] == 2 and len(first["calibration"]["sha256"]) == 64
    by = _by(first)
    assert list(by) == ["gguf:Q8_0", "w8a8", "awq-w4a16", "gptq-w4a16"]
    for name, s in by.items():
        assert not s["cache"]["reused"] and s["produce_s"] > 0 and s["weight_bytes"] > 0, name
        assert Path(s["cache"]["folder"]).parent == cache / store.QUANT_LAYOUT
        assert s["cache"]["inputs"]["scheme"] == name
    assert [r["runner"] for r in by["gguf:Q8_0"]["runs"]] == ["llama.cpp"]
    assert by["gguf:Q8_0"]["runs"][0]["gguf"]["quantization"] == "Q8_0"
    assert by["gguf:Q8_0"]["cache"]["inputs"]["calibration_sha256"] is None
    for name in ("w8a8", "awq-w4a16", "gptq-w4a16"):
        runs = {r["runner"]: r for r in by[name]["runs"]}
        emu = runs["transformers-emulated"]
        assert emu["ran"] and emu["execution"] == "emulated", emu.get("error")
        assert "emulated" in emu["quantization"]["execution"] and emu["quantization"]["scheme"] == name
        assert "decisions_per_s" not in emu  # an emulation claims no speed
        assert by[name]["cache"]["inputs"]["calibration_sha256"] == first["calibration"]["sha256"]
        bits = by[name]["bits"]  # read from the checkpoint's safetensors headers
        assert bits["bits_per_weight"] == by[name]["bits_per_weight"] and bits["quantized_linear"]["layers"] > 0
        want = 8 if name == "w8a8" else 4  # + its scales (and AWQ's zero points): a little more, never less
        assert want < bits["quantized_linear"]["bits_per_weight"] < want + 1, bits
        assert bits["tensor_bytes"] <= by[name]["weight_bytes"]
    w8 = by["w8a8"]["cache"]["inputs"]["recipe"]
    assert w8["modifiers"][0] == {"type": "SmoothQuantModifier", "args": {"smoothing_strength": 0.8}}


def test_w4a16_native_on_this_cpu_is_reported_as_skipped_with_the_reason(first: dict[str, Any]) -> None:
    reason = vllm.wna16_skip_reason()
    for name in ("awq-w4a16", "gptq-w4a16"):
        native = next(r for r in _by(first)[name]["runs"] if r["runner"] == "vllm")
        assert not native["ran"] and "changed_choices" not in native and "max_abs_dp" not in native
        if "avx512f" not in vllm.cpu_flags() and "avx2" in vllm.cpu_flags():
            assert native["skipped"] == "skipped: no cpu_gemm_wna16 kernel on this AVX2-only CPU"
        else:
            assert native["skipped"] == (reason or "skipped: --no-engines (vLLM not started)")


def test_report_counts_equal_a_direct_semif_compare(first: dict[str, Any], tmp_path: Path) -> None:
    ref = first["reference"]["records"]["path"]
    checked = 0
    for s in first["schemes"]:
        for r in s["runs"]:
            if not r["ran"]:
                continue
            out = tmp_path / f"{s['scheme'].replace(':', '-')}-{r['runner']}.json"
            assert main(["compare", ref, r["records"]["path"], "--output", str(out)]) == 0
            cmp = orjson.loads(out.read_bytes())["summary"]
            assert (r["changed_choices"], r["max_abs_dp"], r["median_abs_dp"]) == (
                cmp["flips"], cmp["max_abs_dp"], cmp["median_abs_dp"]), (s["scheme"], r["runner"])
            assert r["decisions"] == cmp["decisions"] == 3 and r["tokens_sha256_equal"] == 3
            checked += 1
    assert checked == 4


def test_a_rerun_reuses_every_cached_output(first: dict[str, Any], cache: Path, rows: Path,
                                            tmp_path: Path) -> None:
    rc, again = _run(cache, rows, tmp_path / "again.json")
    assert rc == 0 and again is not None
    for name, s in _by(again).items():
        before = _by(first)[name]
        assert s["cache"]["reused"] and s["cache"]["key"] == before["cache"]["key"], name
        assert s["produce_s"] == before["produce_s"]  # the meta of the one production, not a new one
        for r, r0 in zip(s["runs"], before["runs"], strict=True):
            if r["ran"]:  # the same weights score the same decisions the same way
                got = [x["probabilities"] for x in read_records(r["records"]["path"])]
                assert got == [x["probabilities"] for x in read_records(r0["records"]["path"])], (name, r["runner"])


@pytest.mark.engines
def test_w8a8_runs_natively_on_vllm_and_its_records_say_so(first: dict[str, Any], cache: Path, rows: Path,
                                                          tmp_path: Path) -> None:
    """The cached W8A8 checkpoint served by vLLM's CPU build (its int8 kernel), scored through --backend openai."""
    rc, rep = _run(cache, rows, tmp_path / "vllm.json", "w8a8", engines=True)
    assert rc == 0 and rep is not None
    s = _by(rep)["w8a8"]
    assert s["cache"]["reused"]
    native = {r["runner"]: r for r in s["runs"]}["vllm"]
    assert native["ran"] and native["execution"] == "native", native.get("error")
    how = native["quantization"]
    assert how["execution"].startswith("vLLM (") and how["scheme"] == "w8a8"
    assert how["weights"]["num_bits"] == 8 and how["input_activations"]["num_bits"] == 8
    assert native["decisions_per_s"] > 0 and native["tokens_sha256_equal"] == 3
    rec = read_records(native["records"]["path"])[0]
    assert rec["model"]["backend"] == "openai" and rec["model"]["engine"]["weights"]["quantization"] == how


@pytest.mark.parametrize("scheme", ["gguf:Q8_0", "w8a8", "awq-w4a16", "gptq-w4a16"])
def test_a_tampered_cache_entry_is_refused(first: dict[str, Any], scheme: str, cache: Path, rows: Path,
                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = Path(_by(first)[scheme]["cache"]["folder"])
    victim = next(p for p in sorted(folder.iterdir()) if p.name.endswith((".gguf", ".safetensors")))
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0x01
    victim.unlink()  # a hard-linked file is replaced, never written through
    victim.write_bytes(bytes(data))
    capsys.readouterr()
    rc, _ = _run(cache, rows, tmp_path / "t.json", scheme)
    err = capsys.readouterr().err
    assert rc == 2 and f"{victim}:" in err and "refused" in err and "Traceback" not in err, err
    assert not (tmp_path / "t.json").exists()


_HF_NAMES = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
             "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
             "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def _hf_name(gguf_name: str) -> str:
    stem = gguf_name.removesuffix(".weight")
    if stem == "token_embd":
        return "model.embed_tokens.weight"
    if stem == "output_norm":
        return "model.norm.weight"
    _, layer, part = stem.split(".")
    return f"model.layers.{layer}.{_HF_NAMES[part]}.weight"


def test_the_f32_gguf_holds_the_numbers_of_the_fp32_checkpoint(cache: Path, first: dict[str, Any]) -> None:
    """llama.cpp types are quantized from the F32 GGUF, llm-compressor's from the fp32 checkpoint: both are the same
    reference. Every tensor is bit-identical; q/k projections only up to transformers' reordering of their rows
    (the rotary layout llama.cpp permutes for llama-architecture GGUFs), so those are compared as sorted rows."""
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    f32 = next((cache / store.QUANT_LAYOUT).glob("*/*.F32.gguf"))
    hf = load_file(str(cache / store.DEQUANT_LAYOUT / SMOL.sha256 / "model.safetensors"))
    reader = gguf.GGUFReader(str(f32))
    assert len(reader.tensors) == len(hf)
    for t in reader.tensors:
        data = np.asarray(t.data, dtype=np.float32).reshape(tuple(int(x) for x in reversed(t.shape)))
        want = hf[_hf_name(t.name)]
        assert data.shape == want.shape, t.name
        if t.name.endswith(("attn_q.weight", "attn_k.weight")):
            assert np.array_equal(np.sort(data, axis=None), np.sort(want, axis=None)), t.name
        else:
            assert np.array_equal(data, want), t.name
