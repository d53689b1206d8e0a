"""Falcon-H1: every layer has attention **and** Mamba-2 (a parallel hybrid). Falcon and Falcon-Mamba
use ``dense.dense`` and ``mamba.mamba1``.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import Layout

from hfkv.mappings.readers.attention_keys import attention_part, num_layers
from hfkv.mappings.readers.layer_builders import ssm_layout
from hfkv.mappings.readers.layer_patterns import HYBRID
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import FALCON_H1, mamba2_state


@register(
    family="ssm",
    model_types=("falcon_h1",),
    architectures=("FalconH1ForCausalLM",),
    reads=(
        "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "mamba_d_ssm",
        "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv", "mamba_expand",
    ),
    fixtures={"falcon_h1": "tiiuae__Falcon-H1-1.5B-Deep-Instruct-transformers-defaults"},
)
def falcon_h1(cfg: ConfigView) -> Layout:
    """Every layer holds attention KV **and** a Mamba-2 state (a parallel hybrid)."""
    n = num_layers(cfg)
    attention = (attention_part(cfg),)
    notes = ["every layer has both attention and Mamba-2 (parallel hybrid): full KV plus SSM state"]
    return ssm_layout(cfg, [HYBRID] * n, mamba2_state(cfg, FALCON_H1), attention, notes)
