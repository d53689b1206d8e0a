"""HTML reports: one self-contained page per report, and a static site of release reports.

``render_html(report)`` returns a whole HTML document: inline CSS and inline SVG charts, no script,
and a Content-Security-Policy that forbids every fetch, so the file opens anywhere without a
network. ``report_section(report)`` is the same report as a fragment (the web page shows it).
``hfkv.render.site`` writes the static site of ``hfkv watch --html`` (``index.html``, releases newest
first, and one page per model). A watch report carries one serving plan per GPU spec
(``watch.plans``): its page shows each plan's verdict, the requests it serves at every context,
weights per GPU and their source.

Pages are drawn from the report's JSON form (``Report.to_dict()``, the stable contract), so a
report read back from a ``.json`` file renders the same figures; a ``Report`` object adds exact
curves from its layer specs. Escaping follows the Markdown renderer's rule: every text that comes
from a config or the Hub (model ids, model types, mapper notes, warnings) is data. It passes
through ``text.markup``: one line, control and bidi-override characters shown as escapes,
``& < > " '`` escaped. Figures are printed exactly (``78,324 B (76.49 KiB)``).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Iterable, Sequence

from hfkv.render import axes, curves, svg
from hfkv.model.report import Report
from hfkv.planning.verdict import FAILED
from hfkv.text import markup
from hfkv.render.terminal import (WEIGHTS_SOURCES, _budget_text, extra_lines, layout_text, plan_status, plan_verdict,
                                  plan_where, precision_text, requests_served)
from hfkv.units import exact_bytes, format_bytes, format_tokens

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
# Colours are also set through Gradio's own variables (its ``.prose *`` rule colours every element
# with ``--body-text-color``): the report stays a light card, readable in the page's dark theme too.
STYLE = """
.hfkv { font-family: system-ui, sans-serif; color: #1b1b1b; background: #fff; max-width: 1100px; line-height: 1.4;
  padding: 0.4em 0.8em; border-radius: 6px; --body-text-color: #1b1b1b; --link-text-color: #0b57d0;
  --link-text-color-visited: #6a3d9a; --link-text-color-hover: #0b57d0; --link-text-color-active: #0b57d0; }
.hfkv .hfkv { padding: 0; }
.hfkv h1, .hfkv h2 { margin: 0.2em 0; } .hfkv h1 { font-size: 1.5em; } .hfkv h2 { font-size: 1.15em; margin-top: 1em; }
.hfkv .meta { color: #555; --body-text-color: #555; margin: 0.2em 0; }
.hfkv .headline { font-size: 1.1em; font-weight: 600; padding: 0.5em 0.8em; background: #eef5ff;
  border-left: 4px solid #0072B2; margin: 0.6em 0; }
.hfkv .headline.failed { background: #fff0f0; border-left-color: #a00000; color: #a00000; --body-text-color: #a00000; }
.hfkv table { border-collapse: collapse; margin: 0.4em 0; }
.hfkv th, .hfkv td { border: 1px solid #ccc; padding: 0.25em 0.6em; vertical-align: top; }
.hfkv th { background: #f3f3f3; text-align: left; } .hfkv td.num { text-align: right; font-variant-numeric: tabular-nums; }
.hfkv .warning { color: #7a4a00; --body-text-color: #7a4a00; }
.hfkv .error { color: #a00000; --body-text-color: #a00000; font-weight: 600; padding: 0.5em 0.8em;
  background: #fff0f0; border-left: 4px solid #a00000; }
.hfkv .charts { display: flex; flex-wrap: wrap; gap: 1em; } .hfkv svg.hfkv-chart { width: 510px; max-width: 100%; height: auto; }
.hfkv code { background: #f3f3f3; padding: 0 0.3em; }
.hfkv td.verdict.does-not-fit, .hfkv td.verdict.refused { color: #a00000; --body-text-color: #a00000; }
.hfkv td.verdict.unknown, .hfkv td.verdict.may-not-start { color: #7a4a00; --body-text-color: #7a4a00; }
"""
Entry = Report | dict  # a report, or its JSON form


def split(entry: Entry) -> tuple[dict[str, Any], Report | None]:
    """(JSON form, the Report when there is one: its layer specs give exact curves)."""
    return (entry, None) if isinstance(entry, dict) else (entry.to_dict(), entry)


def document(title: str, body: str) -> str:
    """A whole page: charset, the no-fetch CSP, the style sheet, ``body`` inside ``div.hfkv``."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{markup(title)}</title><style>{STYLE}</style></head>\n"
        f'<body><div class="hfkv">{body}</div></body></html>\n'
    )


def render_html(report: Entry | Sequence[Entry], *, plans: dict[str, dict[str, Any]] | None = None) -> str:
    """One self-contained HTML file for ``report``, or for several (one section each, in order).
    ``plans`` ({GPU spec: serving plan}; default: a watch report's own ``watch.plans``) adds per spec
    the requests served at each context, and its verdict, weights per GPU and KV budget."""
    entries = list(report) if isinstance(report, (list, tuple)) else [report]
    title = ", ".join(str(split(e)[0].get("model")) for e in entries)
    return document(f"KV cache: {title}", "".join(report_section(e, plans=plans) for e in entries))


def watch_plans(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The per-GPU plans a ``hfkv watch`` report carries (``watch.plans``); {} for any other report,
    and for a watch report of an earlier hfkv (its ``watch.gpu_budgets`` held no plan: not shown)."""
    plans = (data.get("watch") or {}).get("plans") if isinstance(data.get("watch"), dict) else None
    return {str(k): v for k, v in plans.items() if isinstance(v, dict)} if isinstance(plans, dict) else {}


# -- the report -----------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, attrs: str = "") -> str:
    """A table; header cells are escaped here, body cells must already be HTML (see ``cell``)."""
    head = "".join(f"<th>{markup(h)}</th>" for h in headers)
    body = "".join(row if isinstance(row, str) else f"<tr>{''.join(row)}</tr>" for row in rows)
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def cell(text: object, *, num: bool = False, field: str | None = None) -> str:
    """One escaped ``td``; ``field`` names the JSON key it shows (``data-field``, for tests and scripts)."""
    attrs = (' class="num"' if num else "") + (f' data-field="{markup(field)}"' if field else "")
    return f"<td{attrs}>{markup(text)}</td>"


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, (int, float)) else "-"


def _tokens(value: Any) -> str:
    return "-" if value is None else f"{round(value):,} tokens"


def headline(data: dict[str, Any]) -> str:
    """The verdict line: the serving plan's own (``hfkv.planning.verdict``, the same line every output
    prints); without a plan, how many requests fit at the longest context shown in ``--budget``."""
    serving = data.get("serving") or {}
    last = (data.get("contexts") or [None])[-1]
    if serving.get("verdict"):
        return serving["verdict"]
    if data.get("budget_bytes") and last:
        return (f"In {format_bytes(data['budget_bytes'])} of KV memory per GPU: {_count(last.get('max_concurrency'))} "
                f"requests at {format_tokens(last['tokens'])}")
    return (f"{exact_bytes(data.get('alpha_bytes_per_token'))} per token and "
            f"{exact_bytes(data.get('gamma_bytes_per_request'))} per request: give a GPU or a budget to see how many "
            "requests fit")


def _headline_class(data: dict[str, Any]) -> str:
    """"headline", and "headline failed" when the verdict is a "no" (drawn red, as a failure)."""
    return _status_class((((data.get("serving") or {}).get("verdict_detail")) or {}).get("status"))


def _status_class(status: str | None) -> str:
    return "headline failed" if status in FAILED else "headline"


def gpu_headlines(plans: dict[str, dict[str, Any]]) -> str:
    """One verdict line per GPU spec (a "no" drawn red), in the order given."""
    return "".join(f'<p class="{_status_class(plan_status(plan))}" data-gpu="{markup(spec)}">{markup(plan_verdict(spec, plan))}</p>'
                   for spec, plan in plans.items())


def gpus_table(plans: dict[str, dict[str, Any]]) -> str:
    """Per GPU spec: the deployment, the verdict's status, weights per GPU and their source, the KV budget."""
    rows = []
    for spec, plan in plans.items():
        refused = bool(plan.get("refused"))
        layout = "-" if refused else (plan.get("layout") or {}).get("description") or "-"
        source = plan.get("weights_source")
        rows.append([cell(plan_where(spec, plan)), cell(layout), cell(plan_status(plan) or "-", field="verdict_status"),
                     cell("-" if refused else exact_bytes(plan.get("weights_bytes_per_gpu")), num=True,
                          field="weights_bytes_per_gpu"),
                     cell("-" if refused else WEIGHTS_SOURCES.get(source, source or "-"), field="weights_source"),
                     cell("-" if refused else _budget_text(plan), num=True, field="kv_budget_bytes")])
    return table(["GPU", "layout", "verdict", "weights per GPU", "weights from", "KV budget per GPU"], rows,
                 attrs=' class="gpus"')


def summary_table(data: dict[str, Any]) -> str:
    """α, γ, S*, recurrent state and the longest context for the batch, exact."""
    rows = [
        ("α (bytes per token)", exact_bytes(data.get("alpha_bytes_per_token")), "alpha_bytes_per_token"),
        ("γ (bytes per request)", exact_bytes(data.get("gamma_bytes_per_request")), "gamma_bytes_per_request"),
        ("S* = γ/α", _tokens(data.get("crossover_tokens")), "crossover_tokens"),
        ("recurrent state per request", exact_bytes(data.get("recurrent_state_bytes")), "recurrent_state_bytes"),
    ]
    if data.get("batch") and data.get("budget_bytes"):
        longest = data.get("max_context_for_batch")
        rows.append((f"longest context for {data['batch']} requests in {format_bytes(data['budget_bytes'])}",
                     "unbounded" if longest is None else _tokens(longest), "max_context_for_batch"))
    return table(["figure", "value"], ([cell(k), cell(v, num=True, field=f)] for k, v, f in rows),
                 attrs=' class="summary"')


def groups_table(data: dict[str, Any]) -> str:
    rows = ([cell(g.get("kind")), cell(g.get("layers"), num=True), cell(g.get("copies"), num=True),
             cell(g.get("entries")), cell(_count(g.get("entry_bytes")), num=True),
             cell(_count(g.get("state_bytes")), num=True),
             cell("-" if g.get("equivalent_tokens") is None else f"{round(g['equivalent_tokens']):,}", num=True)]
            for g in data.get("groups") or [])
    return table(["kind", "layers", "σ", "entries n(S)", "E bytes/entry", "C bytes/request", "S_eq"], rows,
                 attrs=' class="groups"')


def per_request(ctx: dict[str, Any]) -> Any:
    """Bytes one request holds at this context: KV + state + extra state copies."""
    return ctx["kv_bytes_per_request"] + (ctx.get("extra_state_bytes") or 0)


def contexts_table(data: dict[str, Any], plans: dict[str, dict[str, Any]] | None = None) -> str:
    """One row per context: bytes per request, reads per decode step, B_max in ``--budget`` and in the
    report's own plan, and the requests each of ``plans`` serves."""
    contexts = data.get("contexts") or []
    serving = data.get("serving") or {}
    planned = {c.get("tokens"): c for c in serving.get("contexts") or []} if serving.get("kv_budget_bytes") else {}
    extra = any(c.get("extra_state_bytes") for c in contexts)
    headers = ["context", "KV + state per request", "read per decode step"] + (["extra state copies"] if extra else [])
    headers += [f"B_max in {format_bytes(data['budget_bytes'])}"] if data.get("budget_bytes") else []
    served = {spec: requests_served(plan) for spec, plan in (plans or {}).items()}
    headers += [f"requests on {plan_where(spec, (plans or {})[spec])}" for spec in served]
    replicas = (serving.get("replicas") or 1) > 1
    headers += (["B_max per replica", "B_max in all"] if replicas else ["B_max per replica"]) if planned else []
    rows = []
    for c in contexts:
        row = [cell(format_tokens(c["tokens"]), num=True),
               cell(exact_bytes(c["kv_bytes_per_request"]), num=True, field="kv_bytes_per_request"),
               cell(exact_bytes(c.get("read_bytes_per_step")), num=True, field="read_bytes_per_step")]
        row += [cell(exact_bytes(c.get("extra_state_bytes")), num=True, field="extra_state_bytes")] if extra else []
        row += [cell(_count(c.get("max_concurrency")), num=True, field="max_concurrency")] if data.get("budget_bytes") else []
        row += [cell("refused" if (plans or {})[spec].get("refused") else _count(counts.get(c["tokens"])), num=True,
                     field=f"requests_on.{spec}") for spec, counts in served.items()]
        if planned:
            plan = planned.get(c["tokens"], {})
            row.append(cell(_count(plan.get("max_concurrency")), num=True, field="serving.max_concurrency"))
            if replicas:
                row.append(cell(_count(plan.get("max_concurrency_total")), num=True, field="serving.max_concurrency_total"))
        rows.append(f'<tr data-tokens="{c["tokens"]}">{"".join(row)}</tr>')
    return table(headers, rows, attrs=' class="contexts"')


ENGINE_FIELDS = (
    ("bytes_per_token", "bytes per token per GPU"), ("page_size", "page size (tokens)"),
    ("block_size", "block size (tokens)"), ("num_blocks", "KV blocks"),
    ("max_total_num_tokens", "max_total_num_tokens"), ("kv_cache_tokens", "GPU KV cache size (tokens)"),
    ("max_mamba_cache_size", "Mamba state slots"), ("max_running_requests", "max running requests"),
    ("max_concurrency", "max concurrency at the context length"),
)


def engines_section(engines: dict[str, dict[str, Any] | str]) -> str:
    """Each engine's own figures side by side; an engine that refuses shows its one-line reason."""
    names = [n for n in engines if isinstance(engines[n], dict)]  # a refusing engine has no column
    rows = []
    for key, title in ENGINE_FIELDS:
        values = [engines[n].get(key) for n in names]
        if any(v is not None for v in values):
            rows.append([cell(title)] + [cell(_count(v), num=True, field=f"engine.{key}") for v in values])
    refusals = [[cell(title_of(n, engines[n])), f'<td class="error" data-engine="{markup(n)}">{markup(engines[n])}</td>']
                for n in engines if isinstance(engines[n], str)]
    parts = [table(["figure"] + [title_of(n, engines[n]) for n in names], rows, attrs=' class="engines"')] if rows else []
    parts += [table(["engine", "refused"], refusals, attrs=' class="refusals"')] if refusals else []
    for n in names:
        assumptions = engines[n].get("assumptions") or []
        if assumptions:
            items = "".join(f"<li>{markup(a)}</li>" for a in assumptions)
            parts.append(f"<details><summary>{markup(title_of(n, engines[n]))} assumes</summary><ul>{items}</ul></details>")
    return "<h2>Engine figures</h2>" + "".join(parts)


def title_of(name: str, result: dict[str, Any] | str) -> str:
    return f"{result.get('name') or name} {result.get('version') or ''}".strip() if isinstance(result, dict) else name


def notes_list(data: dict[str, Any]) -> str:
    """Weights and serving lines, notes, transformers defaults and warnings (all escaped)."""
    # extra_lines reads only report.extra's weights/serving/engine, which the JSON form holds at its top level.
    lines = extra_lines(SimpleNamespace(extra=data))  # type: ignore[arg-type]
    items = [f"<li>{markup(line.strip())}</li>" for line in lines if not line.startswith("  assumes")]
    items += [f"<li>note: {markup(n)}</li>" for n in data.get("notes") or []]
    if data.get("transformers_defaults"):
        items.append(f"<li>note: transformers defaults used for {markup(', '.join(data['transformers_defaults']))}</li>")
    items += [f'<li class="warning">warning: {markup(w)}</li>' for w in data.get("warnings") or []]
    return f'<ul class="notes">{"".join(items)}</ul>' if items else ""


def report_section(report: Entry, *, engines: dict[str, dict[str, Any] | str] | None = None,
                   plans: dict[str, dict[str, Any]] | None = None) -> str:
    """The report as an HTML fragment (no ``<html>``): header, verdict (one per GPU of ``plans``),
    figures, the GPUs' table, charts, notes. ``plans`` defaults to a watch report's own."""
    data, _ = split(report)
    plans = watch_plans(data) if plans is None else plans
    commit = data.get("commit")
    meta = (f"{data.get('model_type') or '?'} ({', '.join(data.get('architectures') or []) or '?'}) · "
            f"mapper {data.get('mapper')}" + (f" · commit {commit[:12]}" if commit else ""))
    kinds = (part.get("kind") for layer in data.get("layers") or [] for part in layer.get("parts") or [])
    precision = (precision_text(data, kinds, " · ") + " · " + layout_text(SimpleNamespace(**{
                     key: data.get(key) for key in ("tensor_parallel_size", "attention_tensor_parallel_size",
                                                     "pipeline_parallel_size", "pipeline_stage", "layers")})))
    parts = [
        f'<h1 class="model">{markup(data.get("model"))}</h1>', f'<p class="meta">{markup(meta)}</p>',
        f'<p class="meta">{markup(precision)}</p>',
    ]
    if plans and not (data.get("serving") or {}).get("verdict"):
        parts.append(f'<div id="hfkv-headline">{gpu_headlines(plans)}</div>')
    else:
        parts.append(f'<p class="{_headline_class(data)}" id="hfkv-headline">{markup(headline(data))}</p>')
    parts += [summary_table(data), "<h2>Layers by kind</h2>", groups_table(data),
              "<h2>Per request</h2>", contexts_table(data, plans)]
    if plans:
        parts += ["<h2>On each GPU</h2>", gpus_table(plans)]
    if engines:
        parts.append(engines_section(engines))
    # The charts use the headline's budget: the plan's or --budget first, else the reference GPU's plan's.
    planned = data.get("budget_bytes") or (data.get("serving") or {}).get("kv_budget_bytes")
    picked = None if planned else pick_plan(plans or {})
    parts += ['<h2>Charts</h2><div class="charts">', *charts([report], [str(data.get("model"))], picked and picked[1]),
              "</div>",
              notes_list(data)]
    return f'<section class="report">{"".join(parts)}</section>'


# -- charts ---------------------------------------------------------------------------------------


def _samples(entry: Entry, grid: list[int] | None) -> tuple[list[int], list[float], Any]:
    """(contexts, total bytes per request, curves.Curves or None): exact curves from the layer specs
    when there is a grid (every entry is a Report with specs), else the report's own contexts."""

    data, report = split(entry)
    if grid and report is not None:
        c = curves.curves(report, grid)
        return c.xs, [float(t) for t in c.totals], c
    contexts = data.get("contexts") or []
    return [c["tokens"] for c in contexts], [float(per_request(c)) for c in contexts], None


def _grid(entries: Sequence[Entry]) -> list[int] | None:

    reports = [split(e)[1] for e in entries]
    if not all(r is not None and r.layer_specs and r.contexts for r in reports):
        return None
    tokens = [c.tokens for r in reports for c in r.contexts]
    lo, hi = min(curves.SHORTEST, min(tokens)), max(tokens)
    return curves.context_grid(lo if lo < hi else max(1, hi // 8), max(hi, 2), reports)


def charts(entries: Sequence[Entry], labels: Sequence[str], budget: int | None = None) -> list[str]:
    """Two SVG charts: memory per request (stacked by storage for one model, one line each for
    several) and B_max against the context in ``budget`` (else the report's, else 64 GiB, said)."""

    grid = _grid(entries)
    samples = [_samples(e, grid) for e in entries]
    datas = [split(e)[0] for e in entries]
    if not any(xs for xs, _, _ in samples):
        return []
    colors = [svg.PALETTE[k % len(svg.PALETTE)] for k in range(len(entries))]
    tokens = lambda v: format_tokens(int(round(v)))  # noqa: E731
    first = samples[0][2]
    if len(entries) == 1 and first is not None:
        bands = [svg.Series(name, first.xs, [float(v) for v in values], curves.STACK[name])
                 for name, values in first.bands.items()]
        s_star = datas[0].get("crossover_tokens")
        memory = svg.stacked_chart(
            "Memory per request by kind of storage", first.xs, bands, unit=axes.binary_unit(max(samples[0][1])),
            x_format=tokens, marker=(s_star, f"S* ≈ {format_tokens(round(s_star))} tokens") if s_star else None)
    else:
        memory = svg.line_chart(
            "Memory per request (KV cache + state)",
            [svg.Series(f"{label}: α {axes.short_bytes(d['alpha_bytes_per_token'])}/token, "
                        f"γ {axes.short_bytes(d['gamma_bytes_per_request'])}", xs, ys, color)
             for d, label, (xs, ys, _), color in zip(datas, labels, samples, colors)],
            xlabel="context length (tokens)", ylabel="bytes per request", x_format=tokens,
            y_format=axes.short_bytes, y_ticks=lambda lo, hi: svg.log2_ticks(lo, hi, 7), markers=grid is None)
    given = budget or datas[0].get("budget_bytes") or (datas[0].get("serving") or {}).get("kv_budget_bytes")
    used = given if given and given > 0 else curves.DEFAULT_BUDGET
    where = format_bytes(used) + ("" if given and given > 0 else " (default budget)")
    concurrency = svg.line_chart(
        f"Requests that fit in {where} (B_max)",
        [svg.Series(label, xs, _bmax(ys, used), color) for label, (xs, ys, _), color in zip(labels, samples, colors)],
        xlabel="context length (tokens)", ylabel="concurrent requests", x_format=tokens,
        y_format=lambda v: f"{v:,.0f}", y_ticks=svg.decade_ticks, markers=grid is None, legend_right=True)
    note = ('<p class="meta">Charts drawn through the report\'s contexts only (its layers were not kept).</p>'
            if grid is None else "")
    return [memory, concurrency, note]


def _bmax(totals: list[float], budget: int) -> list[float]:
    """floor(budget / bytes) per point; NaN (a gap) where not one request fits."""
    return [float(budget // t) if t > 0 and budget // t >= 1 else float("nan") for t in totals]


REFERENCE_GPU = "H200-141GB"  # the GPU whose KV budget the chart uses, when a report carries a plan for it


def pick_plan(plans: dict[str, dict[str, Any]]) -> tuple[str, int] | None:
    """(spec, KV budget per GPU) of the H200 plan among ``plans``, else of the first one with a positive
    budget, else None: the budget the B_max chart is drawn in (per rank, as ``hfkv report --gpu``'s)."""
    usable = [(spec, plan["kv_budget_bytes"]) for spec, plan in plans.items()
              if not plan.get("refused") and isinstance(plan.get("kv_budget_bytes"), int) and plan["kv_budget_bytes"] > 0
              and plan.get("weights_fit") is not False]
    return next((item for item in usable if item[0].startswith(REFERENCE_GPU)), None) or next(iter(usable), None)
