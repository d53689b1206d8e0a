"""Weights per GPU for a parallel layout, and a parameter count from the config when nothing better is known.

Everything here is an **estimate** and says so: a config names shapes, not tensors. ``count``
sums the usual transformer matrices (embeddings, attention or MLA projections, gated MLPs, routed
and shared experts, routers); norms, biases, indexers, MTP heads and vision towers are left out,
and non-attention mixers (Mamba, linear attention) are priced as attention. Exact weights come from
the Hub's safetensors metadata or ``--weights-bytes``; the count is used for the split between
routed experts and the rest (which no metadata gives) and, scaled by the dtype, when weights are
unknown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from hfkv.engines.layout import Layout, expert_count

# Bytes per parameter of the checkpoint's dtype (torch_dtype / dtype) and of quantised linears.
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1}
QUANT_BYTES = {"fp8": 1, "fbgemm_fp8": 1, "compressed-tensors": 1, "awq": 0.5, "gptq": 0.5, "mxfp4": 0.5}


@dataclass(frozen=True)
class ParamCount:
    """Parameters by role, for the whole model: ``embedding`` (input + output), ``attention``, ``dense``
    (dense MLPs, shared experts, routers) and ``experts`` (routed experts)."""

    embedding: int
    attention: int
    dense: int
    experts: int

    @property
    def total(self) -> int:
        return self.embedding + self.attention + self.dense + self.experts


def _int(config: dict, *keys: str, default: int = 0) -> int:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return default


def attention_params(c: dict, hidden: int) -> int:
    """One layer's attention projections: MLA (q/kv LoRA) when the config has ``kv_lora_rank``, else GQA."""
    heads = _int(c, "num_attention_heads", default=1)
    if _int(c, "kv_lora_rank"):
        rank, rope = _int(c, "kv_lora_rank"), _int(c, "qk_rope_head_dim")
        nope, v = _int(c, "qk_nope_head_dim"), _int(c, "v_head_dim")
        q_rank = _int(c, "q_lora_rank")
        q = hidden * q_rank + q_rank * heads * (nope + rope) if q_rank else hidden * heads * (nope + rope)
        return q + hidden * (rank + rope) + rank * heads * (nope + v) + heads * v * hidden
    head_dim = _int(c, "head_dim", default=hidden // heads)
    kv = _int(c, "num_key_value_heads", default=heads)
    return 2 * hidden * heads * head_dim + 2 * hidden * kv * head_dim


def moe_layers(c: dict, layers: int) -> int:
    """Layers with routed experts: all but ``first_k_dense_replace``, or every ``decoder_sparse_step``-th."""
    if not expert_count(c):
        return 0
    if "first_k_dense_replace" in c:
        return max(layers - _int(c, "first_k_dense_replace"), 0)
    step = _int(c, "decoder_sparse_step", "moe_layer_freq", default=1)
    return layers // step


def count(config: dict) -> ParamCount | None:
    """The estimated parameter count of ``config`` (the text config), None without the basic shapes."""
    hidden, layers, vocab = _int(config, "hidden_size"), _int(config, "num_hidden_layers"), _int(config, "vocab_size")
    if not (hidden and layers and vocab):
        return None
    tied = config.get("tie_word_embeddings") is True
    embedding = vocab * hidden * (1 if tied else 2)
    experts, sparse = expert_count(config), moe_layers(config, layers)
    expert_i = _int(config, "moe_intermediate_size", "intermediate_size")
    shared_i = _int(config, "shared_expert_intermediate_size") or _int(config, "n_shared_experts") * expert_i
    dense_i = _int(config, "intermediate_size")
    dense = (layers - sparse) * 3 * hidden * dense_i + sparse * (3 * hidden * shared_i + hidden * experts)
    return ParamCount(embedding=embedding, attention=layers * attention_params(config, hidden), dense=dense,
                      experts=sparse * experts * 3 * hidden * expert_i)


def bytes_per_param(config: dict) -> tuple[float, str]:
    """(bytes per linear-layer parameter, where it comes from): the quantisation method, else the dtype."""
    quant = config.get("quantization_config") or {}
    method = str(quant.get("quant_method") or "").lower() if isinstance(quant, dict) else ""
    if method in QUANT_BYTES:
        return QUANT_BYTES[method], f"quantization_config {method}"
    dtype = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16").removeprefix("torch.")
    return DTYPE_BYTES.get(dtype, 2), f"dtype {dtype}"


def estimate_bytes(config: dict) -> tuple[int, str] | None:
    """(weights bytes, how it was estimated) from the parameter count; embeddings at 2 B under quantisation."""
    params = count(config)
    if params is None:
        return None
    per, source = bytes_per_param(config)
    embedding_bytes = 2 if per < 2 else per
    total = math.ceil(params.embedding * embedding_bytes + (params.attention + params.dense + params.experts) * per)
    how = (f"estimated from the config's shapes: {params.total / 1e9:.1f}B parameters ({params.experts / 1e9:.1f}B "
           f"in routed experts) × {per:g} B ({source}); norms, biases, MTP heads and vision towers not counted")
    return total, how


def shares(config: dict) -> tuple[Fraction, Fraction]:
    """(routed-expert share, attention share) of the parameters, exact; 0 when the config gives no count."""
    params = count(config)
    if not params or not params.total:
        return Fraction(0), Fraction(0)
    return Fraction(params.experts, params.total), Fraction(params.attention, params.total)


def per_gpu(weights_bytes: int, layout: Layout, config: dict) -> tuple[int, str]:
    """(weights per GPU of one stage, the split used): routed experts ÷ the expert shards, attention ÷
    attention TP, the rest (embeddings, dense MLPs, shared experts) ÷ TP, all ÷ PP. The shares come
    from the parameter count; with one divisor for everything the split is exact: ceil(w / (TP·PP))."""
    if layout.expert_shards == layout.attention_tp == layout.tp:
        return -(-int(weights_bytes) // (layout.tp * layout.pp)), "weights per GPU = weights / (TP × PP)"
    expert_share, attention_share = shares(config)
    experts, attention = int(weights_bytes) * expert_share, int(weights_bytes) * attention_share
    rest = weights_bytes - experts - attention
    per = math.ceil((experts / layout.expert_shards + attention / layout.attention_tp + rest / layout.tp) / layout.pp)
    how = (f"weights per GPU = (routed experts {float(expert_share):.1%} ÷ {layout.expert_shards} + attention "
           f"{float(attention_share):.1%} ÷ {layout.attention_tp} + the rest ÷ {layout.tp}) ÷ PP {layout.pp}: an estimate "
           "(shares from the config's shapes; replicated norms and embeddings on the first/last stage not placed)")
    return per, how


def active_bytes(weights_bytes: int, config: dict) -> tuple[int, str] | None:
    """(weights one decode step reads, how) for a MoE config: every non-expert weight plus
    ``num_experts_per_tok / experts`` of the routed ones; None for a dense model."""
    experts, top_k = expert_count(config), config.get("num_experts_per_tok")
    share, _ = shares(config)
    if not experts or not isinstance(top_k, int) or not share:
        return None
    active = math.ceil(weights_bytes * (1 - share + share * top_k / experts))
    return active, (f"decode reads the non-expert weights and {top_k} of {experts} routed experts per token "
                    f"(an estimate; pass weights_read_bytes for the measured figure)")
