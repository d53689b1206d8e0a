"""Domyn-Edge (``DomynEdgeForCausalLM``): a window and a head size per layer.

What vLLM 0.33.0's ``domyn_edge.py`` reads for layer i: ``window_sizes[i][0]``, the left bound w of
the reference model's flash-attention window (w, 0) — keys [pos − w, pos], w + 1 of them — which vLLM
caches as a sliding window of w + 1 (w ≤ 0: full attention); the head size
``per_layer_config[i].head_dim`` (transformers' per-layer form, ``{"<i>": {"head_dim": …}}``; the
reference config writes it as ``head_sizes[i]``); and
``num_key_value_heads`` for every layer. ``position_layers`` (RoPE or NoPE) does not change the cache.
SGLang 0.5.23 does not serve the architecture.
"""

from __future__ import annotations

from hfkv.model.config import MAX_LAYERS, ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import LayerSpec, Layout

from hfkv.mappings.readers.attention_keys import (
    Window,
    head_dim,
    heads_part,
    kv_heads,
    layer_window,
    num_heads,
    num_layers,
    per_layer_override,
)
from hfkv.mappings.registry import register


def _left_bounds(cfg: ConfigView, n: int) -> list[int]:
    """``window_sizes[i][0]`` per layer (the list cut to n layers, a shorter one refused)."""
    raw = cfg.value("window_sizes")
    if raw is None:
        raise ConfigError(cfg.path("window_sizes"), "missing (vLLM reads window_sizes[i][0] as layer i's window)")
    if not isinstance(raw, list):
        raise ConfigError(cfg.path("window_sizes"), f"expected a list of [left, right] pairs, got {raw!r}"[:200])
    lefts = []
    for i, entry in enumerate(raw[: MAX_LAYERS + 1]):
        pair = isinstance(entry, list) and len(entry) == 2
        if not pair or any(isinstance(v, bool) or not isinstance(v, int) for v in entry):
            raise ConfigError(cfg.path(f"window_sizes[{i}]"), f"expected [left, right] integers, got {entry!r}"[:200])
        lefts.append(entry[0])
    return cfg.fit_length("window_sizes", lefts, n)


def _head_dims(cfg: ConfigView, n: int, warnings: list[str]) -> list[int]:
    """Per layer: ``per_layer_config[i].head_dim`` (vLLM's read), else ``head_sizes[i]``, else one head_dim."""
    sizes = cfg.int_list("head_sizes", length=n)
    overrides = [per_layer_override(cfg, i).get("head_dim") for i in range(n)]
    if sizes is None and not any(overrides):
        single = head_dim(cfg, num_heads(cfg))
        warnings.append(f"no per_layer_config / head_sizes: every layer is given head_dim {single} (vLLM reads "
                        "per_layer_config[i].head_dim, which this config does not write)")
        return [single] * n
    if not any(overrides):
        cfg.note("head sizes from head_sizes (vLLM 0.33.0 reads per_layer_config[i].head_dim, the per-layer "
                 "form transformers saves)")
    dims = [o or (sizes[i] if sizes is not None else None) for i, o in enumerate(overrides)]
    missing = next((i for i, dim in enumerate(dims) if not dim), None)
    if missing is not None:
        raise ConfigError(cfg.path(f"head_sizes[{missing}]"), "no head size for this layer (must be at least 1)")
    return dims


def _window(cfg: ConfigView, left: int, notes: list[str]) -> Window:
    """Layer window from the left bound: w + 1 keys when w > 0 (vLLM's rule), none otherwise."""
    return layer_window(cfg, left + 1 if left > 0 else None, notes)


@register(
    family="sliding-geometry",
    model_types=("domyn_edge", "domynedge"),
    architectures=("DomynEdgeForCausalLM",),
    reads=("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "window_sizes", "per_layer_config",
           "head_sizes", "head_dim", "max_position_embeddings", "position_layers"),
    fixtures={"domynedge": "domyn__Domyn-Edge-Base-config-class-defaults"},
)
def domyn_edge(cfg: ConfigView) -> Layout:
    """Full and sliding layers, each with its own head size; windows w + 1 from ``window_sizes``."""
    notes: list[str] = []
    warnings: list[str] = []
    n = num_layers(cfg)
    kv = kv_heads(cfg, num_heads(cfg))
    lefts = _left_bounds(cfg, n)
    dims = _head_dims(cfg, n, warnings)
    windows = {left: _window(cfg, left, notes) for left in sorted(set(lefts))}
    if any(w.args() for w in windows.values()):
        notes.append("window_sizes[i] = [w, 0] attends to keys [pos − w, pos]: w + 1 cached (vLLM: w + 1)")
    cfg.mark("position_layers", "rope_parameters", "head_dim")
    layers = []
    for i, (left, dim) in enumerate(zip(lefts, dims)):
        part = heads_part(kv, dim, dim, **windows[left].args())
        layers.append(LayerSpec(index=i, kind=part.kind, parts=(part,)))
    return Layout(layers=layers, notes=notes, warnings=warnings)
