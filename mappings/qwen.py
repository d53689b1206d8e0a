"""Qwen: Qwen2/Qwen3 (dense and MoE), Qwen2-MoE, the GDN hybrids (Qwen3-Next, Qwen3.5) and Qwen4-Exp.

- Qwen2/Qwen3: a window only with ``use_sliding_window``; then layers i ≥ ``max_window_layers`` slide.
- Qwen2-MoE: with ``use_sliding_window``, odd-numbered (1-based) layers below ``max_window_layers`` slide.
- Qwen3-Next / Qwen3.5: GDN layers; ``layer_types`` when present (vLLM), else full iff
  (i+1) % ``full_attention_interval`` == 0 (0-based i).
- Qwen4-Exp: ``layer_types`` (``linear_attention`` vs ``full_attention`` / ``indexed_attention`` /
  ``qwen_sparse_attention``), else full iff (i+1) % 4 == 0. Full layers are GQA plus, when
  ``indexer_n_heads`` is set, QSA indexer keys of ``indexer_kv_heads``·``indexer_head_dim`` values per
  ``indexer_compress_ratio`` tokens. Layers in the **1-based** ``ple_layer_ids`` add a PLE conv state of
  (hidden·``hc_count``) × ((``ple_conv_kernel_size`` − 1)·``ngram_size``) values.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import IndexerKeys, Layout, ShortConvState

from hfkv.mappings.readers.attention_keys import GQA_READS, attention_part, hidden_size, num_layers
from hfkv.mappings.readers.layer_builders import gqa_parts, hybrid_layout, pattern_layout
from hfkv.mappings.readers.layer_patterns import (
    ATTENTION,
    ATTENTION_OR_LINEAR,
    LINEAR,
    last_of_every,
    named_roles,
    roles_from_list,
    roles_from_rule,
)
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import GDN_READS, QWEN_LINEAR_READS, gdn_state


@register(
    family="dense",
    architectures=(
        "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "MiMoForCausalLM",
        "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration",
        "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
        "Qwen2AudioForConditionalGeneration", "Qwen2_5OmniForConditionalGeneration", "Qwen2_5OmniModel",
        "Qwen3OmniMoeForConditionalGeneration", "Qwen3ASRForConditionalGeneration",
        "Qwen3ASRRealtimeGeneration", "MiniCPMV", "MiniCPMO", "LlavaQwenForCausalLM", "Alpamayo2Super",
        "Cosmos3ForConditionalGeneration", "MiMoV2ASRForCausalLM",
    ),
    model_types=(
        "qwen2", "qwen3", "qwen3_moe", "qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text",
        "qwen3_vl", "qwen3_vl_text", "qwen3_vl_moe", "qwen3_vl_moe_text", "qwen2_audio", "qwen2_5_omni",
        "qwen2_5_omni_thinker", "qwen2_5_omni_text", "qwen3_omni_moe", "qwen3_omni_moe_thinker",
        "qwen3_omni_moe_text", "qwen3_asr", "qwen3_asr_thinker", "minicpmv", "minicpmo", "mimo",
    ),
    reads=GQA_READS + ("use_sliding_window", "max_window_layers"),
    fixtures={
        "qwen2": "Qwen__Qwen2-7B-Instruct", "qwen3": "Qwen__Qwen3-8B", "qwen3_moe": "Qwen__Qwen3-30B-A3B",
        "qwen2_vl": "Qwen__Qwen2-VL-transformers-defaults",
        "qwen2_5_vl": "Qwen__Qwen2.5-VL-transformers-defaults",
        "qwen3_vl": "Qwen__Qwen3-VL-transformers-defaults",
        "qwen3_vl_moe": "Qwen__Qwen3-VL-MoE-transformers-defaults",
        "qwen2_5_omni": "Qwen__Qwen2.5-Omni-transformers-defaults",
        "qwen3_asr": "Qwen__Qwen3-ASR-transformers-defaults",
        "minicpmv": "openbmb__MiniCPM-V-2_6",
    },
)
def qwen2(cfg: ConfigView) -> Layout:
    """Qwen2/Qwen3: a window only with ``use_sliding_window``; then layers i ≥ ``max_window_layers`` slide."""
    first = cfg.integer("max_window_layers", default=0)
    return pattern_layout(cfg, default_window=None, default_rule=lambda i, n: i >= first)


@register(
    family="dense",
    architectures=("Qwen2MoeForCausalLM",),
    model_types=("qwen2_moe",),
    reads=GQA_READS + ("use_sliding_window", "max_window_layers"),
)
def qwen2_moe(cfg: ConfigView) -> Layout:
    """Qwen2-MoE: with ``use_sliding_window``, odd-numbered (1-based) layers below ``max_window_layers`` slide."""
    below = cfg.integer("max_window_layers", default=0)
    return pattern_layout(cfg, default_window=None, default_rule=lambda i, n: (i + 1) % 2 == 1 and i < below)


def interval_roles(cfg: ConfigView, n: int) -> tuple[list[str], list[str]]:
    """Qwen3-Next / Qwen3.5 roles and warnings: ``layer_types`` first, else the interval rule."""
    interval = cfg.integer("full_attention_interval", default=4, minimum=1)
    by_interval = roles_from_rule(n, last_of_every(interval))
    roles = roles_from_list(cfg, "layer_types", n, ATTENTION_OR_LINEAR)
    if roles is None:
        return by_interval, []
    if roles != by_interval and cfg.present("full_attention_interval"):
        return roles, [
            "layer_types and full_attention_interval disagree: layer_types is used (vLLM); "
            "SGLang follows the interval only"
        ]
    return roles, []


@register(
    family="linear",
    model_types=("qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text"),
    architectures=(
        "Qwen3NextForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration",
    ),
    reads=GDN_READS + ("full_attention_interval", "mtp_num_hidden_layers", "num_nextn_predict_layers"),
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
    architectures=("Qwen4ExpForConditionalGeneration", "Qwen4ExpForCausalLM"),
    reads=QWEN_LINEAR_READS + (
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
