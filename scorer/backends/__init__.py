"""Backends: one base class with the contract (:mod:`scorer.backends.base`), two in-process kernels (torch,
llama.cpp) and one remote engine over the OpenAI-compatible HTTP API (vLLM, llama.cpp's server)."""

from __future__ import annotations

from dataclasses import dataclass

from scorer import store
from scorer.backends.base import Backend
from scorer.errors import ModelError

BACKENDS = ("torch", "llamacpp", "openai")


@dataclass(frozen=True)
class BackendConfig:
    """Everything that decides which model runs where: the one config every run takes."""

    model: str = store.DEFAULT_MODEL
    """Registry key, .gguf path, local HF directory or hub id."""
    revision: str | None = None
    """40-hex commit for hub ids."""
    backend: str = "torch"
    """``torch`` or ``llamacpp``."""
    device: str = "cpu"
    """torch device: cpu, cuda or mps."""
    dtype: str | None = None
    """torch dtype; default fp32 on CPU, bf16 on CUDA."""
    threads: int | None = None
    """CPU threads (torch intra-op threads / llama.cpp n_threads); default: the library's choice."""
    gguf: str | None = None
    """llama.cpp: an explicit GGUF path (else the model store's file for ``model``)."""
    llama_gpu_layers: str = "0"
    """llama.cpp: layers to offload, an integer or ``auto``."""
    base_url: str | None = None
    """openai: the engine's URL (``http://127.0.0.1:8080``; a trailing ``/v1`` is accepted)."""
    api_key_env: str | None = None
    """openai: the environment variable holding the engine's API key (sent as a bearer token)."""
    served_model: str | None = None
    """openai: the model name the engine serves (default: the only one it lists)."""
    concurrency: int = 4
    """openai: most requests in flight at once."""
    retries: int = 5
    """openai: retries of a request the engine refused for load (429, 503) or could not take (connection
    errors), with exponential backoff."""
    request_timeout_s: float = 600.0
    """openai: seconds one request may take."""


def load_backend(cfg: BackendConfig) -> Backend:
    """Resolve the model and construct the named backend."""
    if cfg.backend == "torch":
        from scorer.backends.torch_backend import TorchBackend

        return TorchBackend(store.resolve(cfg.model, cfg.revision), cfg.device, cfg.dtype, cfg.threads)
    if cfg.backend == "llamacpp":
        try:
            from scorer.backends.llamacpp_backend import LlamaCppBackend
        except ImportError as exc:
            raise ModelError(f"the llama.cpp backend needs llama-cpp-python ({exc}); install it with "
                             "`pip install llama-cpp-python==0.3.36` (builds from source)") from None
        return LlamaCppBackend(cfg)
    if cfg.backend == "openai":
        from scorer.backends.openai_backend import OpenAIBackend

        return OpenAIBackend(cfg)
    raise ModelError(f"unknown backend {cfg.backend!r} (expected one of {', '.join(BACKENDS)})")
