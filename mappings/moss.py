"""MOSS-VL: ``text_config.cross_attention_layers`` (0-based) are counted as full layers (n = S), the
convention of ``llama.mllama`` (SGLang's token pool); their real cache holds image tokens.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import Layout

from hfkv.mappings.readers.attention_keys import num_layers
from hfkv.mappings.readers.layer_builders import cross_attention_layers, cross_attention_note
from hfkv.mappings.registry import register


@register(
    family="cross-attention",
    model_types=("moss_vl",),
    architectures=("MossVLForConditionalGeneration",),
    reads=("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "cross_attention_layers"),
)
def moss_vl(cfg: ConfigView) -> Layout:
    """Self-attention layers plus the 0-based ``cross_attention_layers``, each counted as a full layer."""
    cross = cfg.int_list("cross_attention_layers")
    if cross is None:
        raise ConfigError(cfg.path("cross_attention_layers"), "missing (needed to find the cross-attention layers)")
    layers = cross_attention_layers(cfg, num_layers(cfg), cross)
    notes = [cross_attention_note(cross)]
    warnings = ["a cross-attention layer really caches the vision tokens of the request, not S text tokens"]
    return Layout(layers=layers, notes=notes, warnings=warnings)
