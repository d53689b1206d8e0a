"""Qwen families (mappings/qwen.py): hand-derived α, γ and per-layer state C.

KV and conv state bf16 (2 B), recurrent state fp32 (4 B) unless a test says otherwise.
GDN: C = N_v·H_k·H_v·4 + (w − 1)·(N_v·H_v + 2·N_qk·H_k)·2.
"""

from __future__ import annotations

import pytest

import hfkv

from _helpers import kinds, load, report, state_of


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
