"""Mamba-1/2 models, mamba_ssm-format configs and Jamba (mappings/mamba.py): hand-derived state C.

KV and conv bf16 (2 B), recurrent state fp32 (4 B). Mamba-1 layer: C = I·N·4 + (w − 1)·I·2 (I channels,
N = d_state, w = d_conv). Mamba-2 layer: C = heads·P·N·4 + (w − 1)·(heads·P + 2·G·N)·2.
"""

from __future__ import annotations

import json

import pytest

import hfkv
from hfkv.errors import UnsupportedModelError

from _helpers import HUB_CONFIGS, kinds, load, report, state_of


# -- mamba_ssm's own config format ---------------------------------------------------------------------


MAMBA_SSM = "state-spaces__mamba-2.8b"


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


# -- pure SSMs --------------------------------------------------------------------------------------


def test_mamba_2_8b_mamba1():
    rep = report(load("state-spaces__mamba-2.8b-hf"))
    c = 5120 * 16 * 4 + 3 * 5120 * 2  # I = 5120, d_state 16: 327680 + 30720 = 358400
    assert state_of(rep, 0) == c
    assert rep.alpha_bytes_per_token == 0  # no KV at all
    assert rep.gamma_bytes_per_request == 64 * c == 22937600
    params = rep.to_dict()["layers"][0]["parts"][0]["params"]
    assert params["version"] == 1 and params["head_dim"] == 1 and params.get("n_groups", 0) == 0


def test_falcon_mamba_defaults():
    rep = report(load("tiiuae__falcon-mamba-7b-transformers-defaults"))
    c = 1536 * 16 * 4 + 3 * 1536 * 2  # I = 1536 (2 × 768): 98304 + 9216 = 107520
    assert rep.gamma_bytes_per_request == 32 * c == 3440640


def test_mamba2_defaults():
    rep = report(load("state-spaces__mamba2-2.8b-transformers-defaults"))
    c = 128 * 64 * 128 * 4 + 3 * (128 * 64 + 2 * 8 * 128) * 2  # 4194304 + 61440 = 4255744
    assert state_of(rep, 0) == c
    assert rep.gamma_bytes_per_request == 64 * c == 272367616
    assert rep.alpha_bytes_per_token == 0


# -- hybrids ----------------------------------------------------------------------------------------


def test_jamba_defaults():
    rep = report(load("ai21labs__Jamba-v0.1-transformers-defaults"))
    # attention iff i % 8 == 4 → i = 4, 12, 20, 28; 8 KV heads × 128
    assert [i for i, k in enumerate(kinds(rep)) if k == "full"] == [4, 12, 20, 28]
    assert rep.alpha_bytes_per_token == 4 * 8 * 128 * 2 * 2 == 16384
    c = 8192 * 16 * 4 + 3 * 8192 * 2  # Mamba-1, I = 2 × 4096: 524288 + 49152 = 573440
    assert state_of(rep, 0) == c
    assert rep.gamma_bytes_per_request == 28 * c == 16056320


def test_jamba_without_attention_layers_reads_no_head_count():
    # 4 layers, attention iff i % 8 == 4: none. The config still writes its 32 heads and 8 KV heads, which
    # size nothing: exact (no "estimate" for an unread head count), and said
    data = dict(load("ai21labs__Jamba-v0.1-transformers-defaults"), num_hidden_layers=4)
    rep = report(data)
    assert kinds(rep) == ["mamba"] * 4 and rep.alpha_bytes_per_token == 0
    assert rep.gamma_bytes_per_request == 4 * (8192 * 16 * 4 + 3 * 8192 * 2) == 2293760
    assert not [w for w in rep.warnings if w.startswith("estimate")], rep.warnings
    assert any("no layer is an attention layer: num_attention_heads, num_key_value_heads size no cache" in n
               for n in rep.notes), rep.notes


def test_jamba_offset_must_be_below_period():
    data = load("ai21labs__Jamba-v0.1-transformers-defaults")
    data["attn_layer_offset"] = 8
    with pytest.raises(hfkv.ConfigError, match="attn_layer_offset"):
        report(data)


# -- mamba_ssm's names at the top level (issue 31.2) ------------------------------------------------------


def test_mamba_ssm_names_at_the_top_level_are_read():
    # a copy that lifts d_state 64 and d_conv 2 out of ssm_cfg: I = 2 × 2560 = 5120 channels
    data = dict(load(MAMBA_SSM), d_state=64, d_conv=2)
    assert report(data).gamma_bytes_per_request == 64 * (5120 * 64 * 4 + 1 * 5120 * 2) == 84541440  # was d_state 16


def test_the_transformers_mapper_reads_mamba_ssm_names_at_the_top_level():
    hf = {k: v for k, v in load("state-spaces__mamba-2.8b-hf").items() if k not in ("state_size", "conv_kernel",
                                                                                   "intermediate_size", "expand")}
    rep = report(dict(hf, d_state=64, d_conv=2, d_inner=5120))
    assert rep.mapper == "mamba.mamba1"
    assert rep.gamma_bytes_per_request == 64 * (5120 * 64 * 4 + 1 * 5120 * 2) == 84541440


def test_a_top_level_name_and_ssm_cfg_that_disagree_are_an_estimate():
    rep = report(dict(load(MAMBA_SSM), d_state=16, ssm_cfg={"d_state": 64}))
    assert rep.gamma_bytes_per_request == 64 * (5120 * 64 * 4 + 3 * 5120 * 2)  # ssm_cfg's 64, d_conv 4
    assert any(w.startswith("estimate, not exact: ssm_cfg.d_state = 64 and d_state = 16") for w in rep.warnings)
