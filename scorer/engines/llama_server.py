"""llama.cpp's HTTP server (``llama-server``), built once from the sources the in-process backend runs.

The pinned llama-cpp-python sdist (its sha256 checked) vendors llama.cpp; its ``tools/server`` is built with
CMake (Release, native CPU flags like the wheel, no web UI, static) into
``<cache>/engines/llama-server/<version>-<cpu key>/llama-server`` and reused after: the CPU key is the same as
the wheelhouse's (a native build only runs on a CPU with the same instruction-set flags). About as long as the
wheel's build on 2 cores (several minutes), once. The server then runs the GGUF of the model store as is.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from scorer.core.errors import EngineError
from scorer.core.hashing import sha256_file, sha256_text
from scorer.models import store

LLAMA_CPP_PYTHON = "0.3.36"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
"""sha256 of ``llama_cpp_python-0.3.36.tar.gz`` on PyPI (the trust anchor of the build)."""
CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON", "-DBUILD_SHARED_LIBS=OFF",
               "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
               "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_CURL=OFF")
BUILD_TIMEOUT_S = 3600


def cpu_key() -> str:
    """``<arch>-<12 hex>`` of the CPU's flags line: the key scripts/install.sh gives the wheelhouse."""
    line = platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            line = next((ln for ln in f if ln.startswith(("flags", "Features"))), line + "\n")
    except OSError:
        line += "\n"
    return f"{platform.machine()}-{sha256_text(line)[:12]}"


def build_dir() -> Path:
    return store.cache_dir() / "engines" / "llama-server" / f"{LLAMA_CPP_PYTHON}-{cpu_key()}"


def binary() -> Path:
    return build_dir() / "llama-server"


def _stamp() -> str:
    return json.dumps({"sdist_sha256": SDIST_SHA256, "cmake": list(CMAKE_FLAGS)})


def ensure_binary(say: bool = True) -> Path:
    """The built ``llama-server`` (building it first if this CPU has none); an EngineError when the build fails,
    naming its log."""
    target = build_dir()
    exe = target / "llama-server"
    stamp = target / ".semif-build-stamp"
    if exe.is_file() and stamp.is_file() and stamp.read_text() == _stamp():
        return exe
    target.parent.mkdir(parents=True, exist_ok=True)
    log = target.parent / f"{target.name}.build.log"
    if say:
        print(f"[engine] building llama-server from llama-cpp-python {LLAMA_CPP_PYTHON}'s llama.cpp (once; several "
              f"minutes; log {log})", file=sys.stderr)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="semif-llama-server-", dir=target.parent) as tmp_s, \
            log.open("w", encoding="utf-8") as out:
        tmp = Path(tmp_s)

        def run(cmd: list[str], **kw: object) -> None:
            out.write(f"$ {' '.join(cmd)}\n")
            out.flush()
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S, **kw)  # type: ignore[call-overload]
            if proc.returncode != 0:
                raise EngineError(f"building llama-server failed ({cmd[0]} {cmd[1] if len(cmd) > 1 else ''} exited "
                                  f"{proc.returncode}); see {log}")

        run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             "--disable-pip-version-check", "-q", "-d", str(tmp), f"llama-cpp-python=={LLAMA_CPP_PYTHON}"])
        sdist = tmp / f"llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"
        if not sdist.is_file() or sha256_file(sdist) != SDIST_SHA256:
            raise EngineError(f"the llama-cpp-python {LLAMA_CPP_PYTHON} sdist is missing or its sha256 is not "
                              f"{SDIST_SHA256} (refused; see {log})")
        with tarfile.open(sdist) as tf:
            tf.extractall(tmp, filter="data")
        src = tmp / f"llama_cpp_python-{LLAMA_CPP_PYTHON}" / "vendor" / "llama.cpp"
        jobs = str(os.cpu_count() or 2)
        run(["cmake", "-S", str(src), "-B", str(tmp / "build"), *CMAKE_FLAGS])
        run(["cmake", "--build", str(tmp / "build"), "--target", "llama-server", "-j", jobs])
        built = tmp / "build" / "bin" / "llama-server"
        if not built.is_file():
            raise EngineError(f"the llama-server build produced no binary at {built}; see {log}")
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        shutil.copy2(built, exe)
        (target / "LICENSE").write_bytes((src / "LICENSE").read_bytes())
    stamp.write_text(_stamp())
    if say:
        print(f"[engine] llama-server built in {time.perf_counter() - t0:.0f} s: {exe}", file=sys.stderr)
    return exe


def version(exe: Path) -> str:
    """``llama-server --version``'s first line (its build number and commit)."""
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    text = (proc.stdout + proc.stderr).strip().splitlines()
    return next((ln for ln in text if "version" in ln.lower()), text[0] if text else "unknown")


NO_REPACK = "--no-repack"
"""llama-server's switch that turns weight repacking (its extra CPU buffer types) off: the launcher adds it only when
the engine dies of an illegal instruction without it (:func:`scorer.engines.launcher.start`)."""


def command(exe: Path, gguf: Path, alias: str, host: str, port: int, threads: int | None, ctx: int,
            parallel: int) -> list[str]:
    """The server's command line: the GGUF, loopback, ``parallel`` slots sharing ``ctx * parallel`` cells (each
    request gets ``ctx``), prompt caching on (its default), no web UI. Flash attention off and the f16 KV
    cache pinned, as the in-process backend runs them, so both compute the same attention."""
    cmd = [str(exe), "-m", str(gguf), "--alias", alias, "--host", host, "--port", str(port),
           "--ctx-size", str(ctx * parallel), "--parallel", str(parallel), "--no-webui", "--metrics",
           "--flash-attn", "off", "--cache-type-k", "f16", "--cache-type-v", "f16", "--ubatch-size", "512"]
    if threads:
        cmd += ["--threads", str(threads), "--threads-batch", str(threads)]
    return cmd
