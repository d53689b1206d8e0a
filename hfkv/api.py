"""The Python API, as the commands use it: a report with its serving plan, and the layout search.

``inspect(source, gpu="H200:8", engine="vllm", tp=8, ...)`` is ``hfkv.inspection.inspect`` followed by
``hfkv.planning.enrich.enrich``: the keyword arguments are ``Options`` fields (``kv_cache_dtype``,
``contexts``, ``budget_bytes``, ...), ``EngineKnobs`` fields (``data_parallel_size``,
``gpu_memory_utilization``, ``max_num_seqs``, ...), and ``tp`` for ``tensor_parallel_size``. The report's
``serving`` (typed: ``hfkv.model.serving.Serving``) and ``engine`` hold the plan and the engine's figures.

``plan(model, requests=, context=, gpu=)`` answers the inverse question (``hfkv.planning.search``).
"""

from __future__ import annotations

import os
from typing import Any

from hfkv.engines.contract import EngineKnobs
from hfkv.errors import HfkvError, UsageError
from hfkv.inspection import inspect_config as _inspect_config
from hfkv.inspection import inspect_loaded
from hfkv.model.options import Options, make_options
from hfkv.model.report import Report
from hfkv.model.weights import attach as attach_weights
from hfkv.planning.enrich import enrich
from hfkv.planning.search import KV_DTYPES, Search, search
from hfkv.sources import load_config, looks_like_repo_id
from hfkv.sources.parse import check_depth

_OPTIONS = frozenset(Options.model_fields)
_KNOBS = frozenset(EngineKnobs.names())
_LAYOUT = ("data_parallel_size", "enable_dp_attention", "pipeline_parallel_size")  # in both: the figures follow it


