"""SGLang 0.5.23's pool sizes for a KV budget (engines.md §3.1), in SGLang's own arithmetic.

The budget is SGLang's ``rest`` (GiB as a float inside SGLang: ``budget / 2**30``). The steps, from
``mem_cache/kv_cache_configurator.py`` and ``model_executor/pool_configurator.py``:

1. Mamba-like models: ``_handle_max_mamba_cache`` reserves ``rest·r/(1+r)`` (r = 0.9) for state slots,
   ``max_mamba_cache_size = (budget − per_slot) // per_slot``, and charges ``size + 1`` slots.
2. ``DefaultPoolConfigurator``: ``tokens = rest // cell`` floored to the page (no KV at all: the
   context length). ``HybridSWAPoolConfigurator``: ``cell = full + ratio·swa`` as a float,
   ``full = int(rest // cell)`` page-aligned, ``swa = int(full·ratio)`` page-aligned (an all-SWA model
   has no ratio), refused when the SWA pool cannot hold one window plus a page. With the radix cache off
   and a running-request cap, ``SWARequestCapPoolConfigurator`` sizes the SWA pool from the requests'
   worst case instead, and the rest goes to the full pool.
3. ``resolve_max_num_reqs``: ``min(clamp(int(tokens/context·512), 2048, 4096), tokens // 2)`` (a given
   cap: ``min(cap, tokens // 2)``), then at most ``max_mamba_cache_size // ratio`` with
   ``_calculate_mamba_ratio``: 1 without radix cache, 5 for architectures whose Mamba radix cache keeps
   the extra state buffer (GDN, KDA, Nemotron-H, ...; 3 + 2 tracking slots with the overlap
   scheduler), 3 otherwise.

Floats are kept where SGLang uses them, so the token counts are SGLang's to the token.
"""

from __future__ import annotations

from typing import Any

from hfkv.errors import UnsupportedModelError
from hfkv.engines.contract import EngineInput, EngineKnobs, printed
from hfkv.engines.sglang import registry


GIB = 1 << 30
MAMBA_BASE_RATIO = 3  # MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
EXTRA_BUFFER_SLOTS = 2  # get_mamba_tracking_slots(extra_buffer=True, overlap=True)
SWA_EVICTION_INTERVAL = 128  # SGLANG_SWA_EVICTION_INTERVAL
CHUNKS_IN_FLIGHT = 2  # prefill chunks in flight with the overlap scheduler

def mamba_running_ratio(report: EngineInput, radix: bool) -> int:
    """``_calculate_mamba_ratio``: state slots per running request (the first architecture decides:
    ``mamba_extra_buffer``)."""
    if not radix:
        return 1
    first = registry.first_arch_facts(report)
    return MAMBA_BASE_RATIO + (EXTRA_BUFFER_SLOTS if first and first.mamba_extra_buffer else 0)


