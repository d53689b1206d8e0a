"""Engine modes (hfkv.engines): each SGLang 0.5.23 / vLLM 0.33.0 rule of engines.md on real fixtures.

Every expected figure is derived by hand from the model's dimensions, with the arithmetic beside it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

import hfkv.engines as engines
from hfkv.engines import simulate
from hfkv.engines.contract import EngineKnobs, knob_fields, knobs_markdown
from hfkv.errors import UnsupportedModelError, UsageError
from hfkv.inspection import inspect_config
from hfkv.model.options import Options

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GiB = 1 << 30


def report(name: str, **options):
    """The report of fixtures/<name>/config.json with the given accounting options (cached: read-only)."""
    return _report(name, tuple(sorted(options.items())))


@lru_cache(maxsize=None)
def _report(name: str, options: tuple):
    data = json.loads((FIXTURES / name / "config.json").read_text())
    return inspect_config(data, model=name, options=Options(**dict(options)))


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


V32 = "deepseek-ai__DeepSeek-V3.2"
V3 = "deepseek-ai__DeepSeek-V3"
GPT_OSS = "openai__gpt-oss-120b"
GEMMA3 = "google__gemma-3-27b-it-from-engine-log"
QWEN3_NEXT = "Qwen__Qwen3-Next-80B-A3B-Thinking"
NEMOTRON = "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
HUB_CONFIGS = Path(__file__).resolve().parents[2] / "shared" / "hub-configs"


# -- interface ----------------------------------------------------------------------------------


def test_every_knob_has_its_meaning_and_the_docs_table_is_generated_from_them():
    for f in knob_fields():
        assert len(f.metadata["doc"]) > 20, f.name
    doc = (Path(__file__).resolve().parents[1] / "docs" / "engine-modes.md").read_text()
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
    assert (out["name"], out["version"]) == ("vllm", "0.33.0")
    assert isinstance(out["assumptions"], list) and out["assumptions"]


def test_compute_capability_knob_is_normalised_and_validated():
    # None = the H200 default "9.0"; "10" and 8.0 are the same generations spelled differently.
    assert EngineKnobs.resolve({}).compute_capability == "9.0"
    assert EngineKnobs.resolve({"compute_capability": "10"}).compute_capability == "10.0"
    assert EngineKnobs.resolve({"compute_capability": 8.0}).compute_capability == "8.0"
    with pytest.raises(UsageError, match="--compute-capability"):
        EngineKnobs.resolve({"compute_capability": "hopper"})


def test_gpu_preset_sets_compute_capability_unless_the_knob_is_given():
    from hfkv.planning.enrich import gpu_defaults
    from hfkv.planning.gpus import get_gpu

    # CUDA's table: A100 8.0, H200 9.0, B200 10.0; AMD has none.
    assert (get_gpu("a100").compute_capability, get_gpu("h200").compute_capability) == ("8.0", "9.0")
    assert gpu_defaults({}, "B200:8")["compute_capability"] == "10.0"
    assert gpu_defaults({"compute_capability": "9.0"}, "B200")["compute_capability"] == "9.0"
    assert gpu_defaults({}, "MI300X") == {}  # no CUDA capability, and vLLM's batch tiers are NVIDIA's
    assert gpu_defaults({}, None) == {}


def test_gpu_preset_sets_vllms_scheduler_default():
    from hfkv.planning.enrich import gpu_defaults

    # get_batch_defaults (API server): B200 reports 183,359 MiB >= 160 GiB -> 16384; H200 143,771 MiB
    # (>= 70 GiB, not an A100) -> 8192; A100 81,920 MiB is an A100 -> 2048; L4 (23,034 MiB) -> 2048
    tokens = {g: gpu_defaults({}, g)["max_num_batched_tokens"] for g in ("B200", "H200", "A100", "L4")}
    assert tokens == {"B200": 16384, "H200": 8192, "A100": 2048, "L4": 2048}
    # and max_num_seqs 1024 on the two larger tiers, 256 below (the same function's table)
    seqs = {g: gpu_defaults({}, g)["max_num_seqs"] for g in ("B200", "H200", "A100", "L4")}
    assert seqs == {"B200": 1024, "H200": 1024, "A100": 256, "L4": 256}
    assert gpu_defaults({"max_num_batched_tokens": 4096}, "B200")["max_num_batched_tokens"] == 4096




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
