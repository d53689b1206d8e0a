"""Serving planner: from a report and GPUs to the whole-GPU answer — weights, the engine's reserve, the
KV budget, the requests that fit, the longest context for a batch, a decode bound, and the verdict.

All bytes are per GPU, for the fullest pipeline stage at the attention TP. The budget is the engine's
own (``hfkv.engines.memory_budget``): vLLM 0.33.0's ``ceil(total × gpu_memory_utilization)`` less the
weights, its sampler buffers, the profile run's peak activation, non-torch memory and its CUDA-graph
estimate; SGLang 0.5.23's ``free memory × mem_fraction_static`` (its ``ServerArgs`` default replayed)
less the weights. hfkv's own count ("theory") uses vLLM's budget, the most common engine's. Every
term carries its source, and an estimate its band (``memory``). The result of ``plan_serving`` is a
JSON-able dict meant for ``report.extra["serving"]``; its keys are stable:

``gpu``                       preset name, or None when only an explicit budget was given
``gpu_count``                 GPUs of that kind (at least what the layout needs)
``tensor_parallel_size``      TP of the report
``layout``                    the parallel layout (``hfkv.engines.layout.Layout.to_dict``: TP, DP, PP, DP
                              attention, EP, attention TP, GPUs it needs, expert shards, a description)
``engine``                    whose rules made the budget and checked the layout: "theory", "sglang", "vllm"
``replicas``                  independent engine copies (DP without DP attention, × copies of the layout)
``request_ranks``             groups of GPUs that each keep their own requests (DP ranks × copies)
``memory_bytes``              datasheet memory per GPU (``hfkv.planning.gpus``: the GB/GiB reading), or None
``memory_reported_bytes``     what nvidia-smi reports, when a public record exists, else None
``memory_budget_bytes``       the total the engine's budget starts from (CUDA's total), or None
``bandwidth_bytes_per_s``     datasheet peak memory bandwidth per GPU, or None
``gpu_memory_utilization``    the memory fraction of the budget (vLLM's utilization, SGLang's
                              ``mem_fraction_static``), or None with an explicit budget
``weights_bytes``             whole-model weights, or None when unknown
``weights_source``            "given", "metadata", "headers", "estimate" (``hfkv.model.weights``), None
``weights_bytes_per_gpu``     weights of one GPU of the fullest stage (``hfkv.planning.weights.per_gpu``)
``weights_read_bytes``        weights one decode step reads (given; MoE: active experts, an estimate)
``usable_bytes``              what the engine may use per GPU (before the weights), or None
``kv_budget_bytes``           KV budget per GPU after every term (≤ 0: nothing fits), or None
``memory``                    the engine's budget term by term (``MemoryBudget.to_dict``), or None
``budget_source``             "explicit", "gpu", "gpu-without-weights" (an upper bound: weights unknown), None
``weights_fit``               False when the weights alone exceed what the engine may use; None when unknown
``weights_unknown``           why the weights are unknown (the estimate's reason), or None
``contexts``                  one dict per report context: ``tokens``, ``bytes_per_request`` (KV + state +
                              extra copies; fullest stage, attention TP), ``read_bytes_per_step`` r(S),
                              ``max_concurrency`` (per rank), ``max_concurrency_total`` (× request_ranks),
                              ``decode_step_seconds`` {"1": t, "<batch>": t, "<B_max>": t} (lower bounds)
``batch``, ``max_context_for_batch``, ``max_context_unbounded``: the longest context for ``batch`` requests
``max_length``                {"tokens", "bytes_per_request", "fits", "given", "largest"}: one request at the
                              max length (``max_model_len``, else the model's maximum): whether it fits,
                              and if not the longest length one request fits
``beyond_maximum``            {"tokens", "model_maximum"}: a context or max length asked past the model's
                              maximum (the engines refuse it), else None
``decode_includes_weights``   whether the decode bound counts weight reads
``verdict``                   the one line every output prints (``hfkv.planning.verdict``), and
``verdict_detail``            its ``Verdict.to_dict()`` (status, requests, the estimates' range, engines)
``engines``                   theory mode on a GPU: each engine's view of the same deployment, {engine:
                              {"refused", "requests", "tokens", "kv_budget_bytes", "weights_fit"}}
``estimates``                 sentences naming every term that is an estimate or left out
``notes``                     other remarks

Decode step lower bound = (weights read per token per GPU + B·r(S)) / bandwidth: bytes read only, at
peak bandwidth; it ignores compute, communication and every overhead.
"""

