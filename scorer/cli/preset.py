"""``--preset NAME`` on the command line (``semif score``, ``semif ask``): a committed configuration
(:mod:`scorer.scoring.presets`) whose values fill the options the command line did not give."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from scorer.cli.arguments import given
from scorer.scoring.presets import FILLED, Preset, check_states_disjoint, load_preset


def preset_args(args: argparse.Namespace) -> Preset | None:
    """Load ``--preset`` (checked, with its files' sha256, before any model loads) and fill from it every preset-able
    option the command line left out (``--layout``, ``--slots``, ``--demos`` with ``--demos-k``/``--seed``,
    ``--calibration`` unless ``--batch-calibrate`` asks for an in-run one). None without ``--preset``."""
    if getattr(args, "preset", None) is None:
        return None
    preset = load_preset(args.preset, "--preset", model=getattr(args, "model", None))
    named = given(args)
    dests = [d for d in FILLED if hasattr(args, d)]
    filled = preset.fill({d: getattr(args, d) if d in named else None for d in dests},
                         calibration=not getattr(args, "batch_calibrate", None))
    for dest in dests:
        if dest not in named and filled.get(dest) is not None:
            value = filled[dest]
            setattr(args, dest, str(value) if isinstance(value, Path) else value)
    return preset


def check_rows(preset: Preset | None, demos: Any, decisions: list[Any]) -> None:
    """Refuse rows that share a state with the preset's own demonstrations (when the run shows them)."""
    if preset is not None and demos is not None and preset.demos_path is not None \
            and demos.source.get("path") == str(preset.demos_path):
        check_states_disjoint(demos.states(), decisions, preset)
