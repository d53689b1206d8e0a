"""Granite-4 hybrids and Bamba (mappings/granite.py): hand-derived α, γ and per-layer state C.

KV and conv bf16 (2 B), SSM state fp32 (4 B).
Mamba-2: C = heads·head_dim·d_state·4 + (w − 1)·(heads·head_dim + 2·groups·d_state)·2.
"""

from __future__ import annotations

from _helpers import kinds, load, report, state_of


# -- hybrids ----------------------------------------------------------------------------------------


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
