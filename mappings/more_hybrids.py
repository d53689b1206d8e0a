"""The remaining hybrids of engines.md §4: linear/recurrent layers, per-type attention geometry,
extra conv states and cross-attention.

Each model type below says where its pattern comes from (0-based layer index i unless stated) and
what the cache parts are. Figures that engines.md leaves uncertain are chosen as stated here and
repeated in ``Layout.warnings`` so a reader sees them in every report.

- ``alice_ai`` (AliceAI, vLLM): a Qwen3-Next-shaped config (vLLM's AliceAIConfig extends
  Qwen3NextConfig). Pattern: ``layer_types``, else full iff (i+1) % ``full_attention_interval`` == 0.
  Linear layers are KDA with the ``linear_*`` geometry: recurrent N_v·H_k·H_v, conv over q, k and v
  ((w − 1)·(N_v·H_v + 2·N_qk·H_k)); full layers are gated GQA.
- ``gigachat3_5`` (GigaChat-3.5, SGLang): GDN layers (``linear_*`` keys) and MLA full layers.
  Pattern: ``layer_types``, else the **0-based** ``full_attention_layers`` list.
- ``interns2_preview``, ``mobius``: Qwen3-Next-like GDN hybrids in ``text_config``; mapped exactly as
  Qwen3-Next (``linear.qwen_gdn``).
- ``jet_nemotron`` (SGLang): ``layer_types`` ∈ {attn, swa, jet}. ``swa`` keeps a window of
  ``efficient_attention_config.swa.window_size``. A JetBlock keeps a recurrent (H, d_k, d_v) state,
  d_v = d_k·``expand_v``, and a dynamic-conv state of ``conv_size`` rows (not conv_size − 1) over the
  H·d_v value channels, as SGLang sizes it. In spec terms: ``LinearAttentionState`` with no q/k conv
  channels and ``conv_kernel = conv_size + 1``.
- ``minicpm_sala`` (SGLang): ``mixer_types`` per layer; ``minicpm4`` layers are InfLLM-v2 sparse
  attention, counted as full GQA KV; ``lightning``/``lightning-attn`` layers keep one
  ``lightning_head_dim``² matrix per ``lightning_nkv`` head (SGLang's shape), no conv.
- ``qwen4_exp`` / ``qwen4_exp_text``: ``layer_types`` (``linear_attention`` vs ``full_attention`` /
  ``indexed_attention`` / ``qwen_sparse_attention``), else full iff (i+1) % 4 == 0. Linear layers are
  GDN; full layers are GQA plus, when ``indexer_n_heads`` is set, QSA indexer keys of
  ``indexer_kv_heads``·``indexer_head_dim`` values per ``indexer_compress_ratio`` tokens. Layers listed
  in the **1-based** ``ple_layer_ids`` add a PLE conv state of (hidden·``hc_count``) ×
  ((``ple_conv_kernel_size`` − 1)·``ngram_size``) values: a ``ShortConvState`` of
  hidden·hc_count·ngram_size channels and kernel ``ple_conv_kernel_size``.
- ``recurrent_gemma``: ``block_types`` repeated to ``num_hidden_layers``; ``attention`` blocks are
  local attention over ``attention_window_size``; ``recurrent`` blocks keep the RG-LRU state of
  ``lru_width`` values (recurrent dtype) plus a conv of (``conv1d_width`` − 1)·lru_width values: the
  Mamba-1 shape with heads = lru_width, head_dim = 1, d_state = 1.
- ``zaya`` (ZAYA1): every attention layer also keeps a CCA conv state of (H + K)·hd channels ×
  (``cca_time0`` + ``cca_time1`` − 2) rows plus one (hidden, 1) tensor (SGLang's shapes), both at the conv
  dtype. Pattern: ``zaya_layers`` (``'a'`` = attention, anything else a layer without cache), else
  ``layer_types`` (``hybrid`` full, ``hybrid_sliding`` windowed by ``sliding_window``), else SGLang's
  default (attention iff i is even).
- ``inkling_model`` / ``inkling_mm_model``: sliding layers are the 0-based ``local_layer_ids`` (SGLang),
  else ``layer_types`` (``hybrid_sliding``), else sliding iff (i+1) % 6 != 0 (transformers). Sliding
  layers use ``swa_num_key_value_heads``, ``swa_head_dim`` and ``sliding_window_size``. Every layer
  keeps four short convs (k and v over K·hd channels, attention and MLP over hidden):
  (w − 1)·(2·K·hd + 2·hidden) values, w = ``sconv_kernel_size`` / ``conv_kernel_size``.
- ``moss_vl``: ``text_config.cross_attention_layers`` (0-based) are counted as full layers (n = S),
  the convention of ``layouts.mllama`` (SGLang's token pool); their real cache holds image tokens.
"""

