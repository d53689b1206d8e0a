"""MiniCPM-SALA (SGLang): ``mixer_types`` per layer; ``minicpm4`` layers are InfLLM-v2 sparse
attention, counted as full GQA KV; ``lightning``/``lightning-attn`` layers keep one
``lightning_head_dim``² matrix per ``lightning_nkv`` head (SGLang's shape), no conv.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import Layout, LinearAttentionState

from hfkv.mappings.readers.attention_keys import head_dim, num_heads, num_layers
from hfkv.mappings.readers.layer_builders import gqa_parts, hybrid_layout
from hfkv.mappings.readers.layer_patterns import ATTENTION, LINEAR, required_named_roles
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import lightning_state


_SALA_ROLES = {
    "minicpm4": ATTENTION, "sparse": ATTENTION, "full_attention": ATTENTION,
    "lightning": LINEAR, "lightning-attn": LINEAR, "lightning_attn": LINEAR, "lightning_attention": LINEAR,
}


def sala_lightning(cfg: ConfigView) -> LinearAttentionState:
    """One hd × hd matrix per ``lightning_nkv`` head (else ``lightning_nh``, else the attention heads)."""
    heads = cfg.optional_int("lightning_nkv", "lightning_nh", minimum=1) or num_heads(cfg)
    dim = cfg.optional_int("lightning_head_dim", minimum=1) or head_dim(cfg, num_heads(cfg))
    return lightning_state(heads, dim)


@register(
    family="linear",
    model_types=("minicpm_sala",),
    architectures=("MiniCPMSALAForCausalLM",),
    reads=(
        "mixer_types", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
        "lightning_nh", "lightning_nkv", "lightning_head_dim", "sparse_config",
    ),
)
def minicpm_sala(cfg: ConfigView) -> Layout:
    """InfLLM-v2 sparse layers (full GQA KV) and lightning layers (state only) per ``mixer_types``."""
    n = num_layers(cfg)
    roles = required_named_roles(cfg, "mixer_types", n, _SALA_ROLES, "tell sparse from lightning layers")
    cfg.mark("sparse_config", "lightning_scale", "lightning_use_rope")
    parts = {ATTENTION: gqa_parts(cfg), LINEAR: ("lightning", lambda: (sala_lightning(cfg),))}
    warnings = [
        "InfLLM-v2 sparse layers counted as full GQA KV (n = S); the compressed block keys they also keep "
        "(sparse_config kernel_size/stride) are not counted"
    ]
    return hybrid_layout(cfg, roles, parts, warnings=warnings)
