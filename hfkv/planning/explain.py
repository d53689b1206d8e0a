"""A start-up log explained: each figure the engine printed beside what hfkv computes for it.

``explain(parsed, report, ...)`` takes a ``StartupLog`` (``hfkv.sources.startup_log``) and the model's
report (None when the model could not be resolved) and returns an ``Explanation``: what was read, and
one ``Comparison`` per term. Two checks are exact and must hold to the engine's rounding:

- **tokens and concurrency from the printed KV memory** (``kv_checks``): the engine's own pool
  arithmetic (``hfkv.engines.simulate``) run at both ends of the interval the printed figure stands
  for (a 2-decimal GiB figure is known to ± 0.005 GiB), and the printed count is inside or not;
- **the printed weights against the checkpoint** (``weights_check``), when the checkpoint's bytes are
  known (the Hub's safetensors metadata or a local folder's headers), per GPU of the log's layout.

``predict(parsed, report)`` is where the whole-budget prediction for the log's engine version goes
(free memory, the reserve term by term, the graph estimate): it needs the versioned engine rules and
returns nothing until they exist. ``engine_for(parsed)`` is the ``engine=`` argument the checks pass.
"""

from __future__ import annotations

from hfkv.engines import versions
from hfkv.errors import HfkvError

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hfkv.engines import simulate
from hfkv.engines.contract import EngineKnobs
from hfkv.engines.layout import Layout
from hfkv.errors import HfkvError
from hfkv.planning.weights import per_gpu, shares
from hfkv.sources.startup_log import Figure, StartupLog

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hfkv.model.report import Report

GIB = 1 << 30
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}

# What a Comparison's status means (docs/logs.md).
STATUSES = ("exact", "differs", "estimate", "not checked")


@dataclass(frozen=True)
class Comparison:
    """One term: what the engine printed (``printed``, as the log wrote it, and ``printed_value``),
    what hfkv computes (``computed``, and ``computed_value``: a number, or ``[low, high]`` when the
    printed input was rounded), the ``difference`` in words, ``status`` (one of ``STATUSES``: "exact"
    when the printed figure lies in hfkv's interval, "differs" when not, "estimate" when hfkv's side
    is an estimate, "not checked" when hfkv could not compute it), the ``reason`` and the ``check``
    it belongs to (``"exact"`` for the two exact checks, ``"prediction"`` for the version's budget)."""

    term: str
    field: str
    printed: str | None
    printed_value: Any
    computed: str | None
    computed_value: Any
    difference: str
    status: str
    reason: str
    check: str = "exact"
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"term": self.term, "field": self.field, "check": self.check, "line": self.line,
                "printed": self.printed, "printed_value": self.printed_value, "computed": self.computed,
                "computed_value": self.computed_value, "difference": self.difference, "status": self.status,
                "reason": self.reason}


@dataclass(frozen=True)
class Explanation:
    """A log explained: the parsed ``log``; the ``model`` hfkv resolved (its name) or
    ``model_error`` (why not); ``engine`` (what ``simulate`` was given) and ``rules_version`` (the
    engine version whose rules hfkv replayed) beside ``log_version`` (the log's own, or None with
    ``assumed`` saying what was assumed); ``knobs`` and ``options`` read from the log for the checks;
    ``comparisons``; ``notes``."""

    log: StartupLog
    model: str | None
    model_error: str | None
    engine: str
    rules_version: str
    log_version: str | None
    assumed: str | None
    options: dict[str, Any] = field(default_factory=dict)
    knobs: dict[str, Any] = field(default_factory=dict)
    comparisons: tuple[Comparison, ...] = ()
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"schema": "hfkv-log/1", "engine": self.engine, "log_version": self.log_version,
                "rules_version": self.rules_version, "assumed": self.assumed, "model": self.model,
                "model_error": self.model_error, "options": self.options, "knobs": self.knobs,
                "log": self.log.to_dict(), "comparisons": [c.to_dict() for c in self.comparisons],
                "notes": list(self.notes)}


# -- what the log sets ---------------------------------------------------------------------------

_KV_DTYPES = {"auto": "auto", "bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16",
              "float32": "fp32", "fp32": "fp32"}


