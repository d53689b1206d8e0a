"""Nemotron-NAS, Llama-3.3-Nemotron-Super (mappings/nemotron.py): no-op layers, variable GQA, linear and
windowed blocks.

These tests' ``report`` names an inline config "inline" (tests/families/test_nemotron.py's "test").
Every expected figure is derived by hand; the arithmetic is beside it. bf16 = 2 B unless a test says
otherwise."""

from __future__ import annotations

import pytest

from hfkv import ConfigError

from _helpers import indices, kind_counts as kinds, report_inline as report


# -- Nemotron-NAS ---------------------------------------------------------------------------------


NAS = "nvidia__Llama-3_3-Nemotron-Super-49B-v1"

# Read from the fixture's block_configs by hand: attention.no_op is true at
# 6, 7, 11 (3), 42-51 (10) and 53-70 (18) = 31 layers; the other 49 have n_heads_in_group 8.
NAS_NO_OP = [6, 7, 11, *range(42, 52), *range(53, 71)]


def test_nemotron_super_no_op_layers_and_gqa():
    rep = report(NAS)
    assert rep.mapper == "nemotron.nemotron_nas"
    assert len(NAS_NO_OP) == 3 + 10 + 18 == 31
    assert indices(rep, "no-op") == NAS_NO_OP
    assert kinds(rep) == {"full": 49, "no-op": 31}  # 80 − 31 = 49 attention layers
    # K = 64 heads // 8 per group = 8; head_dim = 8192 / 64 = 128
    # α = 49 × 2 × 8 × 128 × 2 B = 49 × 4096 = 200704
    assert rep.alpha_bytes_per_token == 200704
    assert all(layer.bytes_per_token == 0 and layer.copies == 0 for layer in rep.layers if layer.kind == "no-op")
    # TP 16 > 8 KV heads: 1 head per GPU: 49 × 2 × 1 × 128 × 2 = 49 × 512 = 25088
    assert report(NAS, tensor_parallel_size=16).alpha_bytes_per_token == 25088


def _nas(blocks: list[dict]) -> dict:
    return {"model_type": "nemotron-nas", "architectures": ["DeciLMForCausalLM"], "torch_dtype": "bfloat16",
            "num_hidden_layers": len(blocks), "num_attention_heads": 8, "hidden_size": 512,
            "num_key_value_heads": None, "block_configs": [{"attention": b} for b in blocks]}


def test_nemotron_nas_variable_gqa_linear_and_window():
    rep = report(_nas([
        {"n_heads_in_group": 1, "no_op": False},                  # 8 KV heads
        {"n_heads_in_group": 4, "no_op": False},                  # 2 KV heads
        {"n_heads_in_group": None, "no_op": False, "replace_with_linear": True},
        {"n_heads_in_group": 8, "no_op": False, "window_length": 16},  # 1 KV head, window 16
    ]))
    assert [layer.kind for layer in rep.layers] == ["full", "full", "linear", "sliding"]
    # head_dim 512 / 8 = 64: 2 × 8 × 64 × 2 = 2048, 2 × 2 × 64 × 2 = 512
    assert rep.alpha_bytes_per_token == 2048 + 512 == 2560
    assert rep.gamma_bytes_per_request == 16 * (2 * 1 * 64 * 2) == 4096  # the windowed layer
    assert any("KV heads vary by layer (1, 2, 8)" in note for note in rep.notes)


def test_nemotron_nas_errors():
    with pytest.raises(ConfigError, match=r"block_configs\[0\].attention.n_heads_in_group': 3 does not divide 8"):
        report(_nas([{"n_heads_in_group": 3, "no_op": False}]))
    with pytest.raises(ConfigError, match=r"block_configs\[0\].attention.no_op': expected true or false, got 'x'"):
        report(_nas([{"n_heads_in_group": 1, "no_op": "x"}]))
    short = _nas([{"n_heads_in_group": 1, "no_op": False}]) | {"num_hidden_layers": 2}
    with pytest.raises(ConfigError, match="block_configs': has 1 entries but the model has 2 layers"):
        report(short)
