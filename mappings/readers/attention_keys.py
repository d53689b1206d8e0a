"""Readers of the standard attention keys: layer and head counts, head dims, windows, and the
attention parts built from them.

Every alias list lives here once (vLLM's alias order for the KV-head count); a family module only
says which rule applies to which layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from hfkv.model.config import MAX_LAYERS, MAX_SIZE, ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import ChunkedLocal, FullAttention, SlidingWindow

Part = FullAttention | SlidingWindow | ChunkedLocal
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "num_transformer_layers")
HEAD_KEYS = ("num_attention_heads", "n_head", "n_heads", "num_heads", "num_query_heads")
HIDDEN_KEYS = ("hidden_size", "n_embd", "n_embed", "d_model", "dim")
HEAD_DIM_KEYS = ("head_dim", "kv_channels", "hidden_size_per_head")
# vLLM's alias order for the KV-head count (first present wins), then the spellings other families
# use (OLMo/Llama-1 n_kv_heads, num_multi_query_heads) and MPT/DBRX's nested key.
KV_HEAD_KEYS = (
    "n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
    "num_attention_groups", "n_kv_heads", "num_multi_query_heads", "attn_config.kv_n_heads",
)
WINDOW_KEYS = ("sliding_window", "sliding_window_size", "window_size")
MAX_POSITION_KEYS = (
    "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "max_seq_len",
    "seq_len", "model_max_length", "max_target_positions", "max_context_length",
)
# The keys that size an attention layer (heads, head sizes, window): in a model with no attention layer
# they size nothing (a Jamba whose attn_layer_period exceeds its layer count still writes its heads).
ATTENTION_SHAPE_KEYS = (
    *HEAD_KEYS, *KV_HEAD_KEYS, *HEAD_DIM_KEYS, *WINDOW_KEYS, "v_head_dim", "use_sliding_window", "multi_query",
    "multi_query_attention", "num_gqa_groups",
)
GQA_READS = (
    "|".join(LAYER_KEYS), "|".join(HEAD_KEYS), "|".join(KV_HEAD_KEYS),
    "multi_query", "new_decoder_architecture", "multi_query_attention", "attn_config.attn_type", "num_gqa_groups",
    "head_dim|kv_channels|hidden_size_per_head", "hidden_size|n_embd|d_model", "v_head_dim",
    "sliding_window|sliding_window_size|window_size", "use_sliding_window", "layer_types",
    "attention_layers|attention_types", "max_position_embeddings",
)


def aliased(cfg: ConfigView, keys: Sequence[str]) -> tuple[str, object] | None:
    """(key, raw value) of the first present of ``keys``, the alias order; every alias is read, and one
    whose value differs from the chosen one is a warning (the engines read the first, as here).

    Aliases written in the text sub-config come first: a root key of a wrapper (a vision or audio
    tower's ``num_kv_heads`` beside a ``text_config``) never stands for the decoder's.
    """
    present = [(key, cfg.value(key)) for key in keys if cfg.present(key)]
    if not present and cfg.text is not cfg.root:
        present = [(key, cfg.value(key, root=True)) for key in keys]
        present = [(key, raw) for key, raw in present if raw is not None]
    if not present:
        return None
    key, raw = present[0]
    for other, value in present[1:]:
        if value != raw:
            cfg.warn(f"{cfg.path(key)} = {raw} and its alias {cfg.path(other)} = {value} disagree: {key} is used "
                     "(the engines' alias order)")
    return key, raw


def aliased_int(cfg: ConfigView, keys: Sequence[str], *, minimum: int = 0, maximum: int = MAX_SIZE,
                defaults: bool = False) -> int | None:
    """The first present alias of ``keys`` as an int (see ``aliased``), else the transformers default
    when ``defaults``, else None."""
    found = aliased(cfg, keys)
    if found is None:
        return cfg.optional_int(*keys, minimum=minimum, maximum=maximum, defaults=True) if defaults else None
    return cfg.integer(found[0], minimum=minimum, maximum=maximum)


def _required(cfg: ConfigView, keys: Sequence[str], value: int | None) -> int:
    if value is None:
        raise ConfigError(cfg.path(keys[0]), "missing (needed to size the cache)")
    return value


def num_layers(cfg: ConfigView) -> int:
    return _required(cfg, LAYER_KEYS, aliased_int(cfg, LAYER_KEYS, minimum=1, maximum=MAX_LAYERS, defaults=True))


def num_heads(cfg: ConfigView) -> int:
    return _required(cfg, HEAD_KEYS, aliased_int(cfg, HEAD_KEYS, minimum=1, defaults=True))


def kv_heads(cfg: ConfigView, heads: int) -> int:
    """KV heads from the alias keys; Falcon-style ``multi_query`` means 1; default: ``heads`` (MHA).

    ChatGLM's ``multi_query_attention: false`` means MHA whatever ``multi_query_group_num`` says (vLLM's
    and SGLang's ``chatglm.py``: ``multi_query_group_num if multi_query_attention else num_attention_heads``).
    MPT's ``attn_config.attn_type`` is read: ``multiquery_attention`` without ``kv_n_heads`` is a warning
    (the reference model keeps one KV head; vLLM's ``mpt.py`` reads only ``kv_n_heads``, else MHA).
    """
    if class_flag(cfg, "multi_query") and not class_flag(cfg, "new_decoder_architecture"):
        return 1
    if cfg.present("multi_query_attention") and not cfg.boolean("multi_query_attention"):
        return heads
    attn_type = cfg.value("attn_config.attn_type")
    if attn_type == "multiquery_attention" and cfg.value("attn_config.kv_n_heads") is None:
        cfg.warn(f"estimate, not exact: {cfg.path('attn_config.attn_type')} is multiquery_attention without "
                 f"kv_n_heads: counted as {heads} KV heads (vLLM's mpt.py); the reference model keeps 1")
    found = aliased_int(cfg, KV_HEAD_KEYS, minimum=1)
    # Left out (save_pretrained diffs a nested config against its class: Gemma 3's 4 for 8 query heads;
    # a hand-written Mistral config omits its 8): the config class's count is what transformers and the
    # engines read. Without one, MHA (both engines' rule: legacy Llama, OPT, BLOOM).
    origin = ""
    if found is None:
        found = cfg.class_int(*KV_HEAD_KEYS, unless=heads)
        origin = " (the config class's default)"
    if found is None:
        return heads
    if found > heads:
        raise ConfigError(cfg.path("num_key_value_heads"), f"{found} KV heads{origin} exceed {heads} query heads")
    return found


def class_flag(cfg: ConfigView, key: str) -> bool:
    """A true/false key as written, else the config class's value (FalconConfig's ``multi_query`` is true
    by default: a Falcon config that leaves it out has one KV head in transformers and the engines)."""
    if cfg.written(key):
        return cfg.boolean(key)
    found = cfg.class_entry(key)
    if found is None or not isinstance(found[1], bool):
        return cfg.boolean(key)  # a root key of a wrapper, or nothing: as before
    if found[1]:
        cfg.record_default(key)
    return found[1]


def per_layer_heads(cfg: ConfigView, n: int) -> tuple[list[int], list[int]] | None:
    """(query heads, KV heads) per layer when the config writes either as a per-layer list (OpenELM's
    ``num_query_heads`` / ``num_kv_heads``), else None. A list is cut to the n layers (a note) and a
    shorter one is an error; a scalar beside a list applies to every layer."""
    q, kv = aliased(cfg, HEAD_KEYS), aliased(cfg, KV_HEAD_KEYS)
    if not any(found is not None and isinstance(found[1], list) for found in (q, kv)):
        return None
    heads = _count_list(cfg, q, n) if q is not None else None
    if heads is None:
        raise ConfigError(cfg.path(HEAD_KEYS[0]), "missing (needed to size the cache)")
    groups = cfg.optional_int("num_gqa_groups", minimum=1)  # OpenELM: num_kv_heads[i] = num_query_heads[i] // it
    if kv is None:
        kvs = [h // groups if groups and h >= groups else h for h in heads]
    else:
        kvs = _count_list(cfg, kv, n)
        if groups and any(k != h // groups for h, k in zip(heads, kvs)):
            cfg.warn(f"{cfg.path(kv[0])} is not {cfg.path(q[0])} ÷ num_gqa_groups ({groups}) on every layer: "
                     f"{kv[0]} is used (vLLM's openelm.py reads it)")
    for i, (h, k) in enumerate(zip(heads, kvs)):
        if k > h:
            raise ConfigError(cfg.path(f"{kv[0]}[{i}]"), f"{k} KV heads exceed {h} query heads")
    return heads, kvs


def _count_list(cfg: ConfigView, found: tuple[str, object], n: int) -> list[int]:
    key, raw = found
    if not isinstance(raw, list):
        return [cfg.integer(key, minimum=1)] * n
    values = cfg.int_list(key, length=n)
    bad = [i for i, v in enumerate(values) if v < 1]
    if bad:
        raise ConfigError(cfg.path(f"{key}[{bad[0]}]"), f"must be at least 1, got {values[bad[0]]}")
    return values


def _first_positive(cfg: ConfigView, keys: Sequence[str]) -> int | None:
    """The first of ``keys`` written with a value > 0 in the text sub-config; the root's only when the
    text sub-config has no hidden size of its own to divide (a root head_dim may be a tower's)."""
    scopes = [[k for k in keys if cfg.present(k)]]
    if cfg.text is not cfg.root and not any(cfg.present(k) for k in HIDDEN_KEYS):
        scopes.append([k for k in keys if cfg.value(k, root=True) is not None])
    for scope in scopes:
        for key in scope:
            value = cfg.optional_int(key)
            if value:
                return value
            if value == 0:
                _zero_size(cfg, key)
    return None


def _zero_size(cfg: ConfigView, key: str) -> None:
    """A head size written as 0 is no head size: the fallback is used, but never silently (transformers'
    ``head_dim or hidden_size // num_attention_heads`` takes it; an engine that reads the key as written
    would size 0)."""
    cfg.warn(f"estimate, not exact: {cfg.path(key)} = 0 is not a head size: the fallback is used "
             "(transformers' `head_dim or hidden_size // num_attention_heads`), which may not be the model's")


def head_dim(cfg: ConfigView, heads: int, *, defaults: bool = False) -> int:
    """``head_dim`` when present and > 0, else ``kv_channels`` / ``hidden_size_per_head``, else the config
    class's head_dim when the config leaves it out (Gemma's 256), else hidden/heads. ``defaults`` is
    kept for callers that asked for the class's value before every caller got it."""
    value = _first_positive(cfg, HEAD_DIM_KEYS)
    if value:
        return value
    hidden = aliased_int(cfg, HIDDEN_KEYS, minimum=1)
    if hidden is None:
        hidden = cfg.integer(*HIDDEN_KEYS, minimum=1, defaults=True)
    # Left out: the config class's head_dim (Gemma's 256, Qwen3's 128), what transformers and the
    # engines read; listed only when it is not hidden/heads anyway.
    value = cfg.class_int(*HEAD_DIM_KEYS, unless=hidden // heads if hidden % heads == 0 else None)
    if value:
        return value
    if hidden % heads:
        raise ConfigError(cfg.path("hidden_size"), f"{hidden} is not divisible by {heads} heads and no head_dim is given")
    return hidden // heads


def attention_shape(cfg: ConfigView, *, head_dim_defaults: bool = False) -> tuple[int, int, int]:
    """(query heads, KV heads, head_dim) of the config's standard attention."""
    heads = num_heads(cfg)
    return heads, kv_heads(cfg, heads), head_dim(cfg, heads, defaults=head_dim_defaults)


def v_head_dim(cfg: ConfigView, key_dim: int) -> int:
    """Value head dim for standard attention (``v_head_dim`` when present and > 0; 0 is a warning)."""
    value = cfg.optional_int("v_head_dim")
    if value == 0:
        _zero_size(cfg, "v_head_dim")
    return value or key_dim


def max_positions(cfg: ConfigView) -> int | None:
    """The longest context the config writes (the report's figure; each engine derives its own), or None."""
    return cfg.optional_int(*MAX_POSITION_KEYS, minimum=1)


def position_limit(cfg: ConfigView) -> int | None:
    """The longest context the model takes: as written, else the config class's default (a window at
    least this long bounds nothing, in transformers as here), else None."""
    found = max_positions(cfg)
    return found if found is not None else cfg.class_int(*MAX_POSITION_KEYS)


def hidden_size(cfg: ConfigView) -> int:
    return cfg.integer(*HIDDEN_KEYS, minimum=1, defaults=True)


def positive_number(cfg: ConfigView, key: str, default: float) -> float:
    """A positive finite number (int or float) under ``key``; ``default`` when absent."""
    raw = cfg.value(key)
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw) or raw <= 0:
        raise ConfigError(cfg.path(key), f"expected a positive number, got {raw!r}"[:200])
    return raw


def window_of(cfg: ConfigView, *keys: str) -> int:
    """A required positive window under the first present of ``keys`` (every alias read: a copy that
    agrees, such as Gemma 2's ``sliding_window_size``, is no unread key; one that disagrees is a warning)."""
    aliased(cfg, keys)
    return cfg.integer(*keys, minimum=1, defaults=True)


def sliding_window(cfg: ConfigView, *, default: int | None = None, keys: Sequence[str] = WINDOW_KEYS) -> int | None:
    """The window W, or None for no window.

    ``use_sliding_window: false`` means none even when a window is written (Qwen2/3), and so does a
    window of 0; so does a ``use_sliding_window`` left out where the config class defaults it to False
    (Qwen2-Audio's text config: transformers and the engines then build no window). ``default`` applies when no window key is present (the transformers default of
    families whose configs may omit it). Beside a text sub-config only the sub-config's keys count:
    a root ``window_size`` belongs to a projector or tower (Granite Speech's is 15), not the decoder.
    """
    if cfg.present("use_sliding_window") and not cfg.boolean("use_sliding_window"):
        return None
    declared = keys
    if cfg.text is not cfg.root:
        keys = [key for key in keys if cfg.present(key)]
    if keys:
        aliased(cfg, keys)  # every alias read: an agreeing copy (sliding_window_size) is no unread key
    window = cfg.optional_int(*keys) if keys else None
    if window is None:
        if any(cfg.written(key) for key in declared):
            # Written as null: the author's "no window" (transformers keeps None, the engines build none).
            # The family's default stands only for a key left out (EXAONE 4's null is not its 4,096).
            return None
        window = class_window(cfg, declared)
    if window is None:
        return default
    if window == 0:
        key = next(key for key in keys if cfg.present(key))
        cfg.note(f"{cfg.path(key)} = 0 means no window: every layer keeps every token (full attention), "
                 "as vLLM reads it (config/model.py: 0 disables the sliding window)")
        return None
    if not cfg.present("use_sliding_window") and cfg.value("use_sliding_window", defaults=True) is False:
        return None  # omitted, and the config class defaults it off (Qwen2Config): the engines build no window
    return window


def class_window(cfg: ConfigView, keys: Sequence[str]) -> int | None:
    """The config class's window when the config writes none of ``keys`` (MistralConfig: 4,096), unless
    the class turns it off (``use_sliding_window`` false, Qwen2Config); listed when used."""
    if any(cfg.written(key) for key in keys):
        return None
    found = cfg.class_entry(*keys)
    if found is None or isinstance(found[1], bool) or not isinstance(found[1], int) or found[1] < 1:
        return None
    if not cfg.present("use_sliding_window") and cfg.value("use_sliding_window", defaults=True) is False:
        return None
    cfg.record_default(found[0])
    return found[1]


def covers_every_position(cfg: ConfigView, window: int | None) -> bool:
    """True when ``window`` is at least the longest context the model takes: it bounds nothing."""
    limit = position_limit(cfg)
    return window is not None and limit is not None and window >= limit


def effective_window(cfg: ConfigView, window: int | None, notes: list[str]) -> int | None:
    """Drop a window that covers every position the model supports (it bounds nothing)."""
    limit = position_limit(cfg)
    if covers_every_position(cfg, window):
        notes.append(
            f"sliding window {window} ≥ max_position_embeddings {limit}: accounted as full attention"
        )
        return None
    return window


@dataclass(frozen=True)
class Window:
    """A sliding window as a config declares it, sorted for the part builders.

    ``bound``: W when it bounds the context (a ``SlidingWindow``); ``declared``: W when it covers every
    position (full attention for the figures, kept as ``FullAttention.declared_window`` because vLLM
    still builds a sliding-window cache for it); both None without a window.
    """

    bound: int | None = None
    declared: int | None = None

    @property
    def kind(self) -> str:
        """The layer kind label a sliding layer gets: 'sliding' only when W bounds something."""
        return "sliding" if self.bound is not None else "full"

    def args(self) -> dict:
        """Keywords for ``attention_part`` / ``heads_part`` that make a sliding layer's part."""
        if self.bound is not None:
            return {"window": self.bound}
        return {"declared_window": self.declared} if self.declared is not None else {}


def layer_window(cfg: ConfigView, window: int | None, notes: list[str] | None = None) -> Window:
    """``window`` (already read; None or 0: none) sorted into a ``Window``; ``effective_window``'s note
    goes to ``notes``, or to the config's own notes (``cfg.note``, once) without a list."""
    window = window or None
    declared = window if covers_every_position(cfg, window) else None
    found: list[str] = []
    bound = effective_window(cfg, window, found)
    for note in found:
        notes.append(note) if notes is not None else cfg.note(note)
    return Window(bound=bound, declared=declared)


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
    declared_window: int | None = None,
) -> FullAttention | SlidingWindow | ChunkedLocal:
    """A standard attention part with the config's geometry unless overridden (``declared_window``:
    see ``FullAttention``; only for a part with neither window nor chunk)."""
    heads = heads or num_heads(cfg)
    kv = kv or kv_heads(cfg, heads)
    key_dim = key_dim or head_dim(cfg, heads, defaults=head_dim_defaults)
    value_dim = value_dim if value_dim is not None else v_head_dim(cfg, key_dim)
    return heads_part(kv, key_dim, value_dim, window=window, chunk=chunk, source_layer=source_layer,
                      declared_window=declared_window)


def heads_part(
    kv: int, key_dim: int, value_dim: int, *, window: int | None = None, chunk: int | None = None,
    source_layer: int | None = None, declared_window: int | None = None,
) -> Part:
    """The part for explicit heads and dims: chunked, sliding (``window``) or full (``declared_window``:
    see ``FullAttention``)."""
    shape = dict(kv_heads=kv, head_dim=key_dim, v_head_dim=None if value_dim == key_dim else value_dim,
                 source_layer=source_layer)
    if chunk is not None:
        return ChunkedLocal(chunk=chunk, **shape)
    if window is not None:
        return SlidingWindow(window=window, **shape)
    return FullAttention(declared_window=declared_window, **shape)


def per_layer_override(cfg: ConfigView, i: int) -> dict:
    """Layer i's entry of ``per_layer_config`` (transformers 5.24's saved form of per-type geometry), or {}.

    transformers folds keys such as Gemma 4's ``global_head_dim`` or Dots3's ``swa_kv_lora_rank`` into
    ``{"<layer index>": {"head_dim": ..., "num_key_value_heads": ...}}`` when it saves a config.
    """
    table = cfg.value("per_layer_config")
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise ConfigError(cfg.path("per_layer_config"), f"expected an object, got {type(table).__name__}")
    entry = table.get(str(i), table.get(i))
    if entry is None:
        return {}
    if not isinstance(entry, dict):
        raise ConfigError(cfg.path(f"per_layer_config.{i}"), f"expected an object, got {type(entry).__name__}")
    for key, value in entry.items():
        if key in OVERRIDE_SIZES and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ConfigError(
                cfg.path(f"per_layer_config.{i}.{key}"), f"expected a non-negative integer, got {value!r}"
            )
    return entry


OVERRIDE_SIZES = frozenset({"head_dim", "num_key_value_heads", "kv_lora_rank", "qk_rope_head_dim"})


def windowed_attention(cfg: ConfigView, key_dim: int | None = None) -> tuple:
    """The attention part of a hybrid, windowed when ``sliding_window`` is set (vLLM applies it)."""
    return (attention_part(cfg, key_dim=key_dim, **layer_window(cfg, sliding_window(cfg)).args()),)
