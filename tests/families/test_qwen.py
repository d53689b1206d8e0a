"""Qwen families (mappings/qwen.py): hand-derived α, γ and per-layer state C.

KV and conv state bf16 (2 B), recurrent state fp32 (4 B) unless a test says otherwise.
GDN: C = N_v·H_k·H_v·4 + (w − 1)·(N_v·H_v + 2·N_qk·H_k)·2.
"""

from __future__ import annotations

import pytest

import hfkv
from hfkv import ConfigError

from _helpers import kinds, load, report, report as inspect, state_of


# -- Qwen3-Next / Qwen3.5 ---------------------------------------------------------------------------


# GDN layer of Qwen3-Next / Qwen3.5 (N_qk 16, N_v 32, H_k = H_v = 128, w 4), TP 1:
QWEN_GDN_C = 32 * 128 * 128 * 4 + 3 * (32 * 128 + 2 * 16 * 128) * 2  # 2097152 + 49152 = 2146304


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


# -- sliding windows on every layer / switched off -----------------------------------------------------


def test_qwen2_window_switched_off():
    rep = report("Qwen__Qwen2-7B-Instruct")  # sliding_window 131072 but use_sliding_window false
    assert rep.alpha_bytes_per_token == 28 * 2 * 4 * 128 * 2 == 57344
    assert rep.gamma_bytes_per_request == 0
    assert {layer.kind for layer in rep.layers} == {"full"}


# -- sliding hybrids ---------------------------------------------------------------------------------------


def test_qwen2_moe_window_off_by_default():
    rep = report("Qwen__Qwen1.5-MoE-A2.7B-transformers-defaults")  # use_sliding_window false
    assert rep.alpha_bytes_per_token == 24 * 2 * 16 * 128 * 2 == 196608  # engine-logs R17: 197132 ≈ +0.3%


# -- Qwen4-Exp --------------------------------------------------------------------------------------


QWEN4 = "Qwen__Qwen4-Exp-transformers-defaults"


# Qwen3-Next-shaped GDN layer (N_qk 16, N_v 32, H_k = H_v = 128, w 4):
GDN_C = 32 * 128 * 128 * 4 + 3 * (32 * 128 + 2 * 16 * 128) * 2  # 2097152 + 49152 = 2146304


def test_qwen4_exp_defaults():
    rep = report(load(QWEN4))
    assert rep.mapper == "qwen.qwen4_exp"
    # layer_types: indexed_attention iff (i + 1) % 4 == 0 → 10 full GQA layers of 2 KV heads × 256 dims
    assert kinds(rep)[:4] == ["gdn", "gdn", "gdn", "full"]
    assert rep.alpha_bytes_per_token == 10 * 2 * (256 + 256) * 2 == 20480
    assert rep.gamma_bytes_per_request == 30 * GDN_C == 64389120


def qwen4_with_qsa_and_ple() -> dict:
    data = load(QWEN4)
    data["text_config"].update(indexer_n_heads=16, indexer_kv_heads=1, indexer_head_dim=128, indexer_budget=2048,
                               indexer_compress_ratio=4, ple_layer_ids=[1, 2])
    return data


def test_qwen4_exp_qsa_indexer_and_ple_state():
    rep = report(qwen4_with_qsa_and_ple())
    assert kinds(rep)[:4] == ["gdn+ple", "gdn+ple", "gdn", "qsa"]  # ple_layer_ids [1, 2] are 1-based
    # QSA: 128 fp8 values + one 4 B scale = 132 B per 4 tokens = 33 B/token per full layer
    assert rep.alpha_bytes_per_token == 20480 + 10 * 132 / 4 == 20810
    # PLE: (2048 hidden × 4 hc) × ((4 − 1) × 3 ngram) = 73728 values × 2 B = 147456 per PLE layer
    assert state_of(rep, 0) == GDN_C + 2048 * 4 * 3 * 3 * 2 == 2293760
    assert rep.gamma_bytes_per_request == 30 * GDN_C + 2 * 147456 == 64684032
    assert any("PLE" in w for w in rep.warnings) and any("QSA" in w for w in rep.warnings)


def test_qwen4_exp_qsa_in_bf16():
    rep = report(qwen4_with_qsa_and_ple(), indexer_dtype="bf16")
    assert rep.alpha_bytes_per_token == 20480 + 10 * 128 * 2 / 4 == 21120  # 256 B per 4 tokens


@pytest.mark.parametrize("ids, problem", [([0], "outside 1..40"), ([4], "not a linear_attention layer")])
def test_qwen4_exp_bad_ple_ids(ids, problem):
    data = load(QWEN4)
    data["text_config"]["ple_layer_ids"] = ids  # 1-based: 0 is invalid, 4 is layer index 3 (full)
    with pytest.raises(ConfigError, match=problem):
        report(data)


def test_qwen4_exp_unknown_layer_type():
    data = load(QWEN4)
    data["text_config"]["layer_types"][5] = "mamba"
    with pytest.raises(ConfigError, match=r"layer_types\[5\]"):
        report(data)


def test_qwen2_vl_tp8_splits_the_eight_kv_heads():
    rep = inspect(load("Qwen__Qwen2-VL-transformers-defaults"), tensor_parallel_size=8)
    assert rep.alpha_bytes_per_token == 80 * 2 * 1 * 128 * 2 == 40960  # 8 KV heads / 8 ranks = 1
