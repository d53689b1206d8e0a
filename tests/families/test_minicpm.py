"""MiniCPM-SALA (mappings/minicpm.py): sparse and lightning layers (synthetic configs from the keys
engines.md names)."""

from __future__ import annotations

import pytest

from hfkv import ConfigError

from _helpers import kinds, report


# -- MiniCPM-SALA (synthetic) -----------------------------------------------------------------------


SALA = {"model_type": "minicpm_sala", "num_hidden_layers": 4, "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 2, "head_dim": 128, "lightning_nh": 32, "lightning_nkv": 32, "lightning_head_dim": 128,
        "mixer_types": ["minicpm4", "lightning-attn", "lightning-attn", "lightning-attn"]}


def test_minicpm_sala():
    rep = report(SALA)
    assert kinds(rep) == ["full", "lightning", "lightning", "lightning"]
    assert rep.alpha_bytes_per_token == 2 * 256 * 2 == 1024
    assert rep.gamma_bytes_per_request == 3 * 32 * 128 * 128 * 4 == 6291456  # no conv
    assert any("InfLLM-v2" in w for w in rep.warnings)
    # the state has lightning_nkv heads (SGLang's shape): 16 × 128 × 128 × 4 = 1048576 per layer
    assert report({**SALA, "lightning_nkv": 16}).gamma_bytes_per_request == 3 * 1048576


def test_minicpm_sala_bad_mixer():
    with pytest.raises(ConfigError, match=r"mixer_types\[2\]"):
        report({**SALA, "mixer_types": ["minicpm4", "lightning", "swa", "lightning"]})
    with pytest.raises(ConfigError, match="mixer_types"):
        report({k: v for k, v in SALA.items() if k != "mixer_types"})
