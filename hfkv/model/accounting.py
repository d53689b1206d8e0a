"""The accounting core: pure functions over a list of ``LayerSpec``.

No I/O, no model names. Every function takes the layers, a ``Precision`` and a tensor-parallel size
``tp``; all bytes are per request (per GPU when ``tp`` > 1) unless the name says otherwise.

    M(S) = Σ_l σ_l·n_l(S)·E_l + C_l          (exact, with the floors and mins)
    M(S) ≈ α·S + γ   for S past every window  (α = Σ σ·E/m, γ = Σ W·E_window + Σ C)
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Sequence, Union

from hfkv.model.dtypes import Precision
from hfkv.model.pipeline import stages
from hfkv.model.specs import LayerSpec, Rule, count

Layers = Union[Sequence[LayerSpec], "Grouped"]  # a layer list, or the same grouped once by ``group``

# Largest context the searches consider: 2^40 tokens, far past any real model.
SEARCH_LIMIT = 1 << 40


class Grouped(tuple):
    """Layers grouped by the value of the parts they hold: ``((layer, count), ...)``.

    Every function here accepts one in place of the layer list: a caller that asks many questions of
    the same layers (a report, a search over S) groups them once with ``group``. A ``Grouped`` also
    keeps the ``Costs`` computed for it, per precision and TP.
    """


def group(layers: Layers) -> Grouped:
    """Layers grouped by the value of their parts (kind and every shape field), with how many share them.

    Parts are frozen pydantic models, equal and hashable by value, so equal parts built as distinct
    objects (one per layer, as some mappers do) are one group: exact, since equal parts give equal
    figures. Hashing a model costs more than comparing ids, hence the two passes.
    """
    if isinstance(layers, Grouped):
        return layers
    by_id: Counter = Counter()  # first by identity (cheap: most mappers reuse one part object) ...
    first: dict[tuple, LayerSpec] = {}
    for layer in layers:
        key = tuple(map(id, layer.parts))
        by_id[key] += 1
        if key not in first:
            first[key] = layer
    by_value: Counter = Counter()  # ... then the few distinct objects by value
    shown: dict[tuple, LayerSpec] = {}
    for key, n in by_id.items():
        parts = first[key].parts
        by_value[parts] += n
        shown.setdefault(parts, first[key])
    return Grouped((shown[parts], n) for parts, n in by_value.items())


class Costs:
    """The context-independent terms of some layers at one precision and TP, computed once.

    M(S) = ``memory_fixed`` + Σ coefficient·n_rule(S) over the distinct entry rules, and r(S) likewise;
    a figure at S then costs one evaluation per distinct rule (a handful), whatever the depth.
    Exact: the same integers and fractions as summing every part's figure.
    """

    def __init__(self, layers: Grouped, p: Precision, tp: int) -> None:
        memory: dict[Rule, object] = {}
        read: dict[Rule, object] = {}
        self.memory_fixed = self.read_fixed = 0
        self.alpha = self.gamma = self.recurrent = 0
        for layer, n in layers:
            for part in layer.parts:
                entry, state = part.entry_bytes(p, tp), part.state_bytes(p, tp)
                self.memory_fixed += n * state
                if part.copies and entry:
                    rule = part.entry_rule()
                    memory[rule] = memory.get(rule, 0) + n * part.copies * entry
                if entry:
                    rule = part.read_rule()
                    read[rule] = read.get(rule, 0) + n * entry
                if part.reads_state:
                    self.read_fixed += n * state
                if part.recurrent:
                    self.recurrent += n * state
                self.alpha += n * part.slope(p, tp)
                self.gamma += n * part.intercept(p, tp)
        self.memory_terms = tuple((rule, c) for rule, c in memory.items() if c)
        self.read_terms = tuple((rule, c) for rule, c in read.items() if c)

    def memory(self, S: int) -> Fraction:
        """Exact M(S) of one request."""
        return sum((c * count(rule, S) for rule, c in self.memory_terms), self.memory_fixed)

    def read(self, S: int) -> Fraction:
        """r(S) of one request."""
        return sum((c * count(rule, S) for rule, c in self.read_terms), self.read_fixed)

    def memory_at(self, sizes: Sequence[int]) -> list:
        """M(S) for every S of ``sizes`` (the same values as ``memory``, one pass per distinct rule)."""
        return _evaluate(self.memory_terms, self.memory_fixed, sizes)

    def read_at(self, sizes: Sequence[int]) -> list:
        """r(S) for every S of ``sizes``."""
        return _evaluate(self.read_terms, self.read_fixed, sizes)


def _evaluate(terms: tuple, fixed: object, sizes: Sequence[int]) -> list:
    """fixed + Σ c·n_rule(S) for each S: a list pass per rule instead of a call per rule and S."""
    totals = [fixed] * len(sizes)
    for (div, cap), c in terms:
        if div == 0:
            totals = [t + c * cap for t in totals]
            continue
        n = sizes if div == 1 else [S // div for S in sizes]
        if cap is not None:
            n = [x if x < cap else cap for x in n]
        totals = [t + c * x for t, x in zip(totals, n)]
    return totals


def costs(layers: Layers, p: Precision, tp: int = 1) -> Costs:
    """The ``Costs`` of ``layers`` at ``p`` and ``tp``; kept on a ``Grouped`` for its next caller."""
    grouped = group(layers)
    cache = grouped.__dict__.setdefault("costs", {})
    found = cache.get((p, tp))
    if found is None:
        found = cache[(p, tp)] = Costs(grouped, p, tp)
    return found


def request_bytes(layers: Layers, S: int, p: Precision, tp: int = 1) -> Fraction:
    """Exact M(S) of one request at context S."""
    return costs(layers, p, tp).memory(S)


def read_bytes(layers: Layers, S: int, p: Precision, tp: int = 1) -> Fraction:
    """r(S): bytes one decode step of one request reads."""
    return costs(layers, p, tp).read(S)


def alpha(layers: Layers, p: Precision, tp: int = 1) -> Fraction:
    """α: bytes per token of context once S is past every window."""
    return costs(layers, p, tp).alpha


def gamma(layers: Layers, p: Precision, tp: int = 1) -> Fraction:
    """γ: bytes per request that do not grow with S (full windows plus fixed state)."""
    return costs(layers, p, tp).gamma


def crossover(alpha_: Fraction, gamma_: Fraction) -> Fraction | None:
    """S* = γ/α, where a request's fixed cost equals its per-token cost; None when α = 0."""
    return None if alpha_ == 0 else Fraction(gamma_) / alpha_


