"""The producing step of ``semif quant --schemes`` for llm-compressor schemes, run as a script in its own venv.

``python llmcompressor_job.py SPEC.json`` (the interpreter of :data:`scorer.engines.venv.LLMCOMPRESSOR`): loads the
fp32 reference checkpoint, tokenizes the calibration samples, applies the recipe with ``llmcompressor.oneshot`` and
saves the compressed checkpoint (compressed-tensors format) with its tokenizer into ``spec["output"]``. It imports
nothing of semif (semif's dependencies are not its business), prints one JSON line of facts last, and exits non-zero
with the error on stderr when anything fails. The recipe arrives as data (modifier class names and their keyword
arguments) so that what the cache key names is exactly what ran.

SPEC: ``reference`` (folder), ``output`` (folder, created), ``modifiers`` ([{"type": name, "args": {...}}]),
``samples`` ([text]), ``max_seq_length`` (int), ``threads`` (int or null), ``pin_memory_stub`` (bool).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

# Run as a script, its own folder (scorer/engines) comes first on sys.path, and semif's llmcompressor.py there would
# shadow the llmcompressor package: the folder is taken off before anything of llm-compressor is imported.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]


def _stub_pin_memory() -> None:
    """AWQ on a CPU-only machine: llm-compressor 0.14's ``IntermediatesCache.pin_memory(batch_index, input_names)``
    pins a batch's cached CPU tensors in place (``Tensor.pin_memory()``), which needs an accelerator and raises on a
    machine without one. Pinning only lets later host-to-device copies run non-blocking, and a CPU run makes none,
    so the stub leaves the batch unpinned. Done here, in the producing subprocess only, so nothing else runs with it."""
    from llmcompressor.pipelines import cache

    def leave_unpinned(self: Any, batch_index: int, input_names: list[str] | None = None) -> None:
        return None

    cache.IntermediatesCache.pin_memory = leave_unpinned


_MODIFIER_MODULES = ("llmcompressor.modifiers.transform", "llmcompressor.modifiers.quantization",
                     "llmcompressor.modifiers.gptq")
"""Where llm-compressor 0.14 keeps the modifiers the recipes name. Not ``llmcompressor.modifiers.awq`` or
``.smoothquant``: those are compatibility shims of the old API, whose ``AWQModifier(...)`` returns a list with an
empty QuantizationModifier of its own."""


def _modifier(spec: dict[str, Any]) -> Any:
    import importlib

    for name in _MODIFIER_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        cls = getattr(module, spec["type"], None)
        if isinstance(cls, type):
            return cls(**spec["args"])
    raise SystemExit(f"no llm-compressor modifier {spec['type']!r} in {', '.join(_MODIFIER_MODULES)}")


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    import torch

    if spec.get("threads"):
        torch.set_num_threads(int(spec["threads"]))
    if spec.get("pin_memory_stub"):
        _stub_pin_memory()
    from datasets import Dataset
    from llmcompressor import oneshot
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(spec["reference"])
    model = AutoModelForCausalLM.from_pretrained(spec["reference"], dtype=torch.float32)
    enc = [tok(text, truncation=True, max_length=int(spec["max_seq_length"]), add_special_tokens=False)
           for text in spec["samples"]]
    ds = Dataset.from_dict({"input_ids": [e["input_ids"] for e in enc],
                            "attention_mask": [e["attention_mask"] for e in enc]})
    recipe = [_modifier(m) for m in spec["modifiers"]]
    t1 = time.perf_counter()
    oneshot(model=model, processor=tok, dataset=ds, recipe=recipe, max_seq_length=int(spec["max_seq_length"]),
            num_calibration_samples=len(enc), shuffle_calibration_samples=False)
    t2 = time.perf_counter()
    out = Path(spec["output"])
    model.save_pretrained(str(out), save_compressed=True)
    tok.save_pretrained(str(out))
    import compressed_tensors
    import llmcompressor
    import transformers

    versions = {"llmcompressor": llmcompressor.__version__, "compressed_tensors": compressed_tensors.__version__,
                "transformers": transformers.__version__, "torch": torch.__version__}
    facts = {"load_s": round(t1 - t0, 3), "oneshot_s": round(t2 - t1, 3), "save_s": round(time.perf_counter() - t2, 3),
             "calibration_tokens": sum(len(e["input_ids"]) for e in enc), "threads": torch.get_num_threads(),
             "versions": versions}
    print(json.dumps(facts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
