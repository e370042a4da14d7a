"""The package is self-contained (issue #37): a wheel built from the checkout, installed into a fresh virtualenv
outside it, runs ``semif ask --preset accurate``, ``semif serve`` (one request) and ``semif site build`` from an
empty folder. The presets, the demonstrations they show, the JSON Schemas and the site's templates all come from the
installed package.

The fresh venv gets the wheel itself (no dependencies) and sees the project venv's third-party packages through a
plain path entry: a ``.pth`` line adds a folder to ``sys.path`` without running the ``.pth`` files in it, so the
checkout's editable install of ``scorer`` is not activated there. The test checks that ``scorer`` is imported from
the fresh venv."""

from __future__ import annotations

import os
import shutil
import site
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.llamacpp]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (outside the checkout) with the wheel of the checkout installed; its ``bin`` folder."""
    tmp = tmp_path_factory.mktemp("wheel")
    # Built from a copy of what the package is made of: setuptools' build/ folder in the checkout keeps modules that
    # were since deleted, and a wheel built there would ship them.
    src = tmp / "src"
    shutil.copytree(ROOT / "scorer", src / "scorer", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).is_file():
            shutil.copy(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(src),
                    "-w", str(tmp / "dist")], check=True, cwd=tmp, timeout=300)
    wheel = next((tmp / "dist").glob("semif-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   timeout=300)
    packages = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip())
    (packages / "zz-project-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    where = subprocess.run([str(py), "-c", "import scorer; print(scorer.__file__)"], capture_output=True, text=True,
                           check=True, cwd=tmp, env=_env()).stdout.strip()
    assert where.startswith(str(venv)), f"scorer came from {where}, not the installed wheel"
    return venv / "bin"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def _empty(tmp_path: Path) -> Path:
    here = tmp_path / "empty"
    here.mkdir()
    return here


def test_semif_ask_with_the_accurate_preset_from_an_empty_folder(installed, tmp_path):
    here = _empty(tmp_path)
    done = subprocess.run([str(installed / "semif"), "ask", "--model", "qwen2.5-1.5b", "--backend", "llamacpp",
                           "--preset", "accurate", "--uncovered", "raw",
                           "--state", "I was charged twice for one order; refund me.",
                           "--yesno", "refund=Is the customer asking for their money back?",
                           "--records", str(tmp_path / "records.jsonl")],
                          cwd=here, env=_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    doc = orjson.loads(done.stdout)
    assert 0.0 <= doc["answers"]["refund"]["p_yes"] <= 1.0
    record = orjson.loads((tmp_path / "records.jsonl").read_bytes().splitlines()[0])
    assert record["preset"]["name"] == "accurate-qwen2.5-1.5b"
    assert record["preset"]["path"].startswith(str(installed.parent))  # the preset shipped in the wheel
    assert not any(here.iterdir())  # nothing written where it ran


def test_semif_serve_answers_a_request_from_an_empty_folder(installed, tmp_path):
    here = _empty(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(installed / "semif"), "serve", "--model", "smollm2-135m", "--backend", "llamacpp",
                             "--port", str(port)], cwd=here, env=_env(), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "semif serve did not come up"
            time.sleep(0.3)
        r = httpx.post(f"http://127.0.0.1:{port}/v1/ask", json={
            "state": "I was charged twice.", "questions": {"refund": {"type": "yesno", "question": "Refund?"}}},
            timeout=120)
        assert r.status_code == 200, r.text
        assert set(r.json()["answers"]) == {"refund"}
        schema = httpx.get(f"http://127.0.0.1:{port}/v1/schema", timeout=30).json()  # package data: the schemas
        assert schema["row"]["$id"] == "semif-row-v1"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_semif_site_build_from_an_empty_folder(installed, tmp_path):
    here = _empty(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    for trace in (ROOT / "tests" / "fixtures").glob("trace-v2*.json"):
        shutil.copy(trace, data / trace.name)
    done = subprocess.run([str(installed / "semif"), "site", "build", "--data", str(data)], cwd=here, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (here / "site" / "index.html").is_file() and (here / "site" / "live" / "index.html").is_file()
    assert "assets/replay.js" in {p.relative_to(here / "site").as_posix() for p in (here / "site").rglob("*")}
