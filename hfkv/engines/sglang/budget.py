"""SGLang 0.5.23's pool sizes for a KV budget, in its own order and arithmetic (``mem_cache/kv_cache_configurator.py``).

The budget is SGLang's ``rest`` (``mem_cache/kv_cache_configurator.py``): first the Mamba state pool
(``mamba_pool.reserve``) for models with state; then the token pools from what is left, by the
configurator SGLang picks (``default_pool.kv_tokens``, or ``swa_pool.pools``); then
``resolve_max_num_reqs`` (``pools.running_requests``), capped by the state slots. Floats are kept
where SGLang uses them, so the token counts are SGLang's to the token. DeepSeek V4 sizes its own
pools (``dsv4``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hfkv.engines.contract import EngineKnobs
from hfkv.engines.sglang import default_pool, mamba_pool, swa_pool
from hfkv.engines.sglang.pools import CONCURRENCY_NOTE, concurrency, require_a_page, running_requests


@dataclass(frozen=True)
class PoolShape:
    """What the budget path needs of the cell, as SGLang holds it: bytes per token (an int, or a float
    for a fractional hybrid cell), the page, the state bytes per request slot (0: no state pool), and
    the hybrid-SWA split (None: one token pool)."""

    cell: int | float
    page: int
    per_slot: int
    swa: swa_pool.SwaShape | None = None


def token_pools(available: int, shape: PoolShape, context: int | None, knobs: EngineKnobs, radix: bool,
                assumptions: list[str]) -> tuple[int, int | None]:
    """(max_total_num_tokens, SWA tokens or None) from what the state pool left."""
    if shape.swa is None:
        if not shape.cell:
            assumptions.append("no KV layers: SGLang sets max_total_num_tokens to the context length")
        return default_pool.kv_tokens(available, shape.cell, shape.page, context), None
    return swa_pool.pools(available, shape.swa, shape.page, knobs, radix, assumptions)


def size_pools(budget: int, shape: PoolShape, context: int | None, knobs: EngineKnobs, radix: bool,
               memory_ratio: float, slots_per_request: int, assumptions: list[str]) -> dict:
    """The pool figures for ``budget`` (module docstring)."""
    available, mamba = budget, None
    if shape.per_slot:
        size, available = mamba_pool.reserve(budget, shape.per_slot, knobs, radix, memory_ratio, assumptions)
        mamba = (size, slots_per_request)
        assumptions.append(f"running requests capped at max_mamba_cache_size // {slots_per_request} "
                           "(SGLang's Mamba slots per request)")
    out: dict[str, Any] = {"max_mamba_cache_size": mamba[0] if mamba else None}
    tokens, swa = token_pools(available, shape, context, knobs, radix, assumptions)
    if swa is not None:
        out["swa_tokens"] = swa
    if swa_pool.request_cap_mode(shape.swa, knobs, radix):
        out["configurator"] = "SWARequestCapPoolConfigurator"
    require_a_page(tokens)
    running = running_requests(tokens, context, knobs, mamba)
    out.update(max_total_num_tokens=tokens, kv_cache_tokens=tokens, max_running_requests=running)
    if context and shape.cell:
        out["max_concurrency"] = concurrency(tokens, context, running)
        assumptions.append(CONCURRENCY_NOTE)
    elif mamba:
        out["max_concurrency"] = running
    return out
