"""vLLM 0.33.0's DeepSeek V4 cache (fp8 KV only): per-layer pages and the packed groups.

Pages, from ``models/deepseek_v4`` (``attention.py``, ``compressor.py``) and
``v1/attention/backends/mla/sparse_swa.py``: each is an MLA spec of ``specs`` (sliding or full, whose
rule counts a request's blocks) at its own block size, its page rounded up to the 576 B alignment of
the fp8_ds_mla layout (``PackedPage``; every state is 448 B fp8 NoPE + 128 B bf16 RoPE + 8 B of
scales = 584 B):

- every layer: the sliding-window latent, 64-token blocks, window ``W``;
- compressed layers (ratio r): the compressed latent, a 256-token block of 256/r states; its
  compressor's fp32 state ring (``ring_factor × head_dim`` values per token), 4-token blocks for
  r = 4 and 8-token blocks for r = 128, a window of ``ring_slots`` tokens;
- the CSA indexer: 132 B keys (128 fp8 + an fp32 scale) per state in 256-token blocks, and its own
  compressor ring.

Grouping replays ``_get_packed_kv_cache_groups`` (``v1/core/kv_cache_planning.py``): layers go to
uniform-type buckets (same kind, block and window); buckets holding one layer per page size
("balanced") are split into groups of ``repeats`` pattern repeats, ``repeats`` chosen by
``_approximate_gcd`` (least padding, at least the largest mixed balanced bucket); a block ID holds
one page of every layer of a group, so ``bytes_per_block`` is the widest group.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from hfkv.model.dtypes import block_scaled_bytes, ceil_div
from hfkv.errors import UnsupportedModelError
from hfkv.model.specs import CompressedKV, IndexerKeys, LayerSpec, MLALatent

from hfkv.engines.contract import EngineInput
from hfkv.engines.vllm.specs import (
    AttentionSpec,
    FullAttentionSpec,
    MLAAttentionSpec,
    RequestPlan,
    SlidingWindowMLASpec,
)

FP8_DS_MLA_STATE = 584  # attention.py: 448 B NoPE + 128 B RoPE + 8 B fp8 scale per state
LAYOUT_ALIGNMENT = 576  # fp8_ds_mla page alignment
SWA_BLOCK = 64  # DeepseekV4SWACache block_size
COMPRESSED_BLOCK = 256  # cache block of the compressed latent and indexer specs
COMPRESSOR_BLOCK = {4: 4, 128: 8}  # compressor.py: C4 rings in 4-token blocks, C128 in 8
FP32 = 4
V4_LATENT = (448, 64)  # kv_lora_rank, rope_dim the 584 B layout is written for


@dataclass(frozen=True)
class PackedPage:
    """One DeepSeek V4 layer part's cache: an MLA spec (sliding or full) at its own block size, its page
    rounded up to the fp8_ds_mla alignment; the blocks a request holds are the spec's."""

    spec: AttentionSpec
    block: int

    @property
    def page(self) -> int:
        return LAYOUT_ALIGNMENT * ceil_div(self.spec.page_bytes(self.block), LAYOUT_ALIGNMENT)

    @property
    def bucket(self) -> tuple:
        """What makes pages one uniform type for the packing: kind, block and window."""
        return (self.spec.kind, self.block, self.spec.window)

    def blocks(self, length: int, plan: RequestPlan) -> int:
        """Blocks one request of ``length`` tokens holds (``max_memory_usage_bytes`` / page)."""
        return self.spec.blocks_per_request(length, self.block, plan)


def layer_pages(layer: LayerSpec) -> list[PackedPage]:
    """The pages vLLM builds for one DeepSeek V4 layer's parts."""
    out = []
    for part in layer.parts:
        if isinstance(part, MLALatent):
            if (part.kv_lora_rank, part.rope_dim) != V4_LATENT:
                raise UnsupportedModelError("vLLM's fp8_ds_mla layout for this DeepSeek V4 latent size is not modelled")
            out.append(PackedPage(SlidingWindowMLASpec(token_bytes=Fraction(FP8_DS_MLA_STATE), window=part.window),
                                  SWA_BLOCK))
        elif isinstance(part, (CompressedKV, IndexerKeys)):
            # one state per ``ratio`` tokens: the latent's 584 B, or the indexer key's 128 fp8 values + scale
            state = FP8_DS_MLA_STATE if isinstance(part, CompressedKV) else int(block_scaled_bytes(part.head_dim, "fp8"))
            out.append(PackedPage(MLAAttentionSpec(token_bytes=Fraction(state, part.ratio)), COMPRESSED_BLOCK))
            out.append(compressor_ring(part))
    return out


