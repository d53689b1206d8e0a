"""MiniMax-M3 MSA (mappings/minimax.py): the sparse index with values, fp8 and TP, the transformers
form, and the trimmed fixtures against the real configs.

These tests' ``kinds`` counts layers per kind (tests/families/test_minimax.py's lists them), and
their ``report`` names an inline config "inline". Every expected figure is derived by hand; the arithmetic is
beside it. bf16 = 2 B unless a test says otherwise."""

from __future__ import annotations

import copy

import pytest

from hfkv import ConfigError, UnsupportedModelError, inspect_config
from hfkv.sources import load_local

from _helpers import HUB_CONFIGS, indices, kind_counts as kinds, load, report_inline as report


# -- MiniMax-M3 sparse attention ----------------------------------------------------------------


M3 = "nvidia__MiniMax-M3-NVFP4"


def test_minimax_m3_fixture():
    rep = report(M3)
    assert rep.mapper == "minimax.minimax_m3"
    assert rep.kv_cache_dtype == "bf16"  # kv_cache_quant_algo is null: the config's bfloat16
    # sparse_attention_freq: three 0s (layers 0-2 dense), then 57 1s; sparse_disable_index_value the same (K only)
    assert kinds(rep) == {"full": 3, "msa-sparse": 57}
    assert indices(rep, "full") == [0, 1, 2]
    # main: 60 layers × 2 × 4 KV heads × 128 × 2 B = 60 × 2048 = 122880
    # index: 57 sparse K-only layers × 1 head × 128 × 2 B = 57 × 256 = 14592
    assert rep.alpha_bytes_per_token == 122880 + 14592 == 137472
    assert rep.gamma_bytes_per_request == 0
    sparse = next(layer for layer in rep.layers if layer.kind == "msa-sparse")
    assert sparse.entry_bytes == 2048 + 256
    assert any("1 MTP module" in note for note in rep.notes)  # num_mtp_modules: 1, left out


def test_minimax_m3_fp8_and_tp():
    # fp8: main 60 × 2 × 4 × 128 × 1 = 61440, index 57 × 128 × 1 = 7296
    assert report(M3, kv_cache_dtype="fp8").alpha_bytes_per_token == 61440 + 7296 == 68736
    # TP 2: 2 KV heads per GPU: 60 × 2 × 2 × 128 × 2 = 61440; the 1-head index is replicated: 14592
    assert report(M3, tensor_parallel_size=2).alpha_bytes_per_token == 61440 + 14592 == 76032
    # TP 8 > 4 KV heads: one (replicated) head per GPU: 60 × 2 × 1 × 128 × 2 = 30720, + 14592
    assert report(M3, tensor_parallel_size=8).alpha_bytes_per_token == 30720 + 14592 == 45312


def _m3_inline(**sparse) -> dict:
    data = copy.deepcopy(load(M3))
    data["text_config"]["sparse_attention_config"].update(sparse)
    return data


def test_minimax_m3_index_with_values():
    # every flag 0: the index keeps K and V: 57 × 2 × 128 × 2 = 29184
    rep = report(_m3_inline(sparse_disable_index_value=[0] * 60))
    assert rep.alpha_bytes_per_token == 122880 + 29184 == 152064
    # a scalar flag applies to every layer: 1 = K only again
    assert report(_m3_inline(sparse_disable_index_value=1)).alpha_bytes_per_token == 137472


def test_minimax_m3_dense_when_sparse_is_off():
    rep = report(_m3_inline(use_sparse_attention=False))
    assert kinds(rep) == {"full": 60}
    assert rep.alpha_bytes_per_token == 122880  # main KV only


def test_minimax_m3_transformers_form():
    # transformers' flat form: layer_types names the sparse layers, index_head_dim the index width
    data = {
        "model_type": "minimax_m3_vl_text", "torch_dtype": "bfloat16", "num_hidden_layers": 4,
        "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128, "index_head_dim": 64,
        "layer_types": ["full_attention", "minimax_m3_sparse", "minimax_m3_sparse", "full_attention"],
    }
    rep = report(data)
    assert indices(rep, "msa-sparse") == [1, 2]
    # main 4 × 2048 = 8192; index 2 layers × 64 × 2 B (K only: transformers has no index value) = 256
    assert rep.alpha_bytes_per_token == 8192 + 256 == 8448


def test_minimax_m3_bad_frequency_list():
    data = _m3_inline(sparse_attention_freq=[0, 1])
    with pytest.raises(ConfigError) as err:
        report(data)
    assert "text_config.sparse_attention_config.sparse_attention_freq" in str(err.value)
    assert "2 entries but the model has 60 layers" in str(err.value)
    data = _m3_inline()
    del data["text_config"]["sparse_attention_config"]["sparse_attention_freq"]
    with pytest.raises(ConfigError, match="sparse_attention_freq.*cannot tell which layers are sparse"):
        report(data)


# -- every real config: figures or one clean error -------------------------------------------------


NAS = "nvidia__Llama-3_3-Nemotron-Super-49B-v1"


def test_trimmed_fixtures_match_the_real_configs():
    """The full MiniMax-M3 (3 MB) and Nemotron-Super configs give the trimmed fixtures' figures."""
    if not HUB_CONFIGS.is_dir():
        pytest.skip(f"{HUB_CONFIGS} is absent")
    for name, alpha in ((M3, 137472), (NAS, 200704)):
        rep = inspect_config(load_local(HUB_CONFIGS / f"{name}.json").data, model=name)
        assert rep.alpha_bytes_per_token == alpha
    for name in ("google-t5__t5-base", "VietAI__envit5-translation", "facebook__bart-large-cnn"):
        with pytest.raises(UnsupportedModelError, match="encoder-decoder"):
            inspect_config(load_local(HUB_CONFIGS / f"{name}.json").data, model=name)
