"""Layer builders: per-layer roles (``layer_patterns``) and the standard attention keys
(``attention_keys``) turned into ``LayerSpec`` lists and ``Layout``s, with the notes every family
shares (layer counts, MTP layers left out, the recurrent-state dtype).
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Mapping, Sequence

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import LayerSpec, Layout, MambaState

from hfkv.mappings.readers.attention_keys import (
    ATTENTION_SHAPE_KEYS,
    WINDOW_KEYS,
    Part,
    Window,
    attention_part,
    layer_window,
    num_layers,
    per_layer_heads,
    sliding_window,
)
from hfkv.mappings.readers.layer_patterns import ATTENTION, HYBRID, LINEAR, MLP, is_sliding_type, layer_types
from hfkv.mappings.readers.state_shapes import state_dtype_note


PartsFactory = Callable[[], tuple]


def attention_layers(
    cfg: ConfigView, n: int, window: Window, is_sliding: Callable[[int], bool], *, head_dim_defaults: bool = False,
) -> list[LayerSpec]:
    """n standard attention layers; the layers ``is_sliding`` names get ``window`` (a ``SlidingWindow``
    when it bounds the context, a ``FullAttention`` that keeps it as ``declared_window`` when it covers
    every position); the others, and every layer without a window, are full.

    Heads written per layer (``per_layer_heads``) give each layer its own query and KV head count.
    """
    counts = per_layer_heads(cfg, n)
    if counts is None:
        full = attention_part(cfg, head_dim_defaults=head_dim_defaults)
        local = attention_part(cfg, head_dim_defaults=head_dim_defaults, **window.args()) if window.args() else full
        parts = [local if is_sliding(i) else full for i in range(n)]
    else:
        parts = [
            attention_part(cfg, heads=heads, kv=kv, head_dim_defaults=head_dim_defaults,
                           **(window.args() if is_sliding(i) else {}))
            for i, (heads, kv) in enumerate(zip(*counts))
        ]
    return [LayerSpec(index=i, kind=part.kind, parts=(part,)) for i, part in enumerate(parts)]


def pattern_layout(
    cfg: ConfigView,
    *,
    default_window: int | None,
    default_rule: Callable[[int, int], bool] | None,
    head_dim_defaults: bool = False,
    inclusive_window: bool = False,
) -> Layout:
    """Full/sliding hybrids: ``layer_types`` when given, else ``default_rule(i, n)``; all full without a window.

    ``inclusive_window``: the model attends to [pos − W, pos], W + 1 keys (Cohere 2; vLLM caches W + 1).
    """
    notes: list[str] = []
    n = num_layers(cfg)
    window = sliding_window(cfg, default=default_window)
    if window is not None and inclusive_window:
        notes.append(f"sliding layers attend to [pos − {window}, pos]: {window + 1} keys cached (vLLM: W + 1)")
        window += 1
    window = layer_window(cfg, window, notes)
    types = layer_types(cfg, n)
    if types is not None:
        rule = lambda i: is_sliding_type(types[i], cfg)  # noqa: E731
        unwindowed_sliding(cfg, sum(1 for i in range(n) if rule(i)), window, notes)
    elif default_rule is not None:
        rule = lambda i: default_rule(i, n)  # noqa: E731
        if window.bound is not None:
            notes.append("no layer_types in config: the model type's default sliding pattern applies")
    else:
        rule = lambda i: True  # noqa: E731
    layers = attention_layers(cfg, n, window, rule, head_dim_defaults=head_dim_defaults)
    return Layout(layers=layers, notes=notes + mtp_note(cfg))


def unwindowed_sliding(cfg: ConfigView, sliding: int, window: Window, notes: list[str]) -> None:
    """``layer_types`` names ``sliding`` layers but the config gives no usable window: they are counted as
    full attention (the engines build a layer without a window so), never silently. ``use_sliding_window:
    false`` turns the window off on purpose (a note); a missing, null or 0 window is a warning."""
    if not sliding or window.bound is not None or window.declared is not None:
        return
    if cfg.present("use_sliding_window") and not cfg.boolean("use_sliding_window"):
        notes.append(f"use_sliding_window is false: the {sliding} sliding layer(s) of layer_types keep every token")
        return
    written = next((key for key in WINDOW_KEYS if cfg.present(key)), None)
    nulled = next((key for key in WINDOW_KEYS if cfg.written(key)), None)
    what = (f"{cfg.path(written)} = {cfg.value(written)}" if written
            else f"{cfg.path(nulled)} = null" if nulled else "no sliding_window")
    cfg.warn(f"estimate, not exact: layer_types names {sliding} sliding layer(s) but the config gives no usable "
             f"window ({what}): counted as full attention, as an engine builds a layer without a window")


def build_layers(roles: Sequence[str], parts: Mapping[str, tuple[str, Callable[[], tuple]]]) -> list[LayerSpec]:
    """One ``LayerSpec`` per role; ``parts[role]`` = (kind label, factory of the parts), each called once."""
    made: dict[str, tuple[str, tuple]] = {}
    layers = []
    for i, role in enumerate(roles):
        if role not in made:
            if role not in parts:
                raise ConfigError(None, f"layer {i} is of type {role!r}, which this model type does not have")
            kind, factory = parts[role]
            made[role] = (kind, tuple(factory()))
        kind, built = made[role]
        layers.append(LayerSpec(index=i, kind=kind, parts=built))
    return layers


def count_note(layers: Sequence[LayerSpec]) -> str:
    """'48 layers: 36 gdn, 12 full' — the pattern in one line, kinds in order of first appearance."""
    counts = Counter(layer.kind for layer in layers)
    return f"{len(layers)} layers: " + ", ".join(f"{count} {kind}" for kind, count in counts.items())


def layers_from_flags(flags: list[bool], local: Part, full: Part) -> list[LayerSpec]:
    """Layer i gets ``local`` when ``flags[i]``, else ``full``."""
    return [
        LayerSpec(index=i, kind=(local if is_local else full).kind, parts=(local if is_local else full,))
        for i, is_local in enumerate(flags)
    ]


def mtp_note(cfg: ConfigView) -> list[str]:
    """A note on MTP/draft layers, which are not part of the target model."""
    count = cfg.optional_int("num_nextn_predict_layers", "mtp_num_hidden_layers")
    if count:
        return [f"{count} MTP draft layer(s) left out: they are not part of the target model "
                f"(--engine sglang --speculative-draft-layers {count} adds SGLang's draft pool)"]
    return []


def mtp_notes(cfg: ConfigView) -> list[str]:
    """MTP/draft layers left out, under any of the spellings these families use."""
    notes = mtp_note(cfg)
    if notes:
        return notes
    count = cfg.optional_int("num_mtp_layers")
    if count:
        return [f"{count} MTP draft layer(s) left out: they are not part of the target model"]
    for key in ("mtp_hybrid_override_pattern", "mtp_layers_block_type"):
        if cfg.present(key) and cfg.optional_int("num_nextn_predict_layers") is None:
            return [f"{key} describes MTP draft layers: left out, they are not part of the target model"]
    return []


def hybrid_layout(
    cfg: ConfigView,
    roles: list[str],
    parts: dict[str, tuple[str, PartsFactory]],
    notes: list[str] | None = None,
    warnings: list[str] | None = None,
) -> Layout:
    """Build the layers from per-layer roles and say what was found (counts, state dtype, MTP)."""
    layers = build_layers(roles, parts)
    return Layout(
        layers=layers,
        notes=[count_note(layers)] + list(notes or []) + state_dtype_note(cfg) + mtp_notes(cfg),
        warnings=list(warnings or []),
    )


def gqa_parts(cfg: ConfigView, *, head_dim_defaults: bool = False, windowed: bool = False) -> tuple[str, PartsFactory]:
    """Standard attention for the full layers; ``windowed`` honours ``sliding_window`` (vLLM applies it)."""

    def make() -> tuple:
        window = layer_window(cfg, sliding_window(cfg)) if windowed else Window()
        return (attention_part(cfg, head_dim_defaults=head_dim_defaults, **window.args()),)

    cfg.mark("use_sliding_window", "sliding_window")
    return ("full", make)


def ssm_layout(
    cfg: ConfigView,
    roles: list[str],
    mamba: MambaState,
    attention: tuple | None = None,
    notes: list[str] | None = None,
    warnings: list[str] | None = None,
) -> Layout:
    """Layers from roles: LINEAR → Mamba, ATTENTION → ``attention``, HYBRID → both, MLP → no parts."""
    parts = {
        LINEAR: ("mamba", lambda: (mamba,)),
        MLP: ("mlp", lambda: ()),
    }
    if attention is not None:
        parts[ATTENTION] = (attention[0].kind, lambda: attention)
        parts[HYBRID] = ("hybrid", lambda: attention + (mamba,))
    layers = build_layers(roles, parts)
    return Layout(
        layers=layers,
        notes=[count_note(layers)] + list(notes or []) + state_dtype_note(cfg) + mtp_notes(cfg),
        warnings=list(warnings or []),
    )


def unused_attention_keys(cfg: ConfigView) -> list[str]:
    """A hybrid whose pattern leaves no attention layer (a Jamba of fewer layers than its
    ``attn_layer_period``): the attention keys it writes size nothing, so they are understood (no
    "estimate" for an unread head count) and said once. Not for a model type that never attends (a
    Mamba config with attention heads may be a hybrid under the wrong name: the key stays unread)."""
    # A key the mapper read already means something else here (Mamba-2's num_heads and head_dim are its SSM's).
    written = [key for key in ATTENTION_SHAPE_KEYS if key not in cfg.consumed and cfg.present(key)]
    cfg.mark(*ATTENTION_SHAPE_KEYS)
    if not written:
        return []
    return [f"no layer is an attention layer: {', '.join(cfg.path(k) for k in written)} size no cache"]


def cross_attention_layers(cfg: ConfigView, n: int, cross: Sequence[int]) -> list[LayerSpec]:
    """n standard attention layers; the 0-based indices in ``cross`` (``cross_attention_layers``) are
    labelled cross-attention and counted as full layers (n = S), the convention of SGLang's token pool."""
    bad = [i for i in cross if i >= n]
    if bad:
        raise ConfigError(cfg.path("cross_attention_layers"), f"index {bad[0]} is past the {n} layers")
    chosen = set(cross)
    part = attention_part(cfg)
    return [
        LayerSpec(index=i, kind="cross-attention" if i in chosen else part.kind, parts=(part,)) for i in range(n)
    ]


def cross_attention_note(cross: Sequence[int]) -> str:
    return f"{len(set(cross))} cross-attention layer(s) counted as full layers (n = S), as SGLang's pool does"
