"""The tampering suite: pinned GGUFs, the verified fp32/tokenizer caches derived from them, and traces.

Every tamper must be refused with one clear message that names the file (exit 2 from the command line),
before anything is scored or written, and must leave the tampered bytes as they were. Tests that touch a
real model copy it into a temporary ``SEMIF_CACHE``: the shared cache is only ever read.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from scorer import trace
from scorer.cli import main
from scorer.core.errors import InputError, ModelError
from scorer.models import store

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests" / "fixtures" / "trace-fake.json"
GGUF_SHA = "ab" * 32


# --- helpers -------------------------------------------------------------------------------------------
def _snapshot(folder: Path) -> dict[str, str]:
    """Name → sha256 of every regular file under ``folder`` (to prove a refusal changed nothing)."""
    return {f.relative_to(folder).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(folder.rglob("*")) if f.is_file()}


def _rewrite(path: Path, data: bytes) -> None:
    """Replace a file's bytes without writing through a hard link (copies share inodes)."""
    path.unlink()
    path.write_bytes(data)


def _flip(path: Path, at: float = 0.5) -> None:
    data = bytearray(path.read_bytes())
    i = min(len(data) - 1, int(len(data) * at))
    data[i] ^= 0x01
    _rewrite(path, bytes(data))


def _fake_build(sha: str) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        (d / "model.safetensors").write_bytes(bytes(range(256)) * 64)
        (d / "config.json").write_text('{"model_type": "llama"}\n')
        (d / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}\n")
        (d / "tokenizer.json").write_text('{"version": "1.0"}\n')
        (d / "semif-dequant.json").write_text(json.dumps({"gguf_sha256": sha, "dtype": "float32"}))
    return build


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEMIF_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def folder(cache: Path) -> Path:
    return store.build_verified(store.dequant_dir(GGUF_SHA), GGUF_SHA, "test", _fake_build(GGUF_SHA))


# --- the verified cache, on a small fake folder -----------------------------------------------------------
def test_built_folder_verifies_and_lists_every_file(folder: Path):
    assert folder == store.cache_dir() / "hf-v2" / GGUF_SHA
    manifest = store.verify_manifest(folder, GGUF_SHA)
    assert sorted(manifest["files"]) == ["chat_template.jinja", "config.json", "model.safetensors",
                                         "semif-dequant.json", "tokenizer.json"]
    assert manifest["gguf_sha256"] == GGUF_SHA and manifest["hash"] == "blake3"
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left


def _forge_dequant_and_manifest(folder: Path) -> None:
    """A forger who edits semif-dequant.json and updates its manifest line: caught by the GGUF binding."""
    meta = folder / "semif-dequant.json"
    _rewrite(meta, json.dumps({"gguf_sha256": "cd" * 32, "dtype": "float32"}).encode())
    mpath = folder / store.MANIFEST
    m = json.loads(mpath.read_text())
    m["files"]["semif-dequant.json"] = {"bytes": meta.stat().st_size, "blake3": store.file_digest(meta)}
    _rewrite(mpath, json.dumps(m).encode())


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


