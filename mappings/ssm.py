"""Mamba-1 / Mamba-2 models: pure SSMs (Mamba, Falcon-Mamba, Mamba-2) and hybrids with attention
(Nemotron-H, Falcon-H1, Granite-4.0-H, Jamba, Bamba, Zamba2).

A Mamba layer keeps no per-token entries, only a ``MambaState``: heads·head_dim·d_state values of
SSM state (recurrent dtype) plus the causal conv's last w − 1 inputs over heads·head_dim + 2·groups·d_state
channels (conv dtype). Mamba-1 is the case heads = intermediate size, head_dim = 1, groups = 0.
Tensor parallelism shards the heads and pads the groups up to the TP size.

Layer patterns (0-based layer index i):

- Nemotron-H: ``layers_block_type`` or ``hybrid_override_pattern`` (M = Mamba, * = attention,
  - = MLP, E = MoE); the pattern's length is the layer count. **MLP and MoE layers are kept** as
  ``LayerSpec(kind="mlp")`` with no parts, so layer indices match the pattern; they hold no cache.
- Falcon-H1: every layer has attention **and** Mamba-2: one ``LayerSpec(kind="hybrid")`` with both parts.
- Granite-4.0-H: ``layer_types`` (mamba/attention); default attention iff (i+1) % 6 == 0.
- Jamba: attention iff i % ``attn_layer_period`` == ``attn_layer_offset`` (Mamba-1 elsewhere).
- Bamba: attention at the 0-based ``attn_layer_indices``.
- Zamba2: ``layers_block_type`` (mamba/hybrid); a hybrid layer is Mamba-2 plus its own MHA KV with
  head_dim = ``attention_head_dim`` = 2·hidden/heads.

MTP layers are left out (noted).
"""

from __future__ import annotations

from dataclasses import dataclass

from hfkv.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.specs import FullAttention, Layout, MambaState

from ._state_keys import (
    ATTENTION,
    HYBRID,
    LINEAR,
    MLP,
    build_layers,
    check_length,
    count_note,
    hidden_size,
    mtp_notes,
    roles_from_indices,
    roles_from_list,
    roles_from_pattern,
    roles_from_rule,
    state_dtype_note,
)
from .common import attention_part, effective_window, head_dim, num_heads, num_layers, sliding_window
from .registry import register


# -- state readers ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mamba2Keys:
    """Where one family writes its Mamba-2 shape (first present alias wins)."""

    heads: tuple[str, ...]
    head_dim: tuple[str, ...]
    groups: tuple[str, ...]
    state: tuple[str, ...]
    conv: tuple[str, ...]
    inner: tuple[str, ...] = ()  # explicit SSM width (Falcon-H1 ``mamba_d_ssm``); else expand·hidden
    expand: tuple[str, ...] = ("mamba_expand", "expand")


NEMOTRON_H = Mamba2Keys(
    heads=("mamba_num_heads",), head_dim=("mamba_head_dim",), groups=("n_groups", "mamba_n_groups"),
    state=("ssm_state_size",), conv=("conv_kernel", "mamba_d_conv"),
)
GRANITE = Mamba2Keys(  # Granite-4.0-H and Bamba
    heads=("mamba_n_heads",), head_dim=("mamba_d_head",), groups=("mamba_n_groups",),
    state=("mamba_d_state",), conv=("mamba_d_conv",),
)
FALCON_H1 = Mamba2Keys(
    heads=("mamba_n_heads",), head_dim=("mamba_d_head",), groups=("mamba_n_groups",),
    state=("mamba_d_state",), conv=("mamba_d_conv",), inner=("mamba_d_ssm",),
)
ZAMBA2 = Mamba2Keys(
    heads=("n_mamba_heads",), head_dim=("mamba_headdim",), groups=("mamba_ngroups",),
    state=("mamba_d_state",), conv=("mamba_d_conv",),
)
MAMBA2 = Mamba2Keys(
    heads=("num_heads",), head_dim=("head_dim",), groups=("n_groups",), state=("state_size",), conv=("conv_kernel",),
)


