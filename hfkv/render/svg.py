"""Hand-written SVG charts for the HTML pages: lines or stacked bands against a log context axis.

No plotting library: a chart is a few polylines or polygons on log or linear axes, written as text
that an HTML page inlines (so it stays sharp and needs nothing fetched). Every label passes through
``text.markup``: model names and band names are data, never markup. Numbers are drawn as floats; the exact
figures live in the page's tables, the chart only shows their shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from hfkv.text import markup
from hfkv.render.axes import power_of_two_ticks

WIDTH, HEIGHT = 640, 300
LEFT, RIGHT, TOP, BOTTOM = 72, 16, 34, 46
# Colour-blind-safe cycle (Okabe-Ito), for one line per model.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")


@dataclass(frozen=True)
class Scale:
    """Maps data values in [lo, hi] to pixels in [start, end] (log or linear)."""

    lo: float
    hi: float
    start: float
    end: float
    log: bool = False

    def __call__(self, value: float) -> float:
        f = self._f
        lo, hi = f(self.lo), f(self.hi)
        t = 0.5 if hi == lo else (f(min(max(value, self.lo), self.hi)) - lo) / (hi - lo)
        return self.start + t * (self.end - self.start)

    def _f(self, value: float) -> float:
        return math.log(max(value, 1e-300)) if self.log else value


@dataclass(frozen=True)
class Series:
    """One line (or band) of a chart: x and y values of equal length, a label and a colour."""

    label: str
    xs: Sequence[float]
    ys: Sequence[float]
    color: str


def log2_ticks(lo: float, hi: float, most: int = 8) -> list[float]:
    """Powers of two within [lo, hi], at most ``most`` of them (the plots' tick rule, clipped)."""
    return [t for t in power_of_two_ticks(lo, hi, most) if lo <= t <= hi]


def decade_ticks(lo: float, hi: float) -> list[float]:
    """1, 2, 5 × 10^k within [lo, hi] (for counts on a log axis); thinned to decades when many."""
    ticks = [m * 10.0**k for k in range(math.floor(math.log10(max(lo, 1))), math.ceil(math.log10(max(hi, 1))) + 1)
             for m in (1, 2, 5)]
    inside = [t for t in ticks if lo <= t <= hi]
    return inside if len(inside) <= 9 else [t for t in inside if math.log10(t).is_integer()]


def linear_ticks(hi: float, count: int = 5) -> list[float]:
    """0 and round steps (1, 2, 2.5, 5 × 10^k) up to ``hi``."""
    if hi <= 0:
        return [0.0]
    raw = hi / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return [k * step for k in range(int(hi / step + 1e-9) + 1)]


def _points(series: Series, x: Scale, y: Scale) -> str:
    return " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in zip(series.xs, series.ys) if _finite(b))


def _finite(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _axes(x: Scale, y: Scale, xticks: Iterable[tuple[float, str]], yticks: Iterable[tuple[float, str]],
          xlabel: str, ylabel: str) -> list[str]:
    """Frame, grid lines, tick labels and axis titles."""
    parts = [f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" height="{HEIGHT - TOP - BOTTOM}" '
             'fill="none" stroke="#999"/>']
    for value, label in xticks:
        px = x(value)
        parts.append(f'<line x1="{px:.1f}" y1="{TOP}" x2="{px:.1f}" y2="{HEIGHT - BOTTOM}" stroke="#e4e4e4"/>')
        parts.append(f'<text x="{px:.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle">{markup(label)}</text>')
    for value, label in yticks:
        py = y(value)
        parts.append(f'<line x1="{LEFT}" y1="{py:.1f}" x2="{WIDTH - RIGHT}" y2="{py:.1f}" stroke="#e4e4e4"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{py + 4:.1f}" text-anchor="end">{markup(label)}</text>')
    parts.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{HEIGHT - 8}" text-anchor="middle">{markup(xlabel)}</text>')
    parts.append(f'<text transform="translate(14 {(TOP + HEIGHT - BOTTOM) / 2:.0f}) rotate(-90)" '
                 f'text-anchor="middle">{markup(ylabel)}</text>')
    return parts


def _legend(entries: Sequence[tuple[str, str]], right: bool = False) -> list[str]:
    """Colour swatches and labels inside the frame, one per line: top left, or top right (``right``,
    for falling curves)."""
    parts = []
    for k, (label, color) in enumerate(entries):
        top = TOP + 8 + 15 * k
        if right:
            x = WIDTH - RIGHT - 18
            parts.append(f'<rect x="{x}" y="{top}" width="10" height="10" fill="{color}"/>')
            parts.append(f'<text x="{x - 5}" y="{top + 9}" text-anchor="end">{markup(label)}</text>')
        else:
            parts.append(f'<rect x="{LEFT + 8}" y="{top}" width="10" height="10" fill="{color}"/>')
            parts.append(f'<text x="{LEFT + 23}" y="{top + 9}">{markup(label)}</text>')
    return parts


def _document(title: str, body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="hfkv-chart" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'role="img" aria-label="{markup(label)}" font-family="sans-serif" font-size="11">'
            f'<text x="{LEFT}" y="20" font-size="13" font-weight="bold">{markup(title)}</text>'
            + "".join(body) + "</svg>")


def x_scale(xs: Iterable[float]) -> Scale:
    values = [v for v in xs if v > 0]
    lo, hi = min(values), max(values)
    return Scale(lo, hi if hi > lo else lo * 2, LEFT, WIDTH - RIGHT, log=True)


def line_chart(
    title: str, series: Sequence[Series], *, xlabel: str, ylabel: str, x_format: Callable[[float], str],
    y_format: Callable[[float], str], y_ticks: Callable[[float, float], list[float]], markers: bool = False,
    legend_right: bool = False,
) -> str:
    """Lines on a log x axis and a log y axis (ticks from ``y_ticks(lo, hi)``); non-finite y are gaps.

    ``markers`` draws a dot at every point (for series sampled at a few contexts only);
    ``legend_right`` puts the legend top right (for falling curves).
    """
    x = x_scale(v for s in series for v in s.xs)
    ys = [v for s in series for v in s.ys if _finite(v) and v > 0] or [1.0]
    lo, hi = min(ys), max(ys)
    lo, hi = (lo / 1.3, hi * 1.3) if hi > lo else (lo / 2, hi * 2)
    y = Scale(lo, hi, HEIGHT - BOTTOM, TOP, log=True)
    body = _axes(x, y, [(t, x_format(t)) for t in log2_ticks(x.lo, x.hi, 9)],
                 [(t, y_format(t)) for t in y_ticks(lo, hi)], xlabel, ylabel)
    for s in series:
        body.append(f'<polyline fill="none" stroke="{s.color}" stroke-width="2" points="{_points(s, x, y)}">'
                    f"<title>{markup(s.label)}</title></polyline>")
        if markers:
            body += [f'<circle cx="{x(a):.1f}" cy="{y(b):.1f}" r="3" fill="{s.color}"/>'
                     for a, b in zip(s.xs, s.ys) if _finite(b) and b > 0]
    body += _legend([(s.label, s.color) for s in series], right=legend_right)
    return _document(title, body, title)


def stacked_chart(title: str, xs: Sequence[float], bands: Sequence[Series], *, unit: tuple[float, str],
                  x_format: Callable[[float], str], marker: tuple[float, str] | None = None) -> str:
    """Bands stacked bottom to top (first band at the bottom) on a linear y axis in ``unit`` (divisor, name).

    Linear, not log: a stacked area on a log axis misstates each band's share. ``marker`` draws a
    dotted vertical line with a label (S*).
    """
    divisor, name = unit
    x = x_scale(xs)
    below = [0.0] * len(xs)
    stacks = []
    for band in bands:
        above = [b + float(v) / divisor for b, v in zip(below, band.ys)]
        stacks.append((band, list(below), above))
        below = above
    top = max(below, default=1.0) or 1.0
    y = Scale(0, top * 1.08, HEIGHT - BOTTOM, TOP)
    body = _axes(x, y, [(t, x_format(t)) for t in log2_ticks(x.lo, x.hi, 9)],
                 [(t, f"{t:g}") for t in linear_ticks(top * 1.08)], "context length (tokens)",
                 f"memory per request ({name})")
    for band, low, high in stacks:
        outline = [f"{x(a):.1f},{y(b):.1f}" for a, b in zip(xs, high)]
        outline += [f"{x(a):.1f},{y(b):.1f}" for a, b in reversed(list(zip(xs, low)))]
        body.append(f'<polygon fill="{band.color}" fill-opacity="0.85" points="{" ".join(outline)}">'
                    f"<title>{markup(band.label)}</title></polygon>")
    if marker and x.lo < marker[0] < x.hi:
        px = x(marker[0])
        body.append(f'<line x1="{px:.1f}" y1="{TOP}" x2="{px:.1f}" y2="{HEIGHT - BOTTOM}" stroke="#444" '
                    'stroke-dasharray="3 3"/>')
        anchor, dx = ("end", -4) if px > (LEFT + WIDTH) / 2 else ("start", 4)
        body.append(f'<text x="{px + dx:.1f}" y="{TOP + 14}" text-anchor="{anchor}" fill="#444">{markup(marker[1])}</text>')
    body += _legend([(band.label, band.color) for band in reversed(bands)])  # top band first, as drawn
    return _document(title, body, title)
