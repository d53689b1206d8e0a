"""MOSS-VL: ``text_config.cross_attention_layers`` (0-based) are counted as full layers (n = S), the
convention of ``llama.mllama`` (SGLang's token pool); their real cache holds image tokens.
"""

from __future__ import annotations

from hfkv.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.specs import LayerSpec, Layout

from .attention_keys import attention_part, num_layers
from .registry import register


@register(
    family="cross-attention",
    model_types=("moss_vl",),
    architectures=("MossVLForConditionalGeneration",),
    reads=("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "cross_attention_layers"),
)
def moss_vl(cfg: ConfigView) -> Layout:
    """Self-attention layers plus the 0-based ``cross_attention_layers``, each counted as a full layer."""
    n = num_layers(cfg)
    cross = cfg.int_list("cross_attention_layers")
    if cross is None:
        raise ConfigError(cfg.path("cross_attention_layers"), "missing (needed to find the cross-attention layers)")
    bad = [i for i in cross if i >= n]
    if bad:
        raise ConfigError(cfg.path("cross_attention_layers"), f"index {bad[0]} is past the {n} layers")
    part = attention_part(cfg)
    chosen = set(cross)
    layers = [
        LayerSpec(index=i, kind="cross-attention" if i in chosen else part.kind, parts=(part,)) for i in range(n)
    ]
    notes = [f"{len(chosen)} cross-attention layer(s) counted as full layers (n = S), as SGLang's pool does"]
    warnings = ["a cross-attention layer really caches the vision tokens of the request, not S text tokens"]
    return Layout(layers=layers, notes=notes, warnings=warnings)
