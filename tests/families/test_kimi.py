"""Kimi linear and Kimi-K3 (mappings/kimi.py): KDA layers beside MLA, hand-derived α and state.

KDA: C = N·H·H·4 + (w − 1)·3·N·H·2 (state fp32, conv bf16).
"""

from __future__ import annotations

import pytest

import hfkv

from _helpers import kinds, load, report, state_of


# -- Kimi-Linear / Kimi-K3 (KDA, 1-based kda_layers, MLA full layers) -------------------------------


KIMI_K3_KDA_C = 96 * 128 * 128 * 4 + 3 * (96 * 128 + 2 * 96 * 128) * 2  # 6291456 + 221184 = 6512640


def test_kimi_k3_one_based_kda_layers_and_mla():
    rep = report(load("moonshotai__Kimi-K3"))
    k = kinds(rep)
    # kda_layers lists 1, 2, 3, 5, ...: 1-based, so layer 0 is KDA and layer 3 (listed as 4 in
    # full_attn_layers) is MLA; full_attn_layers also lists 93 → the last layer (92) is MLA.
    assert k[0] == k[1] == k[2] == "kda" and k[3] == "mla"
    assert k[92] == "mla" and k[91] == "mla" and k[90] == "kda"
    assert k.count("mla") == 24 and k.count("kda") == 69
    assert rep.alpha_bytes_per_token == 24 * (512 + 64) * 2 == 27648
    assert state_of(rep, 0) == KIMI_K3_KDA_C
    assert rep.gamma_bytes_per_request == 69 * KIMI_K3_KDA_C == 449372160
    assert not rep.warnings


def test_kimi_k3_tp8_latent_replicated_state_split():
    rep = report(load("moonshotai__Kimi-K3"), tensor_parallel_size=8)
    assert rep.alpha_bytes_per_token == 27648  # the MLA latent has no head axis
    assert state_of(rep, 0) == 12 * 128 * 128 * 4 + 3 * (3 * 12 * 128) * 2  # 96 / 8 = 12 heads


def test_kimi_zero_in_kda_layers_is_an_error():
    data = load("moonshotai__Kimi-K3")
    data["text_config"]["linear_attn_config"]["kda_layers"][0] = 0
    with pytest.raises(hfkv.ConfigError, match="kda_layers.*1-based"):
        report(data)


def test_kimi_full_attn_layers_disagreement_is_warned():
    data = load("moonshotai__Kimi-K3")
    data["text_config"]["linear_attn_config"]["full_attn_layers"][0] = 5  # 5 is also a KDA layer
    rep = report(data)
    assert any("full_attn_layers disagrees" in w for w in rep.warnings)


def test_kimi_linear_defaults_fixture():
    rep = report(load("moonshotai__Kimi-Linear-48B-A3B-Instruct-transformers-defaults"))
    # layer_types: full at i = 4, 8, ..., 24 → 6 MLA, 21 KDA of 32 heads × 128
    kda_c = 32 * 128 * 128 * 4 + 3 * (3 * 32 * 128) * 2  # 2097152 + 73728 = 2170880
    assert rep.alpha_bytes_per_token == 6 * (512 + 64) * 2 == 6912
    assert state_of(rep, 0) == kda_c
    assert rep.gamma_bytes_per_request == 21 * kda_c == 45588480
