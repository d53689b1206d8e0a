"""MiniMax (mappings/minimax.py): lightning attention hybrids (M1, Text-01), hand-derived α and state."""

from __future__ import annotations

import pytest

import hfkv

from _helpers import kinds, load, report, state_of


# -- MiniMax (lightning) ----------------------------------------------------------------------------


def test_minimax_m1_lightning():
    rep = report(load("MiniMaxAI__MiniMax-M1-80k"))
    k = kinds(rep)
    assert k[7] == "full" and k[0] == "lightning"  # attn_type_list: 1 = softmax at i = 7, 15, ...
    assert k.count("full") == 10
    assert rep.alpha_bytes_per_token == 10 * 8 * 128 * 2 * 2 == 40960  # head_dim 128 (not 6144 / 64)
    assert state_of(rep, 0) == 64 * 128 * 128 * 4 == 4194304  # N = 64 heads, no conv
    assert rep.gamma_bytes_per_request == 70 * 4194304 == 293601280


def test_minimax_text01_defaults_fixture():
    rep = report(load("MiniMaxAI__MiniMax-Text-01-hf-transformers-defaults"))
    # layer_types alternate full / lightning: 16 + 16; head_dim 4096 / 32 = 128
    assert rep.alpha_bytes_per_token == 16 * 8 * 128 * 2 * 2 == 65536
    assert rep.gamma_bytes_per_request == 16 * 32 * 128 * 128 * 4 == 33554432


def test_minimax_text_01_model_type_and_bad_attn_type():
    data = load("MiniMaxAI__MiniMax-M1-80k")
    data["model_type"] = "minimax_text_01"
    assert report(data).alpha_bytes_per_token == 40960
    data["attn_type_list"][3] = 2
    with pytest.raises(hfkv.ConfigError, match="attn_type_list.*got 2"):
        report(data)


def test_minimax_m1_without_pattern_is_an_error():
    data = load("MiniMaxAI__MiniMax-M1-80k")
    del data["attn_type_list"]
    with pytest.raises(hfkv.ConfigError, match="attn_type_list"):
        report(data)
