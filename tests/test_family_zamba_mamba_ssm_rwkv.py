"""Zamba v1, mamba_ssm-format configs and RWKV-4 (issue 22 part 3): hand-derived state and KV.

Conventions: KV and conv bf16 (2 B), recurrent state fp32 (4 B). Mamba-1 layer:
C = I·N·4 + (w − 1)·I·2 (I channels, N = d_state, w = d_conv). Mamba-2 layer:
C = heads·P·N·4 + (w − 1)·(heads·P + 2·G·N)·2. RWKV-4 layer: C = 3·H·4 + 2·H·2.
"""

from __future__ import annotations

import json

import pytest

import hfkv
from hfkv.errors import UnsupportedModelError

from _helpers import HUB_CONFIGS, kinds, load, report, state_of  # noqa: E402

ZAMBA = "Zyphra__Zamba-7B-v1-transformers-defaults"
MAMBA_SSM = "state-spaces__mamba-2.8b"
RWKV = "RWKV__rwkv-4-169m-pile"


# -- Zamba v1 ------------------------------------------------------------------------------------------

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


# -- mamba_ssm's own config format ---------------------------------------------------------------------

MAMBA_2_8B_C = 5120 * 16 * 4 + 3 * 5120 * 2  # d_model 2560 × expand 2 = 5120; 327,680 + 30,720 = 358,400


def test_mamba_ssm_format_takes_mamba_ssm_defaults():
    rep = report(load(MAMBA_SSM))
    assert rep.mapper == "mamba.mamba_ssm"
    assert rep.alpha_bytes_per_token == 0
    assert rep.gamma_bytes_per_request == 64 * MAMBA_2_8B_C == 22937600


def test_mamba_ssm_format_equals_its_transformers_conversion():
    path = HUB_CONFIGS / "state-spaces__mamba-2.8b-hf.json"
    if not path.is_file():
        pytest.skip(f"{path} is absent: the -hf conversion cannot be compared here")
    hf = report(json.loads(path.read_text()))
    assert hf.mapper == "mamba.mamba1"
    assert hf.gamma_bytes_per_request == report(load(MAMBA_SSM)).gamma_bytes_per_request == 22937600


def test_ssm_cfg_d_state_64_is_followed():
    # the config: d_state 64, d_conv 2 (not the defaults 16 and 4)
    data = dict(load(MAMBA_SSM), ssm_cfg={"d_state": 64, "d_conv": 2, "expand": 2})
    assert report(data).gamma_bytes_per_request == 64 * (5120 * 64 * 4 + 1 * 5120 * 2) == 84541440


def test_ssm_cfg_is_read_by_the_transformers_mamba_mapper_too():
    data = dict(load(MAMBA_SSM), model_type="mamba", architectures=["MambaForCausalLM"],
                ssm_cfg={"d_state": 64, "d_conv": 2, "expand": 2})
    rep = report(data)
    assert rep.mapper == "mamba.mamba1"
    assert rep.gamma_bytes_per_request == 84541440  # was 22,937,600: the defaults, d_state 16


def test_a_transformers_key_and_ssm_cfg_that_disagree_are_an_estimate():
    data = dict(load(MAMBA_SSM), model_type="mamba", state_size=16, ssm_cfg={"d_state": 64, "d_conv": 2})
    rep = report(data)
    assert rep.gamma_bytes_per_request == 64 * (5120 * 16 * 4 + 1 * 5120 * 2) == 21626880  # state_size wins
    assert any(w.startswith("estimate, not exact: state_size = 16 and ssm_cfg.d_state = 64") for w in rep.warnings)


def test_mamba_ssm_mamba2_layers():
    # mamba_ssm's Mamba2 defaults: d_state 128, d_conv 4, expand 2, headdim 64, ngroups 1
    data = {"d_model": 2560, "d_intermediate": 0, "n_layer": 64, "vocab_size": 50277, "ssm_cfg": {"layer": "Mamba2"},
            "attn_layer_idx": [], "attn_cfg": {}, "rms_norm": True, "residual_in_fp32": True,
            "fused_add_norm": True, "pad_vocab_size_multiple": 16, "tie_embeddings": True}
    rep = report(data)
    heads = 5120 // 64  # 80
    per_layer = heads * 64 * 128 * 4 + 3 * (5120 + 2 * 1 * 128) * 2  # 2,621,440 + 32,256 = 2,653,696
    assert rep.gamma_bytes_per_request == 64 * per_layer == 169836544


def test_mamba_ssm_hybrids_and_other_mixers_are_refused():
    with pytest.raises(UnsupportedModelError, match="attn_layer_idx"):
        report(dict(load(MAMBA_SSM), attn_layer_idx=[9, 18], attn_cfg={"num_heads": 30}))
    with pytest.raises(UnsupportedModelError, match="Mamba3"):
        report(dict(load(MAMBA_SSM), ssm_cfg={"layer": "Mamba3"}))


# -- RWKV -----------------------------------------------------------------------------------------------

RWKV_C = 3 * 768 * 4 + 2 * 768 * 2  # WKV numerator, denominator, max (fp32) + two token shifts: 12,288


def test_rwkv4_state_per_layer():
    rep = report(load(RWKV))
    assert rep.mapper == "rwkv.rwkv"
    assert rep.alpha_bytes_per_token == 0
    assert state_of(rep, 0) == RWKV_C == 12288
    assert rep.gamma_bytes_per_request == 12 * RWKV_C == 147456
    assert rep.recurrent_state_bytes == 147456


def test_rwkv4_tp2_and_state_dtype():
    rep = report(load(RWKV), tensor_parallel_size=2)
    assert rep.gamma_bytes_per_request == 12 * (3 * 384 * 4 + 2 * 384 * 2) == 73728
    rep = report(load(RWKV), state_dtype="bf16")
    assert rep.gamma_bytes_per_request == 12 * (3 * 768 * 2 + 2 * 768 * 2) == 92160


def test_rwkv4_attention_hidden_size_that_differs_is_warned():
    rep = report(dict(load(RWKV), attention_hidden_size=1024))
    assert rep.gamma_bytes_per_request == 147456  # the reference sizes its state by hidden_size
    assert any(w.startswith("estimate, not exact: attention_hidden_size = 1024") for w in rep.warnings)


@pytest.mark.parametrize("model_type,arch", [
    ("rwkv5", "Rwkv5ForCausalLM"), ("rwkv6", "Rwkv6ForCausalLM"), ("rwkv7", "Rwkv7ForCausalLM"),
    ("rwkv7", "RWKV7ForCausalLM"),
])
def test_later_rwkv_generations_are_refused_by_name(model_type, arch):
    data = {"architectures": [arch], "model_type": model_type, "hidden_size": 2048, "num_hidden_layers": 24,
            "head_size": 64}
    with pytest.raises(hfkv.UnsupportedModelError, match="RWKV-5/6/7"):
        report(data)
