"""Qwen3-Next-like InternLM types (mappings/intern.py): GDN layers beside full attention.

GDN: C = N_v·H_k·H_v·4 + (w − 1)·(N_v·H_v + 2·N_qk·H_k)·2 (state fp32, conv bf16)."""

from __future__ import annotations

import pytest

from _helpers import qwen_linear, report


# -- AliceAI, GigaChat-3.5, InternS2 / Mobius (synthetic) ---------------------------------------------


# Qwen3-Next-shaped GDN layer (N_qk 16, N_v 32, H_k = H_v = 128, w 4):
GDN_C = 32 * 128 * 128 * 4 + 3 * (32 * 128 + 2 * 16 * 128) * 2  # 2097152 + 49152 = 2146304


@pytest.mark.parametrize("model_type", ["interns2_preview", "mobius"])
def test_qwen_next_like(model_type):
    text = {"num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
            "layer_types": ["linear_attention"] * 3 + ["full_attention"], **qwen_linear()}
    rep = report({"model_type": model_type, "text_config": text})
    assert rep.alpha_bytes_per_token == 2 * 512 * 2 == 2048
    assert rep.gamma_bytes_per_request == 3 * GDN_C == 6438912
    assert any("Qwen3-Next" in w for w in rep.warnings)
