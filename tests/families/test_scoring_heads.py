"""Scoring heads (mappings/scoring_heads.py): a reward model is sized like its language model, with a note."""

from __future__ import annotations

from _helpers import load, report as inspect


def test_reward_head_is_sized_with_a_note():
    data = dict(load("Qwen__Qwen2.5-7B"), architectures=["Qwen2ForRewardModel"])
    rep = inspect(data)
    assert rep.mapper == "scoring_heads.scoring_head"
    assert rep.alpha_bytes_per_token == 28 * 2 * 4 * 128 * 2 == 57344  # Qwen2.5-7B's decoder
    assert any("reward head" in note for note in rep.notes)
