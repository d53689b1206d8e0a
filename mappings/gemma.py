"""Cross-layer KV sharing (σ = 0 layers): Gemma 3n and Gemma 4.

Both are full/sliding hybrids whose last ``num_kv_shared_layers`` layers compute no K/V of their own:
they attend over an earlier layer's cache, so they own no copy (σ = 0, ``source_layer`` set) and
add nothing to α or γ. Which layer they read:

- Gemma 3n (vLLM ``gemma3n.py``, SGLang ``gemma3n_causal.py``): with ``first = n − num_kv_shared_layers``,
  a sliding consumer reads layer ``first − 2`` and a full consumer layer ``first − 1``. Default
  pattern: full iff (i + 1) % 5 == 0; default window 512; 15 shared layers by default.
- Gemma 4 (vLLM ``gemma4.py``, transformers ``kv_sharing_modes``): a consumer reads the last layer
  before ``first`` with the same type. Default pattern: sliding iff (i + 1) % 6 != 0 with the last
  layer forced full; default window 512 (``gemma4_unified``: 1024); no sharing by default.

Gemma 4 gives its two layer types different geometry. Sliding layers use ``head_dim`` and
``num_key_value_heads``; full layers use ``global_head_dim`` (default 512) and, only when
``attention_k_eq_v`` is true, ``num_global_key_value_heads`` (else ``num_key_value_heads``).

``attention_k_eq_v`` convention: the full layers' values *are* their keys, so an engine could cache
K alone. vLLM does not: it loads the K projection into both the K and V slots of its fused QKV
projection and caches both through a standard attention layer, so a full layer costs
E = 2·K_global·global_head_dim·e. hfkv counts that stored figure (K and V both), not the
theoretical K-only one, and says so in a note.

Engines differ on sharing: vLLM allocates nothing for shared layers (what hfkv counts); SGLang
routes them to the source layer but sizes its pool over every layer, so it saves nothing.

"""

from __future__ import annotations

from typing import Callable

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import LayerSpec, Layout, MambaState

from hfkv.mappings.readers.attention_keys import (
    Window,
    attention_part,
    head_dim,
    hidden_size,
    kv_heads,
    layer_window,
    num_heads,
    num_layers,
    per_layer_override,
    sliding_window,
    window_of,
)
from hfkv.mappings.readers.layer_builders import hybrid_layout
from hfkv.mappings.readers.layer_patterns import LINEAR, SLIDING, is_sliding_type, layer_types, named_roles
from hfkv.mappings.registry import register


SHARING_NOTE = (
    "KV-shared layers (σ = 0) are counted as vLLM allocates them: no storage; "
    "SGLang sizes its pool over every layer and saves nothing"
)


def _sliding_flags(cfg: ConfigView, n: int, default: Callable[[int], bool], notes: list[str]) -> list[bool]:
    """Per layer, True when sliding: ``layer_types`` when given (cut to n), else ``default(i)``."""
    types = layer_types(cfg, n)
    if types is None:
        notes.append("no layer_types in config: the model type's default sliding pattern applies")
        return [default(i) for i in range(n)]
    return [is_sliding_type(name, cfg) for name in types]


def _first_shared(cfg: ConfigView, n: int, default: int) -> int:
    """Index of the first KV-consuming layer (n when nothing is shared)."""
    shared = cfg.integer("num_kv_shared_layers", default=default)
    if shared >= n:
        raise ConfigError(
            cfg.path("num_kv_shared_layers"), f"{shared} shared layers leave none of the {n} layers to own a cache"
        )
    return n - shared


def _type_name(sliding: bool) -> str:
    return "sliding" if sliding else "full"


def _sharing_notes(first: int, n: int, sources: dict[int, int]) -> list[str]:
    if first >= n:
        return []
    by_source: dict[int, int] = {}
    for src in sources.values():
        by_source[src] = by_source.get(src, 0) + 1
    owners = ", ".join(f"layer {s} ({c} readers)" for s, c in sorted(by_source.items()))
    return [f"layers {first}–{n - 1} own no KV (num_kv_shared_layers {n - first}); they read {owners}", SHARING_NOTE]


def _gemma3n_sources(cfg: ConfigView, flags: list[bool], first: int, warnings: list[str]) -> dict[int, int]:
    """Consumer -> source: sliding consumers read first − 2, full consumers first − 1 (vLLM/SGLang)."""
    n = len(flags)
    if first < n and first < 2:
        raise ConfigError(cfg.path("num_kv_shared_layers"), f"needs at least 2 owning layers, got {first}")
    sources = {}
    for i in range(first, n):
        src = first - 2 if flags[i] else first - 1
        if flags[src] != flags[i]:
            warnings.append(
                f"layer {i} ({_type_name(flags[i])}) reads layer {src}, which is {_type_name(flags[src])}: "
                "the engines' fixed rule (first_shared − 2 / − 1) does not match this pattern"
            )
        sources[i] = src
    return sources


