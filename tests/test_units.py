"""Sizes as a user writes them (hfkv/units.py): a budget needs a unit; a fractional byte count as vLLM
prints it is floored and said once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hfkv.units import parse_size

from _helpers import run_cli as run


# -- item 14: budgets ----------------------------------------------------------------------------------


def test_a_budget_without_a_unit_is_refused_not_read_as_bytes():
    with pytest.raises(Exception) as err:
        parse_size("60")
    assert "no unit" in str(err.value) and "60GiB" in str(err.value)
    assert parse_size("60B") == 60 and parse_size("1073741824") == 2**30 and parse_size("1KiB") == 1024
    result = run(str(Path(__file__).resolve().parents[1] / "fixtures" / "meta-llama__Llama-2-7b-hf"), "--budget", "60")
    assert result.exit_code == 2 and "no unit" in result.stderr


def test_a_budget_as_vllm_prints_it_is_floored_to_bytes_and_said_once():
    # vLLM prints "Available KV cache memory: 6.51 GiB": 6.51 × 2^30 = 6,990,059,274.24 → 6,990,059,274 B.
    notes: list[str] = []
    assert parse_size("6.51GiB", notes) == 6_990_059_274
    assert notes == ["6.51GiB = 6,990,059,274.24 bytes, floored to 6,990,059,274"]
    assert parse_size("1.5KiB") == 1536  # whole: nothing to say
    with pytest.raises(Exception, match="whole number of bytes"):
        parse_size("0.3B")
    llama = str(Path(__file__).resolve().parents[1] / "fixtures" / "meta-llama__Meta-Llama-3.1-8B")
    result = run(llama, "--budget", "6.51GiB", "--context", "4k", "--format", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["budget_bytes"] == 6_990_059_274
    assert result.stderr.count("floored to 6,990,059,274") == 1