from __future__ import annotations

import copy
import dataclasses
from fractions import Fraction
from typing import Any, Callable, Iterable

from hfkv.engines import check_layout, memory_budget
from hfkv.engines import layout as lay
from hfkv.engines.contract import EngineInput, EngineKnobs, MemoryBudget, weights_term
from hfkv.errors import UsageError
from hfkv.model import accounting as acc
from hfkv.planning import weights as est
from hfkv.planning.gpus import GpuPreset, parse_gpu
from hfkv.planning.verdict import verdict

_ESTIMATE_PAGES = (
    "B_max counts exact tokens; engines allocate pages/blocks (vLLM 16 tokens by default), "
    "so they fit slightly fewer requests (engine modes count the blocks)"
)
_ESTIMATE_DECODE = (
    "decode step time is a lower bound from bytes read only (weights + B·r(S)) at the datasheet's peak "
    "bandwidth; compute, communication, kernel launches and sustained-bandwidth losses are ignored"
)
_ESTIMATE_NO_WEIGHTS = (
    "weights unknown (give --weights-bytes): nothing is subtracted for them, so every B_max is an upper bound"
)


MAX_GPUS = 65_536  # one deployment's GPUs: past the largest clusters built; a larger count is a typo


def _resolve_gpu(gpu: str | GpuPreset | None, gpu_count: int) -> tuple[GpuPreset | None, int, bool]:
    """The preset, the count and whether the count was given (``NAME:COUNT`` or ``gpu_count``); ``NAME:COUNT``
    sets the count unless ``gpu_count`` already did. A count above ``MAX_GPUS`` is a UsageError."""
    if gpu is None or isinstance(gpu, GpuPreset):
        preset, count, given = gpu, gpu_count, gpu_count != 1
    else:
        preset, count = parse_gpu(gpu)
        given = ":" in str(gpu) or gpu_count != 1
        count = count if gpu_count == 1 else gpu_count
    if isinstance(count, int) and count > MAX_GPUS:
        said = f"{count:,}" if count < 10**15 else f"a {len(str(count))}-digit number of"
        raise UsageError(f"{said} GPUs is more than one deployment holds (at most {MAX_GPUS:,})")
    return preset, count, given


def _per_request_extra(report) -> Fraction:
    """Extra state copies per request (speculative tokens, prefix snapshots) as the report computed them."""
    for ctx in report.contexts:
        if ctx.extra_state_bytes:
            return Fraction(ctx.extra_state_bytes)
    return Fraction(0)


def _decode_bounds(weights_read: int, reads: Fraction, bandwidth: int | None,
                   batches: Iterable[int]) -> dict[str, float] | None:
    """{"B": seconds} for each batch size: (weights + B·r(S)) / bandwidth."""
    if not bandwidth:
        return None
    return {str(b): float(Fraction(weights_read + b * reads) / bandwidth) for b in sorted(set(batches)) if b >= 1}


def resolve_knobs(knobs: dict | None, gpu_memory_utilization: Any = None) -> EngineKnobs:
    """The engine knobs of a plan: ``knobs`` (CLI or API names), with the API's ``gpu_memory_utilization``
    argument where the knobs leave it unset; a value outside (0, 1] is a ``UsageError``."""
    given = dict(knobs or {})
    if gpu_memory_utilization is not None and given.get("gpu_memory_utilization") is None:
        given["gpu_memory_utilization"] = gpu_memory_utilization
    for name in ("gpu_memory_utilization", "mem_fraction_static"):
        value = given.get(name)
        if value is None:
            continue
        try:
            number = float(Fraction(str(value)))
        except (ValueError, ZeroDivisionError):
            raise UsageError(f"{name}: '{value}' is not a number") from None
        if not 0 < number <= 1:
            raise UsageError(f"{name} must be in (0, 1], got {value}")
        given[name] = number
    return EngineKnobs.resolve(given)


