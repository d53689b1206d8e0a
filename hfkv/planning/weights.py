"""Weights per GPU for a parallel layout, and what one decode step reads of them.

The whole-model bytes come from the report's ``weights`` section (the checkpoint's figures, else the
estimate from the config: ``hfkv.model.weights``). How they split over a layout needs the bytes by
role, which only the estimate gives: routed experts are divided by the expert shards (EP or TP),
attention by the attention TP (TP / DP under DP attention), everything else by TP, and each stage
of a pipeline holds its share of the layers. With exact bytes from the checkpoint the estimate's
role shares split them; with neither, no split is claimed. Experts an engine pads per rank (MXFP4 under
vLLM's Marlin backend) grow again when TP slices them: each rank pads its own slice
(``hfkv.model.weights.shards``), which an even split of the whole-model bytes does not show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Callable

from hfkv.engines.layout import Layout, expert_count

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hfkv.model.report import Report


@dataclass(frozen=True)
class Shares:
    """Fractions of the weights' bytes by how a layout divides them (exact, from the estimate's roles)."""

    experts: Fraction  # routed experts (an MTP block's experts count with the rest: it is not sharded here)
    attention: Fraction
    # bytes one of N TP ranks holds beyond 1/N of the padded experts (each rank pads its own slice), by N
    shard_padding: Callable[[int], int] = field(default=lambda shards: 0, compare=False)
    # (role, the most ranks that split them, share of the bytes): tensors TP splits fewer ways than it
    # has ranks (held whole: 1; a key/value projection of K heads: K)
    limited: tuple[tuple[str, int, Fraction], ...] = ()

    @property
    def rest(self) -> Fraction:
        return 1 - self.experts - self.attention


def shares(report: Report) -> Shares | None:
    """The byte shares of ``report``'s weights by role; None when the estimate could not price them."""
    section = report.extra.get("weights") or {}
    roles = section.get("roles") or {}
    total = sum(role["bytes"] for role in roles.values())
    if not total:
        return None
    split = Shares(experts=Fraction(roles.get("routed_experts", {}).get("bytes", 0), total),
                   attention=Fraction(roles.get("attention", {}).get("bytes", 0), total))
    estimate = report.weights_estimate
    if not hasattr(estimate, "tensors"):  # the estimate could not price the config: the roles came from elsewhere
        return split
    from hfkv.model.weights.shards import limited_splits, shard_padding

    config = report.root_config or {}
    whole = sum(role.bytes for role in estimate.breakdown.values())
    limited = tuple((role, most, Fraction(size, whole)) for (role, most), size in
                    sorted(limited_splits(estimate, config).items())) if whole else ()
    padding = (lambda shards: shard_padding(estimate, config, shards)) if estimate.padding else split.shard_padding
    return Shares(split.experts, split.attention, padding, limited)


def per_gpu(weights_bytes: int, layout: Layout, split: Shares | None) -> tuple[int, str]:
    """(weights on one GPU of the fullest stage, how): routed experts ÷ the expert shards, attention ÷
    attention TP, the rest ÷ TP, all ÷ PP. With one divisor for everything the split is exact:
    ceil(w / (TP × PP)); otherwise it needs ``split`` (without one, every byte is divided by TP: an
    under-count the text says)."""
    padding = _rank_padding(layout, split)
    held = _held_beyond_share(int(weights_bytes), layout, split)
    extra = (f"; plus {padding:,} B of padded experts a rank holds beyond its share (each of the {layout.tp} TP "
              "ranks pads its own slice of every expert, as vLLM's Marlin MXFP4 backend does)") if padding else ""
    if held:
        extra += (f"; plus {held:,} B of tensors TP does not split {layout.tp} ways (norms, routers, MLA's "
                   "down-projections and DSA's indexer held whole by every rank; key/value heads replicated when "
                   "TP exceeds them)")
    if layout.expert_shards == layout.attention_tp == layout.tp:
        return (-(-int(weights_bytes) // (layout.tp * layout.pp)) + padding + held,
                "weights per GPU = weights / (TP × PP)" + extra)
    if split is None:
        return (-(-int(weights_bytes) // (layout.tp * layout.pp)),
                "weights per GPU = weights / (TP × PP): the split by role is unknown (the estimate could not "
                "price this config), so experts and attention are assumed to divide like the rest")
    w = int(weights_bytes)
    bytes_ = (w * split.experts / layout.expert_shards + w * split.attention / layout.attention_tp
              + w * split.rest / layout.tp) / layout.pp
    how = (f"weights per GPU = (routed experts {float(split.experts):.1%} ÷ {layout.expert_shards} + attention "
           f"{float(split.attention):.1%} ÷ {layout.attention_tp} + the rest ÷ {layout.tp}) ÷ PP {layout.pp}: the "
           "shares from the estimate's split by role; the embeddings' placement on the first and last stage is "
           "not modelled")
    return math.ceil(bytes_) + padding + held, how + extra


def _held_beyond_share(weights_bytes: int, layout: Layout, split: Shares | None) -> int:
    """Bytes one GPU holds beyond its even share of the tensors TP splits fewer ways than its ranks:
    a tensor split at most m ways, in a role split d ways, costs w × share × (1/min(d, m) − 1/d)."""
    if split is None or not split.limited:
        return 0
    divisors = {"routed_experts": layout.expert_shards, "attention": layout.attention_tp}
    extra = Fraction(0)
    for role, most, share in split.limited:
        d = divisors.get(role, layout.tp)
        if d > most:
            extra += weights_bytes * share * (Fraction(1, most) - Fraction(1, d))
    return math.ceil(extra / layout.pp)


def _rank_padding(layout: Layout, split: Shares | None) -> int:
    """Padded experts' bytes one GPU holds beyond its even share: TP slices every expert (no EP), and
    each rank pads its slice; under EP the experts go whole, padded as at TP 1."""
    if split is None or layout.expert_parallel or layout.tp <= 1:
        return 0
    return -(-split.shard_padding(layout.tp) // layout.pp)


def active_bytes(weights_bytes: int, report: Report) -> tuple[int, str] | None:
    """(weights one decode step reads, how) for a MoE model: every non-expert weight plus
    ``num_experts_per_tok / experts`` of the routed ones; None for a dense model or an unknown split."""
    config = report.config or {}
    experts, top_k = expert_count(config), config.get("num_experts_per_tok")
    split = shares(report)
    if not experts or not isinstance(top_k, int) or split is None or not split.experts:
        return None
    active = math.ceil(weights_bytes * (1 - split.experts + split.experts * Fraction(top_k, experts)))
    return active, (f"decode reads the non-expert weights and {top_k} of {experts} routed experts per token "
                    f"(an estimate; pass weights_read_bytes for the measured figure)")
