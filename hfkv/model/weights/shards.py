"""What one tensor-parallel rank holds beyond an even split of the whole model: padded expert slices,
and tensors TP does not split as many ways as it has ranks.

An engine that pads a quantised expert (MXFP4 under vLLM's Marlin backend: ``loaded.mxfp4_marlin_shape``)
pads each TP shard's own slice. vLLM's ``FusedMoE`` gives every rank ``intermediate_size / tp`` columns
of each expert when the experts are not spread by EP; ``Mxfp4MoEMethod.maybe_roundup_sizes`` then rounds
that per-rank width up (``mxfp4_round_up_hidden_size_and_intermediate_size``, vllm 0.34.0
model_executor/layers/fused_moe/oracle/mxfp4.py: 128 under Marlin), and ``create_weights`` allocates the
fused gate/up weight, its scales and bias at the padded per-rank width, the down weight and scales with
the padded width as columns, and the down bias (``w2_bias``, (E, hidden)) whole on every rank.
gpt-oss-120b (intermediate 2,880, padded to 2,944 whole) at TP 2 holds 1,536 columns a rank, not 1,472.

Under EP the experts are dealt out whole, each padded as at TP 1: no extra.

Some tensors every rank holds whole (``limited_splits``), in vLLM (0.34.0) and SGLang alike: norms;
MoE routers (vLLM's ``GateLinear`` is a ``ReplicatedLinear``) and their score-correction biases; MLA's
down-projections (``q_a_proj`` and ``kv_a_proj_with_mqa``: ``DeepSeekV2FusedQkvAProjLinear`` and
``ReplicatedLinear``, ``disable_tp=True``, models/deepseek_v2.py); DSA's indexer (``wq_b`` a
``ReplicatedLinear``, ``wk`` and ``weights_proj`` fused with ``disable_tp=True``); the bias of a
row-parallel projection (``RowParallelLinear`` keeps it whole). And a GQA key or value
projection of K heads splits at most K ways: ``QKVParallelLinear`` gives each rank
``max(1, K / tp)`` heads, replicating them when TP exceeds K (layers/linear.py).
"""

from __future__ import annotations

from fractions import Fraction

from hfkv.model.weights.quantization import loaded_quantization
from hfkv.model.weights.records import Tensor, WeightsEstimate


def shard_slice(t: Tensor, shards: int) -> Tensor | None:
    """One TP rank's slice of a padded expert tensor, before padding (the width divided by ``shards``),
    or None for a tensor the padding does not touch. The down projection's bias is held whole."""
    name = t.name
    if ".experts." not in name:
        return None
    if name.endswith("gate_up_proj"):
        return t._replace(shape=(t.shape[0] // shards, t.shape[1]))
    if name.endswith("gate_up_proj.bias"):
        return t._replace(shape=(t.shape[0] // shards,))
    if name.endswith("down_proj"):
        return t._replace(shape=(t.shape[0], t.shape[1] // shards))
    if name.endswith("down_proj.bias"):
        return t
    return None


def shard_padding(estimate: WeightsEstimate, config: dict, shards: int) -> int:
    """Bytes one of ``shards`` TP ranks holds beyond ``1 / shards`` of the padded experts' whole-model
    bytes (which ``estimate.weights_bytes`` already counts): 0 when nothing is padded or ``shards`` is 1.
    Exact under the padding ``estimate`` assumes (vLLM's Marlin backend)."""
    if shards <= 1 or not estimate.padding:
        return 0
    quant = loaded_quantization(config)
    if quant.padded is None:
        return 0
    whole: Fraction | int = 0
    rank: Fraction | int = 0
    for t in estimate.tensors:
        if not t.loaded or quant.padded(t) is None:
            continue
        piece = shard_slice(t, shards)
        if piece is None:
            continue
        whole += quant.bytes_of(t)
        rank += quant.bytes_of(piece)
    return max(0, int(-(-(rank * shards - whole) // shards)))


# What every TP rank holds whole: by kind, and by the end of the tensor's name.
WHOLE_KINDS = frozenset({"norm", "router"})
WHOLE_NAMES = ("q_a_proj", "kv_a_proj_with_mqa", "e_score_correction_bias", "indexer.wq_b", "indexer.wk",
               "indexer.weights_proj", "router.bias", "gate.bias",
               # DeepSeek-V4 (vllm/models/deepseek_v4, 0.34.0): wkv fused with wq_a and the compressors' wkv/wgate
               # (disable_tp), the indexer's wq_b (a ReplicatedLinear), the hyper-connection parameters, the
               # compressors' position biases and the hash router's tid2eid (plain parameters, whole on each rank)
               "self_attn.kv_proj", "compressor.kv_proj", "compressor.gate_proj", "indexer.q_b_proj",
               "indexer.kv_proj", "indexer.gate_proj", "position_bias", "_hc.fn", "_hc.base", "_hc.scale",
               "hc_head.hc_fn", "hc_head.hc_base", "hc_head.hc_scale", "tid2eid")
# a row-parallel projection's bias is whole on every rank (vLLM's RowParallelLinear: rank 0 adds it after
# the all-reduce); an expert's is the padded experts' (``shard_padding``) or goes whole with its expert
ROW_BIASES = ("o_proj.bias", "down_proj.bias", "dense.bias", "out_proj.bias")
KV_NAMES = ("self_attn.k_proj", "self_attn.v_proj", "self_attn.k_proj.bias", "self_attn.v_proj.bias")


def limited_splits(estimate: WeightsEstimate, config: dict) -> dict[tuple[str, int], int]:
    """Loaded bytes of the tensors TP cannot split as many ways as it has ranks, by (role, the most
    ranks that split them): 1 for what every rank holds whole, K for a key/value projection of K heads."""
    quant = loaded_quantization(config)
    heads = _kv_heads(config)
    found: dict[tuple[str, int], Fraction | int] = {}
    for t in estimate.tensors:
        if not t.loaded:
            continue
        if t.kind in WHOLE_KINDS or t.name.endswith(WHOLE_NAMES) or (
                t.name.endswith(ROW_BIASES) and ".experts." not in t.name):
            limit = 1
        elif heads and t.name.endswith(KV_NAMES):
            limit = heads
        else:
            continue
        found[(t.role, limit)] = found.get((t.role, limit), 0) + quant.bytes_of(t)
    return {key: int(-(-size // 1)) for key, size in found.items() if size}


def _kv_heads(config: dict) -> int:
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    heads = text.get("num_key_value_heads") or text.get("num_attention_heads")
    return heads if isinstance(heads, int) and heads > 0 else 0
