"""Readers of per-layer patterns: which role (kind) each decoder layer has.

A family's mapper decides a role for every decoder layer — from a per-layer name list
(``layer_types``, GPT-Neo's ``attention_types``), an index list, a pattern string, a flag list or a
periodic rule — and ``layer_builders`` turns the roles into specs. Roles used across the families:

- ``attention`` (full, or sliding when windowed), ``sliding``, ``linear`` (a recurrent/linear/conv
  mixer), ``hybrid`` (attention *and* Mamba in one layer), ``mlp`` (no sequence mixer, no cache).

Index bases are stated by each reader's caller; every reader raises ``ConfigError`` naming the key
when a value makes no sense.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from hfkv.model.config import MAX_LAYERS, ConfigView
from hfkv.errors import ConfigError


# Per-layer names the families use, mapped to abstract roles (the mapper turns roles into kinds).
ATTENTION = "attention"


LINEAR = "linear"
MLP = "mlp"
HYBRID = "hybrid"
ATTENTION_OR_LINEAR = (ATTENTION, LINEAR)
SLIDING = "sliding"


def layer_types(cfg: ConfigView, n: int, key: str = "layer_types") -> list[str] | None:
    """``layer_types`` cut to the target layers (longer lists carry MTP entries), or None.

    Without ``layer_types``, GPT-Neo's spellings: ``attention_layers`` (one name per layer, as
    transformers saves it) or the compact ``attention_types`` (``[[["global", "local"], 6]]``: each
    [pattern, repeat] entry repeats its pattern ``repeat`` times); both are read, and a disagreement
    is a warning (``attention_layers`` wins, as GPTNeoConfig derives it from ``attention_types``).
    """
    types = cfg.str_list(key, length=n)
    if types is not None or key != "layer_types":
        return types
    types = cfg.str_list("attention_layers", length=n)
    compact = _attention_types(cfg, n)
    if types is not None and compact is not None and types != compact:
        cfg.warn(f"{cfg.path('attention_layers')} and {cfg.path('attention_types')} disagree: attention_layers is "
                 "used (GPTNeoConfig expands attention_types into it)")
    found = types if types is not None else compact
    return found if found is not None or cfg.written("attention_types") else class_layer_types(cfg, n)


def class_layer_types(cfg: ConfigView, n: int) -> list[str] | None:
    """The config class's per-layer types when the config writes none (BeamConfig derives five sliding
    layers to one full; GPTNeoConfig alternates global and local): what transformers and the engines
    build. A class list of the wrong shape counts as none."""
    found = cfg.class_entry("layer_types", "attention_layers")
    if found is None:
        return None
    key, raw = found
    if not isinstance(raw, list) or len(raw) < n or not all(isinstance(v, str) for v in raw):
        return None
    cfg.record_default(key)
    return list(raw[:n])


def _attention_types(cfg: ConfigView, n: int) -> list[str] | None:
    """GPT-Neo's ``attention_types`` expanded to one name per layer, or None when absent."""
    raw = cfg.value("attention_types")
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ConfigError(cfg.path("attention_types"), f"expected a list of [pattern, repeat], got {raw!r}"[:200])
    names: list[str] = []
    for i, entry in enumerate(raw):
        ok = isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list) and entry[0]
        ok = ok and all(isinstance(name, str) for name in entry[0])
        ok = ok and isinstance(entry[1], int) and not isinstance(entry[1], bool) and 0 < entry[1] <= MAX_LAYERS
        if not ok:
            raise ConfigError(cfg.path(f"attention_types[{i}]"), f"expected [[names...], repeat], got {entry!r}"[:200])
        names.extend(entry[0] * entry[1])
        if len(names) > MAX_LAYERS:
            raise ConfigError(cfg.path("attention_types"), "expands past any real model's layer count")
    return cfg.fit_length("attention_types", names, n)


SLIDING_NAMES = frozenset({"sliding_attention", "sliding", "swa", "local", "local_attention", "chunked_attention"})
FULL_NAMES = frozenset({"full_attention", "full", "global", "attention", "global_attention"})


def is_sliding_type(name: str, cfg: ConfigView, key: str = "layer_types") -> bool:
    """True for a sliding entry of ``layer_types``, False for a full one; error for anything else."""
    if name in SLIDING_NAMES:
        return True
    if name in FULL_NAMES:
        return False
    raise ConfigError(cfg.path(key), f"unknown layer type {name!r}")


ROLE_NAMES: Mapping[str, str] = {
    "full_attention": ATTENTION, "attention": ATTENTION, "full": ATTENTION, "global": ATTENTION,
    "indexed_attention": ATTENTION, "deepseek_sparse_attention": ATTENTION,
    "linear_attention": LINEAR, "linear": LINEAR, "mamba": LINEAR, "mamba2": LINEAR, "kda": LINEAR,
    "gdn": LINEAR, "lightning": LINEAR, "lightning_attention": LINEAR, "conv": LINEAR, "short_conv": LINEAR,
    "mlp": MLP, "moe": MLP,
    "hybrid": HYBRID,
}


# Nemotron-H's pattern string: one character per layer.
PATTERN_CHARS: Mapping[str, str] = {"M": LINEAR, "*": ATTENTION, "-": MLP, "E": MLP}


def named_roles(cfg: ConfigView, key: str, names: Sequence[str], table: Mapping[str, str]) -> list[str]:
    """Each per-layer name through ``table`` (name → role); an unknown name is a config error."""
    roles = []
    for i, name in enumerate(names):
        role = table.get(name.strip().lower())
        if role is None:
            raise ConfigError(cfg.path(f"{key}[{i}]"), f"unknown layer type {name!r} (expected one of {sorted(table)})")
        roles.append(role)
    return roles