from __future__ import annotations

import math
from typing import Callable

from hfkv.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.specs import IndexerKeys, LayerSpec, LinearAttentionState, Layout, MambaState, ShortConvState

from ._state_keys import ATTENTION, LINEAR, MLP, hidden_size, named_roles, roles_from_indices, roles_from_list
from .common import (
    attention_shape,
    attention_part,
    effective_window,
    head_dim,
    kv_heads,
    num_heads,
    num_layers,
    sliding_window,
)
from .linear import gdn_state, gqa_parts, hybrid_layout, interval_roles, lightning_state, mla_parts, qwen_gdn
from .registry import register

SLIDING = "sliding"
PartsFactory = Callable[[], tuple]


# -- shared readers ---------------------------------------------------------------------------------


def positive_number(cfg: ConfigView, key: str, default: float) -> float:
    """A positive finite number (int or float) under ``key``; ``default`` when absent."""
    raw = cfg.value(key)
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw) or raw <= 0:
        raise ConfigError(cfg.path(key), f"expected a positive number, got {raw!r}"[:200])
    return raw


def window_of(cfg: ConfigView, *keys: str) -> int:
    """A required positive window under the first present of ``keys``."""
    return cfg.integer(*keys, minimum=1, defaults=True)


# -- AliceAI ----------------------------------------------------------------------------------------


_QWEN_LINEAR_READS = (
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "num_hidden_layers", "layer_types",
)


@register(
    family="linear",
    model_types=("alice_ai",),
    architectures=("AliceAIForCausalLM",),
    reads=_QWEN_LINEAR_READS + (
        "full_attention_interval", "num_attention_heads", "num_key_value_heads", "head_dim", "mtp_num_hidden_layers",
    ),
)
def alice_ai(cfg: ConfigView) -> Layout:
    """KDA layers with Qwen3-Next's ``linear_*`` geometry, gated GQA full layers."""
    n = num_layers(cfg)
    roles, warnings = interval_roles(cfg, n)
    state = gdn_state(cfg).model_copy(update={"variant": "kda"})
    warnings.append(
        "AliceAI's KDA state is sized from the Qwen3-Next linear_* keys (vLLM's AliceAIConfig extends "
        "Qwen3NextConfig): recurrent N_v·H_k·H_v, conv (w − 1)·(N_v·H_v + 2·N_qk·H_k) over split q, k, v convs"
    )
    if state.num_qk_heads != state.num_v_heads:
        warnings.append(
            f"linear_num_key_heads {state.num_qk_heads} ≠ linear_num_value_heads {state.num_v_heads}: "
            "the KDA recurrent state is counted per value head"
        )
    parts = {LINEAR: ("kda", lambda: (state,)), ATTENTION: gqa_parts(cfg)}
    return hybrid_layout(cfg, roles, parts, warnings=warnings)


# -- GigaChat-3.5 -----------------------------------------------------------------------------------


