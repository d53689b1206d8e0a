"""Renderers: a table for people (rich; plain when piped), the JSON contract, and Markdown.

rich is imported inside the functions that draw with it: JSON and Markdown output never load it.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Iterable

from hfkv.text import markdown_cell, one_line
from hfkv.model import accounting as acc
from hfkv.model.report import Report
from hfkv.planning.verdict import ENGINE_LABELS
from hfkv.units import format_bytes, format_tokens


def to_json(reports: list[Report] | Report, errors: Iterable[dict] = ()) -> str:
    """One object for one report, a list for several (error rows included in the list)."""
    if isinstance(reports, Report):
        return json.dumps(reports.to_dict(), indent=2)
    rows: list[dict[str, Any]] = [r.to_dict() for r in reports] + list(errors)
    return json.dumps(rows, indent=2)


def _num(value: int | float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}"
    return f"{int(value):,}"


def _bytes(value: int | float | None) -> str:
    """Exact bytes, with the binary-unit reading beside it when it is large."""
    if value is None:
        return "-"
    if abs(value) < 1024:
        return f"{_num(value)} B"
    return f"{_num(value)} B ({format_bytes(value)})"


def summary_lines(report: Report) -> list[str]:
    s_star = report.crossover_tokens
    lines = [
        f"α = {_bytes(report.alpha_bytes_per_token)} per token",
        f"γ = {_bytes(report.gamma_bytes_per_request)} per request",
        f"S* = γ/α = {'-' if s_star is None else _num(round(s_star)) + ' tokens'}",
    ]
    if report.recurrent_state_bytes:
        lines.append(f"recurrent state = {_bytes(report.recurrent_state_bytes)} per request")
    if report.max_context_for_batch is not None or (report.batch and report.budget_bytes):
        lines.append(longest_context_line(report.max_context_for_batch, report.batch, report.budget_bytes))
    return lines


def longest_context_line(longest: int | None, batch: int | None, budget: int | None) -> str:
    """The answer to "how long a context for ``batch`` requests in ``budget``": 0 tokens is said as
    "does not fit", not as a length."""
    where = f"for {batch} concurrent request{'s' if batch != 1 else ''} in {format_bytes(budget)}"
    if longest is None:
        return f"longest context {where}: unbounded (memory stops growing with the context)"
    if longest == 0:
        return f"longest context {where}: does not fit (even 1 token per request needs more)"
    return f"longest context {where}: {longest:,} tokens"


def extra_lines(report: Report) -> list[str]:
    """Weights, serving plan and engine figures, when the report carries them."""
    lines: list[str] = []
    weights = report.extra.get("weights")
    if weights:
        lines.append(weights_line(weights))
    serving = report.extra.get("serving")
    if serving:
        where = f"{serving['gpu']} × {serving['gpu_count']}" if serving.get("gpu") else "explicit budget"
        layout = (serving.get("layout") or {}).get("description") or f"TP {serving['tensor_parallel_size']}"
        lines.append(f"serving on {where}, {layout}: KV budget per GPU {_budget_text(serving)}")
        if serving.get("memory"):
            lines += memory_lines(serving["memory"])
        elif serving.get("weights_bytes_per_gpu") is not None:
            lines.append(f"  weights per GPU {format_bytes(serving['weights_bytes_per_gpu'])}")
        ranks = serving.get("request_ranks") or serving.get("replicas") or 1
        for ctx in serving.get("contexts", []):
            if ctx.get("max_concurrency") is not None:
                step = ctx.get("decode_step_seconds") or {}  # None without a GPU's bandwidth
                fastest = step.get("1")
                total = ctx.get("max_concurrency_total")
                lines.append(f"  {format_tokens(ctx['tokens'])}: B_max {ctx['max_concurrency']:,} per rank"
                             + (f", {total:,} across {ranks} ranks" if ranks > 1 and total is not None else "")
                             + (f", decode step ≥ {fastest * 1000:.2f} ms at batch 1" if fastest else ""))
        fits = (serving.get("max_length") or {}).get("fits")
        if fits is not None:
            lines.append(f"  one request at {format_tokens(serving['max_length']['tokens'])}: {'fits' if fits else 'does NOT fit'}")
    engine = report.extra.get("engine")
    if engine:
        head = f"{engine['name']} {engine['version']}: {_num(engine['bytes_per_token'])} B per token per GPU"
        for key in ("max_total_num_tokens", "max_mamba_cache_size", "block_size", "num_blocks", "kv_cache_tokens"):
            if engine.get(key) is not None:
                head += f", {key} {_num(engine[key])}"
        if engine.get("max_concurrency") is not None:
            head += f", max concurrency {engine['max_concurrency']}"
        deployment = engine.get("deployment") or {}
        if (deployment.get("request_ranks") or 1) > 1 and deployment.get("max_concurrency_total") is not None:
            head += (f"; {deployment['description']}: {deployment['request_ranks']} ranks, max concurrency "
                     f"{_num(deployment['max_concurrency_total'])}, {_num(deployment['kv_cache_tokens_total'])} tokens")
        lines.append(head)
        lines += [f"  assumes: {a}" for a in engine.get("assumptions", [])]
    return lines


WEIGHTS_SOURCES = {
    "metadata": "the Hub's safetensors metadata", "headers": "the safetensors files' headers",
    "given": "given with --weights-bytes", "estimate": "estimated from the config's shapes",
}


def weights_line(weights: dict[str, Any]) -> str:
    """'weights: 8,030,261,248 parameters (BF16 8,030,261,248), 14.96 GiB (the Hub's safetensors metadata)';
    an estimate says so, with its quantisation reading."""
    source = weights.get("source")
    count = weights.get("total_parameters")
    per = weights.get("parameters") or {}
    text = "weights: "
    if count:
        text += f"{'≈ ' if source == 'estimate' else ''}{count:,} parameters"
        text += f" ({', '.join(f'{dtype} {n:,}' for dtype, n in sorted(per.items()))})" if per else ""
        text += ", "
    text += f"{format_bytes(weights.get('weights_bytes'))} ({WEIGHTS_SOURCES.get(source, source)}"
    if source == "estimate" and weights.get("quantization"):
        text += f": {weights['quantization']}"
    return text + ")"


def terminal_text(text: Any, style: str | None = None) -> Any:
    """Model- or user-provided text as a rich ``Text``: never markup, control and bidi characters
    escaped (an ESC, an OSC hyperlink or a newline from a config cannot reach the terminal raw)."""
    from rich.text import Text

    return Text(one_line(str(text)), style=style or "")


def console_for(console: Any = None) -> Any:
    """``console``, else one on stdout; piped, as wide as the output needs (nothing wrapped)."""
    from rich.console import Console

    if console is not None:
        return console
    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=100_000)


def print_fields(console: Any, fields: list[Any], sep: str = " · ") -> None:
    """``fields`` (rich Texts) on as few lines as the width allows, a line break only between fields."""
    from rich.text import Text

    line, width = Text(), console.width
    for field in fields:
        if line.cell_len and line.cell_len + len(sep) + field.cell_len > width:
            console.print(line, soft_wrap=True)
            line = Text()
        if line.cell_len:
            line.append(sep)
        line.append_text(field)
    if line.cell_len:
        console.print(line, soft_wrap=True)


def print_table(console: Any, title: str | None, columns: list[tuple[str, bool]], rows: list[list[str]]) -> None:
    """A table (``columns``: (title, right-aligned)), cells as data; cells are never cut or wrapped.

    When the table is wider than the console, each row is printed as ``title: value`` lines under
    its first cell instead: a narrow terminal gets every figure whole rather than ``2,…``.
    """
    from rich.measure import Measurement
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name, right in columns:
        table.add_column(terminal_text(name), justify="right" if right else "left", no_wrap=True)
    for row in rows:
        table.add_row(*(terminal_text(cell) for cell in row))
    natural = Measurement.get(console, console.options.update(width=1_000_000), table).maximum
    if natural <= console.width:
        console.print(table)
        return
    if title:
        console.print(terminal_text(title, "italic"), soft_wrap=True)
    for row in rows:
        console.print(terminal_text(row[0], "bold"), soft_wrap=True)
        for (name, _), cell in zip(columns[1:], row[1:]):
            console.print(terminal_text(f"  {name}: {cell}"))


def used_dtypes(report: Report) -> list[tuple[str, str]]:
    """(label, dtype) of the storage dtypes the model's layers use: changing a dtype that no layer
    stores (a recurrent state in a pure-attention model) changes no byte, so it is not named."""
    p, layers, tp = report.precision, report.layer_specs, report.tensor_parallel_size
    named = [("KV", "kv", report.kv_cache_dtype), ("state", "state", report.state_dtype),
             ("conv", "conv", report.conv_dtype), ("indexer", "indexer", report.indexer_dtype)]
    if not layers:
        return [(label, dtype) for label, _, dtype in named]

    def cost(precision: Any) -> Any:
        return acc.request_bytes(layers, 4096, precision, tp)

    base = cost(p)
    used = []
    for label, field, dtype in named:
        other = "bf16" if getattr(p, field) in ("fp32", "fp8", "fp4") else "fp32"
        if cost(_with_dtype(p, field, other)) != base:
            used.append((label, dtype))
    return used or [("KV", report.kv_cache_dtype)]


def _with_dtype(precision: Any, field: str, dtype: str) -> Any:
    """``precision`` with one dtype changed (a frozen dataclass or a pydantic model)."""
    if dataclasses.is_dataclass(precision):
        return dataclasses.replace(precision, **{field: dtype})
    return precision.model_copy(update={field: dtype})


def header_fields(report: Report) -> tuple[list[Any], list[Any]]:
    """The two header lines of a report, as fields (model, type, mapper, commit; dtypes, TP)."""
    first = [terminal_text(report.model, "bold"), terminal_text(report.model_type or "?"),
             terminal_text(f"mapper {report.mapper}")]
    if report.commit:
        first.append(terminal_text(f"commit {report.commit[:12]}"))
    second = [terminal_text(f"{label} {dtype}") for label, dtype in used_dtypes(report)]
    second.append(terminal_text(layout_text(report)))
    return first, second


RECURRENT_PARTS = frozenset({"linear", "mamba", "conv", "rwkv"})  # kept in the state (and conv) dtype
ATTENTION_PARTS = frozenset({"full", "sliding", "chunked", "cross", "mla", "compressed"})  # in the KV dtype


def precision_text(dtypes: dict[str, Any], part_kinds: Iterable[str], sep: str = ", ") -> str:
    """The dtypes that apply to this model's storage: 'KV bf16' where a layer attends, 'state fp32,
    conv bf16' where one keeps a recurrent state, 'indexer fp8' where one keeps indexer keys."""
    kinds = set(part_kinds)
    words = [f"KV {dtypes.get('kv_cache_dtype')}"] if kinds & ATTENTION_PARTS or not kinds else []
    if kinds & RECURRENT_PARTS:
        words += [f"state {dtypes.get('state_dtype')}", f"conv {dtypes.get('conv_dtype')}"]
    if "indexer" in kinds:
        words.append(f"indexer {dtypes.get('indexer_dtype')}")
    return sep.join(words)


