"""Zyphra: Zamba (v1: Mamba-1 with a shared attention block), Zamba2 (Mamba-2 with shared-block attention)
and ZAYA1 (attention + CCA conv state).

- Zamba (transformers' ``ZambaConfig`` / ``modeling_zamba.py``): every layer is a Mamba-1 layer
  (``mamba_expand``·hidden channels, ``mamba_d_state``, ``mamba_d_conv``; ``n_mamba_heads`` splits the
  channels, not the state); a ``hybrid`` layer also applies the one shared attention block, whose weights
  are shared but whose K and V are each application's own (the cache is indexed by the hybrid layer).
  Pattern: ``layers_block_type`` (alias ``layer_types``; legacy ``mamba`` = ``linear_attention``), else the
  class's: layers 0, 1 Mamba, layer 2 hybrid, then layer 3 + j hybrid iff j % ``attn_layer_period`` ==
  ``attn_layer_offset``. Attention: ``num_key_value_heads`` (class default 16) × ``attention_head_dim``
  (default 2·hidden/heads).
- Zamba2: ``layers_block_type`` (mamba/hybrid); a hybrid layer is Mamba-2 plus its own MHA KV with
  head_dim = ``attention_head_dim`` = 2·hidden/heads.
- ZAYA1: every attention layer also keeps a CCA conv state of (H + K)·hd channels ×
  (``cca_time0`` + ``cca_time1`` − 2) rows plus one (hidden, 1) tensor (SGLang's shapes). Pattern:
  ``zaya_layers`` ('a' = attention), else ``layer_types``, else attention iff i is even (SGLang).
"""

from __future__ import annotations

from typing import Callable

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import FullAttention, Layout, MambaState, ShortConvState

from hfkv.mappings.readers.attention_keys import (
    Window,
    attention_part,
    head_dim,
    hidden_size,
    kv_heads,
    layer_window,
    num_heads,
    num_layers,
    sliding_window,
)
from hfkv.mappings.dense import class_kv_heads
from hfkv.mappings.readers.layer_builders import PartsFactory, hybrid_layout, ssm_layout, unused_attention_keys
from hfkv.mappings.readers.layer_patterns import ATTENTION, HYBRID, LINEAR, MLP, SLIDING, named_roles, roles_from_list
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import ZAMBA2, mamba1_state, mamba2_state


def shared_block_head_dim(cfg: ConfigView, heads: int) -> int:
    """``attention_head_dim``, else 2·hidden/heads (the shared block attends over [hidden, embeddings])."""
    dim = cfg.optional_int("attention_head_dim", minimum=1)
    if dim is None:
        width = 2 * hidden_size(cfg)
        if width % heads:
            raise ConfigError(cfg.path("num_attention_heads"), f"{heads} heads do not divide 2·hidden_size = {width}")
        dim = width // heads
    return dim


def zamba2_attention(cfg: ConfigView) -> tuple:
    """Zamba2's shared-block attention: MHA (K = heads) with head_dim = 2·hidden/heads."""
    heads = num_heads(cfg)
    dim = shared_block_head_dim(cfg, heads)
    cfg.mark("num_key_value_heads", "num_mem_blocks", "attention_hidden_size")
    return (FullAttention(kv_heads=heads, head_dim=dim),)


_ZAMBA_TYPES = {"mamba": LINEAR, "linear_attention": LINEAR, "hybrid": HYBRID}


def zamba_roles(cfg: ConfigView, n: int, notes: list[str]) -> list[str]:
    """``layers_block_type`` (or its alias ``layer_types``), else ZambaConfig's default pattern."""
    for key in ("layers_block_type", "layer_types"):
        names = cfg.str_list(key, length=n)
        if names is not None:
            return named_roles(cfg, key, names, _ZAMBA_TYPES)
    period = cfg.integer("attn_layer_period", minimum=1, defaults=True)
    offset = cfg.integer("attn_layer_offset", minimum=0, defaults=True)
    notes.append(f"no layers_block_type: ZambaConfig's pattern applies (layers 0, 1 Mamba, 2 hybrid, then layer "
                 f"3 + j hybrid iff j % {period} == {offset})")
    roles = [LINEAR, LINEAR, HYBRID] + [HYBRID if j % period == offset else LINEAR for j in range(max(n - 3, 0))]
    return roles[:n]


