"""config.json bytes to a config dict, whatever the source: size limit, encodings, JSON shape, and the
one-line refusals of anything else; ``LoadedConfig`` is the parsed dict with where it came from."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from hfkv.errors import ConfigError, SourceError
from hfkv.text import one_line
from hfkv.units import format_bytes

# Real quantised configs reach several MB (MiniMax-M3: 3 MB); anything past this is not a config.
MAX_CONFIG_BYTES = 32 * 1024 * 1024
# Levels of nested objects and arrays a config may hold: real ones hold at most 7 (Kimi-K3's
# quantization_config); deeper ones would exhaust Python's recursion wherever they are copied or encoded.
MAX_DEPTH = 100


@dataclass(frozen=True)
class LoadedConfig:
    """A parsed config and where it came from."""

    name: str
    data: Any
    source: str  # "file" or "hub"
    commit: str | None = None
    revision: str | None = None
    warnings: tuple[str, ...] = ()  # how it was read, when the report should say (a stale cached copy)
    folder: str | None = None  # a local config's folder, where its safetensors files may be


_JSON_TYPES = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
               list: "an array"}
# Byte-order marks and the zero-byte patterns of a file starting with '{' or whitespace, per encoding.
_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32 (little-endian)"), (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)"),
         (b"\xff\xfe", "UTF-16 (little-endian)"), (b"\xfe\xff", "UTF-16 (big-endian)"))
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def size_text(size: int) -> str:
    """'40.00 MiB (41,943,040 bytes)': a size a person reads, with the exact count ('218 bytes' below 1 KiB)."""
    return f"{size:,} bytes" if size < 1024 else f"{format_bytes(size)} ({size:,} bytes)"


def too_large(size: int | None, name: str) -> SourceError:
    """The one-line refusal of a config over ``MAX_CONFIG_BYTES`` (``size`` None: not announced)."""
    limit = format_bytes(MAX_CONFIG_BYTES)
    what = f"config.json is {size_text(size)}" if size is not None else "config.json is larger"
    return SourceError("too-large", f"{what}, over the {limit} limit", source=name)


def parse_config_bytes(raw: bytes, name: str, *, size: int | None = None) -> Any:
    """The JSON object of a config.json, as data; refused with one line naming ``name`` otherwise.

    ``size``: the file's real size when ``raw`` was read with a bound (``raw`` is then cut at
    the limit). Refused: over ``MAX_CONFIG_BYTES`` (``too-large``); text not UTF-8, with UTF-16/32
    named as such, or not JSON, or holding a string that is not Unicode (a lone surrogate escape
    such as ``\\ud800``, which no UTF-8 output can hold) (``invalid-json``); JSON that is not an
    object, such as ``null`` (``ConfigError``: a config hfkv cannot read, exit 2).
    """
    if len(raw) > MAX_CONFIG_BYTES:
        raise too_large(size if size is not None else len(raw), name)
    text = _decode(raw, name)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise SourceError("invalid-json", f"config.json is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}", source=name) from None
    except ValueError as err:  # e.g. an integer literal of more than 4300 digits
        raise SourceError("invalid-json", f"config.json holds a value Python will not read ({str(err)[:80]})", source=name) from None
    except RecursionError:  # deeper than Python's own limit (~1,000 levels)
        raise ConfigError(None, f"nested more than {MAX_DEPTH} levels deep; no model config is",
                          source=name) from None
    if not isinstance(data, dict):
        raise ConfigError(None, f"config.json holds {_JSON_TYPES.get(type(data), 'a JSON value')}, not an object",
                          source=name)
    if raw.count(b"{") + raw.count(b"[") > MAX_DEPTH:  # fewer brackets cannot nest deeper (most configs: < 50)
        check_depth(data, name)
    if _SURROGATE_ESCAPE.search(raw):  # only an escape can produce a surrogate: the common case costs one scan
        _refuse_surrogates(data, name)
    return data


def check_depth(data: Any, name: str, limit: int = MAX_DEPTH) -> None:
    """``ConfigError`` (one line naming where) when ``data`` nests objects and arrays more than ``limit``
    levels deep, or holds itself (a dict built in Python may). Iterative: it never recurses itself."""
    # Each entry: (container, its depth, (its key, its parent's entry)); the path is spelled only for the error.
    stack: list[tuple[Any, int, Any]] = [(data, 1, None)]
    while stack:
        value, depth, link = stack.pop()
        if depth > limit:
            raise ConfigError(None, f"nested more than {limit} levels deep (at '{_path(link)}'); no model config is",
                              source=name)
        items = value.items() if isinstance(value, dict) else enumerate(value)
        stack.extend((item, depth + 1, (key, link)) for key, item in items if isinstance(item, (dict, list)))


def _path(link: Any) -> str:
    """'a.b[3].c' from the chain of (key, parent) links, cut in the middle past 80 characters."""
    parts: list[str] = []
    while link is not None:
        key, link = link
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    path = "".join(reversed(parts)).lstrip(".")
    return one_line(path if len(path) <= 80 else path[:40] + "…" + path[-39:])


def _decode(raw: bytes, name: str) -> str:
    """UTF-8 text (a UTF-8 byte-order mark is allowed); UTF-16/32 and other bytes named as such.

    UTF-16/32 are recognised before decoding: without a byte-order mark, an ASCII config in
    UTF-16 is valid UTF-8 (letters and NUL bytes), which JSON then rejects with a puzzling message.
    """
    encoding = _other_unicode(raw)
    if encoding:
        raise SourceError("invalid-json", f"config.json is {encoding}, not UTF-8: save it as UTF-8", source=name)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise SourceError("invalid-json", f"config.json is not UTF-8 text (byte {err.start})", source=name) from None


def _other_unicode(raw: bytes) -> str | None:
    """'UTF-16 (little-endian) text ...' when ``raw`` is UTF-16/32: by its byte-order mark, else by
    where the zero bytes of ASCII text fall (JSON text never holds a raw NUL)."""
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            return f"{encoding} text with a byte-order mark"
    head = raw[:4]
    if len(head) < 2 or 0 not in head:
        return None
    patterns = ((b"\x00\x00\x00", 1, "UTF-32 (little-endian)"), (b"\x00\x00\x00", 0, "UTF-32 (big-endian)"))
    for zeros, at, encoding in patterns:
        if len(head) == 4 and head[at:at + 3] == zeros:
            return f"{encoding} text"
    return "UTF-16 (little-endian) text" if head[1] == 0 else "UTF-16 (big-endian) text"


def _refuse_surrogates(data: Any, name: str) -> None:
    """``invalid-json`` naming the first key whose text (key or value) holds a lone surrogate."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                if not _encodable(key):
                    _surrogate_error(where, name)
                stack.append((where, item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(value))
        elif isinstance(value, str) and not _encodable(value):
            _surrogate_error(path, name)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _surrogate_error(where: str, name: str) -> None:
    shown = one_line(where.encode("utf-8", "backslashreplace").decode("ascii", "replace"))[:80]
    raise SourceError("invalid-json", f"config.json holds text that is not valid Unicode (a lone surrogate "
                                      f"escape) at '{shown}'", source=name)
