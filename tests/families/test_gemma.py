"""Gemma families (mappings/gemma.py): RecurrentGemma, Gemma 3n and Gemma 4 (cross-layer KV sharing,
σ = 0 for a layer that reads another's cache).

Every expected figure is derived by hand; the arithmetic is beside it. bf16 KV (2 B) and fp32 recurrent state
(4 B) unless a test says otherwise."""

from __future__ import annotations

import copy

import pytest

from hfkv import ConfigError

from _helpers import kinds, load, report, state_of


# -- RecurrentGemma ---------------------------------------------------------------------------------


RGEMMA = "google__recurrentgemma-2b-transformers-defaults"


def test_recurrent_gemma_defaults():
    rep = report(load(RGEMMA))
    # block_types (recurrent, recurrent, attention) over 26 layers: attention at i % 3 == 2 → 8 layers
    assert kinds(rep).count("sliding") == 8 and kinds(rep)[:3] == ["rglru", "rglru", "sliding"]
    assert rep.alpha_bytes_per_token == 0  # every attention layer is local
    # window 2048 × 10 KV heads × (256 + 256) × 2 B = 2048 × 10240; RG-LRU 2560 × 4 + 3 × 2560 × 2 = 25600
    assert state_of(rep, 0) == 2560 * 4 + 3 * 2560 * 2 == 25600
    assert rep.gamma_bytes_per_request == 8 * 2048 * 10240 + 18 * 25600 == 168232960


def test_recurrent_gemma_tp2():
    rep = report(load(RGEMMA), tensor_parallel_size=2)
    # 5 KV heads per GPU: 5 × 512 × 2 = 5120 B; RG-LRU 1280 channels: 1280 × 4 + 3 × 1280 × 2 = 12800
    assert rep.gamma_bytes_per_request == 8 * 2048 * 5120 + 18 * 12800 == 84116480


def test_recurrent_gemma_empty_block_types():
    data = load(RGEMMA)
    data["block_types"] = []
    with pytest.raises(ConfigError, match="block_types"):
        report(data)


# -- Gemma 4 ----------------------------------------------------------------------------------------


def test_gemma4_e2b_shared_layers_own_nothing():
    rep = report(load("google__gemma-4-E2B-it"))
    assert rep.mapper == "gemma.gemma4" and rep.kv_cache_dtype == "bf16"
    # 35 layers, 20 shared → layers 15..34 read earlier caches (σ = 0)
    shared = [layer.index for layer in rep.layers if layer.copies == 0]
    assert shared == list(range(15, 35))
    # Owning layers 0..14: full at 4, 9, 14; the last non-shared sliding layer is 13
    assert rep.layers[15].source_layer == 13 and rep.layers[19].source_layer == 14
    assert rep.layers[34].source_layer == 14 and rep.layers[33].source_layer == 13
    # sliding: 2 × 1 KV head × 256 × 2 = 1024 B; full: global_head_dim 512, k_eq_v false → 1 KV head:
    # 2 × 1 × 512 × 2 = 2048 B
    assert rep.layers[0].entry_bytes == 1024 and rep.layers[4].entry_bytes == 2048
    # α = 3 owning full layers × 2048 = 6144; γ = 12 owning sliding layers × 512 × 1024 = 6291456
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (6144, 6291456)


def test_gemma4_26b_k_eq_v_uses_global_kv_heads():
    rep = report(load("google__gemma-4-26B-A4B"))
    # full layers 5, 11, 17, 23, 29: attention_k_eq_v → 2 global KV heads × 512, K and V both stored:
    # 2 × 2 × 512 × 2 = 4096 B; sliding: 2 × 8 × 256 × 2 = 8192 B over W = 1024
    assert rep.layers[5].entry_bytes == 4096 and rep.layers[0].entry_bytes == 8192
    # α = 5 × 4096 = 20480; γ = 25 × 1024 × 8192 = 209715200
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (20480, 209715200)
    assert any("attention_k_eq_v" in note for note in rep.notes)
    tp2 = report(load("google__gemma-4-26B-A4B"), tensor_parallel_size=2)
    # per GPU: full 2 // 2 = 1 head → 2048 B; sliding 8 // 2 = 4 heads → 4096 B
    # α = 5 × 2048 = 10240; γ = 25 × 1024 × 4096 = 104857600
    assert (tp2.alpha_bytes_per_token, tp2.gamma_bytes_per_request) == (10240, 104857600)