@register(
    family="ssm",
    model_types=("zamba",),
    architectures=("ZambaForCausalLM",),
    reads=(
        "layers_block_type|layer_types", "num_hidden_layers", "attn_layer_period", "attn_layer_offset",
        "num_attention_heads", "num_key_value_heads", "attention_head_dim", "hidden_size", "n_mamba_heads",
        "mamba_d_state", "mamba_d_conv", "mamba_expand",
    ),
    ignores={"attention_hidden_size": "the shared block's input width (2·hidden): K and V sizes come from the heads",
             "mamba_dt_rank": "the Δ projection's rank: no state"},
    fixtures={"zamba": "Zyphra__Zamba-7B-v1-transformers-defaults"},
)
def zamba(cfg: ConfigView) -> Layout:
    """Every layer keeps a Mamba-1 state; ``hybrid`` layers also keep their own K and V of the shared block."""
    n = num_layers(cfg)
    notes: list[str] = []
    roles = zamba_roles(cfg, n, notes)
    inner = cfg.integer("mamba_expand", minimum=1, defaults=True) * hidden_size(cfg)
    mamba_heads = cfg.integer("n_mamba_heads", minimum=1, defaults=True)
    if inner % mamba_heads:
        raise ConfigError(cfg.path("n_mamba_heads"), f"{mamba_heads} Mamba heads do not divide the {inner} channels")
    state = mamba1_state(cfg, inner=inner, state_keys=("mamba_d_state",), conv_keys=("mamba_d_conv",))
    attention = None
    if HYBRID in roles:
        class_kv_heads(cfg)  # ZambaConfig's 16 KV heads when the config leaves them out
        heads = num_heads(cfg)
        attention = (attention_part(cfg, heads=heads, key_dim=shared_block_head_dim(cfg, heads)),)
        notes.append(f"{roles.count(HYBRID)} applications of the shared attention block, each with its own K and V "
                     "(the weights are shared, the cache is not)")
    else:
        notes += unused_attention_keys(cfg)
    return ssm_layout(cfg, roles, state, attention, notes)


# Zyphra's own Zamba2 format, from before transformers had the model (its config class wrote "m"/"g" layer
# names and mamba_ssm-style sizes; Zyphra's fork for transformers 4.43.0.dev0 kept the sizes with
# "mamba"/"hybrid"): the names, and the transformers names that mark the converted format.
_ZYPHRA_TYPES = {"m": LINEAR, "g": HYBRID, "mamba": LINEAR, "hybrid": HYBRID}
_ZYPHRA_SIZES = ("state_size", "conv_dimension", "expansion_factor")
_TRANSFORMERS_SIZES = ("mamba_d_state", "mamba_d_conv", "mamba_expand", "n_mamba_heads")
# Zyphra's config class's defaults (its __init__), and its loader's for mamba_ngroups (absent from the class).
_ZYPHRA_DEFAULTS = {"state_size": 64, "conv_dimension": 4, "expansion_factor": 2, "mamba_headdim": 64,
                    "mamba_ngroups": 1}


def zyphra_format(cfg: ConfigView) -> bool:
    """True for Zyphra's pre-transformers Zamba2 config: "m"/"g" layer names, or its size keys
    (``state_size``, ``conv_dimension``, ``expansion_factor``) without any transformers one."""
    names = cfg.value("layers_block_type")
    if isinstance(names, list) and any(name in ("m", "g") for name in names):
        return True
    return any(cfg.present(k) for k in _ZYPHRA_SIZES) and not any(cfg.present(k) for k in _TRANSFORMERS_SIZES)


def _zyphra_size(cfg: ConfigView, key: str, defaulted: list[str]) -> int:
    value = cfg.optional_int(key, minimum=1)
    if value is None:
        defaulted.append(f"{key} {_ZYPHRA_DEFAULTS[key]}")
        return _ZYPHRA_DEFAULTS[key]
    return value


