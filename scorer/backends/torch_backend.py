"""The torch/transformers kernel: fresh forward, prefix prefill + reuse, packed fan-out, greedy steps.

Shared mode runs ONE packed forward per chunk: all suffixes of a state are concatenated after the
prefilled prefix, each suffix token sees the whole prefix and the earlier tokens of its own suffix
only, and position ids restart at ``len(prefix)`` for every suffix. No padding is computed (unlike
right-padded batches over a broadcast cache, which also run the MLP over pad tokens), and logits are
kept only at each suffix's last token (at every token for ``--slots sequence``: ``_pass_all``). The
prefix cache is deep-copied per chunk so it is never mutated.

Two attention kernels implement that visibility rule:

* ``torch.packed-blockwise`` (llama/qwen2 families: full causal attention in every layer): a custom
  attention function computes each query's scores against the prefix (one dense product) and
  against its own suffix only (a [L, S] block), with one softmax over both. Nothing is computed for
  pairs of different suffixes. Measured on qwen2.5-0.5b, 2 CPU cores, 21 suffixes of ~25 tokens over
  a ~500-token prefix: see ``data/results/shape-*.json``.
* ``torch.packed-4d-mask`` (every other architecture): the model's own SDPA attention with a 4-D
  additive mask; it computes, then masks, every suffix-to-suffix score (L × (prefix + L)).

Fresh passes, prefills, serial reuse and generation always run the model's own SDPA attention. ``extend`` (the
radix prefix cache) copies a prefix's cache, cut to its first positions when asked (only those are copied), and
runs the new tokens after it; a state's ``nbytes`` is its key and value tensors' size.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import json
import platform
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scorer import __version__
from scorer.backends import guidance
from scorer.backends.base import Backend, Grammar, Prefix
from scorer.core import threads as threading_policy
from scorer.core.errors import ModelError
from scorer.models import store
from scorer.prompting.tokenizer import STOP_NAMES, HFTokenizer

_DTYPES = ("float32", "bfloat16", "float16")
KERNEL = "torch.packed-4d-mask"
KERNEL_BLOCKWISE = "torch.packed-blockwise"
KERNELS = (KERNEL_BLOCKWISE, KERNEL)
_BLOCKWISE_ATTN = "semif_packed_blockwise"
# Architectures whose every layer is plain full causal attention (no sliding window, softcap or sinks),
# so the blockwise function computes exactly what SDPA with the packed mask computes.
_BLOCKWISE_ARCHS = ("llama", "qwen2")
_PACK = threading.local()  # the packing of the fan-out pass in flight (None outside fan_out)


def _blockwise_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                         dropout: float = 0.0, scaling: float | None = None, **kwargs: Any) -> tuple[Any, None]:
    """Attention of a packed fan-out pass without suffix-to-suffix work; SDPA for every other pass.

    ``query`` is [1, H, L, d] (the packed suffix tokens), ``key``/``value`` [1, Hkv, p + L, d] (prefix
    then suffix tokens, from the cache). Each query's logits are the prefix scores [p] and its own
    suffix's scores [S] (causal within the suffix), normalised by one softmax.
    """
    spec = getattr(_PACK, "spec", None)
    if spec is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    import torch

    p, own, allowed = spec  # own: [L, S] suffix-token index of each query's keys; allowed: [L, S] causal
    _, n_heads, n_q, d = query.shape
    n_kv = key.shape[1]
    scale = scaling if scaling is not None else d ** -0.5
    # Scores, softmax and the weighted sum run in fp32 whatever the model dtype (as SDPA's kernels
    # accumulate): in bf16 a hand-written softmax would drift ~10x further from the fresh path.
    f32 = torch.float32
    q = query[0].reshape(n_kv, n_heads // n_kv, n_q, d).to(f32)  # heads grouped by their key/value head (GQA)
    kp, vp = key[0, :, :p].to(f32), value[0, :, :p].to(f32)
    ks, vs = key[0, :, p:].to(f32), value[0, :, p:].to(f32)
    s_pre = torch.matmul(q, kp.transpose(-1, -2).unsqueeze(1)) * scale  # [Hkv, g, L, p]
    k_own, v_own = ks[:, own], vs[:, own]  # [Hkv, L, S, d]
    s_own = torch.einsum("hgld,hlsd->hgls", q, k_own) * scale  # [Hkv, g, L, S]
    s_own = s_own.masked_fill(~allowed, float("-inf"))
    top = torch.maximum(s_pre.amax(-1, keepdim=True), s_own.amax(-1, keepdim=True))
    e_pre, e_own = (s_pre - top).exp_(), (s_own - top).exp_()
    den = e_pre.sum(-1, keepdim=True) + e_own.sum(-1, keepdim=True)
    out = (torch.matmul(e_pre, vp.unsqueeze(1)) + torch.einsum("hgls,hlsd->hgld", e_own, v_own)) / den
    return out.reshape(n_heads, n_q, d).transpose(0, 1).unsqueeze(0).to(query.dtype).contiguous(), None


def _register_blockwise() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(_BLOCKWISE_ATTN, _blockwise_attention)
    AttentionMaskInterface.register(_BLOCKWISE_ATTN, sdpa_mask)  # non-packed passes get SDPA's own masks


def blockwise_supported(cfg: Any) -> bool:
    """Whether the blockwise fan-out attention computes exactly what the model's attention does."""
    types = getattr(cfg, "layer_types", None) or ["full_attention"]
    return (getattr(cfg, "model_type", None) in _BLOCKWISE_ARCHS
            and getattr(cfg, "_attn_implementation", None) == "sdpa"
            and not getattr(cfg, "use_sliding_window", False) and all(t == "full_attention" for t in types))


