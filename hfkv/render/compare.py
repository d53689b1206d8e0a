"""Comparisons as people read them: short labels per model, the side-by-side table, one sentence per
pair (which model fits more requests at each context, where the lead changes), as a terminal table,
Markdown or JSON; on a deployment the ranking by requests served (only models whose verdict is "fits")
and the page's chart of them (``served_chart``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from hfkv.planning.compare import Collected, PairVerdict, extra_state, not_serving, plan_status, ranking, served
from hfkv.planning.verdict import layout_label
from hfkv.model.report import Report
from hfkv.render import svg
from hfkv.render.terminal import console_for, print_table, terminal_text
from hfkv.text import markdown_cell, markup
from hfkv.units import exact_bytes, format_bytes, format_tokens

PAST_MAX = "†"  # marks a context longer than the model's max_position_embeddings


def short_label(model: str) -> str:
    """A column title for MODEL: the repo name of ``org/name[@rev]``, the folder of a config file.

    Fixture-style folders ``org__name`` give ``name``.
    """
    path = Path(model)
    if path.name == "config.json" or path.suffix == ".json":
        name = path.parent.name if path.name == "config.json" and path.parent.name else path.stem
    else:
        name = model.rstrip("/").rsplit("/", 1)[-1]
    return name.rsplit("__", 1)[-1] or model


def unique_labels(models: list[str]) -> list[str]:
    """Short labels, falling back to the full MODEL text where two short labels collide."""
    short = [short_label(m) for m in models]
    return [s if short.count(s) == 1 else m for s, m in zip(short, models)]


def pair_line(verdict: PairVerdict, reports: list[Report], labels: list[str]) -> str:
    """One sentence per pair: α and γ side by side, the winner per context, where the lead changes.

    Contexts past either model's maximum are left out of the verdict (and named); two models with
    the same bytes per request everywhere get "the same bytes per request at every context".
    """
    a, b = reports[verdict.first], reports[verdict.second]
    names = (labels[verdict.first], labels[verdict.second])
    line = (
        f"{names[0]} vs {names[1]}: α {format_bytes(a.alpha_bytes_per_token)} vs "
        f"{format_bytes(b.alpha_bytes_per_token)} per token, γ {format_bytes(a.gamma_bytes_per_request)} vs "
        f"{format_bytes(b.gamma_bytes_per_request)} per request → "
    )
    if verdict.not_serving:
        return line + "not compared on requests served (" + "; ".join(
            f"{labels[k]}: {status_words(reports[k])}" for k in verdict.not_serving) + ")"
    if verdict.identical:
        line += "the same bytes per request at every context compared"
    elif any(w is not None for w in verdict.winners):
        line += "more requests fit " + _per_context(verdict, a, names) + _changes(verdict, names)
    else:
        line += "no context shown that both serve"
    return line + _not_compared(verdict, a, b, names)


def _per_context(verdict: PairVerdict, a: Report, names: tuple[str, str]) -> str:
    """'with A at 4K, as many with either at 32K': runs of consecutive compared contexts."""
    runs: list[tuple[int, list[str]]] = []  # consecutive contexts with the same winner
    for c, w in zip(a.contexts, verdict.winners):
        if w is None:
            continue
        if runs and runs[-1][0] == w:
            runs[-1][1].append(format_tokens(c.tokens))
        else:
            runs.append((w, [format_tokens(c.tokens)]))
    return ", ".join(
        ("as many with either" if w == -1 else f"with {names[w]}") + f" at {_and_list(ctxs)}" for w, ctxs in runs
    )


def _changes(verdict: PairVerdict, names: tuple[str, str]) -> str:
    def who(w: int) -> str:
        return "tie" if w == -1 else names[w]

    text = ""
    for S, before, after in verdict.changes:
        if after == -1:
            text += f"; equal at {S:,} tokens"
        elif before == -1:
            text += f"; {who(after)} fits more from {S:,} tokens on"
        else:
            text += f"; {who(before)} fits more below {S:,} tokens, {who(after)} from {S:,} on"
    return text


def _not_compared(verdict: PairVerdict, a: Report, b: Report, names: tuple[str, str]) -> str:
    """'; not compared past 128K (gpt-oss-120b's maximum): 160K, 256K' when some contexts were left out."""
    skipped = [format_tokens(c.tokens) for c, w in zip(a.contexts, verdict.winners) if w is None]
    if not skipped or not verdict.limit:
        return ""
    whose = [n for n, r in zip(names, (a, b)) if r.max_position_embeddings == verdict.limit]
    owner = "both models'" if len(whose) == 2 else f"{whose[0]}'s"
    return (f"; not compared past {format_tokens(verdict.limit)} ({owner} maximum): "
            f"{_and_list(skipped)}")