TAMPERS: dict[str, tuple[Callable[[Path], None], str, str]] = {
    # name: (tamper, file named in the message, words in the message)
    "weights-bit-flip": (lambda f: _flip(f / "model.safetensors"), "model.safetensors", "blake3"),
    "weights-first-byte": (lambda f: _flip(f / "model.safetensors", 0.0), "model.safetensors", "blake3"),
    "weights-last-byte": (lambda f: _flip(f / "model.safetensors", 1.0), "model.safetensors", "blake3"),
    "weights-truncated": (lambda f: _rewrite(f / "model.safetensors", (f / "model.safetensors").read_bytes()[:100]),
                          "model.safetensors", "bytes"),
    "weights-emptied": (lambda f: _rewrite(f / "model.safetensors", b""), "model.safetensors", "bytes"),
    "weights-garbage-same-size": (lambda f: _rewrite(f / "model.safetensors", b"\xff" * (256 * 64)),
                                  "model.safetensors", "blake3"),
    "template-edited": (lambda f: _rewrite(f / "chat_template.jinja",
                                           (f / "chat_template.jinja").read_bytes().replace(b"m.content", b"m.role")),
                        "chat_template.jinja", "bytes"),
    "template-same-size-edit": (lambda f: _flip(f / "chat_template.jinja"), "chat_template.jinja", "blake3"),
    "config-edited": (lambda f: _rewrite(f / "config.json", b'{"model_type": "qwen2"}\n'), "config.json", "blake3"),
    "tokenizer-appended": (lambda f: _rewrite(f / "tokenizer.json", (f / "tokenizer.json").read_bytes() + b" "),
                           "tokenizer.json", "bytes"),
    "dequant-meta-forged": (lambda f: _rewrite(f / "semif-dequant.json",
                                               json.dumps({"gguf_sha256": "cd" * 32, "dtype": "float32"}).encode()),
                            "semif-dequant.json", "manifest"),
    "dequant-meta-forged-with-manifest-line": (_forge_dequant_and_manifest, "semif-dequant.json", "names GGUF"),
    "file-removed": (lambda f: (f / "tokenizer.json").unlink(), "tokenizer.json", "missing"),
    "file-added": (lambda f: (f / "tokenizer.model").write_bytes(b"sp"), "tokenizer.model", "not in the manifest"),
    "file-added-in-subfolder": (lambda f: (f / "sub").mkdir() or (f / "sub" / "x.json").write_text("{}"),
                                "sub/x.json", "not in the manifest"),
    "file-became-directory": (lambda f: (f / "chat_template.jinja").unlink() or (f / "chat_template.jinja").mkdir(),
                              "chat_template.jinja", "missing"),
    "file-became-fifo": (lambda f: _fifo(f / "config.json"), "config.json", "not a regular file"),
    "file-became-symlink-to-other": (lambda f: (f / "config.json").unlink() or os.symlink(f / "tokenizer.json",
                                                                                         f / "config.json"),
                                     "config.json", "bytes"),
    "manifest-removed": (lambda f: (f / store.MANIFEST).unlink(), store.MANIFEST, "missing"),
    "manifest-garbage": (lambda f: _rewrite(f / store.MANIFEST, b"\x00not json"), store.MANIFEST, "not a"),
    "manifest-wrong-format": (lambda f: _rewrite(f / store.MANIFEST, b'{"format": "x", "hash": "blake3", "files": {}}'),
                              store.MANIFEST, "not a"),
    "manifest-other-gguf": (lambda f: _rewrite(f / store.MANIFEST, (f / store.MANIFEST).read_bytes().replace(
        GGUF_SHA.encode(), b"cd" * 32)), store.MANIFEST, "built from GGUF"),
}


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_every_cache_tamper_is_refused_naming_the_file(folder: Path, name: str):
    tamper, culprit, words = TAMPERS[name]
    tamper(folder)
    before = _snapshot(folder)
    with pytest.raises(ModelError) as err:
        store.verify_manifest(folder, GGUF_SHA)
    msg = str(err.value)
    assert f"{folder / culprit}:" in msg and words in msg, msg
    assert "nothing was scored" in msg and f"rm -r '{folder}'" in msg and "\n" not in msg
    assert _snapshot(folder) == before  # refused, never repaired or deleted behind the user's back


def test_folder_of_another_gguf_is_refused(folder: Path):
    other = folder.parent / ("cd" * 32)
    shutil.copytree(folder, other)
    with pytest.raises(ModelError, match="built from GGUF"):
        store.verify_manifest(other, "cd" * 32)


def test_tokenizer_only_check_skips_weight_digests_but_not_their_presence(folder: Path):
    _flip(folder / "model.safetensors")
    store.verify_manifest(folder, GGUF_SHA, weights=False)  # a tokenizer load reads no weights
    _flip(folder / "chat_template.jinja")
    with pytest.raises(ModelError, match=r"chat_template\.jinja"):
        store.verify_manifest(folder, GGUF_SHA, weights=False)
    (folder / "model.safetensors").unlink()
    with pytest.raises(ModelError, match="missing"):
        store.verify_manifest(folder, GGUF_SHA, weights=False)


