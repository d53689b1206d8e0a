"""``hfkv plan`` on the command line (hfkv/commands/plan.py): the bound on --max-gpus (the search itself
is tests/planning/test_search.py's)."""

from __future__ import annotations

import time

import pytest

from hfkv.commands.plan import MAX_GPUS, _max_gpus

from _helpers import LLAMA_FOLDER as LLAMA, hfkv_process


@pytest.mark.parametrize("asked, written", [("4096", "4,096"), ("9" * 400, "a number of 400 digits")],
                         ids=["4096", "400-digits"])
def test_a_max_gpus_past_the_bound_is_refused_at_once_saying_why(asked, written):
    # Before: no upper bound; 4,096 GPUs (about N·log N layouts, each replayed through an engine) never finished
    start = time.monotonic()
    result = hfkv_process("plan", LLAMA, "--requests", "64", "--context", "32k", "--gpu", "H100", "--max-gpus", asked)
    assert time.monotonic() - start < 30
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"hfkv: error: Invalid value for '--max-gpus': {written} is past 512 GPUs (64 nodes of "
                             "8): every layout up to that count is replayed through the engines' start-up "
                             "arithmetic, about N·log N of them, which takes minutes already at 512; plan a "
                             "replica on fewer GPUs and multiply (see 'python -m hfkv plan --help')\n")


def test_the_bound_itself_is_allowed():
    assert MAX_GPUS == 512 and _max_gpus(None, None, 512) == 512  # type: ignore[arg-type]
