"""IBM Granite-4.0-H and Bamba: Mamba-2 hybrids with GQA layers.

- Granite-4.0-H: ``layer_types`` (mamba/attention), else ``layers_block_type``, else the config class's
  default (transformers 5: every layer ``linear_attention``, what vLLM builds); attention iff
  (i+1) % 6 == 0 (0-based i) only when no transformers config class answers, with a warning.
- Bamba: attention at the 0-based ``attn_layer_indices``.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import Layout

from hfkv.mappings.readers.attention_keys import num_layers, windowed_attention
from hfkv.mappings.readers.layer_builders import ssm_layout
from hfkv.mappings.readers.layer_patterns import ATTENTION, LINEAR, roles_from_indices, roles_from_list, roles_from_rule
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import GRANITE, mamba2_state


_GRANITE_ROLES = (ATTENTION, LINEAR)


@register(
    family="ssm",
    model_types=("granitemoehybrid",),
    architectures=("GraniteMoeHybridForCausalLM",),
    reads=(
        "layer_types|layers_block_type", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv", "mamba_expand",
    ),
    fixtures={"granitemoehybrid": "ibm-granite__granite-speech-3.2-8b-transformers-defaults"},
)
def granite_hybrid(cfg: ConfigView) -> Layout:
    """Mamba-2 and attention per ``layer_types`` (module docstring for an absent one)."""
    n = num_layers(cfg)
    notes = []
    roles = roles_from_list(cfg, "layer_types", n, _GRANITE_ROLES)
    if roles is None:
        roles = roles_from_list(cfg, "layers_block_type", n, _GRANITE_ROLES)
    if roles is None:  # GraniteMoeHybridConfig fills it (vLLM reads config.layer_types: the same list)
        roles = roles_from_list(cfg, "layer_types", n, _GRANITE_ROLES, defaults=True)
    if roles is None:
        roles = roles_from_rule(n, lambda i: (i + 1) % 6 == 0)
        cfg.warn("no layer_types and no transformers config class to fill it: attention assumed iff (i+1) % 6 == 0 "
                 "(an older transformers' default; transformers 5 makes every layer Mamba-2)")
    attention = windowed_attention(cfg) if ATTENTION in roles else None
    cfg.mark("position_embedding_type")
    return ssm_layout(cfg, roles, mamba2_state(cfg, GRANITE), attention, notes)


@register(
    family="ssm",
    model_types=("bamba",),
    architectures=("BambaForCausalLM",),
    reads=(
        "attn_layer_indices", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
        "mamba_n_heads", "mamba_d_head",
        "mamba_n_groups", "mamba_d_state", "mamba_d_conv", "mamba_expand",
    ),
    fixtures={"bamba": "ibm-fms__Bamba-9.8b-2.2T-hf-transformers-defaults"},
)
def bamba(cfg: ConfigView) -> Layout:
    """Mamba-2 layers with attention at the 0-based ``attn_layer_indices`` (none when absent)."""
    n = num_layers(cfg)
    notes = []
    roles = roles_from_indices(cfg, "attn_layer_indices", n, base=0, inside=ATTENTION, outside=LINEAR)
    if roles is None:
        roles = [LINEAR] * n
        notes.append("no attn_layer_indices: every layer is Mamba-2 (transformers default)")
    attention = windowed_attention(cfg) if ATTENTION in roles else None
    return ssm_layout(cfg, roles, mamba2_state(cfg, GRANITE), attention, notes)
