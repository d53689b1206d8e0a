"""Linear-attention hybrids (GDN, KDA, lightning): hand-derived α, γ and per-layer state C.

Conventions of the figures below: KV and conv state bf16 (2 B), recurrent state fp32 (4 B) unless a
test says otherwise. GDN: C = N_v·H_k·H_v·4 + (w − 1)·(N_v·H_v + 2·N_qk·H_k)·2. KDA: N_qk = N_v = N,
H_k = H_v = H. Lightning: C = N·H²·4, no conv. GQA layer: E = K·2·H·2. MLA layer: E = (d_c + d_r)·2.
"""

from __future__ import annotations

import json

import pytest

import hfkv
from hfkv.mappings import all_mappers, resolve
from hfkv.model.config import ConfigView

from _helpers import FIXTURES, HUB_CONFIGS, kinds, load, report, state_of  # noqa: E402


# GDN layer of Qwen3-Next / Qwen3.5 (N_qk 16, N_v 32, H_k = H_v = 128, w 4), TP 1:
QWEN_GDN_C = 32 * 128 * 128 * 4 + 3 * (32 * 128 + 2 * 16 * 128) * 2  # 2097152 + 49152 = 2146304


# -- Qwen3-Next / Qwen3.5 ---------------------------------------------------------------------------


def test_qwen35_moe_alpha_and_gdn_state():
    rep = report(load("Qwen__Qwen3.5-35B-A3B"))
    assert rep.family == "linear"
    # 40 layers, full iff (i + 1) % 4 == 0 → 10 full layers of 2 KV heads × 256 dims
    assert rep.alpha_bytes_per_token == 10 * 2 * 256 * 2 * 2 == 20480
    assert state_of(rep, 0) == 32 * 128 * 128 * 4 + 3 * (32 * 128 + 2 * 16 * 128) * 2 == QWEN_GDN_C
    assert state_of(rep, 3) == 0  # layer 3 is full attention
    assert rep.gamma_bytes_per_request == 30 * QWEN_GDN_C == 64389120
    assert any("MTP" in note for note in rep.notes)  # mtp_num_hidden_layers: 1 left out
    assert any("mamba_ssm_dtype" in note for note in rep.notes)


def test_qwen3_next_tp1():
    rep = report(load("Qwen__Qwen3-Next-80B-A3B-Thinking"))
    assert kinds(rep)[:4] == ["gdn", "gdn", "gdn", "full"]
    assert rep.alpha_bytes_per_token == 12 * 2 * 256 * 2 * 2 == 24576  # 48 / 4 = 12 full layers
    assert rep.gamma_bytes_per_request == 36 * QWEN_GDN_C == 77266944  # 36 GDN layers


def test_qwen3_next_tp2_splits_state_over_heads():
    rep = report(load("Qwen__Qwen3-Next-80B-A3B-Thinking"), tensor_parallel_size=2)
    # KV heads 2 // 2 = 1 per GPU: 12 × 1 × 256 × 2 × 2
    assert rep.alpha_bytes_per_token == 12 * 1 * 256 * 2 * 2 == 12288
    # N_v 32/2 = 16, N_qk 16/2 = 8 per GPU
    c_tp2 = 16 * 128 * 128 * 4 + 3 * (16 * 128 + 2 * 8 * 128) * 2  # 1048576 + 24576 = 1073152
    assert state_of(rep, 0) == c_tp2
    assert rep.gamma_bytes_per_request == 36 * c_tp2 == 38633472


def test_qwen3_next_tp4_keeps_one_kv_head_per_gpu():
    rep = report(load("Qwen__Qwen3-Next-80B-A3B-Thinking"), tensor_parallel_size=4)
    assert rep.alpha_bytes_per_token == 12 * 1 * 256 * 2 * 2  # max(1, 2 // 4) = 1 head, replicated
    assert state_of(rep, 0) == 8 * 128 * 128 * 4 + 3 * (8 * 128 + 2 * 4 * 128) * 2  # 524288 + 12288


def test_qwen3_next_bf16_state_halves_the_matrix():
    rep = report(load("Qwen__Qwen3-Next-80B-A3B-Thinking"), state_dtype="bf16")
    assert state_of(rep, 0) == 32 * 128 * 128 * 2 + 3 * (32 * 128 + 2 * 16 * 128) * 2  # 1048576 + 49152


def test_qwen35_dense_defaults_fixture():
    rep = report(load("Qwen__Qwen3.5-27B-transformers-defaults"))
    # 32 layers, 8 full of 4 KV heads × 256: 8 × 4 × 256 × 2 × 2
    assert rep.alpha_bytes_per_token == 8 * 4 * 256 * 2 * 2 == 32768
    assert rep.gamma_bytes_per_request == 24 * QWEN_GDN_C == 51511296


