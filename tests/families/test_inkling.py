"""Inkling (mappings/inkling.py): attention and short-conv layers, hand-derived α, γ and conv state.

KV and conv state bf16 (2 B). Short conv: C = (w − 1)·dim·2."""

from __future__ import annotations

from _helpers import kinds, load, report


# -- Inkling ----------------------------------------------------------------------------------------


INKLING = "thinkingmachines__Inkling-transformers-defaults"


INKLING_CONV_FULL = 3 * (2 * 8 * 128 + 2 * 6144) * 2  # (4 − 1) × 14336 × 2 = 86016

INKLING_CONV_SWA = 3 * (2 * 16 * 128 + 2 * 6144) * 2  # (4 − 1) × 16384 × 2 = 98304


def test_inkling_defaults():
    rep = report(load(INKLING))
    assert rep.mapper == "inkling.inkling"
    # 66 layers, full iff (i + 1) % 6 == 0 → 11 full (8 KV × 128), 55 sliding (16 KV × 128, W 512)
    assert kinds(rep).count("full") == 11 and kinds(rep)[5] == "full"
    assert rep.alpha_bytes_per_token == 11 * 8 * 256 * 2 == 45056
    expected = 55 * 512 * 16 * 256 * 2 + 11 * INKLING_CONV_FULL + 55 * INKLING_CONV_SWA
    assert expected == 230686720 + 946176 + 5406720 == 237039616
    assert rep.gamma_bytes_per_request == expected


def test_inkling_local_layer_ids_win():
    data = load(INKLING)
    data["text_config"]["local_layer_ids"] = list(range(0, 66, 2))  # 0-based: 33 sliding, 33 full
    rep = report(data)
    assert kinds(rep)[:2] == ["sliding", "full"]
    assert rep.alpha_bytes_per_token == 33 * 4096 == 135168
    expected = 33 * 512 * 8192 + 33 * INKLING_CONV_FULL + 33 * INKLING_CONV_SWA
    assert expected == 138412032 + 2838528 + 3244032 == 144494592
    assert rep.gamma_bytes_per_request == expected


def test_inkling_model_synthetic_without_conv():
    # synthetic: inkling_model has no transformers class, so nothing fills a missing kernel size
    data = {"model_type": "inkling_model", "num_hidden_layers": 2, "num_attention_heads": 64,
            "num_key_value_heads": 8, "head_dim": 128, "swa_num_key_value_heads": 16, "swa_head_dim": 128,
            "sliding_window_size": 512, "hidden_size": 6144, "layer_types": ["hybrid_sliding", "hybrid"]}
    rep = report(data)
    assert rep.alpha_bytes_per_token == 4096
    assert rep.gamma_bytes_per_request == 512 * 8192 == 4194304
    assert any("no short-conv state" in n for n in rep.notes)
    data["sconv_kernel_size"] = 4
    assert report(data).gamma_bytes_per_request == 4194304 + 86016 + 98304 == 4378624
