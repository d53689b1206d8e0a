"""The generic mapper: a report for any model type from the standard keys.

It understands ``num_hidden_layers``, the head keys, ``head_dim``, ``sliding_window`` and
``layer_types`` (full/sliding), and ``kv_lora_rank`` (MLA). Everything else attention-related that it
did not read is listed in the report's warnings, so the reader knows how far to trust the figures.
"""

from __future__ import annotations

from hfkv.config import ConfigView
from hfkv.specs import LayerSpec, Layout

from .attention_keys import num_layers
from .encoders import declared_encoder_decoder
from .latent_keys import mla_latent
from .layer_patterns import pattern_layout
from .registry import register


@register(family="generic", generic=True, reads=("num_hidden_layers", "num_attention_heads",
          "num_key_value_heads", "head_dim", "sliding_window", "layer_types", "kv_lora_rank"))
def generic(cfg: ConfigView) -> Layout:
    refused = declared_encoder_decoder(cfg)  # the standard keys describe only one half of such a model
    if refused is not None:
        raise refused
    if cfg.present("kv_lora_rank"):
        latent = mla_latent(cfg)
        layout = Layout(layers=[LayerSpec(index=i, kind="mla", parts=(latent,)) for i in range(num_layers(cfg))])
    else:
        layout = pattern_layout(cfg, default_window=None, default_rule=None)
    name = cfg.model_type or "(none)"
    layout.warnings.insert(0, f"model type {name!r} is not known to hfkv: figures come from the generic keys")
    return layout