def _and_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def table_rows(reports: list[Report], budget: int | None) -> list[tuple[str, list[str]]]:
    """(row title, one cell per model): the figures of the comparison table."""
    rows: list[tuple[str, list[str]]] = [
        ("model type", [r.model_type or "?" for r in reports]),
        ("mapper", [r.mapper for r in reports]),
        ("KV dtype", [r.kv_cache_dtype for r in reports]),
        ("α (bytes/token)", [exact_bytes(r.alpha_bytes_per_token) for r in reports]),
        ("γ (bytes/request)", [exact_bytes(r.gamma_bytes_per_request) for r in reports]),
        ("S* = γ/α", ["-" if r.crossover_tokens is None else f"{round(r.crossover_tokens):,} tokens" for r in reports]),
        ("recurrent state", [exact_bytes(r.recurrent_state_bytes) for r in reports]),
        ("max context", [format_tokens(r.max_position_embeddings) for r in reports]),
    ]
    first = reports[0]
    if first.budget_bytes and first.batch:
        rows.append((f"longest context, {first.batch} requests in {format_bytes(first.budget_bytes)}", [
            "unbounded" if r.max_context_for_batch is None else f"{r.max_context_for_batch:,} tokens" + _past_max(r, r.max_context_for_batch)
            for r in reports
        ]))
    rows += deployment_rows(reports)
    counts = [served(r) for r in reports]
    planned = any(plan_status(r) is not None for r in reports)
    for k, ctx in enumerate(reports[0].contexts):
        label = format_tokens(ctx.tokens)
        marks = [_past_max(r, ctx.tokens) for r in reports]
        rows.append((f"{label}: bytes/request", [
            format_bytes(r.contexts[k].kv_bytes_per_request + (r.contexts[k].extra_state_bytes or 0)) + m
            for r, m in zip(reports, marks)
        ]))
        if budget:
            rows.append((f"{label}: B_max in {format_bytes(budget)}", [
                ("-" if r.contexts[k].max_concurrency is None else f"{r.contexts[k].max_concurrency:,}") + m
                for r, m in zip(reports, marks)
            ]))
        if planned:
            rows.append((f"{label}: requests served", [
                _served_cell(r, c, ctx.tokens) + m for r, c, m in zip(reports, counts, marks)
            ]))
        rows.append((f"{label}: read/decode step", [
            format_bytes(r.contexts[k].read_bytes_per_step) + m for r, m in zip(reports, marks)
        ]))
    return rows


def _served_cell(report: Report, counts: dict[int, int] | None, tokens: int) -> str:
    """Requests served at ``tokens``: the count when the verdict is "fits", else the verdict's words
    (never a count no engine would serve; with the weights unknown, the upper bound without them), "-"
    past the max length or without a plan."""
    if counts is not None:
        return f"{counts[tokens]:,}" if tokens in counts else "-"
    status = plan_status(report)
    if status is None:
        return "-"
    bound = next((c.get("max_concurrency_total") for c in report.extra["serving"].get("contexts", [])
                  if c["tokens"] == tokens), None)
    return f"≤ {bound:,} ({status_words(report)})" if status == "unknown" and bound is not None else status_words(report)


# What a verdict that serves no counted request says in a cell, a ranking or a pair line.
_STATUS_WORDS = {"refused": "refused", "does-not-fit": "does NOT fit", "may-not-start": "may not start",
                 "unknown": "weights unknown", "none": "no verdict"}


def status_words(report: Report) -> str:
    """'refused', 'does NOT fit', 'does NOT start', 'may not start', 'weights unknown': why a model
    planned on GPUs is ranked nowhere (its verdict line says more)."""
    status = plan_status(report) or "none"
    line = (report.extra.get("serving") or {}).get("verdict") or ""
    if status == "does-not-fit" and line.startswith("does NOT start"):
        return "does NOT start"
    return _STATUS_WORDS.get(status, status)


