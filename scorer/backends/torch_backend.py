"""The torch/transformers kernel: fresh forward, prefix prefill + reuse, packed fan-out, greedy steps.

Shared mode runs ONE packed forward per chunk: all suffixes of a state are concatenated after the
prefilled prefix, a 4-D additive attention mask lets each suffix token see the whole prefix and the
earlier tokens of its own suffix only, and position ids restart at ``len(prefix)`` for every suffix.
No padding is computed (unlike right-padded batches over a broadcast cache), and logits are kept only
at each suffix's last token. The prefix cache is deep-copied per chunk so it is never mutated.
"""

from __future__ import annotations

import copy
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from scorer import __version__, store
from scorer.backends.base import FanOutTiming, Prefix, pack_chunks
from scorer.errors import ModelError
from scorer.tokenizer import HFTokenizer

_DTYPES = ("float32", "bfloat16", "float16")
_STOP_NAMES = ["<|im_end|>", "<|endoftext|>", "<end_of_turn>", "<|eot_id|>", "<eos>", "</s>"]
KERNEL = "torch.packed-4d-mask"


def default_dtype(device: str) -> str:
    """fp32 on CPU (bf16 is ~6× slower there and moves p), bf16 on CUDA, fp16 on MPS."""
    return {"cuda": "bfloat16", "mps": "float16"}.get(device, "float32")


