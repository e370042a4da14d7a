"""``semif quant`` end to end on SmolLM2-135M and a tiny decision set: the report is complete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from scorer.cli import main
from scorer.formats.envelope import envelope_problems
from scorer.formats.rows import load_decisions
from scorer.models import store

pytestmark = [pytest.mark.slow, pytest.mark.llamacpp]

_RUNG_KEYS = {"name", "file", "bytes", "sha256", "quantization", "made_by", "quantize", "llama", "decisions",
              "load_s", "prepare_s", "score_s", "decisions_per_s", "labels", "ties", "median_allowed_mass",
              "changed_choices", "max_abs_dp", "median_abs_dp", "tokens_sha256_equal",
              "flipped_reference_margin_max", "generation", "load_average"}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("quant")
    rows = (data_dir / "workloads" / "shape-small.jsonl").read_text().splitlines()[:2]
    tiny = tmp / "tiny.jsonl"
    tiny.write_text("\n".join(rows) + "\n")
    out = tmp / "quant.json"
    code = main(["quant", "--model", store.TEST_MODEL, "--input", str(tiny), "--output", str(out),
                 "--rungs", "Q8_0,Q3_K_M", "--workdir", str(tmp / "work"), "--max-new-tokens", "8",
                 "--records-dir", str(tmp / "records")])
    assert code == 0
    rep = orjson.loads(out.read_bytes())
    rep["_tmp"] = str(tmp)
    return rep


def test_report_is_complete(report: dict[str, Any]) -> None:
    assert (report["kind"], report["format"]) == ("quant", "semif-quant-v2") and not envelope_problems(report)
    assert [r["name"] for r in report["rungs"]] == ["F32", "Q8_0", "Q3_K_M", "source"]
    assert "dequantized" in report["reference_weights_note"]
    assert report["machine"]["cores"] >= 1 and report["versions"]["llama_cpp"]
    assert report["decision_set"]["rows"] == 2 and report["decision_set"]["generation_arrays"] == 1
    ref = report["reference"]
    assert ref["backend"] == "torch" and ref["dtype"] == "float32" and ref["decisions"] == 2
    assert ref["labels"]["labelled"] == 2 and 0.0 <= ref["labels"]["balanced_accuracy"] <= 1.0
    for r in report["rungs"]:
        assert set(r) == _RUNG_KEYS, r["name"]
        assert r["decisions"] == 2 and r["decisions_per_s"] > 0 and r["bytes"] > 0
        assert r["tokens_sha256_equal"] == 2  # the very same token ids as the torch reference
        assert r["generation"]["arrays"] == 1 and 0 <= r["generation"]["complete"] <= 1
        assert 0 <= r["changed_choices"] <= 2 and 0.0 <= r["median_abs_dp"] <= r["max_abs_dp"] <= 1.0
    assert len(report["rows"]) == 2 and set(report["rows"][0]) >= {"id", "reference", "F32", "Q8_0", "Q3_K_M"}


def test_rungs_are_what_they_claim(report: dict[str, Any]) -> None:
    by = {r["name"]: r for r in report["rungs"]}
    assert by["F32"]["quantization"] == "F32" and by["Q8_0"]["quantization"] == "Q8_0"
    assert by["source"]["sha256"] == store.REGISTRY[store.TEST_MODEL].sha256
    assert by["F32"]["bytes"] > by["Q8_0"]["bytes"] > by["Q3_K_M"]["bytes"]
    assert by["Q8_0"]["quantize"]["tensor_types"].get("q8_0", 0) > 100
    assert by["Q3_K_M"]["quantize"]["bits_per_weight"] < by["Q8_0"]["quantize"]["bits_per_weight"]
    # The F32 GGUF holds the reference's own numbers: only llama.cpp-vs-torch arithmetic separates them.
    assert by["F32"]["max_abs_dp"] < 0.01 and by["F32"]["changed_choices"] == 0


def test_written_files_are_cleaned_and_records_kept(report: dict[str, Any]) -> None:
    tmp = Path(report["_tmp"])
    assert not list((tmp / "work").glob("*.gguf"))
    names = sorted(p.name for p in (tmp / "records").glob("*.jsonl"))
    assert names == ["reference-torch-fp32.jsonl", "rung-F32.jsonl", "rung-Q3_K_M.jsonl", "rung-Q8_0.jsonl",
                     "rung-source.jsonl"]
    assert len(load_decisions(tmp / "tiny.jsonl")) == 2
    assert main(["compare", str(tmp / "records" / "reference-torch-fp32.jsonl"),
                 str(tmp / "records" / "rung-F32.jsonl")]) == 0
