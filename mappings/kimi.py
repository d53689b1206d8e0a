"""Kimi-Linear / Kimi-K3: KDA layers where the **1-based** ``linear_attn_config.kda_layers`` says
(else ``layer_types``), MLA elsewhere. KDA: N_qk = N_v = ``num_heads``, H_k = H_v = ``head_dim``.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import Layout

from hfkv.mappings.readers.attention_keys import num_layers
from hfkv.mappings.readers.latent_keys import MLA_IGNORES, mla_parts
from hfkv.mappings.readers.layer_builders import hybrid_layout
from hfkv.mappings.readers.layer_patterns import ATTENTION, LINEAR, layer_types_or_default, roles_from_indices
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import kda_from_linear_config


def kda_list_roles(cfg: ConfigView, n: int, base: int) -> list[str] | None:
    """Roles from ``linear_attn_config.kda_layers`` (KDA where listed, full elsewhere), ``base``-based."""
    return roles_from_indices(cfg, "linear_attn_config.kda_layers", n, base=base, inside=LINEAR, outside=ATTENTION)


def full_list_warnings(cfg: ConfigView, roles: list[str], base: int) -> list[str]:
    """Cross-check ``linear_attn_config.full_attn_layers`` against the KDA list."""
    listed = cfg.int_list("linear_attn_config.full_attn_layers")
    if listed is None:
        return []
    full = {v - base for v in listed if 0 <= v - base < len(roles)}
    wrong = [i for i, role in enumerate(roles) if (role == ATTENTION) != (i in full)]
    if wrong:
        return [f"linear_attn_config.full_attn_layers disagrees with kda_layers at layer(s) "
                f"{wrong[:8]} (0-based): kda_layers is used"]
    return []


@register(
    family="linear",
    model_types=("kimi_linear", "kimi_k3"),
    architectures=("KimiLinearForCausalLM", "KimiK3ForConditionalGeneration", "KimiK3LinearForCausalLM"),
    reads=(
        "linear_attn_config.kda_layers", "linear_attn_config.full_attn_layers", "linear_attn_config.num_heads",
        "linear_attn_config.head_dim", "linear_attn_config.short_conv_kernel_size", "layer_types",
        "kv_lora_rank", "qk_rope_head_dim", "num_hidden_layers", "num_nextn_predict_layers",
    ),
    ignores=MLA_IGNORES,
    fixtures={
        "kimi_k3": "moonshotai__Kimi-K3",
        "kimi_linear": "moonshotai__Kimi-Linear-48B-A3B-Instruct-transformers-defaults",
    },
)
def kimi_linear(cfg: ConfigView) -> Layout:
    """KDA where the **1-based** ``kda_layers`` says, MLA elsewhere."""
    n = num_layers(cfg)
    notes, warnings = [], []
    roles = kda_list_roles(cfg, n, base=1)
    if roles is not None:
        notes.append("linear_attn_config.kda_layers is 1-based: layer i is KDA iff i + 1 is listed")
        warnings += full_list_warnings(cfg, roles, base=1)
    else:
        roles = layer_types_or_default(
            cfg, n, notes, "no kda_layers or layer_types: the transformers default pattern applies"
        )
        if roles is None:
            raise ConfigError(cfg.path("linear_attn_config.kda_layers"), "missing (needed to find the KDA layers)")
    cfg.mark("linear_attn_config")
    parts = {LINEAR: ("kda", lambda: (kda_from_linear_config(cfg),)), ATTENTION: mla_parts(cfg)}
    return hybrid_layout(cfg, roles, parts, notes, warnings)
