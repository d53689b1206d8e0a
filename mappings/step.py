"""StepFun Step-3.5 / Step-3.7 (``step3p5``, ``step3p7``): full and sliding layers.

``layer_types`` (with the MTP layers' entries appended: cut to ``num_hidden_layers``); KV heads
``num_attention_groups``. Layers of ``attention_other_setting.attention_type`` (default
``sliding_attention``) take that dict's ``num_attention_groups`` / ``head_dim``;
``num_sliding_attention_heads`` changes only query heads.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import LayerSpec, Layout

from hfkv.mappings.readers.attention_keys import attention_shape, heads_part, layer_window, num_layers
from hfkv.mappings.readers.layer_builders import mtp_note
from hfkv.mappings.readers.layer_patterns import cut_note, is_sliding_type, layer_types
from hfkv.mappings.registry import register


def _step_other(cfg: ConfigView) -> tuple[str, dict]:
    other = cfg.value("attention_other_setting")
    if other is None:
        return "sliding_attention", {}
    if not isinstance(other, dict):
        raise ConfigError(cfg.path("attention_other_setting"), f"expected an object, got {type(other).__name__}")
    kind = other.get("attention_type", "sliding_attention")
    return kind, other


def _positive(cfg: ConfigView, key: str, raw, fallback: int) -> int:
    if raw is None:
        return fallback
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise ConfigError(cfg.path(key), f"expected a positive integer, got {raw!r}")
    return raw


@register(
    family="sliding-geometry",
    model_types=("step3p5", "step3p7"),
    architectures=("Step3p5ForCausalLM", "Step3p7ForConditionalGeneration"),
    reads=("num_hidden_layers", "layer_types", "num_attention_heads", "num_attention_groups", "head_dim",
           "attention_other_setting", "num_sliding_attention_heads", "sliding_window", "num_nextn_predict_layers"),
    fixtures={"step3p7": "stepfun-ai__Step-3.7-Flash-transformers-defaults"},
)
def step3p5(cfg: ConfigView) -> Layout:
    """Full and sliding layers; the sliding type's KV heads and head dim come from ``attention_other_setting``."""
    notes: list[str] = []
    n = num_layers(cfg)
    heads, kv, key_dim = attention_shape(cfg)
    other_type, other = _step_other(cfg)
    types = layer_types(cfg, n)
    if types is None:
        notes.append("no layer_types: every layer is full attention (transformers default)")
        types = ["full_attention"] * n
    else:
        notes.extend(cut_note(cfg, "layer_types", n))
    sliding = [is_sliding_type(name, cfg) for name in types]
    window = cfg.optional_int("sliding_window")
    if any(sliding) and not window:
        raise ConfigError(cfg.path("sliding_window"), "missing, but layer_types has sliding layers")
    window = layer_window(cfg, window, notes)
    cfg.mark("num_sliding_attention_heads")  # query heads only: no effect on the cache
    other_kv = _positive(cfg, "attention_other_setting.num_attention_groups", other.get("num_attention_groups"), kv)
    other_dim = _positive(cfg, "attention_other_setting.head_dim", other.get("head_dim"), key_dim)
    layers = []
    for i, name in enumerate(types):
        # attention_other_setting reshapes the layers of its attention_type; the type decides the window.
        layer_kv, layer_dim = (other_kv, other_dim) if name == other_type else (kv, key_dim)
        part = heads_part(layer_kv, layer_dim, layer_dim, **(window.args() if sliding[i] else {}))
        layers.append(LayerSpec(index=i, kind=part.kind, parts=(part,)))
    return Layout(layers=layers, notes=notes + mtp_note(cfg))
