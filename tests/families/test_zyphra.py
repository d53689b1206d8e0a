"""Zyphra's hybrids (mappings/zyphra.py): Zamba v1 and Zamba2, hand-derived state and KV.

KV and conv bf16 (2 B), recurrent state fp32 (4 B). Mamba-1 layer: C = I·N·4 + (w − 1)·I·2 (I channels,
N = d_state, w = d_conv). Mamba-2 layer: C = heads·P·N·4 + (w − 1)·(heads·P + 2·G·N)·2.
"""

from __future__ import annotations

import pytest

from hfkv import ConfigError

from _helpers import kinds, load, report, state_of


# -- Zamba v1 ------------------------------------------------------------------------------------------


ZAMBA = "Zyphra__Zamba-7B-v1-transformers-defaults"


# ZambaConfig: hidden 3712, mamba_expand 2 → I = 7424 channels, d_state 16, d_conv 4
ZAMBA_C = 7424 * 16 * 4 + 3 * 7424 * 2  # 475,136 + 44,544 = 519,680

ZAMBA_HYBRID = [2, 7, 13, 19, 25, 31, 37, 43, 49, 55, 61, 67, 73]  # 2, then 3 + j for j % 6 == 4


def test_zamba_7b_v1():
    rep = report(load(ZAMBA))
    assert rep.mapper == "zyphra.zamba"
    k = kinds(rep)
    assert len(k) == 76 and [i for i, kind in enumerate(k) if kind == "hybrid"] == ZAMBA_HYBRID
    assert k.count("mamba") == 63  # 13 attention applications, 76 Mamba-1 states
    # the shared block's 16 KV heads × head_dim 2 × 3712 ÷ 16 = 464, K and V, bf16, per application
    assert rep.alpha_bytes_per_token == 13 * 2 * 16 * 464 * 2 == 386048
    assert state_of(rep, 0) == ZAMBA_C and state_of(rep, 2) == ZAMBA_C
    assert rep.gamma_bytes_per_request == 76 * ZAMBA_C == 39495680
    assert not [w for w in rep.warnings if w.startswith("estimate")]


def test_zamba_layers_block_type_decides_and_legacy_names_are_read():
    data = dict(load(ZAMBA), num_hidden_layers=4, layers_block_type=["mamba", "hybrid", "mamba", "hybrid"])
    rep = report(data)
    assert kinds(rep) == ["mamba", "hybrid", "mamba", "hybrid"]
    assert rep.alpha_bytes_per_token == 2 * 2 * 16 * 464 * 2 == 59392


def test_zamba_kv_heads_left_out_are_the_class_default():
    data = {k: v for k, v in load(ZAMBA).items() if k != "num_key_value_heads"}
    data["num_attention_heads"] = 32  # head_dim 2 × 3712 ÷ 32 = 232; KV heads: ZambaConfig's 16
    assert report(data).alpha_bytes_per_token == 13 * 2 * 16 * 232 * 2 == 193024


def test_zamba_tp2_halves_heads_and_channels():
    rep = report(load(ZAMBA), tensor_parallel_size=2)
    assert rep.alpha_bytes_per_token == 13 * 2 * 8 * 464 * 2 == 193024
    assert rep.gamma_bytes_per_request == 76 * (3712 * 16 * 4 + 3 * 3712 * 2) == 19747840


# -- hybrids ----------------------------------------------------------------------------------------


def test_zamba2_defaults_hybrid_layers_have_own_kv():
    rep = report(load("Zyphra__Zamba2-2.7B-transformers-defaults"))
    k = kinds(rep)
    assert [i for i, kind in enumerate(k) if kind == "hybrid"] == [6, 12, 18, 24, 30, 36, 42, 47, 51]
    # MHA: 32 heads × head_dim 2 × 2560 / 32 = 160
    assert rep.alpha_bytes_per_token == 9 * 32 * 160 * 2 * 2 == 184320
    # Mamba-2: 8 heads × head_dim 2 × 2560 / 8 = 640, 1 group, d_state 64
    c = 8 * 640 * 64 * 4 + 3 * (8 * 640 + 2 * 64) * 2  # 1310720 + 31488 = 1342208
    assert state_of(rep, 0) == c
    assert rep.gamma_bytes_per_request == 54 * c == 72479232


# -- ZAYA1 ------------------------------------------------------------------------------------------


ZAYA = "Zyphra__ZAYA1-8B-transformers-defaults"


ZAYA_CCA = (8 + 2) * 128 * (2 + 2 - 2) * 2 + 2048 * 1 * 2  # 5120 conv + 4096 (hidden, 1) = 9216


def test_zaya_defaults():
    rep = report(load(ZAYA))
    # 40 hybrid layers, 2 KV heads × (128 + 128) × 2 B = 1024 B each
    assert set(kinds(rep)) == {"full+cca"}
    assert rep.alpha_bytes_per_token == 40 * 1024 == 40960
    assert state_of(rep, 0) == ZAYA_CCA == 9216
    assert rep.gamma_bytes_per_request == 40 * 9216 == 368640