def compressor_ring(part) -> PackedPage:
    """The fp32 state ring of a compressor (SlidingWindowMLASpec in vLLM)."""
    block = COMPRESSOR_BLOCK.get(part.ratio)
    if block is None:
        raise UnsupportedModelError(f"vLLM's DeepSeek V4 compressor takes ratios 4 and 128, not {part.ratio}")
    ring = SlidingWindowMLASpec(token_bytes=Fraction(part.ring_factor * part.head_dim * FP32), window=part.ring_slots)
    return PackedPage(ring, block)


def approximate_gcd(values: list[int], lower_bound: int) -> int:
    """_approximate_gcd: the d >= lower_bound with the least upward padding (ties: larger d)."""
    best, best_pad = max(1, lower_bound), None
    for d in range(max(1, lower_bound), max(values) + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad is None or pad <= best_pad:
            best, best_pad = d, pad
    return best


def packed_groups(pages: list[PackedPage]) -> list[list[PackedPage]]:
    """_get_packed_kv_cache_groups over DeepSeek V4's pages (no Mamba or ring-buffer state buckets)."""
    buckets: dict[tuple, list[PackedPage]] = {}
    for page in pages:
        buckets.setdefault(page.bucket, []).append(page)
    counts = {key: Counter(s.page for s in members) for key, members in buckets.items()}
    balanced = {key for key, c in counts.items() if len(set(c.values())) == 1}
    floor = max((max(counts[k].values()) for k in balanced if len(counts[k]) > 1), default=0)
    repeats = approximate_gcd([max(counts[k].values()) for k in balanced], floor) if floor else None
    if repeats is None and any(members[0].spec.local for members in buckets.values()):
        raise UnsupportedModelError("vLLM's DeepSeek V4 state-bucket split is not modelled for this layout")
    groups = []
    for key, members in buckets.items():
        n = ceil_div(max(counts[key].values()), repeats) if key in balanced and repeats else 1
        if n == 1:
            groups.append(members)
            continue
        by_page: dict[int, list[PackedPage]] = {}
        for page in members:
            by_page.setdefault(page.page, []).append(page)
        pattern = list(zip(*by_page.values()))
        groups += [[s for repeat in pattern[i::n] for s in repeat] for i in range(n)]
    return groups


def plan(report: EngineInput) -> tuple[dict, list[list[PackedPage]]]:
    """vLLM's DeepSeek V4 figures that do not depend on the length, and its groups."""
    groups = packed_groups([page for layer in report.layer_specs for page in layer_pages(layer)])
    per_block = max(sum(s.page for s in group) for group in groups)
    growing = sum((Fraction(per_block, g[0].block) for g in groups if isinstance(g[0].spec, FullAttentionSpec)),
                  Fraction(0))
    figures = {
        "bytes_per_token": growing,
        "full_attention_bytes_per_token": growing,
        "block_size": min(group[0].block for group in groups),  # EngineCore: the smallest group block
        "bytes_per_block": per_block,
        "kv_cache_groups": [
            {"kind": g[0].spec.kind, "window": g[0].spec.window, "layers": len(g), "padding": 0, "block_size": g[0].block,
             "block_bytes": sum(s.page for s in g)}
            for g in groups
        ],
    }
    return figures, groups


def blocks_per_request(groups: list[list[PackedPage]], length: int, plan: RequestPlan) -> int:
    """Σ over groups of the most blocks any of its pages holds (UniformTypeKVCacheSpecs.max_memory_usage_pages)."""
    return sum(max(s.blocks(length, plan) for s in g) for g in groups)