def ssm_inner_size(cfg: ConfigView, keys: Mamba2Keys) -> int:
    """The SSM width: the explicit key when written, else expand · hidden_size."""
    for key in keys.inner:
        value = cfg.optional_int(key, minimum=1)
        if value:
            return value
    return cfg.integer(*keys.expand, minimum=1, defaults=True) * hidden_size(cfg)


def mamba2_head_dim(cfg: ConfigView, keys: Mamba2Keys, heads: int) -> int:
    """The head dim as written, or (absent / ``"auto"``) the SSM width divided by the heads."""
    for key in keys.head_dim:
        raw = cfg.value(key)
        if raw is not None and raw != "auto":
            return cfg.integer(key, minimum=1)
    inner = ssm_inner_size(cfg, keys)
    if inner % heads:
        raise ConfigError(cfg.path(keys.heads[0]), f"{heads} Mamba heads do not divide the SSM width {inner}")
    return inner // heads


def mamba2_state(cfg: ConfigView, keys: Mamba2Keys) -> MambaState:
    heads = cfg.integer(*keys.heads, minimum=1, defaults=True)
    return MambaState(
        version=2,
        num_heads=heads,
        head_dim=mamba2_head_dim(cfg, keys, heads),
        state_size=cfg.integer(*keys.state, minimum=1, defaults=True),
        n_groups=cfg.integer(*keys.groups, minimum=1, defaults=True),
        conv_kernel=cfg.integer(*keys.conv, minimum=1, defaults=True),
    )


def mamba1_state(cfg: ConfigView, *, inner: int, state_keys: tuple[str, ...], conv_keys: tuple[str, ...]) -> MambaState:
    """Mamba-1: ``inner`` channels each with a d_state vector (heads = inner, head_dim = 1, no groups)."""
    return MambaState(
        version=1,
        num_heads=inner,
        head_dim=1,
        state_size=cfg.integer(*state_keys, minimum=1, defaults=True),
        n_groups=0,
        conv_kernel=cfg.integer(*conv_keys, minimum=1, defaults=True),
    )


def mamba1_inner(cfg: ConfigView) -> int:
    """Mamba / Falcon-Mamba ``intermediate_size`` (= expand · hidden_size when absent)."""
    value = cfg.optional_int("intermediate_size", minimum=1)
    return value or cfg.integer("expand", minimum=1, defaults=True) * hidden_size(cfg)


# -- shared layout ----------------------------------------------------------------------------------


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


def windowed_attention(cfg: ConfigView, key_dim: int | None = None) -> tuple:
    """The attention part of a hybrid, windowed when ``sliding_window`` is set (vLLM applies it)."""
    window = effective_window(cfg, sliding_window(cfg), [])
    return (attention_part(cfg, window=window, key_dim=key_dim),)


# -- pure SSMs --------------------------------------------------------------------------------------


@register(
    family="ssm",
    model_types=("mamba", "falcon_mamba"),
    architectures=("MambaForCausalLM", "FalconMambaForCausalLM"),
    reads=("num_hidden_layers|n_layer", "intermediate_size", "expand", "hidden_size", "state_size", "conv_kernel"),
    fixtures={"mamba": "state-spaces__mamba-2.8b-hf", "falcon_mamba": "tiiuae__falcon-mamba-7b-transformers-defaults"},
)
def mamba1(cfg: ConfigView) -> Layout:
    """Every layer Mamba-1: C = I·N·e_s + (w − 1)·I·e_conv; no KV cache at all."""
    n = num_layers(cfg)
    state = mamba1_state(cfg, inner=mamba1_inner(cfg), state_keys=("state_size",), conv_keys=("conv_kernel",))
    return ssm_layout(cfg, [LINEAR] * n, state, notes=["attention-free: no KV cache, only SSM state"])


@register(
    family="ssm",
    model_types=("mamba2",),
    architectures=("Mamba2ForCausalLM",),
    reads=("num_hidden_layers", "num_heads", "head_dim", "n_groups", "state_size", "conv_kernel", "expand"),
    fixtures={"mamba2": "state-spaces__mamba2-2.8b-transformers-defaults"},
)
def mamba2(cfg: ConfigView) -> Layout:
    """Every layer Mamba-2; no KV cache at all."""
    n = num_layers(cfg)
    state = mamba2_state(cfg, MAMBA2)
    return ssm_layout(cfg, [LINEAR] * n, state, notes=["attention-free: no KV cache, only SSM state"])