def layout_text(report: Report) -> str:
    """'TP 8 (bytes per GPU)', or with a layout that changes one GPU's share, which GPU the figures are
    of: 'TP 8 · DP attention 8 · PP 2: bytes per GPU at attention TP 1, stage 1 (24 layers)'."""
    tp = report.tensor_parallel_size or 1
    attn, pp = report.attention_tensor_parallel_size or tp, report.pipeline_parallel_size or 1
    words = [f"TP {tp}"]
    if attn != tp:
        words.append(f"DP attention {tp // attn}")
    if pp > 1:
        words.append(f"PP {pp}")
    text = " · ".join(words)
    if attn == tp and pp == 1:
        return text + (" (bytes per GPU)" if tp > 1 else "")
    where = [f"attention TP {attn}"] if attn != tp else []
    if pp > 1:
        where.append(f"pipeline stage {report.pipeline_stage} ({len(report.layers)} layers)")
    return f"{text}: bytes per GPU at {', '.join(where)}"


def verdict_line(report: Report) -> str | None:
    """The serving plan's one-line answer ("fits on 8 × H200-141GB: 37 requests at 128K (SGLang, TP 8,
    DP attention 8)"), printed first in every format; None without a serving plan."""
    serving = report.extra.get("serving") or {}
    return serving.get("verdict")


