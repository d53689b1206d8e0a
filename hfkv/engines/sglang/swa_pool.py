"""SGLang 0.5.23's hybrid sliding-window pools: ``HybridSWAPoolConfigurator`` and, with the radix cache
off and a running-request cap, ``SWARequestCapPoolConfigurator`` (``mem_cache/kv_cache_configurator.py``).

Only the architectures ``is_hybrid_swa_model`` admits (``ArchFacts.hybrid_swa``) get a second, smaller
pool for their windowed layers; any other windowed model gets full KV on every layer. The cell is
``full + ratio·swa`` as a float (the SWA pool holds ``ratio`` tokens per full token; an all-SWA model
has no ratio), ``full = int(rest // cell)`` page-aligned, ``swa = int(full·ratio)`` page-aligned,
refused when the SWA pool cannot hold one window plus a page. The request-cap variant sizes the SWA
pool from the requests' worst case and gives the rest to the full pool. The allocator also keeps an
int64 full→SWA index map per full token that the sizing leaves out (``mem_cache/allocator/swa.py``).
``DSV4PoolConfigurator`` (``dsv4``) takes the same ratio and the same SWA rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from hfkv.errors import UnsupportedModelError
from hfkv.model.specs import ChunkedLocal, FullAttention, LayerSpec, MLALatent, SlidingWindow

from hfkv.engines.contract import EngineInput, EngineKnobs
from hfkv.engines.sglang import registry
from hfkv.engines.sglang.default_pool import part_token_bytes
from hfkv.engines.sglang.facts import HYBRID_SWA, HYBRID_SWA_IF_SLIDING
from hfkv.engines.sglang.pools import ceil_to_page, floor_to_page

DEFAULT_RATIO = Fraction(4, 5)  # arg_groups/fields/schedule.py: swa_full_tokens_ratio
INDEX_MAP_BYTES = 8  # mem_cache/allocator/swa.py: int64 full→SWA index map per full token
SWA_EVICTION_INTERVAL = 128  # SGLANG_SWA_EVICTION_INTERVAL
CHUNKS_IN_FLIGHT = 2  # prefill chunks in flight with the overlap scheduler
CHUNKED_PREFILL = {9: 8192, 10: 16384}  # memory_hook: below / above 160 GiB (SM90 class, B200)


@dataclass(frozen=True)
class SwaShape:
    """A hybrid-SWA cell as SGLang holds it: bytes per token of the full and of the windowed parts
    (ints), the ratio (a float), the largest window, and the chunked-prefill size the request cap
    counts."""

    full: int
    swa: int
    ratio: float
    window: int | None
    chunked_prefill: int


# -- which parts, which models ----------------------------------------------------------------------


def is_local(part: Any) -> bool:
    """Parts a hybrid-SWA pool holds in its sliding pool (Llama 4's chunks count as a window, and so
    does a declared window that covers every position: SGLang keeps its sliding pool for it)."""
    return (isinstance(part, (SlidingWindow, ChunkedLocal)) or (isinstance(part, MLALatent) and bool(part.window))
            or (isinstance(part, FullAttention) and part.declared_window is not None))


def has_local(layers: list[LayerSpec]) -> bool:
    return any(is_local(part) for layer in layers for part in layer.parts)


def local_window(part: Any) -> int | None:
    """The window a local part keeps (``declared_window`` for full attention that declares one)."""
    return getattr(part, "window", None) or getattr(part, "declared_window", None)


def window_of(layers: list[LayerSpec]) -> int | None:
    """SGLang's ``sliding_window_size``: the (largest) window of the windowed parts."""
    windows = [local_window(p) for layer in layers for p in layer.parts if is_local(p)]
    windows = [w for w in windows if isinstance(w, int) and w > 0]
    return max(windows) if windows else None


def is_hybrid_swa(model: EngineInput) -> bool:
    """``is_hybrid_swa_model``: a config opting in (``is_hybrid_swa``), any architecture SGLang lists,
    or one it lists only when the config has sliding layers and this one has."""
    if (model.config or {}).get("is_hybrid_swa") is True:
        return True
    kinds = {f.hybrid_swa for f in registry.arch_facts(model)}
    return HYBRID_SWA in kinds or (HYBRID_SWA_IF_SLIDING in kinds and has_local(model.layer_specs))


def ratio(model: EngineInput, knobs: EngineKnobs, assumptions: list[str],
          pool_default: Fraction | None = None) -> Fraction:
    """``--swa-full-tokens-ratio``, else the pool's own default (``DSV4PoolConfigurator`` keeps one and
    reads nothing else), else the architecture's model override (``swa_full_tokens_ratio``), else 0.8."""
    if knobs.swa_full_tokens_ratio is not None:
        return Fraction(str(knobs.swa_full_tokens_ratio))
    own = [f.swa_full_tokens_ratio for f in registry.arch_facts(model) if f.swa_full_tokens_ratio is not None]
    chosen = pool_default or (own[0] if own else DEFAULT_RATIO)
    assumptions.append(f"swa_full_tokens_ratio = {float(chosen)} (SGLang default)")
    return chosen


