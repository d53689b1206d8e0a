"""Domyn-Edge (mappings/domyn.py): per-layer windows and head sizes.

Every expected figure is derived by hand; the arithmetic is beside it. bf16 KV (2 B per value) unless a test
says otherwise."""

from __future__ import annotations

import pytest

from hfkv.errors import ConfigError

from _helpers import indices, load, report_bf16 as report


# -- Domyn-Edge: window_sizes and head_sizes per layer ----------------------------------------------


DOMYN = "domyn__Domyn-Edge-Base-config-class-defaults"


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
