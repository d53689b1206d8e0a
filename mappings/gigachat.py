"""GigaChat-3.5 (SGLang): GDN layers (``linear_*`` keys) and MLA full layers. Pattern: ``layer_types``,
else the **0-based** ``full_attention_layers`` list.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import Layout

from hfkv.mappings.readers.attention_keys import num_layers
from hfkv.mappings.readers.latent_keys import mla_parts
from hfkv.mappings.readers.layer_builders import hybrid_layout
from hfkv.mappings.readers.layer_patterns import ATTENTION, LINEAR, roles_from_indices, roles_from_list
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import QWEN_LINEAR_READS, gdn_state


@register(
    family="linear",
    model_types=("gigachat3_5",),
    architectures=("GigaChat35ForCausalLM",),
    reads=QWEN_LINEAR_READS + (
        "full_attention_layers", "kv_lora_rank", "qk_rope_head_dim", "num_nextn_predict_layers",
    ),
)
def gigachat3_5(cfg: ConfigView) -> Layout:
    """GDN layers and MLA full layers per ``layer_types`` or the 0-based ``full_attention_layers``."""
    n = num_layers(cfg)
    notes: list[str] = []
    roles = roles_from_list(cfg, "layer_types", n, (ATTENTION, LINEAR))
    if roles is None:
        roles = roles_from_indices(cfg, "full_attention_layers", n, base=0, inside=ATTENTION, outside=LINEAR)
        if roles is None:
            raise ConfigError(
                cfg.path("full_attention_layers"), "missing, and no layer_types: the MLA layers cannot be found"
            )
        notes.append("full_attention_layers is 0-based: layer i is MLA iff i is listed, GDN otherwise")
    parts = {LINEAR: ("gdn", lambda: (gdn_state(cfg),)), ATTENTION: mla_parts(cfg)}
    return hybrid_layout(cfg, roles, parts, notes)
