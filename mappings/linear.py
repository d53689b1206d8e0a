"""Linear-attention hybrids: GDN (Qwen3-Next, Qwen3.5, OLMo-Hybrid), KDA (Kimi-Linear, Kimi-K3,
GLM-5.3-Flash, Ling-V3) and lightning attention (MiniMax-Text-01/M1, Ling-2.5), mixed with full layers.

A linear layer keeps no per-token entries, only a ``LinearAttentionState``: one H_k × H_v matrix per
value head (recurrent dtype) plus the short conv's last w − 1 inputs (conv dtype); lightning attention
has no conv. For KDA, N_qk = N_v = ``num_heads`` and H_k = H_v = ``head_dim``. Tensor parallelism
splits the heads. Full layers are GQA (Qwen, OLMo, MiniMax) or MLA (Kimi, GLM-5.3, Bailing; GLM-5.3
adds a DSA indexer when ``index_topk`` is set).

Layer patterns and their index bases (0-based layer index i):

- Qwen3-Next / Qwen3.5: ``layer_types`` when present (vLLM), else full iff (i+1) % ``full_attention_interval`` == 0;
- OLMo-Hybrid: ``layer_types`` (transformers default: full iff i % 4 == 3);
- Kimi-Linear / Kimi-K3: ``linear_attn_config.kda_layers`` is **1-based** (KDA iff i+1 is listed);
- GLM-5.3-Flash: ``linear_attn_config.kda_layers`` is **0-based**, else ``layer_types``, else KDA iff i % 4 != 3;
- MiniMax: ``attn_type_list`` (1 = softmax full attention, 0 = lightning) or ``layer_types``;
- Bailing hybrid: ``layer_group_size`` int (full iff (i+1) % g == 0) or per-layer list (1 = linear);
  KDA when ``short_conv_kernel_size`` is written, else lightning.

MTP layers are left out (noted).
"""

from __future__ import annotations

from typing import Callable

from hfkv.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.specs import IndexerKeys, LinearAttentionState, Layout

from ._state_keys import (
    ATTENTION,
    LINEAR,
    build_layers,
    count_note,
    last_of_every,
    mtp_notes,
    roles_from_indices,
    roles_from_list,
    roles_from_rule,
    state_dtype_note,
)
from .common import attention_part, effective_window, head_dim, mla_latent, num_heads, num_layers, sliding_window
from .registry import register

_ROLES = (ATTENTION, LINEAR)
PartsFactory = Callable[[], tuple]


# -- state readers ----------------------------------------------------------------------------------


