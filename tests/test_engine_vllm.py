"""vLLM 0.33.0 engine mode: each rule of engines.md on real fixtures.

Every expected figure is derived by hand from the model's dimensions, with the arithmetic beside it.
"""

from __future__ import annotations

import pytest

from hfkv.engines import simulate
from hfkv.errors import UnsupportedModelError

from test_engines import GEMMA3, GPT_OSS, NEMOTRON, QWEN3_NEXT, V3, V32, GiB, ceil_div, report


def test_vllm_says_it_leaves_draft_layers_out():
    out = simulate(report(V3), engine="vllm", budget_bytes=None, max_model_len=4096, speculative_draft_layers=1)
    assert any("not modelled in vLLM mode" in a for a in out["assumptions"])


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
    # the fit check keeps vLLM's null block out: (3000 − 1) × 16 = 47984 tokens
    assert llama["max_model_len_fit"] == 2999 * 16 == 47984


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
    # SM90 align mode: FlashInfer's GDN prefill checkpoints every 64 tokens, so the alignment is
    # lcm(16, 64) = 64: 64 × ceil(1,097,728 / (64 × 2048)) = 64 × ceil(8.375) = 576 (not 16 × 34 = 544)
    assert out["block_size"] == 64 * ceil_div(state, 64 * attention) == 576
    # 36 GDN + 12 full: group size 12 → 3 GDN groups + 1 full, each block ID 12 pages of 576 × 2048
    assert len(out["kv_cache_groups"]) == 4
    assert out["bytes_per_block"] == 12 * 576 * 2048
    # full: ceil(32768 / 576) = 57; GDN groups: 2 + 1 prefill-checkpoint block each (align mode) × 3
    assert out["blocks_per_request"] == 57 + 3 * 3


def test_vllm_gdn_alignment_follows_the_gpu_generation():
    # SM80: no FlashInfer GDN prefill, no checkpoint alignment: 16 × ceil(1,097,728 / (16 × 2048)) = 544,
    # and no checkpoint block: 2 per GDN group
    out = simulate(report(QWEN3_NEXT), engine="vllm", budget_bytes=None, max_model_len=32768, compute_capability="8.0")
    assert out["block_size"] == 16 * ceil_div(1_097_728, 16 * 2048) == 544
    assert out["blocks_per_request"] == ceil_div(32768, 544) + 3 * 2 == 61 + 6


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
    # align mode: 2 state blocks + 1 prefill-checkpoint block (MambaMixer2.get_kv_cache_spec) per Mamba group
    assert out["blocks_per_request"] == full_blocks + 4 * 3
    off = simulate(r, engine="vllm", budget_bytes=None, max_model_len=32768, enable_prefix_caching=False)
    assert off["blocks_per_request"] == full_blocks + 4 * 1  # mode none: 1 block, no checkpoint


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


def test_vllm_dsv4_bf16_is_refused_like_vllm_and_fp8_is_not_modelled():
    with pytest.raises(UnsupportedModelError, match="would refuse to start: DeepseekV4 fp8_ds_mla layout only "
                                                    "supports fp8 kv-cache, got bfloat16"):
        simulate(report("deepseek-ai__DeepSeek-V4-Flash"), engine="vllm", budget_bytes=GiB, max_model_len=4096)
    with pytest.raises(UnsupportedModelError, match="DeepSeek V4 cache layout is not modelled"):
        simulate(report("deepseek-ai__DeepSeek-V4-Flash", kv_cache_dtype="fp8"), engine="vllm", budget_bytes=GiB,
                 max_model_len=4096)
