"""MiniMax: lightning-attention hybrids (MiniMax-Text-01, M1) and MiniMax-M3 sparse attention (MSA).

- MiniMax-Text-01 / M1: ``attn_type_list`` (1 = softmax full attention, 0 = lightning) or ``layer_types``;
  a lightning layer keeps one head_dim² matrix per head and no conv.
- MiniMax-M3 (MSA): every layer keeps its main GQA KV; sparse layers add an index cache.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import FullAttention, LayerSpec, Layout, LinearAttentionState

from hfkv.mappings.readers.attention_keys import attention_part, head_dim, num_heads, num_layers
from hfkv.mappings.readers.layer_builders import gqa_parts, hybrid_layout, mtp_note
from hfkv.mappings.readers.layer_patterns import ATTENTION, LINEAR, flag_list, layer_types_or_default
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import lightning_state


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
        roles = layer_types_or_default(
            cfg, n, notes, "no attn_type_list or layer_types: the transformers default pattern applies"
        )
    if roles is None:
        raise ConfigError(cfg.path("attn_type_list"), "missing (needed to tell lightning layers from softmax ones)")
    cfg.mark("block_size")
    parts = {LINEAR: ("lightning", lambda: (lightning_from_heads(cfg),)), ATTENTION: gqa_parts(cfg, windowed=True)}
    return hybrid_layout(cfg, roles, parts, notes)


_MSA = "sparse_attention_config"


def _msa_sparse_layers(cfg: ConfigView, n: int) -> list[bool]:
    """Which layers are sparse: transformers' ``layer_types`` ("minimax_m3_sparse") when written,
    else the Hub form ``sparse_attention_config.sparse_attention_freq`` (0 = dense, else sparse)."""
    types = cfg.str_list("layer_types", length=n)
    if types is not None:
        unknown = sorted(set(types) - {"minimax_m3_sparse", "full_attention"})
        if unknown:
            raise ConfigError(cfg.path("layer_types"), f"unknown layer type {unknown[0]!r}")
        return [t == "minimax_m3_sparse" for t in types]
    msa = cfg.value(_MSA)
    if msa is None:
        return [False] * n
    if not isinstance(msa, dict):
        raise ConfigError(cfg.path(_MSA), f"expected an object, got {type(msa).__name__}")
    if not cfg.boolean(f"{_MSA}.use_sparse_attention", default=True):
        return [False] * n
    if cfg.value(f"{_MSA}.sparse_attention_freq") is None:
        raise ConfigError(cfg.path(f"{_MSA}.sparse_attention_freq"), "missing: cannot tell which layers are sparse")
    return flag_list(cfg, f"{_MSA}.sparse_attention_freq", n, default=False)


def _msa_index_dim(cfg: ConfigView) -> int:
    found = cfg.optional_int(f"{_MSA}.sparse_index_dim", minimum=1)
    return found if found is not None else cfg.integer("index_head_dim", default=128, minimum=1)


@register(
    family="sparse",
    model_types=("minimax_m3_vl", "minimax_m3_vl_text", "minimax_m3"),
    architectures=("MiniMaxM3SparseForConditionalGeneration", "MiniMaxM3SparseForCausalLM"),
    reads=(
        "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "layer_types",
        "sparse_attention_config.{use_sparse_attention, sparse_attention_freq, sparse_index_dim, "
        "sparse_disable_index_value, sparse_topk_blocks, sparse_block_size}", "index_head_dim", "num_mtp_modules",
    ),
    fixtures={"minimax_m3_vl": "nvidia__MiniMax-M3-NVFP4"},
)
def minimax_m3(cfg: ConfigView) -> Layout:
    """MiniMax-M3 (MSA): every layer keeps its main GQA KV; a sparse layer adds an index cache.

    Convention for the index cache (SGLang's pool: ``(2·n_sparse_kv + n_sparse_konly)·d_I·b`` per
    token): one part ``FullAttention(kv_heads=1, head_dim=d_I, v_head_dim=0)`` when the layer's
    ``sparse_disable_index_value`` is nonzero (the index stores K only: d_I·b), and ``v_head_dim=d_I``
    when it is 0 (K and V: 2·d_I·b). The index has one head (transformers' indexer projects K to a
    single ``index_head_dim`` vector; ``sparse_num_index_heads`` are query heads only), so it is
    replicated on every TP rank, and it is stored at the KV dtype (SGLang: the model dtype, fp8 on
    SM90 with an fp8 KV cache). A missing ``sparse_disable_index_value`` means K only, as in
    transformers, which has no index-value path.
    """
    n = num_layers(cfg)
    sparse = _msa_sparse_layers(cfg, n)
    k_only = flag_list(cfg, f"{_MSA}.sparse_disable_index_value", n, default=True)
    index_dim = _msa_index_dim(cfg)
    cfg.mark(f"{_MSA}.sparse_num_index_heads", f"{_MSA}.sparse_score_type", f"{_MSA}.sparse_init_block",
             f"{_MSA}.sparse_local_block", "index_n_heads", "sparse_attention_config")
    main = attention_part(cfg)
    index_kv = FullAttention(kv_heads=1, head_dim=index_dim)
    index_k = FullAttention(kv_heads=1, head_dim=index_dim, v_head_dim=0)
    layers = []
    for i in range(n):
        if sparse[i]:
            layers.append(LayerSpec(index=i, kind="msa-sparse", parts=(main, index_k if k_only[i] else index_kv)))
        else:
            layers.append(LayerSpec(index=i, kind=main.kind, parts=(main,)))
    notes = []
    n_sparse = sum(sparse)
    if n_sparse:
        n_konly = sum(1 for s, k in zip(sparse, k_only) if s and k)
        notes.append(
            f"{n_sparse} sparse layer(s) add an index cache of one {index_dim}-wide head "
            f"({n_konly} store K only, {n_sparse - n_konly} K and V), at the KV dtype"
        )
        blocks = cfg.optional_int(f"{_MSA}.sparse_topk_blocks", "index_topk_blocks", minimum=1)
        size = cfg.optional_int(f"{_MSA}.sparse_block_size", "index_block_size", minimum=1)
        if blocks and size:
            notes.append(
                f"decode reads count the whole main KV of sparse layers; MSA reads only the top "
                f"{blocks} blocks of {size} tokens (plus local blocks) of it"
            )
    mtp = cfg.optional_int("num_mtp_modules")
    if mtp:
        notes.append(f"{mtp} MTP module(s) left out: they are not part of the target model")
    return Layout(layers=layers, notes=notes + mtp_note(cfg))
