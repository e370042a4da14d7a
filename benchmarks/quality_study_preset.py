"""``benchmarks/quality_study.py --write-preset NAME``: the study's winner as a preset (:mod:`scorer.scoring.presets`).

What the preset names is what the study measured, nothing else:

* layout, k and readout of the winner; its calibration kind and, unless ``none``, a calibration file fitted (with
  the study's own settings) on the winner's records of every set, written next to the preset as
  ``NAME-calibration.json``: a model-specific file, so the preset refuses other models the way ``--calibration``
  does;
* with k > 0, the demonstrations file the study itself showed (``--demos FILE``, checked to share no state with
  any set): a winner whose demonstrations were drawn from the evaluation sets' own training folds cannot become a
  preset (its demonstrations would be rows of the sets it is judged on), and is refused with that reason;
* provenance: the study report's path and sha256, the metric that picked the winner and its value, the model and
  the sets.

Nothing is overwritten: the preset and its calibration file are both checked free before either is written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from benchmarks.quality_study_plan import READOUTS, StudySet
from benchmarks.quality_study_table import fitter
from scorer.calibration.core import write_calibration
from scorer.core.errors import InputError
from scorer.core.hashing import sha256_file
from scorer.core.io import check_writable
from scorer.scoring.presets import preset_body, write_preset


def _rel(target: Path, folder: Path) -> str:
    return os.path.relpath(target.resolve(), folder.resolve())


def write_winner(name: str, presets_dir: Path, report: dict[str, Any], report_path: Path, sets: list[StudySet],
                 winner_records: list[dict[str, Any]], demos_file: str | None, seed: int) -> Path:
    """Write ``presets_dir/NAME.json`` (and its calibration file) from ``report``'s winner; returns the preset's path.
    ``winner_records``: the winner's records of every set (fold-independent runs)."""
    w = report.get("winner")
    if not w:
        raise InputError("--write-preset", None, None, "the study has no winner (no configuration ran on every set)",
                         "a study whose grid ran on every set")
    if w["k"] > 0 and demos_file is None:
        raise InputError("--write-preset", None, None,
                         f"the winner ({w['name']}) shows demonstrations drawn from the evaluation sets' own training "
                         "folds, so a preset of it would show rows of the sets it is judged on",
                         "a study run with --demos FILE (a labelled file sharing no state with the sets), or a winner "
                         "with k 0")
    path = presets_dir / f"{name}.json"
    cal_path = presets_dir / f"{name}-calibration.json"
    check_writable(path, False, "a preset is never overwritten: choose another name")
    if w["calibration"] != "none":
        check_writable(cal_path, False, "a preset's calibration file is never overwritten: choose another name")
    demos = None
    if w["k"] > 0 and demos_file is not None:
        demos = {"path": _rel(Path(demos_file), presets_dir), "sha256": sha256_file(Path(demos_file)), "seed": seed}
    cal_file = None
    if w["calibration"] != "none":
        gold: dict[str, str] = {}
        for s in sets:
            for lb in s.labels:
                if gold.setdefault(lb.id, lb.label) != lb.label:
                    raise InputError(str(s.path), None, "id", f"row {lb.id!r} is labelled differently in another set",
                                     "row ids unique across the study's sets")
        cal = fitter(w["calibration"], gold)(winner_records)
        cal.meta.update({"fitted_by": "benchmarks/quality_study.py --write-preset",
                         "study": {"path": str(report_path), "sha256": sha256_file(report_path)},
                         "sets": [{"path": str(s.path), "sha256": s.sha256} for s in sets]})
        sha = write_calibration(cal, cal_path)
        cal_file = {"path": cal_path.name, "sha256": sha}
    prov = {"study": {"path": str(report_path), "sha256": sha256_file(report_path)}, "metric": w["metric"],
            "metric_words": w["metric_words"], "value": w["value"], "per_set": w["per_set"],
            "configuration": w["name"], "model": report.get("model"),
            "sets": [{"name": s.name, "path": str(s.path), "sha256": s.sha256} for s in sets]}
    slots, norm = READOUTS[w["readout"]]  # the study's readout name → --slots and --sequence-norm
    body = preset_body(name, w["layout"], slots, w["k"], demos, w["calibration"], cal_file, prov, norm)
    write_preset(path, body)
    return path
