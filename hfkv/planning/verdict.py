"""The verdict: will the model start on these GPUs, and how many requests fit. One function, every output.

``verdict(plan, counted=None, others=None)`` reads a serving plan (``serving.plan_serving``) and, when
an engine counted, that engine's own result; it returns a ``Verdict`` whose ``line`` every output
prints the same way (table, Markdown, JSON, HTML, the web page, ``watch``, ``compare``, ``plot``):

* ``fits``: at the longest context asked (up to the model's maximum) where at least one request fits,
  the whole requests across the deployment: the engine's own count when an engine was asked (the
  floor of its blocks or pages, never a rounded printout), else hfkv's exact count in the engine's
  budget. When the budget rests on estimates (the engine's reserve, the weights), the line gives the
  range those estimates' bands allow.
* ``may-not-start``: the central estimate fits, but at the low end of the estimates' bands not one
  request does: the line gives both ends (exit 0: the engine may well start).
* ``does-not-fit``: the weights alone exceed what the engine may use, or not one request fits.
* ``refused``: the engine would not start this layout (both engines, for hfkv's own count).
* ``unknown``: a figure the verdict needs is unknown (the weights); the line says which and gives the
  upper bound without it.

Without an engine, ``others`` holds each engine's count or refusal; the line names those that differ
from hfkv's count by more than 10%, so a count the engines would not reach never stands alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from hfkv.units import format_bytes, format_tokens

ENGINE_LABELS = {"theory": "hfkv", "sglang": "SGLang", "vllm": "vLLM"}
FAILED = ("does-not-fit", "refused")  # statuses that are a "no": they exit 3 and are drawn as a failure
DIFFERENCE = 0.10  # an engine's count is named when it differs from hfkv's by more than this


@dataclass(frozen=True)
class Verdict:
    """``status`` (fits, does-not-fit, refused, unknown, none), ``requests`` whole requests across the
    deployment at ``tokens``, ``low``/``high`` the range the estimates' bands allow, who counted and
    where, the reason of a "no", and what the other engines say."""

    status: str
    line: str
    requests: int | None = None
    tokens: int | None = None
    low: int | None = None
    high: int | None = None
    counted_by: str = "hfkv"
    reason: str | None = None
    engines: dict[str, str] = field(default_factory=dict)
    details: tuple[str, ...] = ()  # what the line rests on: estimates and the engines' reasons, a line each

    @property
    def failed(self) -> bool:
        return self.status in FAILED

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "line": self.line, "requests": self.requests, "tokens": self.tokens,
                "requests_low": self.low, "requests_high": self.high, "counted_by": self.counted_by,
                "reason": self.reason, "engines": dict(self.engines), "details": list(self.details)}


def layout_label(plan: dict[str, Any], who: str | None = None) -> str:
    """'(SGLang 0.5.12, TP 8, DP attention 8, EP)': who counted (``who``, else the engine release when one
    was pinned, else the engine), and the whole layout."""
    shape = plan.get("layout") or {}
    who = who or plan.get("engine_release") or ENGINE_LABELS.get(plan.get("engine") or "theory", "hfkv")
    words = [who, f"TP {plan.get('tensor_parallel_size', 1)}"]
    dp = shape.get("data_parallel_size") or 1
    if shape.get("enable_dp_attention"):
        words.append(f"DP attention {dp}")
    elif dp > 1:
        words.append(f"DP {dp}")
    if (shape.get("pipeline_parallel_size") or 1) > 1:
        words.append(f"PP {shape['pipeline_parallel_size']}")
    if shape.get("enable_expert_parallel"):
        words.append(f"EP {shape.get('expert_shards', '')}".rstrip())
    return "(" + ", ".join(words) + ")"


def _where(plan: dict[str, Any]) -> str:
    return f"on {plan['gpu_count']} × {plan['gpu']}" if plan.get("gpu") else "in the given KV budget"


def engine_requests(result: dict[str, Any], ranks: int) -> dict[int, int] | None:
    """{context: whole requests across the ``ranks`` that keep their own} from an engine mode's result,
    at the engine's max length: vLLM ``num_blocks // blocks_per_request``; SGLang the token pool over
    the context, capped by its running requests and state slots; None without a budget."""
    length = result.get("max_model_len") or result.get("context_length")
    if not length:
        return None
    if result.get("num_blocks") is not None and result.get("blocks_per_request"):
        per_rank = int(result["num_blocks"]) // int(result["blocks_per_request"])
    elif result.get("max_total_num_tokens") is not None:
        per_rank = int(result["max_total_num_tokens"]) // int(length)
        for cap in ("max_running_requests", "max_mamba_cache_size"):
            if result.get(cap) is not None:
                per_rank = min(per_rank, int(result[cap]))
    else:
        return None
    return {int(length): per_rank * ranks}


def _at_longest(plan: dict[str, Any], requests: dict[int, int]) -> tuple[int | None, int | None, int | None]:
    """(context fitted, requests there, the longest context asked when none fits there)."""
    limit = (plan.get("max_length") or {}).get("tokens")
    asked = sorted((t for t in requests if not limit or t <= limit), reverse=True) or sorted(requests, reverse=True)
    if not asked:
        return None, None, None
    fitting = [t for t in asked if requests[t] >= 1]
    if not fitting:
        return None, 0, asked[-1]
    return fitting[0], requests[fitting[0]], asked[0]


def _range(plan: dict[str, Any], tokens: int) -> tuple[int | None, int | None]:
    """(low, high) requests at ``tokens`` when the budget's estimates are off by their whole band."""
    memory = plan.get("memory") or {}
    band = memory.get("error_bytes") or 0
    ctx = next((c for c in plan.get("contexts", []) if c["tokens"] == tokens), None)
    budget = plan.get("kv_budget_bytes")
    if not band or ctx is None or budget is None or not ctx.get("bytes_per_request"):
        return None, None
    ranks = plan.get("request_ranks") or 1
    per = ctx["bytes_per_request"]
    return max(int((budget - band) // per), 0) * ranks, int((budget + band) // per) * ranks


def _engine_range(band: tuple[dict[str, Any] | None, dict[str, Any] | None] | None, ranks: int,
                  tokens: int) -> tuple[int | None, int | None]:
    """(low, high) requests at ``tokens`` from the engine's own results at the band's two ends (a budget
    the band empties counts 0)."""
    if not band:
        return None, None
    ends = []
    for result in band:
        counted = engine_requests(result, ranks) if result else None
        ends.append((counted or {}).get(tokens, 0) if result is not None else 0)
    return ends[0], ends[1]


def _caveats(plan: dict[str, Any]) -> list[str]:
    out = []
    if plan.get("weights_source") == "estimate" and plan.get("budget_source") == "gpu":
        out.append("weights estimated from the config's shapes")
    memory = plan.get("memory") or {}
    if memory.get("error_bytes"):
        out.append(f"the engine's reserve is an estimate (±{format_bytes(memory['error_bytes'])})")
    return out


def verdict(plan: dict[str, Any], counted: dict[str, Any] | None = None,
            others: dict[str, dict[str, Any]] | None = None,
            counted_band: tuple[dict[str, Any] | None, dict[str, Any] | None] | None = None,
            headline: str = "hfkv") -> Verdict:
    """The verdict of ``plan``: counted by the engine of ``counted`` (its simulate result) when given,
    else by hfkv; ``others``: {engine: {"refused", "requests", "tokens"}} (``enrich``), named where they
    differ. ``counted_band``: the engine's results in the budget less and plus the reserve's band (its
    count's range; ``enrich`` runs them). ``headline`` "vllm" (no engine asked for): an engine's own count
    is the one the line gives, the count a user will see: vLLM's, or SGLang's where vLLM would refuse and
    SGLang starts, with hfkv's exact one and the other engine's beside it when they differ; where neither
    counts, hfkv's count stays, naming them."""
    base = _verdict(plan, counted, others, counted_band)
    if headline != "vllm" or counted is not None or base.status not in ("fits", "may-not-start"):
        return base
    lead = next((name for name in ("vllm", "sglang") if _counts((others or {}).get(name) or {}, base.tokens)), None)
    if lead is None:
        return base
    return _engine_headline(plan, base, lead, (others or {})[lead],
                            {name: view for name, view in (others or {}).items() if name != lead})


def _counts(view: dict[str, Any], tokens: int | None) -> bool:
    """Whether an engine's view gives its own count at the verdict's context."""
    return not view.get("refused") and view.get("requests") is not None and view.get("tokens") == tokens


def _engine_headline(plan: dict[str, Any], base: Verdict, lead: str, view: dict[str, Any],
                     others: dict[str, dict[str, Any]]) -> Verdict:
    """``base`` (hfkv's count) told with the ``lead`` engine's own count at the same context as the answer."""
    count, tokens = view["requests"], base.tokens
    who = view.get("release") or ENGINE_LABELS[lead]
    where, label = _where(plan), layout_label(plan, who)
    if count == 0:
        reason = (f"{ENGINE_LABELS[lead]}'s own pool holds no request at {format_tokens(tokens)} (hfkv's exact "
                  f"count: {base.requests:,})")
        return Verdict("does-not-fit", f"does NOT fit {where}: {reason} {label}", reason=reason, tokens=tokens,
                       requests=0, counted_by=who, details=base.details)
    low, high = view.get("requests_low"), view.get("requests_high")
    status = "may-not-start" if low == 0 else "fits"
    text = (f"fits {where}: {count:,} request{'s' if count != 1 else ''} at {format_tokens(tokens)} {label}"
            if status == "fits" else
            f"may not start {where}: {count:,} at {format_tokens(tokens)} {label} at the central estimate")
    if low is not None and high is not None and (low, high) != (count, count):
        text += f"; {low:,}–{high:,} within the estimates' bands"
    engines = _others(count, tokens, others)
    if base.requests != count:
        engines = {"hfkv": f"{base.requests:,} (exact bytes per request)", **engines}
    if engines:
        text += "; " + "; ".join(f"{name}: {_brief(what)}" for name, what in engines.items())
    details = [d for d in base.details if not any(d.startswith(f"{name}:") for name in ENGINE_LABELS.values())]
    details += [f"{name}: {what}" for name, what in engines.items() if _brief(what) != what]
    return Verdict(status, text, requests=count, tokens=tokens, low=low, high=high, counted_by=who,
                   engines=engines, details=tuple(details))


def _verdict(plan: dict[str, Any], counted: dict[str, Any] | None, others: dict[str, dict[str, Any]] | None,
             counted_band: tuple[dict[str, Any] | None, dict[str, Any] | None] | None) -> Verdict:
    """The verdict counted by the engine of ``counted``, else by hfkv (``verdict``)."""
    where, label = _where(plan), layout_label(plan)
    engine = plan.get("engine_release") or ENGINE_LABELS.get(plan.get("engine") or "theory", "hfkv")
    if plan.get("weights_fit") is False:
        reason = (f"weights need {format_bytes(plan['weights_bytes_per_gpu'])} per GPU of "
                  f"{format_bytes(plan['usable_bytes'])} the engine may use")
        return Verdict("does-not-fit", f"does NOT fit {where}: {reason} {label}", reason=reason, counted_by=engine)
    if plan.get("kv_budget_bytes") is None:
        return Verdict("none", "no verdict: give --gpu or --budget")
    beyond = plan.get("beyond_maximum")
    if beyond and not long_lengths_allowed():
        reason = (f"{beyond['tokens']:,} tokens is past the model's maximum "
                  f"({beyond['model_maximum']:,}): vLLM and SGLang refuse a longer length unless "
                  "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 / SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
        return Verdict("refused", f"refused {where} {label}: {reason}", reason=reason, counted_by=engine)
    ranks = plan.get("request_ranks") or 1
    requests = engine_requests(counted, ranks) if counted else None
    counted_by = engine if requests is not None else "hfkv"
    if requests is None:
        requests = {c["tokens"]: c.get("max_concurrency_total") or 0 for c in plan.get("contexts", [])}
    tokens, count, asked = _at_longest(plan, requests)
    if count is None:
        return Verdict("none", "no verdict: no context to count requests at")
    if plan.get("budget_source") == "gpu-without-weights":
        line = (f"unknown {where} {label}: the weights are unknown ({plan.get('weights_unknown') or 'no figure'}); "
                f"without them at most {count:,} request{'s' if count != 1 else ''} at {format_tokens(tokens or asked)}")
        return Verdict("unknown", line, requests=count, tokens=tokens, counted_by=counted_by,
                       reason="weights unknown")
    if not count:
        reason = (f"not one request at {format_tokens(asked)} in the "
                  f"{format_bytes(max(plan['kv_budget_bytes'], 0))} KV budget per GPU")
        return Verdict("does-not-fit", f"does NOT fit {where}: {reason} {label}", reason=reason, tokens=asked,
                       requests=0, counted_by=counted_by)
    start = _start_failure(plan) if counted is None else None
    if start:
        return Verdict("does-not-fit", f"does NOT start {where} {label}: {start}", reason=start, tokens=asked,
                       requests=0, counted_by=counted_by)
    if counted_by == "hfkv":
        low, high = _range(plan, tokens)
    else:
        low, high = _engine_range(counted_band, ranks, tokens)
    status = "fits"
    # The line is the answer, kept short; what it rests on follows it (``details``).
    text = f"fits {where}: {count:,} request{'s' if count != 1 else ''} at {format_tokens(tokens)} {label}"
    if low == 0:
        # The central estimate starts, the band's low end does not: said as such, never as a refusal.
        status = "may-not-start"
        text = f"may not start {where}: {count:,} at {format_tokens(tokens)} {label} at the central estimate"
    if tokens != asked:
        text += f"; none at {format_tokens(asked)}"
    if low is not None and (low, high) != (count, count):
        text += f"; {low:,}–{high:,} within the estimates' bands"
    details = _caveats(plan)
    engines = _others(count, tokens, others or {})
    if engines:
        text += "; " + "; ".join(f"{name}: {_brief(what)}" for name, what in engines.items())
        details += [f"{name}: {what}" for name, what in engines.items() if _brief(what) != what]
    if others and all(view.get("refused") for view in others.values()):
        status = "refused"  # every engine refuses this layout: hfkv's count cannot be served
        text = (f"refused {where} {label}: every engine would refuse this layout; hfkv's {count:,} at "
                f"{format_tokens(tokens)} cannot be served")
    return Verdict(status, text, requests=count, tokens=tokens, low=low, high=high, counted_by=counted_by,
                   engines=engines, details=tuple(details))


def _brief(what: str) -> str:
    """What an engine says, as the verdict line names it: its words up to the reason in parentheses."""
    return what.split(" (", 1)[0]


def long_lengths_allowed() -> bool:
    """Both engines' opt-ins for a length past the model's maximum are set (then they only warn)."""
    return all(os.environ.get(name, "").strip().lower() in ("1", "true")
               for name in ("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"))


def _start_failure(plan: dict[str, Any]) -> str | None:
    """Why the engine would not start this deployment (one request at its max length does not fit the KV
    budget, as vLLM checks at start-up), with the largest max length that would, or None."""
    length = plan.get("max_length") or {}
    if length.get("fits") is not False:
        return None
    largest = length.get("largest")
    hint = (f"--max-model-len {largest:,} would start" if largest else "no max length would start")
    return (f"one request at the max length {length['tokens']:,} needs {format_bytes(length['bytes_per_request'])} "
            f"per GPU of the {format_bytes(max(plan['kv_budget_bytes'], 0))} KV budget; {hint}")


def _others(count: int, tokens: int, others: dict[str, dict[str, Any]]) -> dict[str, str]:
    """{engine label: what it says} for each engine that refuses, cannot hold the weights, or whose count
    at the same context differs from hfkv's by more than 10%."""
    said = {}
    for name, view in others.items():
        label = ENGINE_LABELS.get(name, name)
        if view.get("refused"):
            said[label] = f"would refuse ({view['refused']})"
        elif view.get("weights_fit") is False:
            said[label] = "does not fit (the weights fill what its budget may use)"
        elif view.get("requests") == 0:
            said[label] = f"does not fit (its budget holds no request at {format_tokens(tokens)})"
        elif view.get("requests") is not None and view.get("tokens") == tokens:
            n = view["requests"]
            if abs(n - count) > DIFFERENCE * max(count, 1):
                said[label] = f"{n:,} request{'s' if n != 1 else ''}" if n else "none fit in its budget"
    return said
