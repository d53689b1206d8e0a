"""The engines' facts tables: how a TSV of one row per architecture (or model type) is read into typed,
frozen records. Each engine's ``facts.py`` names its columns and their parsers; the loading, the
checks and the common cell kinds are here, once.

A table's first line names its columns, which must be exactly the record's fields; every cell goes
through its column's parser, which returns the typed value or raises ValueError. A bad cell is an
error naming the table, the line and the column: a fact nobody has read cannot be loaded.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Callable, Iterable

YES_NO = {"yes": True, "no": False}


def read_table(path: Path) -> tuple[list[str], list[list[str]]]:
    """The header and the rows of a TSV table (cells as text)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:] if line.strip()]


def parse_rows(path: Path, parsers: dict[str, Callable[[str], Any]], record: type) -> Iterable[Any]:
    """One ``record`` per row, each cell through its column's parser; a ValueError names the table,
    the line and the column of a bad cell, or the header that does not hold the record's fields."""
    header, rows = read_table(path)
    wanted = [f.name for f in fields(record)]
    if sorted(header) != sorted(wanted):
        raise ValueError(f"{path.name}: columns {header} are not {wanted}")
    for number, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise ValueError(f"{path.name} line {number}: {len(row)} cells for {len(header)} columns")
        values = {}
        for column, cell in zip(header, row):
            try:
                values[column] = parsers[column](cell)
            except ValueError as error:
                raise ValueError(f"{path.name} line {number}, column {column}: {error}") from None
        yield record(**values)


def choice(*allowed: str) -> Callable[[str], str]:
    """A parser accepting exactly the ``allowed`` words."""
    def parse(cell: str) -> str:
        if cell not in allowed:
            raise ValueError(f"{cell!r} is not one of {', '.join(allowed)}")
        return cell
    return parse


def yes_no(cell: str) -> bool:
    """``yes`` or ``no``."""
    if cell not in YES_NO:
        raise ValueError(f"{cell!r} is not yes or no")
    return YES_NO[cell]
