"""Looped transformers (IQuest LoopCoder, Nanbeige): each loop pass keeps its own KV, so the layers
repeat; layer i of pass k is numbered k·L + i.
"""

from __future__ import annotations

from typing import Callable

from hfkv.model.config import MAX_LAYERS, ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import CachePart, FullAttention, LayerSpec, Layout

from hfkv.mappings.readers.attention_keys import Window, heads_part, layer_window
from hfkv.mappings.readers.layer_builders import pattern_layout
from hfkv.mappings.registry import register


PartRewrite = Callable[[CachePart], CachePart]


def _repeat_passes(base: list[LayerSpec], loops: int, later: PartRewrite | None = None) -> list[LayerSpec]:
    """``loops`` copies of ``base`` numbered loop·L + i; ``later(part)`` rewrites parts of passes ≥ 1."""
    n = len(base)
    layers = list(base)
    for loop in range(1, loops):
        for layer in base:
            parts = tuple(later(part) for part in layer.parts) if later else layer.parts
            kind = f"loop-{parts[0].kind}" if parts else f"loop-{layer.kind}"
            layers.append(LayerSpec(index=loop * n + layer.index, kind=kind, parts=parts))
    return layers


def _windowed(window: Window) -> PartRewrite:
    """Turn a full-attention part into the same heads over ``window`` (IQuest's later passes)."""

    def rewrite(part: CachePart) -> CachePart:
        if isinstance(part, FullAttention):
            value_dim = part.v_head_dim if part.v_head_dim is not None else part.head_dim
            return heads_part(part.kv_heads, part.head_dim, value_dim, source_layer=part.source_layer, **window.args())
        return part

    return rewrite


def _loop_count(cfg: ConfigView, key: str, default: int, n: int) -> int:
    """The number of loop passes, bounded so that passes × layers stays a real model's size."""
    loops = cfg.integer(key, default=default, minimum=1, maximum=MAX_LAYERS)
    if loops * n > MAX_LAYERS:
        raise ConfigError(cfg.path(key), f"{loops} passes over {n} layers is beyond any real model")
    return loops


def _loop_note(loops: int, n: int) -> str:
    return f"{loops} loop passes over {n} layers: each pass keeps its own KV ({loops * n} layer caches)"


@register(
    family="loop",
    model_types=("iquest_loopcoder", "iquestloopcoder"),
    architectures=("IQuestLoopCoderForCausalLM",),
    reads=("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "loop_num",
           "loop_window_size"),
)
def iquest_loopcoder(cfg: ConfigView) -> Layout:
    """IQuest LoopCoder: ``loop_num`` passes (default 2) over the same layers.

    Pass 0 keeps a full KV per layer; every later pass keeps its own KV over the last
    ``loop_window_size`` tokens (default 64), as vLLM's model builds it (a sliding-window attention per
    later pass, mixed with pass 0's global KV by a gate). Layer i of pass k is numbered k·L + i.
    """
    base = pattern_layout(cfg, default_window=None, default_rule=None)
    n = len(base.layers)
    loops = _loop_count(cfg, "loop_num", 2, n)
    window = cfg.integer("loop_window_size", default=64, minimum=1)
    notes = list(base.notes)
    layers = _repeat_passes(base.layers, loops, _windowed(layer_window(cfg, window, notes)))
    notes.append(_loop_note(loops, n))
    if loops > 1:
        notes.append(
            f"passes 1..{loops - 1} keep a {window}-token window (loop_window_size); a pool that "
            f"counts every pass as full needs {loops - 1}×{n} more full layers per token"
        )
    if not cfg.present("loop_num") or not cfg.present("loop_window_size"):
        notes.append("loop_num / loop_window_size missing: vLLM's defaults (2, 64) applied")
    return Layout(layers=layers, notes=notes, warnings=base.warnings)


@register(
    family="loop",
    model_types=("nanbeige",),
    architectures=("NanbeigeForCausalLM",),
    reads=("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "num_loops",
           "sliding_window", "layer_types"),
)
def nanbeige(cfg: ConfigView) -> Layout:
    """Nanbeige looped transformer: ``num_loops`` passes over the layers, each keeping its own full KV.

    A config without ``num_loops`` is not looped (one pass).
    """
    base = pattern_layout(cfg, default_window=None, default_rule=None)
    n = len(base.layers)
    loops = _loop_count(cfg, "num_loops", 1, n)
    layers = _repeat_passes(base.layers, loops)
    notes = base.notes + ([_loop_note(loops, n)] if loops > 1 else [])
    return Layout(layers=layers, notes=notes, warnings=base.warnings)
