"""Mamba-1 / Mamba-2 models: pure SSMs (Mamba, Falcon-Mamba, Mamba-2), mamba_ssm's own config format,
and Jamba (Mamba-1 + attention).

- Mamba / Falcon-Mamba: every layer Mamba-1 over ``intermediate_size`` (= expand·hidden) channels, with
  ``state_size`` and ``conv_kernel``; a config that carries mamba_ssm's ``ssm_cfg`` instead (``d_state``,
  ``d_conv``, ``expand``) is read from it (``state_shapes.written_or_ssm_cfg``).
- mamba_ssm format (``d_model``, ``n_layer``, ``ssm_cfg``; no model type, no architectures: the
  ``state-spaces/mamba-*`` repositories): ``ssm_cfg.layer`` ``Mamba1`` (default) or ``Mamba2``, each with
  mamba_ssm's own defaults (``Mamba``: d_state 16, d_conv 4, expand 2; ``Mamba2``: d_state 128, d_conv 4,
  expand 2, headdim 64, ngroups 1, d_ssm = expand·d_model); ``attn_layer_idx`` layers (MHA with its own
  ``attn_cfg``) are refused, not modelled.
- Jamba: attention iff i % ``attn_layer_period`` == ``attn_layer_offset`` (0-based), Mamba-1 elsewhere.
"""

from __future__ import annotations

from hfkv.model.config import MAX_LAYERS, ConfigView
from hfkv.errors import ConfigError, UnsupportedModelError
from hfkv.model.specs import Layout, MambaState

from hfkv.mappings.readers.attention_keys import hidden_size, num_layers, windowed_attention
from hfkv.mappings.readers.layer_builders import ssm_layout, unused_attention_keys
from hfkv.mappings.readers.layer_patterns import ATTENTION, LINEAR, roles_from_rule
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import (
    MAMBA2, mamba1_inner, mamba1_state, mamba2_state, written_or_ssm_cfg,
)

NO_CACHE = "attention-free: no KV cache, only SSM state"


@register(
    family="ssm",
    model_types=("mamba", "falcon_mamba"),
    architectures=("MambaForCausalLM", "FalconMambaForCausalLM"),
    reads=("num_hidden_layers|n_layer", "intermediate_size", "expand", "hidden_size|d_model", "state_size",
           "conv_kernel", "d_state", "d_conv", "d_inner", "ssm_cfg.{layer, d_state, d_conv, expand, d_inner}"),
    fixtures={"mamba": "state-spaces__mamba-2.8b-hf", "falcon_mamba": "tiiuae__falcon-mamba-7b-transformers-defaults"},
)
def mamba1(cfg: ConfigView) -> Layout:
    """Every layer Mamba-1: C = I·N·e_s + (w − 1)·I·e_conv; no KV cache at all."""
    n = num_layers(cfg)
    layer = cfg.value("ssm_cfg.layer")
    if layer is not None and layer != "Mamba1":
        raise ConfigError(cfg.path("ssm_cfg.layer"), f"{layer!r} in a {cfg.model_type} config, whose layers are Mamba1")
    state = MambaState(
        version=1, num_heads=mamba1_inner(cfg), head_dim=1, n_groups=0,
        state_size=written_or_ssm_cfg(cfg, ("state_size",), "d_state"),
        conv_kernel=written_or_ssm_cfg(cfg, ("conv_kernel",), "d_conv"),
    )
    return ssm_layout(cfg, [LINEAR] * n, state, notes=[NO_CACHE])


# mamba_ssm's module defaults (mamba_ssm/modules/mamba_simple.py ``Mamba``, mamba2.py ``Mamba2``).
MAMBA_SSM_DEFAULTS = {
    "Mamba1": {"d_state": 16, "d_conv": 4, "expand": 2},
    "Mamba2": {"d_state": 128, "d_conv": 4, "expand": 2, "headdim": 64, "ngroups": 1},
}


