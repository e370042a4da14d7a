"""What the quality study (benchmarks/quality_study.py) scores: its sets, their group-disjoint folds, the grid of
configurations, the scoring runs each configuration needs and the demonstrations each run may show.

* **Folds.** A set's rows are dealt into folds by group (:func:`scorer.calibration.temperature.group_folds`: groups
  sorted by the sha256 of their name, round-robin), so every row of a group is in one fold. A row's group is the
  first of ``--group-field`` (default ``group``, then ``state_id``: a state of the shape workload is one group) it
  carries; a row with none of them is refused (file:line:field), never given a group of its own silently.
* **Demonstrations out of fold.** Without ``--demos FILE`` a configuration with k > 0 is scored once per fold: run
  ``f`` shows demonstrations drawn only from the rows *outside* fold ``f`` (:func:`fold_demos`, a
  :class:`scorer.prompting.demos.Demos` of those rows, whose own rule also keeps a row's group out of its picks), and
  the
  numbers of fold ``f`` come from that run alone: its held-out rows for the metrics, its other rows to fit the
  calibration. No record used for fold ``f`` was scored with a demonstration from fold ``f``. With ``--demos FILE``
  (a labelled file checked to share no state with any set) the records do not depend on the fold: one run per
  configuration, as a preset with that file would run.
* **Readouts.** Every value of :data:`scorer.core.checks.SLOTS`, in every layout and with every k; a readout that
  cannot render some row of a set (``ids``: an option id that is not one token) is listed as skipped for that set
  with the renderer's own words.

Pure planning: no model is loaded here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorer.calibration.temperature import DEFAULT_FOLDS, group_folds
from scorer.core.checks import SLOTS
from scorer.core.errors import InputError, brief
from scorer.core.hashing import sha256_file
from scorer.evaluation import metrics
from scorer.formats.echo import state_sha256
from scorer.formats.rows import Decision, load_decisions
from scorer.prompting.demos import Demos, demo_of, load_demos
from scorer.prompting.layouts import LAYOUTS

ROOT = Path(__file__).resolve().parent.parent
SETS = {"authored": ROOT / "data/eval/authored.jsonl", "boundary": ROOT / "data/eval/boundary.jsonl",
        "shape-full": ROOT / "data/workloads/shape-full.jsonl"}
"""The decision sets of issue #22 by name (any other JSONL path is accepted too)."""
DEFAULT_GROUP_FIELDS = ("group", "state_id")
READOUTS: dict[str, tuple[str, str | None]] = {
    **{slots: (slots, None) for slots in SLOTS if slots != "sequence"},
    "sequence": ("sequence", "sum"), "sequence-mean": ("sequence", "mean")}
"""The study's readout names → (``--slots``, ``--sequence-norm``): ``sequence`` keeps the name of the sum, the
default, so reports written before ``sequence-mean`` joined the grid resume unchanged."""
K_VALUES = (0, 2, 4, 8)
CALIBRATIONS = ("none", "prior", "bias")
"""none: the raw readout; prior: the label-free prior fitted on the training folds' records; bias: offsets fitted on
the training folds' labelled records."""
DEFAULT_SEED = 0
ALL_FOLDS = None
"""The ``fold`` of a run whose records do not depend on the fold (k = 0, or demonstrations from a file)."""


@dataclass
class StudySet:
    """One labelled decision set, its groups and its folds."""

    name: str
    path: Path
    sha256: str
    decisions: list[Decision]
    lines: list[bytes]
    """Each row's line of the file, as it is (what a fold's demonstrations are hashed from)."""
    labels: list[metrics.Label]
    folds: int
    fold_of_row: list[int]

    def rows_in(self, fold: int) -> list[int]:
        return [i for i, f in enumerate(self.fold_of_row) if f == fold]

    def rows_outside(self, fold: int) -> list[int]:
        return [i for i, f in enumerate(self.fold_of_row) if f != fold]

    def describe(self) -> dict[str, Any]:
        groups: dict[int, list[str]] = {}
        for lb, f in zip(self.labels, self.fold_of_row, strict=True):
            groups.setdefault(f, [])
            if lb.group not in groups[f]:
                groups[f].append(lb.group)
        return {"name": self.name, "path": str(self.path), "sha256": self.sha256, "rows": len(self.decisions),
                "groups": len({lb.group for lb in self.labels}), "folds": self.folds,
                "fold_groups": [sorted(groups.get(f, [])) for f in range(self.folds)]}