def verdict_details(report: Report) -> list[str]:
    """What the verdict rests on, a line each (estimates, an engine's full reason): printed under it."""
    serving = report.extra.get("serving") or {}
    return list((serving.get("verdict_detail") or {}).get("details") or [])


def brief_lines(report: Report) -> list[str]:
    """The answer alone (``--brief``): the verdict, the weights, the KV budget per GPU and the requests per
    context (without a GPU: the bytes one request takes per context)."""
    serving = report.extra.get("serving") or {}
    lines = [line for line in (verdict_line(report),) if line]
    weights = report.extra.get("weights")
    if weights:
        lines.append(weights_line(weights))
    if serving:
        lines.append(f"KV budget per GPU: {_budget_text(serving)}")
        counts = [f"{format_tokens(c['tokens'])} {c['max_concurrency_total']:,}" for c in serving.get("contexts", [])
                  if c.get("max_concurrency_total") is not None]
        if counts:
            lines.append("requests across the deployment: " + " · ".join(counts))
    else:
        lines.append("per request: " + " · ".join(f"{format_tokens(c.tokens)} {format_bytes(c.kv_bytes_per_request)}"
                                                  for c in report.contexts))
    return lines


def verdict_status(report: Report) -> str | None:
    """fits, does-not-fit, refused, unknown or none (``hfkv.planning.verdict``); None without a plan."""
    return ((report.extra.get("serving") or {}).get("verdict_detail") or {}).get("status")


