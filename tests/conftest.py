"""Shared fixtures, and the rule that a missing test prerequisite fails the suite instead of skipping it.

Fixtures: fakes for logic tests (tests/fakes.py; the remote engine in tests/fake_engine.py), and one real
SmolLM2-135M per test session and backend for the slow tests.

Prerequisites: a test marked ``llamacpp`` needs llama-cpp-python, one marked ``browser`` needs Chromium at
/usr/bin/chromium and Playwright. When one is missing, such a test FAILS and says what to install: a run
that silently skipped a whole backend or the site's browser checks would pass without testing them. To
skip them instead (a machine that cannot have them), name them in ``SEMIF_TEST_ALLOW_MISSING``: ``llamacpp``,
``browser``, comma-separated, or ``all``. Tests marked ``cuda`` skip without a CUDA device (most machines).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/fakes.py

from fakes import FakeBackend, FakeTokenizer  # noqa: E402

ALLOW_MISSING_ENV = "SEMIF_TEST_ALLOW_MISSING"
CHROMIUM = Path("/usr/bin/chromium")


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a broken or blocked package is as good as missing
        return False


_PREREQUISITES: dict[str, tuple[Callable[[], bool], str]] = {
    "llamacpp": (lambda: _has_module("llama_cpp"),
                 "llama-cpp-python is not installed: run scripts/install.sh (it builds llama-cpp-python==0.3.36)"),
    "browser": (lambda: CHROMIUM.exists() and _has_module("playwright"),
                f"the browser tests need Chromium at {CHROMIUM} and Playwright: run `scripts/install.sh --browser` "
                "as root (apt-get install chromium; playwright is in the dev extra)"),
}


def _allowed_missing() -> set[str]:
    names = {n.strip() for n in os.environ.get(ALLOW_MISSING_ENV, "").split(",") if n.strip()}
    return set(_PREREQUISITES) if "all" in names else names


@pytest.hookimpl(tryfirst=True)  # before the skipif marks of the test modules are evaluated
def pytest_runtest_setup(item: pytest.Item) -> None:
    for name, (present, install) in _PREREQUISITES.items():
        if item.get_closest_marker(name) is None or present():
            continue
        if name in _allowed_missing():
            pytest.skip(f"{install} ({ALLOW_MISSING_ENV} allows it)")
        pytest.fail(f"{install}; or set {ALLOW_MISSING_ENV}={name} to skip these tests", pytrace=False)


@pytest.fixture
def fake_backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def fake_tokenizer() -> FakeTokenizer:
    return FakeTokenizer()


@pytest.fixture(scope="session")
def smol_torch() -> Any:
    """The real SmolLM2-135M through the torch backend (fp32, CPU), loaded once per test session."""
    from scorer.backends import BackendConfig, load_backend

    return load_backend(BackendConfig(model="smollm2-135m", backend="torch", device="cpu", dtype="float32"))


@pytest.fixture(scope="session")
def smol_llamacpp() -> Any:
    """The real SmolLM2-135M GGUF (Q4_1) through the llama.cpp backend, loaded once per test session (only in
    tests marked ``llamacpp``)."""
    from scorer.backends import BackendConfig, load_backend
    from scorer.models import store

    return load_backend(BackendConfig(model=store.TEST_MODEL, backend="llamacpp"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return ROOT / "data"


@pytest.fixture(scope="module")
def fresh_seen() -> dict[str, dict[tuple[int, ...], Any]]:
    """:func:`fakes.fresh_loglik`'s fresh passes, kept per backend name for one test module: the real checks hold
    several modes (and every option of a row) to the same prompts, and each prompt's reference is still its own fresh
    pass from an empty state, read once."""
    return {}
