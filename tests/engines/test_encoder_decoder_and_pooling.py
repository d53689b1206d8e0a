"""Encoder-decoders and pooling models in the engine modes: Whisper as vLLM 0.33.0 and SGLang 0.5.23 size it,
LFM2.5-Embedding as vLLM serves it. Expected figures are hand arithmetic from the engines' code (cited) and
agree with the oracle rows (``tests/oracles/vllm-0.33.0-fixtures*.jsonl``, ``sglang-0.5.23-fixtures.jsonl``),
which ``tests/engines/vllm/test_oracle.py`` / ``tests/engines/sglang/test_oracle.py`` sweep.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hfkv.engines import simulate
from hfkv.engines.vllm import VllmRefusal
from hfkv.inspection import inspect_config
from hfkv.model.options import Options

VLLM_033 = "vllm==0.33.0"  # these figures follow vLLM 0.33.0's rules (block 16 by default), derived by hand or from its oracle rows

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
GIB = 1 << 30


def report(folder: str, **options):
    data = json.loads((FIXTURES / folder / "config.json").read_text())
    return inspect_config(data, model=folder, options=Options(**options))


WHISPER = "openai__whisper-large-v3"  # 32 encoder + 32 decoder layers, 20 heads of 64 (d_model 1280), float16


# -- vLLM --------------------------------------------------------------------------------------------


def test_vllm_whisper_self_and_cross_attention_groups():
    # whisper.py: each decoder layer builds an Attention (FullAttentionSpec) and a CrossAttention
    # (CrossAttentionSpec); fp8: 20 heads × (64 + 64) × 1 B = 2,560 B per token and layer, 16-token blocks
    # (FLASH_ATTN) → a page of 16 × 2,560 = 40,960 B; two groups of 32 layers, 32 × 40,960 = 1,310,720 B a block.
    out = simulate(report(WHISPER, kv_cache_dtype="fp8"), engine=VLLM_033, budget_bytes=40 * GIB)
    assert [(g["kind"], g["layers"]) for g in out["kv_cache_groups"]] == [("full", 32), ("cross", 32)]
    assert (out["block_size"], out["bytes_per_block"]) == (16, 1_310_720)
    # max_model_len = max_target_positions 448 → ceil(448 / 16) = 28 self-attention blocks; CrossAttentionSpec
    # counts scheduler_config.max_num_encoder_input_tokens = max_num_batched_tokens = 8192 → 512 blocks
    assert (out["max_model_len"], out["blocks_per_request"]) == (448, 28 + 512)
    # 40 GiB // 1,310,720 = 32,768 blocks; 32,768 / 540 = 60.68; int(60.6814… × 448) = 27,185
    assert (out["num_blocks"], out["max_concurrency"], out["kv_cache_tokens"]) == (32_768, 60.68, 27_185)
    # only the self-attention grows with the context: 1,310,720 / 16 = 81,920 B per token
    assert out["bytes_per_token"] == 81_920
    assert any("1500 tokens" in line for line in out["assumptions"])  # what a real request holds of the pool


def test_vllm_whisper_cross_attention_follows_max_num_batched_tokens():
    # --max-num-batched-tokens 2048 (the A100 default): ceil(2048 / 16) = 128 cross blocks, 28 + 128 = 156
    out = simulate(report(WHISPER, kv_cache_dtype="fp8"), engine=VLLM_033, max_num_batched_tokens=2048)
    assert out["blocks_per_request"] == 156
    # below the encoder's 1500 positions compute_mm_encoder_budget refuses (chunked MM input is off)
    with pytest.raises(VllmRefusal, match=r"max_tokens_per_mm_item \(1500\) is larger than max_num_batched_tokens"
                                          r" \(1024\)"):
        simulate(report(WHISPER, kv_cache_dtype="fp8"), engine=VLLM_033, max_num_batched_tokens=1024)


def test_vllm_whisper_refusals():
    # an explicit bf16 KV on a float16 model (VllmConfig._reject_mismatched_float_kv_cache), and TP 8 over
    # WhisperConfig's num_attention_heads (attribute_map: encoder_attention_heads, 20): 20 % 8 = 4
    with pytest.raises(VllmRefusal, match='kv_cache_dtype="bfloat16" is incompatible with dtype="float16"'):
        simulate(report(WHISPER, kv_cache_dtype="bf16"), engine=VLLM_033)
    with pytest.raises(VllmRefusal, match=r"Total number of attention heads \(20\) must be divisible by tensor "
                                          r"parallel size \(8\)"):
        simulate(report(WHISPER, kv_cache_dtype="fp8", tensor_parallel_size=8), engine=VLLM_033)
    with pytest.raises(VllmRefusal, match="SupportsPP"):  # whisper.py: no SupportsPP
        simulate(report(WHISPER, kv_cache_dtype="fp8"), engine=VLLM_033, pipeline_parallel_size=2)


def test_vllm_encoder_only_pooling_model_keeps_no_kv_cache():
    # LFM2.5-Embedding: Lfm2BidirectionalModel (registry.py _EMBEDDING_MODELS, lfm2.py @attn_type("encoder_only"))
    out = simulate(report("LiquidAI__LFM2.5-Embedding-350M"), engine=VLLM_033, budget_bytes=40 * GIB)
    assert (out["kv_cache_groups"], out["bytes_per_token"], out["blocks_per_request"]) == ([], 0, 0)
    assert (out["num_blocks"], out["kv_cache_tokens"], out["max_model_len"]) == (1, None, 128_000)


# -- SGLang ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kv, tp, cell", [
    # configs/model_config.py: num_attention_layers = encoder_layers + 2 · decoder_layers = 32 + 64 = 96 slots,
    # each 20 KV heads (WhisperConfig.attribute_map) × (64 + 64) × 2 B = 5,120 B at bf16: 491,520 B per token
    ("bf16", 1, 96 * 5_120),
    ("fp8", 1, 96 * 2_560),
    # TP 8: get_num_kv_heads = max(1, 20 // 8) = 2 heads per GPU: 96 × 2 × 128 × 2 = 49,152
    ("bf16", 8, 96 * 2 * 128 * 2),
])
def test_sglang_whisper_cell_counts_encoder_and_cross_attention_layers(kv, tp, cell):
    out = simulate(report(WHISPER, kv_cache_dtype=kv, tensor_parallel_size=tp), engine="sglang")
    assert (out["configurator"], out["bytes_per_token"], out["page_size"]) == ("DefaultPoolConfigurator", cell, 1)


def test_sglang_whisper_backend_context_and_radix_cache():
    # get_default_attn_backend: flashinfer for Whisper on every GPU (page 1, also on B200, where MHA models get
    # trtllm_mha's 64); get_context_length finds none of its keys on WhisperConfig: 2048; the radix cache is
    # turned off for Whisper (handle_attention_backend_compatibility)
    out = simulate(report(WHISPER, kv_cache_dtype="fp8"), engine="sglang", compute_capability="10.0",
                   budget_bytes=30 * GIB)
    assert (out["page_size"], out["context_length"]) == (1, 2048)
    assert any("radix cache off" in line for line in out["assumptions"])
    # 30 GiB // 245,760 B = 131,072 tokens
    assert out["max_total_num_tokens"] == 30 * GIB // (96 * 2_560)
