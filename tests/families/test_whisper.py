"""Whisper (mappings/whisper.py): self- and cross-attention of the decoder, and vLLM's cross-attention pool.

Every expected figure is derived by hand; the arithmetic is beside it. bf16 = 2 B unless a test says
otherwise."""

from __future__ import annotations

from click.testing import CliRunner

from hfkv.commands.cli import main

from _helpers import FIXTURES, report_inline as report


# -- encoder-decoder and encoder-only --------------------------------------------------------------


def test_whisper_large_v3_self_and_cross_attention():
    rep = report("openai__whisper-large-v3")
    # decoder self-attention, MHA: 32 layers × 2 (K, V) × 20 heads × 64 (1280 / 20) × 2 B (float16) = 163840
    assert rep.alpha_bytes_per_token == 32 * 2 * 20 * 64 * 2 == 163840
    # cross-attention: 32 layers × 1500 encoder positions × 2 × 20 × 64 × 2 B = 245,760,000 per request
    assert rep.gamma_bytes_per_request == 32 * 1500 * 5120 == 245_760_000
    assert rep.crossover_tokens == 1500  # γ/α: the cross cache weighs as much as 1500 generated tokens
    assert rep.max_position_embeddings == 448  # max_target_positions
    [ctx] = rep.contexts  # every default context is past 448: only the model's maximum
    # r(448) = 32 × (448 + 1500) × 5120 = 319,160,320: a decode step reads all of the cross cache
    assert ctx.tokens == 448 and ctx.kv_bytes_per_request == ctx.read_bytes_per_step == 32 * 1948 * 5120 == 319_160_320
    cross = rep.to_dict()["layers"][0]["parts"][1]
    assert cross == {"kind": "cross", "copies": 1, "entries": "1500 (encoder)", "entry_bytes": 5120, "state_bytes": 0,
                     "params": {"kv_heads": 20, "head_dim": 64, "encoder_tokens": 1500}}


def test_distil_whisper_counts_decoder_layers_not_num_hidden_layers():
    rep = report("distil-whisper__distil-large-v3")  # num_hidden_layers 32 is the encoder's depth
    # 2 decoder layers × 2 × 20 × 64 × 2 B = 10240 per token; 2 × 1500 × 5120 = 15,360,000 per request
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (2 * 5120, 2 * 1500 * 5120) == (10240, 15_360_000)


def test_whisper_engine_mode_sizes_vllms_cross_attention_pool():
    # vLLM 0.33.0 (whisper.py, CrossAttentionSpec): fp16 pages of 16 × 20 × 128 × 2 B = 81,920 B, 32 layers a
    # group: 2,621,440 B a block; 28 self + ceil(8192 / 16) = 512 cross blocks a request; 8 GiB // 2,621,440 =
    # 3,276 blocks, 3,276 / 540 = 6.07 (tests/engines/test_encoder_decoder_and_pooling.py has the rest)
    result = CliRunner().invoke(main, [str(FIXTURES / "openai__whisper-large-v3"), "--engine", "vllm==0.33.0",
                                       "--budget", "8GiB"])
    assert result.exit_code == 0, result.stderr
    assert "num_blocks 3,276" in result.stdout and "max concurrency 6.07" in result.stdout
