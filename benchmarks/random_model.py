"""Write a randomly initialised copy of a Hugging Face model folder: same tokenizer, chat template and
architecture (optionally shrunk), random weights.

Why: a machine that cannot reach a model hub (the GPU machine this project borrows, for one) can still
time the kernels of a real architecture and check device code paths. Decisions from random weights are
meaningless; the folder says so in ``semif-random.json``, and the loader records its digest like any
local folder.

    python benchmarks/random_model.py --like ~/.cache/semif/hf-v2/<sha> --out /tmp/qwen-random
    python benchmarks/random_model.py --like DIR --out /tmp/tiny --layers 2 --hidden 128 --heads 4 \
        --kv-heads 2 --intermediate 256
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json",
                    "generation_config.json")
# Config keys that describe where the source weights came from, not the architecture.
_DROP = ("quantization_config", "_model_name_or_path", "_name_or_path")


def write_random_model(like: Path, out: Path, seed: int = 0, init_std: float | None = None,
                       layers: int | None = None, hidden: int | None = None, heads: int | None = None,
                       kv_heads: int | None = None, intermediate: int | None = None) -> Path:
    """Create ``out`` (must not exist) holding ``like``'s tokenizer files and a random model of its config."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if out.exists():
        # scorer.core.io.refuse_overwrite's wording; not imported, as this script also runs where semif is not installed
        raise SystemExit(f"{out} exists; refusing to overwrite it (choose another --out)")
    cfg_raw = json.loads((like / "config.json").read_text())
    for key in _DROP:
        cfg_raw.pop(key, None)
    overrides = {"num_hidden_layers": layers, "hidden_size": hidden, "num_attention_heads": heads,
                 "num_key_value_heads": kv_heads, "intermediate_size": intermediate, "initializer_range": init_std}
    cfg_raw.update({k: v for k, v in overrides.items() if v is not None})
    if layers is not None and isinstance(cfg_raw.get("layer_types"), list):
        cfg_raw["layer_types"] = cfg_raw["layer_types"][:1] * layers
    cfg_raw["dtype"] = "float32"
    out.mkdir(parents=True)
    (out / "config.json").write_text(json.dumps(cfg_raw, indent=1))
    config = AutoConfig.from_pretrained(out)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(out)
    for name in _TOKENIZER_FILES:
        if (like / name).exists():
            shutil.copy2(like / name, out / name)
    params = sum(p.numel() for p in model.parameters())
    (out / "semif-random.json").write_text(json.dumps({
        "note": "random weights (torch.manual_seed); decisions from this model are meaningless",
        "like": str(like), "seed": seed, "parameters": params, "overrides": {k: v for k, v in overrides.items()
                                                                             if v is not None}}, indent=1))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--like", type=Path, required=True, help="HF folder whose tokenizer and config to copy")
    ap.add_argument("--out", type=Path, required=True, help="new folder (must not exist)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--init-std", type=float, help="initializer_range (larger spreads the logits)")
    for flag in ("layers", "hidden", "heads", "kv-heads", "intermediate"):
        ap.add_argument(f"--{flag}", type=int)
    a = ap.parse_args(argv)
    out = write_random_model(a.like, a.out, a.seed, a.init_std, a.layers, a.hidden, a.heads, a.kv_heads,
                             a.intermediate)
    print(f"wrote a random model to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
