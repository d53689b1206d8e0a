"""Renderers: a table for people (rich; plain when piped), the JSON contract, and Markdown."""

from __future__ import annotations

import html
import json
import re
from typing import Any, Iterable

from .report import Report
from .units import format_bytes, format_tokens


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
        longest = report.max_context_for_batch
        text = "unbounded" if longest is None else f"{longest:,} tokens"
        lines.append(f"longest context for {report.batch} concurrent requests in {format_bytes(report.budget_bytes)}: {text}")
    return lines


def extra_lines(report: Report) -> list[str]:
    """Weights, serving plan and engine figures, when the report carries them."""
    lines: list[str] = []
    weights = report.extra.get("weights")
    if weights:
        per = ", ".join(f"{dtype} {n:,}" for dtype, n in sorted(weights.get("parameters", {}).items()))
        lines.append(f"weights: {weights.get('total_parameters', 0):,} parameters ({per}), "
                     f"{format_bytes(weights.get('weights_bytes'))}")
    serving = report.extra.get("serving")
    if serving:
        where = f"{serving['gpu']} × {serving['gpu_count']}" if serving.get("gpu") else "explicit budget"
        budget = serving.get("kv_budget_bytes")
        lines.append(f"serving on {where}, TP {serving['tensor_parallel_size']}: KV budget per GPU "
                     f"{format_bytes(budget) if budget is not None else 'unknown'}"
                     + (" (upper bound: weights unknown, pass --weights-bytes)"
                        if serving.get("budget_source") == "gpu-without-weights" else ""))
        for ctx in serving.get("contexts", []):
            if ctx.get("max_concurrency") is not None:
                step = ctx.get("decode_step_seconds") or {}  # None without a GPU's bandwidth
                fastest = step.get("1")
                lines.append(f"  {format_tokens(ctx['tokens'])}: B_max {ctx['max_concurrency']:,} per replica"
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
        lines.append(head)
        lines += [f"  assumes: {a}" for a in engine.get("assumptions", [])]
    return lines


def render_table(report: Report, console: Any = None) -> None:
    """Print a report for a person: layer groups, α/γ/S*, then one row per context."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console(highlight=False)
    head = f"[bold]{report.model}[/bold]  {report.model_type or '?'} · mapper {report.mapper}"
    if report.commit:
        head += f" · commit {report.commit[:12]}"
    console.print(head, markup=True)
    console.print(
        f"KV {report.kv_cache_dtype} · state {report.state_dtype} · conv {report.conv_dtype} · "
        f"indexer {report.indexer_dtype} · TP {report.tensor_parallel_size}"
        + (" (bytes per GPU)" if report.tensor_parallel_size > 1 else ""),
        markup=False,
    )
    groups = Table(title="layers by kind", title_justify="left")
    for col in ("kind", "layers", "σ", "entries n(S)", "E bytes/entry", "C bytes/request", "S_eq"):
        groups.add_column(col, justify="right" if col not in ("kind", "entries n(S)") else "left")
    for g in report.groups:
        groups.add_row(
            g.kind, str(g.layers), str(g.copies), g.entries, _num(g.entry_bytes), _num(g.state_bytes),
            "-" if g.equivalent_tokens is None else _num(round(g.equivalent_tokens)),
        )
    console.print(groups)
    for line in summary_lines(report):
        console.print(line, markup=False, soft_wrap=True)
    contexts = Table(title="per request", title_justify="left")
    contexts.add_column("context", justify="right")
    contexts.add_column("KV + state", justify="right")
    contexts.add_column("read per decode step", justify="right")
    if any(c.extra_state_bytes for c in report.contexts):
        contexts.add_column("extra state copies", justify="right")
    if report.budget_bytes:
        contexts.add_column(f"B_max in {format_bytes(report.budget_bytes)}", justify="right")
    for c in report.contexts:
        row = [format_tokens(c.tokens), format_bytes(c.kv_bytes_per_request), format_bytes(c.read_bytes_per_step)]
        if any(x.extra_state_bytes for x in report.contexts):
            row.append(format_bytes(c.extra_state_bytes))
        if report.budget_bytes:
            row.append("-" if c.max_concurrency is None else f"{c.max_concurrency:,}")
        contexts.add_row(*row)
    console.print(contexts)
    for line in extra_lines(report):
        console.print(line, markup=False, soft_wrap=True)
    for note in report.notes:
        console.print(f"note: {note}", markup=False, soft_wrap=True)
    if report.transformers_defaults:
        console.print("note: transformers defaults used for " + ", ".join(report.transformers_defaults), markup=False)
    for warning in report.warnings:
        console.print(f"warning: {warning}", markup=False, style="yellow", soft_wrap=True)


# C0/C1 controls (NUL included) and the bidirectional overrides that can reorder what a reader sees.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def md_escape(text: Any) -> str:
    """Model-provided text made safe for a Markdown table cell: no HTML, no pipes, no control or
    bidi-override characters, one line."""
    value = _UNSAFE.sub("", str(text))
    value = html.escape(value, quote=False).replace("|", "\\|")
    return " ".join(value.split())


def render_markdown(report: Report, *, budgets: dict[str, int] | None = None) -> str:
    """A Markdown report; ``budgets`` adds a B_max column per named budget (e.g. GPU presets)."""
    lines = [f"## {md_escape(report.model)}", ""]
    meta = [
        ("model type", report.model_type or "?"), ("architectures", ", ".join(report.architectures) or "?"),
        ("mapper", report.mapper), ("commit", report.commit or "-"),
        ("precision", f"KV {report.kv_cache_dtype}, state {report.state_dtype}, conv {report.conv_dtype}, indexer {report.indexer_dtype}"),
        ("tensor parallel", str(report.tensor_parallel_size)),
    ]
    lines += ["| | |", "|---|---|"] + [f"| {k} | {md_escape(v)} |" for k, v in meta] + [""]
    lines += ["| layer kind | layers | σ | entries n(S) | E (B/entry) | C (B/request) |", "|---|---:|---:|---|---:|---:|"]
    for g in report.groups:
        lines.append(f"| {md_escape(g.kind)} | {g.layers} | {g.copies} | {md_escape(g.entries)} | {_num(g.entry_bytes)} | {_num(g.state_bytes)} |")
    lines += [""] + [f"- {md_escape(line)}" for line in summary_lines(report)] + [""]
    header = "| context | KV + state per request | read per decode step |"
    rule = "|---:|---:|---:|"
    names = list((budgets or {}).keys())
    for name in names:
        header += f" B_max {md_escape(name)} |"
        rule += "---:|"
    if report.budget_bytes:
        header += f" B_max {format_bytes(report.budget_bytes)} |"
        rule += "---:|"
    lines += [header, rule]
    for c in report.contexts:
        row = f"| {format_tokens(c.tokens)} | {format_bytes(c.kv_bytes_per_request)} | {format_bytes(c.read_bytes_per_step)} |"
        for name in names:
            per = c.kv_bytes_per_request + (c.extra_state_bytes or 0)
            row += f" {int(budgets[name] // per):,} |" if per else " - |"
        if report.budget_bytes:
            row += f" {'-' if c.max_concurrency is None else f'{c.max_concurrency:,}'} |"
        lines.append(row)
    extras = extra_lines(report)
    if extras:
        lines += [""] + [f"- {md_escape(line.strip())}" for line in extras]
    if report.notes or report.warnings or report.transformers_defaults:
        lines.append("")
        lines += [f"- note: {md_escape(n)}" for n in report.notes]
        if report.transformers_defaults:
            lines.append("- note: transformers defaults used for " + md_escape(", ".join(report.transformers_defaults)))
        lines += [f"- **warning**: {md_escape(w)}" for w in report.warnings]
    return "\n".join(lines) + "\n"
