"""Sections a report gains from outside the config: given weights, a serving plan, an engine mode.

``enrich`` is what every command calls after inspecting a config; Python users can call it on any
report (``hfkv.inspect(..., gpu=...)`` does). Each step is optional and adds one key to
``report.extra`` (merged into the JSON): ``weights``/``weights_bytes`` (``--weights-bytes``),
``serving`` (``hfkv.planning.serving.plan_serving``, with its verdict) and ``engine``
(``hfkv.engines.simulate``).

With an engine, the verdict is that engine's own count in its own budget. Without one (hfkv's exact
count) and with a GPU, each engine is asked too, in its own budget and at the verdict's context: the
verdict names an engine that refuses, or whose count differs by more than 10%, and a layout every
engine refuses is never said to fit.
"""

from __future__ import annotations

from typing import Any

from hfkv.engines import ENGINES, simulate, versions
from hfkv.errors import UnsupportedModelError
from hfkv.model.report import Report
from hfkv.model.weights import attach as attach_weights
from hfkv.planning.gpus import parse_gpu
from hfkv.planning.serving import plan_serving, set_verdict
from hfkv.planning.verdict import engine_requests


def enrich(
    report: Report,
    *,
    hub: Any = None,
    repo_id: str | None = None,
    revision: str | None = None,
    gpu: str | None = None,
    gpu_memory_utilization: float | None = None,
    weights_bytes: int | None = None,
    engine: str = "auto",
    max_model_len: int | None = None,
    engine_knobs: dict[str, Any] | None = None,
    weights_read_bytes: int | None = None,
) -> Report:
    """Add given weights (``weights_bytes``; or the Hub's, from ``hub`` and ``repo_id``), a serving plan
    (with ``gpu``, or a budget and an engine mode) and the engine's own figures (``engine`` = ``sglang``
    or ``vllm``, optionally ``==VERSION``). ``auto`` (the default) plans as ``theory`` does (hfkv's exact
    count, each engine asked) but the verdict leads with vLLM's own count, the one a user will see;
    ``theory`` leads with hfkv's. ``weights_read_bytes`` is what a decode step reads of the weights (MoE: the active
    experts). ``engine_knobs`` (``EngineKnobs`` names: the layout, memory fractions, scheduler sizes)
    shape the plan and the engine mode alike. Returns ``report``.
    """
    if weights_bytes is not None:
        attach_weights(report, {"source": "given", "weights_bytes": int(weights_bytes)})
    elif hub is not None and repo_id is not None:
        checkpoint = hub.weights(repo_id, revision)
        if checkpoint is not None:
            attach_weights(report, checkpoint)
    engine, version = versions.split(engine)
    headline = "vllm" if engine == "auto" else "hfkv"
    engine = "theory" if engine == "auto" else engine
    knobs = dict(engine_knobs or {})
    if version is not None:
        knobs["engine_version"] = version
    knobs = gpu_defaults(knobs, gpu, engine)
    if gpu_memory_utilization is not None and knobs.get("gpu_memory_utilization") is None:
        knobs["gpu_memory_utilization"] = gpu_memory_utilization
    plan = None
    if gpu is not None or (engine != "theory" and report.budget_bytes is not None):
        plan = report.extra["serving"] = _plan(report, gpu, engine, knobs, weights_read_bytes, max_model_len)
    if report.batch and report.budget_bytes is None and plan is None:
        report.warnings.append("--batch asks for the longest context within a budget: give --budget or --gpu")
    if plan is not None and engine != "theory":
        plan["engine_release"] = f"{versions.ENGINE_LABELS[engine]} {version or versions.newest(engine)}"
    if engine != "theory":
        report.extra["engine"] = _central(report, engine, plan, max_model_len, knobs)
        if plan is not None and plan.get("weights_fit") is not False:
            band = _band_results(report, engine, plan, max_model_len, knobs)
            set_verdict(plan, counted=report.extra["engine"], counted_band=band)
    elif plan is not None and gpu is not None:
        others = {name: _engine_view(report, gpu, name, _for_engine(knobs, name), weights_read_bytes, plan)
                  for name in ENGINES}
        plan["engines"] = others
        set_verdict(plan, others=others, headline=headline)
    return report


def _for_engine(knobs: dict, name: str) -> dict:
    """The knobs ``name`` is asked with beside hfkv's own count: a release pinned for the budget is vLLM's
    (theory's budget is vLLM's); SGLang is asked at its newest modelled release."""
    return knobs if name == "vllm" else {key: value for key, value in knobs.items() if key != "engine_version"}


def _plan(report: Report, gpu: str | None, engine: str, knobs: dict, weights_read_bytes: int | None,
          max_model_len: int | None = None) -> dict:
    try:
        return plan_serving(report, gpu=gpu, batch=report.batch, weights_read_bytes=weights_read_bytes,
                            layout_knobs=knobs, engine=engine, max_model_len=max_model_len)
    except UnsupportedModelError as err:  # a layout the engine refuses, named like every other error
        raise err.with_source(report.model) from None


def _simulate(report: Report, engine: str, plan: dict | None, max_model_len: int | None, knobs: dict) -> dict:
    budget = (plan or {}).get("kv_budget_bytes")
    try:
        return simulate(report, engine=engine, budget_bytes=budget if budget and budget > 0 else None,
                        max_model_len=max_model_len, **knobs)
    except UnsupportedModelError as err:  # the model the engine cannot size, named like every other error
        raise err.with_source(report.model) from None