def _split(given: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(``Options`` fields, engine knobs) of the keyword arguments; ``tp`` is ``tensor_parallel_size``."""
    given = dict(given)
    if "tp" in given:
        if "tensor_parallel_size" in given:
            raise UsageError("give tp or tensor_parallel_size, not both")
        given["tensor_parallel_size"] = given.pop("tp")
    unknown = sorted(set(given) - _OPTIONS - _KNOBS)
    if unknown:
        raise UsageError(f"unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(_OPTIONS | _KNOBS))})")
    options = {k: v for k, v in given.items() if k in _OPTIONS and v is not None}
    knobs = {k: v for k, v in given.items() if k in _KNOBS and v is not None}
    return options, knobs


def _hub(source: Any, hub: Any, weights: bool) -> Any:
    if hub is None and isinstance(source, str) and looks_like_repo_id(source):
        from hfkv.sources.hub import HubClient  # deferred: huggingface_hub only for a Hub source

        return HubClient(prefetch_weights=weights)
    return hub


def inspect(source: "str | os.PathLike[str]", *, hub: Any = None, revision: str | None = None, weights: bool = True,
            options: Options | None = None, gpu: str | None = None, engine: str = "auto",
            weights_bytes: int | None = None, max_model_len: int | None = None, **given: Any) -> Report:
    """Report on one model, with a serving plan when ``gpu`` (or an engine and a budget) is given.

    ``source``: a ``config.json`` path, a model folder, or a Hub repo id (``org/name[@rev]``); the
    weights come from the Hub's safetensors metadata, a local folder's headers, else the config
    (``weights=False``: no Hub request for them). ``options``: an ``Options`` the keyword fields
    override. Raises ``SourceError``, ``ConfigError`` (or ``UnsupportedModelError``, with an engine's
    reason) and ``UsageError``, each naming the source.
    """
    fields, knobs = _split(given)
    settings = make_options(options, **fields)  # bad options fail before anything is fetched
    EngineKnobs.resolve(knobs)  # and bad knob names too
    hub = _hub(source, hub, weights)
    report = inspect_loaded(load_config(source, hub=hub, revision=revision), settings, hub=hub if weights else None)
    return _enrich(report, gpu, engine, weights_bytes, max_model_len, knobs)


def inspect_config(data: Any, *, model: str = "config.json", options: Options | None = None,
                   commit: str | None = None, source: str | None = None, gpu: str | None = None,
                   engine: str = "auto", weights_bytes: int | None = None, max_model_len: int | None = None,
                   **given: Any) -> Report:
    """``inspect`` on a config dict already loaded (``model`` names it in messages; ``commit`` and
    ``source`` are recorded as its provenance)."""
    fields, knobs = _split(given)
    check_depth(data, model)  # a dict 1,000 levels deep (or holding itself): one ConfigError, not RecursionError
    report = _inspect_config(data, model=model, options=make_options(options, **fields), commit=commit,
                             source=source)
    return _enrich(report, gpu, engine, weights_bytes, max_model_len, knobs)


def _enrich(report: Report, gpu: str | None, engine: str, weights_bytes: int | None, max_model_len: int | None,
            knobs: dict[str, Any]) -> Report:
    if gpu is None and engine in ("auto", "theory") and weights_bytes is None:
        return report
    return enrich(report, gpu=gpu, engine=engine, weights_bytes=weights_bytes, max_model_len=max_model_len,
                  engine_knobs=knobs)


def plan(model: "str | os.PathLike[str]", *, requests: int, context: int, gpu: str = "H200", engine: str = "both",
         max_gpus: int = 8, gpus_per_node: int = 8, kv_cache_dtypes: tuple[str, ...] = KV_DTYPES,
         hub: Any = None, revision: str | None = None, weights: bool = True, weights_bytes: int | None = None,
         **knobs: Any) -> Search:
    """The layouts that hold ``requests`` requests of ``context`` tokens on ``gpu``, smallest GPU count
    first, then by requests per GPU (``Search.kept``), and every other layout tried with why it was
    dropped (``Search.dropped``). ``engine``: vllm, sglang or both. ``knobs``: engine knobs every
    layout keeps (``gpu_memory_utilization``, ``max_num_seqs``, ...)."""
    if requests < 1 or context < 1:
        raise UsageError("requests and context must be positive")
    if max_gpus < 1 or gpus_per_node < 1:
        raise UsageError("max_gpus and gpus_per_node must be positive")
    unknown = sorted(set(knobs) - _KNOBS)
    if unknown:
        raise UsageError(f"unknown engine option(s) {', '.join(unknown)}")
    hub = _hub(model, hub, weights)
    loaded = load_config(model, hub=hub, revision=revision)
    first = inspect_loaded(loaded, make_options(), hub=hub if weights else None)
    checkpoint = {"source": "given", "weights_bytes": int(weights_bytes)} if weights_bytes is not None else None
    section = first.extra.get("weights")

    def inspect_at(**fields: Any) -> Report:
        report = _inspect_config(loaded.data, model=loaded.name, options=make_options(**fields))
        report.warnings[:0] = list(loaded.warnings)
        if checkpoint is not None:
            attach_weights(report, checkpoint)
        elif section is not None and section.get("source") != "estimate":
            attach_weights(report, section)  # the checkpoint's figures, fetched once
        return report

    args = (["--weights-bytes", str(int(weights_bytes))] if weights_bytes is not None else []) + \
        (["--revision", revision] if revision else []) + ([] if weights else ["--no-weights"])
    return search(inspect_at, loaded.name, requests=requests, context=context, gpu=gpu, engine=engine,
                  max_gpus=max_gpus, gpus_per_node=gpus_per_node, kv_dtypes=kv_cache_dtypes, extra_knobs=knobs,
                  extra_args=args)


def explain_log(text: str, model: "str | os.PathLike[str] | None" = None, *, hub: Any = None,
                revision: str | None = None, gpu: str | None = None, weights: bool = True,
                requests: int | None = None) -> Any:
    """A vLLM or SGLang start-up log explained (``hfkv.planning.explain.Explanation``): every figure
    it prints, read with its line (``hfkv.sources.startup_log.parse_log``), beside what hfkv computes
    for it: the tokens and concurrency from the printed KV memory, and the printed weights against
    the checkpoint's. ``model`` (a path or repo id) overrides the model the log names; ``gpu``
    (``NAME[:COUNT]``) the GPU it names; ``requests`` the count the utilization or fraction answer is for
    (default: the log's max_num_seqs, else one more than fit). Raises ``NotAStartupLog`` (exit code 2) for a text that is not
    a start-up log, and, for a ``model`` given here, the errors ``inspect`` raises; a model the log
    names that cannot be resolved is ``Explanation.model_error``, with every parsed figure kept."""
    from hfkv.planning.explain import explain, settings_from_log  # deferred: loaded for a log only
    from hfkv.sources.startup_log import parse_log

    parsed = parse_log(text)
    capability = _capability(gpu or parsed.gpu, strict=gpu is not None)
    source = model if model is not None else parsed.model
    if source is None:
        return explain(parsed, None, model_error="the log names no model: give --model (Python: model=)",
                       compute_capability=capability, gpu=gpu, requests=requests)
    fields, _, _ = settings_from_log(parsed)
    try:
        hub = _hub(source, hub, weights)
        loaded = load_config(source, hub=hub, revision=revision)
        report = inspect_loaded(loaded, make_options(**fields), hub=hub if weights else None)
    except (HfkvError, OSError) as err:
        if model is not None:
            raise
        return explain(parsed, None, model=str(source), compute_capability=capability, gpu=gpu, requests=requests,
                       model_error=f"could not be resolved: {err} (give --model; Python: model=)")
    return explain(parsed, report, model=report.model, compute_capability=capability, gpu=gpu, requests=requests)


def _capability(gpu: str | None, strict: bool) -> str | None:
    """The compute capability of ``gpu`` (a preset name, ``NAME:COUNT``, or a name a log printed);
    None when unknown. A ``gpu`` the caller gave that is no preset is a UsageError."""
    if not gpu:
        return None
    from hfkv.planning.gpus import get_gpu, parse_gpu

    try:
        preset = parse_gpu(gpu)[0] if strict else get_gpu(gpu)
    except UsageError:
        if strict:
            raise
        return None
    return preset.compute_capability
