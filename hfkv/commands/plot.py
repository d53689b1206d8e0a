"""``hfkv plot A [B ...] --output FILE.png|svg``: memory and concurrency against context length.

Left panel: bytes one request holds against the context (log x from 1K to the longest maximum
context). One model: the memory stacked by kind of storage (full attention, window, compressed,
indexer keys, recurrent state), so one sees which part grows and which stays fixed, and beside it
each kind alone on a log y axis, so that a band of a few percent (a recurrent state) stays readable.
Several models: one line each, on a log y axis, so that a small γ (short requests) and a small α
(long requests) both show, with every pair's crossing circled (``compare``'s lead changes, never
past either model's maximum). Right panel: B_max, the requests that fit in the KV budget, against
the context; with ``--gpu`` and a layout, the deployment's requests in flight (``hfkv.planning.serving``).

matplotlib is an optional extra (``hfkv[plot]``), imported only here, with the Agg backend and no
pyplot (no global figure state, no display needed).
"""

from __future__ import annotations

import math
import sys
import textwrap
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hfkv.commands.cli import accounting_options, fail, hub_options, planning_options
from hfkv.commands.compare import Collected, RequestCost, all_pairs, collect_reports
from hfkv.units import format_bytes, format_tokens

if TYPE_CHECKING:
    from hfkv.model.report import Report

MISSING_EXTRA = "install hfkv[plot] for plots"
DEFAULT_BUDGET = 64 * 1024**3  # stated in the panel title when --budget is not given
SHORTEST = 1024  # the x axis starts at 1K unless --context asks for shorter
POINTS = 240  # context samples per curve (geometric), plus every window edge
FORMATS = (".png", ".svg")

# Storage kinds of the stacked panel, bottom to top, with their colours.
# Fixed-size storage at the bottom, so that on the log axis γ shows as a floor and α as the growth.
STACK = {
    "recurrent state": "#DD8452",
    "cross-attention (encoder)": "#8C8C8C",
    "extra state copies": "#937860",
    "compressor rings": "#DA8BC3",
    "window": "#55A868",
    "compressed KV": "#C44E52",
    "indexer keys": "#8172B2",
    "full attention": "#4C72B0",
}
_STATE_KINDS = {"linear", "mamba", "conv"}