def roles_from_names(names: Sequence[str], cfg: ConfigView, key: str, allowed: Sequence[str]) -> list[str]:
    """Map each per-layer name to its role (``ROLE_NAMES``); a name outside ``allowed`` roles is a config error."""
    return named_roles(cfg, key, names, {name: role for name, role in ROLE_NAMES.items() if role in allowed})


def roles_from_list(
    cfg: ConfigView, key: str, n: int | None, allowed: Sequence[str], *, defaults: bool = False
) -> list[str] | None:
    """Roles from a list of names (``layer_types``, ``layers_block_type``), cut to n layers; None if absent.

    ``n`` None means the list itself gives the layer count (Nemotron-H).
    """
    names = cfg.str_list(key, length=n, defaults=defaults)
    if names is None:
        return None
    if not names:
        raise ConfigError(cfg.path(key), "is empty")
    return roles_from_names(names, cfg, key, allowed)


def roles_from_pattern(cfg: ConfigView, key: str, chars: Mapping[str, str] = PATTERN_CHARS) -> list[str] | None:
    """Roles from a pattern string with one character per layer (``hybrid_override_pattern``)."""
    pattern = cfg.string(key)
    if pattern is None:
        return None
    if not pattern:
        raise ConfigError(cfg.path(key), "is empty")
    bad = sorted(set(pattern) - set(chars))
    if bad:
        raise ConfigError(cfg.path(key), f"unknown layer character(s) {''.join(bad)!r} (expected {''.join(chars)})")
    return [chars[c] for c in pattern]


def roles_from_indices(
    cfg: ConfigView, key: str, n: int, *, base: int, inside: str, outside: str
) -> list[str] | None:
    """Layer i gets ``inside`` when ``i + base`` is listed under ``key``, else ``outside``; None if absent.

    ``base`` is 0 for 0-based lists (Bamba ``attn_layer_indices``, LFM2 ``full_attn_idxs``, GLM-5.3
    ``kda_layers``) and 1 for 1-based ones (Kimi-Linear ``kda_layers``). Entries past the last target
    layer belong to MTP layers and are ignored; entries below ``base`` mean the list uses another base.
    """
    listed = cfg.int_list(key)
    if listed is None:
        return None
    low = [v for v in listed if v < base]
    if low:
        raise ConfigError(cfg.path(key), f"entry {low[0]} is below {base}: this list is {base}-based")
    chosen = {v - base for v in listed}
    return [inside if i in chosen else outside for i in range(n)]


def roles_from_rule(n: int, is_attention: Callable[[int], bool], *, other: str = LINEAR) -> list[str]:
    """Roles from a rule on the 0-based layer index: attention where it holds, ``other`` elsewhere."""
    return [ATTENTION if is_attention(i) else other for i in range(n)]


def last_of_every(period: int) -> Callable[[int], bool]:
    """The last layer of each group of ``period`` layers: (i + 1) % period == 0 (0-based i)."""
    return lambda i: (i + 1) % period == 0


def check_length(cfg: ConfigView, key: str, roles: Sequence[str], count_key: str = "num_hidden_layers") -> list[str]:
    """Warn when ``num_hidden_layers`` disagrees with a pattern that gives the layer count itself."""
    written = cfg.optional_int(count_key)
    if written is not None and written != len(roles):
        return [f"{count_key} = {written} but {key} has {len(roles)} entries: the pattern's length is used"]
    return []


def cut_note(cfg: ConfigView, key: str, n: int) -> list[str]:
    """A note when a per-layer list carries entries past the target layers (MTP layers)."""
    raw = cfg.value(key)
    if isinstance(raw, list) and len(raw) > n:
        extra = len(raw) - n
        entries = "entry" if extra == 1 else "entries"
        return [f"{key} lists {extra} {entries} past num_hidden_layers {n} (MTP layers): left out"]
    return []


def flag_list(cfg: ConfigView, key: str, n: int, default: bool) -> list[bool]:
    """A per-layer 0/1 (or true/false) list cut to n layers; a scalar applies to every layer.

    Values other than 0 count as set (MiniMax writes frequencies, where any nonzero entry means "on").
    """
    raw = cfg.value(key)
    if raw is None:
        return [default] * n
    if isinstance(raw, (bool, int)):
        if not isinstance(raw, bool) and raw < 0:
            raise ConfigError(cfg.path(key), f"expected 0/1 or a per-layer list, got {raw!r}")
        return [bool(raw)] * n
    if not isinstance(raw, list):
        raise ConfigError(cfg.path(key), f"expected a per-layer list, got {type(raw).__name__}")
    if len(raw) < n:
        raise ConfigError(cfg.path(key), f"has {len(raw)} entries but the model has {n} layers")
    flags = []
    for i, value in enumerate(raw[:n]):
        if isinstance(value, bool) or (isinstance(value, int) and value >= 0):
            flags.append(bool(value))
        else:
            raise ConfigError(cfg.path(f"{key}[{i}]"), f"expected 0/1 or true/false, got {value!r}"[:200])
    return flags


def required_named_roles(cfg: ConfigView, key: str, n: int, table: Mapping[str, str], purpose: str) -> list[str]:
    """Roles from the per-layer name list ``key`` through ``table``; a missing list is an error naming ``purpose``."""
    names = cfg.str_list(key, length=n)
    if names is None:
        raise ConfigError(cfg.path(key), f"missing (needed to {purpose})")
    return named_roles(cfg, key, names, table)


def layer_types_or_default(cfg: ConfigView, n: int, notes: list[str], absent_note: str) -> list[str] | None:
    """Attention/linear roles from ``layer_types``, else from the transformers class default (noted)."""
    if not cfg.present("layer_types"):
        notes.append(absent_note)
    return roles_from_list(cfg, "layer_types", n, ATTENTION_OR_LINEAR, defaults=True)