def _resolve_layout(report, knobs: EngineKnobs, engine: str) -> lay.Layout:
    """The parallel layout the knobs ask for, checked as ``engine`` checks it (theory: the SGLang rules);
    a layout the engine refuses for this model raises its refusal (``UnsupportedModelError``)."""
    layout = lay.resolve(knobs, report.tensor_parallel_size, engine, len(report.layer_specs), report.config)
    check_layout(report, layout)
    return layout


def _deployment_gpus(count: int, layout, notes: list[str], given: bool = False) -> int:
    """GPUs of the deployment: ``count``; a single GPU nobody counted (``--gpu H100``) is raised to what the
    layout needs, a count given (``H100:1``) that is too small is a UsageError."""
    gpus_needed = layout.gpus
    if gpus_needed > MAX_GPUS:
        raise UsageError(f"{layout.describe()} needs {gpus_needed:,} GPUs, more than one deployment holds (at most "
                         f"{MAX_GPUS:,})")
    if count < gpus_needed:
        if count != 1 or given:
            raise UsageError(f"{count} GPU{'s' if count != 1 else ''} cannot hold this layout: {layout.describe()} "
                             f"needs {gpus_needed} (give --gpu NAME:{gpus_needed}, or NAME alone)")
        notes.append(f"gpu_count raised to the {gpus_needed} GPUs the layout needs")
        count = gpus_needed
    if count % gpus_needed:
        notes.append(f"{count % gpus_needed} GPU(s) left over: {count} is not a multiple of the layout's {gpus_needed}")
    return count


def _weights(report, weights_bytes: int | None, layout, estimates: list[str],
             knobs: EngineKnobs) -> tuple[int | None, int | None, str | None]:
    """(whole-model weights, weights per GPU, source): the given bytes, else the report's ``weights``
    section (the checkpoint's figures or the estimate from the config), else unknown."""
    section = report.extra.get("weights") or {}
    if section.get("mtp_bytes") and weights_bytes is None and (
            knobs.num_speculative_tokens or knobs.speculative_draft_layers):
        estimates.append(f"weights leave out the checkpoint's MTP layers ({section['mtp_bytes']:,} B): a speculative "
                         "draft that uses them (MTP, SGLang's NEXTN) loads them too, sharing the target's embeddings "
                         "and head; give --weights-bytes to count them")
    source = "given" if weights_bytes is not None else section.get("source")
    if weights_bytes is None:
        weights_bytes = section.get("weights_bytes")
        if weights_bytes is None:
            return None, None, None
        if source == "estimate":
            estimates.append(f"weights estimated from the config's shapes ({section.get('quantization')}): "
                             f"{section.get('error')}")
    per_gpu, how = est.per_gpu(weights_bytes, layout, est.shares(report))
    if layout.tp > 1 or layout.pp > 1:
        simple = layout.expert_shards == layout.attention_tp == layout.tp and layout.pp == 1
        if not simple:
            estimates.append(how)
    return weights_bytes, per_gpu, source


def _weights_read(report, weights_bytes: int | None, weights_read_bytes: int | None, layout, bandwidth,
                  notes: list[str], estimates: list[str]) -> tuple[int | None, int]:
    """(weights a decode step reads for the whole model, per GPU over all stages): the given figure,
    else the active experts' share for MoE (an estimate), else every weight."""
    read = weights_read_bytes
    if read is None and weights_bytes is not None:
        active = est.active_bytes(weights_bytes, report)
        if active is not None:
            read = active[0]
            if bandwidth:
                estimates.append(active[1])
        else:
            read = weights_bytes
            if bandwidth:
                notes.append("decode bound reads every weight each step (dense)")
    if bandwidth and read is None:
        notes.append("weights unknown: the decode bound counts KV/state reads only")
    per_gpu = est.per_gpu(read, layout, est.shares(report))[0] * layout.pp if read is not None else 0
    return read, per_gpu


