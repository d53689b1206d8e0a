"""What differs between SGLang releases in the start-up arithmetic, as data: ``releases.tsv`` beside
this module, one row per span of releases (``hfkv.engines.versions`` finds the row of a version).

Each column is a field of ``RuleSet``; its docstring names the release file and function the rule
lives in (read from the released wheels, docs/engine-versions.md). The code asks
``rules(version).<field>``, never a version number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hfkv.engines.tables import choice, yes_no
from hfkv.engines.versions import rule_set


def _tier(cell: str) -> tuple[int, int, int]:
    chunk, small_tp, large_tp = (int(part) for part in cell.split("/"))
    return chunk, small_tp, large_tp


def _fractions(cell: str) -> tuple[tuple[int, float], ...]:
    """``16:0.79,8:0.81,4:0.85,2:0.87,1:0.88``: (minimum TP × PP, fraction), largest first."""
    pairs = tuple((int(size), float(value)) for size, value in (item.split(":") for item in cell.split(",")))
    if [size for size, _ in pairs] != sorted((size for size, _ in pairs), reverse=True) or pairs[-1][0] != 1:
        raise ValueError(f"{cell!r}: sizes must fall to 1")
    return pairs


@dataclass(frozen=True)
class RuleSet:
    """The rules of one span of SGLang releases."""

    first: str
    """First release of the span (inclusive)."""
    until: str
    """First release the span does not cover."""
    label: str
    """The span as said to a user ("0.5.10–0.5.13")."""
    newest: str
    """The release of the span whose code these rules were read from."""
    fraction_rule: str
    """How ``mem_fraction_static`` defaults (``server_args.py`` ``ServerArgs.__post_init__`` until 0.5.2,
    ``_handle_gpu_memory_settings`` from 0.5.3, ``arg_groups/memory_hook.py`` from 0.5.19): ``tp-table``
    (≤ 0.4.7: a fraction by TP × PP size, column ``tp_fractions``, raised on a GPU above 96 GiB by
    ``min(m + 48·1024·(1 − m)/G, (G − 18·1024)/G)``), ``tiered`` (0.4.8–0.5.2: ``round((G − R)/G, 3)``
    with R by GPU tier: (2.8 + p/10)·1024 below 35 GiB, (9.5 + p/2)·1024 below 90, (12 + p/2)·1024 below
    160, else 32·1024 MiB, p = TP × PP, + 4 GiB with DP attention) or ``reserve`` (0.5.3 on:
    ``round((G − R)/G, 3)``, R = 512 + 1.5·max(chunk, 2048) + graphs + TP·PP/8·1024 MiB, at least
    10,240 above 60 GiB)."""
    tp_fractions: tuple[tuple[int, float], ...]
    """The ``tp-table`` fractions by TP × PP size (unused otherwise)."""
    tier_20_35: tuple[int, int, int]
    """Chunked prefill size and decode CUDA-graph max batch (TP < 4, TP ≥ 4) on a 20–35 GiB GPU:
    2048 / 16 / 80 in 0.5.3–0.5.4, 2048 / 24 / 80 in 0.5.5–0.5.19, 4096 / 48 / 160 from 0.5.20."""
    speculative_reserve_mib: int
    """MiB the fraction's reserve adds for EAGLE-style speculative decoding: 2,048 until 0.5.9, 4,096 in
    0.5.10–0.5.13, none from 0.5.14 (the draft KV is sized in the pool)."""
    prefill_graph: bool
    """The breakable (piecewise) prefill graph is on by default and reserved for (8 MiB per captured
    size, 1,536 MiB for MLA models): from 0.5.10 (opt-in before); never on ROCm."""
    mamba_ssm_dtype: str
    """``--mamba-ssm-dtype``'s default: ``float32`` until 0.5.8.post1, ``config`` (the model config's
    ``mamba_ssm_dtype``, else float32: ``configs/mamba_utils.py``) from 0.5.9."""
    decode_graph_capped: bool
    """The default decode-graph batch of the reserve is capped at ``--max-running-requests`` (0.5.23)."""
    source: str
    """Where the span's rules were read."""


PARSERS: dict[str, Callable[[str], Any]] = {
    "newest": str,
    "fraction_rule": choice("tp-table", "tiered", "reserve"),
    "tp_fractions": _fractions,
    "tier_20_35": _tier,
    "speculative_reserve_mib": int,
    "prefill_graph": yes_no,
    "mamba_ssm_dtype": choice("float32", "config"),
    "decode_graph_capped": yes_no,
    "source": str,
}


def rules(version: str | None) -> RuleSet:
    """The rule set of SGLang ``version`` (None: the newest modelled release)."""
    return rule_set("sglang", version)
