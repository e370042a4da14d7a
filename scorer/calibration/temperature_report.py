"""``semif calibrate temperature``: the temperature fit of a run against labels (in sample, and out of fold to judge
it), and a run's records rewritten with a temperature applied."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scorer.calibration import temperature
from scorer.calibration.temperature import apply_temperature
from scorer.core.errors import InputError
from scorer.core.io import check_writable, write_atomic
from scorer.evaluation import metrics
from scorer.evaluation.report_files import ci_text, enveloped, labels_info, load_labelled, report_title, run_info
from scorer.formats.records import dumps_record, read_records


def calibrate_report(run: str, labels: str | None, folds: int, reps: int = metrics.BOOTSTRAP_REPS,
                     seed: int = metrics.BOOTSTRAP_SEED) -> dict[str, Any]:

    recs, _, table, _ = load_labelled(run, labels)
    if any(r.get("temperature") not in (None, 1.0) for r in recs):
        raise InputError(run, None, "temperature", "the records are already temperature-scaled",
                         "raw records (fit on what the model produced)")
    fit = temperature.fit_table(table)
    oof = temperature.out_of_fold(table, folds, reps, seed)
    info = run_info(run, recs)
    return enveloped("calibrate", {
        "title": report_title("Calibration", info, table.n), "run": info, "labels": labels_info(labels),
        "counts": table.counts(),
        "method": "temperature scaling, softmax(option_logits / T); T minimises mean NLL (golden-section "
                  f"search over log T in [{temperature.T_MIN}, {temperature.T_MAX}])",
        "fit_all_rows": {"temperature": fit.temperature, "nll_before": fit.nll_before, "nll_after": fit.nll_after,
                         "rows": fit.rows, "at_bound": fit.at_bound, "iterations": fit.iterations,
                         "note": "in-sample: this is the T to apply; judge it by the out-of-fold numbers"},
        "out_of_fold": oof,
        "bootstrap": {"reps": reps, "seed": seed, "level": metrics.CI_LEVEL, "unit": "group"},
    })


def print_calibrate(rep: dict[str, Any]) -> None:
    f, o = rep["fit_all_rows"], rep["out_of_fold"]
    print(f"{rep['run']['path']}: T = {f['temperature']:.4f} (fitted on all {f['rows']} rows; NLL "
          f"{f['nll_before']:.4f} -> {f['nll_after']:.4f} in-sample{'; at the search bound' if f['at_bound'] else ''})")
    temps = ", ".join(f"{x['temperature']:.3f}" for x in o["per_fold"])
    print(f"out of fold ({o['folds']} group-disjoint folds; fold T: {temps}):")
    for k in ("ece", "nll", "brier", "accuracy"):
        print(f"  {k:<9} before {ci_text(o['before'][k])}   after {ci_text(o['after'][k])}")
    print(f"  argmax unchanged: {o['argmax_unchanged']}")


def apply_file(run: str, out: Path, temperature: float) -> int:
    """Write ``run``'s records with ``temperature`` applied (choices unchanged). Returns the count."""

    check_writable(out)
    recs = [apply_temperature(r, temperature) for r in read_records(run)]
    write_atomic(out, b"".join(dumps_record(r) for r in recs))
    return len(recs)