@pytest.mark.parametrize("model_type", ["qwen3_5_text", "qwen3_5_moe_text"])
def test_qwen35_text_only_config(model_type):
    text = load("Qwen__Qwen3.5-35B-A3B")["text_config"]
    text["model_type"] = model_type
    rep = report(text)
    assert rep.mapper == "qwen.qwen_gdn"
    assert rep.alpha_bytes_per_token == 20480  # 10 × 2 × 256 × 2 × 2, as nested
    assert rep.gamma_bytes_per_request == 30 * QWEN_GDN_C


def test_qwen_interval_without_layer_types():
    data = load("Qwen__Qwen3-Next-80B-A3B-Thinking")
    data["full_attention_interval"] = 6
    rep = report(data)
    # 48 / 6 = 8 full layers (i = 5, 11, ...), 40 GDN
    assert [i for i, k in enumerate(kinds(rep)) if k == "full"] == [5, 11, 17, 23, 29, 35, 41, 47]
    assert rep.alpha_bytes_per_token == 8 * 2 * 256 * 2 * 2
    assert rep.gamma_bytes_per_request == 40 * QWEN_GDN_C


def test_qwen_layer_types_win_over_interval_with_warning():
    data = load("Qwen__Qwen3.5-35B-A3B")
    data["text_config"]["full_attention_interval"] = 8  # disagrees with layer_types (every 4th full)
    rep = report(data)
    assert rep.alpha_bytes_per_token == 20480  # layer_types: still 10 full layers
    assert any("disagree" in w for w in rep.warnings)


def test_unknown_layer_type_names_the_key():
    data = load("Qwen__Qwen3.5-35B-A3B")
    data["text_config"]["layer_types"][2] = "banana_attention"
    with pytest.raises(hfkv.ConfigError, match=r"text_config\.layer_types\[2\].*banana"):
        report(data)


# -- OLMo-Hybrid ------------------------------------------------------------------------------------

# GDN: N_qk = N_v = 30, H_k = int(0.75 × 3840 / 30) = 96, H_v = 2 × 96 = 192, w 4
OLMO_GDN_C = 30 * 96 * 192 * 4 + 3 * (30 * 192 + 2 * 30 * 96) * 2  # 2211840 + 69120 = 2280960


def test_olmo_hybrid_defaults_fixture():
    rep = report(load("allenai__Olmo-Hybrid-7B-transformers-defaults"))
    # full iff i % 4 == 3 → 8 full layers; 30 KV heads × head_dim 3840/30 = 128
    assert rep.alpha_bytes_per_token == 8 * 30 * 128 * 2 * 2 == 122880
    assert state_of(rep, 0) == OLMO_GDN_C
    assert rep.gamma_bytes_per_request == 24 * OLMO_GDN_C == 54743040


def test_olmo_hybrid_sparse_config_uses_transformers_defaults():
    sparse = {"model_type": "olmo_hybrid", "architectures": ["OlmoHybridForCausalLM"], "torch_dtype": "bfloat16"}
    rep = report(sparse)
    assert rep.gamma_bytes_per_request == 24 * OLMO_GDN_C  # linear_* filled as the class does
    assert "linear_key_head_dim" in rep.transformers_defaults
    assert any("default pattern" in note for note in rep.notes)


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


# -- GLM-5.3-Flash (KDA, 0-based kda_layers, MLA + DSA) ---------------------------------------------

GLM_KDA_C = 64 * 128 * 128 * 4 + 3 * (3 * 64 * 128) * 2  # 4194304 + 147456 = 4341760


def test_glm5_next_defaults_fixture():
    rep = report(load("zai-org__GLM-5.3-Flash-transformers-defaults"))
    # 45 layers, KDA iff i % 4 != 3 → 11 DSA layers; latent 512 + rope 0 (bf16) + indexer
    # 128 + 4 = 132 B (fp8 + scale) kept once per index_kpool = 16 tokens
    assert kinds(rep).count("dsa") == 11
    assert rep.alpha_bytes_per_token == pytest.approx(11 * (512 * 2 + 132 / 16))  # 11354.75
    assert rep.gamma_bytes_per_request == 34 * GLM_KDA_C == 147619840