# How each status looks in a terminal: a "no" looks like a failure.
VERDICT_STYLES = {"fits": "bold green", "may-not-start": "bold yellow", "does-not-fit": "bold red", "refused": "bold red", "unknown": "bold yellow"}
# And in Markdown.
VERDICT_MARKS = {"fits": "✓", "may-not-start": "?", "does-not-fit": "✗", "refused": "✗", "unknown": "?"}


def _budget_text(serving: dict[str, Any]) -> str:
    """The KV budget of a serving plan in words: unknown, none (the weights do not fit), or bytes."""
    budget = serving.get("kv_budget_bytes")
    if serving.get("weights_fit") is False:
        return (f"none: the weights do not fit ({format_bytes(serving.get('weights_bytes_per_gpu'))} per GPU, "
                f"more than the {format_bytes(serving.get('usable_bytes'))} the engine may use)")
    if budget is None:
        return "unknown"
    upper = serving.get("budget_source") == "gpu-without-weights"
    return format_bytes(max(budget, 0)) + (" (upper bound: weights unknown, pass --weights-bytes)" if upper else "")


def memory_lines(memory: dict[str, Any]) -> list[str]:
    """The engine's budget term by term: what it may use, then each term with its source and band."""
    fraction = "gpu_memory_utilization" if memory.get("engine") == "vllm" else "mem_fraction_static"
    lines = [f"  {ENGINE_LABELS.get(memory['engine'], memory['engine'])} may use {format_bytes(memory['usable_bytes'])} per GPU ({fraction} "
             f"{memory['fraction']:.3g}, {memory['fraction_source']})"]
    for term in memory.get("terms", []):
        if not term["bytes"] and not term["error_bytes"]:
            continue
        band = f" ± {format_bytes(term['error_bytes'])}" if term["error_bytes"] else ""
        lines.append(f"    − {term['name']} {format_bytes(term['bytes'])}{band} ({term['source']}: {term['note']})")
    return lines


