"""Serving planner: from a report and a GPU to a KV budget, concurrency, longest context and a decode bound.

Pure apart from reading the report (its layers, precision, tensor-parallel size and contexts). All
bytes are per GPU, as in the report. The result of ``plan_serving`` is a JSON-able dict meant for
``report.extra["serving"]``; its keys are stable:

``gpu``                       preset name, or None when only an explicit budget was given
``gpu_count``                 GPUs of that kind (at least the tensor-parallel size)
``tensor_parallel_size``      TP of the report (all bytes per GPU)
``layout``                    the parallel layout (``hfkv.engines.layout.Layout.to_dict``: TP, DP, PP, DP
                              attention, EP, attention TP, GPUs it needs, expert shards, a description)
``engine``                    whose rules checked the layout: "theory", "sglang" or "vllm"
``replicas``                  independent engine copies (DP without DP attention, × copies of the layout)
``request_ranks``             groups of GPUs that each keep their own requests (DP ranks × copies)
``memory_bytes``              datasheet memory per GPU (see ``hfkv.planning.gpus`` for the GB/GiB reading), or None
``memory_reported_bytes``     what the device reports, when a public record exists, else None
``memory_budget_bytes``       what budgets use: the reported memory, else the datasheet's
``bandwidth_bytes_per_s``     datasheet peak memory bandwidth per GPU, or None
``gpu_memory_utilization``    fraction of memory the engine may use (vLLM ``--gpu-memory-utilization``,
                              SGLang ``--mem-fraction-static``); None when the budget was explicit
``weights_bytes``             whole-model weights (given, from the Hub, or estimated), or None when unknown
``weights_source``            "given" (Hub or --weights-bytes), "estimate" (the config's parameter count), None
``weights_bytes_per_gpu``     weights of one GPU of the fullest stage (``hfkv.planning.weights.per_gpu``), or None
``weights_read_bytes``        weights one decode step reads (given; MoE: active experts, an estimate), or None
``usable_bytes``              ceil(reported memory × utilization), or None when the budget was explicit
``kv_budget_bytes``           KV budget per GPU (≤ 0: the weights do not fit, by that many bytes; then
                              ``weights_fit`` is False and the report's warnings say so), or None
``budget_source``             "explicit" (kv_cache_memory_bytes or the report's budget), "gpu",
                              "gpu-without-weights" (an upper bound: weights unknown) or None
``weights_fit``               False when weights alone exceed the usable memory; None when unknown
``contexts``                  one dict per report context: ``tokens``, ``bytes_per_request`` (KV +
                              state + extra state copies; the fullest stage, at attention TP),
                              ``read_bytes_per_step`` r(S) (all stages), ``max_concurrency`` (per rank;
                              None without a budget or when a request costs nothing),
                              ``max_concurrency_total`` (× request_ranks),
                              ``decode_step_seconds`` {"1": t, "<batch>": t, "<B_max>": t} (lower bounds)
``batch``                     the concurrency asked about, or None
``max_context_for_batch``     longest context with ``batch`` requests in the budget (0: not even one
                              token), None when unbounded or not asked
``max_context_unbounded``     True when memory stops growing with S (every layer windowed or recurrent)
``max_length``                {"tokens": S_max, "bytes_per_request": M, "fits": bool | None}: one
                              request at the model's maximum context
``decode_includes_weights``   whether the decode bound counts weight reads (False when weights unknown)
``engine_overhead``           {"bytes", "kv_budget_bytes", "source"}: what an engine keeps besides weights
                              and KV (activations, CUDA graphs, non-torch), an estimate calibrated on
                              startup logs, and the KV budget after it; not subtracted elsewhere. None
                              with an explicit budget
``verdict``                   one line: "fits on 8 × H200-141GB: 40 requests at 160K (SGLang, DP attention)"
                              or "does not fit ...", see ``verdict``; engine modes recount it (``enrich``)
``estimates``                 sentences naming every term that is an estimate or left out
``notes``                     other remarks

KV budget per GPU = ceil(reported memory × utilization) − weights per GPU, the way vLLM 0.33 requests
``ceil(total × gpu_memory_utilization)`` and then subtracts what is not KV. Activations, CUDA graphs,
NCCL buffers and fragmentation are not modelled, so the real budget is smaller.

Decode step lower bound = (weights read per token per GPU + B·r(S)) / bandwidth: bytes read only,
at peak bandwidth; it ignores compute, communication and every overhead.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Iterable

from hfkv.model import accounting as acc
from hfkv.engines import check_layout
from hfkv.engines import layout as lay
from hfkv.engines.contract import EngineKnobs
from hfkv.errors import UsageError
from hfkv.planning import weights as est
from hfkv.planning.gpus import GpuPreset, get_gpu, parse_gpu
from hfkv.units import format_bytes, format_tokens

# vLLM 0.33's default --gpu-memory-utilization (older releases used 0.9).
DEFAULT_GPU_MEMORY_UTILIZATION = Fraction(92, 100)

_ESTIMATE_OVERHEADS = (
    "activations, CUDA graphs, NCCL buffers and allocator fragmentation are not modelled: "
    "the engine's real KV budget is smaller (vLLM also subtracts its profiled peak activation "
    "and a CUDA-graph estimate)"
)
# What vLLM keeps besides weights and KV (profiled activation peak, CUDA graphs, non-torch memory),
# read off the two startup logs of ../shared/docs/engine-logs.tsv that print both "Model loading took"
# and "Available KV cache memory": R04 (Qwen3-14B, 46 GB-class GPU read as an L40S, 0.9): 44.99 × 0.9
# − 27.52 − 11.57 = 1.40 GiB; R27 (gpt-oss-120b, 80 GB-class read as an H100, 0.96): 79.65 × 0.96
# − 65.97 − 8.99 = 1.51 GiB. 1.5 GiB puts both within 1% of the printed KV memory (docs/deployments.md).
ENGINE_OVERHEAD_BYTES = 3 * (1 << 29)
_OVERHEAD_SOURCE = (
    "about 1.5 GiB per GPU for activations, CUDA graphs and non-torch memory: a constant read off two vLLM "
    "startup logs (engine-logs.tsv R04, R27; 2,048–8,192 batched tokens, GPUs inferred); larger batches "
    "(--max-num-batched-tokens 16384) and larger models keep more"
)
_ESTIMATE_WEIGHTS_SPLIT = (
    "weights per GPU = weights / TP; replicated tensors (norms, sometimes embeddings) make the real share larger"
)
_ESTIMATE_DECODE = (
    "decode step time is a lower bound from bytes read only (weights + B·r(S)) at the datasheet's peak "
    "bandwidth; compute, communication, kernel launches and sustained-bandwidth losses are ignored"
)
_ESTIMATE_NO_WEIGHTS = (
    "weights unknown (no Hub metadata; pass --weights-bytes): the budget is memory × utilization with "
    "nothing subtracted for weights, so every B_max is an upper bound"
)
_ESTIMATE_PAGES = (
    "B_max counts exact tokens; engines allocate pages/blocks (vLLM 16 tokens by default), "
    "so they fit slightly fewer requests"
)


def _fraction(value: Any, what: str) -> Fraction:
    try:
        return Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        raise UsageError(f"{what}: '{value}' is not a number") from None


def _utilization(value: Any) -> Fraction:
    util = DEFAULT_GPU_MEMORY_UTILIZATION if value is None else _fraction(value, "gpu_memory_utilization")
    if not 0 < util <= 1:
        raise UsageError(f"gpu_memory_utilization must be in (0, 1], got {value}")
    return util


def _resolve_gpu(gpu: str | GpuPreset | None, gpu_count: int) -> tuple[GpuPreset | None, int]:
    """The preset and count; ``NAME:COUNT`` sets the count unless ``gpu_count`` already did."""
    if gpu is None or isinstance(gpu, GpuPreset):
        return gpu, gpu_count
    preset, count = parse_gpu(gpu)
    return preset, count if gpu_count == 1 else gpu_count


def usable_bytes(memory_bytes: int, utilization: Fraction) -> int:
    """ceil(memory × utilization): what the engine may use (vLLM's ``requested_memory``)."""
    return math.ceil(Fraction(memory_bytes) * utilization)


def weights_per_gpu(weights_bytes: int, tp: int) -> int:
    """ceil(weights / TP)."""
    return -(-int(weights_bytes) // tp)


def _per_request_extra(report) -> Fraction:
    """Extra state copies per request (speculative tokens, prefix snapshots) as the report computed them."""
    for ctx in report.contexts:
        if ctx.extra_state_bytes:
            return Fraction(ctx.extra_state_bytes)
    return Fraction(0)


def _seconds(bytes_read: Fraction, bandwidth: int) -> float:
    return float(Fraction(bytes_read) / bandwidth)


def _decode_bounds(
    weights_read: int, reads: Fraction, bandwidth: int | None, batches: Iterable[int]
) -> dict[str, float] | None:
    """{"B": seconds} for each batch size: (weights + B·r(S)) / bandwidth."""
    if not bandwidth:
        return None
    return {str(b): _seconds(weights_read + b * reads, bandwidth) for b in sorted(set(batches)) if b >= 1}


def _resolve_layout(report, layout_knobs: dict | None, engine: str):
    """The parallel layout the knobs ask for, checked as ``engine`` checks it (theory: the SGLang rules)."""
    layout = lay.resolve(EngineKnobs.resolve(layout_knobs), report.tensor_parallel_size, engine,
                         len(report.layer_specs), report.config)
    check_layout(report, layout)  # PP on an architecture the engine will not pipeline: its refusal
    return layout


def _deployment_gpus(count: int, layout, notes: list[str]) -> int:
    """GPUs of the deployment: ``count``, the default single GPU raised to what the layout needs."""
    gpus_needed = layout.gpus
    if count < gpus_needed:
        if count != 1:
            raise UsageError(f"{count} GPUs cannot hold this layout: {layout.describe()} needs {gpus_needed}")
        notes.append(f"gpu_count raised to the {gpus_needed} GPUs the layout needs")
        count = gpus_needed
    if count % gpus_needed:
        notes.append(f"{count % gpus_needed} GPU(s) left over: {count} is not a multiple of the layout's {gpus_needed}")
    return count


def _weights(report, weights_bytes: int | None, layout, estimates: list[str]) -> tuple[int | None, int | None, str | None]:
    """(whole-model weights, weights per GPU, source): the given bytes, else the report's ``weights``
    section (the checkpoint's figures or the estimate from the config), else unknown."""
    section = report.extra.get("weights") or {}
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
        estimates.append(_ESTIMATE_WEIGHTS_SPLIT if simple else how)
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


def plan_serving(
    report, *, gpu: str | GpuPreset | None = None, gpu_count: int = 1,
    gpu_memory_utilization: float | str | None = None, kv_cache_memory_bytes: int | None = None,
    weights_bytes: int | None = None, batch: int | None = None, weights_read_bytes: int | None = None,
    layout_knobs: dict | None = None, engine: str = "theory",
) -> dict[str, Any]:
    """Plan serving ``report``'s model; see the module docstring for the keys.

    ``gpu`` is a preset name (``"H100"``, ``"H200:8"``) or a ``GpuPreset``. ``kv_cache_memory_bytes``
    (else the report's own budget) overrides the budget computed from the GPU. ``weights_read_bytes``
    is what one decode step reads of the weights for the whole model (MoE: the active experts);
    it defaults to ``weights_bytes``, which is right for dense models only. ``layout_knobs`` are the
    engine knobs of ``hfkv.engines.layout`` (DP, DP attention, EP, PP), checked as ``engine`` checks
    them. Raises ``UsageError`` (``LayoutRefusal`` for a layout the engine refuses).
    """
    layers, p, tp = report.layer_specs, report.precision, report.tensor_parallel_size
    if not layers:
        raise UsageError("the report carries no layer specs (build it with hfkv.inspection.inspect_config)")
    notes: list[str] = []
    estimates = [_ESTIMATE_OVERHEADS, _ESTIMATE_PAGES]
    layout = _resolve_layout(report, layout_knobs, engine)
    preset, count = _resolve_gpu(gpu, gpu_count)
    if not isinstance(count, int) or count < 1:
        raise UsageError(f"gpu_count must be a positive whole number, got {count}")
    count = _deployment_gpus(count, layout, notes)
    copies = count // layout.gpus
    if weights_bytes is not None and weights_bytes < 0:
        raise UsageError(f"weights_bytes must not be negative, got {weights_bytes}")
    if batch is not None and batch < 1:
        raise UsageError(f"batch must be at least 1, got {batch}")
    batch = batch or report.batch

    explicit = kv_cache_memory_bytes if kv_cache_memory_bytes is not None else report.budget_bytes
    if explicit is not None and explicit <= 0:
        raise UsageError(f"kv_cache_memory_bytes must be positive, got {explicit}")
    weights_bytes, per_gpu_weights, weights_source = _weights(report, weights_bytes, layout, estimates)

    util = budget = source = weights_fit = usable = None
    if explicit is not None:
        budget, source = int(explicit), "explicit"
        notes.append("KV budget given explicitly: GPU memory, utilization and weights do not enter it")
    elif preset is not None:
        util = _utilization(gpu_memory_utilization)
        usable = usable_bytes(preset.device_bytes, util)
        if per_gpu_weights is None:
            # Still answer, but as an upper bound: the weights' share is not subtracted.
            budget, source = usable, "gpu-without-weights"
            estimates.append(_ESTIMATE_NO_WEIGHTS)
        else:
            budget, source = usable - per_gpu_weights, "gpu"
            weights_fit = budget > 0
            if not weights_fit:
                _warn_once(report, f"the weights do not fit: {per_gpu_weights:,} B per GPU, more than the "
                                   f"{usable:,} B {preset.name} leaves at utilization {float(util):g}; no KV budget")
        if preset.reported_bytes:
            notes.append(
                f"{preset.name}: budgets use the {preset.reported_bytes:,} B the device reports (engines multiply "
                f"the reported total); the datasheet's {preset.memory_quoted} reads as {preset.memory_bytes:,} B"
            )
    if explicit is None and preset is None:
        notes.append("no GPU and no budget: concurrency questions are left unanswered")

    stages = _stages(report, layout)
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
            "decode_step_seconds": _decode_bounds(
                weights_read_gpu, reads, bandwidth, [1, batch or 0, b_max or 0]),
        })

    longest, unbounded = None, False
    if batch and usable_budget is not None:
        lengths = [acc.max_context(stage, usable_budget, batch, p, attn_tp, extra) for stage in stages]
        bounded = [n for n in lengths if n is not None]
        longest = min(bounded) if bounded else None
        unbounded = longest is None

    s_max = report.max_position_embeddings or max((c.tokens for c in report.contexts), default=None)
    max_length = None
    if s_max:
        m = per_request(s_max)
        max_length = {
            "tokens": s_max,
            "bytes_per_request": acc.as_number(m),
            "fits": None if budget is None else m <= budget,
        }

    plan = {
        "gpu": preset.name if preset else None,
        "gpu_count": count,
        "tensor_parallel_size": tp,
        "layout": layout.to_dict(),
        "engine": engine,
        "replicas": layout.replicas * copies,
        "request_ranks": ranks,
        "memory_bytes": preset.memory_bytes if preset else None,
        "memory_reported_bytes": preset.reported_bytes if preset else None,
        "memory_budget_bytes": preset.device_bytes if preset else None,
        "bandwidth_bytes_per_s": bandwidth,
        "gpu_memory_utilization": float(util) if util is not None else None,
        "weights_bytes": weights_bytes,
        "weights_source": weights_source,
        "weights_bytes_per_gpu": per_gpu_weights,
        "weights_read_bytes": weights_read,
        "usable_bytes": usable,
        "kv_budget_bytes": budget,
        "budget_source": source,
        "weights_fit": weights_fit,
        "contexts": contexts,
        "batch": batch,
        "max_context_for_batch": longest,
        "max_context_unbounded": unbounded,
        "max_length": max_length,
        "decode_includes_weights": bool(bandwidth) and weights_read is not None,
        "engine_overhead": _overhead(budget, source),
        "estimates": estimates,
        "notes": notes,
    }
    plan["verdict"] = verdict(plan)
    return plan


