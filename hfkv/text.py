"""How text hfkv did not write is shown: config values, repo ids, Hub messages, a visitor's input.

Such text may hold a newline that forges a line, a bidirectional override that reorders what a
reader sees, markup, a link, a spreadsheet formula or a token. One rule for characters serves every
output: a character ``str.isprintable`` refuses (controls, NUL, line breaks, format characters such
as U+202E) is shown as its Python escape (``\\n``, ``\\x00``, ``\\u202e``), and every value
registered with ``add_secret`` is replaced by ``<token>``. Each output then adds its own syntax:

* ``one_line``: a terminal or log line, an error message;
* ``lines``: a whole document that keeps its own line breaks (a Markdown file);
* ``markup``: text or an attribute value in HTML or SVG;
* ``markdown_cell``: a Markdown table cell or list item (no HTML, no pipe, no live link or image);
* ``spreadsheet_cell``: a CSV cell no spreadsheet runs as a formula.
"""

from __future__ import annotations

import html
from typing import Any

_SECRETS: set[str] = set()  # every token hfkv sends, and the user:password of the endpoint


def add_secret(value: str) -> None:
    """Never print ``value``: ``redact`` (and so every function here) replaces it.

    Values shorter than 4 characters are not registered: replacing "a" everywhere would say nothing
    and mangle every message."""
    if isinstance(value, str) and len(value) >= 4:
        _SECRETS.add(value)


def forget_secret(value: str) -> None:
    """Stop redacting ``value`` (a visitor's token once their request is over: the set stays bounded)."""
    _SECRETS.discard(value)


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``<token>`` (longest first)."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "<token>")
    return text


def _escape(text: str) -> str:
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def one_line(text: Any) -> str:
    """``text`` redacted, every unprintable character (newline included) shown as its escape: one line."""
    return _escape(redact(str(text)))


def lines(text: Any) -> str:
    """``one_line`` for each line of ``text``, its ``\\n`` kept: a document that cannot hide or reorder text."""
    return "\n".join(one_line(line) for line in str(text).split("\n"))


def markup(text: Any) -> str:
    """``one_line``, then ``& < > " '`` escaped: safe as HTML or SVG text and inside a quoted attribute."""
    return html.escape(one_line(text), quote=True)


def markdown_cell(text: Any) -> str:
    """``one_line``, then made inert in Markdown: no HTML (``< > &`` escaped), no pipe to split a table
    cell, no live link or image (``[text](url)``, ``![](url)``: the brackets escaped), a backslash
    doubled first so that it cannot undo those escapes; runs of spaces collapsed."""
    value = one_line(text).replace("\\", "\\\\")
    value = html.escape(value, quote=False).replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")
    return " ".join(value.split())


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(text: Any) -> str:
    """``one_line``, with a quote in front of a cell a spreadsheet would run as a formula (one that
    starts with = + - @, a tab or a carriage return, before or after the escapes)."""
    value = one_line(text)
    return "'" + value if value.startswith(FORMULA_STARTS) or str(text).startswith(FORMULA_STARTS) else value