def zyphra_zamba2(cfg: ConfigView) -> Layout:
    """Zyphra's format, sized as the transformers Zamba2 it was converted to (Zyphra's reference code,
    github.com/Zyphra/Zamba2: every layer is a Mamba-2 layer of expansion_factor·hidden channels in
    heads of mamba_headdim, and each "g" layer first applies a shared block whose attention keeps its
    own K and V, num_query_groups heads of 2·kv_channels values, kv_channels = hidden/heads)."""
    n = num_layers(cfg)
    names = cfg.str_list("layers_block_type", length=n)
    if names is None:
        raise ConfigError(cfg.path("layers_block_type"), "missing (needed to find the shared-block layers)")
    roles = named_roles(cfg, "layers_block_type", names, _ZYPHRA_TYPES)
    defaulted: list[str] = []
    hidden = hidden_size(cfg)
    width = _zyphra_size(cfg, "expansion_factor", defaulted) * hidden
    headdim = _zyphra_size(cfg, "mamba_headdim", defaulted)
    if width % headdim:
        raise ConfigError(cfg.path("mamba_headdim"), f"{headdim} does not divide the Mamba width {width}")
    state = MambaState(version=2, num_heads=width // headdim, head_dim=headdim,
                       state_size=_zyphra_size(cfg, "state_size", defaulted),
                       n_groups=_zyphra_size(cfg, "mamba_ngroups", defaulted),
                       conv_kernel=_zyphra_size(cfg, "conv_dimension", defaulted))
    attention = None
    if HYBRID in roles:
        heads = num_heads(cfg)
        groups = cfg.optional_int("num_query_groups", "num_key_value_heads", minimum=1) or heads
        if hidden % heads and not cfg.present("kv_channels"):
            raise ConfigError(cfg.path("num_attention_heads"), f"{heads} heads do not divide hidden_size {hidden}")
        channels = cfg.optional_int("kv_channels", minimum=1) or hidden // heads
        attention = (FullAttention(kv_heads=groups, head_dim=2 * channels),)
    cfg.mark("num_mem_blocks")
    notes = [f"Zyphra's pre-transformers Zamba2 format (layers_block_type {sorted(set(names))}, state_size, "
             "conv_dimension, expansion_factor): sized as the transformers Zamba2 it converts to ('g' or 'hybrid': "
             "a Mamba-2 layer plus its own K and V of a shared block); vLLM and SGLang load only the transformers "
             "format"]
    if defaulted:
        notes.append("left out, Zyphra's config class's values used: " + ", ".join(defaulted))
    if attention is None:
        notes += unused_attention_keys(cfg)
    return ssm_layout(cfg, roles, state, attention, notes)


@register(
    family="ssm",
    model_types=("zamba2",),
    architectures=("Zamba2ForCausalLM",),
    reads=(
        "layers_block_type", "num_hidden_layers", "num_attention_heads", "attention_head_dim", "hidden_size",
        "n_mamba_heads", "mamba_headdim", "mamba_ngroups", "mamba_d_state", "mamba_d_conv", "mamba_expand",
        # Zyphra's own format (zyphra_zamba2)
        "state_size", "conv_dimension", "expansion_factor", "kv_channels", "num_query_groups", "num_key_value_heads",
    ),
    ignores={
        "lora_rank": "the shared blocks' LoRA rank (Zyphra's format): weights, no cache",
        "use_shared_block_lora": "LoRA on the shared MLP (Zyphra's format): weights, no cache",
        "use_shared_attention_lora": "LoRA on the shared attention's projections (Zyphra's format): K and V keep "
                                     "their shape",
        "ft_lora": "a fine-tuning flag (Zyphra's format): no cache",
    },
    fixtures={"zamba2": "Zyphra__Zamba2-2.7B-transformers-defaults"},
)
def zamba2(cfg: ConfigView) -> Layout:
    """Mamba-2 layers; ``hybrid`` layers add their own MHA KV (the shared block's weights, not its cache).
    Zyphra's pre-transformers format goes to ``zyphra_zamba2``."""
    if zyphra_format(cfg):
        return zyphra_zamba2(cfg)
    n = num_layers(cfg)
    notes = []
    if not cfg.present("layers_block_type"):
        notes.append("no layers_block_type: the transformers default pattern applies")
    roles = roles_from_list(cfg, "layers_block_type", n, (LINEAR, HYBRID), defaults=True)
    if roles is None:
        raise ConfigError(cfg.path("layers_block_type"), "missing (needed to find the hybrid layers)")
    attention = zamba2_attention(cfg) if HYBRID in roles else None
    if attention is None:
        notes += unused_attention_keys(cfg)
    return ssm_layout(cfg, roles, mamba2_state(cfg, ZAMBA2), attention, notes)