def _memory(report, preset: GpuPreset, layout, engine: str, knobs: EngineKnobs, weights_per_gpu: int | None,
            weights_source: str | None, estimates: list[str]) -> MemoryBudget:
    """The engine's budget on one GPU of the fullest stage (hfkv's own count takes vLLM's), its
    estimated terms named. A stage's graphs and activations follow its own layers; every stage is
    charged the sampler's (only the last one runs it: an over-count for the others, by design)."""
    stages = lay.stages(list(report.layer_specs), layout.pp)
    fullest = max(stages, key=len)
    model = EngineInput.of(report).for_rank(fullest, report.tensor_parallel_size) if layout.pp > 1 else report
    budget = memory_budget("vllm" if engine == "theory" else engine, model, preset.device(), weights_per_gpu,
                           weights_source, knobs, layout)
    band = (report.extra.get("weights") or {}).get("band_percent") if weights_source == "estimate" else None
    if band:  # the estimate's own band (a generic layout, a padding the GPU's kernels choose), not the default 1%
        terms = tuple(weights_term(weights_per_gpu, weights_source, band) if term.name == "weights" else term
                      for term in budget.terms)
        budget = dataclasses.replace(budget, terms=terms)
    for term in budget.terms:
        if term.source == "estimate" and term.name != "weights":
            estimates.append(f"{term.name} {term.bytes / (1 << 30):.2f} GiB ± {term.error_bytes / (1 << 30):.2f}: "
                             f"{term.note}")
    return budget


