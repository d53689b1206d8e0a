"""Domyn-Edge (mappings/domyn.py): per-layer windows and head sizes.

Every expected figure is derived by hand; the arithmetic is beside it. bf16 KV (2 B per value) unless a test
says otherwise."""

from __future__ import annotations

import json

import pytest

from hfkv.errors import ConfigError

from _helpers import indices, load, report_bf16 as report


# -- Domyn-Edge: window_sizes and head_sizes per layer ----------------------------------------------


MIMO_DOCUMENTED = {
    # documented values of XiaomiMiMo/MiMo-V2-Flash (hub form)
    "model_type": "mimo_v2_flash",
    "torch_dtype": "bfloat16",
    "num_hidden_layers": 48,
    "num_attention_heads": 64,
    "num_key_value_heads": 4,
    "head_dim": 192,
    "v_head_dim": 128,
    "swa_num_attention_heads": 64,
    "swa_num_key_value_heads": 8,
    "swa_head_dim": 192,
    "swa_v_head_dim": 128,
    "sliding_window": 128,
    "sliding_window_size": 128,
    "hybrid_layer_pattern": [0 if i == 0 or (i + 1) % 6 == 0 else 1 for i in range(48)],
}


def _step_config(other: dict) -> dict:
    # Step-3.5-Flash's documented geometry: 45 layers + 3 MTP entries in layer_types, 64 heads,
    # num_attention_groups 8, head_dim 128, sliding_window 512. The pattern (full iff i % 4 == 0) is made up.
    types = ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(45)]
    return {
        "model_type": "step3p7",
        "text_config": {
            "model_type": "step3p5",
            "torch_dtype": "bfloat16",
            "num_hidden_layers": 45,
            "num_nextn_predict_layers": 3,
            "num_attention_heads": 64,
            "num_attention_groups": 8,
            "head_dim": 128,
            "sliding_window": 512,
            "layer_types": types + ["sliding_attention"] * 3,
            "attention_other_setting": other,
        },
    }


def _text(data: dict) -> dict:
    return data.get("text_config", data)


def _with(data: dict, **keys) -> dict:
    """A copy of ``data`` with ``keys`` set where its attention keys live (text_config when present)."""
    data = json.loads(json.dumps(data))
    _text(data).update(keys)
    return data


def _nas_window(length: int) -> dict:
    data = load("nvidia__Llama-3_3-Nemotron-Super-49B-v1")
    for block in data["block_configs"][:4]:  # the first four attention blocks get a window
        block["attention"]["window_length"] = length
    return data


# (case, config with a window that bounds the context, the same with W ≥ max positions, that W)
COVERING = [
    ("gemma4", _with(load("google__gemma-4-E2B-it"), sliding_window=512),
     _with(load("google__gemma-4-E2B-it"), sliding_window=131072), 131072),
    ("gemma3n", load("google__gemma-3n-E4B-transformers-defaults"),
     _with(load("google__gemma-3n-E4B-transformers-defaults"), sliding_window=32768), 32768),
    ("mimo_v2", dict(MIMO_DOCUMENTED, max_position_embeddings=131072),
     dict(MIMO_DOCUMENTED, max_position_embeddings=131072, sliding_window_size=131072), 131072),
    ("step3p5", _with(_step_config({}), max_position_embeddings=128000),
     _with(_step_config({}), max_position_embeddings=128000, sliding_window=200000), 200000),
    ("recurrent_gemma", load("google__recurrentgemma-2b-transformers-defaults"),
     _with(load("google__recurrentgemma-2b-transformers-defaults"), attention_window_size=8192,
           max_position_embeddings=8192), 8192),
    ("inkling", load("thinkingmachines__Inkling-transformers-defaults"),
     _with(load("thinkingmachines__Inkling-transformers-defaults"), sliding_window_size=131072), 131072),
    ("nemotron_h", _with(load("nvidia__Nemotron-H-56B-Base-8K"), sliding_window=4096),
     _with(load("nvidia__Nemotron-H-56B-Base-8K"), sliding_window=8192), 8192),
    ("nemotron_nas", _nas_window(4096), _nas_window(131072), 131072),
    ("minimax", _with(load(MINIMAX := "MiniMaxAI__MiniMax-Text-01-hf-transformers-defaults"),
                      max_position_embeddings=131072, sliding_window=4096),
     _with(load(MINIMAX), max_position_embeddings=131072, sliding_window=131072), 131072),
    ("bamba", _with(load(BAMBA := "ibm-fms__Bamba-9.8b-2.2T-hf-transformers-defaults"),
                    attn_layer_indices=[9, 18, 27], max_position_embeddings=4096, sliding_window=1024),
     _with(load(BAMBA), attn_layer_indices=[9, 18, 27], max_position_embeddings=4096, sliding_window=4096), 4096),
    ("zaya", _with(load(ZAYA := "Zyphra__ZAYA1-8B-transformers-defaults"), sliding_window=4096,
                   layer_types=["hybrid", "hybrid_sliding"] * 20),
     _with(load(ZAYA), sliding_window=131072, layer_types=["hybrid", "hybrid_sliding"] * 20), 131072),
    ("domyn_edge", _with(load(DOMYN := "domyn__Domyn-Edge-Base-config-class-defaults")),
     _with(load(DOMYN), window_sizes=[[8191, 0] if w > 0 else [w, 0] for w, _ in load(DOMYN)["window_sizes"]]),
     8192),
]


