"""Xiaomi MiMo-V2 (``mimo_v2_flash``, ``mimo_v2``): full and SWA layers with their own geometry.

Pattern: ``hybrid_layer_pattern`` (1 = SWA, 0 = full; 0-based), else ``layer_types``, else transformers'
default (full iff i == 0 or (i + 1) % 6 == 0). Full layers use ``num_key_value_heads``, ``head_dim``
(K, 192) and ``v_head_dim`` (V, 128); SWA layers ``swa_num_key_value_heads``, ``swa_head_dim`` and
``swa_v_head_dim`` (each defaulting to the full layers' value). W = ``sliding_window_size`` (what the
engines use); a config with only ``sliding_window`` is the transformers form (size + 1, default 129),
used as is. (MiMo-7B uses ``qwen.qwen2``.)
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import Layout

from hfkv.mappings.readers.attention_keys import Window, attention_shape, heads_part, layer_window, num_layers
from hfkv.mappings.readers.layer_builders import layers_from_flags, mtp_note
from hfkv.mappings.readers.layer_patterns import cut_note, is_sliding_type, layer_types
from hfkv.mappings.registry import register


def _mimo_flags(cfg: ConfigView, n: int, notes: list[str]) -> list[bool]:
    """Per layer, True when SWA."""
    pattern = cfg.int_list("hybrid_layer_pattern", length=n)
    if pattern is not None:
        notes.extend(cut_note(cfg, "hybrid_layer_pattern", n))
        for i, value in enumerate(pattern):
            if value not in (0, 1):
                raise ConfigError(cfg.path(f"hybrid_layer_pattern[{i}]"), f"expected 0 (full) or 1 (SWA), got {value}")
        return [value == 1 for value in pattern]
    types = layer_types(cfg, n)
    if types is not None:
        return [is_sliding_type(name, cfg) for name in types]
    notes.append("no hybrid_layer_pattern or layer_types: full iff i == 0 or (i + 1) % 6 == 0 (transformers default)")
    return [not (i == 0 or (i + 1) % 6 == 0) for i in range(n)]


def _mimo_window(cfg: ConfigView, notes: list[str]) -> Window:
    window = cfg.optional_int("sliding_window_size")
    if window is None:
        window = cfg.optional_int("sliding_window", defaults=True)
        if window is not None:
            notes.append(
                f"no sliding_window_size: sliding_window {window} used as W (transformers stores size + 1)"
            )
    return layer_window(cfg, window, notes)


@register(
    family="sliding-geometry",
    model_types=("mimo_v2_flash", "mimo_v2"),
    architectures=("MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM"),
    reads=("num_hidden_layers", "hybrid_layer_pattern", "layer_types", "num_key_value_heads", "head_dim",
           "v_head_dim", "swa_num_key_value_heads", "swa_head_dim", "swa_v_head_dim", "sliding_window_size",
           "sliding_window", "num_nextn_predict_layers"),
    fixtures={"mimo_v2_flash": "XiaomiMiMo__MiMo-V2-Flash-transformers-defaults"},
)
def mimo_v2(cfg: ConfigView) -> Layout:
    """Full layers (K, V heads of their own widths) and SWA layers with their own KV heads and dims."""
    notes: list[str] = []
    n = num_layers(cfg)
    heads, kv, key_dim = attention_shape(cfg, head_dim_defaults=True)
    value_dim = cfg.optional_int("v_head_dim", minimum=1, defaults=True) or key_dim
    swa_kv = cfg.optional_int("swa_num_key_value_heads", minimum=1) or kv
    swa_key = cfg.optional_int("swa_head_dim", minimum=1) or key_dim
    swa_value = cfg.optional_int("swa_v_head_dim", minimum=1) or value_dim
    cfg.mark("swa_num_attention_heads")
    flags = _mimo_flags(cfg, n, notes)
    window = _mimo_window(cfg, notes)
    full = heads_part(kv, key_dim, value_dim)
    # An SWA layer keeps its own geometry even when its window bounds nothing (or is missing).
    local = heads_part(swa_kv, swa_key, swa_value, **window.args())
    return Layout(layers=layers_from_flags(flags, local, full), notes=notes + mtp_note(cfg))
