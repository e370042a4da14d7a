"""The llama.cpp kernel (GGUF weights), through llama-cpp-python's low-level C API.

What runs, per protocol call (one context, one KV stream per sequence; nothing stays in the cache between calls
except a live generation session, and an idle cache is cleared so every call lays its tokens out from
cell 0, exactly as a fresh run does):

* ``score_fresh`` (direct): the prompt in one sequence, logits at its last token only.
* ``prefill``: the prefix decoded once, its state saved off the cache (``llama_state_seq_get_data``).
* ``score_with_prefix`` (serial): the saved prefix restored into cells 0… (``…set_data``), the suffix
  decoded after it. Same cell layout as a fresh run.
* ``extend`` (the radix prefix cache): a saved prefix restored into cells 0…, cut to its first ``keep``
  positions (``llama_memory_seq_rm``, which frees the cells after them, so the new tokens land in the cells a
  fresh run would give them), the new tokens decoded after it, the state saved again.
* ``fan_out`` (shared, kernel ``llamacpp.seq-cp-batch``): per packed pass the prefix is restored once and
  ``seq_cp``-ed to one branch per suffix, each branch in its own KV stream (cells 0… of its own, as in a fresh
  run), then the suffixes go through one ``llama_decode`` per width group (:func:`width_groups`: suffixes of similar
  length together, each token tagged with its branch's sequence id and its position), logits only at each branch's
  last token (at every token for ``--slots sequence``: ``fan_out_logprobs``); every sequence is removed afterwards.

Canonical computation (why direct = serial = shared to the last bit on the CPU). llama.cpp's logits for a token
depend on how it was batched, not only on its context; measured on this project's GGUFs
(``benchmarks/llamacpp_batch_probe.py``, data/results/llamacpp-batch-probe-*.json) and removed by three rules:

1. **No weight repacking** (``use_extra_bufts = false``): the repacked Q4_K kernels multiply groups of four batch
   rows by one kernel and the rest by another, so a token's numbers depended on where it fell in its batch.
2. **One KV stream per sequence** (``kv_unified = false``): in a unified cache a branch's suffix sits behind the
   other branches' cells and attention sums its terms in another order; in its own stream every branch has the
   layout of a fresh run (the prefix is copied into it, not shared).
3. **No decode of fewer than** :data:`MIN_PIECE` **tokens of one sequence**: the smallest batches take other
   matrix kernels. A short suffix is decoded with pad tokens after it, a long prompt is split into pieces of at
   most ``n_ubatch`` whose last one is never short, and a packed pass gives every branch of a width group as many
   tokens (llama.cpp puts the group's streams in one ubatch of equal slices: the ids of a group step up by one).
4. **No logits read from fewer than** :data:`MIN_OUTPUTS` **rows of a ubatch**: the output matrix takes another
   kernel below 8 rows (measured on qwen2.5-1.5b, both AVX2 and AVX-512 kernels: the last row's logits moved by
   2.1e-6 between 7 and 8 rows read, and not at all from 1 to 7 or from 8 to 99; on qwen2.5-0.5b a logit moved by
   0.02). A decode that wants fewer also reads the rows of the last tokens before it, and throws them away. So a
   packed pass (one ubatch of many branches, one row each) and a prompt scored alone read their logits alike.
   Generation (``decode_next``, one token at a time) is exempt from 3 and 4: nothing compares it.

The drift that is left is still measured (tests, ``semif drift``, the ``--exact`` probe), never assumed 0.
* ``decode_start/next/end``: greedy generation in its own sequence.

The context (KV cells, sequences, batch) is sized from the rows by :meth:`LlamaCppBackend.plan_memory`
before a run, and recorded. Prompts are encoded by the reference (Hugging Face) tokenizer; the GGUF's
own tokenizer only proves parity (:mod:`scorer.backends.gguf_check`): the vocabulary at load, every prompt and
its answer slots before any score (:meth:`LlamaCppBackend.validate_prompt`).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import platform
import re
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scorer import __version__
from scorer.backends import BackendConfig
from scorer.backends.base import Backend, Grammar, Prefix
from scorer.backends.gguf_check import check_encodings, check_row, check_slots, check_vocabulary, probe_texts
from scorer.backends.llamacpp_grammar import LlamaGrammar
from scorer.backends.llamacpp_vocab import LlamaVocab
from scorer.core import threads as threading_policy
from scorer.core.errors import ModelError, ValidationError
from scorer.core.hashing import sha256_file
from scorer.models import store
from scorer.models.gguf_tools import GGUFIdentity, identity
from scorer.models.llama_log import LLAMA_LOG
from scorer.prompting.prompt import Prompt
from scorer.prompting.tokenizer import HFTokenizer, load_reference_tokenizer

KERNEL = "llamacpp.seq-cp-batch"
_CELL_ROUND = 256  # llama.cpp pads the KV cache to 256 cells anyway
# Until a run plans the cache (plan_memory), room for a typical state and its criteria fanned out at once.
_DEFAULT_CELLS = 2048  # per stream
_DEFAULT_SEQS = 8
_DEFAULT_BATCH = 2048
_MAX_BATCH = 8192  # longer inputs are decoded in successive n_batch pieces
_N_UBATCH = 512  # fixed, so the physical batch split (and its numerics) does not depend on the plan
MIN_PIECE = 8  # the fewest tokens of one sequence decoded together (canonical rule 3 of the module doc)
MIN_OUTPUTS = 8  # the fewest rows a ubatch's logits are read from (canonical rule 4 of the module doc)
REPACK_WEIGHTS = False  # canonical rule 1; llama.cpp's own default is True
UNIFIED_KV = False  # canonical rule 2; a unified cache shares the prefix's cells between branches
# Above this many KV cells in all streams together a pass is split into fewer branches (memory: ~29 kB per cell
# for qwen2.5-1.5b's f16 K and V).
_MAX_TOTAL_CELLS = 131072
_GEN_HEADROOM = 1024  # cells kept free for generated tokens when decode_start has to size the cache
_FLASH_ATTN_DISABLED = 0  # enum llama_flash_attn_type: -1 auto, 0 disabled, 1 enabled
_GGML_TYPE_F16 = 1
_SCORE_KIND = ("quantized-weight conditional option score, uncalibrated: softmax over the declared options' "
               "answer-slot logits at the answer position, computed by llama.cpp from {quant} GGUF weights; "
               "not a calibrated probability of correctness")
_LAYER_DEVICE = re.compile(r"layer\s+(\d+) assigned to device (\S+?),")
_FLASH = re.compile(r"flash_attn\s*=\s*(\w+)|Flash Attention was auto, set to (\w+)")


_Packed = tuple[list[int], list[int], list[int], list[int]]
"""A packed batch: its tokens, each one's position and sequence, and where each branch's suffix ends in it."""


@dataclass(frozen=True)
class _PrefixState:
    """A prefilled prefix, saved off the KV cache (``llama_state_seq_get_data``)."""

    data: bytes
    """The sequence's saved state: its tokens' K/V in every layer."""
    n_past: int
    """Number of prefix tokens it holds."""
    streams: int
    """KV streams of the context it was saved from: llama.cpp restores a state only into as many."""


@dataclass
class _Seq:
    """A live llama.cpp sequence (during one call, or a generation session)."""

    seq: int
    """Sequence id in the KV cache."""
    n_past: int
    """Tokens it holds (positions 0..n_past-1)."""
    tokens: list[int]
    """Their ids (to decode the last ones again: canonical rule 3)."""


def _gpu_layers(value: str, supported: bool) -> int:
    v = str(value).strip().lower()
    if v == "auto":
        return -1 if supported else 0
    try:
        n = int(v)
    except ValueError:
        raise ModelError(f"--llama-gpu-layers {value!r} (expected a number of layers or 'auto')") from None
    if n < 0:
        raise ModelError(f"--llama-gpu-layers {value!r} (expected 0 or more, or 'auto')")
    return n


def _round_up(n: int, k: int) -> int:
    return max(k, -(-n // k) * k)


def _stream_cap(seqs: int, cells: int) -> int:
    """``seqs`` sequences of ``cells`` cells each, fewer if they would hold more than :data:`_MAX_TOTAL_CELLS`
    (never under 2: a prefix and one branch)."""
    return max(2, min(seqs, _MAX_TOTAL_CELLS // _round_up(cells, _CELL_ROUND)))


_U32 = struct.Struct("<I")
_STATE_MAGIC = 0xAF143CD8
"""What llama.cpp's saved sequence state starts with (then the sequence id it was saved from, 4 bytes)."""


