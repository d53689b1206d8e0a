"""MOSS-VL (mappings/moss.py): cross-attention layers counted as mllama's."""

from __future__ import annotations

import pytest

from hfkv import ConfigError

from _helpers import kinds, report


# -- MOSS-VL (synthetic) ----------------------------------------------------------------------------


def test_moss_vl_cross_attention_counted_like_mllama():
    text = {"num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
            "cross_attention_layers": list(range(2, 48, 4))}
    rep = report({"model_type": "moss_vl", "text_config": text})
    assert kinds(rep).count("cross-attention") == 12 and kinds(rep)[2] == "cross-attention"
    assert rep.alpha_bytes_per_token == 48 * 8 * 256 * 2 == 196608  # every layer n = S
    text["cross_attention_layers"] = [48]
    with pytest.raises(ConfigError, match="past the 48 layers"):
        report({"model_type": "moss_vl", "text_config": text})
    del text["cross_attention_layers"]
    with pytest.raises(ConfigError, match="cross_attention_layers"):
        report({"model_type": "moss_vl", "text_config": text})