def deployment_rows(reports: list[Report]) -> list[tuple[str, list[str]]]:
    """Where each model was planned on GPUs: the verdict, weights per GPU and their source, the KV
    budget per GPU (none when no model was)."""
    plans = [r.extra.get("serving") for r in reports]
    if not any(plans):
        return []

    def cell(plan: dict | None, text: str) -> str:
        return "-" if not plan else text

    rows = [
        ("deployment", [cell(p, f"{p['gpu_count']} × {p['gpu']} {layout_label(p)}" if p and p.get("gpu")
                             else layout_label(p) if p else "") for p in plans]),
        ("verdict", [cell(p, _short_verdict(p)) for p in plans]),
        ("weights per GPU", [cell(p, "unknown" if p and p.get("weights_bytes_per_gpu") is None else
                                  f"{format_bytes(p['weights_bytes_per_gpu'])} ({p.get('weights_source')})" if p else "")
                             for p in plans]),
        ("KV budget per GPU", [cell(p, "-" if p and p.get("kv_budget_bytes") is None else
                                    format_bytes(max(p["kv_budget_bytes"], 0)) if p else "") for p in plans]),
    ]
    return rows


def _short_verdict(plan: dict) -> str:
    """'fits: 13 at 128K', 'does NOT fit', 'refused', 'unknown: ≤ 20 at 128K' (the full line is printed below)."""
    detail = plan.get("verdict_detail") or {}
    status, count, tokens = detail.get("status"), detail.get("requests"), detail.get("tokens")
    at = f"{count:,} at {format_tokens(tokens)}" if count is not None and tokens else ""
    if status == "fits":
        return f"fits: {at}"
    if status == "unknown":
        return f"unknown: ≤ {at}" if at else "unknown"
    if status == "may-not-start":
        return f"may not start: {at}" if at else "may not start"
    if status == "does-not-fit" and str(plan.get("verdict", "")).startswith("does NOT start"):
        return "does NOT start"
    return {"does-not-fit": "does NOT fit", "refused": "refused"}.get(status or "", "-")


def verdict_lines(out: Collected) -> list[str]:
    """'MODEL: its verdict line' for every model planned on GPUs."""
    return [f"{label}: {r.extra['serving']['verdict']}" for label, r in zip(out.labels, out.reports)
            if (r.extra.get("serving") or {}).get("verdict")]


def ranking_lines(out: Collected) -> list[str]:
    """Per context, the models from most to fewest requests served on their deployment."""
    lines = []
    for tokens, row in ranking(out.reports):
        ranked = " > ".join(f"{out.labels[i]} {n:,}" for i, n in row) if len(row) > 1 else \
            f"{out.labels[row[0][0]]} {row[0][1]:,}"
        lines.append(f"requests served at {format_tokens(tokens)}: {ranked}")
    left = [f"{out.labels[i]} ({status_words(out.reports[i])})" for i, _ in not_serving(out.reports)]
    if left:
        lines.append("not ranked (no request counted as served): " + ", ".join(left))
    return lines


def _past_max(report: Report, tokens: int) -> str:
    limit = report.max_position_embeddings
    return PAST_MAX if limit and tokens > limit else ""


def footnotes(reports: list[Report]) -> list[str]:
    """Precision and context caveats that apply to the whole table."""
    notes = []
    longest = max((c.tokens for c in reports[0].contexts), default=0)
    if any(_past_max(r, max(longest, r.max_context_for_batch or 0)) for r in reports):
        notes.append(f"{PAST_MAX} past the model's max_position_embeddings")
    tps = {r.tensor_parallel_size for r in reports}
    if tps != {1}:
        notes.append(f"bytes per GPU at tensor parallel {', '.join(map(str, sorted(tps)))}")
    if any(extra_state(r) for r in reports):
        notes.append("bytes per request include the extra state copies (prefix cache, speculative drafts)")
    return notes


def render_table(out: Collected, pairs: list[PairVerdict], budget: int | None) -> None:
    """The side-by-side table, its footnotes and the pair verdicts; model names and paths are data."""
    console = console_for()
    columns = [("", False)] + [(label, True) for label in out.labels]
    rows = [[title, *cells] for title, cells in table_rows(out.reports, budget)]
    print_table(console, "KV cache and state per request", columns, rows)
    for note in footnotes(out.reports):
        console.print(terminal_text(note))
    for line in verdict_lines(out) + ranking_lines(out):
        console.print(terminal_text(line))
    for verdict in pairs:
        console.print(terminal_text(pair_line(verdict, out.reports, out.labels)))