def render_table(report: Report, console: Any = None) -> None:
    """Print a report for a person: layer groups, α/γ/S*, then one row per context.

    Every model-provided string is data (no rich markup, control characters escaped); on a
    terminal too narrow for a table its rows are printed as lines (``print_table``).
    """
    console = console_for(console)
    line = verdict_line(report)
    if line:
        console.print(terminal_text(line, VERDICT_STYLES.get(verdict_status(report) or "", "bold")))
        for detail in verdict_details(report):
            console.print(terminal_text(f"  {detail}", "dim"))
    for fields in header_fields(report):
        print_fields(console, fields)
    group_columns = [("kind", False), ("layers", True), ("σ", True), ("entries n(S)", False),
                     ("E bytes/entry", True), ("C bytes/request", True), ("S_eq", True)]
    group_rows = [[g.kind, str(g.layers), str(g.copies), g.entries, _num(g.entry_bytes), _num(g.state_bytes),
                   "-" if g.equivalent_tokens is None else _num(round(g.equivalent_tokens))] for g in report.groups]
    print_table(console, "layers by kind", group_columns, group_rows)
    for line in summary_lines(report):
        console.print(terminal_text(line))
    print_table(console, "per request", *_context_table(report))
    for line in extra_lines(report):
        console.print(terminal_text(line))
    for note in report.notes:
        console.print(terminal_text(f"note: {note}"))
    if report.transformers_defaults:
        console.print(terminal_text("note: transformers defaults used for " + ", ".join(report.transformers_defaults)))
    for warning in report.warnings:
        console.print(terminal_text(f"warning: {warning}", "yellow"))


def _context_table(report: Report) -> tuple[list[tuple[str, bool]], list[list[str]]]:
    """Columns and rows of the per-request table."""
    extra = any(c.extra_state_bytes for c in report.contexts)
    columns = [("context", True), ("KV + state", True), ("read per decode step", True)]
    if extra:
        columns.append(("extra state copies", True))
    if report.budget_bytes:
        columns.append((f"B_max in {format_bytes(report.budget_bytes)}", True))
    rows = []
    for c in report.contexts:
        row = [format_tokens(c.tokens), format_bytes(c.kv_bytes_per_request), format_bytes(c.read_bytes_per_step)]
        if extra:
            row.append(format_bytes(c.extra_state_bytes))
        if report.budget_bytes:
            row.append("-" if c.max_concurrency is None else f"{c.max_concurrency:,}")
        rows.append(row)
    return columns, rows


def requests_served(plan: dict[str, Any]) -> dict[int, int | None]:
    """{context: requests a serving plan's deployment serves there, every rank counted} as the plan
    says (``max_concurrency_total``; 0 when the weights fill the engine's budget); {} when refused."""
    if plan.get("refused"):
        return {}
    if plan.get("weights_fit") is False:
        return {c["tokens"]: 0 for c in plan.get("contexts") or []}
    return {c["tokens"]: c.get("max_concurrency_total") for c in plan.get("contexts") or []}


def plan_status(plan: dict[str, Any]) -> str | None:
    """A plan's verdict status (``hfkv.planning.verdict``), "refused" for a spec the engine refused."""
    return "refused" if plan.get("refused") else (plan.get("verdict_detail") or {}).get("status")


def plan_where(spec: str, plan: dict[str, Any]) -> str:
    """The GPUs a plan deploys on ('8 × H100-SXM-80GB': a layout may need more than the spec's count);
    the spec itself for a refused one."""
    if plan.get("refused") or not plan.get("gpu"):
        return spec
    return f"{plan.get('gpu_count') or 1} × {plan['gpu']}"


def plan_verdict(spec: str, plan: dict[str, Any]) -> str:
    """The verdict line of a plan; a spec the engine refused says so with the engine's reason."""
    if plan.get("refused"):
        return f"refused on {spec}: {plan['refused']}"
    return plan.get("verdict") or "no verdict"


def plan_weights_text(plan: dict[str, Any]) -> str:
    """'weights per GPU 14.96 GiB (estimated from the config's shapes); KV budget per GPU 54.52 GiB'."""
    if plan.get("refused"):
        return "-"
    per_gpu = plan.get("weights_bytes_per_gpu")
    source = plan.get("weights_source")
    weights = ("weights per GPU unknown" if per_gpu is None else
               f"weights per GPU {format_bytes(per_gpu)} ({WEIGHTS_SOURCES.get(source, source or 'source unknown')})")
    return f"{weights}; KV budget per GPU {_budget_text(plan)}"