def test_gemma4_31b_nvfp4_declares_fp8_kv():
    rep = report(load("nvidia__Gemma-4-31B-IT-NVFP4"))
    assert rep.kv_cache_dtype == "fp8"  # quantization_config.kv_cache_scheme.num_bits 8
    # full (10 layers): 2 × 4 global KV heads × 512 × 1 = 4096; sliding (50): 2 × 16 × 256 × 1 = 8192
    # α = 10 × 4096 = 40960; γ = 50 × 1024 × 8192 = 419430400
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (40960, 419430400)


GEMMA4_SMALL = {
    "model_type": "gemma4_text",
    "dtype": "bfloat16",
    "num_hidden_layers": 8,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "num_global_key_value_heads": 1,
    "attention_k_eq_v": False,
    "head_dim": 256,
    "global_head_dim": 512,
    "sliding_window": 512,
}


def test_gemma4_default_pattern_forces_last_layer_full_and_bidirectional_halves_window():
    data = dict(GEMMA4_SMALL, use_bidirectional_attention="all")
    rep = report(data)
    # sliding iff (i + 1) % 6 != 0 → full at 5; the last layer (7) is forced full
    assert [layer.index for layer in rep.layers if layer.kind == "full"] == [5, 7]
    # k_eq_v false: full layers keep num_key_value_heads 2 → 2 × 2 × 512 × 2 = 4096; α = 2 × 4096 = 8192
    assert rep.alpha_bytes_per_token == 8192
    # W = 512 // 2 + 1 = 257; sliding 2 × 2 × 256 × 2 = 2048 B; γ = 6 × 257 × 2048 = 3158016
    assert rep.gamma_bytes_per_request == 3158016
    assert rep.layers[0].window == 257


def test_gemma4_consumer_without_an_owner_of_its_type_is_an_error():
    data = dict(GEMMA4_SMALL, num_hidden_layers=6, num_kv_shared_layers=1,
                layer_types=["sliding_attention"] * 5 + ["full_attention"])
    with pytest.raises(ConfigError, match=r"num_kv_shared_layers.*layer 5 is full"):
        report(data)


# -- Gemma 3n ---------------------------------------------------------------------------------------


def test_gemma3n_defaults_fixed_source_rule():
    rep = report(load("google__gemma-3n-E4B-transformers-defaults"), kv_cache_dtype="bf16")
    assert rep.mapper == "gemma.gemma3n"
    # 35 layers, 15 shared → first_shared = 20; full iff (i + 1) % 5 == 0.
    # Sliding consumers read 20 − 2 = 18, full consumers 20 − 1 = 19.
    assert rep.layers[20].source_layer == 18 and rep.layers[24].source_layer == 19
    assert [layer.index for layer in rep.layers if layer.copies == 0] == list(range(20, 35))
    # E = 2 × 2 KV heads × 256 × 2 = 2048 B for both types; owning layers 0..19: 4 full, 16 sliding
    # α = 4 × 2048 = 8192; γ = 16 × 512 × 2048 = 16777216
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (8192, 16777216)


# -- sweep of the real configs ----------------------------------------------------------------------


def test_gemma4_saved_by_transformers_per_layer_config():
    # transformers 5.24 saves global_head_dim / num_global_key_value_heads as per_layer_config entries
    data = copy.deepcopy(load("google__gemma-4-26B-A4B"))
    text = data["text_config"]
    for key in ("global_head_dim", "num_global_key_value_heads", "attention_k_eq_v"):
        del text[key]
    text["per_layer_config"] = {str(i): {"head_dim": 512, "num_key_value_heads": 2} for i in (5, 11, 17, 23, 29)}
    rep = report(data)
    # the same figures as the hub form: α = 5 × 2 × 2 × 512 × 2 = 20480; γ = 25 × 1024 × 8192 = 209715200
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (20480, 209715200)