@register(
    family="linear",
    model_types=("gigachat3_5",),
    architectures=("GigaChat35ForCausalLM",),
    reads=_QWEN_LINEAR_READS + (
        "full_attention_layers", "kv_lora_rank", "qk_rope_head_dim", "num_nextn_predict_layers",
    ),
)
def gigachat3_5(cfg: ConfigView) -> Layout:
    """GDN layers and MLA full layers per ``layer_types`` or the 0-based ``full_attention_layers``."""
    n = num_layers(cfg)
    notes: list[str] = []
    roles = roles_from_list(cfg, "layer_types", n, (ATTENTION, LINEAR))
    if roles is None:
        roles = roles_from_indices(cfg, "full_attention_layers", n, base=0, inside=ATTENTION, outside=LINEAR)
        if roles is None:
            raise ConfigError(
                cfg.path("full_attention_layers"), "missing, and no layer_types: the MLA layers cannot be found"
            )
        notes.append("full_attention_layers is 0-based: layer i is MLA iff i is listed, GDN otherwise")
    parts = {LINEAR: ("gdn", lambda: (gdn_state(cfg),)), ATTENTION: mla_parts(cfg)}
    return hybrid_layout(cfg, roles, parts, notes)


# -- InternS2-Preview, Mobius -----------------------------------------------------------------------


@register(
    family="linear",
    model_types=("interns2_preview", "mobius"),
    architectures=("InternS2PreviewForConditionalGeneration", "MobiusForConditionalGeneration"),
    reads=_QWEN_LINEAR_READS + ("full_attention_interval", "num_key_value_heads", "head_dim"),
)
def qwen_next_like(cfg: ConfigView) -> Layout:
    """InternS2-Preview and Mobius: mapped as Qwen3-Next (GDN + GQA), from their ``text_config``."""
    layout = qwen_gdn(cfg)
    layout.warnings.append(
        f"{cfg.model_type}: no published config class; mapped as a Qwen3-Next GDN hybrid "
        "(linear_* keys, layer_types or full_attention_interval), as engines.md describes it"
    )
    return layout


# -- Jet-Nemotron -----------------------------------------------------------------------------------


_JET_ROLES = {"attn": ATTENTION, "swa": SLIDING, "jet": LINEAR}
_JET = "efficient_attention_config.jet"


def jetblock_state(cfg: ConfigView) -> LinearAttentionState:
    """JetBlock: recurrent (H, d_k, d_v) with d_v = d_k·expand_v; dynamic conv of conv_size rows × H·d_v."""
    heads = cfg.integer(f"{_JET}.num_heads", minimum=1)
    key_dim = cfg.integer(f"{_JET}.head_dim", minimum=1)
    expand = positive_number(cfg, f"{_JET}.expand_v", 1.0)
    value_dim = key_dim * expand
    if value_dim != int(value_dim) or value_dim < 1:
        raise ConfigError(cfg.path(f"{_JET}.expand_v"), f"head_dim {key_dim} × {expand} is not a whole dimension")
    conv_rows = cfg.integer(f"{_JET}.conv_size", minimum=1)
    # The spec stores (conv_kernel − 1) rows; SGLang keeps conv_size rows of the value channels only.
    return LinearAttentionState(
        variant="jetblock", num_qk_heads=0, num_v_heads=heads, head_k_dim=key_dim, head_v_dim=int(value_dim),
        conv_kernel=conv_rows + 1,
    )


