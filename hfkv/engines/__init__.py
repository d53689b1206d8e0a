"""Engine modes: what SGLang or vLLM would allocate and print for a model, under the rules of the release
asked for (``engine="vllm==0.22.1"``; the bare name: the newest modelled, ``versions``).

hfkv's own figures are per request (M = α·S + γ). Serving engines instead size one pool from free
memory, with their own per-token cell, page rounding, window slack and state reservations, read from
the engines' sources (docs/vllm.md, docs/sglang.md). ``simulate`` replays those rules over a report's
layer specs, so the numbers match the engine's startup log.

    simulate(report, engine="sglang" | "vllm", budget_bytes=..., max_model_len=..., **knobs) -> dict

``report`` is read through ``EngineInput.of`` (its layer specs, precision, TP, names and raw text
config); ``knobs`` are fields of ``EngineKnobs`` (``contract``), ``None`` meaning the engine's own
default, which the result's ``assumptions`` name. The budget is the engine's KV budget per GPU:
SGLang's ``rest`` after weights (before its Mamba carve-out), vLLM's "Available KV cache memory".
Without a budget only the per-token cost is returned. The parallel-layout knobs (DP, DP attention,
EP, PP; ``layout``) are checked as the engine checks them; PP stages each size the pool of their own
layers and the smallest stage's figures are returned (``stages`` lists every stage); the result's
``deployment`` holds the layout and totals across the ranks that keep their own requests.

Result keys (besides ``name``, ``version``, ``assumptions``):

- SGLang: ``configurator`` (the pool configurator SGLang picks), ``bytes_per_token`` = the cell
  (hybrid SWA: full + ratio·sliding; DeepSeek V4: bytes per full-pool token), ``page_size``,
  ``context_length`` (SGLang's own ``get_context_length``: the first context key of the config
  times its rope factor, not hfkv's ``max_position_embeddings``), ``warnings`` (paths SGLang takes
  that hfkv cannot fully check; also the first assumptions); hybrid SWA adds
  ``full_bytes_per_token``, ``swa_bytes_per_token``, ``swa_full_tokens_ratio``; Mamba-like models
  ``mamba_bytes_per_request`` and ``mamba_running_ratio`` (running requests per state slot).
  With a budget: ``max_total_num_tokens`` (= ``kv_cache_tokens``), ``swa_tokens``,
  ``max_mamba_cache_size`` (None without state layers), ``max_running_requests`` and
  ``max_concurrency`` = tokens / context, capped by the running requests (SGLang logs no such line).
- vLLM: ``bytes_per_token`` = pool bytes per token slot over the groups that grow with the context
  (padding slots included: gpt-oss-120b 2 × 18 × 2048), ``full_attention_bytes_per_token`` (the
  growth past every window), ``block_size``, ``bytes_per_block``, ``kv_cache_groups`` (kind, window,
  layers, padding, block_size, block_bytes), ``max_model_len``, ``blocks_per_request`` and
  ``request_bytes`` (the "KV cache is needed" figure), ``attention_backend``. With a budget:
  ``num_blocks``, ``max_concurrency`` (two decimals, as logged), ``kv_cache_tokens`` ("GPU KV cache
  size") and ``max_model_len_fit`` (the longest length that fits, one null block kept out; None when
  nothing grows). Where vLLM would not start (one request does not fit, a TP that does not divide
  the heads, a dropped architecture, ...) vLLM mode raises ``vllm.VllmRefusal`` (an
  UnsupportedModelError) with vLLM's reason; its ``details`` hold the figures computed first.
  docs/vllm.md lists every replayed rule.
"""

from __future__ import annotations

import importlib
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterator

from hfkv.engines import layout as lay
from hfkv.engines.contract import ENGINES, Device, EngineInput, EngineKnobs, MemoryBudget
from hfkv.errors import UnsupportedModelError, UsageError

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hfkv.model.report import Report

__all__ = ["ENGINES", "EngineInput", "EngineKnobs", "check_layout", "memory_budget", "simulate"]


def engine_module(name: str) -> ModuleType:
    """The engine's package (``hfkv.engines.vllm`` or ``hfkv.engines.sglang``), imported on first use so
    that a theory report, or one engine's mode, never loads the other engine's rules."""
    return importlib.import_module(f"hfkv.engines.{name}")