# -- hybrids ----------------------------------------------------------------------------------------


_NEMOTRON_ROLES = (ATTENTION, LINEAR, MLP)


@register(
    family="ssm",
    model_types=("nemotron_h",),
    architectures=("NemotronHForCausalLM",),
    reads=(
        "hybrid_override_pattern", "layers_block_type", "mamba_num_heads", "mamba_head_dim", "n_groups",
        "ssm_state_size", "conv_kernel", "num_key_value_heads", "head_dim|attention_head_dim", "sliding_window",
        "mamba_ssm_cache_dtype", "num_nextn_predict_layers",
    ),
    fixtures={"nemotron_h": "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"},
)
def nemotron_h(cfg: ConfigView) -> Layout:
    """Mamba-2, attention and MLP/MoE layers per the pattern, whose length is the layer count."""
    roles = roles_from_list(cfg, "layers_block_type", None, _NEMOTRON_ROLES)
    key = "layers_block_type"
    if roles is None:
        roles, key = roles_from_pattern(cfg, "hybrid_override_pattern"), "hybrid_override_pattern"
    if roles is None:
        raise ConfigError(
            cfg.path("hybrid_override_pattern"), "missing: neither it nor layers_block_type gives the layers"
        )
    warnings = check_length(cfg, key, roles)
    heads = num_heads(cfg)
    key_dim = cfg.optional_int("head_dim", minimum=1) or cfg.optional_int("attention_head_dim", minimum=1)
    attention = windowed_attention(cfg, key_dim or head_dim(cfg, heads)) if ATTENTION in roles else None
    notes = ["MLP/MoE layers are listed with no cache parts"] if MLP in roles else []
    return ssm_layout(cfg, roles, mamba2_state(cfg, NEMOTRON_H), attention, notes, warnings)


@register(
    family="ssm",
    model_types=("falcon_h1",),
    architectures=("FalconH1ForCausalLM",),
    reads=(
        "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "mamba_d_ssm",
        "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv", "mamba_expand",
    ),
    fixtures={"falcon_h1": "tiiuae__Falcon-H1-1.5B-Deep-Instruct-transformers-defaults"},
)
def falcon_h1(cfg: ConfigView) -> Layout:
    """Every layer holds attention KV **and** a Mamba-2 state (a parallel hybrid)."""
    n = num_layers(cfg)
    attention = (attention_part(cfg),)
    notes = ["every layer has both attention and Mamba-2 (parallel hybrid): full KV plus SSM state"]
    return ssm_layout(cfg, [HYBRID] * n, mamba2_state(cfg, FALCON_H1), attention, notes)


_GRANITE_ROLES = (ATTENTION, LINEAR)


@register(
    family="ssm",
    model_types=("granitemoehybrid",),
    architectures=("GraniteMoeHybridForCausalLM",),
    reads=(
        "layer_types|layers_block_type", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv", "mamba_expand",
    ),
    fixtures={"granitemoehybrid": "ibm-granite__granite-speech-3.2-8b-transformers-defaults"},
)
def granite_hybrid(cfg: ConfigView) -> Layout:
    """Mamba-2 and attention per ``layer_types``; without it attention iff (i+1) % 6 == 0 (engine default)."""
    n = num_layers(cfg)
    notes = []
    roles = roles_from_list(cfg, "layer_types", n, _GRANITE_ROLES)
    if roles is None:
        roles = roles_from_list(cfg, "layers_block_type", n, _GRANITE_ROLES)
    if roles is None:
        roles = roles_from_rule(n, lambda i: (i + 1) % 6 == 0)
        notes.append("no layer_types: the engines' default pattern applies (attention iff (i+1) % 6 == 0)")
    attention = windowed_attention(cfg) if ATTENTION in roles else None
    cfg.mark("position_embedding_type")
    return ssm_layout(cfg, roles, mamba2_state(cfg, GRANITE), attention, notes)


