"""OLMo-Hybrid: GDN + full GQA per ``layer_types`` (transformers default: full iff i % 4 == 3).
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import Layout

from hfkv.mappings.readers.attention_keys import num_layers
from hfkv.mappings.readers.layer_builders import gqa_parts, hybrid_layout
from hfkv.mappings.readers.layer_patterns import ATTENTION, ATTENTION_OR_LINEAR, LINEAR, roles_from_list
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import GDN_READS, gdn_state


@register(
    family="linear",
    model_types=("olmo_hybrid",),
    architectures=("OlmoHybridForCausalLM",),
    reads=GDN_READS,
    fixtures={"olmo_hybrid": "allenai__Olmo-Hybrid-7B-transformers-defaults"},
)
def olmo_hybrid(cfg: ConfigView) -> Layout:
    """GDN + full GQA per ``layer_types`` (transformers default: full iff i % 4 == 3)."""
    n = num_layers(cfg)
    notes = []
    if not cfg.present("layer_types"):
        notes.append("no layer_types in config: the transformers default pattern applies (full iff i % 4 == 3)")
    roles = roles_from_list(cfg, "layer_types", n, ATTENTION_OR_LINEAR, defaults=True)
    if roles is None:
        raise ConfigError(cfg.path("layer_types"), "missing (needed to tell GDN layers from full ones)")
    parts = {LINEAR: ("gdn", lambda: (gdn_state(cfg),)), ATTENTION: gqa_parts(cfg)}
    return hybrid_layout(cfg, roles, parts, notes)