def cuts_supported(cfg: Any) -> bool:
    """Whether every layer's cache holds every past token (plain full attention), so a cached prefix can be cut
    to its first tokens (a sliding-window layer has dropped the early ones)."""
    types = getattr(cfg, "layer_types", None) or ["full_attention"]
    return not getattr(cfg, "use_sliding_window", False) and all(t == "full_attention" for t in types)


def cache_bytes(cache: Any) -> int:
    """Bytes of the key and value tensors a cache holds (every layer)."""
    return sum(int(t.numel()) * int(t.element_size()) for layer in cache.layers
               for t in (layer.keys, layer.values) if t is not None)


def cut_cache(cache: Any, keep: int) -> Any:
    """A copy of ``cache`` holding its first ``keep`` positions only (the source is left as it was).

    Only the kept positions are copied: the deep copy is handed each layer's cut tensors through its memo, so it
    never copies the whole cache first. Refused for layers other than transformers' plain ``DynamicLayer``
    (:func:`cuts_supported` is checked before any call gets here)."""
    from transformers.cache_utils import DynamicLayer

    memo: dict[int, Any] = {}
    for layer in cache.layers:
        if type(layer) is not DynamicLayer:
            raise ModelError(f"cannot cut a {type(layer).__name__} cache layer (only full-attention layers hold "
                             "every past token)")
        for t in (layer.keys, layer.values):
            if t is not None:
                memo[id(t)] = t[..., :keep, :].clone()
    return copy.deepcopy(cache, memo)


def default_dtype(device: str) -> str:
    """fp32 on CPU (bf16 is ~6× slower there and moves p), bf16 on CUDA, fp16 on MPS."""
    return {"cuda": "bfloat16", "mps": "float16"}.get(device, "float32")


def _drop_quantization_config(config_json: Path) -> dict[str, Any] | None:
    """Remove ``quantization_config`` from a saved config.json; return what was removed.

    Why: the weights saved are plain fp32, but transformers copies the GGUF's ``{"quant_method": "gguf"}``
    into the config, and standard loaders (plain ``from_pretrained``, lm-eval) then refuse or mis-handle the
    folder. The GGUF provenance is kept in ``semif-dequant.json`` instead.
    """
    cfg = json.loads(config_json.read_text(encoding="utf-8"))
    dropped = cfg.pop("quantization_config", None)
    config_json.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return dropped


