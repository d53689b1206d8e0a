"""The verdict (hfkv/planning/verdict.py) when nothing fits: a budget too small for one token, weights
larger than the GPU, said in every format."""

from __future__ import annotations

import json

import pytest

from _helpers import run_cli as run, SMALL_LLAMA as LLAMA, write_named_config as write_config


# -- item 14: budgets ----------------------------------------------------------------------------------


def test_a_budget_too_small_for_one_token_says_it_does_not_fit(tmp_path):
    # 1 KiB = 1024 B < 2048 B, one token of one request: not even one token fits.
    result = run(write_config(tmp_path, "m", LLAMA), "--budget", "1KiB", "--batch", "1")
    assert "does not fit" in result.stdout and ": 0 tokens" not in result.stdout


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_weights_that_do_not_fit_are_said_in_every_format(tmp_path, fmt):
    # An H100's CUDA total 85,029,158,912 B: vLLM 0.34 (the newest modelled, utilization 1.0) may use all of it,
    # < 200 × 10^9 B of weights.
    result = run(write_config(tmp_path, "m", LLAMA), "--gpu", "H100", "--weights-bytes", "200GB", "--format", fmt)
    assert "the weights do not fit" in result.stdout
    if fmt == "json":
        serving = json.loads(result.stdout)["serving"]
        assert serving["weights_fit"] is False and serving["usable_bytes"] == 85_029_158_912
