"""LFM2 short-conv hybrids (mappings/lfm.py): hand-derived α and conv state; the embedding and
classification variants."""

from __future__ import annotations

import pytest

import hfkv

from _helpers import kinds, load, report, report as inspect, state_of


# -- LFM2 short conv --------------------------------------------------------------------------------


def test_lfm2_embedding_model_is_sized_as_sglang_serves_it():
    rep = report(load("LiquidAI__LFM2.5-Embedding-350M"))
    # 6 attention layers × 2 × 8 KV heads × (1024 / 16 = 64) × 2 B; 10 conv layers × (3 − 1) × 1024 × 2 B
    assert rep.alpha_bytes_per_token == 6 * 2 * 8 * 64 * 2 == 12288
    assert rep.gamma_bytes_per_request == 10 * 2 * 1024 * 2 == 40960
    assert any("bidirectional embedding model" in note for note in rep.notes)


def lfm2_causal() -> dict:
    """The LFM2.5 encoder config as a causal LFM2 (same layer_types: 10 conv, 6 attention)."""
    data = load("LiquidAI__LFM2.5-Embedding-350M")
    data["architectures"] = ["Lfm2ForCausalLM"]
    del data["auto_map"]
    return data


def test_lfm2_classification_head_is_rejected():
    data = lfm2_causal()
    data["architectures"] = ["Lfm2ForSequenceClassification"]
    with pytest.raises(hfkv.UnsupportedModelError, match=r"encoder-only model \(Lfm2ForSequenceClassification\)"):
        report(data)


def test_lfm2_defaults_fixture_all_attention():
    rep = report(load("LiquidAI__LFM2-1.2B-transformers-defaults"))
    # no layer_types / full_attn_idxs: the class makes every layer attention; head_dim 2560 / 32 = 80
    assert rep.alpha_bytes_per_token == 32 * 8 * 80 * 2 * 2 == 81920
    assert rep.gamma_bytes_per_request == 0


def test_lfm2_full_attn_idxs_on_defaults_fixture():
    data = load("LiquidAI__LFM2-1.2B-transformers-defaults")
    data["full_attn_idxs"] = [2, 5, 8, 10, 12, 14]  # 0-based
    rep = report(data)
    assert [i for i, k in enumerate(kinds(rep)) if k == "full"] == [2, 5, 8, 10, 12, 14]
    assert state_of(rep, 0) == 2 * 2560 * 2 == 10240  # (conv_L_cache 3 − 1) × hidden 2560 × 2
    assert rep.alpha_bytes_per_token == 6 * 8 * 80 * 2 * 2 == 15360
    assert rep.gamma_bytes_per_request == 26 * 10240 == 266240


def test_lfm2_causal_layer_types():
    rep = report(lfm2_causal())
    assert kinds(rep)[:3] == ["conv", "conv", "full"]
    assert rep.alpha_bytes_per_token == 6 * 8 * 64 * 2 * 2 == 12288  # head_dim 1024 / 16 = 64
    assert state_of(rep, 0) == 2 * 1024 * 2 == 4096
    assert rep.gamma_bytes_per_request == 10 * 4096 == 40960
    assert report(lfm2_causal(), tensor_parallel_size=2).gamma_bytes_per_request == 10 * 2 * 512 * 2


def test_lfm2_vl_nested_and_lfm2_moe():
    text = lfm2_causal()
    nested = {"architectures": ["Lfm2VlForConditionalGeneration"], "model_type": "lfm2_vl", "text_config": text}
    rep = report(nested)
    assert rep.mapper == "lfm.lfm2" and rep.gamma_bytes_per_request == 40960
    moe = dict(text, model_type="lfm2_moe", architectures=["Lfm2MoeForCausalLM"])
    assert report(moe).alpha_bytes_per_token == 12288


def test_lfm2_conv_dim_mismatch_is_warned():
    data = lfm2_causal()
    data["conv_dim"] = 2048
    rep = report(data)
    assert rep.gamma_bytes_per_request == 40960  # hidden_size (SGLang) still sizes the state
    assert any("conv_dim" in w for w in rep.warnings)


def test_lfm2_embedding_state_matches_sglang():
    assert inspect(load("LiquidAI__LFM2.5-Embedding-350M")).gamma_bytes_per_request == 40960
    assert inspect(load("LiquidAI__LFM2.5-Embedding-350M"), tensor_parallel_size=8).gamma_bytes_per_request == 5120