@register(
    family="kv-sharing",
    model_types=("gemma3n", "gemma3n_text"),
    architectures=("Gemma3nForCausalLM", "Gemma3nForConditionalGeneration"),
    reads=("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "sliding_window",
           "layer_types", "num_kv_shared_layers"),
    fixtures={"gemma3n": "google__gemma-3n-E4B-transformers-defaults"},
)
def gemma3n(cfg: ConfigView) -> Layout:
    """Sliding (W, default 512) and full layers; the last ``num_kv_shared_layers`` read earlier caches."""
    notes: list[str] = []
    warnings: list[str] = []
    n = num_layers(cfg)
    window = layer_window(cfg, sliding_window(cfg, default=512), notes)
    flags = _sliding_flags(cfg, n, lambda i: (i + 1) % 5 != 0, notes)
    first = _first_shared(cfg, n, default=15)  # transformers' Gemma3nTextConfig default
    sources = _gemma3n_sources(cfg, flags, first, warnings)
    layers = []
    for i, sliding in enumerate(flags):
        part = attention_part(
            cfg, source_layer=sources.get(i), head_dim_defaults=True, **(window.args() if sliding else {})
        )
        layers.append(LayerSpec(index=i, kind=part.kind, parts=(part,)))
    notes += _sharing_notes(first, n, sources)
    notes.append("SGLang allocates full KV for every Gemma 3n layer (no sliding-window saving)")
    return Layout(layers=layers, notes=notes, warnings=warnings)


_GEMMA4_WINDOW = {"gemma4": 512, "gemma4_text": 512, "gemma4_unified": 1024, "gemma4_unified_text": 1024}


def _gemma4_window(cfg: ConfigView, notes: list[str]) -> Window:
    model_type = cfg.text_model_type if cfg.text_model_type in _GEMMA4_WINDOW else cfg.model_type
    window = sliding_window(cfg, default=_GEMMA4_WINDOW.get(model_type or "", 512))
    if window is not None and cfg.value("use_bidirectional_attention") == "all":
        # transformers halves the window (exclusive bounds) when every token attends both ways.
        notes.append(f"use_bidirectional_attention 'all': sliding window {window} → {window // 2 + 1}")
        window = window // 2 + 1
    return layer_window(cfg, window, notes)


def _gemma4_flags(cfg: ConfigView, n: int, notes: list[str]) -> list[bool]:
    flags = _sliding_flags(cfg, n, lambda i: (i + 1) % 6 != 0, notes)
    if flags and flags[-1]:
        notes.append(f"layer {n - 1} is sliding in layer_types; Gemma 4 forces the last layer to full attention")
        flags[-1] = False
    return flags


def _gemma4_sources(cfg: ConfigView, flags: list[bool], first: int) -> dict[int, int]:
    """Consumer -> the last layer before ``first`` with the same type (vLLM, transformers)."""
    sources = {}
    for i in range(first, len(flags)):
        owners = [j for j in range(first) if flags[j] == flags[i]]
        if not owners:
            raise ConfigError(
                cfg.path("num_kv_shared_layers"),
                f"layer {i} is {_type_name(flags[i])} but no earlier non-shared layer of that type owns a cache",
            )
        sources[i] = owners[-1]
    return sources


def _gemma4_full_kv(cfg: ConfigView, heads: int, notes: list[str]) -> int:
    """KV heads of a full layer: ``num_global_key_value_heads`` only under ``attention_k_eq_v``."""
    k_eq_v = cfg.boolean("attention_k_eq_v", default=False)
    global_kv = cfg.optional_int("num_global_key_value_heads", minimum=1)
    if k_eq_v and global_kv is not None:
        notes.append(
            f"attention_k_eq_v: full layers use {global_kv} global KV heads; V equals K but vLLM caches both "
            "(E = 2·K_global·global_head_dim·e), and so does hfkv"
        )
        return global_kv
    return kv_heads(cfg, heads)