def reserve_mamba(budget: int, per_slot: int, knobs: EngineKnobs, radix: bool, memory_ratio: float,
                  assumptions: list[str]) -> tuple[int, int]:
    """(max_mamba_cache_size, bytes left for KV): ``_handle_max_mamba_cache`` then ``int(rest·2^30)``."""
    rest = budget / GIB
    given = knobs.max_running_requests
    if not radix and given is not None:
        size = max(1, int(given))
        assumptions.append("radix cache off: max_mamba_cache_size = max_running_requests")
    else:
        mamba_budget = rest * memory_ratio / (1 + memory_ratio) * GIB
        size = int((mamba_budget - per_slot) // per_slot)
        assumptions.append(f"Mamba state pool reserved first: {memory_ratio}/{1 + memory_ratio:g} of the budget, "
                           "plus one padding slot")
    if size <= 0:
        raise UnsupportedModelError("SGLang: 'Not enough GPU memory for hybrid (mamba/linear-attention) state "
                                    f"cache' (max_mamba_cache_size={size})")
    rest -= (size + 1) * per_slot / GIB
    return size, int(rest * GIB)


def running_requests(tokens: int, context: int | None, knobs: EngineKnobs, mamba: tuple[int, int] | None) -> int:
    """``resolve_max_num_reqs``; ``mamba`` is (max_mamba_cache_size, ratio) for state models."""
    given = knobs.max_running_requests
    if given is not None:
        running = min(max(1, int(given)), tokens // 2)
    else:
        estimated = int(tokens / context * 512) if context else 4096
        running = min(max(min(estimated, 4096), 2048), tokens // 2)
    if mamba is not None:
        size, ratio = mamba
        running = min(running, size // ratio)
        if running <= 0:
            raise UnsupportedModelError("SGLang: 'Hybrid (mamba/linear-attention) state cache is too small to "
                                        f"serve any requests' (max_mamba_cache_size={size}, ratio {ratio})")
    return running


def kv_tokens(available: int, cell: float | int, page: int, context: int | None) -> int:
    """``DefaultPoolConfigurator.calculate_pool_sizes``: the token count, page-aligned."""
    if not cell:
        tokens = context or 0  # no KV layer: max_total_tokens or the context length
    else:
        tokens = int(max(available, 0) // cell)
    return tokens // page * page


def swa_pool(available: int, full_cell: int, swa_cell: int, ratio: float, page: int,
             window: int | None) -> tuple[int, int]:
    """``HybridSWAPoolConfigurator``: (full tokens, SWA tokens); refused when one window cannot fit."""
    if not full_cell:
        tokens = int(available // swa_cell) // page * page
        return tokens, tokens
    full = int(available // (full_cell + ratio * swa_cell)) // page * page
    swa = int(full * ratio) // page * page
    if window is not None and window + page >= swa:
        raise UnsupportedModelError(
            f"SGLang: 'SWA pool ({swa} tokens) cannot hold even one request: the prefill admission floor is "
            f"sliding_window_size ({window}) + page_size ({page})'")
    return full, swa


def swa_request_cap(window: int, page: int, running: int, chunked_prefill: int) -> int:
    """``compute_swa_request_cap``: SWA slots held live at ``running`` requests (no speculation, overlap on)."""
    per_request = window + SWA_EVICTION_INTERVAL + page + page  # trailing window + eviction + padding, decode page
    return per_request * running + CHUNKS_IN_FLIGHT * chunked_prefill + page


def capped_swa_pool(available: int, full_cell: int, swa_cell: int, page: int, cap: int) -> tuple[int, int]:
    """``SWARequestCapPoolConfigurator``: the SWA pool sized from the cap, the rest to the full pool."""
    swa = -(-cap // page) * page
    full = int((available - swa * swa_cell) // full_cell) // page * page
    if full <= 0:
        raise UnsupportedModelError(f"SGLang: 'SWA pool cap ({swa} tokens) leaves no room for the full KV pool'")
    return full, swa


def request_cap_mode(shape: dict, knobs: EngineKnobs, radix: bool) -> bool:
    """``SWARequestCapPoolConfigurator.is_applicable``: hybrid SWA with full layers and a window, radix cache
    off, an explicit running-request cap."""
    return (shape.get("ratio") is not None and not radix and knobs.max_running_requests is not None
            and bool(shape.get("window")) and bool(shape["full"]))


def token_pools(available: int, shape: dict, context: int | None, knobs: EngineKnobs, radix: bool,
                assumptions: list[str]) -> tuple[int, int | None]:
    """(max_total_num_tokens, SWA tokens or None) from the configurator SGLang picks for ``shape``."""
    page = shape["page"]
    if shape.get("ratio") is None:
        if not shape["cell"]:
            assumptions.append("no KV layers: SGLang sets max_total_num_tokens to the context length")
        return kv_tokens(available, shape["cell"], page, context), None
    if request_cap_mode(shape, knobs, radix):
        cap = swa_request_cap(shape["window"], page, max(1, int(knobs.max_running_requests)),
                              shape["chunked_prefill"])
        assumptions.append(f"radix cache off with a running-request cap: SGLang sizes the SWA pool from the cap "
                           f"({cap} slots, chunked prefill {shape['chunked_prefill']}), the rest goes to full KV")
        return capped_swa_pool(available, shape["full"], shape["swa"], page, cap)
    return swa_pool(available, shape["full"], shape["swa"], shape["ratio"], page, shape.get("window"))


def size_pools(budget: int, shape: dict, context: int | None, knobs: EngineKnobs, radix: bool, memory_ratio: float,
               mamba_ratio: int, assumptions: list[str]) -> dict:
    """The pool figures for ``budget``. ``shape``: ``cell`` (int or float), ``page``, ``per_slot``, and for
    hybrid SWA ``full``, ``swa``, ``ratio``, ``window``, ``chunked_prefill``."""
    available, mamba = budget, None
    if shape["per_slot"]:
        size, available = reserve_mamba(budget, shape["per_slot"], knobs, radix, memory_ratio, assumptions)
        mamba = (size, mamba_ratio)
        assumptions.append(f"running requests capped at max_mamba_cache_size // {mamba_ratio} "
                           "(SGLang's Mamba slots per request)")
    out: dict[str, Any] = {"max_mamba_cache_size": mamba[0] if mamba else None}
    tokens, swa = token_pools(available, shape, context, knobs, radix, assumptions)
    if swa is not None:
        out["swa_tokens"] = swa
    if request_cap_mode(shape, knobs, radix):
        out["configurator"] = "SWARequestCapPoolConfigurator"
    if tokens <= 0:
        raise UnsupportedModelError("SGLang: 'Not enough memory. Please try to increase --mem-fraction-static.' "
                                    "(the budget holds no KV page)")
    running = running_requests(tokens, context, knobs, mamba)
    out.update(max_total_num_tokens=tokens, kv_cache_tokens=tokens, max_running_requests=running)
    if context and shape["cell"]:
        out["max_concurrency"] = printed(min(tokens / context, running))
        assumptions.append("max_concurrency = max_total_num_tokens / context length, capped by "
                           "max_running_requests (SGLang admits by tokens and prints no such line)")
    elif mamba:
        out["max_concurrency"] = running
    return out


def floor_to_page(tokens: int, page: int) -> int:
    return tokens // page * page