@register(
    family="linear",
    model_types=("jet_nemotron",),
    architectures=("JetNemotronForCausalLM",),
    reads=(
        "layer_types", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size",
        "efficient_attention_config.jet.{num_heads, head_dim, expand_v, conv_size}",
        "efficient_attention_config.swa.window_size",
    ),
)
def jet_nemotron(cfg: ConfigView) -> Layout:
    """Full attention, sliding attention and JetBlock layers per ``layer_types``."""
    n = num_layers(cfg)
    names = cfg.str_list("layer_types", length=n)
    if names is None:
        raise ConfigError(cfg.path("layer_types"), "missing (needed to tell attn, swa and jet layers apart)")
    roles = named_roles(cfg, "layer_types", names, _JET_ROLES)
    notes: list[str] = []
    parts: dict[str, tuple[str, PartsFactory]] = {
        ATTENTION: ("full", lambda: (attention_part(cfg),)),
        LINEAR: ("jetblock", lambda: (jetblock_state(cfg),)),
    }
    if SLIDING in roles:
        window = effective_window(cfg, window_of(cfg, "efficient_attention_config.swa.window_size"), notes)
        parts[SLIDING] = ("sliding" if window else "full", lambda: (attention_part(cfg, window=window),))
        notes.append("swa layers counted over their window; SGLang (no hybrid-SWA pool for this model) "
                     "allocates them as full attention")
    cfg.mark("efficient_attention_config")
    warnings = ["JetBlock conv state counted as conv_size rows × H·d_v (SGLang's shape; no q/k conv channels)"]
    return hybrid_layout(cfg, roles, parts, notes, warnings)


# -- MiniCPM-SALA -----------------------------------------------------------------------------------


_SALA_ROLES = {
    "minicpm4": ATTENTION, "sparse": ATTENTION, "full_attention": ATTENTION,
    "lightning": LINEAR, "lightning-attn": LINEAR, "lightning_attn": LINEAR, "lightning_attention": LINEAR,
}


def sala_lightning(cfg: ConfigView) -> LinearAttentionState:
    """One hd × hd matrix per ``lightning_nkv`` head (else ``lightning_nh``, else the attention heads)."""
    heads = cfg.optional_int("lightning_nkv", "lightning_nh", minimum=1) or num_heads(cfg)
    dim = cfg.optional_int("lightning_head_dim", minimum=1) or head_dim(cfg, num_heads(cfg))
    return lightning_state(heads, dim)


@register(
    family="linear",
    model_types=("minicpm_sala",),
    architectures=("MiniCPMSALAForCausalLM",),
    reads=(
        "mixer_types", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
        "lightning_nh", "lightning_nkv", "lightning_head_dim", "sparse_config",
    ),
)
def minicpm_sala(cfg: ConfigView) -> Layout:
    """InfLLM-v2 sparse layers (full GQA KV) and lightning layers (state only) per ``mixer_types``."""
    n = num_layers(cfg)
    names = cfg.str_list("mixer_types", length=n)
    if names is None:
        raise ConfigError(cfg.path("mixer_types"), "missing (needed to tell sparse from lightning layers)")
    roles = named_roles(cfg, "mixer_types", names, _SALA_ROLES)
    cfg.mark("sparse_config", "lightning_scale", "lightning_use_rope")
    parts = {ATTENTION: gqa_parts(cfg), LINEAR: ("lightning", lambda: (sala_lightning(cfg),))}
    warnings = [
        "InfLLM-v2 sparse layers counted as full GQA KV (n = S); the compressed block keys they also keep "
        "(sparse_config kernel_size/stride) are not counted"
    ]
    return hybrid_layout(cfg, roles, parts, warnings=warnings)


# -- Qwen4-Exp --------------------------------------------------------------------------------------


_QWEN4_ROLES = {
    "linear_attention": LINEAR, "full_attention": ATTENTION, "indexed_attention": ATTENTION,
    "qwen_sparse_attention": ATTENTION,
}
PLE = "linear+ple"


def qwen4_roles(cfg: ConfigView, n: int) -> list[str]:
    """``layer_types`` (transformers fills it from full_attention_interval when absent)."""
    names = cfg.str_list("layer_types", length=n, defaults=True)
    if names is None:
        interval = cfg.integer("full_attention_interval", default=4, minimum=1)
        return [ATTENTION if (i + 1) % interval == 0 else LINEAR for i in range(n)]
    return named_roles(cfg, "layer_types", names, _QWEN4_ROLES)