def _gemma4_shapes(cfg: ConfigView, flags: list[bool], notes: list[str]) -> list[dict]:
    """Per layer: KV heads and head dim. Sliding layers: ``num_key_value_heads`` × ``head_dim``; full
    layers: ``global_head_dim`` × the global KV heads, or, in a config saved by transformers 5.24,
    whatever ``per_layer_config`` says for that layer."""
    heads = num_heads(cfg)
    local = dict(kv=kv_heads(cfg, heads), key_dim=head_dim(cfg, heads, defaults=True))
    overrides = [per_layer_override(cfg, i) for i in range(len(flags))]
    if any(overrides):
        notes.append("per_layer_config (transformers' saved form) gives the per-layer head dims and KV heads")
        return [
            dict(kv=o.get("num_key_value_heads") or local["kv"], key_dim=o.get("head_dim") or local["key_dim"])
            for o in overrides
        ]
    glob = dict(kv=_gemma4_full_kv(cfg, heads, notes), key_dim=cfg.integer("global_head_dim", default=512, minimum=1))
    return [local if sliding else glob for sliding in flags]


@register(
    family="kv-sharing",
    model_types=("gemma4", "gemma4_text", "gemma4_unified", "gemma4_unified_text"),
    architectures=(
        "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "Gemma4UnifiedForConditionalGeneration",
    ),
    reads=("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "global_head_dim",
           "num_global_key_value_heads", "attention_k_eq_v", "sliding_window", "layer_types",
           "num_kv_shared_layers", "use_bidirectional_attention", "per_layer_config"),
    fixtures={"gemma4": "google__gemma-4-E2B-it", "gemma4_text": "google__gemma-4-26B-A4B"},
)
def gemma4(cfg: ConfigView) -> Layout:
    """Sliding layers with (head_dim, KV heads), full layers with (global_head_dim, global KV heads)."""
    notes: list[str] = []
    n = num_layers(cfg)
    window = _gemma4_window(cfg, notes)
    flags = _gemma4_flags(cfg, n, notes)
    shapes = _gemma4_shapes(cfg, flags, notes)
    first = _first_shared(cfg, n, default=0)
    sources = _gemma4_sources(cfg, flags, first)
    heads = num_heads(cfg)
    layers = []
    for i, sliding in enumerate(flags):
        shape = shapes[i]
        part = attention_part(
            cfg, heads=heads, kv=shape["kv"], key_dim=shape["key_dim"], value_dim=shape["key_dim"],
            source_layer=sources.get(i), **(window.args() if sliding else {}),
        )
        layers.append(LayerSpec(index=i, kind=part.kind, parts=(part,)))
    notes += _sharing_notes(first, n, sources)
    return Layout(layers=layers, notes=notes)


_GEMMA_BLOCKS = {"recurrent": LINEAR, "attention": SLIDING}


def rglru_state(cfg: ConfigView) -> MambaState:
    """RG-LRU: lru_width recurrent values plus (conv1d_width − 1)·lru_width conv values (Mamba-1 shape, N = 1)."""
    width = cfg.optional_int("lru_width", minimum=1) or hidden_size(cfg)
    kernel = cfg.integer("conv1d_width", minimum=1, defaults=True)
    return MambaState(version=1, num_heads=width, head_dim=1, state_size=1, n_groups=0, conv_kernel=kernel)


@register(
    family="ssm",
    model_types=("recurrent_gemma",),
    architectures=("RecurrentGemmaForCausalLM",),
    reads=(
        "block_types", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size",
        "attention_window_size", "lru_width", "conv1d_width",
    ),
    fixtures={"recurrent_gemma": "google__recurrentgemma-2b-transformers-defaults"},
)
def recurrent_gemma(cfg: ConfigView) -> Layout:
    """RG-LRU recurrent blocks and local attention blocks, ``block_types`` repeated over the layers."""
    n = num_layers(cfg)
    blocks = cfg.str_list("block_types", defaults=True)
    if not blocks:
        raise ConfigError(cfg.path("block_types"), "missing or empty (needed to find the attention blocks)")
    roles = named_roles(cfg, "block_types", [blocks[i % len(blocks)] for i in range(n)], _GEMMA_BLOCKS)
    notes: list[str] = ["block_types repeats over the layers: layer i has block_types[i % len(block_types)]"]
    window = layer_window(cfg, window_of(cfg, "attention_window_size", "sliding_window"), notes)
    parts = {
        LINEAR: ("rglru", lambda: (rglru_state(cfg),)),
        SLIDING: (window.kind, lambda: (attention_part(cfg, **window.args()),)),
    }
    notes.append("neither SGLang nor vLLM serves RecurrentGemma: figures follow the model's own cache")
    return hybrid_layout(cfg, roles, parts, notes)