@register(
    family="ssm",
    model_types=("jamba",),
    architectures=("JambaForCausalLM",),
    reads=(
        "attn_layer_period", "attn_layer_offset", "num_hidden_layers", "num_key_value_heads", "mamba_d_state",
        "mamba_d_conv", "mamba_expand", "hidden_size",
    ),
    fixtures={"jamba": "ai21labs__Jamba-v0.1-transformers-defaults"},
)
def jamba(cfg: ConfigView) -> Layout:
    """Mamba-1 layers, attention iff i % ``attn_layer_period`` == ``attn_layer_offset`` (0-based)."""
    n = num_layers(cfg)
    period = cfg.integer("attn_layer_period", minimum=1, defaults=True)
    offset = cfg.integer("attn_layer_offset", minimum=0, defaults=True)
    if offset >= period:
        raise ConfigError(cfg.path("attn_layer_offset"), f"{offset} is not below attn_layer_period {period}")
    roles = roles_from_rule(n, lambda i: i % period == offset)
    inner = cfg.integer("mamba_expand", minimum=1, defaults=True) * hidden_size(cfg)
    state = mamba1_state(cfg, inner=inner, state_keys=("mamba_d_state",), conv_keys=("mamba_d_conv",))
    attention = windowed_attention(cfg) if ATTENTION in roles else None
    return ssm_layout(cfg, roles, state, attention)


@register(
    family="ssm",
    model_types=("bamba",),
    architectures=("BambaForCausalLM",),
    reads=(
        "attn_layer_indices", "num_hidden_layers", "num_key_value_heads", "mamba_n_heads", "mamba_d_head",
        "mamba_n_groups", "mamba_d_state", "mamba_d_conv", "mamba_expand",
    ),
    fixtures={"bamba": "ibm-fms__Bamba-9.8b-2.2T-hf-transformers-defaults"},
)
def bamba(cfg: ConfigView) -> Layout:
    """Mamba-2 layers with attention at the 0-based ``attn_layer_indices`` (none when absent)."""
    n = num_layers(cfg)
    notes = []
    roles = roles_from_indices(cfg, "attn_layer_indices", n, base=0, inside=ATTENTION, outside=LINEAR)
    if roles is None:
        roles = [LINEAR] * n
        notes.append("no attn_layer_indices: every layer is Mamba-2 (transformers default)")
    attention = windowed_attention(cfg) if ATTENTION in roles else None
    return ssm_layout(cfg, roles, mamba2_state(cfg, GRANITE), attention, notes)


def zamba2_attention(cfg: ConfigView) -> tuple:
    """Zamba2's shared-block attention: MHA (K = heads) with head_dim = 2·hidden/heads."""
    heads = num_heads(cfg)
    dim = cfg.optional_int("attention_head_dim", minimum=1)
    if dim is None:
        width = 2 * hidden_size(cfg)
        if width % heads:
            raise ConfigError(cfg.path("num_attention_heads"), f"{heads} heads do not divide 2·hidden_size = {width}")
        dim = width // heads
    cfg.mark("num_key_value_heads", "num_mem_blocks", "attention_hidden_size")
    return (FullAttention(kv_heads=heads, head_dim=dim),)


@register(
    family="ssm",
    model_types=("zamba2",),
    architectures=("Zamba2ForCausalLM",),
    reads=(
        "layers_block_type", "num_hidden_layers", "num_attention_heads", "attention_head_dim", "hidden_size",
        "n_mamba_heads", "mamba_headdim", "mamba_ngroups", "mamba_d_state", "mamba_d_conv", "mamba_expand",
    ),
    fixtures={"zamba2": "Zyphra__Zamba2-2.7B-transformers-defaults"},
)
def zamba2(cfg: ConfigView) -> Layout:
    """Mamba-2 layers; ``hybrid`` layers add their own MHA KV (the shared block's weights, not its cache)."""
    n = num_layers(cfg)
    notes = []
    if not cfg.present("layers_block_type"):
        notes.append("no layers_block_type: the transformers default pattern applies")
    roles = roles_from_list(cfg, "layers_block_type", n, (LINEAR, HYBRID), defaults=True)
    if roles is None:
        raise ConfigError(cfg.path("layers_block_type"), "missing (needed to find the hybrid layers)")
    attention = zamba2_attention(cfg) if HYBRID in roles else None
    return ssm_layout(cfg, roles, mamba2_state(cfg, ZAMBA2), attention, notes)
