"""GigaChat 3.5 (mappings/gigachat.py): MLA and linear layers, which layers are full attention."""

from __future__ import annotations

import pytest

from hfkv import ConfigError

from _helpers import kinds, qwen_linear, report


# -- AliceAI, GigaChat-3.5, InternS2 / Mobius (synthetic) ---------------------------------------------


# Qwen3-Next-shaped GDN layer (N_qk 16, N_v 32, H_k = H_v = 128, w 4):
GDN_C = 32 * 128 * 128 * 4 + 3 * (32 * 128 + 2 * 16 * 128) * 2  # 2097152 + 49152 = 2146304


GIGA = {"model_type": "gigachat3_5", "num_hidden_layers": 6, "num_attention_heads": 16, "kv_lora_rank": 512,
        "qk_rope_head_dim": 64, "hidden_size": 2048, **qwen_linear()}


def test_gigachat35_full_attention_layers_zero_based():
    rep = report({**GIGA, "full_attention_layers": [2, 5]})
    assert kinds(rep) == ["gdn", "gdn", "mla", "gdn", "gdn", "mla"]
    assert rep.alpha_bytes_per_token == 2 * (512 + 64) * 2 == 2304
    assert rep.gamma_bytes_per_request == 4 * GDN_C == 8585216
    assert kinds(report({**GIGA, "full_attention_layers": [0]}))[0] == "mla"  # 0-based: 0 is valid


def test_gigachat35_layer_types_and_missing_pattern():
    types = ["linear_attention", "full_attention"] * 3
    rep = report({**GIGA, "layer_types": types})
    assert rep.alpha_bytes_per_token == 3 * 1152 == 3456 and rep.gamma_bytes_per_request == 3 * GDN_C
    with pytest.raises(ConfigError, match="full_attention_layers"):
        report(GIGA)
