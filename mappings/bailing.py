"""Bailing hybrids (Ling-2.5, Ling-V3): linear layers (KDA when ``short_conv_kernel_size`` is
written, else lightning) and MLA full layers, per ``layer_types`` or ``layer_group_size`` (an int g:
full iff (i+1) % g == 0; a per-layer list: 1 = linear).
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import Layout

from hfkv.mappings.readers.attention_keys import num_heads, num_layers
from hfkv.mappings.readers.latent_keys import mla_parts
from hfkv.mappings.readers.layer_builders import PartsFactory, hybrid_layout
from hfkv.mappings.readers.layer_patterns import (
    ATTENTION,
    ATTENTION_OR_LINEAR,
    LINEAR,
    last_of_every,
    roles_from_list,
    roles_from_rule,
)
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import kda_state, lightning_state


def group_size_roles(cfg: ConfigView, n: int, warnings: list[str]) -> list[str]:
    """Bailing's ``layer_group_size``: int g → full iff (i+1) % g == 0; a per-layer list → 1 = linear."""
    raw = cfg.value("layer_group_size", defaults=True)
    if isinstance(raw, list):
        flags = cfg.int_list("layer_group_size", length=n) or []
        return [LINEAR if flag == 1 else ATTENTION for flag in flags]
    group = cfg.integer("layer_group_size", default=6, minimum=1, defaults=True)
    if n % group:
        warnings.append(
            f"{n} layers is not a multiple of layer_group_size {group}: vLLM (Ling-V3) also makes the last "
            f"{n % group} layer(s) full; hfkv follows the (i+1) % g rule"
        )
    return roles_from_rule(n, last_of_every(group))


def bailing_linear_state(cfg: ConfigView, notes: list[str]) -> tuple[str, PartsFactory]:
    """KDA (Ling-V3) when ``short_conv_kernel_size`` is written, else lightning; N = heads, H = ``head_dim``."""
    heads = num_heads(cfg)
    # Read the written head_dim first: the transformers class rewrites head_dim to the MLA rope dim.
    dim = cfg.optional_int("head_dim", minimum=1) or cfg.integer("linear_head_dim", minimum=1, defaults=True)
    if cfg.present("short_conv_kernel_size"):
        kernel = cfg.integer("short_conv_kernel_size", minimum=1)
        return ("kda", lambda: (kda_state(heads, dim, kernel),))
    notes.append("no short_conv_kernel_size: linear layers are lightning attention (no conv state)")
    return ("lightning", lambda: (lightning_state(heads, dim),))


@register(
    family="linear",
    model_types=("bailing_hybrid",),
    architectures=("BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM", "BailingHybridForCausalLM"),
    reads=(
        "layer_group_size", "layer_types", "short_conv_kernel_size", "num_attention_heads", "head_dim",
        "kv_lora_rank", "qk_rope_head_dim", "num_hidden_layers", "num_mtp_layers", "num_nextn_predict_layers",
    ),
    fixtures={"bailing_hybrid": "inclusionAI__Ling-3.0-Flash-transformers-defaults"},
)
def bailing_hybrid(cfg: ConfigView) -> Layout:
    """Linear layers (KDA or lightning) and MLA full layers per ``layer_types`` or ``layer_group_size``."""
    n = num_layers(cfg)
    notes: list[str] = []
    warnings: list[str] = []
    roles = roles_from_list(cfg, "layer_types", n, ATTENTION_OR_LINEAR)
    if roles is None:
        roles = group_size_roles(cfg, n, warnings)
    cfg.mark("use_mla_nope")
    parts = {LINEAR: bailing_linear_state(cfg, notes), ATTENTION: mla_parts(cfg)}
    return hybrid_layout(cfg, roles, parts, notes, warnings)