def simulate(
    report: Report, *, engine: str, budget_bytes: int | None = None, max_model_len: int | None = None, **knobs: Any
) -> dict:
    """What ``engine`` would allocate for ``report``'s model; the JSON for ``report.extra["engine"]``.

    Always: ``name``, ``version``, ``bytes_per_token`` (the engine's per-token cost per GPU) and
    ``assumptions``. With a budget: ``kv_cache_tokens`` and ``max_concurrency`` as the engine would
    print them, plus the engine's own pool figures (vLLM ``block_size``, ``num_blocks``; SGLang
    ``max_total_num_tokens``, ``max_mamba_cache_size``). Raises UsageError for an unknown engine or knob.
    """
    from hfkv.engines import versions  # the release tables load when an engine is asked, not with the CLI

    name, version = versions.split(engine or "")
    if name not in ENGINES:
        raise UsageError(f"--engine must be one of theory, {', '.join(ENGINES)}; got {engine!r}")
    if budget_bytes is not None and budget_bytes <= 0:
        raise UsageError(f"the KV budget must be positive, got {budget_bytes}")
    resolved = release_knobs(EngineKnobs.resolve(knobs), version)
    with named_release(name, resolved.engine_version):
        return _simulate(report, name, resolved, budget_bytes, max_model_len)


def release_knobs(knobs: EngineKnobs, version: str | None) -> EngineKnobs:
    """``knobs`` with the engine release the spec named (``vllm==0.22.1``); a knob given both ways must agree."""
    if version is None:
        return knobs
    if knobs.engine_version is not None and knobs.engine_version != version:
        raise UsageError(f"engine release given twice: {version} and engine_version={knobs.engine_version}")
    return knobs.replace(engine_version=version)


@contextmanager
def named_release(name: str, version: str | None) -> Iterator[None]:
    """An engine's refusal raised inside is renamed to the release whose rules decided
    ("vLLM would refuse …" -> "vLLM 0.22.1 would refuse …")."""
    from hfkv.engines import versions

    label = versions.ENGINE_LABELS[name]
    try:
        yield
    except UnsupportedModelError as error:
        error.at_release(label, f"{label} {version or versions.newest(name)}")
        raise


def _simulate(report: Report, name: str, resolved: EngineKnobs, budget_bytes: int | None,
              max_model_len: int | None) -> dict:
    model = EngineInput.of(report)
    module = engine_module(name)
    shape = lay.resolve(resolved, model.tensor_parallel_size, name, len(model.layer_specs), model.config)
    resolved = resolved.replace(data_parallel_size=shape.dp, pipeline_parallel_size=shape.pp,
                                enable_dp_attention=shape.dp_attention, enable_expert_parallel=shape.expert_parallel)
    if shape.pp == 1 and shape.attention_tp == model.tensor_parallel_size:
        result = module.simulate(model, budget_bytes=budget_bytes, max_model_len=max_model_len, knobs=resolved)
    else:
        result = lay.simulate_ranks(module.simulate, model, shape, budget_bytes, max_model_len,
                                    rank_knobs(resolved, shape, name))
    from hfkv.engines import versions

    version = resolved.engine_version or versions.newest(name)
    return {"name": name, "version": version, "rules": versions.rule_set(name, version).label,
            "release": versions.described(name, resolved.engine_version), **result,
            "deployment": lay.deployment(result, shape)}


def rank_knobs(knobs: EngineKnobs, shape: lay.Layout, engine: str) -> EngineKnobs:
    """The knobs one DP-attention rank sees: SGLang divides an explicit --max-running-requests by the
    attention DP size (``resolve_max_num_reqs``: per worker)."""
    if engine == "sglang" and shape.dp_attention and knobs.max_running_requests is not None:
        return knobs.replace(max_running_requests=max(1, int(knobs.max_running_requests) // shape.dp))
    return knobs


def check_layout(report: Report, layout: lay.Layout) -> None:
    """The engine's refusal of this layout for this model: PP > 1 on an architecture the engine does
    not run under pipeline parallelism (vLLM's ``SupportsPP``, SGLang's ``pp_proxy_tensors`` test), and
    for SGLang a TP its attention classes assert against when the model is built. Engine modes make the
    same checks before sizing; this is for a serving plan checked as an engine. Raises
    ``UnsupportedModelError`` with the engine's reason; theory checks nothing."""
    if layout.engine in ENGINES:
        with named_release(layout.engine, None):
            engine_module(layout.engine).check_layout(EngineInput.of(report), layout)


def memory_budget(engine: str, report: Report, device: Device, weights_per_gpu: int | None,
                  weights_source: str | None, knobs: EngineKnobs, layout: lay.Layout) -> MemoryBudget:
    """What ``engine`` leaves for its KV pools on one GPU of ``layout`` (``MemoryBudget``: the memory it
    may use, then every term it keeps, each with its source and band): vLLM's
    ``determine_available_memory``, SGLang's ``mem_fraction_static`` and ``_profile_available_bytes``."""
    from hfkv.engines import versions

    name, version = versions.split(engine)
    module = importlib.import_module(f"hfkv.engines.{name}.memory")  # the engine's own module, on first use
    return module.memory_budget(EngineInput.of(report), device, weights_per_gpu, weights_source,
                                release_knobs(knobs, version), layout)
