"""mllama, Llama 3.2 Vision (mappings/llama.py): cross-attention layers counted as full attention.

These tests' ``report`` names an inline config "inline" (tests/families/test_llama.py's defaults to bf16).
Every expected figure is derived by hand; the arithmetic is beside it."""

from __future__ import annotations

import pytest

from hfkv import ConfigError

from _helpers import indices, kind_counts as kinds, load, report_inline as report


# -- Llama 3.2 Vision ---------------------------------------------------------------------------


MLLAMA = "meta-llama__Llama-3.2-11B-Vision-transformers-defaults"


def test_mllama_counts_cross_attention_layers_as_full():
    rep = report(MLLAMA)
    assert rep.mapper == "llama.mllama"
    assert indices(rep, "cross-attention") == [3, 8, 13, 18, 23, 28, 33, 38]
    assert kinds(rep) == {"full": 32, "cross-attention": 8}
    # 40 layers × 2 × 8 KV heads × 128 (4096 / 32) × 2 B = 40 × 4096 = 163840
    assert rep.alpha_bytes_per_token == 163840
    # engine-logs.tsv R15 (SGLang, 11B-Vision): 163823 B/token derived from the log, within 0.02 %
    assert abs(rep.alpha_bytes_per_token - 163823) / 163823 < 2e-4
    # image tokens: 4 tiles × ((448 / 14)² + 1) = 4 × (1024 + 1) = 4100
    assert any("4100 per image" in note for note in rep.notes)


def test_mllama_cross_layer_out_of_range():
    data = load(MLLAMA)
    data["text_config"]["cross_attention_layers"] = [3, 45]
    with pytest.raises(ConfigError, match="text_config.cross_attention_layers': index 45 is past the 40 layers"):
        report(data)
