"""What SGLang 0.5.23's pools share: page alignment, the page-size default, the refusal when a budget
holds no page, and the running-request cap every pool ends with (``mem_cache/kv_cache_configurator.py``).

Each pool owns its cell and sizing in its own module: ``default_pool`` (``DefaultPoolConfigurator``),
``swa_pool`` (``HybridSWAPoolConfigurator``, ``SWARequestCapPoolConfigurator``), ``mamba_pool`` (the
state pool ``KVCacheConfigurator._handle_max_mamba_cache`` reserves first) and ``dsv4``
(``DSV4PoolConfigurator``); ``budget`` runs the first three for a budget in SGLang's order.
"""

from __future__ import annotations

from hfkv.errors import UnsupportedModelError
from hfkv.engines.contract import EngineKnobs, printed

GIB = 1 << 30  # SGLang holds the budget (``rest``) in GiB, as a float
RUNNING_FLOOR, RUNNING_CEILING = 2048, 4096  # resolve_max_num_reqs clamps its estimate to these
RUNNING_PER_CONTEXT = 512  # ... which is int(tokens / context_len · 512)


def floor_to_page(tokens: int, page: int) -> int:
    """``tokens`` rounded down to whole pages (every pool's token count is page-aligned)."""
    return tokens // page * page


def ceil_to_page(tokens: int, page: int) -> int:
    """``tokens`` rounded up to whole pages (a pool sized from a request cap must hold the cap)."""
    return -(-tokens // page) * page


def page_size(knobs: EngineKnobs, default: int, why: str, assumptions: list[str]) -> int:
    """``--page-size``, else the pool's ``default`` (said in ``assumptions``, with ``why``)."""
    if knobs.page_size:
        return knobs.page_size
    assumptions.append(f"page size {default} ({why})")
    return default


def require_a_page(tokens: int, what: str = "KV") -> None:
    """SGLang's refusal when the budget holds no page of the token pool."""
    if tokens <= 0:
        raise UnsupportedModelError("SGLang: 'Not enough memory. Please try to increase --mem-fraction-static.' "
                                    f"(the budget holds no {what} page)")


def running_requests(tokens: int, context: int | None, knobs: EngineKnobs, mamba: tuple[int, int] | None) -> int:
    """``resolve_max_num_reqs``: ``--max-running-requests`` or the estimate from the pool, at most half
    the tokens; ``mamba`` is (max_mamba_cache_size, state slots per request) for state models."""
    given = knobs.max_running_requests
    if given is not None:
        running = min(max(1, int(given)), tokens // 2)
    else:
        estimated = int(tokens / context * RUNNING_PER_CONTEXT) if context else RUNNING_CEILING
        running = min(max(min(estimated, RUNNING_CEILING), RUNNING_FLOOR), tokens // 2)
    if mamba is not None:
        size, ratio = mamba
        running = min(running, size // ratio)
        if running <= 0:
            raise UnsupportedModelError("SGLang: 'Hybrid (mamba/linear-attention) state cache is too small to "
                                        f"serve any requests' (max_mamba_cache_size={size}, ratio {ratio})")
    return running


def concurrency(tokens: int, context: int, running: int) -> float:
    """What hfkv prints as ``max_concurrency`` (SGLang prints none): requests of the full context the
    token pool holds, capped by the running requests."""
    return printed(min(tokens / context, running))


CONCURRENCY_NOTE = ("max_concurrency = max_total_num_tokens / context length, capped by max_running_requests "
                    "(SGLang admits by tokens and prints no such line)")
