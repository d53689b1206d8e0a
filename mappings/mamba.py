"""Mamba-1 / Mamba-2 models: pure SSMs (Mamba, Falcon-Mamba, Mamba-2) and Jamba (Mamba-1 + attention).

- Mamba / Falcon-Mamba: every layer Mamba-1 over ``intermediate_size`` (= expand·hidden) channels.
- Jamba: attention iff i % ``attn_layer_period`` == ``attn_layer_offset`` (0-based), Mamba-1 elsewhere.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import Layout

from hfkv.mappings.readers.attention_keys import hidden_size, num_layers, windowed_attention
from hfkv.mappings.readers.layer_builders import ssm_layout
from hfkv.mappings.readers.layer_patterns import ATTENTION, LINEAR, roles_from_rule
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import MAMBA2, mamba1_inner, mamba1_state, mamba2_state


@register(
    family="ssm",
    model_types=("mamba", "falcon_mamba"),
    architectures=("MambaForCausalLM", "FalconMambaForCausalLM"),
    reads=("num_hidden_layers|n_layer", "intermediate_size", "expand", "hidden_size", "state_size", "conv_kernel"),
    fixtures={"mamba": "state-spaces__mamba-2.8b-hf", "falcon_mamba": "tiiuae__falcon-mamba-7b-transformers-defaults"},
)
def mamba1(cfg: ConfigView) -> Layout:
    """Every layer Mamba-1: C = I·N·e_s + (w − 1)·I·e_conv; no KV cache at all."""
    n = num_layers(cfg)
    state = mamba1_state(cfg, inner=mamba1_inner(cfg), state_keys=("state_size",), conv_keys=("conv_kernel",))
    return ssm_layout(cfg, [LINEAR] * n, state, notes=["attention-free: no KV cache, only SSM state"])


@register(
    family="ssm",
    model_types=("mamba2",),
    architectures=("Mamba2ForCausalLM",),
    reads=("num_hidden_layers", "num_heads", "head_dim", "n_groups", "state_size", "conv_kernel", "expand"),
    fixtures={"mamba2": "state-spaces__mamba2-2.8b-transformers-defaults"},
)
def mamba2(cfg: ConfigView) -> Layout:
    """Every layer Mamba-2; no KV cache at all."""
    n = num_layers(cfg)
    state = mamba2_state(cfg, MAMBA2)
    return ssm_layout(cfg, [LINEAR] * n, state, notes=["attention-free: no KV cache, only SSM state"])


@register(
    family="ssm",
    model_types=("jamba",),
    architectures=("JambaForCausalLM",),
    reads=(
        "attn_layer_period", "attn_layer_offset", "num_hidden_layers", "num_key_value_heads", "mamba_d_state",
        "mamba_d_conv", "mamba_expand", "hidden_size",
    ),
    fixtures={"jamba": "ai21labs__Jamba-v0.1-transformers-defaults"},
)
def jamba(cfg: ConfigView) -> Layout:
    """Mamba-1 layers, attention iff i % ``attn_layer_period`` == ``attn_layer_offset`` (0-based)."""
    n = num_layers(cfg)
    period = cfg.integer("attn_layer_period", minimum=1, defaults=True)
    offset = cfg.integer("attn_layer_offset", minimum=0, defaults=True)
    if offset >= period:
        raise ConfigError(cfg.path("attn_layer_offset"), f"{offset} is not below attn_layer_period {period}")
    roles = roles_from_rule(n, lambda i: i % period == offset)
    inner = cfg.integer("mamba_expand", minimum=1, defaults=True) * hidden_size(cfg)
    state = mamba1_state(cfg, inner=inner, state_keys=("mamba_d_state",), conv_keys=("mamba_d_conv",))
    attention = windowed_attention(cfg) if ATTENTION in roles else None
    return ssm_layout(cfg, roles, state, attention)
