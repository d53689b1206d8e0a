"""Which of several models fits more requests where: exact bytes per request at any context
(``RequestCost``), the winner per context and the contexts where the lead changes (found on the exact
M(S), not on the α·S + γ line, so that windows shorter than the crossing are honoured).

On a deployment (reports planned on GPUs) the winner at a shown context is the model that serves more
requests there in its engine's budget, after its own weights and reserve (``served``, ``ranking``):
no lead change is then computed between the shown contexts (the ranking gives each context's). Only a
model whose verdict is "fits" serves requests: one refused, that does not fit or start, that may not
start, or whose weights are unknown is left out of every ranking and pair (``not_serving``), since its
count is not a number of requests anyone would be served."""

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
    the same B_max under ``--budget``, or the same requests served on a deployment) or None (past either
    model's max_position_embeddings: not compared, since one of them cannot serve it; on a deployment,
    also where either serves none: ``not_serving`` names a model whose verdict is not "fits"). ``changes`` are (context, winner before, winner
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
    not_serving: tuple[int, ...] = ()  # on a deployment: the models (indices) whose verdict is not "fits"


SERVES = "fits"  # the one verdict status whose counts are requests served (hfkv.planning.verdict)


def plan_status(report: Report) -> str | None:
    """The verdict status of the report's deployment (``verdict_detail.status``: fits, may-not-start,
    does-not-fit, refused, unknown), None when it was not planned on GPUs or a budget."""
    plan = report.extra.get("serving")
    if not plan or plan.get("kv_budget_bytes") is None:
        return None
    return (plan.get("verdict_detail") or {}).get("status") or "none"


def served(report: Report) -> dict[int, int] | None:
    """{context: requests the report's deployment serves there, across every rank} when it was planned
    on GPUs and its verdict is "fits" (hfkv's exact count in the engine's own budget), else None. A
    context past the max length the engine starts with (``--max-model-len``) or the model's maximum is
    left out: the engine serves no request that long."""
    if plan_status(report) != SERVES:
        return None
    plan = report.extra["serving"]
    limits = [n for n in ((plan.get("max_length") or {}).get("tokens"), report.max_position_embeddings) if n]
    return {c["tokens"]: c.get("max_concurrency_total") or 0 for c in plan.get("contexts", [])
            if not limits or c["tokens"] <= min(limits)}


def not_serving(reports: list[Report]) -> list[tuple[int, str]]:
    """(index, verdict status) of each model planned on GPUs whose verdict is not "fits": ranked nowhere."""
    return [(i, status) for i, status in enumerate(plan_status(r) for r in reports)
            if status is not None and status != SERVES]


def ranking(reports: list[Report]) -> list[tuple[int, list[tuple[int, int]]]]:
    """Per context, (index of a model, requests it serves) from most to fewest, for the models whose
    deployment serves that context (``served``); empty when none does."""
    counts = [served(r) for r in reports]
    out = []
    for ctx in reports[0].contexts if reports else []:
        row = [(i, c[ctx.tokens]) for i, c in enumerate(counts) if c is not None and ctx.tokens in c]
        if row:
            out.append((ctx.tokens, sorted(row, key=lambda item: (-item[1], item[0]))))
    return out


def _served_winner(tokens: int, served_a: dict[int, int] | None, served_b: dict[int, int] | None) -> int | None:
    """On a deployment: the model that serves more requests at ``tokens`` (-1 on a tie), None when either
    serves none there (its verdict is not "fits", or the context is past its max length)."""
    if served_a is None or served_b is None or tokens not in served_a or tokens not in served_b:
        return None
    n_a, n_b = served_a[tokens], served_b[tokens]
    return -1 if n_a == n_b else (0 if n_a > n_b else 1)


def _context_winner(ca: Any, cb: Any, cost_a: RequestCost, cost_b: RequestCost, budget: int | None) -> int:
    if budget and ca.max_concurrency is not None and cb.max_concurrency is not None:
        n_a, n_b = ca.max_concurrency, cb.max_concurrency
        return -1 if n_a == n_b else (0 if n_a > n_b else 1)
    return _winner(cost_a, cost_b, ca.tokens)


def compare_pair(reports: list[Report], i: int, j: int, budget: int | None) -> PairVerdict:
    a, b = reports[i], reports[j]
    cost_a, cost_b = RequestCost(a), RequestCost(b)
    limit = served_limit(a, b)
    silent: tuple[int, ...] = ()
    changes: list[tuple[int, int, int]] = []
    if plan_status(a) is not None and plan_status(b) is not None:
        # On a deployment the winners are the requests each serves, which its weights and reserve decide
        # too (no byte-per-request crossing would say it); a model that serves none (its verdict is not
        # "fits") is compared at no context.
        silent = tuple(k for k, r in ((i, a), (j, b)) if plan_status(r) != SERVES)
        served_a, served_b = served(a), served(b)
        winners = [None if limit and c.tokens > limit else _served_winner(c.tokens, served_a, served_b)
                   for c in a.contexts]
    else:
        winners = [None if limit and ca.tokens > limit else _context_winner(ca, cb, cost_a, cost_b, budget)
                   for ca, cb in zip(a.contexts, b.contexts)]
        changes = _lead_changes(cost_a, cost_b, [c.tokens for c in a.contexts if not limit or c.tokens <= limit])
    compared = [c.tokens for c, w in zip(a.contexts, winners) if w is not None]
    identical = (bool(compared) and not changes and all(w == -1 for w in winners if w is not None)
                 and all(cost_a(S) == cost_b(S) for S in compared))
    return PairVerdict(first=i, second=j, winners=winners, changes=changes, limit=limit, identical=identical,
                       not_serving=silent)


def _lead_changes(cost_a: RequestCost, cost_b: RequestCost, shown: list[int]) -> list[tuple[int, int, int]]:
    """(S, winner before, winner from S) wherever the lead changes between 1 token and the first shown
    context, then between shown contexts."""
    points = [1] + shown
    changes = []
    for lo, hi in zip(points, points[1:]):
        if lo < hi and _winner(cost_a, cost_b, lo) != _winner(cost_a, cost_b, hi):
            S = _lead_change(cost_a, cost_b, lo, hi)
            changes.append((S, _winner(cost_a, cost_b, S - 1), _winner(cost_a, cost_b, S)))
    return changes


def all_pairs(reports: list[Report], budget: int | None) -> list[PairVerdict]:
    return [compare_pair(reports, i, j, budget) for i in range(len(reports)) for j in range(i + 1, len(reports))]
