"""Engine modes (hfkv.engines): each SGLang 0.5.23 / vLLM 0.33.0 rule of engines.md on real fixtures.

Every expected figure is derived by hand from the model's dimensions, with the arithmetic beside it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

import hfkv.engines as engines
from hfkv.engines import ENGINE_KNOBS, simulate
from hfkv.errors import UnsupportedModelError, UsageError
from hfkv.report import Options, inspect_config

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


# -- interface ----------------------------------------------------------------------------------


def test_every_knob_is_documented_in_the_package_docstring():
    for name, (default, help_text) in ENGINE_KNOBS.items():
        assert f"``{name}``" in engines.__doc__, name
        assert help_text


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


# -- SGLang -------------------------------------------------------------------------------------


def test_sglang_dsa_fp8_cell_and_page():
    out = simulate(report(V32, kv_cache_dtype="fp8"), engine="sglang", budget_bytes=None, max_model_len=None)
    # 61 layers × (656 B packed latent + 132 B indexer): 61 × 788 = 48068
    assert out["bytes_per_token"] == 61 * (656 + 132) == 48068
    assert out["page_size"] == 64  # 64 · index_kpool (1)


def test_sglang_dsa_budget_floors_to_the_page():
    budget = 1_000_050 * 48068 + 100
    out = simulate(report(V32, kv_cache_dtype="fp8"), engine="sglang", budget_bytes=budget, max_model_len=163840)
    # floor(budget / 48068) = 1,000,050 → floored to 64: 15625 × 64 = 1,000,000
    assert out["max_total_num_tokens"] == out["kv_cache_tokens"] == 1_000_000
    assert out["max_mamba_cache_size"] is None


def test_sglang_dsa_bf16_cell():
    out = simulate(report(V32, kv_cache_dtype="bf16"), engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 61 * (1152 + 132) == 78324  # 576 × 2 B + 132 B indexer


def test_sglang_mtp_draft_pool_adds_one_target_layer_per_draft_layer():
    out = simulate(report(V32, kv_cache_dtype="fp8"), engine="sglang", budget_bytes=None, max_model_len=None,
                   speculative_draft_layers=1)
    # the draft's MTP layer has a latent and an indexer like each of the 61 target layers: 62 × (656 + 132)
    assert out["bytes_per_token"] == 48068 + 656 + 132 == 62 * 788 == 48856
    out = simulate(report(V3), engine="sglang", budget_bytes=None, max_model_len=None, speculative_draft_layers=2)
    assert out["bytes_per_token"] == 70272 + 2 * 1152 == 72576  # (61 + 2) × 1152


def test_sglang_dsv4_mtp_draft_multiplies_by_l_plus_d_over_l():
    out = simulate(report("deepseek-ai__DeepSeek-V4-Flash"), engine="sglang", budget_bytes=None, max_model_len=None,
                   speculative_draft_layers=1)
    # 7086.75 B per full-pool token (test above) × (43 + 1) / 43
    assert out["bytes_per_token"] == pytest.approx(7086.75 * 44 / 43)


def test_vllm_says_it_leaves_draft_layers_out():
    out = simulate(report(V3), engine="vllm", budget_bytes=None, max_model_len=4096, speculative_draft_layers=1)
    assert any("not modelled in vLLM mode" in a for a in out["assumptions"])


def test_sglang_plain_mla_fp8_is_raw_576():
    out = simulate(report(V3, kv_cache_dtype="fp8", tensor_parallel_size=8), engine="sglang",
                   budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 61 * 576 == 35136  # replicated on every TP rank
    out = simulate(report(V3), engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 61 * 1152 == 70272


def test_sglang_gpt_oss_hybrid_swa_cell():
    r = report(GPT_OSS)
    # per layer 8 KV heads × (64 + 64) × 2 B = 2048; 18 full + 0.8 × 18 sliding = 36864 + 29491.2
    budget = 663_552_000  # 66355.2 × 10000
    out = simulate(r, engine="sglang", budget_bytes=budget, max_model_len=4096)
    assert out["bytes_per_token"] == pytest.approx(18 * 2048 + 0.8 * 18 * 2048) == 66355.2
    assert out["max_total_num_tokens"] == 10_000
    assert out["swa_tokens"] == 8_000  # 10000 × 0.8
    half = simulate(r, engine="sglang", budget_bytes=None, max_model_len=None, swa_full_tokens_ratio=0.5)
    assert half["bytes_per_token"] == 18 * 2048 + 18 * 1024 == 55296


def test_sglang_gemma3_gets_full_allocation():
    out = simulate(report(GEMMA3), engine="sglang", budget_bytes=None, max_model_len=None)
    # all 62 layers full (52 sliding ones too): 16 KV heads × (128 + 128) × 2 B = 8192; 62 × 8192
    assert out["bytes_per_token"] == 62 * 8192 == 507904
    assert "swa_full_tokens_ratio" not in out
    assert any("full KV" in a for a in out["assumptions"])


def test_sglang_mamba_state_reserved_first():
    budget = 10 * GiB
    out = simulate(report(QWEN3_NEXT), engine="sglang", budget_bytes=budget, max_model_len=32768)
    # GDN state per layer (SGLang: SSM fp32, conv bf16):
    #   SSM 32 heads × 128 × 128 × 4 B = 2,097,152; conv (32·128 + 2·16·128) × 3 × 2 B = 49,152
    slot = 36 * (2_097_152 + 49_152)  # 36 GDN layers = 77,266,944
    assert out["mamba_bytes_per_request"] == slot == 77_266_944
    size = int((budget * 9 / 19 - slot) // slot)  # budget · 0.9/1.9, minus one slot, in slots
    assert out["max_mamba_cache_size"] == size
    cell = 12 * 2 * (256 + 256) * 2  # 12 full layers, 2 KV heads, head_dim 256 → 24576
    assert out["bytes_per_token"] == cell
    tokens = (budget - (size + 1) * slot) // cell
    assert out["max_total_num_tokens"] == tokens
    assert out["max_running_requests"] == min(4096, tokens // 2, size // 3)


def test_sglang_without_radix_cache_running_requests_set_the_mamba_pool():
    out = simulate(report(QWEN3_NEXT), engine="sglang", budget_bytes=10 * GiB, max_model_len=32768,
                   enable_prefix_caching=False, max_running_requests=20)
    assert out["max_mamba_cache_size"] == 20
    assert out["max_running_requests"] == 20  # ratio 1 without radix cache


def test_sglang_dsv4_bytes_per_full_token():
    r = report("deepseek-ai__DeepSeek-V4-Flash")
    out = simulate(r, engine="sglang", budget_bytes=None, max_model_len=None)
    # 43 layers: 21 c4 (ratio 4), 20 c128 (ratio 128), every layer an SWA latent.
    # paged row: page 256 → ceil(256 × 584 / 576) × 576 / 256 = 585; page 2 (c128) → 3 × 576 / 2 = 864
    swa = 585 * 43 + (8 / 256) * (2 * 2 * 512 * 4 + 2 * 2 * 128 * 4) * 21  # 25155 + 320 × 21 = 31875
    c4 = 585 / 4 + 132 / 4  # 146.25 + 33 = 179.25
    c128 = 864 / 128  # 6.75
    assert out["bytes_per_swa_token"] == swa == 31875
    assert out["compressed_bytes_per_token"] == {"4": 179.25, "128": 6.75}
    assert out["bytes_per_token"] == pytest.approx(0.1 * swa + c4 * 21 + c128 * 20) == 7086.75
    assert out["page_size"] == 256


def test_sglang_dsv4_pools_with_a_running_request_cap():
    budget = 40 * GiB
    out = simulate(report("deepseek-ai__DeepSeek-V4-Flash"), engine="sglang", budget_bytes=budget,
                   max_model_len=65536, max_running_requests=63)
    # c128 state: (64 slots × 128 + 129 → 8448 rows) × 2 × 512 × 4 B per c128 layer, 20 layers
    fixed = 8448 * 4096 * 20
    assert out["fixed_state_bytes"] == fixed
    full = int((budget - fixed) // 7086.75) // 256 * 256
    assert out["max_total_num_tokens"] == full
    assert out["swa_tokens"] == int(full * 0.1) // 256 * 256


# -- vLLM ---------------------------------------------------------------------------------------


def test_vllm_dsa_one_uniform_group():
    out = simulate(report(V32, kv_cache_dtype="fp8"), engine="vllm", budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 48068  # fp8_ds_mla 656 + indexer 132, 61 layers
    assert out["block_size"] == 64
    assert out["bytes_per_block"] == 64 * 48068
    assert len(out["kv_cache_groups"]) == 1
    assert out["kv_cache_groups"][0]["layers"] == 122  # 61 latent specs + 61 indexer specs


def test_vllm_plain_mla_fp8_and_dense_blocks():
    out = simulate(report(V3, kv_cache_dtype="fp8"), engine="vllm", budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 61 * 576 == 35136
    llama = simulate(report("meta-llama__Meta-Llama-3.1-8B"), engine="vllm", budget_bytes=3000 * 16 * 131072,
                     max_model_len=32768)
    # 32 layers × 8 KV heads × 256 × 2 B = 131072; 3000 blocks; 32768/16 = 2048 blocks per request
    assert (llama["bytes_per_token"], llama["block_size"], llama["num_blocks"]) == (131072, 16, 3000)
    assert llama["max_concurrency"] == 1.46  # 3000 / 2048 = 1.4648
    assert llama["kv_cache_tokens"] == 48000  # int(1.46484375 × 32768)
    assert llama["max_model_len_fit"] == 3000 * 16


def test_vllm_gpt_oss_two_groups_share_one_pool():
    budget = 16370 * 589824
    out = simulate(report(GPT_OSS), engine="vllm", budget_bytes=budget, max_model_len=98304)
    groups = out["kv_cache_groups"]
    assert sorted((g["kind"], g["layers"], g["padding"]) for g in groups) == [("full", 18, 0), ("sliding", 18, 0)]
    # one block ID = 18 layers × 16 tokens × 2048 B = 589,824 B
    assert out["bytes_per_block"] == 18 * 16 * 2048 == 589824
    assert out["bytes_per_token"] == 2 * 18 * 2048 == 73728  # both groups' slots, every token
    assert out["full_attention_bytes_per_token"] == 18 * 2048
    # full: 98304 / 16 = 6144; sliding: ceil((128 − 1 + 2 × 8192) / 16) + 1 = 1032 + 1 = 1033
    assert out["blocks_per_request"] == 6144 + 1033 == 7177
    assert out["num_blocks"] == 16370
    assert out["max_concurrency"] == 2.28  # 16370 / 7177 = 2.2809
    assert out["kv_cache_tokens"] == int(16370 / 7177 * 98304)


def test_vllm_in_flight_tokens_follow_the_scheduler_knobs():
    out = simulate(report(GPT_OSS), engine="vllm", budget_bytes=None, max_model_len=98304,
                   max_num_batched_tokens=2048, async_scheduling=False)
    # sliding: ceil((127 + 2048) / 16) + 1 = 136 + 1 = 137
    assert out["blocks_per_request"] == 6144 + 137


def test_vllm_disabled_hybrid_manager_allocates_full():
    out = simulate(report(GPT_OSS), engine="vllm", budget_bytes=None, max_model_len=4096,
                   disable_hybrid_kv_cache_manager=True)
    assert len(out["kv_cache_groups"]) == 1
    assert out["bytes_per_block"] == 36 * 16 * 2048


def test_vllm_gemma3_groups_with_padding():
    out = simulate(report(GEMMA3), engine="vllm", budget_bytes=None, max_model_len=32768)
    # 52 sliding + 10 full: group size 10 → ceil(52/10) = 6 sliding groups (60 slots, 8 padding) + 1 full
    groups = out["kv_cache_groups"]
    assert len(groups) == 7
    assert sum(g["padding"] for g in groups) == 8
    assert out["bytes_per_block"] == 10 * 16 * 8192
    assert out["bytes_per_token"] == 7 * 10 * 8192
    # full: 32768 / 16 = 2048; sliding: ceil((1024 − 1 + 2 × 8192) / 16) + 1 = 1088 + 1 = 1089, six groups
    assert out["blocks_per_request"] == 2048 + 6 * 1089


def test_vllm_qwen3_next_block_size_holds_a_gdn_state():
    out = simulate(report(QWEN3_NEXT), engine="vllm", budget_bytes=None, max_model_len=32768)
    # GDN state in bf16: SSM 32 × 128 × 128 × 2 = 1,048,576; conv (32·128 + 2·16·128) × 3 × 2 = 49,152
    state = 1_048_576 + 49_152
    attention = 2 * (256 + 256) * 2  # 2048 B per token per full layer
    assert out["block_size"] == 16 * ceil_div(state, 16 * attention) == 544  # 16 × ceil(33.5)
    # 36 GDN + 12 full: group size 12 → 3 GDN groups + 1 full, each block ID 12 pages of 544 × 2048
    assert len(out["kv_cache_groups"]) == 4
    assert out["bytes_per_block"] == 12 * 544 * 2048
    # full: ceil(32768 / 544) = 61; GDN groups: 2 blocks each (align mode) × 3
    assert out["blocks_per_request"] == 61 + 3 * 2


def test_vllm_nemotron_h_block_size_and_mamba_modes():
    r = report(NEMOTRON)
    out = simulate(r, engine="vllm", budget_bytes=None, max_model_len=32768)
    # Mamba-2: SSM 64 heads × 64 × 128 × 4 B (fp32, config mamba_ssm_cache_dtype) = 2,097,152
    #          conv (64·64 + 2·8·128) × 3 × 2 B = 36,864 → 2,134,016; attention 2 × 256 × 2 = 1024 B/token
    assert out["block_size"] == 16 * ceil_div(2_134_016, 16 * 1024) == 2096  # 16 × 131
    # 23 Mamba + 6 attention layers: group size 6 → 4 Mamba groups (1 padding slot) + 1 full
    assert len(out["kv_cache_groups"]) == 5
    assert sum(g["padding"] for g in out["kv_cache_groups"]) == 1
    full_blocks = ceil_div(32768, 2096)  # 16
    assert out["blocks_per_request"] == full_blocks + 4 * 2
    off = simulate(r, engine="vllm", budget_bytes=None, max_model_len=32768, enable_prefix_caching=False)
    assert off["blocks_per_request"] == full_blocks + 4 * 1


def test_vllm_chunked_local_is_full_by_default():
    r = report("meta-llama__Llama-4-Scout-17B-16E-transformers-defaults")
    out = simulate(r, engine="vllm", budget_bytes=None, max_model_len=32768)
    # 48 layers × 8 KV heads × 256 × 2 B = 196608, one group
    assert out["bytes_per_token"] == 48 * 4096 == 196608
    assert len(out["kv_cache_groups"]) == 1
    hybrid = simulate(r, engine="vllm", budget_bytes=None, max_model_len=32768, chunked_local_hybrid=True)
    # 36 chunked + 12 full: 3 chunked groups + 1 full; chunked: ceil(min(8192 + 16384, 32768) / 16) = 1536
    assert len(hybrid["kv_cache_groups"]) == 4
    assert hybrid["blocks_per_request"] == 2048 + 3 * 1536


def test_vllm_shared_layers_get_no_spec():
    out = simulate(report("google__gemma-4-E2B-it"), engine="vllm", budget_bytes=None, max_model_len=4096)
    # 35 layers, the last 20 read an earlier layer's KV
    assert sum(g["layers"] for g in out["kv_cache_groups"]) == 35 - 20


def test_vllm_dsv4_is_reported_unsupported():
    with pytest.raises(UnsupportedModelError, match="DeepSeek V4"):
        simulate(report("deepseek-ai__DeepSeek-V4-Flash"), engine="vllm", budget_bytes=GiB, max_model_len=4096)


# -- every real config ----------------------------------------------------------------------------

HUB_CONFIGS = Path(__file__).resolve().parents[2] / "shared" / "hub-configs"


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
