"""What SGLang 0.5.23 knows per architecture, as data: ``0.5.23.tsv`` beside this module.

One row per ``EntryClass`` of SGLang 0.5.23's ``sglang/srt/models/*.py``: architecture, SGLang module,
``tp_asserts``, ``supports_pp``. The names were read from the released wheel; ``supports_pp`` was asked
of SGLang in its oracle venv (``ModelRunner``'s test: ``pp_proxy_tensors`` among the parameters of the
model's ``forward``). docs/sglang.md says how to regenerate the table when the pinned version moves.

``tp_asserts`` (``tests/oracles/sglang-tp-asserts.py``, docs/sglang.md) is what the attention classes the model
builds assert about TP in their ``__init__``: ``<kind>@<tp>:<Class>`` joined by ``,``, kind ``heads``
(``total_num_heads % tp == 0``), ``kv`` (``kv % tp == 0`` at or above TP, else ``tp % kv == 0``) or
``heads+kv``; tp ``tp`` (the whole TP group), ``attn_tp`` (the attention TP, tp / dp under DP attention)
or ``?``; ``none`` when no class asserts, ``?`` when the classes could not be read.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

TABLE = Path(__file__).resolve().parent / "0.5.23.tsv"
PP_VALUES = {"yes": True, "no": False}


class TpAssert(NamedTuple):
    """One attention class's TP assertions: ``kinds`` among heads / kv, ``tp`` the TP it divides by
    (``tp``, ``attn_tp``, or None when unknown), ``cls`` its SGLang class name."""

    kinds: frozenset[str]
    tp: str | None
    cls: str


def _rows() -> list[list[str]]:
    lines = TABLE.read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in lines[1:] if line.strip()]


@lru_cache(maxsize=None)
def architectures() -> dict[str, str]:
    """architecture -> module of its native model class."""
    return {row[0]: row[1] for row in _rows()}


@lru_cache(maxsize=None)
def pp_support() -> dict[str, bool]:
    """architecture -> whether its model's ``forward`` takes ``pp_proxy_tensors``."""
    return {row[0]: PP_VALUES[row[-1]] for row in _rows()}


@lru_cache(maxsize=None)
def tp_asserts() -> dict[str, tuple[TpAssert, ...] | None]:
    """architecture -> its attention classes' TP assertions (empty: none assert; None: unknown)."""
    return {row[0]: parse_tp_asserts(row[2]) for row in _rows()}


def parse_tp_asserts(value: str) -> tuple[TpAssert, ...] | None:
    """One ``tp_asserts`` cell (the module docstring); ValueError on a malformed one."""
    if value == "?":
        return None
    if value == "none":
        return ()
    out = []
    for item in value.split(","):
        kinds, rest = item.split("@", 1)
        tp, cls = rest.split(":", 1)
        if not set(kinds.split("+")) <= {"heads", "kv"} or tp not in ("tp", "attn_tp", "?") or not cls:
            raise ValueError(f"malformed tp_asserts entry {item!r}")
        out.append(TpAssert(frozenset(kinds.split("+")), None if tp == "?" else tp, cls))
    return tuple(out)
