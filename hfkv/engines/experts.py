"""Both engines' MoE blocks refuse, while the model is built, a tensor-parallel size above the number of
routed experts (``if self.tp_size > config.num_experts: raise ValueError("Tensor parallel size 8 is greater
than the number of experts 4.")``: vLLM's ``qwen3_moe.py``, ``qwen2_moe.py``, ``minimax_m2.py``, ...;
SGLang's ``qwen3_moe.py``, ``deepseek_v2.py``, ``glm4_moe.py``, ...). Which block checks which config key
at which TP is data, the ``tp_experts`` column of each engine's table, read from the engines' sources by
``tests/oracles/tp-experts.py``; this module reads a cell and applies it to a config.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

NONE = "none"
UNKNOWN = "?"
TP_KINDS = ("tp", "moe_tp")  # the TP group's world size; SGLang's moe_tp_size (TP over the expert-parallel size)


class ExpertsCheck(NamedTuple):
    """One MoE block's check: the config ``key`` it compares the TP with (the max of a list when
    ``take_max``), the TP it compares (``tp``, ``moe_tp``; None when unknown), its class ``cls``."""

    key: str
    take_max: bool
    tp: str | None
    cls: str


def parse(cell: str) -> tuple[ExpertsCheck, ...] | None:
    """A ``tp_experts`` cell: ``<key>@<tp>:<Class>`` joined by ``,`` (key ``max:<k>`` for a list's max,
    tp ``tp``, ``moe_tp`` or ``?``); ``none`` (empty: no block checks) or ``?`` (None: not read)."""
    if cell == UNKNOWN:
        return None
    if cell == NONE:
        return ()
    out = []
    for item in cell.split(","):
        key, _, rest = item.partition("@")
        tp, _, cls = rest.partition(":")
        take_max = key.startswith("max:")
        key = key.removeprefix("max:")
        if not re.fullmatch(r"\w+", key) or tp not in (*TP_KINDS, UNKNOWN) or not cls:
            raise ValueError(f"malformed tp_experts entry {item!r}")
        out.append(ExpertsCheck(key, take_max, None if tp == UNKNOWN else tp, cls))
    return tuple(out)


def experts(config: dict, check: ExpertsCheck) -> tuple[int, Any] | None:
    """(the expert count the block compares, the value as the engine prints it), or None when the config
    gives no positive count (a dense config of the class builds no MoE block)."""
    value = config.get(check.key)
    numbers = value if check.take_max and isinstance(value, list) else [value]
    numbers = [n for n in numbers if isinstance(n, int) and not isinstance(n, bool)]
    if not numbers or max(numbers) <= 0:
        return None
    return max(numbers), value


def refusal(checks: tuple[ExpertsCheck, ...] | None, config: dict, sizes: dict[str, int]) -> str | None:
    """The engine's message when every block the table lists refuses (a class the entry only may build
    makes no claim alone), else None; a check of unknown TP, or with no expert count, refuses nothing."""
    if not checks:
        return None
    failures = []
    for check in checks:
        found = experts(config, check)
        if check.tp is None or found is None or sizes[check.tp] <= found[0]:
            return None
        failures.append((check, sizes[check.tp], found[1]))
    check, tp, value = failures[0]
    return f"Tensor parallel size {tp} is greater than the number of experts {value}. ({check.cls}, config.{check.key})"
