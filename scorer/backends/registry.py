"""The backends SemIf can score with, by name: one :class:`BackendEntry` each (what it is, which of
:class:`~scorer.backends.BackendConfig`'s fields it reads, how it is built). A new backend is one more entry here and
one module that implements :class:`~scorer.backends.base.Backend` (checked by
``tests/backends/test_backend_contract.py``);
the command line's ``--backend`` choices, the API's ``backend=`` check and :func:`scorer.backends.load_backend` all
read this table. Loaders import their module only when called: torch and llama.cpp are heavy, and ``import
scorer.backends`` must stay cheap. The in-process kernels' loaders set the threads' wait policy
(:func:`scorer.core.threads.apply_wait_policy`) before their libraries load."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scorer.core import threads
from scorer.core.errors import ModelError
from scorer.models import store

if TYPE_CHECKING:
    from scorer.backends import BackendConfig
    from scorer.backends.base import Backend


@dataclass(frozen=True)
class BackendEntry:
    """One backend: its name (``--backend NAME``), what it runs, the config fields it reads, its loader."""

    name: str
    summary: str
    """One line for people (``semif --help``, the docs)."""
    reads: tuple[str, ...]
    """The :class:`~scorer.backends.BackendConfig` fields it uses besides ``model``."""
    load: Callable[[BackendConfig], Backend]
    """Resolve the model and build the backend (imports the backend's module)."""


def _torch(cfg: BackendConfig) -> Backend:
    threads.apply_wait_policy()  # before anything imports torch (its OpenMP runtime reads the policy as it loads)
    from scorer.backends.torch_backend import TorchBackend

    return TorchBackend(store.resolve(cfg.model, cfg.revision), cfg.device, cfg.dtype, cfg.threads)


def _llamacpp(cfg: BackendConfig) -> Backend:
    threads.apply_wait_policy()  # before llama-cpp-python loads llama.cpp's libraries (and their OpenMP runtime)
    try:
        from scorer.backends.llamacpp_backend import LlamaCppBackend
    except ImportError as exc:
        raise ModelError(f"the llama.cpp backend needs llama-cpp-python ({exc}); install it with "
                         "`pip install llama-cpp-python==0.3.36` (builds from source)") from None
    return LlamaCppBackend(cfg)


def _openai(cfg: BackendConfig) -> Backend:
    from scorer.backends.openai_backend import OpenAIBackend

    return OpenAIBackend(cfg)


REGISTRY: dict[str, BackendEntry] = {e.name: e for e in (
    BackendEntry("torch", "transformers on torch: fp32 on CPU (bf16 on CUDA), the exact reference",
                 ("revision", "device", "dtype", "threads"), _torch),
    BackendEntry("llamacpp", "llama.cpp in process (llama-cpp-python) on the GGUF's own quantized weights",
                 ("gguf", "threads", "llama_gpu_layers"), _llamacpp),
    BackendEntry("openai", "a remote engine over the OpenAI-compatible API (vLLM, llama-server) with logprobs",
                 ("base_url", "api_key_env", "served_model", "concurrency", "retries", "request_timeout_s"), _openai),
)}
"""Every backend, in the order ``--backend`` lists them."""
BACKENDS: tuple[str, ...] = tuple(REGISTRY)
"""Their names."""
