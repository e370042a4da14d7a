"""The quantization-schemes report on the site (scorer/site/quant_charts.py): a drift bar per scheme that ran,
a table row per scheme and runner (skipped ones with their reason, emulated ones without a speed), next to the
ladder; a malformed report stops the build."""

from __future__ import annotations

from typing import Any

import pytest

from scorer.site.inputs import BuildError
from scorer.site.reports import load_report


def _run(runner: str, execution: str, **over: Any) -> dict[str, Any]:
    return {"runner": runner, "execution": execution, "ran": True, "changed_choices": 1, "max_abs_dp": 0.04,
            "median_abs_dp": 0.01, "decisions_per_s": 2.0,
            "boundary_decisions": {"reference_margin_below": 0.1, "decisions": 5, "changed": 1},
            "labels": {"balanced_accuracy": 0.5, "balanced_accuracy_calibrated": 0.625},
            "load_average": {"before": [0.5, 1.0, 1.2], "after": [0.7, 1.0, 1.2]}, **over}


def _report(**over: Any) -> dict[str, Any]:
    rep = {"kind": "quant-schemes", "format": "semif-quant-schemes-v1", "created_utc": "2026-12-01T12:00:00Z",
           "machine": {}, "versions": {}, "inputs": {},
           "reference": {"runner": "torch fp32", "decisions_per_s": 1.5,
                         "labels": {"balanced_accuracy": 0.5, "balanced_accuracy_calibrated": 0.6}},
           "schemes": [
               {"scheme": "gguf:Q8_0", "weight_bytes": 2**20 * 644, "bits_per_weight": 8.5, "produce_s": 4.7,
                "runs": [_run("llama.cpp", "native")]},
               {"scheme": "awq-w4a16<b>", "weight_bytes": 2**20 * 400, "produce_s": 800.0, "bits_per_weight": 16.26,
                "bits": {"bits_per_weight": 16.26, "quantized_linear": {"bits_per_weight": 4.2813}},
                "runs": [_run("transformers-emulated", "emulated"),
                         {"runner": "vllm", "execution": "native", "ran": False,
                          "skipped": "skipped: no cpu_gemm_wna16 kernel"}]}]}
    rep.update(over)
    return rep


def test_every_run_is_a_row_skips_say_why_and_emulations_claim_no_speed() -> None:
    rep = load_report("q.json", b"{}", _report(), set())
    assert rep.family == "quant"  # drawn next to the llama.cpp ladder
    svg = str(rep.charts[0])
    assert svg.count("<rect") >= 2 and "awq-w4a16&lt;b&gt;" in svg and "<b>" not in svg
    table = rep.tables[0]
    rows = {(r[0], r[1]): r for r in table["rows"]}
    assert rows[("fp32 (reference)", "torch fp32")][-1] == "1.5"
    q8 = rows[("gguf:Q8_0", "llama.cpp")]
    assert q8[2] == "its own kernels (native)" and q8[5] == "644" and q8[8] == "1 of 5"
    assert q8[3] == "8.5" and q8[4] == "—"  # llama.cpp states no per-layer figure
    assert q8[-1] == "2 (load 0.5 → 0.7)"  # a speed carries the load it was measured under
    emulated = rows[("awq-w4a16<b>", "transformers-emulated")]
    assert emulated[3] == "16.26" and emulated[4] == "4.281"
    assert emulated[2] == "emulated in transformers" and emulated[-1] == ""  # never a speed for an emulation
    skipped = rows[("awq-w4a16<b>", "vllm")]
    assert skipped[2] == "not run: skipped: no cpu_gemm_wna16 kernel" and skipped[9] == ""  # never a number


@pytest.mark.parametrize("bad", [{"schemes": []}, {"schemes": "x"}, {"schemes": [{"scheme": 1, "runs": []}]},
                                 {"schemes": [{"scheme": "w8a8", "runs": [3]}]}])
def test_a_malformed_schemes_report_stops_the_build(bad: dict[str, Any]) -> None:
    with pytest.raises(BuildError, match=r"q\.json: "):
        load_report("q.json", b"{}", _report(**bad), set())


def test_a_report_without_bits_says_so_for_a_checkpoint_and_not_for_a_gguf() -> None:
    """The 0.5B reports of 2026-12-02 predate ``bits``: their W8A8/AWQ/GPTQ cells must not read as blank."""
    rep = _report()
    for s in rep["schemes"]:
        s.pop("bits", None)
        s.pop("bits_per_weight", None)
    rows = {(r[0], r[1]): r for r in load_report("q.json", b"{}", rep, set()).tables[0]["rows"]}
    assert rows[("awq-w4a16<b>", "transformers-emulated")][3:5] == ["not in this report", "not in this report"]
    assert rows[("gguf:Q8_0", "llama.cpp")][3:5] == ["—", "—"]