def set_path(name: str) -> Path:
    """The file of set ``name``; a named set's path is relative to the working directory when it lies under it (the
    repository root, as the docs run it), so the report, the records and a preset name no machine's checkout."""
    path = SETS.get(name, Path(name))
    if path.is_absolute() and path.resolve().is_relative_to(Path.cwd().resolve()):
        return path.resolve().relative_to(Path.cwd().resolve())
    return path


def load_set(name: str, group_fields: tuple[str, ...] = DEFAULT_GROUP_FIELDS, folds: int = DEFAULT_FOLDS) -> StudySet:
    """A set by name (:data:`SETS`) or path, every row validated (:func:`scorer.formats.rows.load_decisions`), labelled
    and
    grouped. Raises :class:`InputError` naming file, line and field."""
    path = set_path(name)
    decisions = load_decisions(path)  # refuses blank lines: row i is line i + 1
    lines = path.read_bytes().splitlines()
    src = str(path)
    labels: list[metrics.Label] = []
    for n, d in enumerate(decisions, start=1):
        label = d.extra.get("label")
        if label is None:
            raise InputError(src, n, "label", "missing", "a labelled row (the study measures decisions against labels)")
        if label not in d.option_ids:
            raise InputError(src, n, "label", f"{brief(label)} is not one of the row's option ids",
                             f"one of {', '.join(d.option_ids)}")
        fields = {**d.extra, "id": d.id}  # `--group-field id`: every row its own group
        group = next((fields[f] for f in group_fields if fields.get(f) is not None), None)
        if group is None:
            raise InputError(src, n, group_fields[0], "missing",
                             f"a field naming the row's group ({', '.join(group_fields)}; rows of one group are kept "
                             "in one fold): choose the field with --group-field")
        labels.append(metrics.Label(d.id, label, str(d.extra.get("family", "all")), str(group), tuple(d.option_ids)))
    n_groups = len({lb.group for lb in labels})
    if n_groups < 2:
        raise InputError(src, None, group_fields[0], f"{n_groups} group among the rows",
                         "at least 2 groups: folds are group-disjoint")
    k = max(2, min(folds, n_groups))
    fold_of = group_folds([lb.group for lb in labels], k)
    return StudySet(Path(name).stem if name not in SETS else name, path, sha256_file(path), decisions, lines, labels,
                    k, [fold_of[lb.group] for lb in labels])


def check_demos_disjoint(demos: Demos, sets: list[StudySet]) -> None:
    """Refuse a demonstrations file that shows a state of a set the study evaluates (by sha256 of the state)."""
    where = str(demos.source.get("path"))
    rows = {state_sha256(d.state): (s.name, d.id) for s in sets for d in s.decisions}
    for n, (did, state) in enumerate(demos.states(), start=1):
        hit = rows.get(state_sha256(state))
        if hit is not None:
            raise InputError(where, n, "state", f"demonstration {did!r} has the state of row {hit[1]!r} of set "
                             f"{hit[0]}", "demonstrations whose states no evaluated row has (a file disjoint from "
                             "the sets)")


def load_file_demos(path: str, k: int, seed: int, sets: list[StudySet]) -> Demos:
    """``--demos FILE`` loaded (file:line:field errors) and checked disjoint from every set."""
    demos = load_demos(path, k, seed)
    check_demos_disjoint(demos, sets)
    return demos


def fold_demos(s: StudySet, fold: int, k: int, seed: int) -> Demos:
    """Demonstrations for run ``fold`` of ``s``: the rows outside the fold, nothing else (module docstring)."""
    train = s.rows_outside(fold)
    demos = [demo_of(s.decisions[i], str(s.path), i + 1) for i in train]
    sha = hashlib.sha256(b"".join(s.lines[i] + b"\n" for i in train)).hexdigest()
    return Demos(demos, k, seed, {"path": f"{s.path} (rows outside fold {fold})", "sha256": sha})