def import_matplotlib() -> Any:
    """matplotlib set to the Agg backend; ImportError when the ``plot`` extra is not installed."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    return matplotlib


# -- figures --------------------------------------------------------------------------------------


def stack_group(part: Any) -> str:
    """Which band of the stacked panel a cache part belongs to, from its ``kind``."""
    if part.kind in _STATE_KINDS:
        return "recurrent state"
    if part.kind == "cross":
        return "cross-attention (encoder)"
    if part.kind == "indexer":
        return "indexer keys"
    if part.kind == "compressed":
        return "compressed KV"
    if part.kind in ("sliding", "chunked") or getattr(part, "window", None):
        return "window"
    return "full attention"


def context_grid(lo: int, hi: int, reports: list[Report]) -> list[int]:
    """Geometric samples from lo to hi, plus every window or chunk edge in between (the kinks)."""
    if hi <= lo:
        return [lo]
    ratio = (hi / lo) ** (1 / (POINTS - 1))
    points = {lo, hi} | {round(lo * ratio**k) for k in range(POINTS)}
    for report in reports:
        for layer in report.layer_specs:
            for part in layer.parts:
                edge = getattr(part, "window", None) or getattr(part, "chunk", None)
                if edge and lo < edge < hi:
                    points |= {edge, edge + 1}
        if report.max_position_embeddings and lo < report.max_position_embeddings < hi:
            points.add(report.max_position_embeddings)
    return sorted(points)


def usable(report: Report, grid: list[int]) -> list[int]:
    """The part of the grid the model can serve (up to its max_position_embeddings when known)."""
    limit = report.max_position_embeddings
    return [S for S in grid if not limit or S <= limit] or grid[:1]


@dataclass(frozen=True)
class Curves:
    """One model sampled on its usable contexts: exact bytes per request by band, and in total."""

    xs: list[int]
    bands: dict[str, list[Fraction]]  # non-empty bands only, in STACK order

    @property
    def totals(self) -> list[Fraction]:
        return [sum(column, Fraction(0)) for column in zip(*self.bands.values())]


def curves(report: Report, grid: list[int]) -> Curves:
    """Sample a model; identical parts (most layers of a model) are evaluated once and counted."""
    cost = RequestCost(report)
    xs = usable(report, grid)
    bands: dict[str, list[Fraction]] = {name: [Fraction(0)] * len(xs) for name in STACK}
    for part, n in cost.counts.items():
        band = bands[stack_group(part)]
        # A token part's fixed state is a compressor ring (DeepSeek V4): its own band, not its entries'.
        ring = Fraction(0) if part.recurrent else part.state_bytes(cost.precision, cost.tp)
        for k, S in enumerate(xs):
            band[k] += n * (part.memory(S, cost.precision, cost.tp) - ring)
            bands["compressor rings"][k] += n * ring
    bands["extra state copies"] = [cost.extra] * len(xs)
    return Curves(xs, {name: values for name, values in bands.items() if any(values)})


def concurrency(totals: list[Fraction], budget: int) -> list[float]:
    """B_max = floor(budget / bytes per request) at each context; NaN where not one request fits."""
    values = []
    for cost in totals:
        n = int(budget // cost) if cost > 0 else 0
        values.append(float(n) if n else math.nan)
    return values


# -- axes -----------------------------------------------------------------------------------------


def short_bytes(value: float) -> str:
    """'4.5 MiB', '36 KiB', '1 GiB': format_bytes without trailing zeros."""
    number, unit = format_bytes(value).split(" ")
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    return f"{number} {unit}"


def binary_unit(largest: float) -> tuple[int, str]:
    """(divisor, name) of the binary unit that suits values up to ``largest``."""
    for power, name in ((4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB")):
        if largest >= 1024**power:
            return 1024**power, name
    return 1, "B"


def power_of_two_ticks(lo: float, hi: float, most: int = 8) -> list[float]:
    """Powers of two spanning [lo, hi], thinned to at most ``most`` (aligned, so 1 KiB/1 MiB stay)."""
    first, last = math.floor(math.log2(max(lo, 1))), math.ceil(math.log2(max(hi, 1)))
    step = max(1, math.ceil((last - first + 1) / most))
    return [2.0**e for e in range(first, last + 1) if e % step == 0]


def style_context_axis(ax: Any, lo: int, hi: int) -> None:
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_xscale("log", base=2)
    ax.set_xlim(lo, hi)
    ticks = [t for t in power_of_two_ticks(lo, hi, most=9) if lo <= t <= hi]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_tokens(int(round(v)))))
    ax.set_xlabel("context length (tokens)")
    ax.grid(True, which="major", alpha=0.3)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def legend_label(report: Report, label: str, mixed_dtypes: bool) -> str:
    text = f"{label}: α {short_bytes(report.alpha_bytes_per_token)}/token, γ {short_bytes(report.gamma_bytes_per_request)}"
    return text + (f" ({report.kv_cache_dtype})" if mixed_dtypes else "")


# -- panels ---------------------------------------------------------------------------------------


def style_bytes_axis(ax: Any, low: float, high: float, label: str) -> None:
    """Log y axis with ticks at powers of two labelled in binary units (64 MiB, 1 GiB, ...)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_yscale("log", base=2)
    low, high = low / 1.5, high * 1.5
    ax.set_ylim(low, high)
    ax.yaxis.set_major_locator(FixedLocator(power_of_two_ticks(low, high)))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: short_bytes(v)))
    ax.set_ylabel(label)


