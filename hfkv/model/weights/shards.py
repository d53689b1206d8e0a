"""Padded experts per tensor-parallel shard: what one GPU holds beyond an even split of the whole.

An engine that pads a quantised expert (MXFP4 under vLLM's Marlin backend: ``loaded.mxfp4_marlin_shape``)
pads each TP shard's own slice. vLLM's ``FusedMoE`` gives every rank ``intermediate_size / tp`` columns
of each expert when the experts are not spread by EP; ``Mxfp4MoEMethod.maybe_roundup_sizes`` then rounds
that per-rank width up (``mxfp4_round_up_hidden_size_and_intermediate_size``, vllm 0.34.0
model_executor/layers/fused_moe/oracle/mxfp4.py: 128 under Marlin), and ``create_weights`` allocates the
fused gate/up weight, its scales and bias at the padded per-rank width, the down weight and scales with
the padded width as columns, and the down bias (``w2_bias``, (E, hidden)) whole on every rank.
gpt-oss-120b (intermediate 2,880, padded to 2,944 whole) at TP 2 holds 1,536 columns a rank, not 1,472.

Under EP the experts are dealt out whole, each padded as at TP 1: no extra.
"""

from __future__ import annotations

from fractions import Fraction

from hfkv.model.weights.loaded import loaded_base
from hfkv.model.weights.quantization import Quantization, base_dtype, quantization_config
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
    files_base, _, _ = base_dtype(config)
    quant = Quantization(quantization_config(config), loaded_base(files_base))
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
