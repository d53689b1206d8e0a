"""The generic mapper (mappings/generic.py): a model type hfkv does not know is sized as plain
attention, with a warning naming the keys it did not read."""

from __future__ import annotations

from hfkv import inspect_config


# -- budget questions ------------------------------------------------------------------------------------


def test_generic_mapper_warns_about_unread_keys():
    data = {"model_type": "brand_new", "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
            "hidden_size": 512, "mystery_window_ratio": 3, "linear_conv_kernel_dim": 4, "torch_dtype": "bfloat16"}
    rep = inspect_config(data)
    assert rep.mapper == "generic.generic"
    assert rep.alpha_bytes_per_token == 4 * 2 * 2 * 64 * 2 == 2048
    text = " ".join(rep.warnings)
    assert "brand_new" in text and "mystery_window_ratio" in text and "linear_conv_kernel_dim" in text
