"""Sizes as a user writes them (hfkv/units.py): a budget needs a unit; a fractional byte count as vLLM
prints it is floored and said once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hfkv.units import parse_size

from _helpers import hfkv_process, run_cli as run


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


# -- issue 31: figures past any memory or context are one line, never an internal error ----------------


LLAMA2 = str(Path(__file__).resolve().parents[1] / "fixtures" / "meta-llama__Llama-2-7b-hf")


@pytest.mark.parametrize("figure", ["9" * 400, "9" * 5000 + "GiB", "1048577TiB"], ids=["400-digits", "5000-digits", "past-1-EiB"])
def test_a_budget_past_any_memory_is_one_line(figure):
    # 400 digits overflowed the float arithmetic ("internal error (OverflowError ...)"), 5,000 digits
    # Python's integer conversion limit; 1,048,577 TiB = 2^60 + 2^40 B is just past 1 EiB
    result = hfkv_process(LLAMA2, "--budget", figure)  # the real process: its last guard, its one line
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("hfkv: error: Invalid value for '--budget'") and "is past 1 EiB (2^60 B)" in line
    assert "internal error" not in line and len(line) < 300


def test_one_exbibyte_itself_is_a_size():
    assert parse_size("1048576TiB") == 2**60  # 2^20 × 2^40


def test_a_token_count_of_thousands_of_digits_is_one_line():
    from hfkv.errors import UsageError
    from hfkv.units import parse_tokens

    with pytest.raises(UsageError, match=r"token count '9999999999…9999999999 \(5000 digits\)' is past "
                                         r"1,099,511,627,776 \(2\^40\)"):
        parse_tokens("9" * 5000)
    result = hfkv_process(LLAMA2, "--context", "9" * 5000)
    assert result.returncode == 2 and "internal error" not in result.stderr and len(result.stderr) < 300