def _central(report: Report, engine: str, plan: dict | None, max_model_len: int | None, knobs: dict) -> dict:
    """The engine's result at the central estimate of its budget. Where that budget is hfkv's estimate
    (a GPU, not a given figure) and the engine refuses for it, the refusal says the memory is an estimate
    with its band, and whether the band's high end would start."""
    try:
        return _simulate(report, engine, plan, max_model_len, knobs)
    except UnsupportedModelError as err:
        band = ((plan or {}).get("memory") or {}).get("error_bytes") or 0
        if not band or getattr(err, "details", None) is None or (plan or {}).get("budget_source") != "gpu":
            raise
        high = _band_results(report, engine, plan, max_model_len, knobs)
        starts = high is not None and high[1] is not None
        err.message += (f" (the available memory is hfkv's estimate of this start, ±{band / (1 << 30):.2f} GiB"
                        + ("; at the band's high end it would start: it may start" if starts else "") + ")")
        raise


def _band_results(report: Report, engine: str, plan: dict, max_model_len: int | None,
                  knobs: dict) -> tuple[dict | None, dict | None] | None:
    """The engine's results with its budget less and plus the reserve's band (None: no band, or no
    budget); an end the band empties is None. The count's range is then the engine's own arithmetic."""
    band = (plan.get("memory") or {}).get("error_bytes") or 0
    budget = plan.get("kv_budget_bytes")
    if not band or budget is None or budget <= 0:
        return None
    ends = []
    for edge in (budget - band, budget + band):
        try:
            ends.append(_simulate(report, engine, {"kv_budget_bytes": edge}, max_model_len, knobs) if edge > 0 else None)
        except UnsupportedModelError:  # the engine would not start at this end of the band: it counts none there
            ends.append(None)
    return ends[0], ends[1]


def _engine_view(report: Report, gpu: str, engine: str, knobs: dict, weights_read_bytes: int | None,
                 theory: dict) -> dict[str, Any]:
    """What ``engine`` says of this deployment, at the context of hfkv's verdict: {"requests", "tokens",
    "kv_budget_bytes"} in its own budget, or {"refused": its one-line reason}."""
    tokens = (theory.get("verdict_detail") or {}).get("tokens")
    try:
        plan = plan_serving(report, gpu=gpu, batch=report.batch, weights_read_bytes=weights_read_bytes,
                            layout_knobs=knobs, engine=engine)
        budget = plan.get("kv_budget_bytes")
        view = {"refused": None, "tokens": tokens, "requests": None, "kv_budget_bytes": budget,
                "weights_fit": plan.get("weights_fit")}
        if plan.get("weights_fit") is False or (budget is not None and budget <= 0):
            return view | {"requests": 0}
        if tokens is None or not budget:
            return view
        result = simulate(report, engine=engine, budget_bytes=budget, max_model_len=tokens, **knobs)
        ranks = plan.get("request_ranks") or 1
        counted = engine_requests(result, ranks)
        low, high = _view_band(report, engine, knobs, plan, tokens, ranks)
        return view | {"requests": next(iter(counted.values())) if counted else None, "requests_low": low,
                       "requests_high": high, "release": result["release"].split(":")[0].removesuffix(
                           " (newest modelled)")}
    except UnsupportedModelError as err:
        return {"refused": err.message, "tokens": tokens, "requests": None, "kv_budget_bytes": None, "weights_fit": None}


def _view_band(report: Report, engine: str, knobs: dict, plan: dict, tokens: int,
               ranks: int) -> tuple[int | None, int | None]:
    """The engine's own count at the two ends of its budget's band (0 where it would not start)."""
    ends = _band_results(report, engine, plan, tokens, knobs)
    if ends is None:
        return None, None
    counts = [(engine_requests(result, ranks) or {}).get(tokens, 0) if result else 0 for result in ends]
    return counts[0], counts[1]


def gpu_defaults(knobs: dict[str, Any], gpu: str | None, engine: str = "theory") -> dict[str, Any]:
    """``knobs`` with what a ``--gpu`` preset decides for the engines, where the user left it unset.

    ``compute_capability``: the preset's (backends and block sizes follow it; none off NVIDIA).
    ``max_num_batched_tokens`` and ``max_num_seqs``: vLLM's API-server defaults for that device
    (``EngineArgs.get_batch_defaults``, from the memory NVML reports), of the release asked for with
    ``engine`` "vllm" (else the newest modelled). An explicit knob always wins.
    """
    out = dict(knobs)
    if gpu is None:
        return out
    from hfkv.engines.vllm.memory import batch_defaults  # vLLM's rule, loaded with a GPU only
    from hfkv.engines.vllm.rules import rules

    preset, _ = parse_gpu(gpu)
    if out.get("compute_capability") is None and preset.compute_capability is not None:
        out["compute_capability"] = preset.compute_capability
    if preset.vendor == "NVIDIA":
        batched, seqs = batch_defaults(preset.device(), rules(knobs.get("engine_version") if engine == "vllm" else None))
        if out.get("max_num_batched_tokens") is None:
            out["max_num_batched_tokens"] = batched
        if out.get("max_num_seqs") is None:
            out["max_num_seqs"] = seqs
    return out
