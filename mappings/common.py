"""Key readers and layer builders shared by the family mappers.

Every alias list lives here once; a family module only says which rule applies to which layer.
"""

from __future__ import annotations

from typing import Callable, Sequence

from hfkv.config import MAX_LAYERS, ConfigView
from hfkv.errors import ConfigError
from hfkv.specs import (
    ChunkedLocal,
    FullAttention,
    IndexerKeys,
    LayerSpec,
    Layout,
    MLALatent,
    SlidingWindow,
)

LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
HEAD_KEYS = ("num_attention_heads", "n_head", "n_heads", "num_heads")
HIDDEN_KEYS = ("hidden_size", "n_embd", "n_embed", "d_model", "dim")
# vLLM's alias order for the KV-head count (first present wins), plus MPT/DBRX's nested key.
KV_HEAD_KEYS = (
    "n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
    "num_attention_groups", "attn_config.kv_n_heads",
)
WINDOW_KEYS = ("sliding_window", "sliding_window_size", "window_size")
MAX_POSITION_KEYS = (
    "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "max_seq_len",
    "seq_len", "model_max_length", "max_target_positions",
)


# -- counts and shapes ------------------------------------------------------------------------


def num_layers(cfg: ConfigView) -> int:
    return cfg.integer(*LAYER_KEYS, minimum=1, maximum=MAX_LAYERS, defaults=True)


def num_heads(cfg: ConfigView) -> int:
    return cfg.integer(*HEAD_KEYS, minimum=1, defaults=True)


def kv_heads(cfg: ConfigView, heads: int) -> int:
    """KV heads from the alias keys; Falcon-style ``multi_query`` means 1; default: ``heads`` (MHA)."""
    if cfg.boolean("multi_query") and not cfg.boolean("new_decoder_architecture"):
        return 1
    found = cfg.optional_int(*KV_HEAD_KEYS, minimum=1)
    if found is None and cfg.defaults_loaded:  # a sparse config (Gemma 3's text_config): class defaults
        found = cfg.optional_int("num_key_value_heads", minimum=1, defaults=True)
    if found is None:
        return heads
    if found > heads:
        raise ConfigError(cfg.path("num_key_value_heads"), f"{found} KV heads exceed {heads} query heads")
    return found


def head_dim(cfg: ConfigView, heads: int, *, defaults: bool = False) -> int:
    """``head_dim`` when present and > 0, else ``kv_channels`` / ``hidden_size_per_head``, else hidden/heads.

    ``defaults=True`` (families whose head_dim is not hidden/heads, e.g. Gemma's 256) asks the
    transformers config class before falling back to hidden/heads; so does a config whose hidden
    size is missing too.
    """
    for key in ("head_dim", "kv_channels", "hidden_size_per_head"):
        value = cfg.optional_int(key)
        if value:
            return value
    hidden = cfg.optional_int(*HIDDEN_KEYS, minimum=1)
    if hidden is None or defaults or cfg.defaults_loaded:
        value = cfg.optional_int("head_dim", minimum=1, defaults=True)
        if value:
            return value
        hidden = cfg.integer(*HIDDEN_KEYS, minimum=1, defaults=True)
    if hidden % heads:
        raise ConfigError(cfg.path("hidden_size"), f"{hidden} is not divisible by {heads} heads and no head_dim is given")
    return hidden // heads


def attention_shape(cfg: ConfigView, *, head_dim_defaults: bool = False) -> tuple[int, int, int]:
    """(query heads, KV heads, head_dim) of the config's standard attention."""
    heads = num_heads(cfg)
    return heads, kv_heads(cfg, heads), head_dim(cfg, heads, defaults=head_dim_defaults)


def v_head_dim(cfg: ConfigView, key_dim: int) -> int:
    """Value head dim for standard attention (``v_head_dim`` when present and > 0)."""
    return cfg.optional_int("v_head_dim") or key_dim


def max_positions(cfg: ConfigView) -> int | None:
    return cfg.optional_int(*MAX_POSITION_KEYS, minimum=1)


# -- windows and layer patterns ---------------------------------------------------------------


def sliding_window(cfg: ConfigView, *, default: int | None = None, keys: Sequence[str] = WINDOW_KEYS) -> int | None:
    """The window W, or None for no window.

    ``use_sliding_window: false`` means none even when a window is written (Qwen2/3), and so does a
    window of 0. ``default`` applies when no window key is present (the transformers default of
    families whose configs may omit it).
    """
    if cfg.present("use_sliding_window") and not cfg.boolean("use_sliding_window"):
        return None
    window = cfg.optional_int(*keys)
    if window is None:
        return default
    return window or None


def effective_window(cfg: ConfigView, window: int | None, notes: list[str]) -> int | None:
    """Drop a window that covers every position the model supports (it bounds nothing)."""
    limit = max_positions(cfg)
    if window is not None and limit is not None and window >= limit:
        notes.append(
            f"sliding window {window} ≥ max_position_embeddings {limit}: accounted as full attention"
        )
        return None
    return window


