"""Backends: one base class with the contract (:mod:`scorer.backends.base`), two kernels (torch, llama.cpp)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from scorer import options, store
from scorer.backends.base import Backend
from scorer.errors import ModelError
from scorer.options import BACKENDS, DEVICES, DTYPES

__all__ = ["BACKENDS", "Backend", "BackendConfig", "load_backend"]


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
    """llama.cpp: layers to offload, an integer or ``auto`` (an int is taken and kept as its text)."""

    def __post_init__(self) -> None:
        """Every field checked by its rule in :mod:`scorer.options` (the command line's rules too), so a
        config that names no runnable model setting is refused where it is made, before anything loads."""
        checked = {
            "model": options.text(self.model, "model", "a registry key, a .gguf path, a local folder or ORG/NAME"),
            "revision": options.optional_text(self.revision, "revision", "a 40-hex commit id"),
            "backend": options.one_of(self.backend, BACKENDS, "backend"),
            "device": options.one_of(self.device, DEVICES, "device"),
            "dtype": options.optional_one_of(self.dtype, DTYPES, "dtype"),
            "threads": options.optional_positive_int(self.threads, "threads"),
            "gguf": options.optional_text(self.gguf, "gguf", "a GGUF file path"),
            "llama_gpu_layers": options.gpu_layers(self.llama_gpu_layers, "llama_gpu_layers"),
        }
        assert set(checked) == {f.name for f in fields(self)}, "every BackendConfig field needs its rule"
        for name, value in checked.items():
            object.__setattr__(self, name, value)  # normalised: a PathLike as its text, 8 layers as "8"


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
    raise ModelError(f"unknown backend {cfg.backend!r} (expected one of {', '.join(BACKENDS)})")