def _overhead(budget: int | None, source: str | None) -> dict[str, Any] | None:
    """The engine's own keep (an estimate, not subtracted from ``kv_budget_bytes``) and the budget after it."""
    if budget is None or source == "explicit":
        return None
    return {"bytes": ENGINE_OVERHEAD_BYTES, "kv_budget_bytes": budget - ENGINE_OVERHEAD_BYTES,
            "source": _OVERHEAD_SOURCE}


def _stages(report, layout) -> list[list]:
    return lay.stages(list(report.layer_specs), layout.pp)


def _warn_once(report, text: str) -> None:
    """A warning the report carries into every output format (once, however often it is planned)."""
    if text not in report.warnings:
        report.warnings.append(text)


def gpu_budget(
    preset: GpuPreset, tp: int, weights_bytes: int | None,
    utilization: Fraction = DEFAULT_GPU_MEMORY_UTILIZATION,
) -> int:
    """KV budget per GPU on ``preset``: ceil(memory × utilization) − ceil(weights / TP), at least 0."""
    weights = weights_per_gpu(weights_bytes, tp) if weights_bytes is not None else 0
    return max(usable_bytes(preset.device_bytes, utilization) - weights, 0)


def gpu_budgets(
    names: Iterable[str], report, weights_bytes: int | None = None,
    gpu_memory_utilization: float | str | None = None,
) -> dict[str, int]:
    """{column name: KV budget per GPU} for ``render_markdown(report, budgets=...)``.

    The column is the preset's name; when ``weights_bytes`` is None the weights cannot be subtracted
    and the name says so (``"H200-141GB (weights unknown)"``), since B_max is then an upper bound.
    A GPU whose memory the weights fill gets budget 0 (B_max 0).
    """
    util = _utilization(gpu_memory_utilization)
    suffix = "" if weights_bytes is not None else " (weights unknown)"
    budgets: dict[str, int] = {}
    for name in names:
        preset = get_gpu(name)
        budgets[preset.name + suffix] = gpu_budget(preset, report.tensor_parallel_size, weights_bytes, util)
    return budgets


