"""Axis helpers shared by the charts (matplotlib plots and the HTML pages' SVG): binary units and
power-of-two ticks. Pure and dependency-free, so that drawing an axis loads nothing of the report stack."""

from __future__ import annotations

import math

from hfkv.units import format_bytes


def short_bytes(value: float) -> str:
    """'4.5 MiB', '36 KiB', '1 GiB': format_bytes without trailing zeros."""
    number, unit = format_bytes(value).split(" ")
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    return f"{number} {unit}"


def binary_unit(largest: float) -> tuple[int, str]:
    """(divisor, name) of the binary unit that suits values up to ``largest``."""
    for power, name in ((4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB")):
        if largest >= 1024**power:
            return 1024**power, name
    return 1, "B"


def power_of_two_ticks(lo: float, hi: float, most: int = 8) -> list[float]:
    """Powers of two spanning [lo, hi], thinned to at most ``most`` (aligned, so 1 KiB/1 MiB stay)."""
    first, last = math.floor(math.log2(max(lo, 1))), math.ceil(math.log2(max(hi, 1)))
    step = max(1, math.ceil((last - first + 1) / most))
    return [2.0**e for e in range(first, last + 1) if e % step == 0]
