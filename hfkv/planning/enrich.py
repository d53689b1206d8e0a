"""Sections a report gains from outside the config: weights, a serving plan, an engine mode.

``enrich`` is what the CLI calls after ``inspect_config``; Python users can call it on any report.
Each step is optional and adds one key to ``report.extra`` (merged into the JSON):
``weights``/``weights_bytes`` (Hub safetensors metadata), ``serving`` (``hfkv.planning.serving.plan_serving``)
and ``engine`` (``hfkv.engines.simulate``).
"""

from __future__ import annotations

from typing import Any

from hfkv.errors import UnsupportedModelError
from hfkv.model.weights import attach as attach_weights
from hfkv.model.report import Report


def enrich(
    report: Report,
    *,
    hub: Any = None,
    repo_id: str | None = None,
    revision: str | None = None,
    gpu: str | None = None,
    gpu_memory_utilization: float | None = None,
    weights_bytes: int | None = None,
    engine: str = "theory",
    max_model_len: int | None = None,
    engine_knobs: dict[str, Any] | None = None,
    weights_read_bytes: int | None = None,
) -> Report:
    """Add weights (when ``hub`` and ``repo_id`` are given), a serving plan (with ``gpu`` or an engine
    mode) and the engine's own figures (``engine`` = ``sglang`` or ``vllm``). ``weights_bytes``
    overrides what the Hub says (and is the only source for local files); ``weights_read_bytes`` is
    what a decode step reads of them (MoE: the active experts). The parallel-layout knobs of
    ``engine_knobs`` (DP, DP attention, EP, PP) shape the serving plan too, and with an engine the
    plan's ``verdict`` is the engine's own count. Returns ``report``.
    """
    if weights_bytes is not None:
        attach_weights(report, {"source": "given", "weights_bytes": int(weights_bytes)})
    elif hub is not None and repo_id is not None:
        checkpoint = hub.weights(repo_id, revision)
        if checkpoint is not None:
            attach_weights(report, checkpoint)
    weights_bytes = report.extra.get("weights_bytes")
    if gpu is not None or engine != "theory":
        from hfkv.planning.serving import plan_serving

        if gpu is not None or report.budget_bytes is not None:
            try:
                report.extra["serving"] = plan_serving(
                    report, gpu=gpu, gpu_memory_utilization=gpu_memory_utilization, weights_bytes=weights_bytes,
                    batch=report.batch, weights_read_bytes=weights_read_bytes, layout_knobs=engine_knobs,
                    engine=engine,
                )
            except UnsupportedModelError as err:  # a layout the engine refuses, named like every other error
                raise err.with_source(report.model) from None
    if report.batch and report.budget_bytes is None and "serving" not in report.extra:
        report.warnings.append("--batch asks for the longest context within a budget: give --budget or --gpu")
    if engine != "theory":
        from hfkv.engines import simulate

        budget = (report.extra.get("serving") or {}).get("kv_budget_bytes")
        budget = budget if budget and budget > 0 else None
        knobs = with_gpu_capability(engine_knobs or {}, gpu)
        try:
            report.extra["engine"] = simulate(
                report, engine=engine, budget_bytes=budget, max_model_len=max_model_len, **knobs
            )
        except UnsupportedModelError as err:  # the model the engine cannot size, named like every other error
            raise err.with_source(report.model) from None
        engine_verdict(report)
    return report


def engine_verdict(report: Report) -> None:
    """The serving plan's verdict recounted from the engine mode's own figures, when it has them."""
    from hfkv.planning.serving import engine_requests, verdict

    serving, engine = report.extra.get("serving"), report.extra.get("engine") or {}
    if not serving or serving.get("weights_fit") is False:
        return
    ranks = serving.get("request_ranks") or 1
    requests = engine_requests(engine, ranks)
    if requests is not None:
        serving["verdict"] = verdict(serving, requests)


def with_gpu_capability(knobs: dict[str, Any], gpu: str | None) -> dict[str, Any]:
    """``knobs`` with what a ``--gpu`` preset decides for an engine, where the user left it unset.

    ``compute_capability``: the preset's (backends and block sizes follow it; none off NVIDIA).
    ``max_num_batched_tokens``: vLLM 0.33.0's API-server default for that device
    (``EngineArgs.get_batch_defaults``: 16384 from 160 GiB, 8192 from 70 GiB unless an A100,
    else 2048), read from the memory the device reports. An explicit knob always wins.
    """
    if gpu is None:
        return knobs
    from hfkv.planning.gpus import GIB, parse_gpu

    preset, _ = parse_gpu(gpu)
    out = dict(knobs)
    if out.get("compute_capability") is None and preset.compute_capability is not None:
        out["compute_capability"] = preset.compute_capability
    if out.get("max_num_batched_tokens") is None and preset.vendor == "NVIDIA":
        memory = preset.reported_bytes or preset.memory_bytes
        if memory >= 160 * GIB:
            out["max_num_batched_tokens"] = 16384
        elif memory >= 70 * GIB and "a100" not in preset.name.lower():
            out["max_num_batched_tokens"] = 8192
        else:
            out["max_num_batched_tokens"] = 2048
    return out