def dequantize_gguf(gguf: Path, sha256: str, weights: bool = True) -> Path:
    """The verified fp32 checkpoint of a GGUF: built once (transformers dequantizes it), checked on every load.

    The folder (``store.dequant_dir``) is refused with a :class:`ModelError` naming the file when any file
    differs from the manifest written at creation (``store.verify_manifest``); it is never scored from.
    ``weights=False`` leaves the weight files' digests to the caller (the backend checks them while it loads:
    :func:`scorer.models.store.verify_weights`); everything else, config and tokenizer included, is checked here.
    """
    target = store.dequant_dir(sha256)
    if target.exists():
        store.verify_manifest(target, sha256, weights=weights)
        return target

    def build(tmp: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        print(f"[semif] first load of {gguf.name}: dequantizing to fp32 (cached for next time) …", file=sys.stderr)
        t0 = time.perf_counter()
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
        model.hf_quantizer = None  # type: ignore[assignment]  # else save_pretrained refuses a GGUF-loaded model
        model.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))
        dropped = _drop_quantization_config(tmp / "config.json")
        meta = {"gguf_file": gguf.name, "gguf_sha256": sha256, "dtype": "float32",
                "note": "fp32 weights dequantized from the GGUF by transformers; not the original fp16/bf16 weights",
                "config_quantization_config_dropped": dropped}
        # no timing in the folder: its manifest identifies these weights (the quantized-scheme cache keys on it),
        # so it must be a function of the GGUF alone, not of how long this machine took
        (tmp / "semif-dequant.json").write_text(json.dumps(meta, indent=1))
        print(f"[semif] dequantized {gguf.name} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)

    return store.build_verified(target, sha256, "dequantized-fp32", build)


EMULATED = ("emulated in transformers (CompressedTensorsConfig(run_compressed=False): the integer weights are "
            "decompressed to the model dtype; no integer kernel ran)")


def emulation_facts(model: Any) -> dict[str, Any]:
    """What the loaded emulation really simulates, read off the modules compressed-tensors left behind: how many
    carry a quantization scheme, and on how many of them the forward pass still quantizes (quantize-dequantize)
    the input activations. Why it is counted, not assumed: depending on the transformers version,
    ``run_compressed=False`` either keeps the scheme on every Linear (activations of a W8A8 scheme fake-quantized)
    or only dequantizes the weights and drops it (the activations then stay fp32). A record must say which."""
    with_scheme = [m for m in model.modules() if getattr(m, "quantization_scheme", None) is not None]
    acts = [m for m in with_scheme if getattr(m.quantization_scheme, "input_activations", None) is not None
            and getattr(m, "quantization_enabled", True)]
    statuses = sorted({str(getattr(m, "quantization_status", None)) for m in with_scheme})
    return {"modules_with_scheme": len(with_scheme), "activation_quantized_modules": len(acts), "statuses": statuses,
            "activations": ("fake-quantized in the forward pass (quantize-dequantize)" if acts
                            else "not quantized: the emulation is weight-only")}


def _emulated_compressed_tensors() -> Any:
    """transformers' loader for a compressed-tensors folder that decompresses it instead of running compressed
    modules: on CPU no int8/int4 kernel exists in transformers, so this is the only way it runs there, and the
    records then say it was emulated (:data:`EMULATED`), never that a kernel computed it."""
    try:
        from transformers import CompressedTensorsConfig
    except ImportError as exc:  # pragma: no cover - depends on the installed transformers
        raise ModelError(f"this folder is a compressed-tensors checkpoint, and transformers here cannot load it "
                         f"({exc}); score it with `semif quant --schemes`, which runs it in llm-compressor's venv") \
            from None
    return CompressedTensorsConfig(run_compressed=False)


class _Check:
    """A verification running on a daemon thread; :meth:`result` waits for it and re-raises its error."""

    def __init__(self, fn: Callable[[], None]):
        self._error: BaseException | None = None

        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # handed to the caller by result()
                self._error = exc

        self._thread = threading.Thread(target=run, name="semif-weight-check", daemon=True)
        self._thread.start()

    def result(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


class TorchBackend(Backend):
    """transformers model on cpu/cuda/mps. See :class:`scorer.backends.base.Backend` for the contracts."""

    name = "torch"
    kernel = KERNEL
    extends_prefixes = True
    scores_continuations = True

    def __init__(self, ref: store.ModelRef, device: str = "cpu", dtype: str | None = None,
                 threads: int | str | None = None):
        policy = threading_policy.apply_wait_policy()  # before torch loads its OpenMP runtime (a no-op after)
        choice = threading_policy.choose_threads(threads, "torch's own choice (torch.get_num_threads())")
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
        if choice.chosen is not None:
            torch.set_num_threads(choice.chosen)
        self.torch = torch
        self.device = device
        self.logits_dtype = dtype
        self.ref = ref
        info: dict[str, Any] = {"key": ref.key, "source": ref.kind}
        load_kwargs: dict[str, Any] = {}
        model_kwargs: dict[str, Any] = {}  # the model's own (a quantization config must not reach the tokenizer)
        weight_check: _Check | None = None
        if ref.kind in ("store", "gguf"):
            gguf, sha = store.gguf_for(ref)
            folder = dequantize_gguf(gguf, sha, weights=False)
            # The weights' digests are checked on a thread while transformers reads the same files (the check
            # then costs about what the load's reads cost); the model is refused before it is ever used.
            weight_check = _Check(lambda: store.verify_weights(folder, sha))
            info.update(gguf_file=gguf.name, gguf_sha256=sha, revision=None,
                        weights="fp32 dequantized from the GGUF")
            if ref.entry:
                info.update(upstream=ref.entry.upstream, licence=ref.entry.licence)
            where = str(folder)
        elif ref.kind == "local":
            where = ref.name
            info.update(path=ref.name, revision=None, local_sha256=store.dir_digest(Path(ref.name)))
            quant = store.checkpoint_quantization(Path(ref.name))
            if quant is not None:
                model_kwargs["quantization_config"] = _emulated_compressed_tensors()
                info.update(weights=f"compressed-tensors checkpoint ({quant['scheme'] or 'unnamed scheme'}), "
                                    f"{EMULATED}",
                            quantization={**quant, "execution": EMULATED})
        else:
            where = ref.name
            load_kwargs["revision"] = ref.revision
            info.update(revision=ref.revision)
        t0 = time.perf_counter()
        try:
            hf_tok = AutoTokenizer.from_pretrained(where, **load_kwargs)
            model = AutoModelForCausalLM.from_pretrained(where, dtype=getattr(torch, dtype), **load_kwargs,
                                                         **model_kwargs)
        except Exception as exc:  # corrupt or foreign files: a clear refusal, never a traceback
            if weight_check is not None:
                weight_check.result()  # a tampered weight file is named as such, not as a load failure
            raise ModelError(f"could not load {ref.name} from {where}: {type(exc).__name__}: "
                             f"{(str(exc).splitlines() or ['no detail'])[0][:300]}") from None
        if weight_check is not None:
            weight_check.result()
        self.load_s = time.perf_counter() - t0
        self.model = model.to(device).eval()  # type: ignore[arg-type]  # transformers types .to() for modules only
        # which name this transformers gives the KV cache (see _forward)
        self._cache_name = "cache" if "cache" in inspect.signature(self.model.forward).parameters else \
            "past_key_values"
        if "quantization" in info:
            info["quantization"]["emulation"] = emulation_facts(model)
        self.tokenizer: HFTokenizer = HFTokenizer(hf_tok)
        cfg = model.config
        self.n_vocab = int(cfg.vocab_size)
        self.n_ctx = int(getattr(cfg, "max_position_embeddings", 0) or hf_tok.model_max_length)
        info.update(dtype=dtype, device=device, backend=self.name,
                    architecture=getattr(cfg, "model_type", None),
                    attn_implementation=getattr(cfg, "_attn_implementation", None),
                    n_ctx=self.n_ctx, vocab_size=int(cfg.vocab_size),
                    versions={"semif": __version__, "python": platform.python_version(),
                              "torch": torch.__version__, "transformers": transformers.__version__,
                              "numpy": np.__version__},
                    threads=torch.get_num_threads(),
                    threading=threading_policy.threading_block(choice, torch.get_num_threads(), policy))
        self._info = info
        self.kernel = KERNEL
        self._blockwise_ok = blockwise_supported(cfg)
        self.cuts_prefixes = cuts_supported(cfg)
        if self._blockwise_ok:
            self.use_kernel(KERNEL_BLOCKWISE)

    def use_kernel(self, kernel: str) -> None:
        """Choose the shared-mode kernel (``torch.packed-blockwise`` where supported, else the 4-D mask)."""
        if kernel not in KERNELS:
            raise ModelError(f"unknown kernel {kernel!r} (expected one of {', '.join(KERNELS)})")
        if kernel == KERNEL_BLOCKWISE:
            if not self._blockwise_ok:
                raise ModelError(f"kernel {KERNEL_BLOCKWISE} supports {', '.join(_BLOCKWISE_ARCHS)} with full "
                                 f"causal attention in every layer, not this {self._info.get('architecture')} model")
            _register_blockwise()
            # Every pass but fan-out delegates to SDPA unchanged; the record's model block keeps saying so.
            self.model.set_attn_implementation(_BLOCKWISE_ATTN)
        elif self.kernel == KERNEL_BLOCKWISE:
            self.model.set_attn_implementation("sdpa")
        self.kernel = kernel

    # --- kernel ---------------------------------------------------------------------------------
    def model_info(self) -> dict[str, Any]:
        return dict(self._info)

    def _ids(self, ids: list[int]) -> Any:
        return self.torch.tensor([ids], dtype=self.torch.long, device=self.device)

    def _last(self, logits: Any) -> np.ndarray:
        return logits[0, -1].float().cpu().numpy()

    def _forward(self, input_ids: Any, cache: Any, **kw: Any) -> tuple[Any, Any]:
        """One cached model call: its output and the KV cache after it. transformers 5.24 (this project's pin)
        names the cache ``cache``, argument and output; earlier 5.x (the llm-compressor environment, which runs
        this backend on emulated quantized checkpoints) names it ``past_key_values``."""
        if cache is not None:
            kw[self._cache_name] = cache
        out = self.model(input_ids=input_ids, use_cache=True, **kw)
        return out, getattr(out, self._cache_name)

    def _score_fresh(self, ids: list[int], want: Sequence[int] | None = None) -> np.ndarray:
        with self.torch.inference_mode():
            out = self.model(input_ids=self._ids(ids), use_cache=False, logits_to_keep=1)
        return self._last(out.logits)

    def _prefill(self, ids: list[int]) -> Prefix:
        t0 = time.perf_counter()
        with self.torch.inference_mode():
            _out, cache = self._forward(self._ids(ids), None, logits_to_keep=1)
        return Prefix(list(ids), cache, time.perf_counter() - t0, cache_bytes(cache))

    def _extend(self, prefix: Prefix, keep: int, ids: list[int]) -> Prefix:
        """Copy the prefix's cache (cut to ``keep`` positions), then run ``ids`` after it."""
        t0 = time.perf_counter()
        with self.torch.inference_mode():  # the cut copies are inference tensors, like the caches they come from
            cache = cut_cache(prefix.handle, keep) if keep < len(prefix.ids) else copy.deepcopy(prefix.handle)
            if ids:
                _out, cache = self._forward(self._ids(ids), cache, logits_to_keep=1)
        return Prefix(prefix.ids[:keep] + ids, cache, time.perf_counter() - t0, cache_bytes(cache))

    def _score_with_prefix(self, prefix: Prefix, suffix: list[int], want: Sequence[int] | None = None
                           ) -> tuple[np.ndarray, float]:
        t0 = time.perf_counter()
        cache = copy.deepcopy(prefix.handle)
        copy_s = time.perf_counter() - t0
        with self.torch.inference_mode():
            out, _cache = self._forward(self._ids(suffix), cache, logits_to_keep=1)
        return self._last(out.logits), copy_s

    def _branch(self, prefix: Prefix, part: list[list[int]]) -> Any:
        return copy.deepcopy(prefix.handle)  # the pass appends to the cache: the prefix's own stays untouched

    def _pass(self, prefix: Prefix, branched: Any, part: list[list[int]],
              wants: list[Sequence[int]] | None = None) -> list[np.ndarray]:
        """ONE packed forward: every suffix after the prefix, positions restarting at ``len(prefix)``; logits at
        each suffix's last token."""
        ends = np.cumsum([len(s) for s in part]) - 1
        logits = self._packed_forward(prefix, branched, part, ends)
        return [logits[i] for i in range(len(part))]

    def _pass_all(self, prefix: Prefix, branched: Any, part: list[list[int]]) -> list[np.ndarray]:
        """The packed forward of :meth:`_pass`, logits at every suffix token (``--slots sequence``)."""
        lens = [len(s) for s in part]
        logits = self._packed_forward(prefix, branched, part, np.arange(sum(lens)))
        starts = np.cumsum([0, *lens])
        return [logits[a:b] for a, b in itertools.pairwise(starts)]

    def _packed_forward(self, prefix: Prefix, branched: Any, part: list[list[int]], keep: np.ndarray) -> np.ndarray:
        """ONE packed forward over ``part`` after the prefix (the suffixes see the prefix and their own past only);
        the float32 logits at the packed positions ``keep``, ``[len(keep), n_vocab]``."""
        torch = self.torch
        p = len(prefix.ids)
        lens = [len(s) for s in part]
        flat = [t for s in part for t in s]
        pos = torch.tensor([[p + i for n in lens for i in range(n)]], device=self.device)
        mask = self._packed_mask(p, lens)
        if self.kernel == KERNEL_BLOCKWISE:
            _PACK.spec = (p, *self._own_blocks(lens))
        try:
            with torch.inference_mode():
                out, _cache = self._forward(self._ids(flat), branched, position_ids=pos, attention_mask=mask,
                                            logits_to_keep=torch.tensor(keep, device=self.device))
        finally:
            _PACK.spec = None
        logits = out.logits[0].float().cpu().numpy()
        assert logits.shape[0] == len(keep) and int(keep[-1]) < len(flat)
        return logits

    def _own_blocks(self, lens: list[int]) -> tuple[Any, Any]:
        """For each packed query: the indices of its own suffix's tokens [L, S] and which it may see."""
        torch = self.torch
        width = max(lens)
        starts = np.cumsum([0, *lens[:-1]])
        own = np.zeros((sum(lens), width), dtype=np.int64)
        allowed = np.zeros((sum(lens), width), dtype=bool)
        tri = np.tril(np.ones((width, width), dtype=bool))
        for st, n in zip(starts, lens, strict=True):
            own[st:st + n] = st + np.minimum(np.arange(width), n - 1)
            allowed[st:st + n] = tri[:n]
        return torch.from_numpy(own).to(self.device), torch.from_numpy(allowed).to(self.device)

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

    def _decode_start(self, ids: list[int]) -> tuple[Any, np.ndarray]:
        with self.torch.inference_mode():
            out, cache = self._forward(self._ids(ids), None, logits_to_keep=1)
        return cache, self._last(out.logits)

    def decode_next(self, session: Any, token_id: int) -> np.ndarray:
        with self.torch.inference_mode():
            out, _cache = self._forward(self._ids([token_id]), session, logits_to_keep=1)
        return self._last(out.logits)

    def decode_end(self, session: Any) -> None:
        del session

    def stop_ids(self) -> list[int]:
        ids = set(self.tokenizer.special_ids(STOP_NAMES))
        eos = getattr(self.model.generation_config, "eos_token_id", None)
        if isinstance(eos, int):
            ids.add(eos)
        elif isinstance(eos, list):
            ids.update(eos)
        return sorted(ids)

    def grammar(self, gbnf: str) -> Grammar:
        """llguidance over the Hugging Face tokenizer's vocabulary (:mod:`scorer.backends.guidance`); the
        vocabulary is converted once per backend and its time is added to the first grammar's compile_s."""
        t0 = time.perf_counter()
        if getattr(self, "_lltokenizer", None) is None:
            self._lltokenizer = guidance.tokenizer_from_hf(self.tokenizer.hf, self.stop_ids())
        vocab_s = time.perf_counter() - t0
        g = guidance.LlgGrammar(self._lltokenizer, gbnf, int(self._lltokenizer.vocab_size))
        g.compile_s += vocab_s
        return g

