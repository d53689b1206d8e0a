"""Dots3 (mappings/dots.py): MLA and MLA-SWA layers from a per-layer config.

Every expected figure is derived by hand; the arithmetic is beside it. bf16 KV (2 B per value) unless a test
says otherwise."""

from __future__ import annotations

from _helpers import indices, load, report_bf16 as report


# -- Dots3 ------------------------------------------------------------------------------------------


def test_dots3_transformers_defaults():
    rep = report(load("dots-studio__dots3-note-prev-transformers-defaults"))
    assert rep.mapper == "dots.dots3_note"
    # full (indexed, DSA) iff i < 2 or i % 4 == 1: 0, 1, 5, 9, ..., 45 → 2 + 11 = 13; 33 sliding
    assert indices(rep, "dsa") == [0, 1] + list(range(5, 46, 4))
    # DSA layer: (512 + 64) × 2 = 1152 + indexer 132 = 1284 B; α = 13 × 1284 = 16692
    assert rep.alpha_bytes_per_token == 16692
    # MLA-SWA: (swa_kv_lora_rank 1024 + 64) × 2 = 2176 B over W = 512; γ = 33 × 512 × 2176 = 36765696
    assert rep.gamma_bytes_per_request == 36765696


def test_dots3_swa_latent_from_per_layer_config():
    data = load("dots-studio__dots3-note-prev-transformers-defaults")
    types = ["indexed_attention" if i < 2 or i % 4 == 1 else "sliding_attention" for i in range(46)]
    data["text_config"]["layer_types"] = types
    data["text_config"]["per_layer_config"] = {
        str(i): {"kv_lora_rank": 256, "qk_rope_head_dim": 64} for i, t in enumerate(types) if t == "sliding_attention"
    }
    rep = report(data)
    # MLA-SWA: (256 + 64) × 2 = 640 B over W = 512: γ = 33 × 512 × 640 = 10813440; α unchanged 16692
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (16692, 10813440)