def _ssm_size(cfg: ConfigView, layer: str, key: str) -> int:
    """``ssm_cfg.<key>``, else the same name at the top level (a copy that lifts it there), else mamba_ssm's
    module default for ``layer``; both written and different is a warning (``ssm_cfg``, what
    ``MambaLMHeadModel`` passes to the mixer, is used)."""
    nested = cfg.optional_int(f"ssm_cfg.{key}", minimum=1)
    top = cfg.optional_int(key, minimum=1)
    if nested is not None and top is not None and nested != top:
        cfg.warn(f"estimate, not exact: ssm_cfg.{key} = {nested} and {key} = {top} disagree: ssm_cfg.{key} is used "
                 "(mamba_ssm's MambaLMHeadModel passes ssm_cfg to its mixers)")
    found = nested if nested is not None else top
    return MAMBA_SSM_DEFAULTS[layer][key] if found is None else found


@register(
    family="ssm",
    signature=("d_model", "n_layer", "ssm_cfg"),
    reads=("d_model", "n_layer", "ssm_cfg.{layer, d_state, d_conv, expand, headdim, ngroups, d_ssm}",
           "d_state", "d_conv", "expand", "headdim", "ngroups", "d_ssm", "d_inner",
           "attn_layer_idx", "attn_cfg"),
    ignores={"d_intermediate": "the gated MLP's width (0: none): no cache"},
    fixtures={"(mamba_ssm)": "state-spaces__mamba-2.8b"},
)
def mamba_ssm(cfg: ConfigView) -> Layout:
    """mamba_ssm's ``MambaConfig`` (``MambaLMHeadModel``): ``n_layer`` Mamba1 or Mamba2 mixers of
    ``d_model``; C as for the transformers classes, with mamba_ssm's module defaults."""
    if not isinstance(cfg.value("ssm_cfg"), dict):
        raise ConfigError(cfg.path("ssm_cfg"), "expected an object (mamba_ssm's mixer arguments)")
    attention = cfg.value("attn_layer_idx")
    if attention:
        raise UnsupportedModelError(
            "mamba_ssm hybrid: the attn_layer_idx layers are MHA mixers built from attn_cfg (heads, KV heads, "
            "head_dim, an optional conv over Q/K/V) that hfkv does not model yet")
    n = cfg.integer("n_layer", minimum=1, maximum=MAX_LAYERS)
    layer = cfg.value("ssm_cfg.layer") or "Mamba1"
    if layer not in MAMBA_SSM_DEFAULTS:
        raise UnsupportedModelError(f"mamba_ssm ssm_cfg.layer {layer!r}: only Mamba1 and Mamba2 are modelled")
    inner = cfg.optional_int("ssm_cfg.d_inner", "d_inner", minimum=1) or _ssm_size(cfg, layer, "expand") * cfg.integer(
        "d_model", minimum=1)
    if layer == "Mamba1":
        state = MambaState(version=1, num_heads=inner, head_dim=1, n_groups=0,
                           state_size=_ssm_size(cfg, layer, "d_state"), conv_kernel=_ssm_size(cfg, layer, "d_conv"))
    else:
        width = cfg.optional_int("ssm_cfg.d_ssm", "d_ssm", minimum=1) or inner
        headdim = _ssm_size(cfg, layer, "headdim")
        if width % headdim:
            raise ConfigError(cfg.path("ssm_cfg.headdim"), f"{headdim} does not divide the SSM width {width}")
        state = MambaState(version=2, num_heads=width // headdim, head_dim=headdim,
                           state_size=_ssm_size(cfg, layer, "d_state"), n_groups=_ssm_size(cfg, layer, "ngroups"),
                           conv_kernel=_ssm_size(cfg, layer, "d_conv"))
    notes = [NO_CACHE, f"mamba_ssm config format: {n} {layer} layers, sizes from ssm_cfg, else mamba_ssm's "
                       f"{layer} defaults; vLLM and SGLang load only the transformers format (the -hf repositories)"]
    return ssm_layout(cfg, [LINEAR] * n, state, notes=notes)


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
    return ssm_layout(cfg, roles, state, attention, [] if attention else unused_attention_keys(cfg))