def restream(data: bytes, old: int, new: int) -> bytes | None:
    """A sequence's state saved from a plain KV cache of ``old`` streams (``llama_state_seq_get_data``), framed for
    a context of ``new`` streams; None where ``data`` is not one such state.

    Why: llama.cpp writes a sequence's state as a magic number, the sequence id, the cache's stream count, then per
    stream its cell count and, for the one stream that holds the sequence, its cells' positions and K/V rows; it
    refuses a state whose stream count is not the context's, and reads the cells into the destination sequence's own
    stream whichever stream (and sequence id) they came from. So a context resized to more (or fewer) streams can
    take a held state whole, its one block of cells moved under the new count, instead of decoding its tokens again
    (a radix cache holds many: in ``semif serve`` each resize made every held state stale, and the next request
    decoded them all again, slower than a cold one). The cells and their K/V are the same bytes, restored into cells
    0… of a fresh stream as before."""
    if old == new:
        return data
    head = 8  # the magic number and the sequence id, kept as they are
    if (old < 1 or new < 1 or len(data) < head + 4 * (old + 1) or _U32.unpack_from(data, 0)[0] != _STATE_MAGIC
            or _U32.unpack_from(data, head)[0] != old):
        return None
    lead = 0  # empty streams before the one that holds the sequence (a block starts with its non-zero cell count)
    while lead < old and _U32.unpack_from(data, head + 4 * (1 + lead))[0] == 0:
        lead += 1
    if lead == old:  # no cells at all
        return data[:head] + _U32.pack(new) + bytes(4 * new) if len(data) == head + 4 * (old + 1) else None
    start, end = head + 4 * (1 + lead), len(data) - 4 * (old - 1 - lead)  # after it, the empty streams: 0 each
    if end <= start or any(data[end:]):
        return None
    return data[:head] + _U32.pack(new) + data[start:end] + bytes(4 * (new - 1))


def pass_width(part: list[list[int]]) -> int:
    """How many tokens every branch of a packed pass decodes (canonical rule 3, and equal: :meth:`LlamaCppBackend.
    _packed_batch`)."""
    return max(MIN_PIECE, *(len(x) for x in part))


