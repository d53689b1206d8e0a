"""Plots (matplotlib): memory and concurrency against context length, for ``hfkv plot``.

Left panel: bytes one request holds against the context (log x from 1K to the longest maximum
context). One model: the memory stacked by kind of storage (full attention, window, compressed,
indexer keys, recurrent state), so one sees which part grows and which stays fixed, and beside it
each kind alone on a log y axis, so that a band of a few percent (a recurrent state) stays readable.
Several models: one line each, on a log y axis, so that a small γ (short requests) and a small α
(long requests) both show, with every pair's crossing circled (the lead changes, never past either
model's maximum). Right panel: B_max, the requests that fit in the KV budget, against the context;
with a deployment, its requests in flight (``hfkv.planning.serving``).

matplotlib is an optional extra (``hfkv[plot]``), imported only here, with the Agg backend and no
pyplot (no global figure state, no display needed).
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import Any, Callable

from hfkv.model.report import Report
from hfkv.planning.compare import SERVES, Collected
from hfkv.render.axes import binary_unit, power_of_two_ticks, short_bytes
from hfkv.render.curves import DEFAULT_BUDGET, STACK, Curves, concurrency, context_grid, crossings, curves
from hfkv.units import format_tokens

def import_matplotlib() -> Any:
    """matplotlib set to the Agg backend; ImportError when the ``plot`` extra is not installed."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    return matplotlib


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
class DeploymentCurve:
    """Requests in flight across a deployment at each context (``hfkv.planning.serving.plan_serving``'s totals)."""

    xs: list[int]
    requests: list[int | None]  # max_concurrency_total per context; None without a budget or past the max length
    verdict: str
    layout: str  # "(hfkv, DP attention)"
    where: str  # "8 × H200-141GB"
    status: str = "fits"  # the verdict's status: only "fits" is drawn as requests served

    @property
    def drawn(self) -> bool:
        return self.status == SERVES


def draw_deployment(ax: Any, labels: list[str], plans: list[DeploymentCurve]) -> None:
    """Requests that fit across the deployment against the context, one line per model whose verdict is
    "fits", with its verdict; any other verdict (refused, does not fit or start, may not start, weights
    unknown) is a legend entry with no line: its count is not requests anyone is served."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    for k, (label, d) in enumerate(zip(labels, plans)):
        color = f"C{k}"  # the model's colour in the left panel too
        if not d.drawn:
            ax.plot([], [], linestyle="none", marker="x", color=color,
                    label=textwrap.fill(f"{label} (not drawn): {d.verdict}", 60))
            continue
        ys = [float(n) if n else math.nan for n in d.requests]
        ax.plot(d.xs, ys, linewidth=2, color=color, drawstyle="steps-post", gid=f"served-{k}",  # an SVG id
                label=textwrap.fill(f"{label}: {d.verdict}", 60))
    if any(d.drawn and any(d.requests) for d in plans):
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    else:
        ax.text(0.5, 0.5, "no model serves a request on this deployment", transform=ax.transAxes,
                ha="center", va="center", fontsize=9, color="0.3")
    ax.set_ylabel("requests in flight across the deployment")
    ax.set_title(f"Requests that fit on {plans[0].where} {plans[0].layout}", fontsize=10)
    ax.legend(loc="upper right", fontsize=7, frameon=False)  # the lines fall to the right


def build_figure(out: Collected, lo: int, hi: int, budget: int | None,
                 deploy: Callable[[list[int]], list[DeploymentCurve]] | None = None) -> Any:
    """The figure (a matplotlib ``Figure``, not attached to pyplot): memory per request, then for one
    model each kind of storage on a log scale, then requests that fit: the deployment's when ``deploy``
    (the context grid → one ``DeploymentCurve`` per model) is given, else within ``budget``."""
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
    if deploy is not None:
        draw_deployment(axes[-1], labels, deploy(grid))
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
