"""The generic mapper: a report for any model type from the standard keys.

It understands the layer, head and KV-head keys under every alias (``attention_keys``; per-layer
head lists too), ``head_dim``, ``sliding_window`` and ``layer_types`` (full/sliding; GPT-Neo's
``attention_types``), and ``kv_lora_rank`` (MLA). Every other key that names a cache-shaping concept
makes the figures an estimate, with a warning naming it (the registry's check, as for every mapper).
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import LayerSpec, Layout

from hfkv.mappings.readers.attention_keys import num_layers
from hfkv.mappings.encoders import declared_encoder_decoder
from hfkv.mappings.readers.latent_keys import mla_latent
from hfkv.mappings.readers.layer_builders import pattern_layout
from hfkv.mappings.registry import register


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
