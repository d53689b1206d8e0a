"""SGLang 0.5.23's own figures for windows that cover every position (tests/oracles/sglang-0.5.23-windows.jsonl,
inputs in tests/oracles/window-configs): its default pool (Mistral, Nemotron-H), its refusal (Domyn-Edge)
and its HybridSWAPoolConfigurator (Gemma 4, MiMo-V2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hfkv import Options, inspect_config

from _helpers import window_config


# -- Domyn-Edge: window_sizes and head_sizes per layer ----------------------------------------------


WINDOW_ORACLES = Path(__file__).resolve().parents[2] / "oracles"


def _sglang_window_rows() -> list[dict]:
    path = WINDOW_ORACLES / "sglang-0.5.23-windows.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _sglang_cell(row: dict) -> dict:
    from hfkv.engines import simulate

    data = window_config(row["config"])
    if data is None:
        pytest.skip(f"{row['config']} edits a hub config of ../shared, which is absent")
    rep = inspect_config(data, model=row["config"], options=Options(
        kv_cache_dtype=row["kv_cache_dtype_requested"], tensor_parallel_size=row["tp"]))
    return simulate(rep, engine="sglang", budget_bytes=None, max_model_len=None, compute_capability="9.0")


def test_sglang_rows_for_covering_windows_outside_its_swa_pool():
    """SGLang's own figures where it keeps the default pool (Mistral, Nemotron-H) and refuses Domyn-Edge."""
    rows = [row for row in _sglang_window_rows() if row.get("configurator") != "HybridSWAPoolConfigurator"]
    assert len(rows) == 16
    for row in rows:
        if row["status"] != "ok":
            with pytest.raises(Exception, match="SGLang 0.5.23 cannot serve"):
                _sglang_cell(row)
            continue
        out = _sglang_cell(row)
        assert (out["configurator"], out["bytes_per_token"]) == (row["configurator"], row["bytes_per_token"]), row
        assert out["page_size"] == row["page_size"]


def test_sglang_rows_for_covering_windows_in_its_swa_pool():
    """Gemma 4 and MiMo-V2 with W ≥ max positions: SGLang's HybridSWAPoolConfigurator, ratio 0.8."""
    rows = [row for row in _sglang_window_rows() if row.get("configurator") == "HybridSWAPoolConfigurator"]
    assert len(rows) == 12
    for row in rows:
        out = _sglang_cell(row)
        assert out["configurator"] == row["configurator"], row["config"]
        assert out["bytes_per_token"] == pytest.approx(row["bytes_per_token"], rel=1e-12)
        assert out["swa_bytes_per_token"] == row["swa"]["bytes_per_token"]
