"""Which of several models fits more requests where: exact bytes per request at any context
(``RequestCost``), the winner per context and the contexts where the lead changes (found on the exact
M(S), not on the α·S + γ line, so that windows shorter than the crossing are honoured).

On a deployment (reports planned on GPUs) the winner at a shown context is the model that serves more
requests there in its engine's budget, after its own weights and reserve (``served``, ``ranking``):
no lead change is then computed between the shown contexts (the ranking gives each context's)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from hfkv.model import accounting as acc
from hfkv.model.report import Report


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


def served(report: Report) -> dict[int, int] | None:
    """{context: requests the report's deployment serves there, across every rank} when it was planned
    on GPUs (hfkv's exact count in the engine's own budget; 0 when the weights fill it), else None."""
    plan = report.extra.get("serving")
    if not plan or plan.get("kv_budget_bytes") is None:
        return None
    if plan.get("weights_fit") is False:
        return {c.tokens: 0 for c in report.contexts}
    return {c["tokens"]: c.get("max_concurrency_total") or 0 for c in plan.get("contexts", [])}


def ranking(reports: list[Report]) -> list[tuple[int, list[tuple[int, int]]]]:
    """Per context, (index of a model, requests it serves) from most to fewest, for the models planned
    on GPUs that serve that context (within their maximum); empty when none was planned."""
    counts = [served(r) for r in reports]
    if not reports or not any(counts):
        return []
    out = []
    for ctx in reports[0].contexts:
        row = [(i, c[ctx.tokens]) for i, (r, c) in enumerate(zip(reports, counts))
               if c is not None and ctx.tokens in c
               and not (r.max_position_embeddings and ctx.tokens > r.max_position_embeddings)]
        if row:
            out.append((ctx.tokens, sorted(row, key=lambda item: (-item[1], item[0]))))
    return out


def _context_winner(ca: Any, cb: Any, cost_a: RequestCost, cost_b: RequestCost, budget: int | None,
                    served_a: dict[int, int] | None = None, served_b: dict[int, int] | None = None) -> int:
    if served_a is not None and served_b is not None and ca.tokens in served_a and cb.tokens in served_b:
        n_a, n_b = served_a[ca.tokens], served_b[cb.tokens]
        return -1 if n_a == n_b else (0 if n_a > n_b else 1)
    if budget and ca.max_concurrency is not None and cb.max_concurrency is not None:
        n_a, n_b = ca.max_concurrency, cb.max_concurrency
        return -1 if n_a == n_b else (0 if n_a > n_b else 1)
    return _winner(cost_a, cost_b, ca.tokens)


def compare_pair(reports: list[Report], i: int, j: int, budget: int | None) -> PairVerdict:
    a, b = reports[i], reports[j]
    cost_a, cost_b = RequestCost(a), RequestCost(b)
    limit = served_limit(a, b)
    served_a, served_b = served(a), served(b)
    winners: list[int | None] = [
        None if limit and ca.tokens > limit else _context_winner(ca, cb, cost_a, cost_b, budget, served_a, served_b)
        for ca, cb in zip(a.contexts, b.contexts)
    ]
    # Where the lead changes: between 1 token and the first context, then between shown contexts,
    # never past the longest context both models serve. On a deployment the winners are the requests
    # served, which each model's weights also decide: the byte-per-request crossings would not say it.
    points = [] if served_a is not None and served_b is not None else \
        [1] + [c.tokens for c in a.contexts if not limit or c.tokens <= limit]
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
