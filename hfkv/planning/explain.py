"""A start-up log explained: each figure the engine printed beside what hfkv computes for it.

``explain(parsed, report, ...)`` takes a ``StartupLog`` (``hfkv.sources.startup_log``) and the model's
report (None when the model could not be resolved) and returns an ``Explanation``: what was read, one
``Comparison`` per term, and the answers people want (``Answer``). Two checks are exact and must hold to the
engine's rounding:

- **tokens and concurrency from the printed KV memory** (``kv_checks``): the engine's own pool
  arithmetic (``hfkv.engines.simulate``) run at both ends of the interval the printed figure stands
  for (a 2-decimal GiB figure is known to ± 0.005 GiB), and the printed count is inside or not;
- **the printed weights against the checkpoint** (``weights_check``), when the checkpoint's bytes are
  known (the Hub's safetensors metadata or a local folder's headers), per GPU of the log's layout.

``predict`` replays the whole budget of the log's release on its GPU with its arguments
(``hfkv.engines.memory_budget``), term by term against what the log printed: the printed weights are
the weights term, so every other term is compared on its own. ``answers`` then gives the requests of
the log's length that fit, the longest ``--max-model-len`` that would start, the utilization (vLLM) or
fraction (SGLang) that fits N requests, and the same start on the newest modelled release.
``engine_for(parsed)`` is the ``engine=`` argument every replay passes.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from hfkv.engines import memory_budget, simulate, versions
from hfkv.engines import layout as lay
from hfkv.engines.contract import EngineKnobs, MemoryBudget, Term
from hfkv.engines.layout import Layout
from hfkv.errors import HfkvError, UsageError
from hfkv.planning.gpus import GpuPreset, custom_gpu, get_gpu, parse_gpu
from hfkv.planning.weights import per_gpu, shares
from hfkv.sources.startup_log import Figure, StartupLog, first_rank
from hfkv.units import format_gib

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hfkv.model.report import Report

GIB = 1 << 30
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}

# What a Comparison's status means (docs/logs.md): "exact" the printed figure lies within hfkv's interval
# of the engine's own arithmetic; "differs" it does not (outside an estimate's band too); "estimate" hfkv's
# side is an estimate and the printed figure lies within its band; "not checked" hfkv could not compute
# it; "not printed" hfkv computed a term the log does not print; "from the log" the log's figure is used
# as the term itself (the printed weights, a fraction the arguments set).
STATUSES = ("exact", "differs", "estimate", "not checked", "not printed", "from the log")


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
    source: str | None = None  # prediction rows: the term's source in hfkv's budget (code, estimate, log, …)
    band: int | None = None  # prediction rows: hfkv's band, ± bytes (an estimate's; 0 for the engine's code)

    def to_dict(self) -> dict[str, Any]:
        return {"term": self.term, "field": self.field, "check": self.check, "line": self.line,
                "printed": self.printed, "printed_value": self.printed_value, "computed": self.computed,
                "computed_value": self.computed_value, "difference": self.difference, "status": self.status,
                "reason": self.reason, "source": self.source, "band_bytes": self.band}


@dataclass(frozen=True)
class Answer:
    """One answer people want from a log: the ``question``, the ``answer`` in words and its ``value``
    (a number, or ``[low, high]`` when worked from a rounded printed figure), its ``source`` ("the log":
    the engine's arithmetic on what the log printed, exact to its rounding; "estimate": hfkv's budget,
    whose band ``how`` gives) and ``how`` it was worked out (the arithmetic, and the check)."""

    question: str
    field: str
    value: Any
    answer: str
    source: str
    how: str

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "field": self.field, "value": self.value, "answer": self.answer,
                "source": self.source, "how": self.how}


@dataclass(frozen=True)
class Explanation:
    """A log explained: the parsed ``log``; the ``model`` hfkv resolved (its name) or
    ``model_error`` (why not); ``engine`` (what ``simulate`` was given) and ``rules_version`` (the
    engine version whose rules hfkv replayed) beside ``log_version`` (the log's own, or None with
    ``assumed`` saying what was assumed); ``knobs`` and ``options`` read from the log for the checks;
    ``comparisons`` (the exact checks, then the prediction's terms); ``gpu`` (the GPU the prediction
    replayed and how it was told) and ``budget`` (that release's ``MemoryBudget`` as replayed, with the
    printed weights as its weights term); ``answers``; ``notes``. ``report`` is the model's report
    (not serialised) so that the same log can be explained again for another GPU or request count."""

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
    gpu: str | None = None
    budget: dict[str, Any] | None = None
    answers: tuple[Answer, ...] = ()
    report: Any = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": "hfkv-log/1", "engine": self.engine, "log_version": self.log_version,
                "rules_version": self.rules_version, "assumed": self.assumed, "model": self.model,
                "model_error": self.model_error, "options": self.options, "knobs": self.knobs,
                "log": self.log.to_dict(), "comparisons": [c.to_dict() for c in self.comparisons],
                "gpu": self.gpu, "budget": self.budget, "answers": [a.to_dict() for a in self.answers],
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
    return Comparison("weights per GPU", "weights_bytes", printed.printed, printed.value, format_gib(mine), mine,
                      difference, status, reason, line=printed.line)


# -- the start the log describes -------------------------------------------------------------------

@dataclass(frozen=True)
class Replay:
    """The start a prediction replays: ``engine`` (``"vllm==0.28.0"``, or the bare name when the log's
    release is not covered), the ``gpu`` (a preset, carrying the CUDA total the log prints when it prints
    one) and ``gpu_how`` (how it was told), the resolved ``knobs`` and ``layout``, and the weights per
    GPU with their ``weights_source`` ("log": the printed figure; else the checkpoint's or "estimate")."""

    engine: str
    gpu: GpuPreset
    gpu_how: str
    knobs: EngineKnobs
    layout: Layout
    weights: int | None
    weights_source: str | None

    @property
    def name(self) -> str:
        return versions.split(self.engine)[0]

    def budget(self, report: Report, **knobs: Any) -> MemoryBudget:
        """hfkv's budget of this start (``knobs`` changed), the printed weights as its weights term."""
        source = "given" if self.weights_source == "log" else self.weights_source
        return memory_budget(self.engine, report, self.gpu.device(), self.weights, source,
                             self.knobs.replace(**knobs), self.layout)


def gpu_for(parsed: StartupLog, given: str | None = None) -> tuple[GpuPreset | None, str]:
    """The GPU of the start and how it was told: the GPU the log lists (a preset by the name nvidia-smi
    prints), else ``given`` (``--gpu``). A CUDA total the log prints (vLLM's "Free memory on device
    (F/T GiB)", PyTorch's "total capacity of T GiB") replaces the preset's, or stands for the GPU when no
    name is known. (None, what to do) when nothing tells it; an unknown ``given`` is a UsageError."""
    preset, how = _named_gpu(parsed, given)
    total = parsed.figure("cuda_total_bytes")
    if total is None or not total.printed:
        return preset, how
    number = total.printed.split()[0]
    told = f"the CUDA total the log prints ({total.printed}, line {total.line})"
    if preset is None:
        return custom_gpu(f"{number}GiB", name=f"GPU-{number}GiB")[0], told
    return (dataclasses.replace(preset, cuda_total=Fraction(Decimal(number)), cuda_total_exact=False,
                                cuda_total_source=told), f"{how}, with {told}")


def _named_gpu(parsed: StartupLog, given: str | None) -> tuple[GpuPreset | None, str]:
    if parsed.gpu:
        try:
            return get_gpu(parsed.gpu), f"the log's GPU listing ({parsed.gpu})"
        except UsageError:
            pass  # a name no preset knows: --gpu, or the CUDA total, may still tell it
    if given:
        return parse_gpu(given)[0], f"--gpu {given}"
    return None, "the log names no GPU hfkv knows and prints no CUDA total: give --gpu"


def replay_for(parsed: StartupLog, report: Report, knobs: dict[str, Any], gpu: GpuPreset, how: str) -> Replay:
    """The start to replay on ``gpu``: the log's release, the knobs it sets (and a utilization it
    prints without setting it), its layout, its weights. Raises HfkvError when the engine refuses the
    layout."""
    given = dict(knobs)
    util = parsed.value("gpu_memory_utilization")
    if parsed.engine == "vllm" and given.get("gpu_memory_utilization") is None and isinstance(util, float):
        given["gpu_memory_utilization"] = util  # the release's default, as the log printed it
    if gpu.compute_capability:
        given.setdefault("compute_capability", gpu.compute_capability)
    resolved = EngineKnobs.resolve(given)
    layout = lay.resolve(resolved, report.tensor_parallel_size, parsed.engine, len(report.layer_specs), report.config)
    weights, source = _replay_weights(parsed, report, layout)
    return Replay(engine_for(parsed), gpu, how, resolved, layout, weights, source)


def printed_weights(parsed: StartupLog) -> Figure | None:
    """The weights the log prints: vLLM's "Model loading took" (else the weight its post-capture summary
    names), SGLang's "Load weight end … mem usage"."""
    return parsed.figure("weights_bytes") or parsed.figure("profile_weights_bytes")


def _replay_weights(parsed: StartupLog, report: Report, layout: Layout) -> tuple[int | None, str | None]:
    """(weights per GPU, source): the printed figure (the exact check compares it with the checkpoint
    apart), else the report's weights split over the layout."""
    printed = printed_weights(parsed)
    if printed is not None:
        return printed.value, "log"
    section = report.extra.get("weights") or {}
    if not isinstance(section.get("weights_bytes"), int):
        return None, None
    return per_gpu(section["weights_bytes"], layout, shares(report))[0], section.get("source")


def free_before_load(parsed: StartupLog) -> Figure | None:
    """SGLang's free memory before loading ("Load weight begin. avail mem"), or, when only the end of
    loading is printed, its "avail mem" + "mem usage" (SGLang's usage is the free memory loading took:
    the sum is exact to both figures' rounding)."""
    begin = parsed.figure("free_before_load_bytes")
    if begin is not None:
        return begin
    after, usage = parsed.figure("free_after_load_bytes"), parsed.figure("weights_bytes")
    if after is None or usage is None or parsed.engine != "sglang":
        return None
    return Figure("free_before_load_bytes", after.value + usage.value, after.text, after.line, after.rank,
                  f"{after.printed} + {usage.printed}", (after.step or 0) + (usage.step or 0))


def as_measured(budget: MemoryBudget, parsed: StartupLog, replay: Replay) -> MemoryBudget:
    """``budget`` with what the log measured put in: the printed weights as the weights term; for
    SGLang the printed free memory before loading as the base of the fraction (hfkv's estimate of it
    dropped), and, when the log prints SGLang's mem usage, no load leftovers (the usage holds them)."""
    terms = [_log_weights(term, parsed) if term.name == "weights" and replay.weights_source == "log" else term
             for term in budget.terms]
    before = free_before_load(parsed) if parsed.engine == "sglang" else None
    if before is None:
        return dataclasses.replace(budget, terms=tuple(terms))
    usage = parsed.figure("weights_bytes") is not None
    kept = [t for t in terms if t.name != "free-memory estimate" and not (usage and t.name == "load leftovers")]
    return dataclasses.replace(budget, usable_bytes=int(before.value * budget.fraction), terms=tuple(kept))


def _log_weights(term: Term, parsed: StartupLog) -> Term:
    printed = printed_weights(parsed)
    return Term("weights", term.bytes, "log", note=f"the log's {printed.printed} (line {printed.line})")


# -- the whole budget, term by term ----------------------------------------------------------------

def _row(term: str, field_name: str, printed: Figure | None, computed: int, band: int, source: str, reason: str,
         slack: int = 0) -> Comparison:
    """A prediction row: ``printed`` (None: the log does not print it) against hfkv's ``computed`` bytes,
    whose band is ``band`` (0 for the engine's own arithmetic); within the band, the printed rounding and
    ``slack`` (the rounding of the printed inputs the computation used) it is "exact" (no band) or
    "estimate", else "differs"."""
    if printed is None:
        return Comparison(term, field_name, None, None, format_gib(computed), computed, "", "not printed", reason,
                          check="prediction", source=source, band=band)
    allowed = band + (printed.step or 0) // 2 + slack
    diff = printed.value - computed
    within = abs(diff) <= allowed
    status = ("estimate" if band else "exact") if within else "differs"
    difference = f"{diff / GIB:+.2f} GiB ({'within' if within else 'outside'} ±{allowed / GIB:.2f})"
    return Comparison(term, field_name, printed.printed, printed.value, format_gib(computed), computed, difference, status,
                      reason, check="prediction", line=printed.line, source=source, band=band)


def _from_log(term: str, printed: Figure, reason: str) -> Comparison:
    return Comparison(term, printed.field, printed.printed, printed.value, printed.printed, printed.value, "",
                      "from the log", reason, check="prediction", line=printed.line, source="log", band=0)


def _term_reason(term: Term) -> str:
    band = f" ±{term.error_bytes / GIB:.2f} GiB" if term.error_bytes else ""
    return f"{term.source}{band}: {term.note}" if term.note else f"{term.source}{band}"


# vLLM terms and the log figures that print them; True when the figure is what the release subtracts
# (the graph capture is the pool captured after sizing, not the estimate subtracted before it).
_VLLM_FIGURES = {"CUDA graphs": (("cudagraph_estimate_bytes", True), ("cudagraph_bytes", False)),
                 "peak activation": (("peak_activation_bytes", True), ("transient_peak_bytes", True)),
                 "non-torch memory": (("non_torch_bytes", True),)}


def _graph_from_notice(parsed: StartupLog, total: int) -> Figure | None:
    """The graph estimate from vLLM's notice "--gpu-memory-utilization=U is equivalent to … E": (U − E) ×
    the CUDA total (both printed with four decimals)."""
    notice = next((f for f in parsed.all("equivalent_utilization") if first_rank(f.rank)), None)
    util = parsed.value("gpu_memory_utilization")
    if notice is None or not isinstance(util, float):
        return None
    value = int((Decimal(str(util)) - Decimal(str(notice.value))) * total)
    return Figure("cudagraph_estimate_bytes", value, notice.text, notice.line, notice.rank,
                  f"({util} − {notice.value}) × {total / GIB:.2f} GiB", int(total * Decimal("0.0001")))


def _non_torch_from_consumed(parsed: StartupLog) -> Figure | None:
    """Non-torch memory from vLLM's later summary, which prints "consumed memory (weights + non-torch)":
    that less the printed weights."""
    consumed, weights = parsed.figure("consumed_bytes"), parsed.figure("weights_bytes")
    if consumed is None or weights is None:
        return None
    return Figure("non_torch_bytes", consumed.value - weights.value, consumed.text, consumed.line, consumed.rank,
                  f"{consumed.printed} − {weights.printed}", (consumed.step or 0) + (weights.step or 0))


def _vllm_printed(parsed: StartupLog, name: str, total: int) -> tuple[Figure | None, bool]:
    """The figure the log prints for the budget term ``name`` (or derives from its lines), and whether it is
    what the release subtracts."""
    for field_name, subtracted in _VLLM_FIGURES.get(name, ()):
        found = parsed.figure(field_name)
        if found is None and field_name == "cudagraph_estimate_bytes":
            found = _graph_from_notice(parsed, total)
        if found is None and field_name == "non_torch_bytes":
            found = _non_torch_from_consumed(parsed)
        if found is not None:
            return found, subtracted
    return None, False


def vllm_terms(parsed: StartupLog, replay: Replay, budget: MemoryBudget) -> list[Comparison]:
    """vLLM's budget term by term: the requested memory, each term (the printed weights as the weights
    term; a graph estimate, peak or non-torch figure the log prints beside hfkv's), what the log implies
    for the terms it does not print, and the available KV memory."""
    device = replay.gpu.device()
    requested = parsed.figure("requested_bytes")
    total_slack = 0 if device.cuda_total_exact else int(Decimal("0.005") * GIB * Decimal(str(budget.fraction)))
    rows = [_row("requested memory", "requested_bytes", requested, budget.usable_bytes, 0, "code",
                 f"{budget.notes[0]}; utilization from {budget.fraction_source}", total_slack)]
    shown: list[Figure] = []
    for term in budget.terms:
        if term.name == "weights" and term.source == "log":
            rows.append(_from_log("weights", printed_weights(parsed), "the printed figure is the weights term "
                                  "(the row 'weights per GPU' compares it with the checkpoint)"))
            shown.append(printed_weights(parsed))
            continue
        printed, subtracted = _vllm_printed(parsed, term.name, device.cuda_total_bytes)
        if printed is not None and subtracted:
            shown.append(printed)
        rows.append(_row(term.name, printed.field if printed else term.name, printed, term.bytes, term.error_bytes,
                         term.source, _term_reason(term)))
    rows += _captured_outside(parsed, budget)
    rows += [row for row in (_implied_rest(parsed, budget, shown, total_slack),) if row is not None]
    rows.append(_available_row(parsed, replay, budget, total_slack))
    return rows


def _captured_outside(parsed: StartupLog, budget: MemoryBudget) -> list[Comparison]:
    """The graph capture a release prints but does not subtract (before 0.20: captured after the KV
    cache, inside the memory the utilization leaves): shown, not compared."""
    captured = parsed.figure("cudagraph_bytes")
    if captured is None or budget.term("CUDA graphs") is not None:
        return []
    return [Comparison("CUDA graphs (captured)", "cudagraph_bytes", captured.printed, captured.value, None, None, "",
                       "not checked", "captured after the KV cache is sized: not in this release's budget "
                       f"({'; '.join(n for n in budget.notes if 'CUDA graphs' in n) or 'the graphs are not subtracted'})",
                       check="prediction", line=captured.line)]


def _implied_rest(parsed: StartupLog, budget: MemoryBudget, shown: list[Figure], slack: int) -> Comparison | None:
    """What the log implies for the terms it does not print: requested − its printed terms − its printed
    available memory, against the sum of hfkv's estimates of those terms."""
    available = _printed_available(parsed)
    names = {_term_of(f) for f in shown}
    rest = [t for t in budget.terms if t.name not in names]
    if available is None or not shown or not rest:
        return None
    implied = budget.usable_bytes - sum(f.value for f in shown) - available.value
    step = sum(f.step or 0 for f in shown) + (available.step or 0)
    figure = Figure("implied_rest_bytes", implied, available.text, available.line, available.rank,
                    f"{implied / GIB:.2f} GiB (implied)", step)
    computed = sum(t.bytes for t in rest)
    return _row("the terms not printed", "implied_rest_bytes", figure, computed, sum(t.error_bytes for t in rest),
                "estimate", "requested − the printed terms − the printed available memory, against hfkv's "
                f"{' + '.join(t.name for t in rest)}", slack)


def _term_of(figure: Figure) -> str:
    if figure.field in ("weights_bytes", "profile_weights_bytes"):
        return "weights"
    return next((name for name, fields in _VLLM_FIGURES.items() if any(f == figure.field for f, _ in fields)), "")


def _available_row(parsed: StartupLog, replay: Replay, budget: MemoryBudget, slack: int) -> Comparison:
    available = _printed_available(parsed)
    if parsed.figure("initial_free_bytes") is not None or parsed.args.get("kv_cache_memory_bytes"):
        return Comparison("available KV cache memory", "available_kv_bytes", available and available.printed,
                          available and available.value, format_gib(budget.kv_bytes), budget.kv_bytes, "", "not checked",
                          "the log fixed the KV memory (--kv-cache-memory): vLLM did not size it from the budget",
                          check="prediction", line=available and available.line)
    reason = (f"requested − every term above, as {versions.described(*versions.split(replay.engine))} sizes it; "
              "the band is the sum of the estimates' bands")
    row = _row("available KV cache memory", "available_kv_bytes", available, budget.kv_bytes, budget.error_bytes,
               "code" if not budget.error_bytes else "estimate", reason, slack)
    if row.status == "differs":
        seen = _not_modelled(parsed, budget)
        row = dataclasses.replace(row, reason=row.reason + "; " + (
            "the log shows what hfkv does not model: " + "; ".join(seen) if seen else
            "the log shows nothing hfkv leaves out: the estimates', or a build's own rule"))
    return row


def _not_modelled(parsed: StartupLog, budget: MemoryBudget) -> list[str]:
    """What the log shows that hfkv's budget does not hold, named (for a prediction that differs)."""
    seen = []
    if parsed.args.get("speculative_config") or parsed.all("kv_pool_tokens")[1:]:
        seen.append("a speculative drafter (its weights, forward and pool)")
    if any(parsed.args.get(k) for k in ("limit_mm_per_prompt", "mm_processor_kwargs")):
        seen.append("multimodal inputs")
    if parsed.args.get("quantization") and printed_weights(parsed) is None:
        seen.append(f"a {parsed.args['quantization']} checkpoint whose weights the log does not print")
    unmodelled = budget.term("not modelled")
    if unmodelled is not None:
        seen.append(unmodelled.note)
    return seen


def sglang_terms(parsed: StartupLog, replay: Replay, own: MemoryBudget, budget: MemoryBudget) -> list[Comparison]:
    """SGLang's budget term by term: the fraction, the free memory before loading (printed, or after +
    usage) against hfkv's estimate, the printed weights as the weights term, the pools against what
    the fraction leaves (``free after loading − free before × (1 − fraction)``) and what was free after
    the pools."""
    rows = [_fraction_row(parsed, own)]
    before = free_before_load(parsed)
    estimate = own.term("free-memory estimate")
    # hfkv's estimate read back from its budget (usable = int(free before × fraction)): to a byte or two
    pre_estimate = round(own.usable_bytes / own.fraction) if own.fraction else 0
    band = int(estimate.error_bytes / own.fraction) if estimate is not None and own.fraction else 0
    rows.append(_row("free memory before loading", "free_before_load_bytes", before, pre_estimate, band, "estimate",
                     f"hfkv: the CUDA total less the CUDA context (and communicators with TP ≥ 2); "
                     f"{replay.gpu_how}"))
    for term in budget.terms:
        if term.name == "weights" and term.source == "log":
            rows.append(_from_log("weights (mem usage)", parsed.figure("weights_bytes"),
                                  "the printed mem usage (the free memory loading took: weights and what loading "
                                  "keeps) is the weights term; the row 'weights per GPU' compares it with the checkpoint"))
        elif term.name != "free-memory estimate":
            rows.append(_row(term.name, term.name, None, term.bytes, term.error_bytes, term.source, _term_reason(term)))
    rows.append(_pool_row(parsed, budget, before))
    after_pool = _after_pool_row(parsed, budget, before)
    if after_pool is not None:
        rows.append(after_pool)
    return rows


def _fraction_row(parsed: StartupLog, own: MemoryBudget) -> Comparison:
    given = parsed.args.get("mem_fraction_static")
    how = next((n for n in own.notes if n.startswith("mem_fraction_static")), own.fraction_source)
    if given is not None:
        shown = own.fraction if own.fraction != float(given) else given
        return Comparison("mem_fraction_static", "mem_fraction_static", str(given), given, f"{shown:.3f}", shown, "",
                          "from the log", f"the log's argument; {how}", check="prediction", source="log", band=0)
    return Comparison("mem_fraction_static", "mem_fraction_static", None, None, f"{own.fraction:.3f}", own.fraction, "",
                      "not printed", how, check="prediction", source="code", band=0)


def pool_figure(parsed: StartupLog) -> Figure | None:
    """Every pool SGLang allocated from the budget, summed: each KV pool line (the target's, a draft's)
    and the Mamba state sizes."""
    parts = [f for name in ("k_pool_bytes", "v_pool_bytes", "kv_pool_bytes", "mamba_conv_state_bytes",
                            "mamba_ssm_state_bytes", "mamba_intermediate_ssm_state_cache_bytes",
                            "mamba_conv_window_bytes") for f in parsed.all(name) if first_rank(f.rank)]
    if not parts:
        return None
    first = min(parts, key=lambda f: f.line)
    return Figure("kv_pool_bytes", sum(f.value for f in parts), first.text, first.line, first.rank,
                  " + ".join(f.printed or "" for f in parts), sum(f.step or 0 for f in parts))


def _pool_row(parsed: StartupLog, budget: MemoryBudget, before: Figure | None) -> Comparison:
    pools = pool_figure(parsed)
    usage = parsed.figure("weights_bytes")
    if before is not None and usage is not None:
        slack = int((before.step or 0) / 2 * budget.fraction) + (usage.step or 0) // 2
        base = f"({before.printed})" if "+" in (before.printed or "") else before.printed
        reason = (f"SGLang's arithmetic on the log's own figures: free before loading × fraction − mem usage = "
                  f"{base} × {budget.fraction:.3f} − {usage.printed}, the pools sized within it")
        row = _row("KV pools", "kv_pool_bytes", pools, budget.kv_bytes, 0, "code", reason, slack + _page_slack(parsed))
    else:
        row = _row("KV pools", "kv_pool_bytes", pools, budget.kv_bytes, budget.error_bytes, "estimate",
                   "free before loading × fraction − weights − load leftovers, hfkv's estimates where the log prints "
                   "no free memory")
    if row.status != "differs" or pools is None:
        return row
    return dataclasses.replace(row, reason=row.reason + "; " + _fraction_hint(parsed, budget, pools, before, usage))


def _fraction_hint(parsed: StartupLog, budget: MemoryBudget, pools: Figure, before: Figure | None,
                   usage: Figure | None) -> str:
    """Why SGLang's pools may differ from the fraction's budget, with the fraction that would give them."""
    told = "the log's" if parsed.args.get("mem_fraction_static") is not None else "hfkv's (the log prints none)"
    text = f"the fraction is {told} {budget.fraction:.3f}"
    if before is not None and usage is not None and before.value:
        implied = (pools.value + usage.value) / before.value
        text += f"; the printed pools are what {implied:.3f} would leave"
    seen = _not_modelled(parsed, budget)
    return text + ("; the log shows what hfkv does not model: " + "; ".join(seen) if seen else
                   "; else the log's build keeps memory hfkv's SGLang rules do not")


def _page_slack(parsed: StartupLog) -> int:
    """The pools are whole tokens (pages) and slots of the budget: they may stay below it by up to a
    token's bytes per pool line, read off the printed pool sizes and token counts."""
    tokens = parsed.figure("kv_pool_tokens")
    pools = pool_figure(parsed)
    if tokens is None or pools is None or not tokens.value:
        return 0
    return pools.value // tokens.value * max(1, len(parsed.all("kv_pool_tokens")))


def _after_pool_row(parsed: StartupLog, budget: MemoryBudget, before: Figure | None) -> Comparison | None:
    printed, pools = parsed.figure("free_after_pool_bytes"), pool_figure(parsed)
    after = parsed.figure("free_after_load_bytes")
    if printed is None or pools is None or after is None:
        return None
    computed = after.value - pools.value
    slack = ((after.step or 0) + (pools.step or 0)) // 2
    reason = ("free after loading − the pools: what SGLang leaves for activations and graphs "
              f"(≈ free before × (1 − {budget.fraction:.3f}) plus what the pools left of their budget)")
    row = _row("free memory after the pools", "free_after_pool_bytes", printed, computed, 0, "code", reason, slack)
    if row.status == "differs":
        row = dataclasses.replace(row, reason=row.reason + f"; the log shows {abs(printed.value - computed) / GIB:.2f} "
                                                           "GiB allocated between the weights and the pool end that "
                                                           "hfkv does not model")
    return row


def pool_counts(parsed: StartupLog, report: Report, replay: Replay, budget: MemoryBudget) -> list[Comparison]:
    """Tokens (and vLLM's concurrency) the engine's pool arithmetic gives at hfkv's predicted KV memory
    (over its band), against the printed counts."""
    kv, band = budget.kv_bytes, budget.error_bytes
    if replay.name == "sglang" and free_before_load(parsed) is not None and parsed.figure("weights_bytes"):
        band = _page_slack(parsed)
    low, high = max(kv - band, 1), max(kv + band, 1)
    if kv + band <= 0:
        return [Comparison("KV cache tokens (predicted)", "kv_cache_tokens", None, None, "none", 0,
                           "", "differs" if _printed_tokens(parsed) else "not checked",
                           "the predicted budget leaves no memory for the KV cache", check="prediction")]
    at_low, at_high = _fit(report, replay, low, parsed), _fit(report, replay, high, parsed)
    if _refusal(at_low):
        return [Comparison("KV cache tokens (predicted)", "kv_cache_tokens", None, None, None, None, "",
                           "not checked", f"the engine refuses the start as hfkv replays it: {_refusal(at_low)}",
                           check="prediction")]
    what = f"the predicted KV memory {format_gib(kv)}" + (f" ±{band / GIB:.2f}" if band else "")
    rows = [_count_row("KV cache tokens (predicted)", "kv_cache_tokens", _printed_tokens(parsed),
                       at_low.get("kv_cache_tokens"), at_high.get("kv_cache_tokens"), band, what, "{:,}")]
    if replay.name == "vllm":
        rows.append(_count_row("max concurrency (predicted)", "max_concurrency", parsed.figure("max_concurrency"),
                               at_low.get("max_concurrency"), at_high.get("max_concurrency"), band, what, "{:.2f}"))
    return [row for row in rows if row is not None]


def _printed_tokens(parsed: StartupLog) -> Figure | None:
    return parsed.figure("kv_cache_tokens") if parsed.engine == "vllm" else (
        parsed.figure("kv_pool_tokens") or parsed.figure("kv_cache_tokens"))


def _count_row(term: str, field_name: str, printed: Figure | None, low: Any, high: Any, band: int, what: str,
               fmt: str) -> Comparison | None:
    if low is None or high is None:
        return None
    computed = _span(low, high, fmt)
    reason = f"the engine's pool arithmetic over {what}"
    if printed is None:
        return Comparison(term, field_name, None, None, computed, [low, high], "", "not printed", reason,
                          check="prediction", band=band)
    inside = low <= printed.value <= high
    status = ("estimate" if band else "exact") if inside else "differs"
    difference = "inside" if inside else ("above" if printed.value > high else "below") + " hfkv's interval"
    return Comparison(term, field_name, fmt.format(printed.value), printed.value, computed, [low, high], difference,
                      status, reason, check="prediction", line=printed.line, band=band)


def _fit(report: Report, replay: Replay, kv: int | None, parsed: StartupLog) -> dict[str, Any]:
    """The engine's pool arithmetic at ``kv`` bytes (None: the costs alone) for the log's start. A refusal
    is ``refused`` (its text) beside the figures computed first; when it is vLLM's "one request does not
    fit" (its figures hold the blocks), no request fits: 0 tokens, 0×."""
    knobs = {k: v for k, v in replay.knobs.to_dict().items() if k != "engine_version"}
    budget = None if kv is None else max(kv, 1)
    try:
        return simulate(report, engine=replay.engine, budget_bytes=budget, max_model_len=parsed.max_model_len, **knobs)
    except HfkvError as err:
        details = dict(getattr(err, "details", None) or {})
        if "num_blocks" in details:
            details.update(kv_cache_tokens=details.get("kv_cache_tokens", 0), max_concurrency=0.0)
        return {**details, "refused": str(err)}


def _refusal(found: dict[str, Any]) -> str | None:
    """The engine's refusal of the start itself (not vLLM's "one request does not fit", which is a count)."""
    return found.get("refused") if "num_blocks" not in found else None


def predict(parsed: StartupLog, report: Report, knobs: dict[str, Any] | None = None,
            gpu: str | None = None) -> tuple[list[Comparison], Replay | None, MemoryBudget | None, list[str]]:
    """The whole budget of the log's release on its GPU with its arguments, term by term against the
    printed figures, then the tokens and concurrency it predicts: (rows, the start replayed, its
    budget as measured, notes). No rows when the GPU cannot be told (the notes say to give --gpu) or
    the engine refuses the start as the log describes it."""
    preset, how = gpu_for(parsed, gpu)
    if preset is None:
        return [], None, None, [f"no whole-budget prediction: {how}"]
    notes = [] if not (gpu and parsed.gpu and how.startswith("the log's GPU")) else [
        f"--gpu {gpu} not used: the log lists {parsed.gpu}"]
    try:
        replay = replay_for(parsed, report, knobs or {}, preset, how)
        own = replay.budget(report)
    except HfkvError as err:
        return [], None, None, notes + [f"no whole-budget prediction: {err}"]
    budget = as_measured(own, parsed, replay)
    rows = vllm_terms(parsed, replay, budget) if replay.name == "vllm" else sglang_terms(parsed, replay, own, budget)
    rows += pool_counts(parsed, report, replay, budget)
    notes.append(f"whole budget: {versions.described(*versions.split(replay.engine))} on {preset.name} ({how})")
    return rows, replay, budget, notes


# -- the answers people want -----------------------------------------------------------------------

def _request_length(parsed: StartupLog, report: Report, replay: Replay) -> int | None:
    """The log's max length (its arguments, the concurrency line, SGLang's context_len), else the
    engine's own for the model."""
    if parsed.max_model_len:
        return parsed.max_model_len
    found = _fit(report, replay, None, parsed)
    return found.get("max_model_len") or found.get("context_length")


def _printed_available(parsed: StartupLog) -> Figure | None:
    """The KV memory the engine sized its pools from, as printed: vLLM's available memory (or the one
    its refusal names); SGLang's pools summed."""
    if parsed.engine == "sglang":
        return pool_figure(parsed)
    return parsed.figure("available_kv_bytes") or parsed.figure("refusal_available_bytes")


def _requests_in(found: dict[str, Any], length: int, engine: str) -> int:
    """Whole requests of ``length`` tokens the pools hold: vLLM's blocks ÷ blocks per request; SGLang's
    tokens ÷ length, at most its running requests (and, for a hybrid, its state slots)."""
    if engine == "vllm":
        per = found.get("blocks_per_request")
        return found.get("num_blocks", 0) // per if per else 0
    tokens = found.get("max_total_num_tokens") or found.get("kv_cache_tokens") or 0
    count = tokens // length if length else 0
    for cap in (found.get("max_running_requests"), found.get("max_mamba_cache_size")):
        if isinstance(cap, int):
            count = min(count, cap)
    return count


def requests_answer(parsed: StartupLog, report: Report, replay: Replay, budget: MemoryBudget,
                    length: int) -> Answer:
    """How many requests of the log's length fit, as the engine counts them from the KV memory it printed
    (at both ends of its rounding); from hfkv's predicted memory when the log prints none."""
    told = "" if parsed.max_model_len else f" (the log prints no max length: the engine's {length:,} for the model)"
    tokens = _printed_tokens(parsed)
    if replay.name == "sglang" and tokens is not None:
        return _sglang_requests(parsed, tokens, length, told)
    printed = _printed_available(parsed)
    if printed is not None and printed.bounds():
        low, high = printed.bounds()
        source, base = "the log", f"the printed {printed.printed}"
    else:
        low, high = budget.kv_bytes - budget.error_bytes, budget.kv_bytes + budget.error_bytes
        source, base = "estimate", f"hfkv's predicted {format_gib(budget.kv_bytes)} ±{budget.error_bytes / GIB:.2f} GiB"
    counts = [_requests_in(_fit(report, replay, kv, parsed), length, replay.name) if kv > 0 else 0 for kv in (low, high)]
    unit = "blocks ÷ blocks per request" if replay.name == "vllm" else "pool tokens ÷ length (capped by running requests)"
    return Answer(f"requests of {length:,} tokens that fit at once", "requests_fit", counts if counts[0] != counts[1]
                  else counts[0], _span(*counts), source, f"{unit} over {base}{told}")


def _sglang_requests(parsed: StartupLog, tokens: Figure, length: int, told: str) -> Answer:
    """SGLang's count from its own printed figures: the pool's tokens ÷ the length, at most the running
    requests and the Mamba state slots it printed."""
    count, caps = tokens.value // length, []
    for name in ("max_running_requests", "mamba_max_mamba_cache_size"):
        cap = parsed.value(name)
        if isinstance(cap, int) and not isinstance(cap, bool):
            count = min(count, cap)
            caps.append(f"{name.removeprefix('mamba_')} {cap:,}")
    how = f"the printed {tokens.value:,} pool tokens // {length:,}" + (f", at most {', '.join(caps)}" if caps else "")
    return Answer(f"requests of {length:,} tokens that fit at once", "requests_fit", count, f"{count:,}", "the log",
                  how + told)


def longest_answer(parsed: StartupLog, report: Report, replay: Replay, budget: MemoryBudget) -> Answer | None:
    """The largest --max-model-len that would start: vLLM's fit check (one null block kept out) over the
    printed KV memory; SGLang: the pool's tokens."""
    printed = _printed_available(parsed)
    if replay.name == "sglang":
        tokens = _printed_tokens(parsed)
        if tokens is None:
            return None
        context = _fit(report, replay, None, parsed).get("context_length")
        cap = f" (--context-length stops at the model's {context:,})" if context else ""
        return Answer("largest context one request can hold", "max_model_len_fit", tokens.value, f"{tokens.value:,}",
                      "the log", f"SGLang admits a request while the pool holds its tokens: {tokens.value:,} printed"
                      + cap)
    if printed is None or not printed.bounds():
        low = high = budget.kv_bytes
        source, base = "estimate", f"hfkv's predicted {format_gib(budget.kv_bytes)}"
    else:
        (low, high), source, base = printed.bounds(), "the log", f"the printed {printed.printed}"
    fits = [_fit(report, replay, kv, parsed).get("max_model_len_fit") for kv in (low, high)]
    if None in fits:
        return None
    how = f"vLLM's check that one request fits (a null block kept out) over {base}"
    model_max = _model_max(report, replay)
    if model_max and fits[0] > model_max:  # vLLM refuses a length past the model's own before sizing anything
        how += f"; memory holds {_span(*fits)}, but vLLM refuses a length past the model's {model_max:,}"
        fits = [model_max, model_max]
    return Answer("largest --max-model-len that would start", "max_model_len_fit", fits if fits[0] != fits[1] else
                  fits[0], _span(*fits), source, how)


def _model_max(report: Report, replay: Replay) -> int | None:
    """The engine's maximum length for the model (its config's, as the engine derives it)."""
    knobs = {k: v for k, v in replay.knobs.to_dict().items() if k != "engine_version"}
    try:
        return simulate(report, engine=replay.engine, **knobs).get("max_model_len")
    except HfkvError:
        return None


def setting_answer(parsed: StartupLog, report: Report, replay: Replay, budget: MemoryBudget, length: int,
                   wanted: int, why: str) -> Answer | None:
    """The --gpu-memory-utilization (vLLM) or --mem-fraction-static (SGLang) that fits ``wanted`` requests
    of ``length``: the bytes they need plus the terms besides the KV cache, over the memory the setting
    scales, rounded up to 2 decimals and checked by running the budget again. Where the log prints its
    KV memory, the engine's own measurement of the other terms stands in for hfkv's estimate."""
    name = "gpu_memory_utilization" if replay.name == "vllm" else "mem_fraction_static"
    offset, source, others = _calibration(parsed, budget)
    need = wanted * _request_bytes(_fit(report, replay, None, parsed), length, replay.name)
    base = budget.usable_bytes / budget.fraction if budget.fraction else 0
    if not base:
        return None
    first = math.ceil(100 * (need + budget.usable_bytes - budget.kv_bytes - offset) / base - 1e-9)

    def fits(hundredths: int) -> int:
        setting = hundredths / 100
        kv = as_measured(replay.budget(report, **{name: setting}), parsed, replay).kv_bytes + offset
        return _requests_in(_fit(report, replay, kv, parsed), length, replay.name) if kv > 0 else 0

    chosen = _smallest(fits, wanted, min(max(first, 1), 100))
    flag = "--" + name.replace("_", "-")
    how = (f"{wanted:,} × {format_gib(need / wanted)} a request + the other terms ({others}), over "
           f"{format_gib(base)}, rounded up to 2 decimals; checked by running the budget again")
    question = f"{flag} that fits {wanted:,} requests of {length:,} tokens ({why})"
    if chosen is not None:
        effective = replay.budget(report, **{name: chosen / 100})
        if abs(effective.fraction - chosen / 100) > 1e-9:
            how += (f"; {ENGINE_NAMES[replay.name]} turns {chosen / 100:.2f} into {effective.fraction:.3f} "
                    f"({effective.notes[0]})")
    if chosen is None:
        return Answer(question, name, None, f"none: even 1.00 holds {fits(100):,}", source, how)
    return Answer(question, name, chosen / 100, f"{chosen / 100:.2f} ({fits(chosen):,} fit)", source, how)


def _calibration(parsed: StartupLog, budget: MemoryBudget) -> tuple[int, str, str]:
    """(bytes to add to hfkv's KV memory, the source, what the other terms are): the printed KV memory
    less hfkv's prediction of it when the log prints it (the engine measured the other terms), else 0."""
    printed = _printed_available(parsed)
    if printed is None:
        return 0, "estimate", f"hfkv's estimate, ±{budget.error_bytes / GIB:.2f} GiB"
    return (printed.value - budget.kv_bytes, "the log",
            f"as the engine measured them: {format_gib(budget.usable_bytes)} less the printed {printed.printed}")


def _request_bytes(found: dict[str, Any], length: int, engine: str) -> int:
    if engine == "vllm":
        return int(found.get("request_bytes") or 0)
    return int(Fraction(found.get("bytes_per_token") or 0) * length) + int(found.get("mamba_bytes_per_request") or 0)


def _smallest(fits: Any, wanted: int, start: int) -> int | None:
    """The smallest setting in hundredths (1–100) at which ``fits`` reaches ``wanted``, searched from
    ``start`` (the inverted budget's guess): up while it falls short, down while it still fits."""
    at = start
    while at <= 100 and fits(at) < wanted:
        at += 1
    if at > 100:
        return None
    while at > 1 and fits(at - 1) >= wanted:
        at -= 1
    return at


def newest_answer(parsed: StartupLog, report: Report, replay: Replay, budget: MemoryBudget,
                  knobs: dict[str, Any]) -> Answer | None:
    """The same start on the newest modelled release: hfkv's budget there minus its budget for the log's
    release, added to the KV memory the log printed (the terms both measure cancel), and its pools."""
    newest = versions.newest(replay.name)
    if versions.split(replay.engine)[1] in (None, newest):
        return Answer("the same start on the newest modelled release", "newest", None,
                      f"the replay above is {ENGINE_NAMES[replay.name]} {newest}'s", "estimate",
                      "the log's release is the newest modelled, or untold (the newest's rules replayed)")
    given = {k: v for k, v in knobs.items() if k != "compute_capability"}
    later = dataclasses.replace(replay, engine=replay.name, knobs=EngineKnobs.resolve(
        {**given, "compute_capability": replay.knobs.compute_capability}))
    try:
        theirs = as_measured(later.budget(report), parsed, later)
    except HfkvError as err:
        return Answer("the same start on the newest modelled release", "newest", None, f"refused: {err}", "estimate", "")
    printed = _printed_available(parsed)
    kv = theirs.kv_bytes + ((printed.value - budget.kv_bytes) if printed is not None else 0)
    found = _fit(report, later, kv, parsed) if kv > 0 else {}
    tokens, conc = found.get("kv_cache_tokens"), found.get("max_concurrency")
    text = (f"{format_gib(kv)} ±{theirs.error_bytes / GIB:.2f}, {tokens or 0:,} tokens"
            + (f", {conc:.2f}x" if isinstance(conc, float) else ""))
    how = (f"{versions.described(replay.name, None)}: its budget {format_gib(theirs.kv_bytes)} against "
           f"{format_gib(budget.kv_bytes)} for {versions.described(*versions.split(replay.engine))}"
           + (f", moved onto the printed {printed.printed}" if printed is not None else "") + "; " + "; ".join(theirs.notes[-1:]))
    return Answer(f"the same start on {ENGINE_NAMES[replay.name]} {newest}", "newest",
                  {"kv_bytes": kv, "kv_cache_tokens": tokens, "max_concurrency": conc}, text, "estimate", how)


def answers(parsed: StartupLog, report: Report, replay: Replay, budget: MemoryBudget, knobs: dict[str, Any],
            requests: int | None = None) -> list[Answer]:
    """The answers people want, for the start ``replay`` describes (docs/logs.md, "Answers")."""
    length = _request_length(parsed, report, replay)
    refused = _refusal(_fit(report, replay, None, parsed))
    if refused:
        return [Answer("does the start replay", "refused", None, refused, "code",
                       "the engine's checks on the log's arguments and the model's config hfkv read")]
    if not length:
        return []
    now = requests_answer(parsed, report, replay, budget, length)
    wanted, why = (requests, "--requests") if requests else _wanted(parsed, now)
    found = [now, longest_answer(parsed, report, replay, budget),
             setting_answer(parsed, report, replay, budget, length, wanted, why),
             newest_answer(parsed, report, replay, budget, knobs)]
    return [answer for answer in found if answer is not None]


def _wanted(parsed: StartupLog, now: Answer) -> tuple[int, str]:
    """(requests to size for, why): the log's own cap (vLLM's max_num_seqs, SGLang's
    max_running_requests), else one more than fit now."""
    name = "max_num_seqs" if parsed.engine == "vllm" else "max_running_requests"
    cap = parsed.args.get(name)
    if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
        return cap, f"the log's {name}"
    fit = now.value[0] if isinstance(now.value, list) else now.value
    return int(fit or 0) + 1, "one more than fit now"


# -- the whole -----------------------------------------------------------------------------------

def explain(parsed: StartupLog, report: Report | None, *, model: str | None = None, model_error: str | None = None,
            compute_capability: str | None = None, gpu: str | None = None,
            requests: int | None = None) -> Explanation:
    """The log explained against ``report`` (None: the model could not be resolved, ``model_error``
    says why; every parsed figure is still returned). ``gpu`` (``NAME[:COUNT]``) is the GPU when the log
    names none; ``requests`` the N of the utilization/fraction answer."""
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
    gpu_text, budget_dict, found = None, None, []
    if report is not None:
        comparisons += kv_checks(parsed, report, knobs)
        weights = weights_check(parsed, report)
        if weights is not None:
            comparisons.append(weights)
        rows, replay, budget, predicted_notes = predict(parsed, report, knobs, gpu)
        comparisons += rows
        notes += predicted_notes
        if replay is not None and budget is not None:
            gpu_text = f"{replay.gpu.name} ({replay.gpu_how})"
            budget_dict = {"engine": replay.engine, "release": versions.described(*versions.split(replay.engine)),
                           **budget.to_dict()}
            found = answers(parsed, report, replay, budget, knobs, requests)
    return Explanation(parsed, model, model_error, engine_for(parsed), replayed(parsed), parsed.version, assumed, options,
                       knobs, tuple(comparisons), tuple(notes), gpu_text, budget_dict, tuple(found), report)


def with_options(explanation: Explanation, *, gpu: str | None = None, requests: int | None = None) -> Explanation:
    """The same log and model explained again for a GPU (``NAME[:COUNT]``) or a request count the caller
    gives (the command's ``--gpu`` and ``--requests``)."""
    return explain(explanation.log, explanation.report, model=explanation.model, model_error=explanation.model_error,
                   compute_capability=explanation.knobs.get("compute_capability"), gpu=gpu, requests=requests)
