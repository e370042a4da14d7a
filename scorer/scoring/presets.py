"""Presets: a named, committed scoring configuration (``--preset NAME``; ``Scorer(preset=NAME)``).

A preset is a JSON file ``scorer/data/presets/NAME.json`` (kind ``preset``, format :data:`PRESET_FORMAT`, the report
envelope of :mod:`scorer.formats.envelope` first) that names how to score:

* ``layout`` (``state-major`` or ``question-major``), ``slots`` (the readout: one of :data:`scorer.core.checks.SLOTS`)
  and ``demos_k`` (demonstrations per decision, 0 for none); with ``slots`` ``sequence`` or ``json``, optionally
  ``sequence_norm`` (``sum`` or ``mean``; when absent, the slots' default:
  :func:`scorer.core.checks.check_sequence_norm`), a key no other readout may carry;
* ``demos``: the demonstrations file (``path`` relative to the preset's folder, its ``sha256`` and the ``seed``
  that orders its candidates), required exactly when ``demos_k`` > 0;
* ``calibration``: its ``kind`` (``none``, ``prior`` or ``bias``) and, unless ``none``, the calibration ``file``
  (``path`` and ``sha256``; ``semif calibrate prior|bias`` writes such files);
* ``provenance``: where the choice came from — the quality study's report (``path``, ``sha256``), the metric
  that picked the winner and its value, the model and the sets it was measured on.

**Demonstrations are never rows of the set a preset is evaluated on.** The study writes a preset with
demonstrations only from a demonstrations file that it checked to share no state (by sha256 of the state:
:func:`scorer.formats.echo.state_sha256`) with any of its evaluation sets, and every scorer that runs a preset with
demonstrations refuses a row whose state is the state of one of the preset's demonstrations
(:func:`check_states_disjoint`): a preset's numbers can only be reproduced on rows it was not shown.

Explicit options override a preset's values (``--layout``, ``--slots``, ``--demos``, ``--demos-k``, ``--seed``,
``--calibration``); every record of a run with a preset says which one ran (``preset``: name, path, sha256) and
the run's configuration hash names the preset's sha256. Files named by a preset are checked against the sha256
the preset recorded before anything loads: a changed file is refused, never silently used.

Plain data only: nothing here imports torch, a backend or the scoring runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorer.core.checks import SEQUENCE_NORMS, SLOTS, check_sequence_norm
from scorer.core.errors import InputError, brief
from scorer.core.hashing import sha256_hex
from scorer.core.io import write_atomic
from scorer.core.package_data import data_path
from scorer.formats.echo import state_sha256
from scorer.formats.envelope import carried_inputs, envelope_problems, make_report, read_json_file, report_bytes
from scorer.prompting.layouts import LAYOUTS

PRESET_KIND = "preset"
PRESET_FORMAT = "semif-preset-v1"
CALIBRATION_KINDS = ("none", "prior", "bias")
PRESETS_DIR = data_path("presets")
"""Where ``--preset NAME`` looks: the package's ``scorer/data/presets`` (package data: a wheel has them too)."""
NAME_RULE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
"""A preset's name: lower-case letters, digits, ``.``, ``_``, ``-`` (it is a file name)."""
_BODY_KEYS = ("name", "layout", "slots", "demos_k", "demos", "calibration", "provenance")


