"""What a trace is called in the picker (``qwen2.5-1.5b · torch fp32 · CPU``), kept distinct between traces,
and whether it is a timing control (random weights)."""

from __future__ import annotations

import re
from typing import Any

from scorer.site.inputs import TraceFile

_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def is_control(obj: dict[str, Any]) -> bool:
    """A random-weights run (timing only): its model or experiment says so in its name."""
    names = " ".join(str(x) for x in ((obj.get("model") or {}).get("key"), (obj.get("experiment") or {}).get("id")))
    return "random" in names.lower()


def trace_label(obj: dict[str, Any]) -> str:
    """``qwen2.5-1.5b · torch fp32 · CPU``: short enough for a phone's picker."""
    m, mach = obj.get("model") or {}, obj.get("machine") or {}
    model = str(m.get("key", "?"))
    if model.startswith(("/", "./", "~")):  # a local directory: its name says enough
        model = model.rstrip("/").rsplit("/", 1)[-1]
    if is_control(obj):
        model = re.split(r"-arch|-random", model, flags=re.IGNORECASE)[0] + ", random weights"
    backend = str(m.get("backend", "?"))
    if backend == "llamacpp":
        quant = re.search(r"(q\d\w*|f16|f32|bf16)\.gguf$", str(m.get("gguf_file") or ""), flags=re.IGNORECASE)
        engine = "llama.cpp" + (f" {quant.group(1).upper()}" if quant else "")
    else:
        engine = f"{backend} {_DTYPES.get(str(m.get('dtype')), m.get('dtype', '?'))}"
    gpu = mach.get("gpu")
    where = re.sub(r"^(NVIDIA|AMD|Intel)\s+", "", str(gpu)) if gpu else "CPU"
    return f"{model} · {engine} · {where}"


def cpu_name(obj: dict[str, Any]) -> str:
    """The trace's CPU, short (``Intel(R) Xeon(R) Processor`` → ``Intel Xeon``): one model and engine measured on two
    kinds of CPU are told apart by it before the date (the date alone can be the same day)."""
    cpu = str((obj.get("machine") or {}).get("cpu") or "")
    return " ".join(re.sub(r"\((R|TM)\)|\b(Processor|CPU)\b", " ", cpu, flags=re.IGNORECASE).split())


def kernels(obj: dict[str, Any]) -> str:
    """The widest x86 vector set a llama.cpp build computed with (its ``system_info``): one machine can run a native
    build and an AVX2-only one, and the two are different measurements of the same model on the same CPU."""
    info = str(((obj.get("model") or {}).get("llama") or {}).get("system_info") or "")
    for flag, name in (("AVX512", "AVX-512"), ("AVX2", "AVX2"), ("AVX", "AVX")):
        if re.search(rf"\b{flag} = 1\b", info):
            return name
    return ""


def distinct_labels(traces: list[TraceFile]) -> None:
    """Labels that match get the input's id, then the CPU's name, then the kernels' vector set, then the run's date,
    then its time, then (still matching) the file's name; a detail is added only where it tells the matching traces
    apart (so names stay short)."""
    def created(t: TraceFile) -> str:
        return str((t.obj.get("experiment") or {}).get("created_utc", ""))

    for extra in (lambda t: str((t.obj.get("inputs") or {}).get("id", "")), lambda t: cpu_name(t.obj),
                  lambda t: kernels(t.obj), lambda t: created(t)[:10], lambda t: created(t)[11:16],
                  lambda t: t.slug):
        groups: dict[str, list[TraceFile]] = {}
        for t in traces:
            groups.setdefault(t.label, []).append(t)
        for same in groups.values():
            if len(same) > 1 and len({extra(t) for t in same}) > 1:
                for t in same:
                    if extra(t):
                        t.label = f"{t.label} · {extra(t)}"
