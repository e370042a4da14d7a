"""The GGUF parity validations, the per-prompt hook and the memory plan, on fakes (no model file)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from fakes import VOCAB, FakeBackend, FakeTokenizer

from scorer.backends.gguf_check import check_encodings, check_row, check_slots, check_vocabulary, probe_texts
from scorer.core.errors import ValidationError
from scorer.formats.rows import Decision, Option
from scorer.models.gguf_tools import _BPW, _CONVERT, _FALLBACK, ftype_name
from scorer.prompting.prompt import render
from scorer.scoring.modes import memory_need, prepare, score_items

_A = ord("A") + 16  # FakeTokenizer's id of "A"
_B = ord("B") + 16


class FakeGGUF:
    """A 'GGUF tokenizer' built on the fake reference tokenizer, with one deliberate difference."""

    def __init__(self, tok: FakeTokenizer, remap: dict[int, int] | None = None,
                 bare: dict[str, list[int]] | None = None, piece: dict[int, str] | None = None,
                 text: dict[int, str] | None = None):
        self.tok = tok
        self.remap = remap or {}
        self.bare = bare or {}
        self.pieces = piece or {}
        self.texts = text or {}

    @property
    def n_vocab(self) -> int:
        return VOCAB

    def token_text(self, token_id: int) -> str:
        return self.texts.get(token_id, self.tok.decode([token_id]))

    def piece(self, token_id: int) -> str:
        return self.pieces.get(token_id, self.tok.decode([token_id]))

    def encode(self, text: str, with_bos: bool = True, plain: Sequence[tuple[int, int]] = ()) -> list[int]:
        if text in self.bare:  # e.g. a letter that this 'GGUF' splits into two tokens
            return list(self.bare[text])
        return [self.remap.get(t, t) for t in self.tok.encode(text, plain)]


def _decision(n: int = 2, rid: str = "r1", state: Any = "The sky is blue.") -> Decision:
    return Decision(rid, state, "Which colour?", tuple(Option(f"o{i}", f"option {i}") for i in range(n)),
                    source=f"rows.jsonl:{rid}")


def _ref_texts(tok: FakeTokenizer) -> list[str]:
    return [tok.decode([i]) for i in range(VOCAB)]


# --- validation 1: vocabulary parity ------------------------------------------------------------------
def test_vocabulary_identical_passes() -> None:
    tok = FakeTokenizer()
    check_vocabulary(_ref_texts(tok), FakeGGUF(tok))


def test_vocabulary_one_id_differs_fails_naming_the_id() -> None:
    tok = FakeTokenizer()
    with pytest.raises(ValidationError, match=r"1 token id\(s\) differ.*id 200: GGUF 'zz'"):
        check_vocabulary(_ref_texts(tok), FakeGGUF(tok, text={200: "zz"}))


def test_vocabulary_size_differs_fails() -> None:
    tok = FakeTokenizer()
    with pytest.raises(ValidationError, match=r"the GGUF has .* tokens but the reference tokenizer has"):
        check_vocabulary(_ref_texts(tok)[:-1], FakeGGUF(tok))


def test_vocabulary_sentencepiece_space_spelling_is_the_same_token() -> None:
    tok = FakeTokenizer()
    ref = _ref_texts(tok)
    ref[300] = "\u2581\u2581"
    check_vocabulary(ref, FakeGGUF(tok, text={300: "  "}))


def test_probe_encodings_catch_a_remapped_id() -> None:
    tok = FakeTokenizer()
    texts = probe_texts(tok)
    check_encodings(tok, FakeGGUF(tok), texts)
    with pytest.raises(ValidationError, match=r"encode a probe prompt differently.*first difference at position"):
        check_encodings(tok, FakeGGUF(tok, remap={ord("e") + 16: ord("E") + 16}), texts)


def test_probe_texts_cover_all_sixteen_letters() -> None:
    tok = FakeTokenizer()
    texts = probe_texts(tok)
    assert any("P. option P" in t for t in texts)
    assert len(texts) == 2


# --- validation 2: single-token answer slots ----------------------------------------------------------
def test_slots_pass_on_identical_tokenizers() -> None:
    tok = FakeTokenizer()
    p = render(tok, _decision(3))
    ok: set[str] = set()
    check_slots(p, FakeGGUF(tok), ok)
    assert ok == {"A", "B", "C"}


def test_letter_that_is_two_tokens_fails() -> None:
    tok = FakeTokenizer()
    p = render(tok, _decision(2))
    with pytest.raises(ValidationError, match=r"answer slot 'B' is 2 tokens"):
        check_slots(p, FakeGGUF(tok, bare={"B": [_B, 15]}))


def test_letter_whose_gguf_piece_differs_fails() -> None:
    tok = FakeTokenizer()
    p = render(tok, _decision(2))
    with pytest.raises(ValidationError, match=r"answer slot 'A' \(token \d+\) has the GGUF piece ' A'"):
        check_slots(p, FakeGGUF(tok, piece={_A: " A"}))


def test_letter_with_another_id_fails() -> None:
    tok = FakeTokenizer()
    p = render(tok, _decision(2))
    with pytest.raises(ValidationError, match=r"answer slot 'B' is GGUF token \d+ but reference token"):
        check_slots(p, FakeGGUF(tok, bare={"B": [_B + 1000]}))


# --- validation 3: per-row parity ---------------------------------------------------------------------
def test_row_parity_passes_and_fails_at_the_first_differing_position() -> None:
    tok = FakeTokenizer()
    p = render(tok, _decision(2))
    check_row(p, FakeGGUF(tok))
    with pytest.raises(ValidationError, match=r"per-row parity.*first difference at position"):
        check_row(p, FakeGGUF(tok, remap={ord("y") + 16: ord("Y") + 16}))


class _CheckedFake(FakeBackend):
    """A fake backend with a llama.cpp-style per-prompt hook."""

    def __init__(self, gguf: FakeGGUF):
        super().__init__(gguf.tok)
        self.gguf = gguf
        self.validated = 0
        self.plans: list[dict[str, Any]] = []

    def validate_prompt(self, prompt: Any) -> None:
        self.validated += 1
        check_row(prompt, self.gguf)
        check_slots(prompt, self.gguf)

    def plan_memory(self, need: dict[str, Any]) -> None:
        self.plans.append(need)


def test_prepare_calls_the_hook_for_every_row_and_names_the_failing_row() -> None:
    tok = FakeTokenizer()
    rows = [_decision(2, "a"), _decision(2, "b", "The Zebra is grey.")]
    good = _CheckedFake(FakeGGUF(tok))
    prepare(good, rows)
    assert good.validated == 2
    bad = _CheckedFake(FakeGGUF(tok, remap={ord("Z") + 16: ord("z") + 16}))
    with pytest.raises(ValidationError, match=r"rows.jsonl:b: row 'b': per-row parity"):
        prepare(bad, rows)


def test_prepare_without_hook_is_unchanged() -> None:
    # The base class's no-op hook: prepare gives exactly what it gives with a passing llama.cpp-style check.
    tok = FakeTokenizer()
    rows = [_decision(2, "a"), _decision(3, "b", "The Zebra is grey."), _decision(2, "c")]
    plain, checked = prepare(FakeBackend(tok), rows), prepare(_CheckedFake(FakeGGUF(tok)), rows)
    assert [(it.index, it.prompt, it.prefix) for it in plain] == [(it.index, it.prompt, it.prefix) for it in checked]
    assert [it.prompt.ids for it in plain] == [render(tok, d).ids for d in rows]
    assert plain[0].prefix == plain[2].prefix != plain[1].prefix  # grouped by state


# --- memory plan --------------------------------------------------------------------------------------
def _rows() -> list[Decision]:
    return [_decision(2, f"s1-{i}", "State one " * 5) for i in range(3)] + [_decision(3, "s2-0", "Other state.")]


def test_memory_need_per_mode() -> None:
    be = _CheckedFake(FakeGGUF(FakeTokenizer()))
    rows = _rows()
    direct = prepare(be, rows, with_prefix=False)
    need = memory_need(direct, "direct")
    assert need["longest_prompt"] == max(len(it.prompt.ids) for it in direct)
    items = prepare(be, rows)
    serial = memory_need(items, "serial")
    assert serial["held_prefixes"] == 2
    shared = memory_need(items, "shared", max_batch_tokens=10_000)
    p = len(items[0].prefix)
    assert shared["pass_branches"] == 3
    assert shared["pass_cells"] == p + sum(len(it.prompt.ids) - p for it in items[:3])
    one_by_one = memory_need(items, "shared", max_batch_tokens=1)
    assert one_by_one["pass_branches"] == 1


def test_score_items_plans_memory_before_scoring() -> None:
    be = _CheckedFake(FakeGGUF(FakeTokenizer()))
    items = prepare(be, _rows())
    recs = list(score_items(be, items, "shared", {"config_sha256": "x"}))
    assert len(recs) == 4 and be.plans and be.plans[0]["mode"] == "shared"


def test_record_carries_gguf_block_and_score_kind_from_model_info() -> None:
    class _Info(FakeBackend):
        def model_info(self) -> dict[str, Any]:
            return {**super().model_info(), "score_kind": "quantized-weight conditional option score, uncalibrated",
                    "gguf": {"file": "m.gguf", "bytes": 1, "sha256": "0" * 64, "quantization": "Q4_0"}}

    be = _Info()
    rec = next(score_items(be, prepare(be, [_decision(2)], with_prefix=False), "direct", {"config_sha256": "x"}))
    assert rec["gguf"]["quantization"] == "Q4_0"
    assert rec["score_kind"].startswith("quantized-weight")
    plain = FakeBackend()
    rec2 = next(score_items(plain, prepare(plain, [_decision(2)], with_prefix=False), "direct",
                            {"config_sha256": "x"}))
    assert "gguf" not in rec2


# --- GGUF tools ---------------------------------------------------------------------------------------
def test_ftype_names() -> None:
    assert ftype_name(15) == "Q4_K_M"
    assert ftype_name(0) == "F32"
    assert ftype_name(1024 | 7) == "Q8_0~"
    assert ftype_name(999) == "ftype-999"


def test_quantize_log_parsing() -> None:
    log = ("[   2/ 272] token_embd.weight - [576, 49152, 1, 1], type =    f32, converting to q8_0 .. size = 1 MiB\n"
           "[   3/ 272] blk.0.attn_k.weight - [576, 192, 1, 1], type =    f32, converting to q4_0 .. size = 1\n"
           "[   4/ 272] blk.0.attn_norm.weight - [576, 1, 1, 1], type =    f32, size =    0.002 MiB\n"
           "llama_model_quantize_impl: quant size  =    87.48 MiB (5.46 BPW)\n"
           "llama_model_quantize_impl: WARNING: 180 of 272 tensor(s) required fallback quantization\n")
    types = sorted(m.group(2) or m.group(1) for m in _CONVERT.finditer(log))
    assert types == ["f32", "q4_0", "q8_0"]
    fb, bpw = _FALLBACK.search(log), _BPW.search(log)
    assert fb is not None and fb.group(1) == "180"
    assert bpw is not None and bpw.group(1) == "5.46"


def test_boundary_instability_in_the_gguf_tokenizer_fails() -> None:
    tok = FakeTokenizer()
    p = render(tok, _decision(2))
    unstable = FakeGGUF(tok, bare={p.text + "A": [*p.ids[:-1], p.ids[-1] + 1, _A]})
    with pytest.raises(ValidationError, match=r"answer slot 'A' is not stable at the prompt boundary.*position"):
        check_slots(p, unstable)


def test_gpu_layers_argument() -> None:
    from scorer.backends.llamacpp_backend import _gpu_layers
    from scorer.core.errors import ModelError

    assert _gpu_layers("0", True) == 0
    assert _gpu_layers("12", False) == 12
    assert _gpu_layers("auto", True) == -1  # llama.cpp: every layer
    assert _gpu_layers("AUTO", False) == 0  # a CPU-only build offloads nothing
    with pytest.raises(ModelError, match="expected a number of layers or 'auto'"):
        _gpu_layers("all", True)
    with pytest.raises(ModelError, match="expected 0 or more"):
        _gpu_layers("-1", True)


def _tiny_gguf(path: Any, tensors: dict[str, Any]) -> Any:
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    for name, arr in tensors.items():
        w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_same_grid_counts_identical_tensors_and_their_share_of_bytes(tmp_path: Any) -> None:
    """The quantization report's ``against_source``: a tensor counts as the source's only with the same type and
    the very same bytes."""
    import numpy as np

    from scorer.models.gguf_tools import same_grid

    a = np.arange(64, dtype=np.float32)
    src = _tiny_gguf(tmp_path / "src.gguf", {"same": a, "moved": a, "retyped": a})
    made = _tiny_gguf(tmp_path / "made.gguf", {"same": a, "moved": a + 1e-3, "retyped": a.astype(np.float16),
                                               "new": a})
    got = same_grid(src, made)
    assert got["tensors"] == 4 and got["same_type"] == 2 and got["identical"] == 1
    assert got["identical_share_of_bytes"] == pytest.approx(256 / (256 + 256 + 128 + 256))
    assert got["by_type"] == {"F32": {"tensors": 3, "same_type": 2, "identical": 1},
                              "F16": {"tensors": 1, "same_type": 0, "identical": 0}}


def test_restream_moves_the_one_block_of_cells_under_another_stream_count() -> None:
    import struct

    from scorer.backends.llamacpp_backend import restream

    def u32(*xs: int) -> bytes:
        return b"".join(struct.pack("<I", x) for x in xs)

    head = u32(0xAF143CD8, 7)  # llama.cpp's magic number and the sequence id saved from
    block = u32(3) + bytes(range(1, 40)) + bytes(8)  # a cell count, then cells whose last bytes may well be zeros
    for old, lead in ((1, 0), (4, 0), (4, 2), (4, 3)):
        saved = head + u32(old) + u32(*[0] * lead) + block + u32(*[0] * (old - 1 - lead))
        for new in (1, 2, 7):
            moved = restream(saved, old, new)
            assert moved == head + u32(new) + block + u32(*[0] * (new - 1))
            assert restream(moved, new, old) == head + u32(old) + block + u32(*[0] * (old - 1))
    assert restream(b"whatever", 3, 3) == b"whatever"  # the same count: as saved
    assert restream(head + u32(2, 0, 0), 2, 3) == head + u32(3, 0, 0, 0)  # an empty state
    assert restream(head + u32(3) + block, 2, 3) is None  # saved under another count than it says
    assert restream(head + u32(2) + block + u32(5), 2, 3) is None  # a second stream holds cells: not one block
    assert restream(head + u32(2, 0), 2, 3) is None  # cut short
    assert restream(u32(1, 7, 2) + block + u32(0), 2, 3) is None  # not a llama.cpp sequence state