def test_torch_backend_refuses_a_tampered_cache_before_loading(folder: Path, monkeypatch: pytest.MonkeyPatch):
    from scorer.backends import torch_backend

    _flip(folder / "model.safetensors")
    monkeypatch.setattr(store, "build_verified", lambda *a, **k: pytest.fail("must not rebuild over a tampered cache"))
    with pytest.raises(ModelError, match=r"model\.safetensors: has blake3"):
        torch_backend.dequantize_gguf(Path("/nonexistent/x.gguf"), GGUF_SHA)


def test_failed_build_leaves_nothing(cache: Path):
    def build(d: Path) -> None:
        (d / "model.safetensors").write_bytes(b"half")
        raise RuntimeError("killed mid-build")

    target = store.dequant_dir(GGUF_SHA)
    with pytest.raises(RuntimeError):
        store.build_verified(target, GGUF_SHA, "test", build)
    assert not target.exists() and list(target.parent.iterdir()) == []


def test_concurrent_builder_keeps_the_first_folder(cache: Path):
    target = store.dequant_dir(GGUF_SHA)

    def build(d: Path) -> None:
        _fake_build(GGUF_SHA)(d)
        if not target.exists():  # another process finishes first, while we are still building
            store.build_verified(target, GGUF_SHA, "test", _fake_build(GGUF_SHA))
        (d / "config.json").write_text('{"model_type": "ours"}\n')

    store.build_verified(target, GGUF_SHA, "test", build)
    assert json.loads((target / "config.json").read_text()) == {"model_type": "llama"}  # theirs, verified
    assert sorted(p.name for p in target.parent.iterdir()) == [GGUF_SHA]


def test_v1_folders_are_left_alone(cache: Path):
    old = cache / "hf" / GGUF_SHA
    old.mkdir(parents=True)
    (old / "semif-dequant.json").write_text(json.dumps({"gguf_sha256": GGUF_SHA}))
    before = _snapshot(old)
    new = store.build_verified(store.dequant_dir(GGUF_SHA), GGUF_SHA, "test", _fake_build(GGUF_SHA))
    assert new != old and new.parent.name == "hf-v2" and _snapshot(old) == before


def test_dropping_quantization_config_keeps_the_rest(tmp_path: Path):
    from scorer.backends.torch_backend import _drop_quantization_config

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "quantization_config": {"quant_method": "gguf"}, "x": 1}))
    assert _drop_quantization_config(cfg) == {"quant_method": "gguf"}
    assert json.loads(cfg.read_text()) == {"model_type": "llama", "x": 1}