def kv_dtype(value: Any) -> str | None:
    """hfkv's ``kv_cache_dtype`` for an engine's spelling (``fp8_e5m2`` → fp8); None when unknown."""
    text = str(value or "").lower().replace("torch.", "")
    if text.startswith("fp8") or text.startswith("float8"):
        return "fp8"
    if text.startswith("fp4") or text.startswith("nvfp4"):
        return "fp4"
    return _KV_DTYPES.get(text)


# engine argument -> EngineKnobs field, per engine (the names each engine's log spells)
_VLLM_KNOBS = {"block_size": "block_size", "max_num_seqs": "max_num_seqs", "max_num_batched_tokens":
               "max_num_batched_tokens", "enable_prefix_caching": "enable_prefix_caching",
               "gpu_memory_utilization": "gpu_memory_utilization", "enforce_eager": "enforce_eager",
               "data_parallel_size": "data_parallel_size", "pipeline_parallel_size": "pipeline_parallel_size",
               "disable_hybrid_kv_cache_manager": "disable_hybrid_kv_cache_manager"}
_SGLANG_KNOBS = {"page_size": "page_size", "max_running_requests": "max_running_requests",
                 "swa_full_tokens_ratio": "swa_full_tokens_ratio", "mamba_full_memory_ratio": "mamba_full_memory_ratio",
                 "mem_fraction_static": "mem_fraction_static", "chunked_prefill_size": "chunked_prefill_size",
                 "cuda_graph_max_bs": "cuda_graph_max_bs", "disable_cuda_graph": "disable_cuda_graph",
                 "dp_size": "data_parallel_size", "pp_size": "pipeline_parallel_size",
                 "enable_dp_attention": "enable_dp_attention"}


def settings_from_log(parsed: StartupLog) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(``Options`` fields, ``EngineKnobs`` fields, notes) the log sets: TP and the KV dtype for the
    report, the engine's own arguments for ``simulate``. A value the knobs refuse is left out, noted."""
    args, notes = parsed.args, []
    options: dict[str, Any] = {}
    if parsed.tensor_parallel_size:
        options["tensor_parallel_size"] = parsed.tensor_parallel_size
    dtype = kv_dtype(args.get("kv_cache_dtype"))
    if dtype in (None, "auto") and args.get("dtype") not in (None, "auto"):
        dtype = kv_dtype(args.get("dtype"))  # an 'auto' KV cache follows the model dtype the log set
    if dtype and dtype != "auto":
        options["kv_cache_dtype"] = dtype
    table = _SGLANG_KNOBS if parsed.engine == "sglang" else _VLLM_KNOBS
    knobs = {knob: args[name] for name, knob in table.items() if args.get(name) is not None}
    if parsed.engine == "vllm":
        block = parsed.value("block_size")
        if "block_size" not in knobs and isinstance(block, int):
            knobs["block_size"] = block
        spec = args.get("speculative_config")
        if isinstance(spec, dict) and isinstance(spec.get("num_speculative_tokens"), int):
            knobs["num_speculative_tokens"] = spec["num_speculative_tokens"]
    elif args.get("disable_radix_cache") is True:
        knobs["enable_prefix_caching"] = False
    kept = {}
    for name, value in knobs.items():
        try:
            EngineKnobs.resolve({name: value})
            kept[name] = value
        except (HfkvError, TypeError, ValueError) as err:
            notes.append(f"the log's {name}={value!r} is not used: {err}")
    return options, kept, notes


def replayed(parsed: StartupLog) -> str:
    """"vLLM 0.22.1: rules of 0.20.1–0.25" (or the newest modelled release): whose rules the checks replay."""
    return versions.described(*versions.split(engine_for(parsed)))


def engine_for(parsed: StartupLog) -> str:
    """The ``engine=`` argument for ``simulate``: the log's release when it was told and a rule set covers
    it (``"vllm==0.22.1"``), else the bare engine name (its newest modelled release)."""
    version = getattr(parsed, "version", None)
    if not version:
        return parsed.engine
    try:
        return versions.parse_engine(f"{parsed.engine}=={version}").spec
    except HfkvError:  # a dev build, or a release no rule set covers: the newest rules, said beside it
        return parsed.engine


# -- the exact checks ----------------------------------------------------------------------------

def _gib(value: int | float) -> str:
    return f"{value / GIB:,.2f} GiB"


def _inside(value: float, low: float, high: float) -> bool:
    return low <= value <= high


