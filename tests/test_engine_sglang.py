"""SGLang 0.5.23 engine mode: each rule of engines.md on real fixtures.

Every expected figure is derived by hand from the model's dimensions, with the arithmetic beside it.
"""

from __future__ import annotations

import pytest

from hfkv.engines import simulate

from test_engines import GEMMA3, GPT_OSS, QWEN3_NEXT, V3, V32, GiB, report


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
    # Qwen3-Next keeps the Mamba extra buffer: 3 slots + 2 tracking slots per request = ratio 5
    assert out["max_running_requests"] == min(4096, tokens // 2, size // 5)


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