# --- pinned GGUF files (a fake registry entry over a small file) -------------------------------------------
@pytest.fixture
def gguf_entry(cache: Path) -> store.ModelEntry:
    data = b"GGUF" + bytes(range(256)) * 40
    entry = replace(store.REGISTRY["smollm2-135m"], key="fake", filename="fake.gguf",
                    sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    path = store.gguf_path(entry)
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return entry


GGUF_TAMPERS: dict[str, Callable[[Path], None]] = {
    "magic": lambda p: _flip(p, 0.0),
    "middle": lambda p: _flip(p, 0.5),
    "last-byte": lambda p: _flip(p, 1.0),
    "truncated": lambda p: _rewrite(p, p.read_bytes()[:-1]),
    "appended": lambda p: _rewrite(p, p.read_bytes() + b"\0"),
    "emptied": lambda p: _rewrite(p, b""),
    "directory": lambda p: p.unlink() or p.mkdir(),
}


@pytest.mark.parametrize("name", sorted(GGUF_TAMPERS))
def test_every_gguf_tamper_is_refused(gguf_entry: store.ModelEntry, name: str):
    assert store.verify(gguf_entry) == gguf_entry.sha256
    path = store.gguf_path(gguf_entry)
    GGUF_TAMPERS[name](path)
    for check in (store.verify, lambda e: store.fetch(e, progress=False)):
        with pytest.raises(ModelError, match=r"mismatch|not a regular file") as err:
            check(gguf_entry)
        assert str(path) in str(err.value) and "\n" not in str(err.value)


# --- traces ---------------------------------------------------------------------------------------------
def _write(tmp_path: Path, doc: dict, name: str = "t.json") -> Path:
    path = tmp_path / name
    path.write_bytes(trace.dumps(doc))
    return path


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(args)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _first_typed_decision(doc: dict) -> dict:
    return trace.measured(doc, "typed")[0]["decisions"][0]


def test_forged_probability_with_rehashed_checksums_fails_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """Issue 15 item 7: p = 0.733 against softmax 0.683 verified once; the softmax is now re-derived."""
    doc = trace.load(TRACE)
    d = _first_typed_decision(doc)
    hi = max(range(2), key=lambda i: d["probabilities"][i])
    d["probabilities"][hi] = round(d["probabilities"][hi] + 0.05, 6)
    d["probabilities"][1 - hi] = 1.0 - d["probabilities"][hi]
    d["margin"] = d["probabilities"][hi] - d["probabilities"][1 - hi]
    trace.finalize(doc)  # a careful forger recomputes the summary and every checksum
    path = _write(tmp_path, doc)
    for cmd in (["verify"], ["summary"], ["export", "--chrome", "-o", str(tmp_path / "x.json")]):
        rc, _out, err = _cli(["trace", *cmd, str(path)], capsys)
        assert rc == 2 and "softmax(option_logits)" in err and "Traceback" not in err, (cmd, err)
    assert not (tmp_path / "x.json").exists()


def test_softmax_check_tolerance():
    assert trace._check_softmax([0.0, 0.0], [0.5, 0.5]) == []
    assert trace._check_softmax([1.0, 0.0], [0.7310585786300049, 0.2689414213699951]) == []
    assert trace._check_softmax([1.0, 0.0], [0.7310585786300049 + 2e-9, 0.2689414213699951 - 2e-9])
    assert trace._check_softmax([1e308, -1e308], [1.0, 0.0]) == []  # no overflow on extreme logits


@pytest.mark.parametrize("cmd", ["summary", "export"])
def test_summary_and_export_refuse_an_edited_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str], cmd: str):
    """Issue 15 item 7: summary/export skipped the checksums and exported a tampered trace with exit 0."""
    doc = trace.load(TRACE)
    doc["runs"][0]["total_s"] += 1.0  # an edit the schema accepts; only the checksums catch it
    path = _write(tmp_path, doc)
    out_file = tmp_path / "chrome.json"
    args = ["trace", cmd, str(path)] + (["--chrome", "-o", str(out_file)] if cmd == "export" else [])
    rc, out, err = _cli(args, capsys)
    assert rc == 2 and "checksums.content_sha256" in err and out == "" and not out_file.exists(), err
    assert err.startswith(f"semif: error: {path}: not a verified semif-trace-v1 trace")


@pytest.mark.parametrize("field", ["versions", "notes"])
@pytest.mark.parametrize("cmd", ["verify", "summary", "export"])
def test_deeply_nested_trace_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str,
                                                cmd: str):
    """Issue 15 item 8: a 1000-deep list in versions/notes raised RecursionError in verify/summary/export."""
    doc = trace.load(TRACE)
    if field == "notes":
        doc["notes"] = ["DEEP"]
    else:
        doc["versions"]["deep"] = "DEEP"
    path = tmp_path / "t.json"  # the 1000 levels are spliced in as text: no serialiser recurses that deep
    path.write_bytes(trace.dumps(doc).replace(b'"DEEP"', b"[" * 1000 + b"]" * 1000))
    args = ["trace", cmd, str(path)] + (["--chrome"] if cmd == "export" else [])
    rc, out, err = _cli(args, capsys)
    assert rc == 2 and out == "" and "Traceback" not in err, err
    assert f"{path}: field '{field}" in err and "nested more than 32 levels deep" in err
    assert len(err.strip().splitlines()) == 1 and len(err) < 400