def mark_ple_layers(cfg: ConfigView, roles: list[str]) -> int:
    """Give the linear layers listed in the **1-based** ``ple_layer_ids`` the PLE role; returns the count."""
    listed = cfg.int_list("ple_layer_ids") or []
    for layer_id in sorted(set(listed)):
        if not 1 <= layer_id <= len(roles):
            raise ConfigError(cfg.path("ple_layer_ids"), f"id {layer_id} is outside 1..{len(roles)} (1-based)")
        if roles[layer_id - 1] != LINEAR:
            raise ConfigError(cfg.path("ple_layer_ids"), f"layer {layer_id} (1-based) is not a linear_attention layer")
        roles[layer_id - 1] = PLE
    return len(set(listed))


def ple_state(cfg: ConfigView) -> ShortConvState:
    """(hidden·hc_count) × ((ple_conv_kernel_size − 1)·ngram_size) values: hidden·hc·ngram channels."""
    channels = hidden_size(cfg) * cfg.integer("hc_count", minimum=1, defaults=True)
    channels *= cfg.integer("ngram_size", minimum=1, defaults=True)
    return ShortConvState(dim=channels, conv_kernel=cfg.integer("ple_conv_kernel_size", minimum=1, defaults=True))


def qsa_indexer(cfg: ConfigView, warnings: list[str]) -> IndexerKeys | None:
    """QSA keys on full layers when ``indexer_n_heads`` is set: kv_heads·head_dim values per ratio tokens."""
    if cfg.optional_int("indexer_n_heads", minimum=1) is None:
        return None
    heads = cfg.integer("indexer_kv_heads", minimum=1)
    if heads != 1:
        warnings.append(f"indexer_kv_heads = {heads}: SGLang requires 1; counted as {heads} key heads")
    cfg.mark("indexer_budget")
    warnings.append(
        "QSA indexer keys priced at the indexer dtype (default fp8 + fp32 scale per 128 values); SGLang "
        "stores them in bf16 or fp8 (--qsa-indexer-dtype); its per-request pending ring is not counted"
    )
    return IndexerKeys(
        head_dim=heads * cfg.integer("indexer_head_dim", minimum=1),
        ratio=cfg.integer("indexer_compress_ratio", minimum=2),
    )


@register(
    family="linear",
    model_types=("qwen4_exp", "qwen4_exp_text"),
    architectures=("Qwen4ExpForConditionalGeneration",),
    reads=_QWEN_LINEAR_READS + (
        "num_key_value_heads", "head_dim", "indexer_n_heads", "indexer_kv_heads", "indexer_head_dim",
        "indexer_compress_ratio", "indexer_budget", "ple_layer_ids", "hc_count", "ple_conv_kernel_size",
        "ngram_size", "hidden_size",
    ),
    fixtures={"qwen4_exp": "Qwen__Qwen4-Exp-transformers-defaults"},
)
def qwen4_exp(cfg: ConfigView) -> Layout:
    """GDN layers (+ PLE conv on ``ple_layer_ids``), GQA full layers (+ QSA indexer keys)."""
    n = num_layers(cfg)
    roles = qwen4_roles(cfg, n)
    notes: list[str] = []
    warnings: list[str] = []
    ple = mark_ple_layers(cfg, roles)
    if ple:
        notes.append(f"ple_layer_ids is 1-based: {ple} GDN layer(s) also keep a PLE conv state")
        warnings.append(
            "PLE conv state sized (hidden_size·hc_count) × ((ple_conv_kernel_size − 1)·ngram_size) at the conv "
            "dtype, as SGLang's configs/qwen4_exp.py shapes it; the n-gram token context is not counted"
        )
    cfg.mark("ple_embed_dim", "heads_per_ngram")
    indexer = qsa_indexer(cfg, warnings)
    full = gqa_parts(cfg, head_dim_defaults=True)
    if indexer is not None:
        full = ("qsa", lambda: (attention_part(cfg, head_dim_defaults=True), indexer))
    parts = {
        LINEAR: ("gdn", lambda: (gdn_state(cfg),)),
        PLE: ("gdn+ple", lambda: (gdn_state(cfg), ple_state(cfg))),
        ATTENTION: full,
    }
    return hybrid_layout(cfg, roles, parts, notes, warnings)


