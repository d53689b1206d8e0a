"""Inkling (``inkling_model`` / ``inkling_mm_model``): sliding layers are the 0-based ``local_layer_ids``
(SGLang), else ``layer_types`` (``hybrid_sliding``), else sliding iff (i+1) % 6 != 0 (transformers).
Sliding layers use ``swa_num_key_value_heads``, ``swa_head_dim`` and ``sliding_window_size``. Every
layer keeps four short convs (k and v over K·hd channels, attention and MLP over hidden):
(w − 1)·(2·K·hd + 2·hidden) values, w = ``sconv_kernel_size`` / ``conv_kernel_size``.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import Layout, ShortConvState

from hfkv.mappings.readers.attention_keys import (
    Window,
    attention_part,
    attention_shape,
    hidden_size,
    layer_window,
    num_layers,
    window_of,
)
from hfkv.mappings.readers.layer_builders import PartsFactory, hybrid_layout
from hfkv.mappings.readers.layer_patterns import ATTENTION, SLIDING, named_roles, roles_from_indices
from hfkv.mappings.registry import register


_INKLING_TYPES = {"hybrid": ATTENTION, "hybrid_sliding": SLIDING, "full_attention": ATTENTION,
                  "sliding_attention": SLIDING}


def inkling_roles(cfg: ConfigView, n: int, notes: list[str]) -> list[str]:
    """0-based ``local_layer_ids`` (SGLang), else ``layer_types``, else sliding iff (i+1) % 6 != 0."""
    roles = roles_from_indices(cfg, "local_layer_ids", n, base=0, inside=SLIDING, outside=ATTENTION)
    if roles is not None:
        notes.append("local_layer_ids is 0-based: layer i is sliding iff i is listed")
        return roles
    names = cfg.str_list("layer_types", length=n)
    if names is not None:
        return named_roles(cfg, "layer_types", names, _INKLING_TYPES)
    notes.append("no local_layer_ids or layer_types: sliding iff (i + 1) % 6 != 0 (transformers default)")
    return [ATTENTION if (i + 1) % 6 == 0 else SLIDING for i in range(n)]


def inkling_conv(cfg: ConfigView, kv: int, dim: int, kernel: int | None) -> tuple:
    """The four short convs of a layer (k, v over K·hd; attention and MLP over hidden), or () without a kernel."""
    if kernel is None:
        return ()
    return (ShortConvState(dim=2 * kv * dim + 2 * hidden_size(cfg), conv_kernel=kernel),)


@register(
    family="sliding-geometry",
    model_types=("inkling_model", "inkling_mm_model"),
    architectures=("InklingForConditionalGeneration", "InklingForCausalLM"),
    reads=(
        "local_layer_ids", "layer_types", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "head_dim", "swa_num_key_value_heads", "swa_head_dim", "sliding_window_size", "sconv_kernel_size",
        "conv_kernel_size", "hidden_size", "num_mtp_layers",
    ),
    fixtures={"inkling_mm_model": "thinkingmachines__Inkling-transformers-defaults"},
)
def inkling(cfg: ConfigView) -> Layout:
    """Full and sliding layers with their own KV geometry, each with four short-conv states."""
    n = num_layers(cfg)
    notes: list[str] = []
    warnings: list[str] = []
    roles = inkling_roles(cfg, n, notes)
    heads, kv, dim = attention_shape(cfg, head_dim_defaults=True)
    swa_kv = cfg.optional_int("swa_num_key_value_heads", minimum=1, defaults=True) or kv
    swa_dim = cfg.optional_int("swa_head_dim", minimum=1, defaults=True) or dim
    cfg.mark("swa_num_attention_heads", "mtp_local_layer_ids", "rel_extent", "d_rel")
    kernel = cfg.optional_int("sconv_kernel_size", "conv_kernel_size", minimum=1, defaults=True)
    if kernel is None:
        notes.append("no sconv_kernel_size / conv_kernel_size: no short-conv state counted")
    elif not (cfg.present("sconv_kernel_size") or cfg.present("conv_kernel_size")):
        warnings.append(f"short-conv kernel {kernel} is the transformers default (the config writes none)")
    window = Window()
    if SLIDING in roles:
        window = layer_window(cfg, window_of(cfg, "sliding_window_size", "sliding_window"), notes)
    parts: dict[str, tuple[str, PartsFactory]] = {
        ATTENTION: ("full", lambda: (attention_part(cfg, kv=kv, key_dim=dim, value_dim=dim),)
                    + inkling_conv(cfg, kv, dim, kernel)),
        SLIDING: (window.kind,
                  lambda: (attention_part(cfg, kv=swa_kv, key_dim=swa_dim, value_dim=swa_dim, **window.args()),)
                  + inkling_conv(cfg, swa_kv, swa_dim, kernel)),
    }
    if kernel is not None:
        warnings.append("Inkling short-conv state: (w − 1)·(2·K·hd + 2·hidden) values per layer at the conv dtype "
                        "(transformers' four convs)")
    return hybrid_layout(cfg, roles, parts, notes, warnings)
