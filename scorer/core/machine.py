"""Facts about the machine and the libraries a measurement ran on (for traces and result files).

Nothing here imports torch or llama.cpp: versions come from package metadata, and the GPU is only
asked of torch when torch is already loaded (a run that used it), else of ``nvidia-smi`` if present.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from typing import Any

from scorer import __version__
from scorer.core import threads

# Distribution names whose versions a reader needs to reproduce a run.
_PACKAGES = {"torch": "torch", "transformers": "transformers", "llama_cpp": "llama-cpp-python", "numpy": "numpy",
             "orjson": "orjson", "gguf": "gguf", "accelerate": "accelerate"}


def cpu_model() -> str | None:
    """The CPU's model name from /proc/cpuinfo (Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return platform.processor() or None


def cpu_flags() -> set[str] | None:
    """The CPU's instruction-set flags (``/proc/cpuinfo``'s ``flags`` line, ``Features`` on Arm); None where it
    cannot be read. One reader for every caller: the drift identity's SIMD list, vLLM's kernel choice, the machine
    block's ``cpu_features``."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            line = next((ln for ln in f if ln.startswith(("flags", "Features"))), None)
    except OSError:
        return None
    return None if line is None else set(line.partition(":")[2].split())


_FEATURE_PREFIXES = ("avx", "amx", "fma", "f16c", "sse4", "asimd", "sve", "i8mm", "dotprod")


def cpu_features() -> list[str] | None:
    """The CPU's instruction-set extensions that the kernels here dispatch on (AVX2, the AVX-512 family with VNNI
    and BF16, AMX; NEON/SVE on Arm), sorted; None where they cannot be read. Two machines with the same model name
    can differ here, and with them the engines' speeds: vLLM's int8 and W4A16 kernels and native bf16 need AVX-512
    (VNNI, BF16) on x86, and llama.cpp is built for the flags of its machine."""
    flags = cpu_flags()
    if flags is None:
        return None
    return sorted(x for x in flags if x.startswith(_FEATURE_PREFIXES) or "vnni" in x or "bf16" in x)


def _memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _usable_cores() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def gpu_name() -> str | None:
    """Name of the first CUDA GPU, or None."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available():
                return str(torch.cuda.get_device_name(0))
        except Exception:  # a broken CUDA setup is "no GPU" for the record, not a crash
            return None
        return None
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=10, check=False)
            first = out.stdout.strip().splitlines()
            return first[0].strip() if out.returncode == 0 and first else None
        except (OSError, subprocess.SubprocessError):
            return None
    return None


def machine_facts() -> dict[str, Any]:
    """CPU model and instruction-set features, logical and usable cores, memory, GPU and platform, and how this
    process's threads wait (``threading``: :func:`scorer.core.threads.process_block`)."""
    return {"cpu": cpu_model(), "cpu_features": cpu_features(), "cores": os.cpu_count() or 1,
            "usable_cores": _usable_cores(),
            "memory_bytes": _memory_bytes(), "gpu": gpu_name(), "platform": platform.platform(),
            "threading": threads.process_block()}


def library_versions() -> dict[str, str | None]:
    """semif, python and the installed versions of the libraries a run may use (None = not installed)."""
    out: dict[str, str | None] = {"semif": __version__, "python": platform.python_version()}
    for key, dist in _PACKAGES.items():
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[key] = None
    return out


def load_average() -> list[float] | None:
    """The 1-, 5- and 15-minute load averages, rounded to 0.01 (None where the platform has none).

    Every report records them the same way: ``{"before": load_average(), "after": load_average()}``
    around the measured work (:func:`load_span`), so other work on the machine shows next to the timings.
    """
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def load_span(before: list[float] | None) -> dict[str, list[float] | None]:
    """The one load-average shape of a report: ``before`` (taken with :func:`load_average` when the
    measured work started) and the load now."""
    return {"before": before, "after": load_average()}