def layer_types(cfg: ConfigView, n: int, key: str = "layer_types") -> list[str] | None:
    """``layer_types`` cut to the target layers (longer lists carry MTP entries), or None."""
    return cfg.str_list(key, length=n)


SLIDING_NAMES = frozenset({"sliding_attention", "sliding", "swa", "local", "local_attention", "chunked_attention"})
FULL_NAMES = frozenset({"full_attention", "full", "global", "attention", "global_attention"})


def is_sliding_type(name: str, cfg: ConfigView, key: str = "layer_types") -> bool:
    """True for a sliding entry of ``layer_types``, False for a full one; error for anything else."""
    if name in SLIDING_NAMES:
        return True
    if name in FULL_NAMES:
        return False
    raise ConfigError(cfg.path(key), f"unknown layer type {name!r}")


# -- layer builders ---------------------------------------------------------------------------


def attention_part(
    cfg: ConfigView,
    *,
    window: int | None = None,
    chunk: int | None = None,
    heads: int | None = None,
    kv: int | None = None,
    key_dim: int | None = None,
    value_dim: int | None = None,
    source_layer: int | None = None,
    head_dim_defaults: bool = False,
) -> FullAttention | SlidingWindow | ChunkedLocal:
    """A standard attention part with the config's geometry unless overridden."""
    heads = heads or num_heads(cfg)
    kv = kv or kv_heads(cfg, heads)
    key_dim = key_dim or head_dim(cfg, heads, defaults=head_dim_defaults)
    value_dim = value_dim if value_dim is not None else v_head_dim(cfg, key_dim)
    shape = dict(kv_heads=kv, head_dim=key_dim, v_head_dim=None if value_dim == key_dim else value_dim,
                 source_layer=source_layer)
    if chunk is not None:
        return ChunkedLocal(chunk=chunk, **shape)
    if window is not None:
        return SlidingWindow(window=window, **shape)
    return FullAttention(**shape)


def attention_layers(
    cfg: ConfigView, n: int, window: int | None, is_sliding: Callable[[int], bool], *, head_dim_defaults: bool = False
) -> list[LayerSpec]:
    """n standard attention layers; layer i is sliding (window W) when ``is_sliding(i)`` and W is set."""
    full = attention_part(cfg, head_dim_defaults=head_dim_defaults)
    sliding = attention_part(cfg, window=window, head_dim_defaults=head_dim_defaults) if window is not None else full
    layers = []
    for i in range(n):
        part = sliding if window is not None and is_sliding(i) else full
        layers.append(LayerSpec(index=i, kind=part.kind, parts=(part,)))
    return layers


def pattern_layout(
    cfg: ConfigView,
    *,
    default_window: int | None,
    default_rule: Callable[[int, int], bool] | None,
    head_dim_defaults: bool = False,
) -> Layout:
    """Full/sliding hybrids: ``layer_types`` when given, else ``default_rule(i, n)``; all full without a window."""
    notes: list[str] = []
    n = num_layers(cfg)
    window = effective_window(cfg, sliding_window(cfg, default=default_window), notes)
    types = layer_types(cfg, n)
    if types is not None:
        rule = lambda i: is_sliding_type(types[i], cfg)  # noqa: E731
    elif default_rule is not None:
        rule = lambda i: default_rule(i, n)  # noqa: E731
        if window is not None:
            notes.append("no layer_types in config: the model type's default sliding pattern applies")
    else:
        rule = lambda i: True  # noqa: E731
    layers = attention_layers(cfg, n, window, rule, head_dim_defaults=head_dim_defaults)
    return Layout(layers=layers, notes=notes + mtp_note(cfg))


# -- MLA and DSA ------------------------------------------------------------------------------


def mla_latent(cfg: ConfigView, *, topk: int | None = None, window: int | None = None) -> MLALatent:
    """The cached latent: ``kv_lora_rank`` + ``qk_rope_head_dim`` (qk_nope/v_head_dim are not cached)."""
    cfg.mark("qk_nope_head_dim", "v_head_dim", "q_lora_rank", "num_key_value_heads")
    return MLALatent(
        kv_lora_rank=cfg.integer("kv_lora_rank", minimum=1, defaults=True),
        rope_dim=cfg.integer("qk_rope_head_dim", default=64, defaults=True),
        topk=topk,
        window=window,
    )


def dsa_indexer(cfg: ConfigView) -> IndexerKeys:
    return IndexerKeys(head_dim=cfg.integer("index_head_dim", default=128, minimum=1))


def mtp_note(cfg: ConfigView) -> list[str]:
    """A note on MTP/draft layers, which are not part of the target model."""
    count = cfg.optional_int("num_nextn_predict_layers", "mtp_num_hidden_layers")
    if count:
        return [f"{count} MTP draft layer(s) left out: they are not part of the target model "
                f"(--engine sglang --speculative-draft-layers {count} adds SGLang's draft pool)"]
    return []