@dataclass(frozen=True)
class Config:
    """One configuration of the grid on one set (the table has a row per calibration of it)."""

    set: str
    layout: str
    k: int
    readout: str

    @property
    def key(self) -> str:
        return f"{self.set}.{self.layout}.k{self.k}.{self.readout}"


@dataclass(frozen=True)
class RunSpec:
    """One scoring run: a configuration on one set, for one fold (or all), over some of its rows."""

    config: Config
    fold: int | None
    rows: tuple[int, ...]
    held_only: bool = False
    """Only the fold's own rows (no calibration is fitted on the others): a run of its own, under its own name."""

    @property
    def key(self) -> str:
        where = "all" if self.fold is None else f"fold{self.fold}{'-held' if self.held_only else ''}"
        return f"{self.config.key}.{where}"


@dataclass
class Plan:
    """The grid, what of it is skipped and why, and the runs that score the rest."""

    configs: list[Config] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    runs: list[RunSpec] = field(default_factory=list)

    def runs_of(self, c: Config) -> list[RunSpec]:
        return [r for r in self.runs if r.config == c]

    def decisions(self) -> int:
        return sum(len(r.rows) for r in self.runs)


def check_grid(layouts: list[str], ks: list[int], readouts: list[str], calibrations: list[str]) -> None:
    """Every value of the grid one the code knows (the readouts are :data:`READOUTS`)."""
    for flag, values, known in (("--layouts", layouts, LAYOUTS), ("--readouts", readouts, tuple(READOUTS)),
                                ("--calibrations", calibrations, CALIBRATIONS)):
        bad = [v for v in values if v not in known]
        if bad or not values:
            raise InputError(flag, None, None, f"{bad[0]!r} is not one" if bad else "empty",
                             f"a comma list of {', '.join(known)}")
    bad_k = [k for k in ks if k < 0]
    if bad_k or not ks:
        raise InputError("--k", None, None, f"{bad_k[0]}" if bad_k else "empty", "a comma list of integers >= 0")


def plan(sets: list[StudySet], layouts: list[str], ks: list[int], readouts: list[str], calibrations: list[str],
         demos_from_file: bool, unusable: dict[tuple[str, str, str], str] | None = None,
         ks_for: dict[str, list[int]] | None = None) -> Plan:
    """The configurations and their runs (module docstring). ``unusable``: (set, layout, readout) → why a readout
    cannot render some row of the set (found by rendering every row on the model's tokenizer), skipped with it.
    ``ks_for``: a layout's own k values in place of ``ks`` (``--k-for state-major=0``: a layout where
    demonstrations were measured to cost many times the tokens, kept to its baseline)."""
    check_grid(layouts, ks, readouts, calibrations)
    for layout, its_ks in (ks_for or {}).items():
        if layout not in layouts:
            raise InputError("--k-for", None, None, f"{layout!r} is not in --layouts", f"one of {', '.join(layouts)}")
        check_grid([layout], its_ks, readouts, calibrations)
    out = Plan()
    fitted = any(c != "none" for c in calibrations)
    for s in sets:
        for layout in layouts:
            for k in (ks_for or {}).get(layout, ks):
                for readout in readouts:
                    c = Config(s.name, layout, k, readout)
                    why = (unusable or {}).get((s.name, layout, readout))
                    if why is not None:
                        out.skipped.append({**_named(c), "reason": why})
                        continue
                    out.configs.append(c)
                    everything = tuple(range(len(s.decisions)))
                    if k == 0 or demos_from_file:
                        out.runs.append(RunSpec(c, ALL_FOLDS, everything))
                        continue
                    for f in range(s.folds):  # the fold's training rows too when a calibration is fitted on them
                        out.runs.append(RunSpec(c, f, everything) if fitted else
                                        RunSpec(c, f, tuple(s.rows_in(f)), held_only=True))
    return out


def _named(c: Config) -> dict[str, Any]:
    return {"set": c.set, "layout": c.layout, "k": c.k, "readout": c.readout}
