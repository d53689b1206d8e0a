"""Exceptions hfkv raises. Every message is one line meant for a person.

Exit codes used by the CLI: ``ConfigError`` and ``UsageError`` give 2, ``SourceError`` (a repo or
file that could not be fetched or read) gives 1.
"""

from __future__ import annotations

import re

from hfkv.text import one_line


class HfkvError(Exception):
    """Base class of every error hfkv raises on purpose."""

    exit_code = 1
    kind = "error"

    def __init__(self, message: str, *, source: str | None = None) -> None:
        message = bounded(str(message))  # a 100 KB value from a config is quoted, not echoed whole
        super().__init__(message)
        self.message = message
        self.source = source

    def __str__(self) -> str:
        text = f"{shorten(self.source)}: {self.message}" if self.source else self.message
        return one_line(text)

    def row_text(self) -> str:
        """``"<kind>: <message>"`` for a scan row or a JSON error object (no source, one line)."""
        return one_line(f"{self.kind}: {self.message}")

    def with_source(self, source: str) -> "HfkvError":
        """Name the file or repo the error belongs to, unless one is named already."""
        if self.source is None:
            self.source = source
        return self


NAME_LIMIT = 120  # characters of a file or repo name shown in a message
QUOTE_LIMIT = 200  # characters of one value quoted in a message (a layer type, a string from a config)
ITEMS_LIMIT = 8  # items of a list shown in a message; the rest are counted
LINE_LIMIT = 2000  # characters of a whole message, whatever it holds


def cut(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` when short; else its start and end around '…' and its length: 'xxx…xxx (100,000 characters)'."""
    if len(text) <= limit:
        return text
    keep = max(limit - 30, 10)
    return f"{text[: keep * 2 // 3]}…{text[len(text) - keep // 3:]} ({len(text):,} characters)"


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` for a message, bounded (``cut``); a list or tuple shows its first items and counts
    the rest (``summarise``)."""
    if isinstance(value, (list, tuple)) and len(value) > ITEMS_LIMIT:
        return "[" + summarise([repr(v) for v in value]) + "]"
    return cut(repr(value), limit)


def summarise(items: "list[str] | tuple[str, ...]", limit: int = ITEMS_LIMIT) -> str:
    """'a, b, c' for a short list; 'a, b, … and 1,234 more' past ``limit`` items (each item ``cut``)."""
    shown = [cut(str(item)) for item in items[:limit]]
    rest = len(items) - len(shown)
    return ", ".join(shown) + (f", … and {rest:,} more" if rest > 0 else "")


# Patterns of ``bounded``, as re source: compiled (and cached by ``re``) only when a long message comes.
_INNER_LIST = r"\[([^\[\]]*)\]"
_QUOTED = r"'[^']*'|\"[^\"]*\""
_LONG_RUN = r"\S{%d,}" % (QUOTE_LIMIT + 1)


def _cut_quoted(text: str) -> str:
    """''xxx…xxx' (100,000 characters)': the quotes kept around the shortened value, its length after them."""
    inner = text[1:-1]
    keep = QUOTE_LIMIT - 30
    return f"{text[0]}{inner[: keep * 2 // 3]}…{inner[len(inner) - keep // 3:]}{text[-1]} ({len(inner):,} characters)"


def bounded(text: str) -> str:
    """``text`` with nothing unbounded in it, whoever built it: a bracketed list of more than
    ``ITEMS_LIMIT`` items shows its first ones and counts the rest, a quoted value or a run of
    characters without a space longer than ``QUOTE_LIMIT`` is ``cut``, and the whole is at most about
    ``LINE_LIMIT`` characters. Short messages come back unchanged."""
    if len(text) <= QUOTE_LIMIT:
        return text

    def fewer(match: re.Match) -> str:
        items = match.group(1).split(", ")
        return match.group(0) if len(items) <= ITEMS_LIMIT else "[" + summarise(items) + "]"

    text = re.sub(_INNER_LIST, fewer, text)
    text = re.sub(_QUOTED, lambda m: m.group(0) if len(m.group(0)) <= QUOTE_LIMIT + 2 else _cut_quoted(m.group(0)), text)
    text = re.sub(_LONG_RUN, lambda m: cut(m.group(0)), text)
    return cut(text, LINE_LIMIT)


def shorten(name: str, limit: int = NAME_LIMIT) -> str:
    """``name`` cut in the middle with an ellipsis when longer than ``limit`` (its start and its end
    are what tell two names apart)."""
    text = str(name)
    if len(text) <= limit:
        return text
    keep = limit - 1
    return text[: keep - keep // 3] + "…" + text[len(text) - keep // 3:]


class ConfigError(HfkvError):
    """A config.json that hfkv cannot turn into layer specs (missing, mistyped or absurd keys)."""

    exit_code = 2
    kind = "config"

    def __init__(self, key: str | None, problem: str, *, source: str | None = None) -> None:
        self.key = key
        text = f"key '{key}': {problem}" if key else problem
        super().__init__(text, source=source)


class UnsupportedModelError(ConfigError):
    """A model hfkv recognises but does not account for (encoder-decoder, encoder-only, ...)."""

    kind = "unsupported"

    def __init__(self, problem: str, *, source: str | None = None) -> None:
        super().__init__(None, problem, source=source)

    def __str__(self) -> str:
        return one_line(f"{shorten(self.source)}: unsupported: {self.message}" if self.source else f"unsupported: {self.message}")

    def at_release(self, engine: str, release: str) -> UnsupportedModelError:
        """This error naming the engine release whose rules decided (a message that starts with the
        engine's name, "vLLM would refuse …", becomes "vLLM 0.22.1 would refuse …"); returns self."""
        if self.message[len(engine):len(engine) + 1] in (" ", ":", "'") and self.message.startswith(engine) \
                and not self.message.startswith(release):
            self.message = release + self.message[len(engine):]
        return self


class SourceError(HfkvError):
    """The config could not be obtained: missing file, Hub failure, not JSON, too large."""

    exit_code = 1

    def __init__(self, kind: str, message: str, *, source: str | None = None) -> None:
        super().__init__(message, source=source)
        self.kind = kind


class UsageError(HfkvError):
    """Bad command-line or API arguments."""

    exit_code = 2
    kind = "usage"


class WriteError(HfkvError):
    """The system refused a write hfkv had to make (a full disk, a read-only folder, a busy file):
    not bad usage, so exit 1, like a model that could not be fetched."""

    exit_code = 1
    kind = "write"


def system_refusal(err: OSError, doing: str = "") -> str:
    """One line for an ``OSError`` (``doing``: what hfkv was doing, e.g. "cannot write PATH"); the
    system's own words, never a traceback."""
    reason = err.strerror or type(err).__name__
    if doing:
        return f"{doing}: {reason}"
    if err.filename is not None:
        return f"{shorten(err.filename)}: {reason}"
    return reason