def _span(low: Any, high: Any, fmt: str = "{:,}") -> str:
    return fmt.format(low) if low == high else f"{fmt.format(low)}–{fmt.format(high)}"


def _run(report: Report, parsed: StartupLog, budget: int, knobs: dict[str, Any]) -> dict[str, Any]:
    length = parsed.max_model_len if parsed.engine == "vllm" else None
    return simulate(report, engine=engine_for(parsed), budget_bytes=budget, max_model_len=length, **knobs)


def _budget(parsed: StartupLog) -> tuple[list[Figure], int, int, str] | None:
    """(the figures the KV budget is read from, lowest and highest bytes, what it is) for the pool
    arithmetic: vLLM's "Available KV cache memory"; SGLang's first pool line (the target model's):
    K + V (or KV) sizes, plus the Mamba state sizes when the log prints them."""
    if parsed.engine == "vllm":
        available = parsed.figure("available_kv_bytes")
        if available is None or available.bounds() is None:
            return None
        low, high = available.bounds()
        return [available], low, high, "the printed available KV cache memory"
    pool = [f for f in (parsed.figure(n) for n in ("k_pool_bytes", "v_pool_bytes", "kv_pool_bytes")) if f]
    if not pool:
        return None
    state = [f for f in (parsed.figure("mamba_conv_state_bytes"), parsed.figure("mamba_ssm_state_bytes")) if f]
    used = pool + state
    low = sum(f.bounds()[0] for f in used)
    high = sum(f.bounds()[1] for f in used)
    what = "the printed KV pool sizes" + (" and Mamba state sizes" if state else "")
    return used, max(low, 1), high, what


def kv_checks(parsed: StartupLog, report: Report, knobs: dict[str, Any]) -> list[Comparison]:
    """Tokens (and for vLLM the concurrency) the engine's pool arithmetic gives at both ends of the
    printed KV memory, against the printed ones. Empty when the log prints no KV memory."""
    found = _budget(parsed)
    if found is None:
        return []
    used, low, high, what = found
    try:
        at_low, at_high = _run(report, parsed, low, knobs), _run(report, parsed, high, knobs)
    except HfkvError as err:
        return [Comparison("KV cache tokens", "kv_cache_tokens", None, None, None, None, "", "not checked",
                           f"hfkv's {parsed.engine} rules refuse this model: {err}", line=used[0].line)]
    budget = f"{what} ({' + '.join(f.printed or '' for f in used)}: {low / GIB:,.3f}–{high / GIB:,.3f} GiB)"
    rows = [_tokens_row(parsed, at_low, at_high, budget)]
    if parsed.engine == "vllm":
        rows.append(_concurrency_row(parsed, at_low, at_high, budget))
    return [row for row in rows if row is not None]


def _tokens_row(parsed: StartupLog, at_low: dict, at_high: dict, budget: str) -> Comparison | None:
    name = "kv_cache_tokens" if parsed.engine == "vllm" else "kv_pool_tokens"
    printed = parsed.figure(name) or parsed.figure("kv_cache_tokens")
    low, high = at_low.get("kv_cache_tokens"), at_high.get("kv_cache_tokens")
    if low is None or high is None:
        return None
    computed = f"{_span(low, high)} tokens"
    reason = f"{replayed(parsed)}'s pool arithmetic (hfkv.engines.simulate) over {budget}"
    if printed is None:
        return Comparison("KV cache tokens", "kv_cache_tokens", None, None, computed, [low, high],
                          "the log prints no token count", "not checked", reason)
    value = printed.value
    inside = _inside(value, low, high)
    difference = "inside the interval" if inside else (
        f"{value - high:+,} tokens past its top" if value > high else f"{value - low:+,} tokens below its bottom")
    return Comparison("KV cache tokens", printed.field, f"{value:,} tokens", value, computed, [low, high], difference,
                      "exact" if inside else "differs", reason, line=printed.line)