def test_glm5_next_kda_layers_are_zero_based():
    data = load("zai-org__GLM-5.3-Flash-transformers-defaults")
    text = data["text_config"]
    del text["layer_types"], text["index_topk"]  # no DSA: plain MLA full layers
    text["linear_attn_config"] = {"kda_layers": [0, 1, 2, 4, 5, 6]}  # 0-based: layers 3 and 7..44 are MLA
    rep = report(data)
    k = kinds(rep)
    assert k[0] == "kda" and k[3] == "mla" and k[7] == "mla"
    assert k.count("kda") == 6 and k.count("mla") == 39
    assert rep.alpha_bytes_per_token == 39 * 512 * 2  # qk_rope_head_dim 0
    assert rep.gamma_bytes_per_request == 6 * GLM_KDA_C


def test_glm5_next_shared_indexer_layers_keep_no_keys():
    data = load("zai-org__GLM-5.3-Flash-transformers-defaults")
    text = data["text_config"]
    text["index_kpool"] = 1
    text["indexer_types"][7] = "shared"  # the second DSA layer reuses layer 3's top-k
    rep = report(data)
    assert kinds(rep)[7] == "dsa-shared-topk"
    assert rep.alpha_bytes_per_token == 11 * 1024 + 10 * 132  # 10 layers with indexer keys


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


# -- Bailing hybrid (KDA or lightning, MLA full layers) ---------------------------------------------


def test_bailing_kda_defaults_fixture():
    rep = report(load("inclusionAI__Ling-3.0-Flash-transformers-defaults"))
    # layer_group_size 6: full iff (i + 1) % 6 == 0 → 7 MLA of 42; KDA: 32 heads × head_dim 128
    kda_c = 32 * 128 * 128 * 4 + 3 * (3 * 32 * 128) * 2  # 2097152 + 73728 = 2170880
    assert rep.alpha_bytes_per_token == 7 * (512 + 64) * 2 == 8064
    assert state_of(rep, 0) == kda_c
    assert rep.gamma_bytes_per_request == 35 * kda_c == 75980800
    assert any("MTP" in note for note in rep.notes)


def test_bailing_lightning_without_short_conv():
    data = load("inclusionAI__Ling-3.0-Flash-transformers-defaults")
    del data["short_conv_kernel_size"]
    rep = report(data)
    assert kinds(rep)[0] == "lightning"
    assert state_of(rep, 0) == 32 * 128 * 128 * 4  # no conv state
    assert rep.gamma_bytes_per_request == 35 * 2097152


def test_bailing_group_size_list_and_ragged_warning():
    data = load("inclusionAI__Ling-3.0-Flash-transformers-defaults")
    data["num_hidden_layers"] = 4
    data["layer_group_size"] = [1, 0, 1, 0]  # 1 = linear
    rep = report(data)
    assert kinds(rep) == ["kda", "mla", "kda", "mla"]
    data["layer_group_size"] = 3  # 4 layers: full at i = 2 only; vLLM would also make layer 3 full
    rep = report(data)
    assert kinds(rep) == ["kda", "kda", "mla", "kda"]
    assert any("layer_group_size" in w for w in rep.warnings)


# -- registry and real configs ----------------------------------------------------------------------

LINEAR_TYPES = (
    "qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text", "olmo_hybrid", "kimi_linear",
    "kimi_k3", "glm5_next", "glm5_next_text", "minimax", "minimax_m1", "minimax_text_01", "bailing_hybrid",
)


def test_each_linear_model_type_registered_once():
    owners = [m for m in all_mappers() if set(m.model_types) & set(LINEAR_TYPES)]
    assert sorted(mt for m in owners for mt in m.model_types) == sorted(LINEAR_TYPES)
    assert {m.family for m in owners} == {"linear"}
    for mt in LINEAR_TYPES:
        assert resolve(ConfigView({"model_type": mt})).family == "linear"


def test_registered_fixtures_exist():
    for mapper in all_mappers():
        if mapper.family == "linear":
            for folder in mapper.fixtures.values():
                assert (FIXTURES / folder / "config.json").is_file(), folder


def test_hub_configs_of_linear_families_map_cleanly():
    if not HUB_CONFIGS.is_dir():
        pytest.skip("shared hub-configs folder not present")
    seen = 0
    for path in sorted(HUB_CONFIGS.glob("*.json")):
        data = json.loads(path.read_text())
        if resolve(ConfigView(data)).family != "linear":
            continue
        rep = report(data)
        seen += 1
        assert rep.gamma_bytes_per_request > 0, path.name  # every linear hybrid keeps state
        assert rep.alpha_bytes_per_token > 0, path.name  # and has some full layers
        assert not rep.warnings or all("dtype" in w for w in rep.warnings), (path.name, rep.warnings)
    assert seen >= 4  # Qwen3-Next, Qwen3.5, Kimi-K3, MiniMax-M1
