"""Backends: one base class with the contract (:mod:`scorer.backends.base`), a registry of them by name
(:mod:`scorer.backends.registry`), two in-process kernels (torch, llama.cpp) and one remote engine over the
OpenAI-compatible HTTP API (vLLM, llama.cpp's server), with what each needs of its own: the remote engine's wire
(``openai_wire``) and grammar lane (``openai_grammar``), llama.cpp's grammar sampler and vocabulary, llguidance
(``guidance``), the engines started here (``engine_state``) and the proofs that a GGUF scores the prompt the
reference tokenizer built (``gguf_check``).

:class:`BackendConfig` says which model runs where; :func:`load_backend` builds it."""

from __future__ import annotations

from dataclasses import dataclass, fields

from scorer.backends.base import Backend
from scorer.backends.registry import BACKENDS, REGISTRY
from scorer.core import checks as options
from scorer.core.checks import DEVICES, DTYPES
from scorer.core.errors import ModelError
from scorer.models import store

__all__ = ["BACKENDS", "Backend", "BackendConfig", "load_backend"]


@dataclass(frozen=True)
class BackendConfig:
    """Everything that decides which model runs where: the one config every run takes."""

    model: str = store.DEFAULT_MODEL
    """Registry key, .gguf path, local HF directory or hub id."""
    revision: str | None = None
    """40-hex commit for hub ids."""
    backend: str = "torch"
    """A name in :data:`~scorer.backends.registry.REGISTRY` (``torch``, ``llamacpp``, ``openai``)."""
    device: str = "cpu"
    """torch device: cpu, cuda or mps."""
    dtype: str | None = None
    """torch dtype; default fp32 on CPU, bf16 on CUDA."""
    threads: int | str | None = None
    """CPU threads (torch intra-op threads / llama.cpp n_threads and n_threads_batch): a number, ``auto`` (the cores
    free when the backend loads: :func:`scorer.core.threads.choose_threads`) or None (the library's choice)."""
    gguf: str | None = None
    """llama.cpp: an explicit GGUF path (else the model store's file for ``model``)."""
    llama_gpu_layers: str = "0"
    """llama.cpp: layers to offload, an integer or ``auto`` (an int is taken and kept as its text)."""
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

    def __post_init__(self) -> None:
        """Every field checked by its rule in :mod:`scorer.core.checks` (the command line's rules too), so a
        config that names no runnable model setting is refused where it is made, before anything loads."""
        checked = {
            "model": options.text(self.model, "model", "a registry key, a .gguf path, a local folder or ORG/NAME"),
            "revision": options.optional_text(self.revision, "revision", "a 40-hex commit id"),
            "backend": options.one_of(self.backend, BACKENDS, "backend"),
            "device": options.one_of(self.device, DEVICES, "device"),
            "dtype": options.optional_one_of(self.dtype, DTYPES, "dtype"),
            "threads": options.threads(self.threads, "threads"),
            "gguf": options.optional_text(self.gguf, "gguf", "a GGUF file path"),
            "llama_gpu_layers": options.gpu_layers(self.llama_gpu_layers, "llama_gpu_layers"),
            "base_url": options.optional_text(self.base_url, "base_url", "the engine's http(s) URL"),
            "api_key_env": options.optional_text(self.api_key_env, "api_key_env", "an environment variable name"),
            "served_model": options.optional_text(self.served_model, "served_model", "a model name"),
            "concurrency": options.positive_int(self.concurrency, "concurrency"),
            "retries": options.non_negative_int(self.retries, "retries"),
            "request_timeout_s": options.positive_float(self.request_timeout_s, "request_timeout_s"),
        }
        assert set(checked) == {f.name for f in fields(self)}, "every BackendConfig field needs its rule"
        for name, value in checked.items():
            object.__setattr__(self, name, value)  # normalised: a PathLike as its text, 8 layers as "8"


def load_backend(cfg: BackendConfig) -> Backend:
    """Resolve the model and construct the named backend (:data:`~scorer.backends.registry.REGISTRY`)."""
    entry = REGISTRY.get(cfg.backend)
    if entry is None:
        raise ModelError(f"unknown backend {cfg.backend!r} (expected one of {', '.join(BACKENDS)})")
    return entry.load(cfg)
