"""SGLang 0.5.23's ``DefaultPoolConfigurator``: one cell of bytes per token over every attention layer
(``model_executor/pool_configurator.py:_compute_cell_size``), and the token pool a budget buys.

A part's bytes per token: K + V heads per GPU × dims × dtype for MHA / GQA (windowed layers too, at
full size: only the hybrid-SWA pool, ``swa_pool``, keeps them apart); the MLA latent
``kv_lora_rank + rope`` (the FlashMLA-sparse fp8 layout packs it with scales); the DSA indexer key
``ceil(132 / index_kpool)``. SGLang sizes layers that share another layer's KV like owners. An
EAGLE / MTP draft pool shares the token count and adds ``cell·draft/target`` bytes per token.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from hfkv.errors import UnsupportedModelError
from hfkv.model import dtypes
from hfkv.model.dtypes import block_scaled_bytes, ceil_div
from hfkv.model.specs import ChunkedLocal, FullAttention, IndexerKeys, LayerSpec, MLALatent, SlidingWindow

from hfkv.engines.contract import EngineKnobs, number
from hfkv.engines.sglang.backend import Plan
from hfkv.engines.sglang.pools import floor_to_page
from hfkv.engines.sglang.rules import RuleSet


def mla_bytes(part: MLALatent, kv: str, packed: bool) -> Fraction:
    """One latent entry: ``packed`` (DSA on FlashMLA sparse) 656 B fp8 = 512 fp8 + 4 scales + 64 bf16 rope;
    else raw D·e (trtllm's layout, plain MLA).

    kv_cache_configurator.py:calculate_mla_kv_cache_dim; MLA fp4 is D/2 + ⌊D/16⌋ scale bytes.
    """
    d = part.kv_lora_rank + part.rope_dim
    if kv == "fp8" and packed:
        return Fraction(part.kv_lora_rank + part.kv_lora_rank // 128 * 4 + part.rope_dim * 2)
    if kv == "fp4":
        return Fraction(d, 2) + d // 16
    return d * dtypes.BYTES[kv]


def part_token_bytes(part: Any, kv: str, tp: int, packed: bool) -> Fraction:
    """Bytes per token of one attention part (0 for state parts). SGLang sizes shared (σ = 0) layers
    like owners."""
    if isinstance(part, (FullAttention, SlidingWindow, ChunkedLocal)):
        if kv == "fp4":
            raise UnsupportedModelError("SGLang's NVFP4 KV for MHA layers is not modelled (use fp8 or bf16)")
        return part.entry_bytes(dtypes.Precision(kv=kv), tp)
    if isinstance(part, MLALatent):
        return mla_bytes(part, kv, packed)
    if isinstance(part, IndexerKeys):  # _compute_dsa_indexer_cell_size: ceil(132 / index_kpool)
        return Fraction(ceil_div(int(block_scaled_bytes(part.head_dim, "fp8")), part.ratio))
    return Fraction(0)


def draft_bytes(layers: list[LayerSpec], kv: str, tp: int, packed: bool, knobs: EngineKnobs,
                assumptions: list[str], windowed: bool) -> Fraction:
    """The EAGLE/MTP draft pool's bytes per token: ``cell·draft/target``, the DSA indexer scaled by its
    own layer count (a draft layer always has one) (``DefaultPoolConfigurator``). ``windowed``: the target has
    windowed parts, which a draft layer is priced like at full size."""
    draft = int(knobs.speculative_draft_layers or 0)
    if not draft:
        assumptions.append("no speculative draft pool (--speculative-draft-layers, e.g. the config's "
                           "num_nextn_predict_layers for MTP)")
        return Fraction(0)
    sums = {"kv": Fraction(0), "index": Fraction(0)}
    counts = {"kv": 0, "index": 0}
    for layer in layers:
        for key in ("kv", "index"):
            costs = [part_token_bytes(p, kv, tp, packed) for p in layer.parts
                     if isinstance(p, IndexerKeys) == (key == "index")]
            if any(costs):
                sums[key] += sum(costs)
                counts[key] += 1
    if windowed:
        assumptions.append("draft layers priced as the target's average layer, windowed ones at full size")
    extra = sum((sums[k] * draft / counts[k] for k in sums if counts[k]), Fraction(0))
    assumptions.append(f"speculative draft pool: {draft} draft layer(s) sharing the token count, "
                       f"+{number(extra)} B per token (cell·draft/target layers)")
    return extra


def sized_packed(plan: Plan, release: RuleSet) -> bool:
    """Whether the pool is *sized* with the packed 656 B fp8 latent the FlashMLA-sparse pool allocates
    (``RuleSet.dsa_fp8_sizing``: releases up to 0.5.16 size it with the raw 576 B latent)."""
    return plan.dsa_packed_fp8 and release.dsa_fp8_sizing == "packed"


def layout_notes(layers: list[LayerSpec], kv: str, plan: Plan, release: RuleSet, assumptions: list[str]) -> None:
    """Say which latent layout the backend implies for the cell, and when the release sizes the pool
    with a smaller one than it allocates."""
    dsa = any(isinstance(part, IndexerKeys) for layer in layers for part in layer.parts)
    if dsa:
        latent = "656 B packed fp8" if plan.dsa_packed_fp8 and kv == "fp8" else f"raw {kv}"
        assumptions.append(f"DSA: latent {latent}, indexer 132 B on layers that compute top-k")
        if plan.dsa_packed_fp8 and kv == "fp8" and not sized_packed(plan, release):
            # _compute_cell_size (until 0.5.16) prices the latent at kv_lora_rank + rope bytes while the
            # pool allocates the packed row: the tokens bought this way take 80 B per layer more than sized.
            assumptions.append(f"DSA fp8 in SGLang {release.label}: the pool is sized with the raw 576 B latent "
                               "but allocates 656 B per layer, so it takes more memory than its budget")
    elif kv == "fp8" and any(isinstance(part, MLALatent) for layer in layers for part in layer.parts):
        assumptions.append("MLA fp8: raw 576 B latent (no scales)")


def kv_tokens(available: int, cell: float | int, page: int, context: int | None) -> int:
    """``calculate_pool_sizes``: ``rest // cell`` page-aligned; with no KV layer at all, the context
    length (``max_total_tokens``)."""
    if not cell:
        tokens = context or 0
    else:
        tokens = int(max(available, 0) // cell)
    return floor_to_page(tokens, page)