def _concurrency_row(parsed: StartupLog, at_low: dict, at_high: dict, budget: str) -> Comparison | None:
    printed = parsed.figure("max_concurrency")
    low, high = at_low.get("max_concurrency"), at_high.get("max_concurrency")
    if low is None or high is None:
        return None
    computed = f"{_span(low, high, '{:.2f}')}x at {at_low.get('max_model_len') or '?'} tokens"
    reason = f"blocks ÷ blocks per request, as logged (two decimals), over {budget}"
    if printed is None:
        return Comparison("max concurrency", "max_concurrency", None, None, computed, [low, high],
                          "the log prints no concurrency", "not checked", reason)
    value = printed.value
    inside = _inside(value, low, high)
    difference = "inside the interval" if inside else f"{value - (high if value > high else low):+.2f}x"
    return Comparison("max concurrency", "max_concurrency", f"{value:.2f}x", value, computed, [low, high],
                      difference, "exact" if inside else "differs", reason, line=printed.line)


def weights_check(parsed: StartupLog, report: Report) -> Comparison | None:
    """The printed weights (vLLM's "Model loading took", SGLang's "Load weight end … mem usage") per
    GPU against the checkpoint's bytes split over the log's layout; None when the log prints none."""
    printed = parsed.figure("weights_bytes")
    if printed is None:
        return None
    section = report.extra.get("weights") or {}
    total = section.get("weights_bytes")
    if not isinstance(total, int):
        return Comparison("weights per GPU", "weights_bytes", printed.printed, printed.value, None, None, "",
                          "not checked", "hfkv knows no weights for this model", line=printed.line)
    layout = Layout(tp=parsed.tensor_parallel_size or 1, pp=parsed.pipeline_parallel_size or 1,
                    engine=parsed.engine)
    mine, how = per_gpu(total, layout, shares(report))
    diff = printed.value - mine
    step = printed.step or 0
    source = section.get("source") or "unknown"
    if source == "estimate":
        status, reason = "estimate", f"{how}; the checkpoint's bytes are unknown: estimated from the config's shapes"
    else:
        within = abs(diff) <= step // 2
        status = "exact" if within else "differs"
        reason = f"{how}, from the checkpoint ({source})" + (
            "" if within else "; the engine's figure is the memory allocated while loading, which holds "
                              "buffers beside the weights, and a quantised checkpoint the log loads may not be "
                              "the one hfkv read")
    difference = f"{diff / GIB:+.2f} GiB ({diff / mine:+.1%})" if mine else ""
    return Comparison("weights per GPU", "weights_bytes", printed.printed, printed.value, _gib(mine), mine,
                      difference, status, reason, line=printed.line)


def predict(parsed: StartupLog, report: Report) -> list[Comparison]:
    """The whole budget predicted for the log's engine version, GPU and arguments, term by term
    (free memory, weights, the reserve, the graph estimate, the available KV memory) against the
    printed figures, each with the rule of that version or the estimate's band that explains a
    difference. Needs the versioned engine rules (``engine="vllm==0.22.1"``): until they exist this
    returns no comparison, and ``explain`` says so in its notes."""
    return []


# -- the whole -----------------------------------------------------------------------------------

def explain(parsed: StartupLog, report: Report | None, *, model: str | None = None, model_error: str | None = None,
            compute_capability: str | None = None) -> Explanation:
    """The log explained against ``report`` (None: the model could not be resolved, ``model_error``
    says why; every parsed figure is still returned)."""
    options, knobs, notes = settings_from_log(parsed)
    if compute_capability and parsed.engine == "vllm":
        knobs.setdefault("compute_capability", compute_capability)
    name, version = versions.split(engine_for(parsed))
    assumed = None if parsed.version else f"unknown: assuming {versions.described(name, None)}"
    if parsed.version and version is None:
        notes.append(f"the log's {ENGINE_NAMES[parsed.engine]} {parsed.version} is not a release hfkv's rule sets "
                     f"cover: replayed with {versions.described(name, None)}'s rules")
    elif version is not None:
        notes.append(f"replayed with the rules of the log's own release: {versions.described(name, version)}")
    comparisons: list[Comparison] = []
    if report is not None:
        comparisons += kv_checks(parsed, report, knobs)
        weights = weights_check(parsed, report)
        if weights is not None:
            comparisons.append(weights)
        comparisons += predict(parsed, report)
        notes.append("the whole-budget prediction for the log's version is not computed yet (hfkv.planning.explain.predict)")
    return Explanation(parsed, model, model_error, engine_for(parsed), replayed(parsed), parsed.version, assumed, options, knobs,
                       tuple(comparisons), tuple(notes))