# -- the verdict -----------------------------------------------------------------------------------

ENGINE_LABELS = {"theory": "hfkv", "sglang": "SGLang", "vllm": "vLLM"}


def layout_label(plan: dict[str, Any]) -> str:
    """"(SGLang, DP attention)", "(vLLM, DP 8, EP)", "(hfkv, TP 8)": who counted, in which layout."""
    shape = plan.get("layout") or {}
    words = [ENGINE_LABELS.get(plan.get("engine") or "theory", "hfkv")]
    if shape.get("enable_dp_attention"):
        words.append("DP attention")
    elif (shape.get("data_parallel_size") or 1) > 1:
        words.append(f"DP {shape['data_parallel_size']}")
    if (shape.get("pipeline_parallel_size") or 1) > 1:
        words.append(f"PP {shape['pipeline_parallel_size']}")
    if shape.get("enable_expert_parallel"):
        words.append("EP")
    if len(words) == 1:
        words.append(f"TP {plan.get('tensor_parallel_size', 1)}")
    return "(" + ", ".join(words) + ")"


def _where(plan: dict[str, Any]) -> str:
    return f"on {plan['gpu_count']} × {plan['gpu']}" if plan.get("gpu") else "in the given KV budget"


def _caveat(plan: dict[str, Any]) -> str:
    if plan.get("budget_source") == "gpu-without-weights":
        return "; an upper bound: weights unknown"
    if plan.get("weights_source") == "estimate" and plan.get("budget_source") == "gpu":
        return "; weights estimated from the config's shapes"
    return ""


