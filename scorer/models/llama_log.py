"""llama.cpp's log, captured: one process-wide sink that the llama.cpp backend and the GGUF quantizer both read.

llama.cpp reports some facts only in its log (where each layer went, whether flash attention is on, the
tensor types a quantization chose, why a load failed), so the log is routed here instead of stderr and
read back between marks. Nothing here imports llama.cpp until :meth:`_LogSink.install` runs.
"""

from __future__ import annotations

import ctypes
from typing import Any


class _LogSink:
    """Captures llama.cpp's log (it is the only place some facts appear, e.g. where layers went)."""

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self._base = 0
        self._callback: Any = None

    def install(self) -> None:
        """Route llama.cpp's log here (once per process); nothing is printed."""
        if self._callback is not None:
            return
        import llama_cpp

        @llama_cpp.llama_log_callback
        def _cb(level: int, text: bytes, user_data: Any) -> None:
            self._chunks.append(text.decode("utf-8", "replace"))
            if len(self._chunks) > 40_000:  # keep memory bounded on long runs
                drop = 20_000
                del self._chunks[:drop]
                self._base += drop

        self._callback = _cb  # the C side holds only a pointer: keep the object alive
        llama_cpp.llama_log_set(_cb, ctypes.c_void_p(0))

    def mark(self) -> int:
        return self._base + len(self._chunks)

    def text(self, mark: int) -> str:
        return "".join(self._chunks[max(0, mark - self._base):])

    def tail(self, mark: int, lines: int = 8) -> str:
        got = [ln for ln in self.text(mark).splitlines() if ln.strip()]
        return " | ".join(got[-lines:]) or "(llama.cpp logged nothing)"


LLAMA_LOG = _LogSink()
