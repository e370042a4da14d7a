"""``--preset NAME`` on the command line (``semif score``, ``semif ask``): a committed configuration
(:mod:`scorer.presets`) whose values fill the options the command line did not give."""

from __future__ import annotations

import argparse
from typing import Any

from scorer.cli.options import given
from scorer.presets import Preset, check_states_disjoint, load_preset


def add_preset_arg(p: argparse.ArgumentParser) -> None:
    """``--preset NAME|FILE.json``."""
    p.add_argument("--preset", metavar="NAME|FILE.json",
                   help="score with a committed configuration (data/presets/NAME.json: layout, demonstrations, "
                        "readout, calibration, written by benchmarks/quality_study.py --write-preset); options given "
                        "explicitly override its values, and every record names the preset")


def preset_args(args: argparse.Namespace) -> Preset | None:
    """Load ``--preset`` (checked, with its files' sha256, before any model loads) and fill from it every preset-able
    option the command line left out (``--layout``, ``--slots``, ``--demos`` with ``--demos-k``/``--seed``,
    ``--calibration`` unless ``--batch-calibrate`` asks for an in-run one). None without ``--preset``."""
    if getattr(args, "preset", None) is None:
        return None
    preset = load_preset(args.preset, "--preset")
    named = given(args)
    fill: dict[str, Any] = {"layout": preset.layout, "slots": preset.slots}
    if preset.demos_path is not None:  # its k and seed also apply to demonstrations given explicitly
        fill.update(demos=str(preset.demos_path), demos_k=preset.demos_k, seed=preset.demos_seed)
    if preset.calibration_path is not None and not getattr(args, "batch_calibrate", None):
        fill["calibration"] = str(preset.calibration_path)
    for dest, value in fill.items():
        if dest not in named and hasattr(args, dest):
            setattr(args, dest, value)
    # The preset's normalisation goes with its readout: not onto a --slots the command line chose instead.
    # (--sequence-norm has no default: None is "not given".)
    if preset.sequence_norm is not None and getattr(args, "sequence_norm", "") is None and args.slots == preset.slots:
        args.sequence_norm = preset.sequence_norm
    return preset


def check_rows(preset: Preset | None, demos: Any, decisions: list[Any]) -> None:
    """Refuse rows that share a state with the preset's own demonstrations (when the run shows them)."""
    if preset is not None and demos is not None and preset.demos_path is not None \
            and demos.source.get("path") == str(preset.demos_path):
        check_states_disjoint(demos.states(), decisions, preset)
