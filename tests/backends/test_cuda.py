"""The torch backend on a CUDA device: every mode and kernel, fp32 and bf16, against CPU fp32.

Runs only where torch sees a GPU (CI has none; the project's borrowed GPU machine runs it through
``benchmarks/gpu-check.sh``). The model is a small randomly initialised qwen2 built from a real model
folder's config and tokenizer (``benchmarks/random_model.py``): random weights exercise exactly the same
device code as trained ones, and an init spread of 0.1 keeps option probabilities far from uniform so
a wrong mask or position shows up in the numbers.

Stated tolerances (per option probability): fp32 on CUDA vs fp32 on CPU ≤ 1e-4 (different kernels sum
in a different order; TF32 is off for fp32 matmuls by default); bf16 fast modes vs bf16 direct on CUDA
≤ 0.05, with choices equal wherever the direct margin exceeds 0.1 (bf16 keeps 8 bits of mantissa, and
packed passes multiply different matrix shapes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scorer.backends import BackendConfig, load_backend
from scorer.formats.records import validate_records
from scorer.formats.rows import load_decisions
from scorer.models import store
from scorer.scoring.modes import prepare, score_items

ROOT = Path(__file__).resolve().parents[2]


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


pytestmark = [pytest.mark.slow, pytest.mark.cuda, pytest.mark.skipif(not _cuda(), reason="needs a CUDA device")]
FP32_TOL = 1e-4
BF16_TOL = 0.05
KERNELS = ("torch.packed-blockwise", "torch.packed-4d-mask")


def _like_dir() -> Path:
    """A real qwen2 model folder to copy config and tokenizer from: $SEMIF_LIKE_DIR or the store's copy."""
    env = os.environ.get("SEMIF_LIKE_DIR")
    if env:
        return Path(env)
    for layout in (store.DEQUANT_LAYOUT, "hf"):  # the verified layout, else the older unverified one
        hf = store.cache_dir() / layout
        for cfg in sorted(hf.glob("*/config.json")) if hf.is_dir() else []:
            if '"qwen2"' in cfg.read_text():
                return cfg.parent
    pytest.skip("no qwen2 model folder: set SEMIF_LIKE_DIR or run a qwen2.5 model once on this machine")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("random") / "tiny-qwen2"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "random_model.py"), "--like", str(_like_dir()),
                    "--out", str(out), "--layers", "2", "--hidden", "128", "--heads", "4", "--kv-heads", "2",
                    "--intermediate", "256", "--init-std", "0.1"], check=True)
    return out


def _backend(model_dir: Path, device: str, dtype: str):
    return load_backend(BackendConfig(model=str(model_dir), backend="torch", device=device, dtype=dtype))


@pytest.fixture(scope="module")
def cpu32(model_dir):
    return _backend(model_dir, "cpu", "float32")


@pytest.fixture(scope="module")
def gpu32(model_dir):
    return _backend(model_dir, "cuda", "float32")


@pytest.fixture(scope="module")
def gpu16(model_dir):
    return _backend(model_dir, "cuda", "bfloat16")


@pytest.fixture(scope="module")
def rows():
    rs = load_decisions(ROOT / "data" / "workloads" / "shape-small.jsonl")
    ex = load_decisions(ROOT / "data" / "examples" / "decisions.jsonl")
    return rs[0:5] + rs[21:26] + ex  # two shared states, then single-criterion states with 2–6 options


def _run(backend, rows, mode: str, budget: int = 4096) -> list[dict]:
    items = prepare(backend, rows, with_prefix=mode != "direct")
    return list(score_items(backend, items, mode, {"config_sha256": "cuda-test"}, 0, budget))


def _max_dp(a: list[dict], b: list[dict]) -> float:
    return max(float(np.max(np.abs(np.subtract(x["probabilities"], y["probabilities"]))))
               for x, y in zip(a, b, strict=True))


def _with_kernel(backend, kernel: str, rows, mode: str, budget: int = 4096) -> list[dict]:
    default = backend.kernel
    backend.use_kernel(kernel)
    try:
        return _run(backend, rows, mode, budget)
    finally:
        backend.use_kernel(default)


def test_records_say_cuda_and_dtype(gpu16, rows):
    recs = _run(gpu16, rows[:3], "shared")
    validate_records(recs)
    model = recs[0]["model"]
    assert (model["device"], model["dtype"], model["backend"]) == ("cuda", "bfloat16", "torch")
    assert recs[0]["kernel"] == "torch.packed-blockwise"


@pytest.mark.parametrize("mode", ["direct", "serial", "shared"])
def test_fp32_on_cuda_matches_cpu(cpu32, gpu32, rows, mode):
    ref = _run(cpu32, rows, "direct")
    got = _run(gpu32, rows, mode)
    validate_records(got)
    assert [r["tokens_sha256"] for r in got] == [r["tokens_sha256"] for r in ref]
    assert _max_dp(ref, got) <= FP32_TOL
    assert [r["choice"] for r in got] == [r["choice"] for r in ref]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("budget", [4096, 40])
def test_bf16_fast_paths_reproduce_direct(gpu16, rows, kernel, budget):
    fresh = _run(gpu16, rows, "direct")
    fast = _with_kernel(gpu16, kernel, rows, "shared", budget)
    serial = _run(gpu16, rows, "serial")
    for recs in (fast, serial):
        assert [r["id"] for r in recs] == [r["id"] for r in fresh]
        assert _max_dp(fresh, recs) <= BF16_TOL
        for f, r in zip(fresh, recs, strict=True):
            if f["margin"] > 0.1:
                assert f["choice"] == r["choice"], f["id"]
    assert {r["kernel"] for r in fast[:10]} == {kernel}
    if budget == 40:
        assert max(r["timing"]["group_chunks"] for r in fast) > 1


def test_both_kernels_agree_on_cuda_fp32(gpu32, rows):
    a, b = (_with_kernel(gpu32, k, rows, "shared", 40) for k in KERNELS)
    assert _max_dp(a, b) <= FP32_TOL


def test_greedy_decode_on_cuda_follows_cpu(cpu32, gpu32, rows):
    """Teacher-forced: the GPU session is fed the CPU's greedy tokens, and its logits must match at every
    step (comparing free-running token streams would only test for near-ties)."""
    ids = gpu32.tokenizer.encode("Answer with a JSON array of yes/no values:")
    s_cpu, l_cpu = cpu32.decode_start(ids)
    s_gpu, l_gpu = gpu32.decode_start(ids)
    try:
        for _ in range(12):
            assert float(np.max(np.abs(l_cpu - l_gpu))) <= 1e-3 * max(1.0, float(np.max(np.abs(l_cpu))))
            tok = int(np.argmax(l_cpu))
            l_cpu, l_gpu = cpu32.decode_next(s_cpu, tok), gpu32.decode_next(s_gpu, tok)
    finally:
        cpu32.decode_end(s_cpu)
        gpu32.decode_end(s_gpu)