def test_depth_limit_allows_every_real_trace():
    for f in (ROOT / "tests" / "fixtures").glob("trace-*.json"):
        trace.load(f)
    doc = trace.load(TRACE)
    nested: list = [1]
    for _ in range(trace.MAX_DEPTH - 2):
        nested = [nested]
    doc["notes"] = nested  # root object -> notes -> MAX_DEPTH - 1 lists: exactly at the limit
    trace._check_depth("x", doc)
    doc["notes"] = [nested]
    with pytest.raises(InputError, match="nested more than"):
        trace._check_depth("x", doc)


def test_trace_tampers_leave_the_file_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    doc = copy.deepcopy(trace.load(TRACE))
    doc["summary"]["wall_ratio"] = 99.0
    path = _write(tmp_path, doc)
    before = path.read_bytes()
    for cmd in (["verify"], ["summary"], ["export", "--chrome"]):
        assert _cli(["trace", *cmd, str(path)], capsys)[0] == 2
    assert path.read_bytes() == before


# --- the real fp32 cache of smollm2-135m, copied into a temporary SEMIF_CACHE ------------------------------
SMOL = store.REGISTRY["smollm2-135m"]
ROWS = ROOT / "data" / "examples" / "decisions.jsonl"


@pytest.fixture(scope="module")
def smol_pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the smollm2 GGUF and its verified fp32 folder (built in the shared cache if missing)."""
    from scorer.backends.torch_backend import dequantize_gguf

    gguf = store.fetch(SMOL, progress=False)
    folder = dequantize_gguf(gguf, SMOL.sha256)
    root = tmp_path_factory.mktemp("pristine")
    (root / "models" / SMOL.key).mkdir(parents=True)
    shutil.copyfile(gguf, root / "models" / SMOL.key / SMOL.filename)
    shutil.copytree(folder, root / store.DEQUANT_LAYOUT / SMOL.sha256)
    return root


@pytest.fixture
def smol_cache(smol_pristine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh SEMIF_CACHE of hard links to the pristine copy (tampers rewrite files, never write through)."""
    cache = tmp_path / "cache"
    shutil.copytree(smol_pristine, cache, copy_function=os.link)
    monkeypatch.setenv("SEMIF_CACHE", str(cache))
    return cache


def _edit(old: bytes, new: bytes) -> Callable[[Path], None]:
    def edit(path: Path) -> None:
        data = path.read_bytes()
        assert old in data, (path, old)
        _rewrite(path, data.replace(old, new, 1))
    return edit


REAL_TAMPERS: dict[str, tuple[str, Callable[[Path], None]]] = {
    "weights-bit-flip": ("model.safetensors", _flip),
    "weights-garbage-tail": ("model.safetensors", lambda p: _rewrite(p, p.read_bytes()[:-4096] + b"\xff" * 4096)),
    "chat-template-edited": ("chat_template.jinja", _edit(b"<|im_start|>", b"<|im_start|> ")),
    "dequant-meta-forged": ("semif-dequant.json", _edit(b'"dtype": "float32"', b'"dtype": "float16"')),
    "config-edited": ("config.json", _edit(b'"rms_norm_eps"', b'"rms_norm_eps_"')),
    "tokenizer-config-edited": ("tokenizer_config.json", _edit(b"{", b'{"model_max_length": 7, ')),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REAL_TAMPERS))