def render_markdown(report: Report, *, plans: dict[str, dict[str, Any]] | None = None) -> str:
    """A Markdown report. ``plans`` ({GPU spec: serving plan}, e.g. ``hfkv.planning.serving.gpu_plans``)
    adds per spec a column of the requests its deployment serves at each context, then its verdict
    line, weights per GPU (and their source) and KV budget. Every text from a config or the Hub passes
    through ``markdown_cell``."""
    lines = [f"## {markdown_cell(report.model)}", ""]
    line = verdict_line(report)
    if line:
        mark = VERDICT_MARKS.get(verdict_status(report) or "", "")
        lines += [f"**{mark + ' ' if mark else ''}{markdown_cell(line)}**", ""]
        details = verdict_details(report)
        if details:
            lines += [f"- {markdown_cell(detail)}" for detail in details] + [""]
    meta = [
        ("model type", report.model_type or "?"), ("architectures", ", ".join(report.architectures) or "?"),
        ("mapper", report.mapper), ("commit", report.commit or "-"),
        ("precision", precision_text(vars(report), (p.kind for layer in report.layers for p in layer.parts))),
        ("parallel layout", layout_text(report)),
    ]
    lines += ["| | |", "|---|---|"] + [f"| {k} | {markdown_cell(v)} |" for k, v in meta] + [""]
    lines += ["| layer kind | layers | σ | entries n(S) | E (B/entry) | C (B/request) |", "|---|---:|---:|---|---:|---:|"]
    for g in report.groups:
        lines.append(f"| {markdown_cell(g.kind)} | {g.layers} | {g.copies} | {markdown_cell(g.entries)} | {_num(g.entry_bytes)} | {_num(g.state_bytes)} |")
    lines += [""] + [f"- {markdown_cell(line)}" for line in summary_lines(report)] + [""]
    header = "| context | KV + state per request | read per decode step |"
    rule = "|---:|---:|---:|"
    plans = plans or {}
    served = {spec: requests_served(plan) for spec, plan in plans.items()}
    for spec, plan in plans.items():
        header += f" requests on {markdown_cell(plan_where(spec, plan))} |"
        rule += "---:|"
    if report.budget_bytes:
        header += f" B_max {format_bytes(report.budget_bytes)} |"
        rule += "---:|"
    lines += [header, rule]
    for c in report.contexts:
        row = f"| {format_tokens(c.tokens)} | {format_bytes(c.kv_bytes_per_request)} | {format_bytes(c.read_bytes_per_step)} |"
        for spec, plan in plans.items():
            count = served[spec].get(c.tokens)
            row += " refused |" if plan.get("refused") else f" {'-' if count is None else f'{count:,}'} |"
        if report.budget_bytes:
            row += f" {'-' if c.max_concurrency is None else f'{c.max_concurrency:,}'} |"
        lines.append(row)
    if plans:
        lines += ["", "On each GPU:", ""]
        for spec, plan in plans.items():
            mark = VERDICT_MARKS.get(plan_status(plan) or "", "")
            lines.append(f"- **{mark + ' ' if mark else ''}{markdown_cell(plan_where(spec, plan))}**: "
                         f"{markdown_cell(plan_verdict(spec, plan))}")
            if not plan.get("refused"):
                lines.append(f"  - {markdown_cell(plan_weights_text(plan))}")
    extras = extra_lines(report)
    if extras:
        lines += [""] + [f"- {markdown_cell(line.strip())}" for line in extras]
    if report.notes or report.warnings or report.transformers_defaults:
        lines.append("")
        lines += [f"- note: {markdown_cell(n)}" for n in report.notes]
        if report.transformers_defaults:
            lines.append("- note: transformers defaults used for " + markdown_cell(", ".join(report.transformers_defaults)))
        lines += [f"- **warning**: {markdown_cell(w)}" for w in report.warnings]
    return "\n".join(lines) + "\n"