def draw_stacked(ax: Any, report: Report, c: Curves) -> None:
    """One model: bytes per request stacked by band, fixed storage at the bottom.

    Linear y (in the binary unit of the largest total): a stacked area on a log axis would
    misstate the bands' shares.
    """
    largest = max((float(t) for t in c.totals), default=1.0)
    unit, name = binary_unit(largest)
    below = [0.0] * len(c.xs)
    for band, values in c.bands.items():
        above = [b + float(v) / unit for b, v in zip(below, values)]
        ax.fill_between(c.xs, below, above, color=STACK[band], alpha=0.85, linewidth=0, label=band)
        below = above
    ax.plot(c.xs, below, color="0.15", linewidth=1)
    ax.set_ylim(0, max(below, default=1.0) * 1.05)
    ax.set_ylabel(f"memory per request ({name})")
    s_star = report.crossover_tokens
    if s_star and c.xs[0] < s_star < c.xs[-1]:
        ax.axvline(s_star, color="0.3", linestyle=":", linewidth=1)
        # Left of the line in the right half (empty above the curve), else right of it below the legend.
        right_half = math.log(s_star / c.xs[0]) > math.log(c.xs[-1] / c.xs[0]) / 2
        ax.annotate(f"S* = γ/α ≈ {format_tokens(round(s_star))} tokens", (s_star, 0.97 if right_half else 0.75),
                    xycoords=("data", "axes fraction"), xytext=(-4 if right_half else 4, 0), textcoords="offset points",
                    fontsize=8, color="0.3", va="top", ha="right" if right_half else "left")
    handles, names = ax.get_legend_handles_labels()
    ax.legend(handles[::-1], names[::-1], loc="upper left", fontsize=8, frameon=False)  # top band first
    ax.set_title(f"Memory per request by kind of storage: α {short_bytes(report.alpha_bytes_per_token)}/token, "
                 f"γ {short_bytes(report.gamma_bytes_per_request)}/request", fontsize=10)


def draw_lines(ax: Any, reports: list[Report], labels: list[str], all_curves: list[Curves], mixed: bool) -> None:
    """Several models: one line each of bytes per request, log y with binary-unit ticks."""
    ys_all = []
    for report, label, c in zip(reports, labels, all_curves):
        ys = [float(t) for t in c.totals]
        line, = ax.plot(c.xs, ys, linewidth=2, label=legend_label(report, label, mixed))
        if report.max_position_embeddings == c.xs[-1]:
            ax.plot(c.xs[-1:], ys[-1:], "o", color=line.get_color(), markersize=4, clip_on=False)
        ys_all += [y for y in ys if y > 0]
    if ys_all:
        style_bytes_axis(ax, min(ys_all), max(ys_all), "memory per request (KV cache + state)")
    mark_lead_changes(ax, reports, labels, all_curves)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    ax.set_title("Memory per request (a dot marks the model's maximum context)", fontsize=10)


@dataclass(frozen=True)
class Crossing:
    """Where the lead between models ``first`` and ``second`` changes: S tokens, y bytes per request."""

    tokens: int
    bytes_per_request: Fraction
    first: int
    second: int


def crossings(reports: list[Report], lo: int, hi: int) -> list[Crossing]:
    """Every pair's lead changes inside [lo, hi] (``compare.all_pairs``: never past either maximum)."""
    found = []
    for verdict in all_pairs(reports, None):
        cost = RequestCost(reports[verdict.first])
        found += [Crossing(S, cost(S), verdict.first, verdict.second)
                  for S, _, _ in verdict.changes if lo <= S <= hi]
    return found


def mark_lead_changes(ax: Any, reports: list[Report], labels: list[str], all_curves: list[Curves]) -> None:
    """Circle each context where one model starts to need less memory than another, for every pair.

    Two models: "equal near S tokens"; more: the pair is named too ("A = B near S"), the label
    staggered vertically so that neighbouring crossings do not print over each other.
    """
    lo, hi = min(c.xs[0] for c in all_curves), max(c.xs[-1] for c in all_curves)
    for k, cross in enumerate(crossings(reports, lo, hi)):
        S, y = cross.tokens, float(cross.bytes_per_request)
        ax.plot([S], [y], "o", markersize=9, markerfacecolor="none", markeredgecolor="0.2")
        text = f"equal near {S:,} tokens"
        if len(reports) > 2:
            text = f"{labels[cross.first]} = {labels[cross.second]} near {S:,}"
        ax.annotate(text, (S, y), xytext=(8, -12 - 10 * (k % 3)), textcoords="offset points", fontsize=7, color="0.2")