def plan_serving(
    report, *, gpu: str | GpuPreset | None = None, gpu_count: int = 1,
    gpu_memory_utilization: float | str | None = None, kv_cache_memory_bytes: int | None = None,
    weights_bytes: int | None = None, batch: int | None = None, weights_read_bytes: int | None = None,
    layout_knobs: dict | None = None, engine: str = "theory", max_model_len: int | None = None,
) -> dict[str, Any]:
    """Plan serving ``report``'s model; see the module docstring for the keys.

    ``gpu`` is a preset name (``"H100"``, ``"H200:8"``) or a ``GpuPreset``. ``kv_cache_memory_bytes``
    (else the report's own budget) replaces the engine's budget (vLLM's ``--kv-cache-memory``).
    ``weights_read_bytes`` is what one decode step reads of the weights for the whole model (MoE: the
    active experts). ``layout_knobs`` are engine knobs (``EngineKnobs`` names: the layout, the memory
    fractions, the scheduler sizes), checked as ``engine`` checks them. Raises ``UsageError`` for a
    bad value, ``UnsupportedModelError`` (the engine's reason) for a layout the engine refuses.
    """
    layers, p = report.layer_specs, report.precision
    if not layers:
        raise UsageError("the report carries no layer specs (build it with hfkv.inspection.inspect_config)")
    notes: list[str] = []
    estimates = [_ESTIMATE_PAGES]
    knobs = resolve_knobs(layout_knobs, gpu_memory_utilization)
    layout = _resolve_layout(report, knobs, engine)
    preset, count, given = _resolve_gpu(gpu, gpu_count)
    if not isinstance(count, int) or count < 1:
        raise UsageError(f"gpu_count must be a positive whole number, got {count}")
    count = _deployment_gpus(count, layout, notes, given)
    copies = count // layout.gpus
    if weights_bytes is not None and weights_bytes < 0:
        raise UsageError(f"weights_bytes must not be negative, got {weights_bytes}")
    if batch is not None and batch < 1:
        raise UsageError(f"batch must be at least 1, got {batch}")
    batch = batch or report.batch

    explicit = kv_cache_memory_bytes if kv_cache_memory_bytes is not None else report.budget_bytes
    if explicit is not None and explicit <= 0:
        raise UsageError(f"kv_cache_memory_bytes must be positive, got {explicit}")
    weights_bytes, per_gpu_weights, weights_source = _weights(report, weights_bytes, layout, estimates, knobs)

    memory = budget = source = weights_fit = usable = None
    if explicit is not None:
        budget, source = int(explicit), "explicit"
        notes.append("KV budget given explicitly: GPU memory, the engine's reserve and the weights do not enter it")
    elif preset is not None:
        memory = _memory(report, preset, layout, engine, knobs, per_gpu_weights, weights_source, estimates)
        usable, budget = memory.usable_bytes, memory.kv_bytes
        if per_gpu_weights is None:
            source = "gpu-without-weights"  # still an answer, an upper bound: the weights are not subtracted
            estimates.append(_ESTIMATE_NO_WEIGHTS)
        else:
            source = "gpu"
            weights_fit = per_gpu_weights < usable
    if explicit is None and preset is None:
        notes.append("no GPU and no budget: concurrency questions are left unanswered")

    stages = lay.stages(list(report.layer_specs), layout.pp)
    attn_tp = layout.attention_tp
    if layout.dp_attention:
        notes.append(f"DP attention: each of the {layout.dp} attention ranks keeps the KV of its own requests, at "
                     f"attention TP {attn_tp}; B_max is per rank, the total counts every rank")
    if layout.expert_parallel and engine == "sglang":
        notes.append("SGLang spells expert parallelism --ep-size: read as --ep-size = TP (experts over the TP group, "
                     "the same share per GPU as TP-sliced experts)")
    if layout.pp > 1:
        notes.append(f"PP {layout.pp}: stages of {', '.join(str(len(s)) for s in stages)} layers (get_pp_indices); "
                     "B_max is the fullest stage's")

    bandwidth = preset.bandwidth_bytes_per_s if preset else None
    if bandwidth:
        estimates.append(_ESTIMATE_DECODE)
    weights_read, weights_read_gpu = _weights_read(report, weights_bytes, weights_read_bytes, layout, bandwidth,
                                                   notes, estimates)

    extra = _per_request_extra(report)
    usable_budget = max(budget, 0) if budget is not None else None
    ranks = layout.request_ranks * copies

    def per_request(S: int) -> Fraction:
        """The fullest stage's bytes for one request of S tokens, per GPU."""
        return max(acc.request_bytes(stage, S, p, attn_tp) for stage in stages) + extra

    contexts = []
    for ctx in report.contexts:
        S = ctx.tokens
        cost = per_request(S)
        reads = sum((acc.read_bytes(stage, S, p, attn_tp) for stage in stages), Fraction(0))
        b_max = acc.max_concurrency(usable_budget, cost) if usable_budget is not None else None
        contexts.append({
            "tokens": S,
            "bytes_per_request": acc.as_number(cost),
            "read_bytes_per_step": acc.as_number(reads),
            "max_concurrency": b_max,
            "max_concurrency_total": None if b_max is None else b_max * ranks,
            "decode_step_seconds": _decode_bounds(weights_read_gpu, reads, bandwidth, [1, batch or 0, b_max or 0]),
        })

    longest, unbounded = None, False
    if batch and usable_budget is not None:
        lengths = [acc.max_context(stage, usable_budget, batch, p, attn_tp, extra) for stage in stages]
        bounded = [n for n in lengths if n is not None]
        longest = min(bounded) if bounded else None
        unbounded = longest is None

    model_max = report.max_position_embeddings
    s_max = max_model_len or model_max or max((c.tokens for c in report.contexts), default=None)
    max_length = None
    if s_max:
        m = per_request(s_max)
        max_length = {"tokens": s_max, "bytes_per_request": acc.as_number(m),
                      "fits": None if budget is None else m <= budget, "given": max_model_len is not None,
                      "largest": None}
        if budget is not None and m > budget:  # the longest length one request fits (the flag that starts)
            lengths = [acc.max_context(stage, max(budget, 0), 1, p, attn_tp, extra) for stage in stages]
            max_length["largest"] = min((n for n in lengths if n is not None), default=None)
    asked = [c.tokens for c in report.contexts] if getattr(report.options, "contexts", None) else []
    beyond = max([t for t in asked + [max_model_len or 0] if model_max and t > model_max], default=None)

    unknown = None
    if weights_bytes is None:
        note = next((n for n in report.notes if n.startswith("weights unknown: ")), "")
        unknown = note.removeprefix("weights unknown: ").split(";")[0] or "no figure"

    plan = {
        "gpu": preset.name if preset else None,
        "gpu_count": count,
        "tensor_parallel_size": report.tensor_parallel_size,
        "layout": layout.to_dict(),
        "engine": engine,
        "replicas": layout.replicas * copies,
        "request_ranks": ranks,
        "memory_bytes": preset.memory_bytes if preset else None,
        "memory_reported_bytes": preset.reported_bytes if preset else None,
        "memory_budget_bytes": preset.cuda_total_bytes if preset else None,
        "bandwidth_bytes_per_s": bandwidth,
        "gpu_memory_utilization": memory.fraction if memory else None,
        "weights_bytes": weights_bytes,
        "weights_source": weights_source,
        "weights_bytes_per_gpu": per_gpu_weights,
        "weights_read_bytes": weights_read,
        "usable_bytes": usable,
        "kv_budget_bytes": budget,
        "memory": memory.to_dict() if memory else None,
        "budget_source": source,
        "weights_fit": weights_fit,
        "weights_unknown": unknown,
        "contexts": contexts,
        "batch": batch,
        "max_context_for_batch": longest,
        "max_context_unbounded": unbounded,
        "max_length": max_length,
        "beyond_maximum": None if beyond is None else {"tokens": beyond, "model_maximum": model_max},
        "decode_includes_weights": bool(bandwidth) and weights_read is not None,
        "estimates": estimates,
        "notes": notes,
    }
    set_verdict(plan)
    if weights_fit is False:
        _warn_once(report, f"the weights do not fit: {per_gpu_weights:,} B per GPU, more than the {usable:,} B "
                           f"{preset.name} leaves to {ENGINE_NAMES.get(engine, engine)}")
    return plan


