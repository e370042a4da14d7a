"""Shared fixtures: fakes for logic tests, one real smollm2-135m backend per session for slow tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/fakes.py

from fakes import FakeBackend, FakeTokenizer  # noqa: E402


@pytest.fixture
def fake_backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def fake_tokenizer() -> FakeTokenizer:
    return FakeTokenizer()


@pytest.fixture(scope="session")
def smol_torch():
    """The real SmolLM2-135M through the torch backend (fp32, CPU), loaded once per test session."""
    from scorer.backends import BackendConfig, load_backend

    return load_backend(BackendConfig(model="smollm2-135m", backend="torch", device="cpu", dtype="float32"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return ROOT / "data"
