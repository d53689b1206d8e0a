"""GLM-5-Next (mappings/glm.py): KDA layers and a shared DSA indexer, hand-derived α and state.

KDA: C = N·H·H·4 + (w − 1)·3·N·H·2 (state fp32, conv bf16).
"""

from __future__ import annotations

import pytest

from _helpers import kinds, load, report


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