def test_real_cache_tamper_refuses_to_score(smol_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            name: str):
    culprit, tamper = REAL_TAMPERS[name]
    folder = smol_cache / store.DEQUANT_LAYOUT / SMOL.sha256
    tamper(folder / culprit)
    out = tmp_path / "records.jsonl"
    rc = main(["score", "--input", str(ROWS), "--output", str(out), "--model", SMOL.key])
    err = capsys.readouterr().err
    assert rc == 2 and f"{folder / culprit}:" in err and "nothing was scored" in err, err
    # The weights' digests are checked while transformers loads them, so its progress bar may come first;
    # the refusal itself is one line.
    lines = [ln for ln in err.replace("\r", "\n").splitlines() if ln.strip() and not ln.startswith("Loading weights")]
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("semif: error: "), lines
    assert not out.exists()  # no 0-byte or partial output


@pytest.mark.slow
@pytest.mark.llamacpp
def test_real_tokenizer_tamper_refuses_the_llamacpp_backend(smol_cache: Path, capsys: pytest.CaptureFixture[str]):
    """The llama.cpp backend reads its reference tokenizer from the same folder: checked too (weights skipped)."""
    folder = smol_cache / store.DEQUANT_LAYOUT / SMOL.sha256
    _edit(b"<|im_start|>", b"<|im_start|> ")(folder / "chat_template.jinja")
    rc = main(["prompt", "--input", str(ROWS), "--id", "ex01-ticket-routing", "--model", SMOL.key,
               "--backend", "llamacpp"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{folder / 'chat_template.jinja'}:" in err, err


@pytest.mark.slow
def test_real_untampered_copy_scores_and_gguf_tamper_is_refused(smol_cache: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]):
    """The control (an intact copy loads) and the pin in front of everything (a flipped GGUF byte)."""
    assert main(["prompt", "--input", str(ROWS), "--id", "ex01-ticket-routing", "--model", SMOL.key]) == 0
    assert "prompt_sha256" in capsys.readouterr().out
    _flip(smol_cache / "models" / SMOL.key / SMOL.filename)
    rc = main(["score", "--input", str(ROWS), "--output", str(tmp_path / "o.jsonl"), "--model", SMOL.key])
    assert rc == 2 and "sha256 mismatch" in capsys.readouterr().err and not (tmp_path / "o.jsonl").exists()


@pytest.mark.slow
def test_cache_folder_loads_with_plain_transformers(smol_pristine: Path):
    """Issue 16 item 3: standard loaders get plain fp32 weights, with no stale GGUF quantization_config."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = smol_pristine / store.DEQUANT_LAYOUT / SMOL.sha256
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())
    model = AutoModelForCausalLM.from_pretrained(str(folder))
    tok = AutoTokenizer.from_pretrained(str(folder))
    assert getattr(model.config, "quantization_config", None) is None and getattr(model, "hf_quantizer", None) is None
    assert next(model.parameters()).dtype == torch.float32
    with torch.inference_mode():
        logits = model(**tok("The sky is", return_tensors="pt")).logits
    assert torch.isfinite(logits).all()
    meta = json.loads((folder / "semif-dequant.json").read_text())
    assert meta["gguf_sha256"] == SMOL.sha256 and meta["config_quantization_config_dropped"]["quant_method"] == "gguf"


@pytest.mark.slow
@pytest.mark.parametrize("garbage", ["not-safetensors", "header-too-large", "empty"])
def test_garbage_weights_in_a_local_folder_are_one_clear_error(smol_pristine: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str], garbage: str):
    """A local HF folder has no manifest; unreadable weights must still be a clear refusal, not a traceback."""
    src = smol_pristine / store.DEQUANT_LAYOUT / SMOL.sha256
    local = tmp_path / "local-model"
    local.mkdir()
    for f in src.iterdir():
        if f.name != "model.safetensors":
            shutil.copyfile(f, local / f.name)
    blob = {"not-safetensors": b"\x00garbage" * 1000, "header-too-large": (2 ** 60).to_bytes(8, "little") + b"{}",
            "empty": b""}[garbage]
    (local / "model.safetensors").write_bytes(blob)
    out = tmp_path / "o.jsonl"
    rc = main(["score", "--input", str(ROWS), "--output", str(out), "--model", str(local)])
    err = capsys.readouterr().err
    assert rc == 2 and "could not load" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
