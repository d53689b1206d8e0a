"""Mamba-1/2 models, SSM hybrids and LFM2 short-conv hybrids: hand-derived α, γ and per-layer state C.

Conventions: KV and conv state bf16 (2 B), SSM state fp32 (4 B) unless a test says otherwise.
Mamba-2: C = heads·head_dim·d_state·4 + (w − 1)·(heads·head_dim + 2·groups·d_state)·2.
Mamba-1: C = I·d_state·4 + (w − 1)·I·2 (I = intermediate size). Short conv: C = (w − 1)·hidden·2.
GQA layer: E = K·2·H·2.
"""

from __future__ import annotations

import json

import pytest

import hfkv
from hfkv.model.config import ConfigView
from hfkv.mappings import all_mappers, resolve

from _helpers import FIXTURES, HUB_CONFIGS, kinds, load, report, state_of  # noqa: E402


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


def test_falcon_h1_both_parts_every_layer():
    rep = report(load("tiiuae__Falcon-H1-1.5B-Deep-Instruct-transformers-defaults"))
    layers = rep.to_dict()["layers"]
    assert len(layers) == 32 and all(len(layer["parts"]) == 2 for layer in layers)
    assert {part["kind"] for part in layers[0]["parts"]} == {"full", "mamba"}
    # attention: 8 KV heads × head_dim 4096/32 = 128 on every one of the 32 layers
    assert rep.alpha_bytes_per_token == 32 * 8 * 128 * 2 * 2 == 131072
    # Mamba-2: d_head "auto" = d_ssm 1024 / 128 heads = 8; 1 group, d_state 256
    c = 128 * 8 * 256 * 4 + 3 * (128 * 8 + 2 * 1 * 256) * 2  # 1048576 + 9216 = 1057792
    assert state_of(rep, 0) == c
    assert rep.gamma_bytes_per_request == 32 * c == 33849344


GRANITE_C = 128 * 64 * 256 * 4 + 3 * (128 * 64 + 2 * 1 * 256) * 2  # d_head 2·4096/128 = 64: 8388608 + 52224


def test_granite_hybrid_without_layer_types_is_all_mamba():
    # The fixture has no layer_types: GraniteMoeHybridConfig fills ["linear_attention"] × 32 (transformers
    # 5 configuration_granitemoehybrid.py), which vLLM reads too (its oracle row: 32 Mamba layers, no attention
    # group; tests/oracles/vllm-0.33.0-fixtures-sweep.jsonl).
    rep = report(load("ibm-granite__granite-speech-3.2-8b-transformers-defaults"))
    assert set(kinds(rep)) == {"mamba"} and len(kinds(rep)) == 32
    assert rep.alpha_bytes_per_token == 0
    assert state_of(rep, 0) == GRANITE_C == 8440832
    assert rep.gamma_bytes_per_request == 32 * GRANITE_C
    assert "layer_types" in rep.transformers_defaults


def test_granite_hybrid_layer_types_both_spellings():
    data = load("ibm-granite__granite-speech-3.2-8b-transformers-defaults")
    data["num_hidden_layers"] = 4
    data["layer_types"] = ["mamba", "attention", "linear_attention", "full_attention"]
    rep = report(data)
    assert kinds(rep) == ["mamba", "full", "mamba", "full"]
    assert rep.gamma_bytes_per_request == 2 * GRANITE_C


def test_jamba_defaults():
    rep = report(load("ai21labs__Jamba-v0.1-transformers-defaults"))
    # attention iff i % 8 == 4 → i = 4, 12, 20, 28; 8 KV heads × 128
    assert [i for i, k in enumerate(kinds(rep)) if k == "full"] == [4, 12, 20, 28]
    assert rep.alpha_bytes_per_token == 4 * 8 * 128 * 2 * 2 == 16384
    c = 8192 * 16 * 4 + 3 * 8192 * 2  # Mamba-1, I = 2 × 4096: 524288 + 49152 = 573440
    assert state_of(rep, 0) == c
    assert rep.gamma_bytes_per_request == 28 * c == 16056320


def test_jamba_offset_must_be_below_period():
    data = load("ai21labs__Jamba-v0.1-transformers-defaults")
    data["attn_layer_offset"] = 8
    with pytest.raises(hfkv.ConfigError, match="attn_layer_offset"):
        report(data)


def test_bamba_defaults_and_indices():
    data = load("ibm-fms__Bamba-9.8b-2.2T-hf-transformers-defaults")
    rep = report(data)
    assert rep.alpha_bytes_per_token == 0  # no attn_layer_indices: all 32 layers Mamba-2
    assert rep.gamma_bytes_per_request == 32 * GRANITE_C == 270106624  # same Mamba geometry as Granite
    data["attn_layer_indices"] = [9, 18, 27]  # 0-based
    rep = report(data)
    assert [i for i, k in enumerate(kinds(rep)) if k == "full"] == [9, 18, 27]
    assert rep.alpha_bytes_per_token == 3 * 8 * 128 * 2 * 2 == 12288
    assert rep.gamma_bytes_per_request == 29 * GRANITE_C


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


# -- LFM2 short conv --------------------------------------------------------------------------------


def lfm2_causal() -> dict:
    """The LFM2.5 encoder config as a causal LFM2 (same layer_types: 10 conv, 6 attention)."""
    data = load("LiquidAI__LFM2.5-Embedding-350M")
    data["architectures"] = ["Lfm2ForCausalLM"]
    del data["auto_map"]
    return data


def test_lfm2_embedding_model_is_sized_as_sglang_serves_it():
    rep = report(load("LiquidAI__LFM2.5-Embedding-350M"))
    # 6 attention layers × 2 × 8 KV heads × (1024 / 16 = 64) × 2 B; 10 conv layers × (3 − 1) × 1024 × 2 B
    assert rep.alpha_bytes_per_token == 6 * 2 * 8 * 64 * 2 == 12288
    assert rep.gamma_bytes_per_request == 10 * 2 * 1024 * 2 == 40960
    assert any("bidirectional embedding model" in note for note in rep.notes)


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


# -- registry and real configs ----------------------------------------------------------------------

SSM_TYPES = (
    "nemotron_h", "falcon_h1", "granitemoehybrid", "jamba", "bamba", "zamba", "zamba2", "mamba", "falcon_mamba",
    "mamba2",
)
CONV_TYPES = ("lfm2", "lfm2_moe", "lfm2_vl")


@pytest.mark.parametrize("types,family", [(SSM_TYPES, "ssm"), (CONV_TYPES, "conv")])
def test_model_types_registered_once(types, family):
    owners = [m for m in all_mappers() if set(m.model_types) & set(types)]
    assert sorted(mt for m in owners for mt in m.model_types) == sorted(types)
    for mt in types:
        assert resolve(ConfigView({"model_type": mt})).family == family
    for mapper in owners:
        for folder in mapper.fixtures.values():
            assert (FIXTURES / folder / "config.json").is_file(), folder


def test_hub_configs_of_ssm_families_map_cleanly():
    if not HUB_CONFIGS.is_dir():
        pytest.skip("shared hub-configs folder not present")
    seen = 0
    for path in sorted(HUB_CONFIGS.glob("*.json")):
        data = json.loads(path.read_text())
        if resolve(ConfigView(data)).family != "ssm":
            continue
        rep = report(data)
        seen += 1
        assert rep.gamma_bytes_per_request > 0, path.name
        assert not [w for w in rep.warnings if "dtype" not in w], (path.name, rep.warnings)
    assert seen >= 3  # Nemotron-H 56B, Nemotron-3-Nano, mamba-2.8b
