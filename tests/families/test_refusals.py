"""Named refusals (mappings/refusals.py): an architecture refused by name wins over a known model type;
the engines' backend class needs a model type."""

from __future__ import annotations

import pytest

import hfkv

from _helpers import report as inspect


@pytest.mark.parametrize("arch, match", [
    ("LlamaForCausalLMEagle3", "draft model for speculative decoding"),
    ("Qwen3NextForCausalLMMTP", "draft model for speculative decoding"),
    ("LLaDA2MoeModelLM", "diffusion language model"),
    ("CLIPModel", "vision/text encoder"),
    ("HrmTextForCausalLM", "not modelled yet: hierarchical recurrent steps"),
])
def test_named_refusals_win_over_a_known_model_type(arch, match):
    data = {"model_type": "llama", "architectures": [arch], "num_hidden_layers": 1, "num_attention_heads": 32,
            "num_key_value_heads": 8, "hidden_size": 4096}
    with pytest.raises(hfkv.UnsupportedModelError, match=match):
        inspect(data)


def test_engine_backend_class_needs_a_model_type():
    data = {"model_type": "brand_new", "architectures": ["TransformersForCausalLM"], "num_hidden_layers": 2,
            "num_attention_heads": 8, "hidden_size": 512}
    with pytest.raises(hfkv.UnsupportedModelError, match="backend class"):
        inspect(data)