def index_map_note(assumptions: list[str]) -> None:
    """Say that the allocator's index map costs more than the sizing figure."""
    assumptions.append(f"SGLang's allocator also keeps an int64 full→SWA index map: {INDEX_MAP_BYTES} B per "
                       "full token more than this sizing figure")


# -- the cell ---------------------------------------------------------------------------------------


def split_cell(layers: list[LayerSpec], kv: str, tp: int, packed: bool) -> tuple[Fraction, Fraction]:
    """(bytes per token of the full-attention parts, of the windowed parts)."""
    full = swa = Fraction(0)
    for layer in layers:
        for part in layer.parts:
            cost = part_token_bytes(part, kv, tp, packed)
            if is_local(part):
                swa += cost
            else:
                full += cost
    return full, swa


def cell(full: Fraction, swa: Fraction, swa_ratio: Fraction) -> Fraction:
    """Bytes per full token: ``full + ratio·swa``; an all-SWA model has no ratio (one pool, the SWA one)."""
    return full + swa_ratio * swa if full else swa


def chunked_prefill_size(knobs: EngineKnobs) -> int:
    """``memory_hook.handle_gpu_memory_settings``: 8192 below 160 GiB of GPU memory (H100/H200 class, SM90),
    16384 above (B200, SM100); under DP attention divided by the DP size (``_handle_data_parallelism``)."""
    size = CHUNKED_PREFILL[10] if knobs.capability_major >= 10 else CHUNKED_PREFILL[9]
    return size // int(knobs.data_parallel_size or 1) if knobs.enable_dp_attention else size


# -- sizing -----------------------------------------------------------------------------------------


def swa_tokens(full_tokens: int, swa_ratio: float, page: int) -> int:
    """The SWA pool beside ``full_tokens``: ``int(full·ratio)`` page-aligned (DSV4 too)."""
    return floor_to_page(int(full_tokens * swa_ratio), page)


def ratio_pools(available: int, shape: SwaShape, page: int) -> tuple[int, int]:
    """``HybridSWAPoolConfigurator``: (full tokens, SWA tokens); refused when one window cannot fit."""
    if not shape.full:
        tokens = floor_to_page(int(available // shape.swa), page)
        return tokens, tokens
    full = floor_to_page(int(available // (shape.full + shape.ratio * shape.swa)), page)
    swa = swa_tokens(full, shape.ratio, page)
    if shape.window is not None and shape.window + page >= swa:
        raise UnsupportedModelError(
            f"SGLang: 'SWA pool ({swa} tokens) cannot hold even one request: the prefill admission floor is "
            f"sliding_window_size ({shape.window}) + page_size ({page})'")
    return full, swa


def request_cap_mode(shape: SwaShape | None, knobs: EngineKnobs, radix: bool) -> bool:
    """``SWARequestCapPoolConfigurator.is_applicable``: hybrid SWA with full layers and a window, radix cache
    off, an explicit running-request cap."""
    return (shape is not None and not radix and knobs.max_running_requests is not None
            and bool(shape.window) and bool(shape.full))


def request_cap(window: int, page: int, running: int, chunked_prefill: int) -> int:
    """``compute_swa_request_cap``: SWA slots held live at ``running`` requests (no speculation, overlap on)."""
    per_request = window + SWA_EVICTION_INTERVAL + page + page  # trailing window + eviction + padding, decode page
    return per_request * running + CHUNKS_IN_FLIGHT * chunked_prefill + page


def capped_pools(available: int, shape: SwaShape, page: int, running: int,
                 assumptions: list[str]) -> tuple[int, int]:
    """``SWARequestCapPoolConfigurator``: the SWA pool sized from the cap, the rest to the full pool."""
    cap = request_cap(shape.window, page, running, shape.chunked_prefill)
    assumptions.append(f"radix cache off with a running-request cap: SGLang sizes the SWA pool from the cap "
                       f"({cap} slots, chunked prefill {shape.chunked_prefill}), the rest goes to full KV")
    swa = ceil_to_page(cap, page)
    full = floor_to_page(int((available - swa * shape.swa) // shape.full), page)
    if full <= 0:
        raise UnsupportedModelError(f"SGLang: 'SWA pool cap ({swa} tokens) leaves no room for the full KV pool'")
    return full, swa


def pools(available: int, shape: SwaShape, page: int, knobs: EngineKnobs, radix: bool,
          assumptions: list[str]) -> tuple[int, int]:
    """(max_total_num_tokens, SWA tokens) from the configurator SGLang picks for ``shape``."""
    if request_cap_mode(shape, knobs, radix):
        return capped_pools(available, shape, page, max(1, int(knobs.max_running_requests)), assumptions)
    return ratio_pools(available, shape, page)