def render_markdown(out: Collected, pairs: list[PairVerdict], budget: int | None) -> str:
    lines = ["| | " + " | ".join(markdown_cell(label) for label in out.labels) + " |",
             "|---|" + "---:|" * len(out.labels)]
    for title, cells in table_rows(out.reports, budget):
        lines.append(f"| {markdown_cell(title)} | " + " | ".join(markdown_cell(c) for c in cells) + " |")
    lines.append("")
    lines += [f"- {markdown_cell(n)}" for n in footnotes(out.reports) + verdict_lines(out) + ranking_lines(out)]
    lines += [f"- {markdown_cell(pair_line(v, out.reports, out.labels))}" for v in pairs]
    return "\n".join(lines) + "\n"


def to_json(out: Collected, pairs: list[PairVerdict]) -> str:
    """``{"models": [report dicts], "contexts": [...], "errors": [...], "pairs": [...]}``.

    A pair's ``more_requests`` ({tokens, model: the one that fits more, null on a tie}) covers only
    contexts both models serve; ``not_compared`` lists the others; ``identical`` is true when the
    two need the same bytes per request at every context compared; ``not_serving`` (on a deployment)
    names the pair's models whose verdict is not "fits", compared at no context. ``ranking`` (on a
    deployment: ``--gpu``): per context, the models whose verdict is "fits", from most to fewest requests
    served, each with its count; ``not_ranked``: every other model planned there, with its verdict status.
    """

    def name(w: int, v: PairVerdict) -> str | None:
        return None if w == -1 else out.reports[(v.first, v.second)[w]].model

    pair_rows = [
        {
            "models": [out.reports[v.first].model, out.reports[v.second].model],
            "more_requests": [{"tokens": S, "model": name(w, v)} for S, w in zip(out.contexts, v.winners)
                              if w is not None],
            "lead_changes": [{"tokens": S, "model": name(after, v)} for S, _, after in v.changes],
            "not_compared": [S for S, w in zip(out.contexts, v.winners) if w is None],
            "identical": v.identical,
            "not_serving": [out.reports[k].model for k in v.not_serving],
        }
        for v in pairs
    ]
    ranked = [{"tokens": tokens, "models": [{"model": out.reports[i].model, "requests": n} for i, n in row]}
              for tokens, row in ranking(out.reports)]
    unranked = [{"model": out.reports[i].model, "status": status} for i, status in not_serving(out.reports)]
    data = {
        "models": [r.to_dict() for r in out.reports], "contexts": out.contexts,
        "errors": out.errors, "pairs": pair_rows, "ranking": ranked, "not_ranked": unranked,
    }
    return json.dumps(data, indent=2)


def served_chart(out: Collected) -> str:
    """SVG: the requests each model serves across its deployment at the compared contexts, each in its
    own budget (after its own weights and reserve: the table's and the JSON's ``ranking`` figures, drawn
    as points). A model whose verdict is not "fits" is a legend entry without a line (its count is not
    requests anyone is served); with none drawn, one sentence instead of a chart."""
    series = [_served_series(r, label, svg.PALETTE[k % len(svg.PALETTE)])
              for k, (r, label) in enumerate(zip(out.reports, out.labels))]
    if not any(y > 0 for s in series for y in s.ys if math.isfinite(y)):
        return ('<p class="meta">No model serves a request on this deployment: '
                + markup("; ".join(s.label for s in series)) + "</p>")
    plan = next(r.extra["serving"] for r in out.reports if served(r) is not None)
    where = f"{plan['gpu_count']} × {plan['gpu']} " if plan.get("gpu") else ""
    return svg.line_chart(
        f"Requests served {'on ' + where if where else 'in the given budget '}{layout_label(plan)}, "
        "each model after its own weights", series,
        xlabel="context length (tokens)", ylabel="requests across the deployment",
        x_format=lambda v: format_tokens(int(round(v))), y_format=lambda v: f"{v:,.0f}",
        y_ticks=svg.decade_ticks, markers=True, legend_right=True)


def _served_series(report: Report, label: str, color: str) -> svg.Series:
    """One model's points (no request at a context: a gap), or its legend entry alone with its verdict."""
    counts = served(report)
    if counts is None:
        return svg.Series(f"{label}: {status_words(report)} (not drawn)", [], [], color)
    xs = sorted(counts)
    return svg.Series(label, xs, [float(counts[x]) if counts[x] else math.nan for x in xs], color)
