"""Nemotron-H hybrids (mappings/nemotron.py): hand-derived α, γ and per-layer state C.

KV and conv bf16 (2 B), SSM state fp32 (4 B) unless a test says otherwise.
Mamba-2: C = heads·head_dim·d_state·4 + (w − 1)·(heads·head_dim + 2·groups·d_state)·2.
"""

from __future__ import annotations

import copy

import pytest

import hfkv
from hfkv import ConfigError

from _helpers import kinds, load, report, state_of


# -- Nemotron-H -------------------------------------------------------------------------------------


# Nemotron-3-Nano: 64 heads × 64, 8 groups, d_state 128, w 4
NANO_C = 64 * 64 * 128 * 4 + 3 * (64 * 64 + 2 * 8 * 128) * 2  # 2097152 + 36864 = 2134016


def test_nemotron3_nano():
    rep = report(load("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"))
    k = kinds(rep)
    # pattern "MEMEM*E...": 52 chars = 23 M + 23 E + 6 *; MLP/MoE layers are kept with no parts
    assert len(k) == 52 and k[:6] == ["mamba", "mlp", "mamba", "mlp", "mamba", "full"]
    assert k.count("mamba") == 23 and k.count("full") == 6 and k.count("mlp") == 23
    assert rep.alpha_bytes_per_token == 6 * 2 * 128 * 2 * 2 == 6144  # 2 KV heads × head_dim 128
    assert state_of(rep, 0) == NANO_C
    assert state_of(rep, 1) == 0  # a MoE layer holds nothing
    assert rep.gamma_bytes_per_request == 23 * NANO_C == 49082368


def test_nemotron3_nano_tp4_matches_sglang_log():
    # engine-logs R32 (SGLang, TP 4): ssm 24.84 GiB / 2212 slots ≈ 12.06 MB, conv 0.44 GiB / 2212 ≈ 212 KB
    rep = report(load("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"), tensor_parallel_size=4)
    ssm = 16 * 64 * 128 * 4  # 64 / 4 = 16 heads per GPU: 524288 B per layer
    conv = 3 * (16 * 64 + 2 * 2 * 128) * 2  # groups 8 / 4 = 2 per GPU: 9216 B per layer
    assert state_of(rep, 0) == ssm + conv
    assert 23 * ssm == 12058624 and 23 * conv == 211968  # the log's 12.06 MB and 212 KB
    assert rep.alpha_bytes_per_token == 6 * 1 * 128 * 2 * 2  # max(1, 2 // 4) = 1 KV head


def test_nemotron_h_56b():
    rep = report(load("nvidia__Nemotron-H-56B-Base-8K"))
    # 118 chars: 54 M, 54 -, 10 *; head_dim from attention_head_dim 128, 8 KV heads
    assert rep.alpha_bytes_per_token == 10 * 8 * 128 * 2 * 2 == 40960
    c = 256 * 64 * 256 * 4 + 3 * (256 * 64 + 2 * 8 * 256) * 2  # 16777216 + 122880 = 16900096
    assert state_of(rep, 0) == c
    assert rep.gamma_bytes_per_request == 54 * c == 912605184


def test_nemotron_h_layers_block_type_gives_the_count():
    data = load("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    del data["hybrid_override_pattern"]
    data["layers_block_type"] = ["mamba", "moe", "attention", "mlp"]
    rep = report(data)
    assert kinds(rep) == ["mamba", "mlp", "full", "mlp"]
    assert any("num_hidden_layers = 52" in w for w in rep.warnings)  # 52 ≠ 4 entries: the list wins
    assert rep.gamma_bytes_per_request == NANO_C


def test_nemotron_h_bad_pattern_and_missing_pattern():
    data = load("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    data["hybrid_override_pattern"] = "MMX*"
    with pytest.raises(hfkv.ConfigError, match="hybrid_override_pattern.*'X'"):
        report(data)
    del data["hybrid_override_pattern"]
    with pytest.raises(hfkv.ConfigError, match="hybrid_override_pattern"):
        report(data)


# -- Jet-Nemotron (synthetic) -----------------------------------------------------------------------


JET = {"model_type": "jet_nemotron", "num_hidden_layers": 6, "hidden_size": 1536, "num_attention_heads": 12,
       "num_key_value_heads": 2, "layer_types": ["jet", "jet", "attn", "jet", "swa", "jet"],
       "efficient_attention_config": {"jet": {"num_heads": 12, "head_dim": 96, "expand_v": 2.0, "conv_size": 4},
                                      "swa": {"window_size": 1024}}}


def test_jet_nemotron():
    rep = report(JET)
    assert kinds(rep) == ["jetblock", "jetblock", "full", "jetblock", "sliding", "jetblock"]
    # head_dim 1536 / 12 = 128: E = 2 × 256 × 2 = 1024 B
    assert rep.alpha_bytes_per_token == 1024
    # JetBlock: 12 × 96 × 192 × 4 + 4 rows × (12 × 192) × 2 = 884736 + 18432
    assert state_of(rep, 0) == 903168
    assert rep.gamma_bytes_per_request == 1024 * 1024 + 4 * 903168 == 4661248


def test_jet_nemotron_bad_input():
    data = copy.deepcopy(JET)
    data["efficient_attention_config"]["jet"]["expand_v"] = 0.3  # 96 × 0.3 = 28.8
    with pytest.raises(ConfigError, match="expand_v"):
        report(data)
    data = copy.deepcopy(JET)
    data["layer_types"][1] = "mamba"
    with pytest.raises(ConfigError, match=r"layer_types\[1\]"):
        report(data)
