"""OLMo hybrid (mappings/olmo.py): GDN layers, hand-derived α and state.

GDN: C = N_v·H_k·H_v·4 + (w − 1)·(N_v·H_v + 2·N_qk·H_k)·2 (state fp32, conv bf16).
"""

from __future__ import annotations

from _helpers import load, report, state_of


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
