"""Layer-pattern readers and layer builders shared by the linear-attention, SSM and short-conv mappers.

A hybrid family's mapper does two things: it decides a *kind* for every decoder layer (from a
per-layer name list, an index list, a pattern string or a periodic rule) and it builds the cache
parts of each kind once. The readers here do the first half for every spelling these families use;
``build_layers`` does the second. Kinds are plain labels; the ones used across the three modules:

- ``"full"``: standard attention (MHA/GQA), ``"sliding"`` when windowed, ``"mla"`` / ``"dsa"``;
- ``"gdn"``, ``"kda"``, ``"lightning"``: linear attention; ``"mamba"``: a Mamba-1/2 mixer;
- ``"hybrid"``: attention *and* Mamba in one layer (Falcon-H1, Zamba2's hybrid layers);
- ``"conv"``: LFM2 short convolution; ``"mlp"``: a layer with no sequence mixer, hence no cache.

Every reader raises ``ConfigError`` naming the key when a value makes no sense.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Mapping, Sequence

from hfkv.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.specs import LayerSpec

from .common import HIDDEN_KEYS, mtp_note

# Per-layer names the families use, mapped to abstract roles (the mapper turns roles into kinds).
ATTENTION = "attention"
LINEAR = "linear"
MLP = "mlp"
HYBRID = "hybrid"

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


def hidden_size(cfg: ConfigView) -> int:
    return cfg.integer(*HIDDEN_KEYS, minimum=1, defaults=True)


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


def state_dtype_note(cfg: ConfigView) -> list[str]:
    """A note when the config names a dtype for the recurrent state (the report's state dtype is an option)."""
    for key in ("mamba_ssm_dtype", "mamba_ssm_cache_dtype"):
        value = cfg.value(key)
        if isinstance(value, str):
            return [f"config sets {key} = {value}: vLLM uses it for the recurrent state; "
                    "hfkv uses --state-dtype (SGLang's default is fp32)"]
    return []


def check_length(cfg: ConfigView, key: str, roles: Sequence[str], count_key: str = "num_hidden_layers") -> list[str]:
    """Warn when ``num_hidden_layers`` disagrees with a pattern that gives the layer count itself."""
    written = cfg.optional_int(count_key)
    if written is not None and written != len(roles):
        return [f"{count_key} = {written} but {key} has {len(roles)} entries: the pattern's length is used"]
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
