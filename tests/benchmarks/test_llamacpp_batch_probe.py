"""benchmarks/llamacpp_batch_probe.py: its variants change only the model parameters they name, inside the block."""

from __future__ import annotations

import llama_cpp

from benchmarks import llamacpp_batch_probe as probe


def test_no_repack_turns_weight_repacking_off_for_loads_inside_the_block_only():
    assert llama_cpp.llama_model_default_params().use_extra_bufts is True
    with probe.variant("no-repack") as settings:
        assert settings == {"use_extra_bufts": False}
        assert llama_cpp.llama_model_default_params().use_extra_bufts is False
    with probe.variant("default") as settings:
        assert settings == {} and llama_cpp.llama_model_default_params().use_extra_bufts is True
    assert llama_cpp.llama_model_default_params().use_extra_bufts is True


def test_unknown_variants_are_refused(tmp_path, capsys):
    assert probe.main(["--variants", "fast", "--output", str(tmp_path / "p.json")]) == 2
    assert "--variants: expected some of default, no-repack" in capsys.readouterr().err
