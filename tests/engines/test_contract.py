"""What an engine mode is given and returns (hfkv/engines/contract.py, ``hfkv.engines.simulate``): the
knobs, their validation and documentation, the result's names, and both engines on every shared config.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hfkv.engines import simulate
from hfkv.engines.contract import EngineKnobs, knob_fields, knobs_markdown
from hfkv.errors import UnsupportedModelError, UsageError
from hfkv.inspection import inspect_config

from _helpers import HUB_CONFIGS, V3, GiB, fixture_report as report


# -- interface ----------------------------------------------------------------------------------


def test_every_knob_has_its_meaning_and_the_docs_table_is_generated_from_them():
    for f in knob_fields():
        assert len(f.metadata["doc"]) > 20, f.name
    doc = (Path(__file__).resolve().parents[2] / "docs" / "engine-modes.md").read_text()
    assert knobs_markdown() in doc  # regenerate: python -c "from hfkv.engines.contract import knobs_markdown; ..."


def test_unknown_engine_and_knob_are_usage_errors():
    r = report(V3)
    with pytest.raises(UsageError, match="--engine"):
        simulate(r, engine="tgi", budget_bytes=None, max_model_len=None)
    with pytest.raises(UsageError, match="blocksize"):
        simulate(r, engine="vllm", budget_bytes=None, max_model_len=None, blocksize=32)


def test_result_names_engine_and_version():
    r = report(V3)
    assert simulate(r, engine="sglang", budget_bytes=None, max_model_len=4096)["version"] == "0.5.23"
    out = simulate(r, engine="vllm", budget_bytes=None, max_model_len=4096)
    assert (out["name"], out["version"], out["release"]) == ("vllm", "0.34.0", "vLLM 0.34.0 (newest modelled)")
    assert isinstance(out["assumptions"], list) and out["assumptions"]
    pinned = simulate(r, engine="vllm==0.22.1", budget_bytes=None, max_model_len=4096)
    assert (pinned["version"], pinned["rules"], pinned["release"]) == (
        "0.22.1", "0.20.1–0.25", "vLLM 0.22.1: rules of 0.20.1–0.25")
    assert simulate(r, engine="sglang==0.5.8.post1", budget_bytes=None, max_model_len=4096)["rules"] == "0.5.5–0.5.8"


def test_compute_capability_knob_is_normalised_and_validated():
    # None = the H200 default "9.0"; "10" and 8.0 are the same generations spelled differently.
    assert EngineKnobs.resolve({}).compute_capability == "9.0"
    assert EngineKnobs.resolve({"compute_capability": "10"}).compute_capability == "10.0"
    assert EngineKnobs.resolve({"compute_capability": 8.0}).compute_capability == "8.0"
    with pytest.raises(UsageError, match="--compute-capability"):
        EngineKnobs.resolve({"compute_capability": "hopper"})


def test_engine_modes_on_every_hub_config():
    """Both engines give a result or one clear UnsupportedModelError, and never exceed the budget."""
    if not HUB_CONFIGS.is_dir():
        pytest.skip(f"{HUB_CONFIGS} is absent")
    from hfkv.errors import HfkvError

    budget, checked = 20 * GiB, 0
    for path in sorted(HUB_CONFIGS.glob("*.json")):
        try:
            r = inspect_config(json.loads(path.read_text()), model=path.stem)
        except HfkvError:
            continue  # models hfkv itself does not account for
        for engine in ("sglang", "vllm"):
            try:
                out = simulate(r, engine=engine, budget_bytes=budget, max_model_len=8192)
            except UnsupportedModelError:
                continue
            checked += 1
            assert out["bytes_per_token"] >= 0, path.stem
            if engine == "vllm":
                assert out["num_blocks"] * out["bytes_per_block"] <= budget, path.stem
            elif out["max_total_num_tokens"]:
                assert out["max_total_num_tokens"] * out["bytes_per_token"] <= budget, path.stem
    assert checked
