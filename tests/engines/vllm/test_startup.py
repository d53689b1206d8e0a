"""vLLM 0.33.0 engine mode: each rule of engines.md on real fixtures.

Every expected figure is derived by hand from the model's dimensions, with the arithmetic beside it.
"""

from __future__ import annotations

import pytest

from hfkv.engines import simulate
from hfkv.engines.vllm.startup import VllmRefusal
from hfkv.errors import UnsupportedModelError

from _helpers import GEMMA3, GPT_OSS, NEMOTRON, QWEN3_NEXT, V3, V32, GiB, ceil_div
from _helpers import fixture_report as report

VLLM_033 = "vllm==0.33.0"  # these figures follow vLLM 0.33.0's rules (block 16 by default), derived by hand or from its oracle rows


def test_vllm_says_it_leaves_draft_layers_out():
    out = simulate(report(V3), engine=VLLM_033, budget_bytes=None, max_model_len=4096, speculative_draft_layers=1)
    assert any("not modelled in vLLM mode" in a for a in out["assumptions"])


def test_vllm_dsa_one_uniform_group():
    out = simulate(report(V32, kv_cache_dtype="fp8"), engine=VLLM_033, budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 48068  # fp8_ds_mla 656 + indexer 132, 61 layers
    assert out["block_size"] == 64
    assert out["bytes_per_block"] == 64 * 48068
    assert len(out["kv_cache_groups"]) == 1
    assert out["kv_cache_groups"][0]["layers"] == 122  # 61 latent specs + 61 indexer specs


def test_vllm_plain_mla_fp8_and_dense_blocks():
    out = simulate(report(V3, kv_cache_dtype="fp8"), engine=VLLM_033, budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 61 * 576 == 35136
    llama = simulate(report("meta-llama__Meta-Llama-3.1-8B"), engine=VLLM_033, budget_bytes=3000 * 16 * 131072,
                     max_model_len=32768)
    # 32 layers × 8 KV heads × 256 × 2 B = 131072; 3000 blocks; 32768/16 = 2048 blocks per request
    assert (llama["bytes_per_token"], llama["block_size"], llama["num_blocks"]) == (131072, 16, 3000)
    assert llama["max_concurrency"] == 1.46  # 3000 / 2048 = 1.4648
    assert llama["kv_cache_tokens"] == 48000  # int(1.46484375 × 32768)
    # the fit check keeps vLLM's null block out: (3000 − 1) × 16 = 47984 tokens
    assert llama["max_model_len_fit"] == 2999 * 16 == 47984


def test_vllm_gpt_oss_two_groups_share_one_pool():
    budget = 16370 * 589824
    out = simulate(report(GPT_OSS), engine=VLLM_033, budget_bytes=budget, max_model_len=98304)
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
    out = simulate(report(GPT_OSS), engine=VLLM_033, budget_bytes=None, max_model_len=98304,
                   max_num_batched_tokens=2048, async_scheduling=False)
    # sliding: ceil((127 + 2048) / 16) + 1 = 136 + 1 = 137
    assert out["blocks_per_request"] == 6144 + 137


def test_vllm_disabled_hybrid_manager_allocates_full():
    out = simulate(report(GPT_OSS), engine=VLLM_033, budget_bytes=None, max_model_len=4096,
                   disable_hybrid_kv_cache_manager=True)
    assert len(out["kv_cache_groups"]) == 1
    assert out["bytes_per_block"] == 36 * 16 * 2048


def test_vllm_gemma3_groups_with_padding():
    out = simulate(report(GEMMA3), engine=VLLM_033, budget_bytes=None, max_model_len=32768)
    # 52 sliding + 10 full: group size 10 → ceil(52/10) = 6 sliding groups (60 slots, 8 padding) + 1 full
    groups = out["kv_cache_groups"]
    assert len(groups) == 7
    assert sum(g["padding"] for g in groups) == 8
    assert out["bytes_per_block"] == 10 * 16 * 8192
    assert out["bytes_per_token"] == 7 * 10 * 8192
    # full: 32768 / 16 = 2048; sliding: ceil((1024 − 1 + 2 × 8192) / 16) + 1 = 1088 + 1 = 1089, six groups
    assert out["blocks_per_request"] == 2048 + 6 * 1089


def test_vllm_qwen3_next_block_size_holds_a_gdn_state():
    out = simulate(report(QWEN3_NEXT), engine=VLLM_033, budget_bytes=None, max_model_len=32768)
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
    out = simulate(report(QWEN3_NEXT), engine=VLLM_033, budget_bytes=None, max_model_len=32768, compute_capability="8.0")
    assert out["block_size"] == 16 * ceil_div(1_097_728, 16 * 2048) == 544
    assert out["blocks_per_request"] == ceil_div(32768, 544) + 3 * 2 == 61 + 6


def test_vllm_olmo_hybrid_gdn_exports_no_checkpoint():
    # olmo_gdn_linear_attn.py declares no prefill checkpoint alignment (only Qwen's GDN does), so on SM90
    # the block is a 16-token multiple and the GDN groups get no checkpoint block. Oracle row
    # (vllm-0.33.0-fixtures-sweep.jsonl, TP 1 bf16, 40 GiB): block 80, 9,830,400 B per block,
    # 826 blocks per request, 4,369 blocks.
    out = simulate(report("allenai__Olmo-Hybrid-7B-transformers-defaults"), engine=VLLM_033, budget_bytes=40 * GiB)
    # GDN state: conv (3, 11520) + SSM (30, 192, 96) in bf16 = (34560 + 552960) × 2 = 1,175,040 B;
    # attention: 30 KV heads × 128 × 2 (K, V) × 2 B = 15,360 B per token
    assert out["block_size"] == 16 * ceil_div(1_175_040, 16 * 15_360) == 80  # 16 × ceil(4.78)
    # 24 GDN + 8 full layers: 3 GDN groups + 1 full, group size 8
    assert out["bytes_per_block"] == 8 * 80 * 15_360 == 9_830_400
    # full: ceil(65536 / 80) = 820; each GDN group 2 blocks (align mode, no checkpoint block)
    assert out["blocks_per_request"] == ceil_div(65536, 80) + 3 * 2 == 826
    assert out["num_blocks"] == 40 * GiB // 9_830_400 == 4369


def test_vllm_nemotron_h_block_size_and_mamba_modes():
    r = report(NEMOTRON)
    out = simulate(r, engine=VLLM_033, budget_bytes=None, max_model_len=32768)
    # Mamba-2: SSM 64 heads × 64 × 128 × 4 B (fp32, config mamba_ssm_cache_dtype) = 2,097,152
    #          conv (64·64 + 2·8·128) × 3 × 2 B = 36,864 → 2,134,016; attention 2 × 256 × 2 = 1024 B/token
    assert out["block_size"] == 16 * ceil_div(2_134_016, 16 * 1024) == 2096  # 16 × 131
    # 23 Mamba + 6 attention layers: group size 6 → 4 Mamba groups (1 padding slot) + 1 full
    assert len(out["kv_cache_groups"]) == 5
    assert sum(g["padding"] for g in out["kv_cache_groups"]) == 1
    full_blocks = ceil_div(32768, 2096)  # 16
    # align mode: 2 state blocks + 1 prefill-checkpoint block (MambaMixer2.get_kv_cache_spec) per Mamba group
    assert out["blocks_per_request"] == full_blocks + 4 * 3
    off = simulate(r, engine=VLLM_033, budget_bytes=None, max_model_len=32768, enable_prefix_caching=False)
    assert off["blocks_per_request"] == full_blocks + 4 * 1  # mode none: 1 block, no checkpoint


def test_vllm_chunked_local_keeps_its_window_by_default():
    # vLLM 0.33.0 envs.py: VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to "1" (the oracle row of this
    # fixture, tests/oracles/vllm-0.33.0-fixtures-sweep.jsonl: 3 chunked_local_attention groups + 1 full, 12 layers each)
    r = report("meta-llama__Llama-4-Scout-17B-16E-transformers-defaults")
    hybrid = simulate(r, engine=VLLM_033, budget_bytes=None, max_model_len=32768)
    # 36 chunked + 12 full: 3 chunked groups + 1 full; chunked: ceil(min(8192 + 16384, 32768) / 16) = 1536
    assert len(hybrid["kv_cache_groups"]) == 4
    assert hybrid["blocks_per_request"] == 2048 + 3 * 1536
    off = simulate(r, engine=VLLM_033, budget_bytes=None, max_model_len=32768, chunked_local_hybrid=False)
    # ...=0: 48 layers × 8 KV heads × 256 × 2 B = 196608, one group
    assert off["bytes_per_token"] == 48 * 4096 == 196608
    assert len(off["kv_cache_groups"]) == 1


def test_vllm_shared_layers_get_no_spec():
    out = simulate(report("google__gemma-4-E2B-it"), engine=VLLM_033, budget_bytes=None, max_model_len=4096)
    # 35 layers, the last 20 read an earlier layer's KV
    assert sum(g["layers"] for g in out["kv_cache_groups"]) == 35 - 20


def test_vllm_dsv4_bf16_is_refused_like_vllm():
    with pytest.raises(UnsupportedModelError, match="would refuse to start: DeepseekV4 fp8_ds_mla layout only "
                                                    "supports fp8 kv-cache, got bfloat16"):
        simulate(report("deepseek-ai__DeepSeek-V4-Flash"), engine=VLLM_033, budget_bytes=GiB, max_model_len=4096)


def test_vllm_dsv4_fp8_packed_pages_and_groups():
    out = simulate(report("deepseek-ai__DeepSeek-V4-Flash", kv_cache_dtype="fp8"), engine=VLLM_033,
                   budget_bytes=40 * GiB, max_model_len=None)
    # pages, each rounded up to 576 B: SWA latent 64 × 584 = 37376 -> 37440; CSA latent 256/4 = 64 states
    # × 584 -> 37440; HCA latent 256/128 = 2 × 584 = 1168 -> 1728; indexer 64 × 132 = 8448 -> 8640;
    # rings (fp32): CSA 4 × (4 × 512) × 4 = 32768 -> 32832, indexer 4 × (4 × 128) × 4 = 8192 -> 8640,
    # HCA 8 × (2 × 512) × 4 = 32768 -> 32832
    compressed = 21 * 37440 + 21 * 8640 + 20 * 1728  # one group of 62 layers: 1,002,240 B, the widest
    assert out["bytes_per_block"] == compressed == 1_002_240
    # buckets: 43 SWA latents, 62 compressed, 42 C4 rings (21 + 21, balanced), 20 C128 rings; repeats =
    # the d >= 21 padding [43, 21, 20] least: d = 22 (pad 1 + 1 + 2) -> the SWA bucket splits in 2 (22 + 21)
    assert sorted(g["layers"] for g in out["kv_cache_groups"]) == [20, 21, 22, 42, 62]
    assert out["block_size"] == 4  # the smallest group block (C4 rings)
    # per request at 1,048,576 tokens: SWA 2 × (ceil((128 − 1 + 16384) / 64) + 1 = 259), compressed
    # 1048576 / 256 = 4096, C4 rings ceil((8 − 1 + 16384) / 4) + 1 = 4099, C128 ceil((128 − 1 + 16384) / 8) + 1 = 2065
    assert out["blocks_per_request"] == 2 * 259 + 4096 + 4099 + 2065 == 10778
    assert out["num_blocks"] == 40 * GiB // 1_002_240 == 42853


# -- vLLM 0.33.0 start-up rules (issue 10), each against hand arithmetic ---------------------------

MLA_V3_TOKEN = 61 * (512 + 64) * 2  # 61 layers × (kv_lora_rank + rope) × 2 B = 70272 B/token in bf16


@pytest.mark.parametrize("sm, kv, backend, block", [
    ("9.0", "bf16", "FLASH_ATTN_MLA", 16),  # FA3 MLA takes 16-token multiples, no fp8
    ("9.0", "fp8", "FLASHMLA", 64),  # FlashMLA's kernel block
    ("10.0", "bf16", "FLASHINFER_MLA", 32),  # FlashInfer-MLA kernels: 32 or 64
    ("8.0", "bf16", "TRITON_MLA", 16),  # no FA3/FlashMLA/FlashInfer-MLA below SM90
])
def test_vllm_mla_backend_and_block_follow_the_gpu_generation(sm, kv, backend, block):
    out = simulate(report(V3, kv_cache_dtype=kv), engine=VLLM_033, budget_bytes=None, max_model_len=4096,
                   compute_capability=sm)
    per_token = MLA_V3_TOKEN if kv == "bf16" else 61 * 576  # fp8: 576 B per layer
    assert (out["attention_backend"], out["block_size"]) == (backend, block)
    assert out["bytes_per_block"] == block * per_token
    assert out["blocks_per_request"] == 4096 // block
    assert any(backend in a for a in out["assumptions"])


def test_vllm_dsa_latent_layout_follows_the_sparse_backend():
    # SM90 fp8: FlashMLA-sparse packs fp8_ds_mla 656 B + the 132 B indexer: 61 × 788 × 64 = 3,076,352 B per block;
    # SM100 fp8: FlashInfer-MLA-sparse keeps the plain 576 B fp8 latent: 61 × (576 + 132) × 64 = 2,764,032 B
    r = report(V32, kv_cache_dtype="fp8")
    hopper = simulate(r, engine=VLLM_033, budget_bytes=None, max_model_len=4096)
    blackwell = simulate(r, engine=VLLM_033, budget_bytes=None, max_model_len=4096, compute_capability="10.0")
    assert hopper["bytes_per_block"] == 61 * (656 + 132) * 64 == 3_076_352
    assert blackwell["bytes_per_block"] == 61 * (576 + 132) * 64 == 2_764_032
    assert (hopper["attention_backend"], blackwell["attention_backend"]) == ("FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE")


def test_vllm_kda_layers_hold_a_checkpoint_block_on_hopper_not_on_ampere():
    r = report("moonshotai__Kimi-K3")
    hopper = simulate(r, engine=VLLM_033, budget_bytes=None, max_model_len=1 << 20)
    ampere = simulate(r, engine=VLLM_033, budget_bytes=None, max_model_len=1 << 20, compute_capability="8.0")
    kda_groups = sum(g["kind"] == "mamba" for g in hopper["kv_cache_groups"])
    # FlashKDA (SM 9/10/12) exports a prefill checkpoint: 2 + 1 blocks per KDA group; Triton KDA (SM80): 2
    full = hopper["blocks_per_request"] - 3 * kda_groups
    assert full == ceil_div(1 << 20, hopper["block_size"])
    assert ampere["blocks_per_request"] - 2 * kda_groups == ceil_div(1 << 20, ampere["block_size"])


def test_vllm_gemma4_fp8_on_hopper_uses_fa4_pages():
    r = report("google__gemma-4-E2B-it", kv_cache_dtype="fp8")
    out = simulate(r, engine=VLLM_033, budget_bytes=None, max_model_len=131072)
    # 512-wide full-attention heads, fp8 KV, SM90: FA4's fp8 kernel pages by 64 tokens. Full page
    # 64 × 1 head × (512 + 512) × 1 B = 65536; sliding pages (256-wide) reach it at 128 tokens.
    assert out["block_size"] == 64
    assert sorted({g["block_size"] for g in out["kv_cache_groups"]}) == [64, 128]
    assert out["bytes_per_block"] == 3 * 65536  # 12 sliding + 3 full own-KV layers: groups of 3 slots
    # full: 131072 / 64 = 2048; sliding ×4: ceil((512 − 1 + 16384) / 128) + 1 = 132 + 1 = 133
    assert out["blocks_per_request"] == 2048 + 4 * 133 == 2580
    bf16 = simulate(report("google__gemma-4-E2B-it"), engine=VLLM_033, budget_bytes=None, max_model_len=131072)
    assert bf16["block_size"] == 16


def test_vllm_gemma4_below_hopper_runs_triton_and_refuses_fp8():
    # Gemma4Config: mixed head sizes (256 sliding, 512 full) want FA4; SM80 has none -> TRITON_ATTN (16)
    out = simulate(report("google__gemma-4-E2B-it"), engine=VLLM_033, budget_bytes=None, max_model_len=4096,
                   compute_capability="8.0")
    assert (out["attention_backend"], out["block_size"]) == ("TRITON_ATTN", 16)
    with pytest.raises(VllmRefusal, match="Triton attention backend .* requires SM89"):
        simulate(report("google__gemma-4-E2B-it", kv_cache_dtype="fp8"), engine=VLLM_033, budget_bytes=None,
                 max_model_len=4096, compute_capability="8.0")


def test_vllm_minimax_m3_pages_by_128_and_keeps_index_keys_bf16():
    out = simulate(report("nvidia__MiniMax-M3-NVFP4", kv_cache_dtype="fp8"), engine=VLLM_033,
                   budget_bytes=40 * GiB, max_model_len=4096)
    # 60 attention layers × 4 KV heads × 256 × 1 B (fp8) + 57 index-key layers × 128 × 2 B (bf16 kept)
    per_token = 60 * 4 * 256 + 57 * 128 * 2
    assert per_token == 76032 and out["block_size"] == 128
    assert out["bytes_per_block"] == 128 * per_token == 9_732_096


def test_vllm_falcon_rotary_kv_stays_bf16_under_fp8():
    out = simulate(report("tiiuae__falcon-180B-chat", kv_cache_dtype="fp8"), engine=VLLM_033, budget_bytes=40 * GiB,
                   max_model_len=None)
    # 80 layers × 8 KV heads × (64 + 64) × 2 B = 163840 B/token: bf16, not fp8's 81920
    assert out["bytes_per_block"] == 16 * 80 * 8 * 128 * 2 == 2_621_440
    assert out["num_blocks"] == 40 * GiB // 2_621_440 == 16384
    assert out["max_model_len"] == 2048  # FalconConfig's max_position_embeddings default
    assert out["blocks_per_request"] == 2048 // 16 == 128


def test_vllm_window_at_least_the_context_is_still_a_sliding_window():
    from types import SimpleNamespace

    from hfkv.model.dtypes import Precision
    from hfkv.model.specs import LayerSpec, SlidingWindow

    layer = LayerSpec(index=0, kind="sliding", parts=(SlidingWindow(kv_heads=8, head_dim=128, window=262144),))
    r = SimpleNamespace(layer_specs=[layer] * 32, precision=Precision(kv="bf16"), tensor_parallel_size=1,
                        architectures=["Phi3ForCausalLM"], model_type="phi3", config={"num_attention_heads": 32})
    out = simulate(r, engine=VLLM_033, budget_bytes=None, max_model_len=4096)
    # SlidingWindowSpec admission: ceil(min(262144 − 1 + 16384, 4096) / 16) + 1 = 256 + 1 = 257 (not 256)
    assert out["blocks_per_request"] == 257


def test_vllm_null_block_refuses_an_exact_fit():
    r = report("meta-llama__Meta-Llama-3.1-8B")
    # 32 layers × 8 × 256 × 2 B = 131072 B/token, block 16: 2 MiB; 2048 blocks hold exactly 32768 tokens,
    # but one block is vLLM's null block: 2047 usable → refused, estimate 2047 × 16 = 32752
    with pytest.raises(VllmRefusal, match=r"max seq len \(32768\), \(4.0 GiB KV cache is needed.*\(4.0 GiB\)"
                                          r".*estimated maximum model length is 32752") as caught:
        simulate(r, engine=VLLM_033, budget_bytes=2048 * 16 * 131072, max_model_len=32768)
    assert caught.value.details["max_model_len_fit"] == 2047 * 16
    ok = simulate(r, engine=VLLM_033, budget_bytes=2049 * 16 * 131072, max_model_len=32768)
    assert ok["num_blocks"] == 2049 and ok["max_concurrency"] == 1.0  # 2049 / 2048, the null block included


def test_vllm_attention_free_mamba_block_is_max_model_len():
    out = simulate(report("state-spaces__mamba-2.8b-hf"), engine=VLLM_033, budget_bytes=40 * GiB, max_model_len=None)
    # no length key in MambaConfig: vLLM's 2048; mode none (no prefix caching): 1 block per request
    # state per layer: SSM 5120 × 16 × 2 B + conv (4 − 1) × 5120 × 2 B = 163840 + 30720 = 194560; 64 layers
    assert (out["max_model_len"], out["block_size"], out["blocks_per_request"]) == (2048, 2048, 1)
    assert out["bytes_per_block"] == 64 * 194560 == 12_451_840
    assert out["num_blocks"] == 40 * GiB // 12_451_840 == 3449
    assert out["kv_cache_tokens"] == 3449 * 2048


def test_vllm_longrope_default_length_is_the_original_one():
    import json

    from hfkv.inspection import inspect_config
    from _helpers import FIXTURES

    data = json.loads((FIXTURES / "microsoft__Phi-3.5-mini-instruct" / "config.json").read_text())
    data.update(original_max_position_embeddings=4096,
                rope_scaling={"type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48})
    out = simulate(inspect_config(data, model="phi-3.5"), engine=VLLM_033, budget_bytes=None, max_model_len=None)
    # _get_and_verify_max_len: LongRoPE defaults to original_max_position_embeddings, not 131072
    assert out["max_model_len"] == 4096


@pytest.mark.parametrize("name, length", [
    ("bigscience__bloom", 2048),  # no length key at all: vLLM assumes 2048
    ("google__gemma-3-4b-it", 131072),  # Gemma3TextConfig default; its linear ×8 RoPE factor is not applied
    ("meta-llama__Meta-Llama-3.1-8B", 131072),  # llama3 RoPE: already scaled
])
def test_vllm_default_max_model_len_is_vllms_derivation(name, length):
    out = simulate(report(name), engine=VLLM_033, budget_bytes=None, max_model_len=None)
    assert out["max_model_len"] == length


@pytest.mark.parametrize("name, options, reason", [
    ("Qwen__Qwen2-7B-Instruct", {"tensor_parallel_size": 8},
     r"Total number of attention heads \(28\) must be divisible by tensor parallel size \(8\)"),
    ("tiiuae__falcon-40b", {}, r"Model architecture RWForCausalLM was supported in vLLM until v0.28.0"),
    ("bigscience__bloom", {"kv_cache_dtype": "fp8"}, r"FlashAttention does not support fp8 kv-cache"),
    ("THUDM__chatglm-6b", {}, r".*'ChatGLMConfig' object has no attribute 'original_rope'"),
    # oracle rows (vllm-0.33.0-fixtures-sweep.jsonl): "AssertionError: Kimi-K3 MLA (MultiHeadLatentAttention)
    # is NoPE-only" — the fixture leaves out mla_use_nope, KimiLinearConfig's default is False
    ("moonshotai__Kimi-Linear-48B-A3B-Instruct-transformers-defaults", {},
     r"Kimi-K3 MLA \(MultiHeadLatentAttention\) is NoPE-only"),
])
def test_vllm_refuses_with_vllms_reason(name, options, reason):
    with pytest.raises(VllmRefusal, match=r"vLLM 0\.33\.0 would refuse to start: " + reason) as caught:
        simulate(report(name, **options), engine=VLLM_033, budget_bytes=40 * GiB, max_model_len=None)
    assert "\n" not in str(caught.value)


def test_vllm_kimi_linear_with_mla_use_nope_starts():
    import json

    from hfkv.inspection import inspect_config
    from _helpers import FIXTURES

    data = json.loads((FIXTURES / "moonshotai__Kimi-Linear-48B-A3B-Instruct-transformers-defaults" / "config.json")
                      .read_text())
    data["mla_use_nope"] = True  # as the real checkpoint's config sets it
    out = simulate(inspect_config(data, model="kimi-linear"), engine=VLLM_033, budget_bytes=40 * GiB)
    assert out["num_blocks"] > 0


def test_vllm_pooling_model_with_encoder_only_attention_has_no_kv_groups():
    # registry.py registers Lfm2BidirectionalModel only as a pooling model; lfm2.py decorates it
    # @attn_type("encoder_only"): EncoderOnlyAttention.get_kv_cache_spec returns None and the bidirectional
    # convolutions keep no state, so vLLM starts with no KV cache groups (one block, nothing logged).
    from types import SimpleNamespace

    from hfkv.model.dtypes import Precision

    r = SimpleNamespace(layer_specs=[], precision=Precision(kv="bf16"), tensor_parallel_size=1,
                        architectures=["Lfm2BidirectionalModel"], model_type="lfm2", config={})
    out = simulate(r, engine=VLLM_033, budget_bytes=40 << 30, max_model_len=None)
    assert (out["kv_cache_groups"], out["bytes_per_block"], out["blocks_per_request"], out["num_blocks"]) == ([], 0, 0, 1)
    assert out["kv_cache_tokens"] is None and out["max_concurrency"] is None
    with pytest.raises(VllmRefusal, match="SupportsPP"):  # the class lacks SupportsPP (asked in vLLM's venv)
        simulate(report("LiquidAI__LFM2.5-Embedding-350M"), engine=VLLM_033, pipeline_parallel_size=2)


def test_vllm_pooling_model_with_causal_layers_is_not_sized():
    from types import SimpleNamespace

    from hfkv.errors import UnsupportedModelError
    from hfkv.model.dtypes import Precision

    r = SimpleNamespace(layer_specs=[], precision=Precision(kv="bf16"), tensor_parallel_size=1,
                        architectures=["Qwen2Model"], model_type="qwen2", config={})
    with pytest.raises(UnsupportedModelError, match="only as a pooling model") as err:
        simulate(r, engine=VLLM_033, budget_bytes=None, max_model_len=None)
    assert not isinstance(err.value, VllmRefusal)  # hfkv's own limit, not vLLM's refusal


def test_vllm_ampere_backends_for_sinks_prefix_and_fp8():
    # SM80 runs FA2 only: no attention sinks (gpt-oss) and no multimodal prefix (Gemma 3) -> Triton (16),
    # which refuses fp8 KV below SM89; plain fp8 KV -> FlashInfer (16), ALiBi included
    assert simulate(report(GPT_OSS), engine=VLLM_033, budget_bytes=None, max_model_len=4096,
                    compute_capability="8.0")["attention_backend"] == "TRITON_ATTN"
    for name in (GPT_OSS, "google__gemma-3-4b-it"):
        with pytest.raises(VllmRefusal, match="Triton attention backend"):
            simulate(report(name, kv_cache_dtype="fp8"), engine=VLLM_033, budget_bytes=None, max_model_len=4096,
                     compute_capability="8.0")
    for name in ("meta-llama__Meta-Llama-3.1-8B", "bigscience__bloom"):
        out = simulate(report(name, kv_cache_dtype="fp8"), engine=VLLM_033, budget_bytes=None, max_model_len=2048,
                       compute_capability="8.0")
        assert (out["attention_backend"], out["block_size"]) == ("FLASHINFER", 16)


def test_vllm_blackwell_serves_alibi_fp8_on_flashinfer():
    # SM100 prefers FlashInfer, which takes ALiBi with fp8 KV: no refusal (on SM90 FlashAttention's FA2
    # fallback refuses it). BLOOM: 70 layers × 112 heads × (128 + 128) × 1 B = 2,007,040 B per token
    out = simulate(report("bigscience__bloom", kv_cache_dtype="fp8"), engine=VLLM_033, budget_bytes=None,
                   max_model_len=2048, compute_capability="10.0")
    assert (out["attention_backend"], out["block_size"], out["blocks_per_request"]) == ("FLASHINFER", 16, 2048 // 16)
    assert out["bytes_per_block"] == 16 * 70 * 112 * 256 == 32_112_640


def test_vllm_window_covering_the_context_is_still_a_sliding_spec():
    # Phi-3.5-mini: sliding_window 262144 ≥ 131072 positions. hfkv keeps every token (full attention), but
    # vLLM builds a SlidingWindowSpec: admission cdiv(min(W − 1 + 2 × 8192, L), 16) + 1 blocks, not cdiv(L, 16).
    out = simulate(report("microsoft__Phi-3.5-mini-instruct"), engine=VLLM_033, budget_bytes=40 * GiB,
                   max_model_len=4096)
    assert [(g["kind"], g["window"]) for g in out["kv_cache_groups"]] == [("sliding", 262144)]
    assert out["blocks_per_request"] == ceil_div(min(262144 - 1 + 2 * 8192, 4096), 16) + 1 == 257


def test_vllm_cohere2_window_is_the_mappers_w_plus_one_once():
    # Cohere 2 attends to W + 1 keys; the mapper already stores 4096 + 1, vLLM's spec window is that, not + 2.
    out = simulate(report("CohereForAI__c4ai-command-r-v01-transformers-defaults"), engine=VLLM_033,
                   budget_bytes=None, max_model_len=8192)
    assert {g["window"] for g in out["kv_cache_groups"] if g["kind"] == "sliding"} == {4096 + 1}


# VllmConfig._reject_mismatched_float_kv_cache (vllm/config/vllm.py): an explicit float16/bfloat16 KV
# dtype must equal the model's dtype, which 'auto' resolves (config/model.py _resolve_auto_dtype: the
# checkpoint's 16-bit dtype; float32 -> bfloat16; float16 never for _FLOAT16_NOT_SUPPORTED_MODELS).
def test_vllm_refuses_a_float_kv_dtype_other_than_the_models():
    # Qwen2.5-7B's torch_dtype is bfloat16: an explicit fp16 KV is refused, bf16 and auto are not.
    with pytest.raises(VllmRefusal, match=r'kv_cache_dtype="float16" is incompatible with dtype="bfloat16"\. '
                                          r"Please set `--kv-cache-dtype` to `auto` or `bfloat16`\."):
        simulate(report("Qwen__Qwen2.5-7B", kv_cache_dtype="fp16"), engine=VLLM_033, budget_bytes=40 * GiB)
    for kv in ("bf16", "auto", "fp8"):
        simulate(report("Qwen__Qwen2.5-7B", kv_cache_dtype=kv), engine=VLLM_033, budget_bytes=40 * GiB)


def test_vllm_never_resolves_gemma3_to_float16():
    # gemma3 is in _FLOAT16_NOT_SUPPORTED_MODELS: even a float16 checkpoint runs in bfloat16 under
    # 'auto', so an explicit fp16 KV is refused and an explicit bf16 one is not.
    import json

    from hfkv.inspection import inspect_config
    from hfkv.model.options import Options
    from _helpers import FIXTURES

    data = json.loads((FIXTURES / "google__gemma-3-4b-it" / "config.json").read_text())
    data["torch_dtype"] = "float16"
    fp16 = inspect_config(data, model="gemma-3-fp16", options=Options(kv_cache_dtype="fp16"))
    with pytest.raises(VllmRefusal, match=r'kv_cache_dtype="float16" is incompatible with dtype="bfloat16"'):
        simulate(fp16, engine=VLLM_033, budget_bytes=40 * GiB)
    bf16 = inspect_config(data, model="gemma-3-fp16", options=Options(kv_cache_dtype="bf16"))
    simulate(bf16, engine=VLLM_033, budget_bytes=40 * GiB)


def test_vllm_refuses_more_sequences_than_mamba_blocks_under_full_graphs():
    # config/compilation.py (0.20 on): full CUDA graphs need one Mamba cache block per decode sequence.
    # Nemotron-H-56B at TP 1 under vLLM 0.33: 254 blocks in a 40 GiB budget (its oracle row), fewer than the
    # API server's 1,024 sequences: vLLM refuses, naming the max_num_seqs that starts.
    nemotron = report("nvidia__Nemotron-H-56B-Base-8K")
    with pytest.raises(UnsupportedModelError, match=r"max_num_seqs \(1024\) exceeds available Mamba cache blocks "
                                                    r"\(254\).*lower max_num_seqs to at most 254"):
        simulate(nemotron, engine=VLLM_033, budget_bytes=40 * GiB)
    assert simulate(nemotron, engine=VLLM_033, budget_bytes=40 * GiB, max_num_seqs=254)["num_blocks"] == 254
    assert simulate(nemotron, engine=VLLM_033, budget_bytes=40 * GiB, enforce_eager=True)["num_blocks"] == 254
    # vLLM 0.19 capped its capture sizes instead, and started.
    capped = simulate(nemotron, engine="vllm==0.19.1", budget_bytes=40 * GiB)
    assert any("caps its CUDA-graph capture sizes" in a for a in capped["assumptions"])