def gdn_state(cfg: ConfigView) -> LinearAttentionState:
    """Gated DeltaNet: ``linear_num_{key,value}_heads``, ``linear_{key,value}_head_dim``, ``linear_conv_kernel_dim``."""
    return LinearAttentionState(
        variant="gdn",
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


# -- shared layout ----------------------------------------------------------------------------------


def hybrid_layout(
    cfg: ConfigView,
    roles: list[str],
    parts: dict[str, tuple[str, PartsFactory]],
    notes: list[str] | None = None,
    warnings: list[str] | None = None,
) -> Layout:
    """Build the layers from per-layer roles and say what was found (counts, state dtype, MTP)."""
    layers = build_layers(roles, parts)
    return Layout(
        layers=layers,
        notes=[count_note(layers)] + list(notes or []) + state_dtype_note(cfg) + mtp_notes(cfg),
        warnings=list(warnings or []),
    )


def gqa_parts(cfg: ConfigView, *, head_dim_defaults: bool = False, windowed: bool = False) -> tuple[str, PartsFactory]:
    """Standard attention for the full layers; ``windowed`` honours ``sliding_window`` (vLLM applies it)."""

    def make() -> tuple:
        window = None
        if windowed:
            window = effective_window(cfg, sliding_window(cfg), [])
        return (attention_part(cfg, window=window, head_dim_defaults=head_dim_defaults),)

    cfg.mark("use_sliding_window", "sliding_window")
    return ("full", make)


def mla_parts(cfg: ConfigView) -> tuple[str, PartsFactory]:
    return ("mla", lambda: (mla_latent(cfg),))


# -- GDN: Qwen3-Next, Qwen3.5, OLMo-Hybrid ----------------------------------------------------------


def interval_roles(cfg: ConfigView, n: int) -> tuple[list[str], list[str]]:
    """Qwen3-Next / Qwen3.5 roles and warnings: ``layer_types`` first, else the interval rule."""
    interval = cfg.integer("full_attention_interval", default=4, minimum=1)
    by_interval = roles_from_rule(n, last_of_every(interval))
    roles = roles_from_list(cfg, "layer_types", n, _ROLES)
    if roles is None:
        return by_interval, []
    if roles != by_interval and cfg.present("full_attention_interval"):
        return roles, [
            "layer_types and full_attention_interval disagree: layer_types is used (vLLM); "
            "SGLang follows the interval only"
        ]
    return roles, []


_GDN_READS = (
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "num_key_value_heads", "head_dim", "num_attention_heads", "num_hidden_layers",
    "layer_types", "mamba_ssm_dtype",
)


@register(
    family="linear",
    model_types=("qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text"),
    architectures=("Qwen3NextForCausalLM",),
    reads=_GDN_READS + ("full_attention_interval", "mtp_num_hidden_layers", "num_nextn_predict_layers"),
    fixtures={
        "qwen3_next": "Qwen__Qwen3-Next-80B-A3B-Thinking",
        "qwen3_5_moe": "Qwen__Qwen3.5-35B-A3B",
        "qwen3_5": "Qwen__Qwen3.5-27B-transformers-defaults",
    },
)
def qwen_gdn(cfg: ConfigView) -> Layout:
    """GDN layers with full GQA layers every ``full_attention_interval`` (or as ``layer_types`` says)."""
    n = num_layers(cfg)
    roles, warnings = interval_roles(cfg, n)
    parts = {LINEAR: ("gdn", lambda: (gdn_state(cfg),)), ATTENTION: gqa_parts(cfg, head_dim_defaults=True)}
    return hybrid_layout(cfg, roles, parts, warnings=warnings)


@register(
    family="linear",
    model_types=("olmo_hybrid",),
    architectures=("OlmoHybridForCausalLM",),
    reads=_GDN_READS,
    fixtures={"olmo_hybrid": "allenai__Olmo-Hybrid-7B-transformers-defaults"},
)
def olmo_hybrid(cfg: ConfigView) -> Layout:
    """GDN + full GQA per ``layer_types`` (transformers default: full iff i % 4 == 3)."""
    n = num_layers(cfg)
    notes = []
    if not cfg.present("layer_types"):
        notes.append("no layer_types in config: the transformers default pattern applies (full iff i % 4 == 3)")
    roles = roles_from_list(cfg, "layer_types", n, _ROLES, defaults=True)
    if roles is None:
        raise ConfigError(cfg.path("layer_types"), "missing (needed to tell GDN layers from full ones)")
    parts = {LINEAR: ("gdn", lambda: (gdn_state(cfg),)), ATTENTION: gqa_parts(cfg)}
    return hybrid_layout(cfg, roles, parts, notes)


# -- KDA: Kimi-Linear, Kimi-K3, GLM-5.3-Flash -------------------------------------------------------


def kda_list_roles(cfg: ConfigView, n: int, base: int) -> list[str] | None:
    """Roles from ``linear_attn_config.kda_layers`` (KDA where listed, full elsewhere), ``base``-based."""
    return roles_from_indices(cfg, "linear_attn_config.kda_layers", n, base=base, inside=LINEAR, outside=ATTENTION)


def full_list_warnings(cfg: ConfigView, roles: list[str], base: int) -> list[str]:
    """Cross-check ``linear_attn_config.full_attn_layers`` against the KDA list."""
    listed = cfg.int_list("linear_attn_config.full_attn_layers")
    if listed is None:
        return []
    full = {v - base for v in listed if 0 <= v - base < len(roles)}
    wrong = [i for i, role in enumerate(roles) if (role == ATTENTION) != (i in full)]
    if wrong:
        return [f"linear_attn_config.full_attn_layers disagrees with kda_layers at layer(s) "
                f"{wrong[:8]} (0-based): kda_layers is used"]
    return []


@register(
    family="linear",
    model_types=("kimi_linear", "kimi_k3"),
    architectures=("KimiLinearForCausalLM", "KimiK3ForConditionalGeneration", "KimiK3LinearForCausalLM"),
    reads=(
        "linear_attn_config.kda_layers", "linear_attn_config.full_attn_layers", "linear_attn_config.num_heads",
        "linear_attn_config.head_dim", "linear_attn_config.short_conv_kernel_size", "layer_types",
        "kv_lora_rank", "qk_rope_head_dim", "num_hidden_layers", "num_nextn_predict_layers",
    ),
    fixtures={
        "kimi_k3": "moonshotai__Kimi-K3",
        "kimi_linear": "moonshotai__Kimi-Linear-48B-A3B-Instruct-transformers-defaults",
    },
)
def kimi_linear(cfg: ConfigView) -> Layout:
    """KDA where the **1-based** ``kda_layers`` says, MLA elsewhere."""
    n = num_layers(cfg)
    notes, warnings = [], []
    roles = kda_list_roles(cfg, n, base=1)
    if roles is not None:
        notes.append("linear_attn_config.kda_layers is 1-based: layer i is KDA iff i + 1 is listed")
        warnings += full_list_warnings(cfg, roles, base=1)
    else:
        if not cfg.present("layer_types"):
            notes.append("no kda_layers or layer_types: the transformers default pattern applies")
        roles = roles_from_list(cfg, "layer_types", n, _ROLES, defaults=True)
        if roles is None:
            raise ConfigError(cfg.path("linear_attn_config.kda_layers"), "missing (needed to find the KDA layers)")
    cfg.mark("linear_attn_config")
    parts = {LINEAR: ("kda", lambda: (kda_from_linear_config(cfg),)), ATTENTION: mla_parts(cfg)}
    return hybrid_layout(cfg, roles, parts, notes, warnings)


def dsa_full_parts(cfg: ConfigView, roles: list[str], notes: list[str]) -> dict[str, tuple[str, PartsFactory]]:
    """GLM-5.3's full layers: MLA, plus DSA indexer keys when ``index_topk`` is written.

    Only an explicit ``indexer_types`` list marks layers that reuse another layer's top-k (no keys);
    ``index_kpool`` = k keeps one indexer key per k tokens (SGLang divides the indexer cell by k).
    Shared layers get the role ``"attention-shared"`` (set in ``roles`` in place).
    """
    if not cfg.present("index_topk"):
        return {ATTENTION: mla_parts(cfg)}
    topk = cfg.integer("index_topk", minimum=1)
    kpool = cfg.integer("index_kpool", default=1, minimum=1)
    cfg.mark("index_n_heads", "index_kpool_always_select_tail")

    def latent() -> tuple:
        return (mla_latent(cfg, topk=topk),)

    def with_indexer() -> tuple:
        return latent() + (IndexerKeys(head_dim=cfg.integer("index_head_dim", default=128, minimum=1), ratio=kpool),)

    types = cfg.str_list("indexer_types")
    for i, role in enumerate(roles):
        if role == ATTENTION and types is not None and i < len(types) and types[i] == "shared":
            roles[i] = "attention-shared"
    if types is None:
        notes.append("no indexer_types: every DSA layer keeps its own indexer keys")
    if kpool > 1:
        notes.append(f"index_kpool = {kpool}: one indexer key per {kpool} tokens")
    return {ATTENTION: ("dsa", with_indexer), "attention-shared": ("dsa-shared-topk", latent)}


@register(
    family="linear",
    model_types=("glm5_next", "glm5_next_text"),
    architectures=("Glm5NextForConditionalGeneration", "Glm5NextForCausalLM"),
    reads=(
        "linear_attn_config.kda_layers", "layer_types", "linear_num_heads", "linear_head_dim",
        "linear_conv_kernel_dim", "kv_lora_rank", "qk_rope_head_dim", "index_topk", "index_head_dim",
        "index_kpool", "indexer_types", "num_hidden_layers", "num_nextn_predict_layers",
    ),
    fixtures={"glm5_next": "zai-org__GLM-5.3-Flash-transformers-defaults"},
)
def glm5_next(cfg: ConfigView) -> Layout:
    """KDA where the **0-based** ``kda_layers`` (or ``layer_types``) says, else i % 4 != 3; MLA(+DSA) elsewhere."""
    n = num_layers(cfg)
    notes: list[str] = []
    roles = kda_list_roles(cfg, n, base=0)
    if roles is not None:
        notes.append("linear_attn_config.kda_layers is 0-based here: layer i is KDA iff i is listed")
    else:
        roles = roles_from_list(cfg, "layer_types", n, _ROLES)
    if roles is None:
        roles = roles_from_rule(n, lambda i: i % 4 == 3)
        notes.append("no kda_layers or layer_types: the default pattern applies (KDA iff i % 4 != 3)")
    cfg.mark("linear_attn_config")
    parts = dsa_full_parts(cfg, roles, notes)
    parts[LINEAR] = ("kda", lambda: (kda_from_linear_config(cfg),))
    return hybrid_layout(cfg, roles, parts, notes)


# -- lightning: MiniMax, and Bailing (lightning or KDA) ---------------------------------------------


def attn_type_roles(cfg: ConfigView, n: int) -> list[str] | None:
    """MiniMax's ``attn_type_list``: 1 = softmax (full) attention, 0 = lightning."""
    types = cfg.int_list("attn_type_list", length=n)
    if types is None:
        return None
    bad = [t for t in types if t not in (0, 1)]
    if bad:
        raise ConfigError(cfg.path("attn_type_list"), f"expected 0 (lightning) or 1 (softmax), got {bad[0]}")
    return [ATTENTION if t == 1 else LINEAR for t in types]


def lightning_from_heads(cfg: ConfigView) -> LinearAttentionState:
    heads = num_heads(cfg)
    return lightning_state(heads, head_dim(cfg, heads))


@register(
    family="linear",
    model_types=("minimax", "minimax_m1", "minimax_text_01"),
    architectures=("MiniMaxM1ForCausalLM", "MiniMaxText01ForCausalLM", "MiniMaxForCausalLM"),
    reads=(
        "attn_type_list", "layer_types", "num_attention_heads", "num_key_value_heads", "head_dim",
        "hidden_size", "num_hidden_layers", "sliding_window",
    ),
    fixtures={
        "minimax_m1": "MiniMaxAI__MiniMax-M1-80k",
        "minimax": "MiniMaxAI__MiniMax-Text-01-hf-transformers-defaults",
    },
)
def minimax(cfg: ConfigView) -> Layout:
    """Lightning layers (state N·H² per layer, no conv) and softmax GQA layers per ``attn_type_list``."""
    n = num_layers(cfg)
    notes = []
    roles = attn_type_roles(cfg, n)
    if roles is None:
        if not cfg.present("layer_types"):
            notes.append("no attn_type_list or layer_types: the transformers default pattern applies")
        roles = roles_from_list(cfg, "layer_types", n, _ROLES, defaults=True)
    if roles is None:
        raise ConfigError(cfg.path("attn_type_list"), "missing (needed to tell lightning layers from softmax ones)")
    cfg.mark("block_size")
    parts = {LINEAR: ("lightning", lambda: (lightning_from_heads(cfg),)), ATTENTION: gqa_parts(cfg, windowed=True)}
    return hybrid_layout(cfg, roles, parts, notes)


def group_size_roles(cfg: ConfigView, n: int, warnings: list[str]) -> list[str]:
    """Bailing's ``layer_group_size``: int g → full iff (i+1) % g == 0; a per-layer list → 1 = linear."""
    raw = cfg.value("layer_group_size", defaults=True)
    if isinstance(raw, list):
        flags = cfg.int_list("layer_group_size", length=n) or []
        return [LINEAR if flag == 1 else ATTENTION for flag in flags]
    group = cfg.integer("layer_group_size", default=6, minimum=1, defaults=True)
    if n % group:
        warnings.append(
            f"{n} layers is not a multiple of layer_group_size {group}: vLLM (Ling-V3) also makes the last "
            f"{n % group} layer(s) full; hfkv follows the (i+1) % g rule"
        )
    return roles_from_rule(n, last_of_every(group))


def bailing_linear_state(cfg: ConfigView, notes: list[str]) -> tuple[str, PartsFactory]:
    """KDA (Ling-V3) when ``short_conv_kernel_size`` is written, else lightning; N = heads, H = ``head_dim``."""
    heads = num_heads(cfg)
    # Read the written head_dim first: the transformers class rewrites head_dim to the MLA rope dim.
    dim = cfg.optional_int("head_dim", minimum=1) or cfg.integer("linear_head_dim", minimum=1, defaults=True)
    if cfg.present("short_conv_kernel_size"):
        kernel = cfg.integer("short_conv_kernel_size", minimum=1)
        return ("kda", lambda: (kda_state(heads, dim, kernel),))
    notes.append("no short_conv_kernel_size: linear layers are lightning attention (no conv state)")
    return ("lightning", lambda: (lightning_state(heads, dim),))


@register(
    family="linear",
    model_types=("bailing_hybrid",),
    architectures=("BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM", "BailingHybridForCausalLM"),
    reads=(
        "layer_group_size", "layer_types", "short_conv_kernel_size", "num_attention_heads", "head_dim",
        "kv_lora_rank", "qk_rope_head_dim", "num_hidden_layers", "num_mtp_layers", "num_nextn_predict_layers",
    ),
    fixtures={"bailing_hybrid": "inclusionAI__Ling-3.0-Flash-transformers-defaults"},
)
def bailing_hybrid(cfg: ConfigView) -> Layout:
    """Linear layers (KDA or lightning) and MLA full layers per ``layer_types`` or ``layer_group_size``."""
    n = num_layers(cfg)
    notes: list[str] = []
    warnings: list[str] = []
    roles = roles_from_list(cfg, "layer_types", n, _ROLES)
    if roles is None:
        roles = group_size_roles(cfg, n, warnings)
    cfg.mark("use_mla_nope")
    parts = {LINEAR: bailing_linear_state(cfg, notes), ATTENTION: mla_parts(cfg)}
    return hybrid_layout(cfg, roles, parts, notes, warnings)