_ZAYA_TYPES = {"hybrid": ATTENTION, "hybrid_sliding": SLIDING}


def zaya_roles(cfg: ConfigView, n: int, warnings: list[str]) -> list[str]:
    """``zaya_layers`` ('a' = attention), else ``layer_types``, else attention iff i is even (SGLang)."""
    raw = cfg.value("zaya_layers")
    if raw is not None:
        if not isinstance(raw, (list, str)):
            raise ConfigError(cfg.path("zaya_layers"), f"expected a list, got {type(raw).__name__}")
        if len(raw) < n:
            raise ConfigError(cfg.path("zaya_layers"), f"has {len(raw)} entries but the model has {n} layers")
        return [ATTENTION if entry == "a" else MLP for entry in list(raw)[:n]]
    names = cfg.str_list("layer_types", length=n)
    if names is not None:
        return named_roles(cfg, "layer_types", names, _ZAYA_TYPES)
    warnings.append("no zaya_layers or layer_types: SGLang's default applies (attention iff i is even)")
    return [ATTENTION if i % 2 == 0 else MLP for i in range(n)]


def cca_states(cfg: ConfigView) -> tuple[ShortConvState, ShortConvState]:
    """CCA conv: (H + K)·hd channels × (cca_time0 + cca_time1 − 2) rows; plus a (hidden, 1) tensor."""
    heads = num_heads(cfg)
    channels = (heads + kv_heads(cfg, heads)) * head_dim(cfg, heads, defaults=True)
    rows = cfg.integer("cca_time0", minimum=1, defaults=True) + cfg.integer("cca_time1", minimum=1, defaults=True) - 2
    return ShortConvState(dim=channels, conv_kernel=rows + 1), ShortConvState(dim=hidden_size(cfg), conv_kernel=2)


@register(
    family="ssm",
    model_types=("zaya",),
    architectures=("ZayaForCausalLM",),
    reads=(
        "zaya_layers", "layer_types", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "head_dim", "hidden_size", "sliding_window", "cca_time0", "cca_time1",
    ),
    fixtures={"zaya": "Zyphra__ZAYA1-8B-transformers-defaults"},
)
def zaya(cfg: ConfigView) -> Layout:
    """Attention layers with their KV plus the CCA conv state; other layers keep nothing."""
    n = num_layers(cfg)
    warnings: list[str] = []
    roles = zaya_roles(cfg, n, warnings)
    warnings.append(
        "CCA state per attention layer: (H + K)·hd × (cca_time0 + cca_time1 − 2) conv values plus one "
        "(hidden_size, 1) tensor (SGLang's shape; transformers keeps K·hd/2 there), both at the conv dtype"
    )
    notes: list[str] = []

    def with_cca(window: Window) -> Callable[[], tuple]:
        return lambda: (attention_part(cfg, head_dim_defaults=True, **window.args()),) + cca_states(cfg)

    parts: dict[str, tuple[str, PartsFactory]] = {ATTENTION: ("full+cca", with_cca(Window())), MLP: ("mlp", lambda: ())}
    if SLIDING in roles:
        window = layer_window(cfg, sliding_window(cfg), notes)
        if not window.args():
            raise ConfigError(cfg.path("sliding_window"), "missing, but layer_types has hybrid_sliding layers")
        parts[SLIDING] = (f"{window.kind}+cca", with_cca(window))
    if MLP in roles:
        notes.append("layers that are not 'a' in zaya_layers keep no cache")
    return hybrid_layout(cfg, roles, parts, notes, warnings)