ENGINE_NAMES = {"theory": "vLLM's budget", "vllm": "vLLM", "sglang": "SGLang"}


def set_verdict(plan: dict[str, Any], counted: dict | None = None, others: dict | None = None,
                counted_band: tuple | None = None, headline: str = "hfkv") -> None:
    """(Re)compute the plan's verdict (``hfkv.planning.verdict``), counted by ``counted``'s engine when
    given (``counted_band``: its results at the two ends of the reserve's band); ``headline`` "vllm": vLLM's
    own count leads (no engine was asked for)."""
    result = verdict(plan, counted, others, counted_band, headline)
    plan["verdict"], plan["verdict_detail"] = result.line, result.to_dict()


def _warn_once(report, text: str) -> None:
    """A warning the report carries into every output format (once, however often it is planned)."""
    if text not in report.warnings:
        report.warnings.append(text)


def gpu_plans(specs: Iterable[str], report, plan: Callable[[Any, str], Any]) -> dict[str, dict[str, Any]]:
    """{GPU spec: the serving plan of ``report`` on it}, for outputs that show several deployments side
    by side (``hfkv watch``'s columns, one per ``--gpu``).

    Each spec is planned by ``plan(twin, spec)`` on its own copy of the report (``twin``: the report
    with its own ``extra``, notes and warnings), e.g. ``hfkv.commands.deploy.Deployment.apply``: the
    one planning path and the one verdict; no figure is computed here. ``report`` itself is left
    unplanned; the warnings a plan adds (the weights do not fit on that GPU, ...) are carried to it.
    A spec the engine refuses (``UnsupportedModelError``), or whose GPUs cannot hold the layout or the
    model (``UsageError``: ``H200:2`` for TP 8, PP over the model's layers), gives ``{"gpu": spec,
    "refused": reason}``.
    """
    from hfkv.errors import UnsupportedModelError

    plans: dict[str, dict[str, Any]] = {}
    for spec in specs:
        twin = copy.copy(report)
        twin.extra, twin.notes, twin.warnings = dict(report.extra), list(report.notes), list(report.warnings)
        try:
            plan(twin, spec)
        except (UnsupportedModelError, UsageError) as err:
            plans[spec] = {"gpu": spec, "refused": err.message}
            continue
        plans[spec] = twin.extra.get("serving") or {"gpu": spec, "refused": "no serving plan"}
        for warning in twin.warnings:
            _warn_once(report, warning)
    return plans
