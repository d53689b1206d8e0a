"""Readers of recurrent-state shapes: Gated DeltaNet, KDA, lightning attention, Mamba-1/2 and
short convolutions. Each returns one fixed-size state spec (no per-token entries).

- GDN/KDA: one H_k × H_v matrix per value head (recurrent dtype) plus a short conv's last w − 1
  inputs (conv dtype); lightning attention has no conv.
- Mamba-2: heads·head_dim·d_state values plus a conv over heads·head_dim + 2·groups·d_state
  channels; Mamba-1 is heads = intermediate size, head_dim = 1, groups = 0.
- Short conv (LFM2): (w − 1)·hidden values.
"""

from __future__ import annotations

from dataclasses import dataclass

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import LinearAttentionState, MambaState, ShortConvState

from hfkv.mappings.readers.attention_keys import hidden_size


GDN_READS = (
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "num_key_value_heads", "head_dim", "num_attention_heads", "num_hidden_layers",
    "layer_types", "mamba_ssm_dtype",
)


QWEN_LINEAR_READS = (
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "num_hidden_layers", "layer_types",
)


def gdn_state(cfg: ConfigView, variant: str = "gdn") -> LinearAttentionState:
    """Gated DeltaNet: ``linear_num_{key,value}_heads``, ``linear_{key,value}_head_dim``, ``linear_conv_kernel_dim``.

    ``variant`` labels a state of the same shape under another name (AliceAI's KDA reads these keys).
    """
    return LinearAttentionState(
        variant=variant,
        num_qk_heads=cfg.integer("linear_num_key_heads", minimum=1, defaults=True),
        num_v_heads=cfg.integer("linear_num_value_heads", minimum=1, defaults=True),
        head_k_dim=cfg.integer("linear_key_head_dim", minimum=1, defaults=True),
        head_v_dim=cfg.integer("linear_value_head_dim", minimum=1, defaults=True),
        conv_kernel=cfg.integer("linear_conv_kernel_dim", minimum=1, defaults=True),
    )


def kda_state(heads: int, dim: int, kernel: int) -> LinearAttentionState:
    """Kimi Delta Attention: q, k and v share the head count and head dim (C = N·H²·e_s + 3(w−1)·N·H·e_conv)."""
    return LinearAttentionState(
        variant="kda", num_qk_heads=heads, num_v_heads=heads, head_k_dim=dim, head_v_dim=dim, conv_kernel=kernel
    )


def lightning_state(heads: int, dim: int) -> LinearAttentionState:
    """Lightning attention: one hd × hd matrix per head and no conv (kernel 1)."""
    return LinearAttentionState(
        variant="lightning", num_qk_heads=heads, num_v_heads=heads, head_k_dim=dim, head_v_dim=dim, conv_kernel=1
    )


def kda_from_linear_config(cfg: ConfigView) -> LinearAttentionState:
    """KDA geometry from ``linear_attn_config`` (Kimi, GLM-5.3) or the flat ``linear_*`` keys."""
    return kda_state(
        cfg.integer("linear_attn_config.num_heads", "linear_num_heads", minimum=1, defaults=True),
        cfg.integer("linear_attn_config.head_dim", "linear_head_dim", minimum=1, defaults=True),
        cfg.integer("linear_attn_config.short_conv_kernel_size", "linear_conv_kernel_dim", minimum=1, defaults=True),
    )


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
    # Left out: the class's width (FalconH1Config's mamba_d_ssm 1,024), which the engines read before expand.
    value = cfg.class_int(*keys.inner) if keys.inner else None
    return value or cfg.integer(*keys.expand, minimum=1, defaults=True) * hidden_size(cfg)


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
    """Mamba / Falcon-Mamba ``intermediate_size``, else mamba_ssm's ``d_inner`` (top level or in
    ``ssm_cfg``), else expand · hidden_size (``expand`` as ``written_or_ssm_cfg`` reads it)."""
    value = written_or_ssm_cfg(cfg, ("intermediate_size",), "d_inner", required=False)
    return value or written_or_ssm_cfg(cfg, ("expand",), "expand") * hidden_size(cfg)


def written_or_ssm_cfg(cfg: ConfigView, keys: tuple[str, ...], sub: str, *, required: bool = True) -> int | None:
    """A Mamba size from the transformers key (``state_size``, ``conv_kernel``, ``expand``), else from
    mamba_ssm's own name for it (``d_state``, ``d_conv``, ``expand``, ``d_inner``: the reference
    checkpoint's sizes, which a config may carry at its top level or in ``ssm_cfg``), else the config
    class's default (None when not ``required``: the caller derives it). Two of them written and
    different is a warning naming both (the first is used: the engines read the transformers key)."""
    names = list(dict.fromkeys([*keys, sub, f"ssm_cfg.{sub}"]))
    written = [(name, cfg.optional_int(name, minimum=1)) for name in names]
    written = [(name, value) for name, value in written if value is not None]
    if written:
        (first, value), *others = written
        for other, different in others:
            if different != value:
                cfg.warn(f"estimate, not exact: {cfg.path(first)} = {value} and {cfg.path(other)} = {different} "
                         f"disagree: {first} is used (the engines read it; mamba_ssm would build {sub} {different})")
        return value
    if not required:
        return None  # the caller derives it (a class value would come from the class's own hidden size)
    return cfg.integer(*keys, minimum=1, defaults=True)


def short_conv_state(cfg: ConfigView, warnings: list[str]) -> ShortConvState:
    """(w − 1) × hidden channels, w = ``conv_L_cache``; a different ``conv_dim`` is reported."""
    dim = hidden_size(cfg)
    conv_dim = cfg.optional_int("conv_dim", minimum=1)
    if conv_dim is not None and conv_dim != dim:
        warnings.append(f"conv_dim {conv_dim} differs from hidden_size {dim}: SGLang sizes the conv state by "
                        "hidden_size (used here), vLLM by conv_dim")
    return ShortConvState(dim=dim, conv_kernel=cfg.integer("conv_L_cache", minimum=1, defaults=True))


def state_dtype_note(cfg: ConfigView) -> list[str]:
    """A note when the config names a dtype for the recurrent state (the report's state dtype is an option)."""
    for key in ("mamba_ssm_dtype", "mamba_ssm_cache_dtype"):
        value = cfg.value(key)
        if isinstance(value, str):
            return [f"config sets {key} = {value}: vLLM uses it for the recurrent state; "
                    "hfkv uses --state-dtype (SGLang's default is fp32)"]
    return []