def draw_concurrency(ax: Any, labels: list[str], all_curves: list[Curves], budget: int, given: bool) -> None:
    """B_max against the context, one line per model, log y."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    for label, c in zip(labels, all_curves):
        ax.plot(c.xs, concurrency(c.totals, budget), linewidth=2, label=label, drawstyle="steps-post")
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_ylabel("concurrent requests that fit (B_max)")
    where = f"{short_bytes(budget)} of KV memory" + ("" if given else " (default budget; set --budget)")
    ax.set_title(f"Requests that fit in {where}", fontsize=10)
    if len(all_curves) > 1:
        ax.legend(loc="upper right", fontsize=8, frameon=False)


def draw_bands_log(ax: Any, c: Curves) -> None:
    """One model: each kind of storage alone, as a line on a log y axis, beside the linear stack.

    Why a panel of its own rather than a log stack or an inset: stacked areas on a log axis misstate
    the shares (the top band looks thin however large it is), and an inset hides the curve it sits
    on; here a 74 MiB recurrent state next to 12 GiB of attention is as readable as the attention.
    """
    ys_all = []
    for band, values in c.bands.items():
        ys = [float(v) for v in values]
        ax.plot(c.xs, ys, color=STACK[band], linewidth=2, label=band)
        ys_all += [y for y in ys if y > 0]
    if ys_all:
        style_bytes_axis(ax, min(ys_all), max(ys_all), "memory per request, each kind alone")
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    ax.set_title("Each kind of storage on its own (log scale: small bands readable)", fontsize=10)


@dataclass(frozen=True)
class Deployment:
    """Requests in flight across a deployment at each context (``hfkv.planning.serving.plan_serving``'s totals)."""

    xs: list[int]
    requests: list[int | None]  # max_concurrency_total per context; None without a budget
    verdict: str
    layout: str  # "(hfkv, DP attention)"
    where: str  # "8 × H200-141GB"


def deployment(cfg: Any, model: str, xs: list[int], params: dict[str, Any], hub: Any) -> Deployment:
    """Plan serving ``cfg`` on ``params``' GPU and layout at the contexts ``xs`` (the same knobs as the
    report command; weights from the Hub, ``--weights-bytes`` or the config's parameter count)."""
    from hfkv.commands.cli import build_options, engine_knobs
    from hfkv.planning.enrich import enrich
    from hfkv.model.report import inspect_loaded
    from hfkv.planning.serving import layout_label, plan_serving

    report = inspect_loaded(cfg, build_options(params).model_copy(update={"contexts": tuple(xs)}))
    from_hub = hub if getattr(cfg, "source", None) == "hub" and not params.get("no_weights") else None
    enrich(report, hub=from_hub, repo_id=getattr(cfg, "name", model), revision=getattr(cfg, "revision", None),
           weights_bytes=params.get("weights_bytes"))
    plan = plan_serving(
        report, gpu=params["gpu"], gpu_memory_utilization=params.get("gpu_memory_utilization"),
        weights_bytes=report.extra.get("weights_bytes"), weights_read_bytes=params.get("weights_read_bytes"),
        layout_knobs=engine_knobs(params), engine=params.get("engine") or "theory",
    )
    return Deployment(
        xs=[c["tokens"] for c in plan["contexts"]], requests=[c["max_concurrency_total"] for c in plan["contexts"]],
        verdict=plan["verdict"], layout=layout_label(plan), where=f"{plan['gpu_count']} × {plan['gpu']}",
    )


def draw_deployment(ax: Any, labels: list[str], plans: list[Deployment]) -> None:
    """Requests that fit across the deployment against the context, one line per model, with its verdict."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    for label, d in zip(labels, plans):
        ys = [float(n) if n else math.nan for n in d.requests]
        ax.plot(d.xs, ys, linewidth=2, drawstyle="steps-post", label=textwrap.fill(f"{label}: {d.verdict}", 60))
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_ylabel("requests in flight across the deployment")
    ax.set_title(f"Requests that fit on {plans[0].where} {plans[0].layout}", fontsize=10)
    ax.legend(loc="upper right", fontsize=7, frameon=False)  # the lines fall to the right


def deployments(out: Collected, grid: list[int], params: dict[str, Any]) -> list[Deployment]:
    """One ``Deployment`` per model on its usable part of ``grid``; a refused layout: one line, exit 2."""
    from hfkv.commands.cli import build_hub
    from hfkv.errors import HfkvError

    hub = build_hub(params) if any(getattr(c, "source", None) == "hub" for c in out.configs) else None
    try:
        return [deployment(cfg, r.model, usable(r, grid), params, hub) for cfg, r in zip(out.configs, out.reports)]
    except HfkvError as err:
        fail(str(err), err.exit_code)


def build_figure(out: Collected, lo: int, hi: int, budget: int | None, params: dict[str, Any] | None = None) -> Any:
    """The figure (a matplotlib ``Figure``, not attached to pyplot): memory per request, then for one
    model each kind of storage on a log scale, then requests that fit (the deployment's with ``--gpu``)."""
    from matplotlib.figure import Figure

    reports, labels = out.reports, out.labels
    grid = context_grid(lo, hi, reports)
    all_curves = [curves(r, grid) for r in reports]
    dtypes = sorted({r.kv_cache_dtype for r in reports})
    single = len(reports) == 1
    by_kind = single and len(all_curves[0].bands) > 1  # one kind alone: the log panel would repeat the stack
    fig = Figure(figsize=(19 if by_kind else 13, 5.4), layout="constrained")
    axes = list(fig.subplots(1, 3 if by_kind else 2))
    if single:
        draw_stacked(axes[0], reports[0], all_curves[0])
        if by_kind:
            draw_bands_log(axes[1], all_curves[0])
    else:
        draw_lines(axes[0], reports, labels, all_curves, mixed=len(dtypes) > 1)
    if params and params.get("gpu"):
        draw_deployment(axes[-1], labels, deployments(out, grid, params))
    else:
        draw_concurrency(axes[-1], labels, all_curves, budget or DEFAULT_BUDGET, given=budget is not None)
    for ax in axes:
        style_context_axis(ax, lo, hi)
    tps = sorted({r.tensor_parallel_size for r in reports})
    dtype = dtypes[0] if len(dtypes) == 1 else "per model (see legend)"
    tp = "" if tps == [1] else f" · bytes per GPU at TP {', '.join(map(str, tps))}"
    names = textwrap.fill(" vs ".join(labels), width=110)
    fig.suptitle(f"KV cache per request: {names}\nKV dtype {dtype}{tp}", fontsize=12)
    return fig


def context_range(out: Collected, params: dict[str, Any]) -> tuple[int, int]:
    """x-axis range: 1K (or the shortest --context) to the longest context of the report set.

    A single short context (``--context 512``) still gets a range: from an eighth of it.
    """
    hi = max(out.contexts)
    lo = min(SHORTEST, min(params["contexts"])) if params.get("contexts") else SHORTEST
    return (lo, hi) if lo < hi else (max(1, hi // 8), max(hi, 2))


@click.command("plot")
@click.argument("models", nargs=-1, required=True)
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False),
              help="Image file to write: .png or .svg.")
@accounting_options
@planning_options
@hub_options
def plot_command(models: tuple[str, ...], output: str, **params: Any) -> None:
    """Plot memory per request and the requests that fit against context length for MODELS.

    With --gpu (and the report's layout options: --tp, --dp, --enable-dp-attention, --pp, ...) the
    right panel is the deployment's: requests in flight across every rank, from hfkv.planning.serving.
    """
    if Path(output).suffix.lower() not in FORMATS:
        raise click.BadParameter(f"'{output}': the file name must end in .png or .svg", param_hint="--output")
    try:
        import_matplotlib()
    except ImportError:
        fail(MISSING_EXTRA, 2)
    out = collect_reports(models, params)
    if not out.reports:
        sys.exit(out.exit_code)
    fig = build_figure(out, *context_range(out, params), params.get("budget"), params)
    try:
        fig.savefig(output, dpi=150)
    except OSError as err:
        fail(f"cannot write {output}: {err.strerror or err}", 1)
    click.echo(f"wrote {output}")
    sys.exit(out.exit_code)