# -- RecurrentGemma ---------------------------------------------------------------------------------


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
    window = effective_window(cfg, window_of(cfg, "attention_window_size", "sliding_window"), notes)
    parts = {
        LINEAR: ("rglru", lambda: (rglru_state(cfg),)),
        SLIDING: ("sliding" if window else "full", lambda: (attention_part(cfg, window=window),)),
    }
    notes.append("neither SGLang nor vLLM serves RecurrentGemma: figures follow the model's own cache")
    return hybrid_layout(cfg, roles, parts, notes)


# -- ZAYA1 ------------------------------------------------------------------------------------------


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

    def with_cca(window: int | None) -> Callable[[], tuple]:
        return lambda: (attention_part(cfg, window=window, head_dim_defaults=True),) + cca_states(cfg)

    parts: dict[str, tuple[str, PartsFactory]] = {ATTENTION: ("full+cca", with_cca(None)), MLP: ("mlp", lambda: ())}
    if SLIDING in roles:
        window = effective_window(cfg, sliding_window(cfg), notes)
        if window is None:
            raise ConfigError(cfg.path("sliding_window"), "missing, but layer_types has hybrid_sliding layers")
        parts[SLIDING] = ("sliding+cca", with_cca(window))
    if MLP in roles:
        notes.append("layers that are not 'a' in zaya_layers keep no cache")
    return hybrid_layout(cfg, roles, parts, notes, warnings)


# -- Inkling ----------------------------------------------------------------------------------------


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
    window = None
    if SLIDING in roles:
        window = effective_window(cfg, window_of(cfg, "sliding_window_size", "sliding_window"), notes)
    parts: dict[str, tuple[str, PartsFactory]] = {
        ATTENTION: ("full", lambda: (attention_part(cfg, kv=kv, key_dim=dim, value_dim=dim),)
                    + inkling_conv(cfg, kv, dim, kernel)),
        SLIDING: ("sliding" if window else "full",
                  lambda: (attention_part(cfg, kv=swa_kv, key_dim=swa_dim, value_dim=swa_dim, window=window),)
                  + inkling_conv(cfg, swa_kv, swa_dim, kernel)),
    }
    if kernel is not None:
        warnings.append("Inkling short-conv state: (w − 1)·(2·K·hd + 2·hidden) values per layer at the conv dtype "
                        "(transformers' four convs; engines.md marks it optional)")
    return hybrid_layout(cfg, roles, parts, notes, warnings)


# -- MOSS-VL ----------------------------------------------------------------------------------------


@register(
    family="cross-attention",
    model_types=("moss_vl",),
    architectures=("MossVLForConditionalGeneration",),
    reads=("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "cross_attention_layers"),
)
def moss_vl(cfg: ConfigView) -> Layout:
    """Self-attention layers plus the 0-based ``cross_attention_layers``, each counted as a full layer."""
    n = num_layers(cfg)
    cross = cfg.int_list("cross_attention_layers")
    if cross is None:
        raise ConfigError(cfg.path("cross_attention_layers"), "missing (needed to find the cross-attention layers)")
    bad = [i for i in cross if i >= n]
    if bad:
        raise ConfigError(cfg.path("cross_attention_layers"), f"index {bad[0]} is past the {n} layers")
    part = attention_part(cfg)
    chosen = set(cross)
    layers = [
        LayerSpec(index=i, kind="cross-attention" if i in chosen else part.kind, parts=(part,)) for i in range(n)
    ]
    notes = [f"{len(chosen)} cross-attention layer(s) counted as full layers (n = S), as SGLang's pool does"]
    warnings = ["a cross-attention layer really caches the vision tokens of the request, not S text tokens"]
    return Layout(layers=layers, notes=notes, warnings=warnings)