def verdict(plan: dict[str, Any], requests: dict[int, int] | None = None) -> str:
    """One line: "fits on 8 × H200-141GB: 37 requests at 128K (SGLang, DP attention)" or "does not fit ...".

    ``requests`` ({tokens: requests in flight across the deployment}) defaults to the plan's own
    totals; only contexts up to the model's maximum count. The longest context where at least one
    request fits is named, with the longest one asked about when none fits there.
    """
    where, label = _where(plan), layout_label(plan)
    if plan.get("weights_fit") is False:
        return (f"does not fit {where}: weights need {format_bytes(plan['weights_bytes_per_gpu'])} per GPU of "
                f"{format_bytes(plan['usable_bytes'])} usable {label}")
    if plan.get("kv_budget_bytes") is None:
        return "no verdict: give --gpu or --budget"
    limit = (plan.get("max_length") or {}).get("tokens")
    if requests is None:
        requests = {c["tokens"]: c.get("max_concurrency_total") or 0 for c in plan.get("contexts", [])}
    asked = sorted((t for t in requests if not limit or t <= limit), reverse=True) or sorted(requests, reverse=True)
    if not asked:
        return "no verdict: no context to count requests at"
    fitting = [t for t in asked if requests[t] >= 1]
    if not fitting:
        return (f"does not fit {where}: not one request at {format_tokens(asked[-1])} in the "
                f"{format_bytes(max(plan['kv_budget_bytes'], 0))} KV budget per GPU {label}{_caveat(plan)}")
    best = fitting[0]
    count = requests[best]
    text = f"fits {where}: {count:,} request{'s' if count != 1 else ''} at {format_tokens(best)} {label}"
    if best != asked[0]:
        text += f"; none at {format_tokens(asked[0])}"
    return text + _caveat(plan)


def engine_requests(engine: dict[str, Any], ranks: int) -> dict[int, int] | None:
    """{context: whole requests across the deployment} from an engine mode's own figures, or None.

    SGLang's ``max_concurrency`` (tokens / context, capped by running requests) and vLLM's logged
    "Maximum concurrency" (a float: whole requests are its floor) at the engine's max length, × the
    ranks that keep their own requests.
    """
    concurrency = engine.get("max_concurrency")
    length = engine.get("max_model_len") or engine.get("context_length")
    if concurrency is None or not length:
        return None
    return {int(length): int(concurrency) * ranks}
