"""README.md's engine-mode verification figures are what ``tests/oracles/verification_figures.py`` counts from
the oracle rows, and ``tests/oracles/known-gaps.tsv`` (the one list of rows hfkv does not reproduce, with the
engine's reason) names stored rows only, once each."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
ORACLES = TESTS / "oracles"
README = TESTS.parent / "README.md"
SHARED = TESTS.parents[1] / "shared"
FIGURES = re.compile(r"<!-- figures: printed by python tests/oracles/verification_figures.py -->\n(.*?)\.\n"
                     r"<!-- /figures -->", re.S)


def script():
    spec = importlib.util.spec_from_file_location("verification_figures", ORACLES / "verification_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_prints_the_counted_figures():
    if not (SHARED / "hub-configs").is_dir():
        pytest.skip(f"{SHARED} is absent: the shared oracle rows cannot be counted")
    found = FIGURES.search(README.read_text(encoding="utf-8"))
    assert found, "README.md lost its figures block"
    assert found.group(1) == script().figures(), "rerun python tests/oracles/verification_figures.py"


def test_known_gaps_are_stored_rows_listed_once_with_a_reason():
    lines = (ORACLES / "known-gaps.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[0].split("\t") == ["engine", "config", "tp", "kv_cache_dtype", "reason"]
    cells = [line.split("\t") for line in lines[1:]]
    keys = [tuple(row[:4]) for row in cells]
    assert len(set(keys)) == len(keys) and keys == sorted(keys)
    assert all(len(row) == 5 and row[0] in ("vllm", "sglang") and len(row[4]) > 40 for row in cells)
    stored = set()
    for path in ORACLES.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            stored.add((row["config"], str(row["tp"]), row.get("kv_cache_dtype_arg") or row["kv_cache_dtype_requested"]))
    missing = [key for key in keys if key[1:] not in stored]
    assert not missing, f"known gaps that name no stored row: {missing}"