def test_zaya_layers_a_marks_attention():
    data = load(ZAYA)
    data["zaya_layers"] = ["a", 16] * 20  # SGLang's list: 'a' = attention, numbers = MoE layers
    rep = report(data)
    assert kinds(rep)[:2] == ["full+cca", "mlp"]
    assert rep.alpha_bytes_per_token == 20 * 1024 == 20480
    assert rep.gamma_bytes_per_request == 20 * 9216 == 184320


def test_zaya_without_pattern_uses_even_layers():
    data = load(ZAYA)
    del data["layer_types"]
    rep = report(data)
    assert rep.alpha_bytes_per_token == 20 * 1024  # attention iff i is even
    assert any("i is even" in w for w in rep.warnings)


def test_zaya_sliding_layers():
    data = load(ZAYA)
    data["layer_types"] = ["hybrid_sliding", "hybrid"] * 20
    data["sliding_window"] = 4096
    rep = report(data)
    assert rep.alpha_bytes_per_token == 20 * 1024 == 20480
    assert rep.gamma_bytes_per_request == 20 * 4096 * 1024 + 40 * 9216 == 84254720
    del data["sliding_window"]
    with pytest.raises(ConfigError, match="sliding_window"):
        report(data)


# -- Zyphra's pre-transformers Zamba2 format --------------------------------------------------------------

# Zyphra's own Zamba2Config (before transformers had the model) wrote "m" (a Mamba-2 layer) and "g" (the
# shared block, then a Mamba-2 layer) and mamba_ssm-style sizes; its defaults: 54 layers, hidden 2560,
# 32 heads, state_size 64, conv_dimension 4, expansion_factor 2, mamba_headdim 64, and this pattern.
ZYPHRA_PATTERN = (["m"] * 6 + ["g"] + (["m"] * 5 + ["g"]) * 6 + ["m"] * 4 + ["g"] + ["m"] * 3 + ["g"] + ["m"] * 2)
ZYPHRA_FORMAT = {
    "architectures": ["Zamba2ForCausalLM"], "model_type": "zamba2", "num_hidden_layers": 54, "hidden_size": 2560,
    "num_attention_heads": 32, "num_query_groups": 32, "kv_channels": 80, "state_size": 64, "conv_dimension": 4,
    "expansion_factor": 2, "mamba_headdim": 64, "num_mem_blocks": 2, "use_shared_block_lora": True,
    "lora_rank": 128, "layers_block_type": ZYPHRA_PATTERN, "max_position_embeddings": 4096,
}
# Mamba-2: 2 × 2560 = 5120 channels in 80 heads of 64, N = 64, one group, w = 4
ZYPHRA_C = 80 * 64 * 64 * 4 + 3 * (5120 + 2 * 64) * 2  # 1,310,720 + 31,488 = 1,342,208


def test_zyphra_format_m_and_g_is_sized():
    assert len(ZYPHRA_PATTERN) == 54 and ZYPHRA_PATTERN.count("g") == 9
    rep = report(ZYPHRA_FORMAT)
    assert rep.mapper == "zyphra.zamba2"
    assert [i for i, kind in enumerate(kinds(rep)) if kind == "hybrid"] == [
        i for i, name in enumerate(ZYPHRA_PATTERN) if name == "g"]
    # each "g": its own K and V, 32 groups × 2·kv_channels = 160 values, bf16
    assert rep.alpha_bytes_per_token == 9 * 2 * 32 * 160 * 2 == 184320
    assert rep.gamma_bytes_per_request == 54 * ZYPHRA_C == 72479232
    assert not [w for w in rep.warnings if w.startswith("estimate")], rep.warnings
    assert any("Zyphra's pre-transformers Zamba2 format" in n and "vLLM and SGLang load only the transformers" in n
               for n in rep.notes)


def test_zyphra_format_sizes_with_hybrid_names_are_read():
    # Zyphra's fork for transformers 4.43.0.dev0 kept state_size & co. with "mamba"/"hybrid" names: the
    # Mamba heads are 5120 ÷ 64 = 80 (not ZambaConfig's n_mamba_heads default of 8), state_size 64 read
    data = dict(ZYPHRA_FORMAT, layers_block_type=["hybrid" if n == "g" else "mamba" for n in ZYPHRA_PATTERN],
                mamba_ngroups=2, state_size=128)
    rep = report(data)
    per_layer = 80 * 64 * 128 * 4 + 3 * (5120 + 2 * 2 * 128) * 2  # 2,621,440 + 33,792 = 2,655,232
    assert rep.gamma_bytes_per_request == 54 * per_layer
    assert rep.alpha_bytes_per_token == 184320
    assert not [w for w in rep.warnings if w.startswith("estimate")], rep.warnings


def test_zyphra_format_says_what_it_left_out():
    data = {k: v for k, v in ZYPHRA_FORMAT.items() if k not in ("conv_dimension", "mamba_headdim")}
    rep = report(data)
    assert rep.gamma_bytes_per_request == 54 * ZYPHRA_C  # Zyphra's class: conv 4, head dim 64
    assert any("conv_dimension 4" in n and "mamba_headdim 64" in n for n in rep.notes), rep.notes


def test_zyphra_format_unknown_name_is_one_line():
    with pytest.raises(ConfigError, match=r"layers_block_type\[0\].*unknown layer type 'x'"):
        report(dict(ZYPHRA_FORMAT, layers_block_type=["x"] + ZYPHRA_PATTERN[1:]))
