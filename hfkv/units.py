"""Parsing and printing of sizes and token counts (binary units throughout)."""

from __future__ import annotations

import re
from fractions import Fraction

from hfkv.errors import UsageError

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1024, "kb": 1000, "kib": 1024,
    "m": 1024**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1024**3, "gb": 1000**3, "gib": 1024**3,
    "t": 1024**4, "tb": 1000**4, "tib": 1024**4,
}
_TOKEN_UNITS = {"": 1, "k": 1024, "m": 1024**2}


# A size without a unit below this is refused: "--budget 60" is far likelier to mean 60 GiB than 60 bytes.
PLAIN_BYTES_MIN = 1024**2
# No memory, budget or weight file comes near 2^60 B (1 EiB), nor a context near 2^40 tokens (the longest
# hfkv accounts, hfkv.model.options): past them a figure is a typo. They bound the parsers too, so a
# 400-digit figure is one line, never an overflow in the float arithmetic downstream.
MAX_SIZE_BYTES = 1 << 60
MAX_TOKENS = 1 << 40
# Digits read at most: a figure longer is refused before any arithmetic (Python refuses to convert an
# integer of more than 4,300 digits, which was an "internal error"), and quoted cut.
_MAX_DIGITS = 40


def _figure(text: str, number: str) -> str:
    """The figure as written, for a message: cut in the middle past 24 characters."""
    written = str(text).strip()
    return written if len(written) <= 24 else f"{written[:10]}…{written[-10:]} ({len(number)} digits)"


def parse_size(text: str, notes: list[str] | None = None) -> int:
    """Bytes from '80GiB', '80G' (binary), '80GB' (decimal), '512B' or a plain integer of bytes.

    A plain integer must be at least ``PLAIN_BYTES_MIN`` (1 MiB): below that it is almost surely a
    forgotten unit, and is refused (``UsageError``) with the readings it may have meant; write
    ``60B`` for bytes. A size in a unit is floored to whole bytes (``6.51GiB``, as vLLM prints its KV
    memory, is 6,990,059,274 B; ``notes`` gets one sentence saying so); a fraction of a byte written as
    bytes (``0.3B``) is refused.
    """
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise UsageError(f"cannot read size '{text}' (try 80GiB, 141GB or 1073741824)")
    number, unit = m.group(1), m.group(2)
    if len(number) > _MAX_DIGITS:
        raise UsageError(f"size '{_figure(text, number)}' is past 1 EiB (2^60 B), beyond any memory")
    value = Fraction(number) * _SIZE_UNITS[unit.lower()]
    if value > MAX_SIZE_BYTES:
        raise UsageError(f"size '{_figure(text, number)}' is past 1 EiB (2^60 B), beyond any memory")
    if value <= 0:
        raise UsageError(f"size '{text}' must be positive")
    if value.denominator != 1:
        if _SIZE_UNITS[unit.lower()] == 1 or value < 1:
            raise UsageError(f"size '{text}' is not a whole number of bytes")
        floored = value.numerator // value.denominator
        if notes is not None:
            notes.append(f"{str(text).strip()} = {float(value):,.2f} bytes, floored to {floored:,}")
        value = Fraction(floored)
    if not unit and value < PLAIN_BYTES_MIN:
        raise UsageError(f"size '{number}' has no unit: write {number}GiB or {number}GB (or {number}B if you "
                         "mean bytes)")
    return int(value)


def parse_tokens(text: str) -> int:
    """Tokens from '4k' (4096), '1m' (1048576) or a plain integer."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmM]?)\s*", str(text))
    if not m:
        raise UsageError(f"cannot read token count '{text}' (try 4096, 32k or 1m)")
    if len(m.group(1)) > _MAX_DIGITS:
        raise UsageError(f"token count '{_figure(text, m.group(1))}' is past {MAX_TOKENS:,} (2^40), the longest "
                         "context hfkv accounts")
    value = Fraction(m.group(1)) * _TOKEN_UNITS[m.group(2).lower()]
    if value.denominator != 1 or value <= 0:
        raise UsageError(f"token count '{text}' must be a positive whole number")
    return int(value)


def parse_token_list(text: str) -> list[int]:
    """Comma-separated token counts, deduplicated and sorted."""
    items = [t for t in str(text).split(",") if t.strip()]
    if not items:
        raise UsageError("--context needs at least one length")
    return sorted({parse_tokens(t) for t in items})


def format_gib(n: float | int | Fraction) -> str:
    """'79.19 GiB': always GiB, two decimals, thousands separated (as the engines print a memory figure)."""
    return f"{float(n) / (1 << 30):,.2f} GiB"


def format_bytes(n: float | int | Fraction | None) -> str:
    """'1.50 GiB' style, binary units; exact integers below 1 KiB."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            if unit == "B":
                return f"{value:.0f} B" if value == int(value) else f"{value:.2f} B"
            return f"{value:.2f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_tokens(n: int | None) -> str:
    """'128K' for exact binary multiples, else the plain integer with separators."""
    if n is None:
        return "-"
    for unit, size in (("M", 1024**2), ("K", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n:,}"


def exact_bytes(value: float | int | None) -> str:
    """'36,864 B (36.00 KiB)': exact, with the binary-unit reading when it is 1 KiB or more."""
    if value is None:
        return "-"
    text = f"{value:,.2f}" if isinstance(value, float) and not value.is_integer() else f"{int(value):,}"
    return f"{text} B" if abs(value) < 1024 else f"{text} B ({format_bytes(value)})"
