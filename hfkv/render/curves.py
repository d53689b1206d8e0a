"""Curves of memory per request against the context, for charts (matplotlib plots and the HTML pages'
SVG): the context grid with every window edge, exact bytes per request by kind of storage, B_max,
the crossings where one model starts to need less memory than another, and axis helpers."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from hfkv.model.report import Report
from hfkv.planning.compare import RequestCost, all_pairs

POINTS = 240  # context samples per curve (geometric), plus every window edge
SHORTEST = 1024  # charts start at 1K unless a shorter context is asked for
DEFAULT_BUDGET = 64 * 1024**3  # the B_max panel's budget when none is given (stated in its title)

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