def recurrent_state_bytes(layers: Layers, p: Precision, tp: int = 1) -> Fraction:
    """Σ C over the recurrent parts (linear, Mamba, conv): what a state snapshot costs."""
    return costs(layers, p, tp).recurrent


def prefix_cache_extra(state: Fraction, prefix_tokens: int, snapshot_interval: int) -> Fraction:
    """Extra bytes for state snapshots of a cached prefix: floor(P/Δ)·C."""
    if snapshot_interval <= 0:
        raise ValueError("snapshot interval must be positive")
    return (prefix_tokens // snapshot_interval) * state


def speculative_extra(state: Fraction, draft_tokens: int) -> Fraction:
    """Extra bytes while d draft tokens are verified: d·C."""
    return draft_tokens * state


def max_concurrency(budget: int, per_request: Fraction) -> int | None:
    """B_max = floor(budget / M): requests that fit; None when a request costs nothing."""
    if per_request <= 0:
        return None
    return int(budget // per_request)


def max_context(
    layers: Layers, budget: int, batch: int, p: Precision, tp: int = 1, extra: Fraction = Fraction(0)
) -> int | None:
    """Largest S with batch·(M(S) + extra) ≤ budget.

    0 when not even one token fits; None when the memory stops growing before ``SEARCH_LIMIT``
    (every layer is windowed or recurrent), i.e. any context fits.
    """

    memory = costs(layers, p, tp).memory

    def fits(S: int) -> bool:
        return batch * (memory(S) + extra) <= budget

    if not fits(1):
        return 0
    lo, hi = 1, 2
    while fits(hi):  # M(S) is non-decreasing, so an exponential probe brackets the answer
        lo, hi = hi, hi * 2
        if hi > SEARCH_LIMIT:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def equivalent_tokens(state: Fraction, entry_bytes_per_token: Fraction) -> Fraction | None:
    """S_eq: the context at which a full-attention layer's cache equals a fixed state C."""
    if entry_bytes_per_token <= 0:
        return None
    return Fraction(state) / entry_bytes_per_token


def as_number(value: Fraction | None) -> int | float | None:
    """An int when the figure is integral, else a float (JSON-friendly)."""
    if value is None or type(value) is int:
        return value
    value = Fraction(value)
    return int(value) if value.denominator == 1 else float(value)


def fullest_stage(layers: Sequence, pp: int, p: Precision, tp: int = 1) -> tuple[int, list]:
    """(index, layers) of the pipeline stage that holds the most per request: the largest α, then γ."""
    cut = stages(layers, pp)
    index = max(range(len(cut)), key=lambda i: (alpha(group(cut[i]), p, tp), gamma(group(cut[i]), p, tp)))
    return index, cut[index]
