"""Alice AI (mappings/alice.py): KDA layers beside GQA, hand-derived α and state.

KV and conv bf16 (2 B), recurrent state fp32 (4 B). KDA: C = N·H·H·4 + (w − 1)·3·N·H·2."""

from __future__ import annotations

import pytest

from hfkv import ConfigError

from _helpers import kinds, qwen_linear, report, state_of


# -- AliceAI, GigaChat-3.5, InternS2 / Mobius (synthetic) ---------------------------------------------


def test_alice_ai_kda_and_gqa():
    data = {"model_type": "alice_ai", "architectures": ["AliceAIForCausalLM"], "num_hidden_layers": 8,
            "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "hidden_size": 2048,
            "full_attention_interval": 4, **qwen_linear(linear_num_key_heads=32)}
    rep = report(data)
    assert kinds(rep)[:4] == ["kda", "kda", "kda", "full"]
    assert rep.alpha_bytes_per_token == 2 * 2 * 512 * 2 == 4096  # layers 3 and 7
    # KDA: 32 × 128 × 128 × 4 + 3 × (32 × 128 + 2 × 32 × 128) × 2 = 2097152 + 73728
    assert state_of(rep, 0) == 2170880
    assert rep.gamma_bytes_per_request == 6 * 2170880 == 13025280


def test_alice_ai_missing_linear_keys():
    data = {"model_type": "alice_ai", "num_hidden_layers": 4, "num_attention_heads": 16, "head_dim": 256}
    with pytest.raises(ConfigError, match="linear_num_key_heads"):
        report(data)