@dataclass(frozen=True)
class Preset:
    """A loaded, checked preset: the settings it names and the files it points to (resolved, hashes verified)."""

    name: str
    path: Path
    """The preset file itself."""
    sha256: str
    """sha256 of the preset file's bytes."""
    layout: str
    slots: str
    demos_k: int
    demos_path: Path | None
    """The demonstrations file (None when ``demos_k`` is 0)."""
    demos_seed: int
    calibration_kind: str
    calibration_path: Path | None
    """The calibration file (None for kind ``none``)."""
    provenance: dict[str, Any] = field(default_factory=dict)
    sequence_norm: str | None = None
    """``sequence`` readout: how option scores are normalised by length (None for the other readouts)."""

    def block(self) -> dict[str, Any]:
        """The ``preset`` block of every record of a run with this preset."""
        return {"name": self.name, "path": str(self.path), "sha256": self.sha256}

    def fill(self, chosen: Mapping[str, Any], *, demos_loaded: bool = False,
             calibration: bool = True) -> dict[str, Any]:
        """The one rule by which a preset fills options, for the API and the command line alike: ``chosen`` maps
        option names (:data:`FILLED`) to the caller's values, None meaning "not given"; the result keeps every
        given value and takes the rest from the preset.

        The preset's ``sequence_norm`` goes with its readout only (not onto another ``slots`` the caller chose);
        its demonstrations' ``demos_k`` and ``seed`` also apply to a demonstrations file given explicitly, but not
        to demonstrations already built (``demos_loaded``); ``calibration=False`` leaves the calibration alone
        (an in-run ``--batch-calibrate`` replaces the preset's file)."""
        out = dict(chosen)

        def take(key: str, value: Any) -> None:
            if out.get(key) is None:
                out[key] = value

        take("slots", self.slots)
        if out["slots"] == self.slots:
            take("sequence_norm", self.sequence_norm)
        take("layout", self.layout)
        if self.demos_path is not None:
            take("demos", self.demos_path)
            if not demos_loaded:
                take("demos_k", self.demos_k)
                take("seed", self.demos_seed)
        if calibration:
            take("calibration", self.calibration_path)
        return out


FILLED = ("layout", "slots", "sequence_norm", "demos", "demos_k", "seed", "calibration")
"""The options a preset fills (:meth:`Preset.fill`)."""


def preset_path(name: Any, option: str = "preset", presets_dir: Path = PRESETS_DIR, model: Any = None) -> Path:
    """The file ``name`` stands for: a preset name (``accurate-qwen2.5-0.5b`` →
    ``scorer/data/presets/accurate-qwen2.5-0.5b.json``) or a path to a preset file (anything ending in ``.json``).
    A name
    with no file of its own is looked up for the model being scored: ``accurate`` with model ``qwen2.5-0.5b`` →
    ``accurate-qwen2.5-0.5b.json`` (a study's winner is per model, so ``--preset accurate`` means "this model's
    accurate preset"). An unknown name is an :class:`InputError` naming ``option`` and listing the presets there
    are."""
    if isinstance(name, Path) or (isinstance(name, str) and name.endswith(".json")):
        return Path(name)
    if not isinstance(name, str) or not NAME_RULE.match(name):
        raise InputError(option, None, None, f"{brief(name)} is not a preset name",
                         "a name such as accurate (scorer/data/presets/NAME.json) or a path to a preset .json file")
    path = presets_dir / f"{name}.json"
    if path.is_file():
        return path
    per_model = presets_dir / f"{name}-{model}.json" if isinstance(model, str) and NAME_RULE.match(
        f"{name}-{model}") else None
    if per_model is not None and per_model.is_file():
        return per_model
    have = _preset_names(presets_dir)
    tried = f"{path} not found" + (f", nor {per_model}" if per_model is not None else "")
    raise InputError(option, None, None, f"no preset named {name!r} ({tried})",
                     f"one of: {', '.join(have)}" if have else
                     "a preset written by benchmarks/quality_study.py --write-preset (there are none yet)")