def _dequantize_gguf(gguf: Path, sha256: str) -> Path:
    """Load a GGUF through transformers once, save its fp32 weights under the cache, keyed by sha256."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target = store.dequant_dir(sha256)
    if (target / "semif-dequant.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{sha256}.partial-{os.getpid()}"
    store.remove_tree(tmp)
    print(f"[semif] first load of {gguf.name}: dequantizing to fp32 (cached for next time) …", file=sys.stderr)
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    model.hf_quantizer = None  # else save_pretrained refuses a GGUF-loaded model
    model.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    meta = {"gguf_file": gguf.name, "gguf_sha256": sha256, "dtype": "float32",
            "note": "fp32 weights dequantized from the GGUF by transformers; not the original fp16/bf16 weights",
            "seconds": round(time.perf_counter() - t0, 2)}
    (tmp / "semif-dequant.json").write_text(json.dumps(meta, indent=1))
    store.remove_tree(target)
    os.replace(tmp, target)
    return target


class TorchBackend:
    """transformers model on cpu/cuda/mps. See :class:`scorer.backends.base.Backend` for the contracts."""

    name = "torch"
    kernel = KERNEL

    def __init__(self, ref: store.ModelRef, device: str = "cpu", dtype: str | None = None,
                 threads: int | None = None):
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if device not in ("cpu", "cuda", "mps"):
            raise ModelError(f"--device {device!r} (expected cpu, cuda or mps)")
        if device == "cuda" and not torch.cuda.is_available():
            raise ModelError("--device cuda, but torch sees no CUDA device")
        if device == "mps" and not torch.backends.mps.is_available():
            raise ModelError("--device mps, but torch sees no MPS device")
        dtype = dtype or default_dtype(device)
        if dtype not in _DTYPES:
            raise ModelError(f"--dtype {dtype!r} (expected one of {', '.join(_DTYPES)})")
        if threads:
            torch.set_num_threads(threads)
        self.torch = torch
        self.device = device
        self.logits_dtype = dtype
        self.ref = ref
        info: dict[str, Any] = {"key": ref.key, "source": ref.kind}
        load_kwargs: dict[str, Any] = {}
        if ref.kind in ("store", "gguf"):
            gguf, sha = store.gguf_for(ref)
            folder = _dequantize_gguf(gguf, sha)
            info.update(gguf_file=gguf.name, gguf_sha256=sha, revision=None,
                        weights="fp32 dequantized from the GGUF")
            if ref.entry:
                info.update(upstream=ref.entry.upstream, licence=ref.entry.licence)
            where = str(folder)
        elif ref.kind == "local":
            where = ref.name
            info.update(path=ref.name, revision=None, local_sha256=store.dir_digest(Path(ref.name)))
        else:
            where = ref.name
            load_kwargs["revision"] = ref.revision
            info.update(revision=ref.revision)
        t0 = time.perf_counter()
        try:
            hf_tok = AutoTokenizer.from_pretrained(where, **load_kwargs)
            model = AutoModelForCausalLM.from_pretrained(where, dtype=getattr(torch, dtype), **load_kwargs)
        except OSError as exc:
            raise ModelError(f"could not load {ref.name}: {exc}") from None
        self.load_s = time.perf_counter() - t0
        self.model = model.to(device).eval()
        self.tokenizer = HFTokenizer(hf_tok)
        cfg = model.config
        self.n_ctx = int(getattr(cfg, "max_position_embeddings", 0) or hf_tok.model_max_length)
        info.update(dtype=dtype, device=device, backend=self.name,
                    architecture=getattr(cfg, "model_type", None),
                    attn_implementation=getattr(cfg, "_attn_implementation", None),
                    n_ctx=self.n_ctx, vocab_size=int(cfg.vocab_size),
                    versions={"semif": __version__, "python": platform.python_version(),
                              "torch": torch.__version__, "transformers": transformers.__version__,
                              "numpy": np.__version__},
                    threads=torch.get_num_threads())
        self._info = info

    # --- protocol -------------------------------------------------------------------------------
    def model_info(self) -> dict[str, Any]:
        return dict(self._info)

    def _ids(self, ids: list[int]) -> Any:
        return self.torch.tensor([ids], dtype=self.torch.long, device=self.device)

    def _last(self, logits: Any) -> np.ndarray:
        return logits[0, -1].float().cpu().numpy()

    def score_fresh(self, ids: list[int]) -> np.ndarray:
        with self.torch.inference_mode():
            out = self.model(input_ids=self._ids(ids), use_cache=False, logits_to_keep=1)
        return self._last(out.logits)

    def prefill(self, ids: list[int]) -> Prefix:
        t0 = time.perf_counter()
        with self.torch.inference_mode():
            out = self.model(input_ids=self._ids(ids), use_cache=True, logits_to_keep=1)
        return Prefix(list(ids), out.cache, time.perf_counter() - t0)

    def score_with_prefix(self, prefix: Prefix, suffix: list[int]) -> tuple[np.ndarray, float]:
        t0 = time.perf_counter()
        cache = copy.deepcopy(prefix.handle)
        copy_s = time.perf_counter() - t0
        with self.torch.inference_mode():
            out = self.model(input_ids=self._ids(suffix), cache=cache, use_cache=True, logits_to_keep=1)
        return self._last(out.logits), copy_s

    def fan_out(self, prefix: Prefix, suffixes: list[list[int]], max_batch_tokens: int
                ) -> tuple[list[np.ndarray], FanOutTiming]:
        torch = self.torch
        timing = FanOutTiming()
        results: list[np.ndarray] = []
        p = len(prefix.ids)
        for chunk in pack_chunks(suffixes, max_batch_tokens):
            t0 = time.perf_counter()
            cache = copy.deepcopy(prefix.handle)
            t1 = time.perf_counter()
            flat = [t for s in chunk for t in s]
            n = len(flat)
            pos = torch.tensor([[p + i for s in chunk for i in range(len(s))]], device=self.device)
            mask = self._packed_mask(p, [len(s) for s in chunk])
            ends = torch.tensor(np.cumsum([len(s) for s in chunk]) - 1, device=self.device)
            with torch.inference_mode():
                out = self.model(input_ids=self._ids(flat), position_ids=pos, attention_mask=mask,
                                 cache=cache, use_cache=True, logits_to_keep=ends)
            logits = out.logits[0].float().cpu().numpy()
            assert logits.shape[0] == len(chunk) and n == int(ends[-1]) + 1
            results.extend(logits[i] for i in range(len(chunk)))
            t2 = time.perf_counter()
            timing.copy_s += t1 - t0
            timing.suffix_s += t2 - t1
            timing.chunks += 1
        return results, timing

    def _packed_mask(self, p: int, lens: list[int]) -> Any:
        """Additive mask (1, 1, L, p+L): every suffix token sees the prefix and its own causal past."""
        torch = self.torch
        total = sum(lens)
        allow = torch.zeros((total, p + total), dtype=torch.bool)
        allow[:, :p] = True
        start = 0
        for n in lens:
            allow[start:start + n, p + start:p + start + n] = torch.tril(torch.ones((n, n), dtype=torch.bool))
            start += n
        dt = getattr(torch, self.logits_dtype)
        mask = torch.zeros((total, p + total), dtype=dt)
        mask.masked_fill_(~allow, torch.finfo(dt).min)
        return mask[None, None].to(self.device)

    def release(self, prefix: Prefix) -> None:
        prefix.handle = None

    def decode_start(self, ids: list[int]) -> tuple[Any, np.ndarray]:
        with self.torch.inference_mode():
            out = self.model(input_ids=self._ids(ids), use_cache=True, logits_to_keep=1)
        return out.cache, self._last(out.logits)

    def decode_next(self, session: Any, token_id: int) -> np.ndarray:
        with self.torch.inference_mode():
            out = self.model(input_ids=self._ids([token_id]), cache=session, use_cache=True, logits_to_keep=1)
        return self._last(out.logits)

    def decode_end(self, session: Any) -> None:
        del session

    def stop_ids(self) -> list[int]:
        ids = set(self.tokenizer.special_ids(_STOP_NAMES))
        eos = getattr(self.model.generation_config, "eos_token_id", None)
        if isinstance(eos, int):
            ids.add(eos)
        elif isinstance(eos, list):
            ids.update(eos)
        return sorted(ids)

