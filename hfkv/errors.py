"""Exceptions hfkv raises. Every message is one line meant for a person.

Exit codes used by the CLI: ``ConfigError`` and ``UsageError`` give 2, ``SourceError`` (a repo or
file that could not be fetched or read) gives 1.
"""

from __future__ import annotations


class HfkvError(Exception):
    """Base class of every error hfkv raises on purpose."""

    exit_code = 1
    kind = "error"

    def __init__(self, message: str, *, source: str | None = None) -> None:
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


def shorten(name: str, limit: int = NAME_LIMIT) -> str:
    """``name`` cut in the middle with an ellipsis when longer than ``limit`` (its start and its end
    are what tell two names apart)."""
    text = str(name)
    if len(text) <= limit:
        return text
    keep = limit - 1
    return text[: keep - keep // 3] + "…" + text[len(text) - keep // 3:]


_SECRETS: set[str] = set()  # every token hfkv sends, and the user:password of the endpoint


def add_secret(value: str) -> None:
    """Never print ``value``: ``redact`` (and so every message of an ``HfkvError``) replaces it.

    Values shorter than 4 characters are not registered: replacing "a" everywhere would say nothing
    and mangle every message."""
    if isinstance(value, str) and len(value) >= 4:
        _SECRETS.add(value)


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``<token>`` (longest first)."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "<token>")
    return text


def one_line(text: str) -> str:
    """Control characters escaped (a repo id from the Hub may hold a newline): never a forged line;
    secrets (``add_secret``) redacted."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in redact(str(text)))


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
