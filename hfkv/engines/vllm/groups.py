"""vLLM 0.33.0's block size and KV-cache groups over the specs of a model's layers (``v1/core/kv_cache_utils.py``, ``platforms/interface.py``).

The specs are ``specs``' kinds (one per layer part vLLM builds); ``block_size`` replays
``Platform.update_block_size_for_backend`` (backend size, then ``_align_hybrid_block_size`` for
attention + Mamba hybrids); ``make_groups`` replays ``get_kv_cache_groups`` (one group for a uniform
type, else equal-page groups of equal layer counts with padding slots, or the full-allocation
fallback). A group's blocks per request are its spec's (``KVCacheSpec.blocks_per_request``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from hfkv.model.dtypes import ceil_div
from hfkv.errors import UnsupportedModelError

from hfkv.engines.vllm.backends import Backend
from hfkv.engines.vllm.specs import AttentionSpec, KVCacheSpec, MambaSpec, RequestPlan
from hfkv.engines.contract import EngineKnobs, number

MLA_HYBRID_ALIGN = 128  # _align_hybrid_block_size: TRTLLM/FlashInfer MLA decode wants 128-token multiples
DEFAULT_BLOCK = 16  # CacheConfig.block_size when no backend or model sets one
GROUP_SIZE_SLACK = Fraction(3, 2)  # one group per type when the largest count is < 1.5 × the smallest


class PagesDiffer(Exception):
    """The attention page sizes are not multiples of each other (e.g. MLA next to regular SWA)."""


@dataclass
class Group:
    """A KV-cache group of ``layers`` specs plus ``padding`` empty slots; one block ID costs ``block_bytes``."""

    spec: KVCacheSpec
    layers: int
    padding: int
    block_size: int
    block_bytes: Fraction  # the pages of every slot of the group for one block ID

    def blocks_per_request(self, length: int, plan: RequestPlan) -> int:
        """Blocks one request of ``length`` tokens holds in this group: its spec's rule at its block size."""
        return self.spec.blocks_per_request(length, self.block_size, plan)


def block_size(specs: list[KVCacheSpec], backend: Backend | None, knobs: EngineKnobs, align_mode: bool,
               length: int | None, assumptions: list[str], attention_free: bool = True,
               default: int = DEFAULT_BLOCK) -> int:
    """The cache block size: the backend's (or ``--block-size``), raised for hybrids so one attention
    page holds the largest Mamba state; attention-free models use max_model_len (``mamba_block_size``).
    A hybrid class with no attention layer in its config keeps the default 16 (no page to align)."""
    attention = [s for s in specs if isinstance(s, AttentionSpec)]
    mamba = [s for s in specs if isinstance(s, MambaSpec)]
    given = int(knobs.block_size) if knobs.block_size else None
    if not attention and not attention_free:
        block = given or default
        assumptions.append(f"a hybrid model class with no attention layer here: block size {block} (vLLM's default)")
        return block
    if not attention:
        block = given if given and align_mode else (length or given or 16)
        assumptions.append(f"attention-free: Mamba block size = max_model_len {block} (mamba_block_size)")
        return block
    base = given or backend_block(backend, default)
    if not given:
        assumptions.append(f"attention backend {backend.name}, block size {base} ({backend.why})")
    if not mamba:
        return base
    align = max(backend.kernel_block, base)
    if any(s.mla for s in attention):
        align = max(align, MLA_HYBRID_ALIGN)
    if align_mode:
        alignments = [s.checkpoint_alignment for s in mamba]
        if all(a is not None for a in alignments):
            align = math.lcm(align, *alignments)
    per_token = max(s.token_bytes for s in attention)
    if len({s.token_bytes for s in attention}) > 1:
        assumptions.append("attention layers differ in size: the largest sets the Mamba alignment")
    state = max(s.state_bytes for s in mamba)
    block = align * math.ceil(state / (align * per_token))
    block = backend.kernel_block * ceil_div(block, backend.kernel_block)
    block = max(base, block)
    assumptions.append(f"block size {block} = {align} × ceil(Mamba state {number(state)} B / "
                       f"({align} × {number(per_token)} B per token)): an attention page holds one state")
    return block


def backend_block(backend: Backend, default: int) -> int:
    """The block size a backend gets when the user gives none (``update_block_size_for_backend``): the
    release's default (``RuleSet.default_block_size``) when the backend's kernels take it (a multiple of
    its smallest kernel block, no smaller than the block it asks for), else the backend's own."""
    if default % backend.kernel_block == 0 and default >= backend.block_size:
        return default
    return backend.block_size


def group_size(counts: list[int]) -> int:
    """_get_kv_cache_groups_uniform_page_size: the smallest count, or the largest if max < 1.5·min."""
    low, high = min(counts), max(counts)
    return high if high < GROUP_SIZE_SLACK * low else low


def make_groups(specs: list[KVCacheSpec], block: int, assumptions: list[str]) -> list[Group]:
    """One group for uniform types; otherwise unify page sizes and split types into equal groups."""
    try:
        return _groups(specs, block, assumptions)
    except PagesDiffer:
        return _full_allocation_fallback(specs, block, assumptions)


def _groups(specs: list[KVCacheSpec], block: int, assumptions: list[str]) -> list[Group]:
    attention = [s for s in specs if isinstance(s, AttentionSpec)]
    types: dict[tuple, list[KVCacheSpec]] = {}
    for spec in specs:
        types.setdefault(spec.key, []).append(spec)
    if len({(s.kind, s.window) for s in specs}) == 1:  # uniform type: every layer in one group
        total = sum((s.page_bytes(block) for s in specs), Fraction(0))
        return [Group(spec=specs[0], layers=len(specs), padding=0, block_size=block, block_bytes=total)]
    top = max(s.page_bytes(block) for s in (attention or specs))
    blocks: dict[tuple, int] = {}
    for key, members in types.items():
        page = members[0].page_bytes(block)
        if isinstance(members[0], MambaSpec):
            blocks[key] = block  # a state fills (padded) one attention page whatever the block
            continue
        if top % page:
            raise PagesDiffer()
        blocks[key] = block * int(top // page)
    states = [s for s in specs if isinstance(s, MambaSpec)]
    if any(s.state_bytes < top for s in states):
        waste = max((top - s.state_bytes) / s.state_bytes for s in states)
        assumptions.append(f"Mamba pages padded to the attention page (+{float(waste) * 100:.2f}%)")
    size = group_size([len(m) for m in types.values()])
    groups: list[Group] = []
    padding = 0
    for key, members in types.items():
        count = ceil_div(len(members), size)
        padding += count * size - len(members)
        for g in range(count):
            real = len(members[g::count])
            groups.append(Group(spec=members[0], layers=real, padding=size - real, block_size=blocks[key],
                                block_bytes=size * top))
    if padding:
        assumptions.append(f"{len(groups)} KV cache groups of {size} layer slots: {padding} padding layer(s)")
    return groups


def _full_allocation_fallback(specs: list[KVCacheSpec], block: int, assumptions: list[str]) -> list[Group]:
    """_try_get_full_allocation_fallback_groups: promote sliding/chunked specs to full and regroup."""
    if not any(s.local for s in specs):
        raise UnsupportedModelError(
            "vLLM page sizes of these layers are not multiples of each other (e.g. a DSA indexer next to "
            "Mamba state): not modelled"
        )
    assumptions.append("page sizes cannot be unified: sliding layers promoted to full allocation")
    promoted = [s.as_full() if s.local else s for s in specs]
    try:
        return _groups(promoted, block, assumptions)
    except PagesDiffer:
        raise UnsupportedModelError("vLLM cannot unify these page sizes") from None
