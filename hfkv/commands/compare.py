"""``hfkv compare A B ...``: several models side by side, and which one fits more requests where.

Two numbers decide a comparison of KV memory: α (bytes per token of context) and γ (bytes per
request that do not grow with the context). A model with a small α but a large γ (sliding-window or
linear-attention hybrids) loses at high concurrency of short requests and wins at long context; the
command prints one column per model and, for every pair, which model fits more requests at each
context and the context at which the lead changes (found on the exact M(S), not on the α·S + γ line,
so that windows shorter than the crossing are honoured).

``collect_reports`` (load every model, keep going past failures, put all reports on the same
contexts) is shared with ``hfkv plot``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hfkv.commands.cli import accounting_options, build_hub, build_options, hub_options
from hfkv.errors import HfkvError
from hfkv.units import format_bytes, format_tokens

if TYPE_CHECKING:  # the report stack (pydantic) is imported by the command, not by --help
    from hfkv.model.report import Options, Report

PAST_MAX = "†"  # marks a context longer than the model's max_position_embeddings


# -- loading --------------------------------------------------------------------------------------


@dataclass
class Collected:
    """The models that could be read (in command-line order), their labels, and the failures."""

    reports: list[Report] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    exit_code: int = 0
    configs: list[Any] = field(default_factory=list)  # the loaded configs, for plots that re-inspect them

    @property
    def contexts(self) -> list[int]:
        return [c.tokens for c in self.reports[0].contexts] if self.reports else []


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


def _inspect(model: str, cfg: Any, options: Options, out: Collected) -> Report | None:
    """The report of one loaded config, or None after recording its error."""
    from hfkv.model.report import inspect_loaded

    try:
        return inspect_loaded(cfg, options)
    except HfkvError as err:
        _record_error(out, model, err)
        return None


def _record_error(out: Collected, model: str, err: HfkvError) -> None:
    click.echo(f"hfkv: error: {err}", err=True)
    out.errors.append({"model": model, "error": err.row_text()})
    out.exit_code = max(out.exit_code, err.exit_code)


def collect_reports(models: tuple[str, ...] | list[str], params: dict[str, Any]) -> Collected:
    """Load and inspect every MODEL; each failure prints one line on stderr and is recorded.

    Without ``--context`` every report is rebuilt on the union of the models' default contexts
    (4K, 32K, 128K and each model's maximum), so that the columns line up.
    """
    from hfkv.sources.local import load_config, looks_like_repo_id

    options = build_options(params)
    hub = build_hub(params) if any(looks_like_repo_id(m) for m in models) else None
    out = Collected()
    done: list[tuple[str, Any, Report]] = []
    for model in models:
        try:
            cfg = load_config(model, hub=hub, revision=params.get("revision"))
        except HfkvError as err:
            _record_error(out, model, err)
            continue
        report = _inspect(model, cfg, options, out)
        if report is not None:
            done.append((model, cfg, report))
    if options.contexts is None and done:
        union = tuple(sorted({c.tokens for _, _, r in done for c in r.contexts}))
        shared = options.model_copy(update={"contexts": union})
        # Same configs, other contexts: what read once reads again.
        done = [(m, cfg, _inspect(m, cfg, shared, out)) for m, cfg, _ in done]
    out.reports = [r for _, _, r in done if r is not None]
    out.configs = [cfg for _, cfg, r in done if r is not None]
    out.labels = unique_labels([m for m, _, r in done if r is not None])
    return out


# -- figures --------------------------------------------------------------------------------------


def extra_state(report: Report) -> Fraction:
    """Extra state copies per request (prefix-cache snapshots, speculative drafts); constant in S."""
    first = report.contexts[0].extra_state_bytes if report.contexts else None
    return Fraction(first or 0)


class RequestCost:
    """Exact bytes one request of a model holds at context S (KV + state + extra copies), per GPU.

    The accounting core's terms are computed once (``accounting.costs``): the pair searches call this
    a few hundred times. ``counts`` (each distinct part and how many layers hold it) is for plots.
    """

    def __init__(self, report: Report) -> None:
        self.counts = Counter(part for layer in report.layer_specs for part in layer.parts)
        self.precision, self.tp = report.precision, report.tensor_parallel_size
        self.extra = extra_state(report)
        from hfkv.model import accounting as acc

        self._memory = acc.costs(report.layer_specs, self.precision, self.tp).memory

    def __call__(self, S: int) -> Fraction:
        return self._memory(S) + self.extra


def request_cost(report: Report, S: int) -> Fraction:
    """``RequestCost(report)(S)``: one figure, same as ``accounting.request_bytes`` plus extra copies."""
    return RequestCost(report)(S)


def _winner(a: RequestCost, b: RequestCost, S: int) -> int:
    """0 when ``a`` needs fewer bytes per request at S, 1 when ``b`` does, -1 on a tie."""
    diff = a(S) - b(S)
    return -1 if diff == 0 else (0 if diff < 0 else 1)


def _lead_change(a: RequestCost, b: RequestCost, lo: int, hi: int) -> int:
    """The first S in (lo, hi] where the winner is hi's (the winners at lo and hi differ)."""
    target = _winner(a, b, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _winner(a, b, mid) == target else (mid, hi)
    return hi


def served_limit(a: Report, b: Report) -> int | None:
    """The longest context both models serve (the smaller max_position_embeddings), None when unknown."""
    limits = [r.max_position_embeddings for r in (a, b) if r.max_position_embeddings]
    return min(limits) if limits else None


@dataclass(frozen=True)
class PairVerdict:
    """Which of two models fits more requests at each context, and where the lead changes.

    ``winners`` holds, per context, 0 (first model), 1 (second), -1 (same bytes per request, or
    the same B_max under ``--budget``) or None (past either model's max_position_embeddings: not
    compared, since one of them cannot serve it). ``changes`` are (context, winner before, winner
    from there) found on the exact M(S) between 1 token and the longest context both serve that is
    shown. ``identical``: the two need the same bytes per request at every context compared and the
    lead never changes (a model compared with itself), so there is no "more requests fit" to say.
    """

    first: int
    second: int
    winners: list[int | None]
    changes: list[tuple[int, int, int]]
    limit: int | None = None
    identical: bool = False


def _context_winner(ca: Any, cb: Any, cost_a: RequestCost, cost_b: RequestCost, budget: int | None) -> int:
    if budget and ca.max_concurrency is not None and cb.max_concurrency is not None:
        n_a, n_b = ca.max_concurrency, cb.max_concurrency
        return -1 if n_a == n_b else (0 if n_a > n_b else 1)
    return _winner(cost_a, cost_b, ca.tokens)


def compare_pair(reports: list[Report], i: int, j: int, budget: int | None) -> PairVerdict:
    a, b = reports[i], reports[j]
    cost_a, cost_b = RequestCost(a), RequestCost(b)
    limit = served_limit(a, b)
    winners: list[int | None] = [
        None if limit and ca.tokens > limit else _context_winner(ca, cb, cost_a, cost_b, budget)
        for ca, cb in zip(a.contexts, b.contexts)
    ]
    # Where the lead changes: between 1 token and the first context, then between shown contexts,
    # never past the longest context both models serve.
    points = [1] + [c.tokens for c in a.contexts if not limit or c.tokens <= limit]
    changes = []
    for lo, hi in zip(points, points[1:]):
        if lo < hi and _winner(cost_a, cost_b, lo) != _winner(cost_a, cost_b, hi):
            S = _lead_change(cost_a, cost_b, lo, hi)
            changes.append((S, _winner(cost_a, cost_b, S - 1), _winner(cost_a, cost_b, S)))
    compared = [c.tokens for c, w in zip(a.contexts, winners) if w is not None]
    identical = bool(compared) and not changes and all(cost_a(S) == cost_b(S) for S in compared)
    return PairVerdict(first=i, second=j, winners=winners, changes=changes, limit=limit, identical=identical)


def all_pairs(reports: list[Report], budget: int | None) -> list[PairVerdict]:
    return [compare_pair(reports, i, j, budget) for i in range(len(reports)) for j in range(i + 1, len(reports))]


# -- text -----------------------------------------------------------------------------------------


def exact_bytes(value: float | int | None) -> str:
    """'36,864 B (36.00 KiB)': exact, with the binary-unit reading when it is 1 KiB or more."""
    if value is None:
        return "-"
    text = f"{value:,.2f}" if isinstance(value, float) and not value.is_integer() else f"{int(value):,}"
    return f"{text} B" if abs(value) < 1024 else f"{text} B ({format_bytes(value)})"


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
        rows.append((f"{label}: read/decode step", [
            format_bytes(r.contexts[k].read_bytes_per_step) + m for r, m in zip(reports, marks)
        ]))
    return rows


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
    from hfkv.render.terminal import console_for, print_table, terminal_text

    console = console_for()
    columns = [("", False)] + [(label, True) for label in out.labels]
    rows = [[title, *cells] for title, cells in table_rows(out.reports, budget)]
    print_table(console, "KV cache and state per request", columns, rows)
    for note in footnotes(out.reports):
        console.print(terminal_text(note))
    for verdict in pairs:
        console.print(terminal_text(pair_line(verdict, out.reports, out.labels)))


def render_markdown(out: Collected, pairs: list[PairVerdict], budget: int | None) -> str:
    from hfkv.render.terminal import md_escape

    lines = ["| | " + " | ".join(md_escape(label) for label in out.labels) + " |",
             "|---|" + "---:|" * len(out.labels)]
    for title, cells in table_rows(out.reports, budget):
        lines.append(f"| {md_escape(title)} | " + " | ".join(md_escape(c) for c in cells) + " |")
    lines.append("")
    lines += [f"- {md_escape(n)}" for n in footnotes(out.reports)]
    lines += [f"- {md_escape(pair_line(v, out.reports, out.labels))}" for v in pairs]
    return "\n".join(lines) + "\n"


def to_json(out: Collected, pairs: list[PairVerdict]) -> str:
    """``{"models": [report dicts], "contexts": [...], "errors": [...], "pairs": [...]}``.

    A pair's ``more_requests`` ({tokens, model: the one that fits more, null on a tie}) covers only
    contexts both models serve; ``not_compared`` lists the others; ``identical`` is true when the
    two need the same bytes per request at every context compared.
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
        }
        for v in pairs
    ]
    data = {
        "models": [r.to_dict() for r in out.reports], "contexts": out.contexts,
        "errors": out.errors, "pairs": pair_rows,
    }
    return json.dumps(data, indent=2)


@click.command("compare")
@click.argument("models", nargs=-1, required=True)
@accounting_options
@hub_options
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown"]), default="table", show_default=True)
def compare_command(models: tuple[str, ...], fmt: str, **params: Any) -> None:
    """Compare MODELS side by side: α, γ, S*, and per context bytes, B_max and reads.

    For each pair, says which model fits more requests at each context: a small α wins at long
    context, a small γ at high concurrency of short requests.
    """
    out = collect_reports(models, params)
    budget = params.get("budget")
    pairs = all_pairs(out.reports, budget)
    if fmt == "json":
        click.echo(to_json(out, pairs))
    elif out.reports and fmt == "markdown":
        click.echo(render_markdown(out, pairs, budget), nl=False)
    elif out.reports:
        render_table(out, pairs, budget)
    sys.exit(out.exit_code)
