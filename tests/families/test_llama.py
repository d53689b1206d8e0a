"""Llama 4 (mappings/llama.py): chunked attention and no-RoPE layers.

Every expected figure is derived by hand; the arithmetic is beside it. bf16 KV (2 B per value) unless a test
says otherwise."""

from __future__ import annotations

from _helpers import indices, load, report_bf16 as report


# -- Llama 4 ----------------------------------------------------------------------------------------


def test_llama4_scout_transformers_defaults():
    rep = report(load("meta-llama__Llama-4-Scout-17B-16E-transformers-defaults"), contexts=(10000,))
    assert rep.mapper == "llama.llama4"
    # NoPE global layer iff (i + 1) % 4 == 0: 3, 7, ..., 47 → 12 full, 36 chunked
    assert indices(rep, "full") == list(range(3, 48, 4))
    assert rep.layers[0].kind == "chunked" and rep.layers[0].window == 8192
    # E = 2 × 8 × 128 × 2 = 4096; α = 12 × 4096 = 49152; γ = 36 × 8192 × 4096 = 1207959552
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (49152, 1207959552)
    # S = 10000: 36 × min(10000, 8192) × 4096 + 12 × 10000 × 4096 = 1207959552 + 491520000
    assert rep.contexts[0].kv_bytes_per_request == 1699479552


def test_llama4_no_rope_layers_and_null_chunk():
    base = {"model_type": "llama4_text", "torch_dtype": "bfloat16", "num_hidden_layers": 4,
            "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
            "attention_chunk_size": 16, "no_rope_layers": [1, 0, 1, 1]}
    rep = report(base)
    # layer 1 global: α = 2 × 2 × 64 × 2 = 512; chunked 3 × 16 × 512 = 24576
    assert indices(rep, "full") == [1]
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (512, 24576)
    rep = report(dict(base, attention_chunk_size=None))
    assert indices(rep, "full") == [0, 1, 2, 3] and rep.alpha_bytes_per_token == 4 * 512
    # an empty no_rope_layers means the default: global iff (i + 1) % 4 == 0 → layer 3 only
    assert indices(report(dict(base, no_rope_layers=[])), "full") == [3]