GROUP_COST_TOKENS = 256
"""What one more ``llama_decode`` of a packed pass is taken to cost, in padded tokens (:func:`width_groups`): the
weights are read again, the threads meet again, and smaller batches multiply less efficiently. A cautious round
figure, not a fit: with 32, the qwen2.5-1.5b showcase's 21 questions of 22 to 33 tokens went in two batches to save
112 padded tokens and the pass took 7.7 s, against 7.4 s in one batch the same day (within run-to-run spread: no
gain); 256 keeps them in one and still splits the 64-question latency request into three batches (3,026 padded
tokens instead of 6,848 in one, counted with SmolLM2's tokenizer)."""


def width_groups(lengths: Sequence[int], overhead: int = GROUP_COST_TOKENS) -> list[list[int]]:
    """The branches of a packed pass (suffix lengths ``lengths``) in groups decoded one after another, each padded to
    its own longest (:func:`pass_width`) instead of the pass's: indices, shortest suffixes first, the groups being
    consecutive runs of the lengths in order that minimise the tokens decoded (every branch's width) plus
    ``overhead`` per group (a dynamic programme over the sorted lengths). Questions of very different lengths asked
    together (a yes/no beside a choice with long options) no longer pay for the longest: on the 64-question latency
    workload every branch was padded to 95 tokens, twice what the suffixes hold."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    sizes = [max(MIN_PIECE, lengths[i]) for i in order]
    n = len(sizes)
    best = [0.0] + [float("inf")] * n  # best[j]: the cheapest grouping of the j shortest
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):  # the last group holds sorted positions i..j-1, padded to sizes[j-1]
            cost = best[i] + (j - i) * sizes[j - 1] + overhead
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups: list[list[int]] = []
    j = n
    while j > 0:
        groups.append(order[cut[j]:j])
        j = cut[j]
    return groups[::-1]


def pad_to(ids: list[int], width: int) -> list[int]:
    """``ids`` followed by copies of its last token up to ``width`` tokens. A pad token comes after every real one,
    so causal attention keeps it out of their logits; it is only there to give the batch its canonical shape."""
    return ids + [ids[-1]] * (width - len(ids))


def pieces(n: int, size: int) -> list[int]:
    """Sizes of the pieces ``n`` tokens of one sequence are decoded in: at most ``size`` each, none under
    :data:`MIN_PIECE` unless ``n`` itself is (the last full piece gives the remainder what it lacks)."""
    out = [size] * (n // size)
    rest = n % size
    if rest:
        if rest < MIN_PIECE and out:
            out[-1] -= MIN_PIECE - rest
            rest = MIN_PIECE
        out.append(rest)
    return out


def outputs(want: Sequence[int], n: int) -> set[int]:
    """The rows of an ``n``-token ubatch whose logits are computed when ``want`` are wanted: those, and where they are
    fewer than :data:`MIN_OUTPUTS` (but some), the last rows before the end that are not, up to that many (rule 4:
    below it llama.cpp computes the output matrix with another kernel). None wanted, none read."""
    read = set(want)
    for j in range(n - 1, -1, -1):
        if not read or len(read) >= MIN_OUTPUTS:
            break
        read.add(j)
    return read


class LlamaCppBackend(Backend):
    """A GGUF on llama.cpp. See :class:`scorer.backends.base.Backend` for the contracts."""

    name = "llamacpp"
    kernel = KERNEL
    logits_dtype = "float32"
    extends_prefixes = True
    scores_continuations = True

    def __init__(self, cfg: BackendConfig):
        # before llama.cpp's libraries load their OpenMP runtime (a no-op when the loader set it already)
        policy = threading_policy.apply_wait_policy()
        import llama_cpp

        self._lib = lib = llama_cpp
        self._model: Any = None
        self._ctx: Any = None
        LLAMA_LOG.install()
        ref = store.resolve(cfg.model, cfg.revision)
        # The file to run, hashed before llama.cpp reads it.
        if cfg.gguf:
            path = Path(cfg.gguf)
            if not path.is_file():
                raise ModelError(f"--gguf {cfg.gguf}: " + ("is not a regular file (expected a .gguf file)"
                                                           if path.exists() else "file not found"))
            path, sha = path.resolve(), sha256_file(path)
        elif ref.kind in ("store", "gguf"):
            path, sha = store.gguf_for(ref)
        else:
            raise ModelError(f"the llama.cpp backend runs GGUF files; --model {cfg.model} is a {ref.kind} model: "
                             "pass --gguf FILE (its tokenizer is checked against this model's)")
        # The reference tokenizer comes from --model (for a --gguf rung of a store model: the store model's).
        ref_gguf, ref_sha = path, sha
        if cfg.gguf and ref.kind == "store":
            assert ref.entry is not None
            ref_gguf, ref_sha = store.gguf_path(ref.entry), ref.entry.sha256
        elif cfg.gguf and ref.kind == "gguf":
            ref_gguf, ref_sha = store.gguf_for(ref)
        hf_tok, tok_info = load_reference_tokenizer(ref, ref_gguf, ref_sha)
        self.tokenizer: HFTokenizer = HFTokenizer(hf_tok)

        lib.llama_backend_init()
        self.gpu_offload_supported = bool(lib.llama_supports_gpu_offload())
        self._gpu_layers = _gpu_layers(cfg.llama_gpu_layers, self.gpu_offload_supported)
        mp = lib.llama_model_default_params()
        mp.n_gpu_layers = self._gpu_layers
        mp.use_extra_bufts = REPACK_WEIGHTS
        mark = LLAMA_LOG.mark()
        t0 = time.perf_counter()
        self._model = lib.llama_model_load_from_file(str(path).encode(), mp)
        if not self._model:
            raise ModelError(f"llama.cpp could not load {path}: {LLAMA_LOG.tail(mark)}")
        self.load_s = time.perf_counter() - t0
        load_log = LLAMA_LOG.text(mark)
        devices = dict(_LAYER_DEVICE.findall(load_log))
        self._offloaded = sum(1 for d in devices.values() if not d.upper().startswith("CPU"))
        self._layer_slots = len(devices)
        self._vocab = LlamaVocab(lib, lib.llama_model_get_vocab(self._model))
        self.n_vocab = self._vocab.n_vocab
        self.n_ctx = int(lib.llama_model_n_ctx_train(self._model))
        choice = threading_policy.choose_threads(cfg.threads, "the usable cores")
        self.threads = choice.chosen or threading_policy.usable_cores()
        ftype = int(lib.llama_model_ftype(self._model))
        # A recurrent layer keeps no per-position state and a sliding-window cache has dropped early positions:
        # neither can be cut back to a shorter prefix.
        self.cuts_prefixes = not (lib.llama_model_is_recurrent(self._model) or lib.llama_model_is_hybrid(self._model)
                                  or int(lib.llama_model_n_swa(self._model)) > 0)
        # A held state is moved to a resized context's stream count (restream) only for one plain KV cache: a
        # sliding-window or recurrent model saves more than one cache's blocks, and those are decoded again.
        self._restreams = self.cuts_prefixes
        self.gguf: GGUFIdentity = identity(path, sha, ftype)

        # Validation 1: the whole vocabulary, then rendered probe prompts.
        check_vocabulary(hf_tok.convert_ids_to_tokens(list(range(len(hf_tok)))), self._vocab)
        check_encodings(self.tokenizer, self._vocab, probe_texts(self.tokenizer))
        self._letters_ok: set[str] = set()

        self._free: list[int] = []
        self._live: dict[int, _Seq] = {}
        self._plan: dict[str, Any] = {"mode": None, "cells": _DEFAULT_CELLS, "sequences": _DEFAULT_SEQS,
                                      "batch": _DEFAULT_BATCH}
        self._stop: list[int] | None = None
        self._make_context(_DEFAULT_CELLS, _DEFAULT_SEQS, _DEFAULT_BATCH)
        import transformers

        self._info: dict[str, Any] = {
            "key": ref.key, "source": "gguf" if cfg.gguf else ref.kind, "revision": ref.revision,
            "gguf_file": path.name, "gguf_sha256": sha, "dtype": self.gguf.quantization,
            "device": "cpu" if self._offloaded == 0 else "gpu", "backend": self.name,
            "architecture": self._meta("general.architecture"), "vocab_size": self._vocab.n_vocab,
            "n_ctx": self.n_ctx, "threads": self.threads,
            "threading": threading_policy.threading_block(choice, self.threads, policy),
            "logits_dtype": self.logits_dtype,
            "score_kind": _SCORE_KIND.format(quant=self.gguf.quantization),
            "gguf": self.gguf.block(), "reference_tokenizer": tok_info,
            "validation": {"vocabulary": f"{self._vocab.n_vocab} token texts and probe prompts identical",
                           "answer_slots": "checked per prompt", "row_parity": "checked per prompt"},
            "versions": {"semif": __version__, "python": platform.python_version(),
                         "llama_cpp_python": lib.__version__, "transformers": transformers.__version__,
                         "numpy": np.__version__},
        }
        if ref.entry and not cfg.gguf:
            self._info.update(upstream=ref.entry.upstream, licence=ref.entry.licence)

    # --- llama.cpp plumbing ------------------------------------------------------------------------
    def _meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(256)
        n = self._lib.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace") if n >= 0 else None

    def _make_context(self, cells: int, seqs: int, batch: int) -> None:
        """(Re)create the context with ``cells`` KV cells for each of ``seqs`` sequences; only allowed while no
        sequence is live (their KV would be lost)."""
        lib = self._lib
        if self._live:
            raise ModelError("llama.cpp context resize requested while prefixes/sessions are live")
        if self._ctx:
            lib.llama_free(self._ctx)
            self._ctx = None
        cp = lib.llama_context_default_params()
        cp.n_seq_max = max(1, min(seqs, int(lib.llama_max_parallel_sequences())))
        # a unified cache holds every sequence in one stream of n_ctx cells; otherwise each stream gets n_ctx/n_seq
        cp.n_ctx = _round_up(cells, _CELL_ROUND) * (1 if UNIFIED_KV else cp.n_seq_max)
        cp.n_batch = max(batch, 1)
        # A packed pass goes through as one physical batch (llama.cpp would split it into batches of as many tokens
        # of each stream, cutting branches into short pieces: rule 3); one sequence's tokens are cut into pieces
        # of at most _N_UBATCH by _decode itself.
        cp.n_ubatch = cp.n_batch
        cp.n_threads = cp.n_threads_batch = self.threads
        cp.kv_unified = UNIFIED_KV
        # Measured on SmolLM2 Q4_1 (CPU): with flash attention ("auto" turns it on) a prompt scored as
        # prefix + 1-token suffix differs from the same prompt scored fresh by up to 0.6 in a logit; without
        # it the two paths agree exactly. Direct = serial = shared matters more here than FA's speed.
        cp.flash_attn_type = _FLASH_ATTN_DISABLED
        cp.type_k = cp.type_v = _GGML_TYPE_F16  # llama.cpp's default KV type, pinned so records can say so
        cp.no_perf = True
        mark = LLAMA_LOG.mark()
        ctx = lib.llama_init_from_model(self._model, cp)
        if not ctx:
            raise ModelError(f"llama.cpp could not create a context of {cp.n_ctx} cells: {LLAMA_LOG.tail(mark)}")
        self._ctx = ctx
        self._mem = lib.llama_get_memory(ctx)
        flash = [a or b for a, b in _FLASH.findall(LLAMA_LOG.text(mark))]
        self._ctx_info: dict[str, Any] = {
            "kv_cells": int(lib.llama_n_ctx(ctx)), "n_seq_max": int(lib.llama_n_seq_max(ctx)),
            "n_batch": int(lib.llama_n_batch(ctx)), "n_ubatch": int(lib.llama_n_ubatch(ctx)),
            "n_threads": int(lib.llama_n_threads(ctx)), "n_threads_batch": int(lib.llama_n_threads_batch(ctx)),
            "kv_unified": UNIFIED_KV, "flash_attn": flash[-1] if flash else None, "type_k": "f16", "type_v": "f16",
            "weight_repack": REPACK_WEIGHTS, "min_piece": MIN_PIECE,
        }
        n_seq = self._ctx_info["n_seq_max"]
        self._stream_cells = self._ctx_info["kv_cells"] // (1 if UNIFIED_KV else n_seq)
        self._free = list(range(self._ctx_info["n_seq_max"] - 1, -1, -1))

    def plan_memory(self, need: dict[str, int]) -> None:
        """Size the context for a run from its rows (:func:`scorer.scoring.modes.memory_need`).

        Prefixes are held as saved states, not in the cache, so the cache only ever holds one prompt
        (direct, serial) or one prefix and one packed pass of branches (shared), or one held state being cut or
        extended (``longest_held``: a radix cache's longest, from an earlier run, restored to build a shorter one).
        Each sequence has a stream of its own (unless :data:`UNIFIED_KV`): ``cells`` is what one stream holds.
        """
        mode = need["mode"]
        # a pass's branches each decode as many tokens as its longest and at least MIN_PIECE (rule 3)
        widened = max(need["pass_rectangle"], MIN_PIECE * need["pass_branches"])
        if need.get("sequence"):  # --slots sequence: a prompt's state (or a held one) and its options' pass
            cells, seqs = max(need["longest_branch"], need["longest_prompt"]), need["pass_branches"] + 1
            batch = max(need["longest_prompt"], widened)
        elif mode == "shared":
            cells, seqs = need["longest_branch"], need["pass_branches"] + 1
            batch = max(need["longest_prefix"], widened)
        else:
            cells, seqs, batch = need["longest_prompt"], 1, need["longest_prompt"]
        cells = max(cells, need.get("longest_held", 0)) + MIN_PIECE  # + the pads of a short decode (rule 3)
        if self._plan["mode"] is not None:  # a run planned the context before (not the placeholder of the load)
            # Never fewer streams or a smaller batch than the context has: a state is saved per stream count and a
            # resize to another count makes every held state (a radix cache's) stale, decoded again on its next use
            # (in semif serve, a 4-question request after 1-question ones paid 6.1 s cold where 3.0 s is its own
            # cost); and a batch that flips between a cold and a warm plan re-created the context on every request.
            seqs = max(seqs, self._ctx_info["n_seq_max"])
            batch = max(batch, self._ctx_info["n_batch"])
        if UNIFIED_KV:
            cells = max(cells, need["pass_cells"])
        else:  # fewer branches per pass rather than more memory than the cap (fan_out splits to match)
            seqs = _stream_cap(seqs, cells)
        self._resize(cells, seqs, batch)
        self._plan = {"mode": mode, "cells": cells, "sequences": seqs, "batch": batch}

    def _resize(self, cells: int, seqs: int, batch: int) -> None:
        cells = _round_up(max(1, cells), _CELL_ROUND)
        seqs = max(1, min(seqs, int(self._lib.llama_max_parallel_sequences())))
        batch = _round_up(min(max(1, batch), _MAX_BATCH), _N_UBATCH)
        cur = self._ctx_info
        if (self._stream_cells, cur["n_seq_max"], cur["n_batch"]) != (cells, seqs, batch):
            self._make_context(cells, seqs, batch)

    def _ensure(self, cells: int, seqs: int, batch: int = 0) -> None:
        """Grow the context for a call no plan covered (possible only while no generation session is live):
        ``seqs`` sequences, the longest holding ``cells`` tokens, ``batch`` tokens decoded at once."""
        cur = self._ctx_info
        cells += MIN_PIECE  # room for the pads of a short decode (rule 3)
        held = sum(s.n_past for s in self._live.values()) if UNIFIED_KV else 0
        if held + cells <= self._stream_cells and seqs <= len(self._free) and batch <= cur["n_batch"]:
            return
        if self._live:
            raise ModelError(f"the llama.cpp KV cache holds {self._stream_cells} cells per sequence and "
                             f"{cur['n_seq_max']} sequences; this call needs {held + cells} cells and "
                             f"{len(self._live) + seqs} sequences while a generation session is live")
        self._resize(max(self._stream_cells, cells), max(cur["n_seq_max"], seqs), max(cur["n_batch"], cells, batch))

    def _idle_reset(self) -> None:
        """With nothing live, clear the cache so the next tokens land in cells 0, 1, … as in a fresh run.

        Why: llama.cpp places tokens in free cells after the last ones used; attention then runs over a
        different cell layout, and with quantized activations that moves logits (measured: identical prompts,
        different layouts, |Δp| up to 0.05 on SmolLM2 Q4_1). Same layout, same numbers.
        """
        if not self._live:
            self._lib.llama_memory_clear(self._mem, False)

    def _take(self, tokens: Sequence[int] = ()) -> _Seq:
        """The free sequence with the lowest id (so :meth:`_branch` can order its branches' ids), said to hold
        ``tokens`` (the caller puts their KV there)."""
        if not self._free:
            raise ModelError(f"no free llama.cpp sequence (n_seq_max {self._ctx_info['n_seq_max']})")
        s = _Seq(self._free.pop(), len(tokens), list(tokens))
        self._live[s.seq] = s
        return s

    def _drop(self, s: _Seq) -> None:
        self._lib.llama_memory_seq_rm(self._mem, s.seq, -1, -1)
        del self._live[s.seq]
        self._free.append(s.seq)
        self._free.sort(reverse=True)  # popped from the end: the lowest id first

    def _save(self, s: _Seq) -> bytes:
        lib = self._lib
        size = int(lib.llama_state_seq_get_size(self._ctx, s.seq))
        buf = (ctypes.c_uint8 * size)()
        got = int(lib.llama_state_seq_get_data(self._ctx, buf, size, s.seq))
        if got != size:
            raise ModelError(f"llama.cpp saved {got} of {size} bytes of a prefix state")
        return bytes(buf)

    def _restore(self, prefix: Prefix) -> _Seq:
        """Load a saved prefix into a new sequence (cells 0… of its stream). A state saved under another number of
        streams (the context was resized since) is decoded again from its tokens, the same way, and kept."""
        state = self._state(prefix)
        if state.streams != self._ctx_info["n_seq_max"]:
            s = self._take()
            try:
                self._run(s, prefix.ids, logits=False)
                prefix.handle = _PrefixState(self._save(s), s.n_past, self._ctx_info["n_seq_max"])
            except BaseException:
                self._drop(s)
                raise
            return s
        s = self._take(prefix.ids)
        buf = (ctypes.c_uint8 * len(state.data)).from_buffer_copy(state.data)
        if int(self._lib.llama_state_seq_set_data(self._ctx, buf, len(state.data), s.seq)) == 0:
            self._drop(s)
            raise ModelError("llama.cpp could not restore a prefix state (no room in the KV cache?)")
        return s

    def _decode(self, tokens: list[int], pos: list[int], seqs: list[int], want: list[int]) -> list[np.ndarray]:
        """One logical batch; logits of the ``want`` indices, in order. One sequence's tokens go in pieces of
        at most ``n_ubatch`` of which none is short (:func:`pieces`); a packed pass of several in ``n_batch``
        pieces (one ubatch each: the context's ``n_ubatch`` is its ``n_batch``). Each piece's logits are read from at
        least :data:`MIN_OUTPUTS` rows where it has them (:func:`outputs`, rule 4)."""
        lib = self._lib
        n_vocab = self._vocab.n_vocab
        wanted = set(want)
        out: dict[int, np.ndarray] = {}
        if len(set(seqs)) == 1:
            sizes = pieces(len(tokens), _N_UBATCH)
        else:
            step = self._ctx_info["n_batch"]
            sizes = [min(step, len(tokens) - a) for a in range(0, len(tokens), step)]
        for start, end in itertools.pairwise(np.cumsum([0, *sizes]).tolist()):
            n = end - start
            read = outputs([i - start for i in wanted if start <= i < end], n)
            batch = lib.llama_batch_init(n, 0, 1)
            try:
                for j in range(n):
                    i = start + j
                    batch.token[j] = tokens[i]
                    batch.pos[j] = pos[i]
                    batch.n_seq_id[j] = 1
                    batch.seq_id[j][0] = seqs[i]
                    batch.logits[j] = j in read
                batch.n_tokens = n
                mark = LLAMA_LOG.mark()
                rc = lib.llama_decode(self._ctx, batch)
                if rc != 0:
                    why = {1: "no KV-cache slot for the batch", 2: "aborted", -1: "invalid batch"}.get(rc, "error")
                    raise ModelError(f"llama_decode failed ({rc}: {why}) on {n} tokens; KV cache "
                                     f"{self._ctx_info['kv_cells']} cells: {LLAMA_LOG.tail(mark)}")
                for j in range(n):
                    if start + j in wanted:
                        ptr = lib.llama_get_logits_ith(self._ctx, j)
                        out[start + j] = np.ctypeslib.as_array(ptr, shape=(n_vocab,)).copy()
            finally:
                lib.llama_batch_free(batch)
        return [out[i] for i in want]

    def _run(self, s: _Seq, ids: list[int], logits: bool, canonical: bool = True) -> np.ndarray | None:
        """Append ``ids`` to sequence ``s``; logits of the last one if asked. ``canonical``: fewer than
        :data:`MIN_PIECE` tokens are decoded with pad tokens after them (rule 3), whose cells are freed again."""
        ids = list(ids)
        n = len(ids)
        batch = pad_to(ids, MIN_PIECE) if canonical else ids
        got = self._decode(batch, list(range(s.n_past, s.n_past + len(batch))), [s.seq] * len(batch),
                           [n - 1] if logits else [])
        if len(batch) > n:
            self._cut(s, s.n_past + n)
        s.n_past += n
        s.tokens += ids
        return got[0] if logits else None

    def _cut(self, s: _Seq, keep: int) -> None:
        """Free every cell of ``s`` from position ``keep`` on."""
        if not self._lib.llama_memory_seq_rm(self._mem, s.seq, keep, -1):
            raise ModelError(f"llama.cpp could not cut a sequence back to its first {keep} positions")

    def _free_resources(self) -> None:
        """Free the context and the model (:meth:`close`; also done when the object is collected)."""
        lib = getattr(self, "_lib", None)
        if lib is None:
            return
        if getattr(self, "_ctx", None):
            lib.llama_free(self._ctx)
            self._ctx = None
        if getattr(self, "_model", None):
            lib.llama_model_free(self._model)
            self._model = None

    def __del__(self) -> None:
        # Interpreter shutdown may have torn the library down already.
        with contextlib.suppress(Exception):
            self.close()

    # --- kernel ------------------------------------------------------------------------------------
    def model_info(self) -> dict[str, Any]:
        info = dict(self._info)
        info["llama"] = {
            **self._ctx_info, "planned": dict(self._plan), "n_ctx_train": self.n_ctx,
            "n_gpu_layers_requested": self._gpu_layers, "layers_offloaded": self._offloaded,
            "layer_slots": self._layer_slots, "gpu_offload_supported": self.gpu_offload_supported,
            "system_info": bytes(self._lib.llama_print_system_info()).decode("utf-8", "replace").strip(" |"),
        }
        return info

    def validate_prompt(self, prompt: Prompt) -> None:
        """Validations 3 and 2 for one rendered prompt (called for every row before any is scored)."""
        check_row(prompt, self._vocab)
        check_slots(prompt, self._vocab, self._letters_ok)

    def _score_fresh(self, ids: list[int], want: Sequence[int] | None = None) -> np.ndarray:
        self._ensure(len(ids), 1)
        self._idle_reset()
        s = self._take()
        try:
            out = self._run(s, ids, logits=True)
        finally:
            self._drop(s)
        assert out is not None
        return out

    def _prefill(self, ids: list[int]) -> Prefix:
        """Decode the prefix, save its state (KV of every layer) off the cache, free the cache."""
        return self._saved_prefix(None, 0, ids)

    def _extend(self, prefix: Prefix, keep: int, ids: list[int]) -> Prefix:
        """Restore the saved prefix, cut it to ``keep`` positions, decode ``ids`` after it, save it again."""
        return self._saved_prefix(prefix, keep, ids)

    def _saved_prefix(self, base: Prefix | None, keep: int, ids: list[int]) -> Prefix:
        """A new saved prefix: the first ``keep`` positions of ``base`` (none without one), then ``ids`` decoded
        after them; the cache is left empty."""
        self._ensure(max(keep + len(ids), 0 if base is None else len(base.ids)), 1)
        t0 = time.perf_counter()
        self._idle_reset()
        if base is not None and ids and self._state(base).streams != self._ctx_info["n_seq_max"]:
            # Saved under another number of streams (the context was resized since), so it would be decoded again
            # from its tokens, whole, to be cut back: decode only the ``keep`` tokens wanted (a radix cache extends the
            # shallowest state below a new state's branch point — a 500-token state to keep its 50-token system
            # prompt). The new state is kept by the cache. A pure cut (no ``ids``) is not kept, so there the source is
            # refreshed whole (``_restore``) and later cuts of it cost nothing.
            s = self._take()
            self._run(s, base.ids[:keep], logits=False)
        else:
            s = self._take() if base is None else self._restore(base)
        try:
            if keep < s.n_past:
                self._cut(s, keep)
                s.n_past, s.tokens = keep, s.tokens[:keep]
            if ids:
                self._run(s, ids, logits=False)
            saved = _PrefixState(self._save(s), s.n_past, self._ctx_info["n_seq_max"])
        finally:
            self._drop(s)
        head = [] if base is None else base.ids[:keep]
        return Prefix(head + list(ids), saved, time.perf_counter() - t0, len(saved.data))

    def _state(self, prefix: Prefix) -> _PrefixState:
        """The prefix's saved state, framed for the context's stream count when it was saved under another and can be
        moved (:func:`restream`; kept so, the next use is free); a state that cannot is returned as saved, stale."""
        if not isinstance(prefix.handle, _PrefixState):
            raise ValidationError("this prefix was released")
        state, streams = prefix.handle, self._ctx_info["n_seq_max"]
        if state.streams != streams and self._restreams and not UNIFIED_KV:
            data = restream(state.data, state.streams, streams)
            if data is not None:
                state = prefix.handle = _PrefixState(data, state.n_past, streams)
        return state

    def _score_with_prefix(self, prefix: Prefix, suffix: list[int], want: Sequence[int] | None = None
                           ) -> tuple[np.ndarray, float]:
        """Serial: restore the saved prefix into cells 0…, decode the suffix after it, drop the sequence."""
        self._ensure(len(prefix.ids) + len(suffix), 1)
        t0 = time.perf_counter()
        self._idle_reset()
        s = self._restore(prefix)
        copy_s = time.perf_counter() - t0
        try:
            out = self._run(s, suffix, logits=True)
        finally:
            self._drop(s)
        assert out is not None
        return out, copy_s

    def _max_branches(self, prefix: Prefix) -> int:
        seqs = int(self._lib.llama_max_parallel_sequences())
        if not UNIFIED_KV:  # every branch holds its own copy of the prefix: as many as fit under the memory cap
            seqs = _stream_cap(seqs, max(self._stream_cells, len(prefix.ids) + MIN_PIECE))
        return seqs - 1  # one more sequence holds the restored prefix

    def _branch(self, prefix: Prefix, part: list[list[int]]) -> list[_Seq]:
        """Shared: restore the prefix once and ``seq_cp`` it to one branch per suffix (each in its own stream, so
        the prefix is copied; in a unified cache the branches would share its cells). Returns the prefix's
        sequence, then the branches."""
        width = pass_width(part)
        self._ensure(len(prefix.ids) + (len(part) * width if UNIFIED_KV else width), len(part) + 1,
                     batch=len(part) * width)
        self._idle_reset()
        seqs = [self._restore(prefix)]
        # A width group's branches take consecutive, increasing ids in batch order (the lowest free first): llama.cpp
        # puts the streams of a batch into one ubatch only where their ids step up by one (split_equal's sequential
        # mode), and one ubatch of all the branches is computed as direct mode computes each prompt once the logits
        # are read from as many rows (rule 4; before it, one ubatch of 21 branches of qwen2.5-1.5b was 3.6e-6 off in
        # a logit, and the branches had been given decreasing ids, one ubatch each: exact, but qwen2.5-1.5b's
        # 21 x 33 pass took 9.4 s against 5.8 s in one ubatch).
        at: dict[int, int] = {}
        try:
            for i in [i for group in width_groups([len(x) for x in part]) for i in group]:
                b = self._take(prefix.ids)
                self._lib.llama_memory_seq_cp(self._mem, seqs[0].seq, b.seq, -1, -1)
                at[i] = len(seqs)
                seqs.append(b)
        except BaseException:
            self._unbranch(seqs)
            raise
        return [seqs[0], *(seqs[at[i]] for i in range(len(part)))]

    def _pass(self, prefix: Prefix, branched: list[_Seq], part: list[list[int]],
              wants: list[Sequence[int]] | None = None) -> list[np.ndarray]:
        """Every suffix in one batch per width group (:func:`width_groups`; each token tagged with its branch's
        sequence and position), logits at each branch's last token only."""
        return self._grouped(branched, part, lambda batch, sufs: self._decode(*batch[:3], [e - 1 for e in batch[3]]))

    def _pass_all(self, prefix: Prefix, branched: list[_Seq], part: list[list[int]]) -> list[np.ndarray]:
        """The batches of :meth:`_pass`, logits at every suffix token (``--slots sequence``)."""

        def every_token(batch: _Packed, sufs: list[list[int]]) -> list[np.ndarray]:
            tokens, pos, seqs, ends = batch
            rows = self._decode(tokens, pos, seqs,
                                [i for e, suf in zip(ends, sufs, strict=True) for i in range(e - len(suf), e)])
            starts = np.cumsum([0, *(len(s) for s in sufs)])
            return [np.stack(rows[a:b]) for a, b in itertools.pairwise(starts)]

        return self._grouped(branched, part, every_token)

    def _grouped(self, branched: list[_Seq], part: list[list[int]],
                 read: Callable[[_Packed, list[list[int]]], list[np.ndarray]]) -> list[np.ndarray]:
        """``read`` applied to each width group's packed batch and suffixes, its results put back in ``part``'s
        order (one per branch)."""
        out: list[np.ndarray] = [np.empty(0)] * len(part)
        for group in width_groups([len(x) for x in part]):
            sufs = [part[i] for i in group]
            batch = self._packed_batch([branched[0], *(branched[1 + i] for i in group)], sufs)
            for i, row in zip(group, read(batch, sufs), strict=True):
                out[i] = row
        return out

    def _packed_batch(self, branched: list[_Seq], part: list[list[int]]) -> _Packed:
        """The tokens of a packed pass, each one's position (continuing its branch) and sequence (its branch's),
        and where each branch's suffix ends in it. Every branch decodes as many tokens as the longest suffix of the
        batch (one width group), and at least :data:`MIN_PIECE`, padded after its suffix (:func:`pad_to`): llama.cpp
        splits a batch over several streams into batches of as many tokens of each, and a branch whose last tokens
        went into a batch of their own would be computed differently (rule 3)."""
        tokens: list[int] = []
        pos: list[int] = []
        seqs: list[int] = []
        ends: list[int] = []
        width = pass_width(part)
        for b, suf in zip(branched[1:], part, strict=True):
            ends.append(len(tokens) + len(suf))
            tokens += pad_to(list(suf), width)
            pos += range(b.n_past, b.n_past + width)
            seqs += [b.seq] * width
        return tokens, pos, seqs, ends

    def _unbranch(self, branched: list[_Seq]) -> None:
        for s in [*branched[1:], branched[0]]:  # the prefix's sequence last: it is the next one taken
            self._drop(s)

    def _decode_start(self, ids: list[int]) -> tuple[Any, np.ndarray]:
        self._ensure(len(ids) + _GEN_HEADROOM, 1)
        self._idle_reset()
        s = self._take()
        try:
            out = self._run(s, ids, logits=True)
        except Exception:
            self._drop(s)
            raise
        assert out is not None
        return s, out

    def decode_next(self, session: Any, token_id: int) -> np.ndarray:
        out = self._run(session, [int(token_id)], logits=True, canonical=False)
        assert out is not None
        return out

    def decode_end(self, session: Any) -> None:
        if session.seq in self._live:
            self._drop(session)

    def stop_ids(self) -> list[int]:
        """Every token llama.cpp itself treats as end of generation (end-of-turn, end-of-sequence…)."""
        if self._stop is None:
            self._stop = [i for i in range(self._vocab.n_vocab) if self._lib.llama_vocab_is_eog(self._vocab._vocab, i)]
        return list(self._stop)

    def grammar(self, gbnf: str) -> Grammar:
        """llama.cpp's own grammar sampler over the GGUF vocabulary (:mod:`scorer.backends.llamacpp_grammar`)."""
        return LlamaGrammar(self._lib, self._vocab._vocab, gbnf, self._vocab.n_vocab)
