"""SGLang 0.5.23's start-up, replayed over a report's layer specs (``model_executor/model_runner.py``, ``mem_cache/kv_cache_configurator.py``).

SGLang sizes a token pool: one *cell* of bytes per token over every attention layer, so
``max_total_num_tokens = floor(rest / cell)`` floored to the page size. Before that, models with
linear or Mamba layers reserve a state pool, which also caps the running requests. Hybrid
sliding-window memory (a second, smaller pool for the sliding layers) is given only to the
architectures SGLang lists; every other windowed model gets full KV on every layer. This module ties
the parts together; each lives in its own module: whether SGLang serves the model at all
(``support``), where its config classes read a config differently (``config``), the backend and page
size per GPU generation (``backend``), the pools (``default_pool``, ``swa_pool``, ``mamba_pool``,
``dsv4``, what they share in ``pools``, the budget path in ``budget``), and what SGLang knows per
architecture and model type (``facts``, looked up through ``registry``). Refusals are
``UnsupportedModelError`` with SGLang's reason; warnings are one line each, in the result's
``warnings`` and first in its ``assumptions``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from hfkv.engines.contract import EngineInput, EngineKnobs, number
from hfkv.engines.sglang import backend, budget, config, default_pool, dsv4, mamba_pool, registry, support, swa_pool
from hfkv.engines.sglang.pools import page_size
from hfkv.engines.sglang.rules import rules
from hfkv.model.specs import LayerSpec


@dataclass(frozen=True)
class TokenCell:
    """SGLang's per-token cost: the full-attention bytes (the draft pool's included), the windowed bytes,
    the SWA ratio (None: no hybrid-SWA pool, windowed layers at full size) and the cell the pool divides by."""

    full: Fraction
    swa: Fraction
    ratio: Fraction | None
    cell: Fraction


def token_cell(report: EngineInput, layers: list[LayerSpec], plan: backend.Plan, knobs: EngineKnobs,
               assumptions: list[str]) -> TokenCell:
    """The cell of ``DefaultPoolConfigurator`` or, for an architecture SGLang admits, of
    ``HybridSWAPoolConfigurator``: what the release sizes the pool with (``default_pool.sized_packed``)."""
    kv, tp = plan.kv, report.tensor_parallel_size
    packed = default_pool.sized_packed(plan, rules(knobs.engine_version))
    full, swa = swa_pool.split_cell(layers, kv, tp, packed)
    full += default_pool.draft_bytes(layers, kv, tp, packed, knobs, assumptions, swa_pool.has_local(layers))
    if any(part.copies == 0 for layer in layers for part in layer.parts):
        assumptions.append("layers that share another layer's KV are still sized in the pool (no saving in SGLang)")
    if not (swa and swa_pool.is_hybrid_swa(report)):
        if swa:
            assumptions.append("not a hybrid-SWA architecture in SGLang: windowed layers get full KV")
        return TokenCell(full, swa, None, full + swa)
    ratio = swa_pool.ratio(report, knobs, assumptions)
    swa_pool.index_map_note(assumptions)
    return TokenCell(full, swa, ratio, swa_pool.cell(full, swa, ratio))


def state_per_slot(report: EngineInput, layers: list[LayerSpec], knobs: EngineKnobs,
                   assumptions: list[str]) -> Fraction | int:
    """Bytes of one Mamba-pool request slot (0 when no layer keeps state)."""
    tp = report.tensor_parallel_size
    if not any(layer.recurrent_state_bytes(report.precision, tp) for layer in layers):
        return 0
    precision = mamba_pool.state_precision(report, knobs, assumptions)
    return mamba_pool.slot_bytes(layers, precision, tp, config.replicated_state(report))


def pool_shape(cell: TokenCell, page: int, per_slot: Fraction | int, window: int | None,
               knobs: EngineKnobs) -> budget.PoolShape:
    """The figures the budget path needs, as SGLang holds them (ints; a fractional cell and the ratio
    as floats)."""
    split = None
    if cell.ratio is not None:
        split = swa_pool.SwaShape(full=int(cell.full), swa=int(cell.swa), ratio=float(cell.ratio), window=window,
                                  chunked_prefill=swa_pool.chunked_prefill_size(knobs))
    size = int(cell.cell) if cell.cell.denominator == 1 else float(cell.cell)
    return budget.PoolShape(cell=size, page=page, per_slot=int(per_slot), swa=split)


def simulate(report: EngineInput, *, budget_bytes: int | None, max_model_len: int | None, knobs: EngineKnobs) -> dict:
    """SGLang's cell and, with a budget, its pool sizes (see the module docstring)."""
    warnings = support.check(report, knobs)
    if dsv4.applies(report):
        return dsv4.simulate(report, budget_bytes=budget_bytes, max_model_len=max_model_len, knobs=knobs,
                             warnings=warnings)
    layers, notes = config.sglang_layers(report)
    plan = backend.plan(report, layers, knobs, warnings)
    context_notes: list[str] = []
    context = config.context_length(report, max_model_len, context_notes, warnings)
    assumptions = [*warnings, f"KV dtype {plan.kv} (SGLang 'auto' = model dtype or the checkpoint's declared fp8)",
                   *notes, *context_notes]
    radix = radix_cache(report, knobs, assumptions)
    cell = token_cell(report, layers, plan, knobs, assumptions)
    default_pool.layout_notes(layers, plan.kv, plan, rules(knobs.engine_version), assumptions)
    page = backend_page(plan, knobs, assumptions)
    per_slot = state_per_slot(report, layers, knobs, assumptions)
    result: dict[str, Any] = {
        "configurator": "HybridSWAPoolConfigurator" if cell.ratio is not None else "DefaultPoolConfigurator",
        "bytes_per_token": number(cell.cell), "page_size": page, "context_length": context,
    }
    if cell.ratio is not None:
        result.update(full_bytes_per_token=number(cell.full), swa_bytes_per_token=number(cell.swa),
                      swa_full_tokens_ratio=float(cell.ratio))
    slots = mamba_pool.slots_per_request(report, radix)
    if per_slot:
        result.update(mamba_bytes_per_request=number(per_slot), mamba_running_ratio=slots)
    if budget_bytes is not None:
        shape = pool_shape(cell, page, per_slot, swa_pool.window_of(layers), knobs)
        result.update(budget.size_pools(budget_bytes, shape, context, knobs, radix,
                                        mamba_pool.memory_ratio(report, knobs, assumptions), slots, assumptions))
    result["warnings"] = warnings
    result["assumptions"] = assumptions
    return result


def radix_cache(report: EngineInput, knobs: EngineKnobs, assumptions: list[str]) -> bool:
    """Whether the radix (prefix) cache is on: ``--enable-prefix-caching`` (default on), off for an
    architecture whose compatibility rule turns it off (``ArchFacts.radix_cache``: Whisper)."""
    off = next((f for f in registry.arch_facts(report) if f.radix_cache == "off"), None)
    if off is not None:
        assumptions.append(f"radix cache off: SGLang disables it for {off.architecture} "
                           "(handle_attention_backend_compatibility)")
        return False
    return knobs.enable_prefix_caching is not False


def backend_page(plan: backend.Plan, knobs: EngineKnobs, assumptions: list[str]) -> int:
    """``--page-size``, else the page of the backend SGLang picks."""
    return page_size(knobs, plan.page, f"SGLang default, {plan.backend} attention backend on "
                                       f"SM{knobs.compute_capability}", assumptions)
