"""benchmarks/llamacpp_batch_probe.py: its variants change only the backend settings they name, inside the block."""

from __future__ import annotations

from benchmarks import llamacpp_batch_probe as probe
from scorer.backends import llamacpp_backend as module


def _rules() -> tuple[bool, bool, int, int]:
    return module.REPACK_WEIGHTS, module.UNIFIED_KV, module.MIN_PIECE, module.MIN_OUTPUTS


def test_each_variant_turns_off_the_rules_it_names_inside_the_block_only() -> None:
    shipped = _rules()
    assert shipped == (False, False, 8, 8)
    with probe.variant("repack") as settings:
        assert settings == {"REPACK_WEIGHTS": True} and _rules() == (True, False, 8, 8)
    with probe.variant("unified"):
        assert _rules() == (False, True, 8, 8)
    with probe.variant("short-pieces"):
        assert _rules() == (False, False, 1, 8)
    with probe.variant("few-outputs"):
        assert _rules() == (False, False, 8, 1)
    with probe.variant("before"):
        assert _rules() == (True, True, 1, 1)
    with probe.variant("canonical") as settings:
        assert settings == {} and _rules() == shipped
    assert _rules() == shipped


def test_unknown_variants_are_refused(tmp_path, capsys):
    assert probe.main(["--variants", "fast", "--output", str(tmp_path / "p.json")]) == 2
    expected = "--variants: expected some of canonical, repack, unified, short-pieces, few-outputs, before"
    assert expected in capsys.readouterr().err
