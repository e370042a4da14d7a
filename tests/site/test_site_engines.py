"""The engines report on the site (scorer/site/engine_charts.py): a throughput-against-accuracy scatter per
model and set, with every engine and routed pair, and the tables; a malformed report stops the build."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scorer.site.inputs import BuildError
from scorer.site.reports import load_report


def _report(**over: Any) -> dict[str, Any]:
    row = {"model": "qwen2.5-0.5b", "set": "boundary", "rows": 24, "decisions_per_s_scoring": 2.5,
           "decisions_per_s_whole_process": 0.8, "balanced_accuracy_raw": 0.5, "balanced_accuracy_calibrated": 0.75,
           "vs_reference": {"decisions_changed": 0, "max_abs_dp": 1e-5, "tokens_identical": 24}}
    rep = {"kind": "engines", "format": "semif-engines-v1", "created_utc": "2026-12-01T12:00:00Z", "machine": {},
           "versions": {}, "inputs": {}, "title": "Engines side by side",
           "table": [{**row, "config": "torch-fp32"}, {**row, "config": "vllm-fp32<script>",
                                                       "decisions_per_s_scoring": 6.0}],
           "routes": [{"model": "qwen2.5-0.5b", "set": "boundary", "fast": "vllm-fp32", "accurate": "llamacpp-q4",
                       "threshold": 0.1, "escalated_share": 0.25, "decisions_per_s": 4.0,
                       "out_of_fold": {"balanced_accuracy": 0.7}, "fast_only": {"balanced_accuracy": 0.6},
                       "accurate_only": {"balanced_accuracy": 0.8}}]}
    rep.update(over)
    return rep


def test_the_scatter_has_every_engine_and_route_and_the_tables_every_row() -> None:
    rep = load_report("r.json", b"{}", _report(), set())
    assert len(rep.charts) == 1
    svg = str(rep.charts[0])
    assert svg.count("<circle") == 3  # two engines, one routed pair
    assert "vllm-fp32&lt;script&gt;" in svg and "<script>" not in svg  # escaped
    assert "route vllm-fp32 → llamacpp-q4 (25% escalated)" in svg
    # engines sit at their raw accuracy (0.5, not the calibrated 0.75): routes are judged raw, so both compare
    assert "torch-fp32: 2.5 decisions/s while scoring, 0.5 balanced accuracy (raw)" in svg
    engines, routes = rep.tables[0], rep.tables[1]
    assert [r[2] for r in engines["rows"]] == ["torch-fp32", "vllm-fp32<script>"]
    assert routes["rows"][0][:4] == ["qwen2.5-0.5b", "boundary", "vllm-fp32", "llamacpp-q4"]


@pytest.mark.parametrize("bad", [{"table": "x"}, {"table": []}, {"routes": [1]}])
def test_a_malformed_engines_report_stops_the_build(bad: dict[str, Any]) -> None:
    with pytest.raises(BuildError, match=r"r\.json: an engines report needs"):
        load_report("r.json", json.dumps(_report(**bad)).encode(), _report(**bad), set())


@pytest.mark.parametrize(("machine", "words"), [
    ({"cpu": "AMD EPYC", "cores": 2}, "its instruction sets were not recorded"),
    ({"cpu": "AMD EPYC", "cores": 2, "cpu_features": ["avx", "avx2", "fma"]}, "with AVX2, no AVX-512"),
    ({"cpu": "AMD EPYC", "cores": 2, "cpu_features": ["avx2", "avx512f", "avx512_vnni", "avx512_bf16"]},
     "2 cores with AVX-512 (VNNI, BF16)"),
    ({"cpu": "X", "cores": 4, "cpu_features": ["avx2", "avx512f"]}, "AVX-512 (no VNNI, no BF16)"),
])
def test_the_table_says_which_cpu_features_the_speeds_come_from(machine: dict[str, Any], words: str) -> None:
    """The engines' kernels dispatch on the CPU's instruction sets (vLLM's int8 and bf16 need AVX-512 VNNI/BF16): a
    report's speeds are only comparable with another's from the same features, so the table says which."""
    rep = load_report("r.json", b"{}", _report(machine=machine, skipped=[{"set": "authored", "config": "vllm-bf16"}]),
                      set())
    note = rep.tables[0]["note"]
    assert words in note and f"{machine['cores']} cores" in note
    assert note.endswith("not run (benchmarks/engines.py --skip): vllm-bf16 on authored")