def test_domyn_edge_per_layer_windows_and_head_sizes():
    # Facts of domyn/Domyn-Edge-Base as its config class's defaults give them: 36 layers, 8 KV heads,
    # max_position_embeddings 8192; NoPE layers full with head size 256, RoPE layers window (1024, 0)
    # with head size 64 (pattern 2 × NoPE, 8 × (RoPE, RoPE, RoPE, NoPE), 2 × NoPE).
    rep = report(load(DOMYN))
    assert rep.mapper == "domyn.domyn_edge"
    sliding = [i for i in range(36) if 2 <= i < 34 and (i - 2) % 4 != 3]
    assert indices(rep, "sliding") == sliding and len(sliding) == 24
    # (w, 0) attends to [pos − 1024, pos]: 1025 keys, vLLM's window_size + 1
    assert {rep.layers[i].window for i in sliding} == {1025}
    # full: 2 × 8 × 256 × 2 = 8192 B; sliding: 2 × 8 × 64 × 2 = 2048 B
    assert (rep.layers[0].entry_bytes, rep.layers[2].entry_bytes) == (8192, 2048)
    # α = 12 × 8192 = 98304; γ = 24 × 1025 × 2048 = 50380800
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (98304, 50380800)
    # S = 8192: 98304 × 8192 + 50380800 = 805306368 + 50380800
    assert report(load(DOMYN), contexts=(8192,)).contexts[0].kv_bytes_per_request == 855687168
    # TP 8: one KV head per GPU → every figure / 8: α = 12288, γ = 6297600
    tp8 = report(load(DOMYN), tensor_parallel_size=8)
    assert (tp8.alpha_bytes_per_token, tp8.gamma_bytes_per_request) == (12288, 6297600)


def test_domyn_edge_per_layer_config_wins_over_head_sizes():
    # vLLM reads per_layer_config[i].head_dim (transformers' per-layer form: {"<i>": {...}})
    data = load(DOMYN)
    data["per_layer_config"] = {str(i): {"head_dim": 128} for i in range(36)}
    rep = report(data)
    # every layer 2 × 8 × 128 × 2 = 4096 B: α = 12 × 4096 = 49152; γ = 24 × 1025 × 4096 = 100761600
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (49152, 100761600)


def test_domyn_edge_without_head_sizes_warns():
    data = load(DOMYN)
    del data["head_sizes"]
    rep = report(data)
    # hidden 2560 / 32 heads = 80 for every layer: 2 × 8 × 80 × 2 = 2560 B; α = 12 × 2560 = 30720
    assert rep.alpha_bytes_per_token == 30720
    assert any("no per_layer_config / head_sizes" in w for w in rep.warnings)


@pytest.mark.parametrize("window_sizes, message", [
    (None, r"window_sizes.*missing"),
    ("full", r"window_sizes.*expected a list"),
    ([[1024]] * 36, r"window_sizes\[0\].*expected \[left, right\]"),
    ([[-1, 0]] * 35, r"window_sizes.*35 entries but the model has 36 layers"),
])
def test_domyn_edge_bad_window_sizes(window_sizes, message):
    data = load(DOMYN)
    data["window_sizes"] = window_sizes
    with pytest.raises(ConfigError, match=message):
        report(data)


def _parts(rep) -> list:
    return [part for layer in rep.layer_specs for part in layer.parts]


def test_domyn_edge_window_zero_or_negative_is_full():
    data = load(DOMYN)
    data["window_sizes"] = [[0, 0]] * 18 + [[-1, 0]] * 18
    rep = report(data)
    # no window (vLLM: window_size ≤ 0 → None): α = 12 × 8192 + 24 × 2048 = 147456, γ = 0
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (147456, 0)
    assert not any(getattr(p, "declared_window", None) for p in _parts(rep))