def _preset_names(presets_dir: Path) -> list[str]:
    """The presets in a folder (files of kind ``preset``; the calibration files beside them are not presets)."""
    import orjson

    names = []
    for p in sorted(presets_dir.glob("*.json")) if presets_dir.is_dir() else []:
        try:
            doc = orjson.loads(p.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue  # a broken file is reported when it is asked for by name, not in a list of suggestions
        if isinstance(doc, dict) and doc.get("kind") == PRESET_KIND:
            names.append(p.stem)
    return names


def _field(doc: dict[str, Any], key: str, where: str) -> Any:
    if key not in doc:
        raise InputError(where, None, key, "missing", f"a preset body with {', '.join(_BODY_KEYS)}")
    return doc[key]


def _file(raw: Any, path: str, name: str, base: Path) -> tuple[Path, str]:
    """A ``{"path", "sha256"}`` entry: the file resolved against the preset's folder, its bytes' sha256 checked."""
    if not isinstance(raw, dict):
        raise InputError(path, None, name, f"{brief(raw)}", 'an object {"path": ..., "sha256": ...}')
    rel, sha = raw.get("path"), raw.get("sha256")
    if not isinstance(rel, str) or not rel:
        raise InputError(path, None, f"{name}.path", f"{brief(rel)}", "a file path relative to the preset's folder")
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise InputError(path, None, f"{name}.sha256", f"{brief(sha)}", "64 lower-case hex digits")
    target = base / rel
    if not target.is_file():
        raise InputError(path, None, f"{name}.path", f"{target} not found", "a file next to the preset that exists")
    now = sha256_hex(target.read_bytes())
    if now != sha:
        raise InputError(path, None, f"{name}.sha256", f"{target} has sha256 {now[:12]}… now, the preset recorded "
                         f"{sha[:12]}…", "the very file the preset was written with (write a new preset instead)")
    return target, sha


def load_preset(name: Any, option: str = "preset", presets_dir: Path = PRESETS_DIR, model: Any = None) -> Preset:
    """Read and check a preset (:func:`preset_path` finds it, for ``model`` when the name has no file of its own).
    Every problem is an :class:`InputError` naming the file and the field (exit 2 on the command line)."""
    p = preset_path(name, option, presets_dir, model)
    where = str(p)
    data, doc = read_json_file(p, "a preset file (scorer/data/presets/NAME.json)")
    if doc.get("kind") != PRESET_KIND:
        raise InputError(where, None, "kind", f"{brief(doc.get('kind'))}", f"{PRESET_KIND!r}")
    if doc.get("format") != PRESET_FORMAT:
        raise InputError(where, None, "format", f"{brief(doc.get('format'))}", f"{PRESET_FORMAT!r}")
    problems = envelope_problems(doc)
    if problems:
        raise InputError(where, None, None, problems[0], "the report envelope (scorer/formats/envelope.py) first")
    pname = _field(doc, "name", where)
    if not isinstance(pname, str) or not NAME_RULE.match(pname):
        raise InputError(where, None, "name", f"{brief(pname)}", "lower-case letters, digits, '.', '_', '-'")
    layout = _field(doc, "layout", where)
    if layout not in LAYOUTS:
        raise InputError(where, None, "layout", f"{brief(layout)}", f"one of {', '.join(LAYOUTS)}")
    slots = _field(doc, "slots", where)
    if slots not in SLOTS:
        raise InputError(where, None, "slots", f"{brief(slots)}", f"one of {', '.join(SLOTS)}")
    norm = doc.get("sequence_norm")
    if slots in ("sequence", "json"):
        norm = check_sequence_norm(None, slots) if norm is None else norm
        if norm not in SEQUENCE_NORMS:
            raise InputError(where, None, "sequence_norm", f"{brief(norm)}", f"one of {', '.join(SEQUENCE_NORMS)}")
    elif norm is not None:
        raise InputError(where, None, "sequence_norm", f"given with slots {slots!r}",
                         "no sequence_norm key unless slots is 'sequence' or 'json'")
    k = _field(doc, "demos_k", where)
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InputError(where, None, "demos_k", f"{brief(k)}", "an integer >= 0")
    base = p.parent
    demos = _field(doc, "demos", where)
    demos_path: Path | None = None
    seed = 0
    if k > 0:
        demos_path, _ = _file(demos, where, "demos", base)
        seed = demos.get("seed")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputError(where, None, "demos.seed", f"{brief(seed)}", "an integer >= 0")
    elif demos is not None:
        raise InputError(where, None, "demos", "given with demos_k 0", "null when the preset shows no demonstrations")
    cal = _field(doc, "calibration", where)
    if not isinstance(cal, dict) or cal.get("kind") not in CALIBRATION_KINDS:
        raise InputError(where, None, "calibration.kind", f"{brief(cal.get('kind') if isinstance(cal, dict) else cal)}",
                         f"one of {', '.join(CALIBRATION_KINDS)}")
    cal_path: Path | None = None
    if cal["kind"] != "none":
        cal_path, _ = _file(cal.get("file"), where, "calibration.file", base)
    elif cal.get("file") is not None:
        raise InputError(where, None, "calibration.file", "given with kind none", "null")
    prov = _field(doc, "provenance", where)
    if not isinstance(prov, dict):
        raise InputError(where, None, "provenance", f"{brief(prov)}", "an object (study report, metric, value)")
    return Preset(pname, p, sha256_hex(data), layout, slots, k, demos_path, seed, cal["kind"],
                  cal_path, prov, norm)


def preset_body(name: str, layout: str, slots: str, demos_k: int, demos: Mapping[str, Any] | None,
                calibration_kind: str, calibration_file: Mapping[str, Any] | None,
                provenance: Mapping[str, Any], sequence_norm: str | None = None) -> dict[str, Any]:
    """A preset's body (paths in ``demos``/``calibration_file`` already relative to the preset's folder);
    ``sequence_norm`` only with slots ``sequence`` or ``json`` (written then, so the file says which normalisation
    ran)."""
    if not NAME_RULE.match(name):
        raise InputError("--write-preset", None, None, f"{brief(name)} is not a preset name",
                         "lower-case letters, digits, '.', '_', '-'")
    return {"name": name, "layout": layout, "slots": slots,
            **({"sequence_norm": sequence_norm} if slots in ("sequence", "json") and sequence_norm else {}),
            "demos_k": demos_k,
            "demos": dict(demos) if demos is not None else None,
            "calibration": {"kind": calibration_kind,
                            "file": dict(calibration_file) if calibration_file is not None else None},
            "provenance": dict(provenance)}


def write_preset(path: Path, body: Mapping[str, Any]) -> str:
    """Write a preset file create-only (never over an existing one), atomically; returns its sha256. The envelope's
    ``inputs`` are the files the body cites (the study report, the demonstrations, the calibration file)."""

    data = report_bytes(make_report(PRESET_KIND, PRESET_FORMAT, carried_inputs(body), body))
    write_atomic(path, data, False, "a preset is never overwritten: choose another name")
    return sha256_hex(data)


def check_states_disjoint(demo_states: Iterable[tuple[str, Any]], rows: Sequence[Any], preset: Preset) -> None:
    """Refuse rows whose state is the state of one of the preset's demonstrations (``demo_states``: ``(demo id,
    state)``; ``rows``: decisions with ``id``, ``state`` and ``source``): a preset is never run on rows it shows."""
    shown = {state_sha256(state): did for did, state in demo_states}
    for d in rows:
        hit = shown.get(state_sha256(d.state))
        if hit is not None:
            where, _, line = str(d.source).rpartition(":")
            raise InputError(where or str(d.source), int(line) if line.isdigit() else None, "state",
                             f"row {d.id!r} has the state of demonstration {hit!r} of preset {preset.name!r} "
                             f"({preset.demos_path})",
                             "rows the preset's demonstrations do not show (score them without the preset, or "
                             "with --demos of another file)")


def with_preset(records: Iterable[dict[str, Any]], preset: Preset | None) -> Iterator[dict[str, Any]]:
    """The records, each with its ``preset`` block; unchanged without a preset."""
    for rec in records:
        yield rec if preset is None else {**rec, "preset": preset.block()}
