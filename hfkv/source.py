"""Where a config comes from: a local ``config.json``, a model folder, or a Hub repo id.

``load_config`` returns the parsed dict plus what the report should record (name, commit). Local
files are read here; Hub repos go through ``hfkv.hub`` (imported only when a repo id is given).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import SourceError, UsageError

# Real quantised configs reach several MB (MiniMax-M3: 3 MB); anything past this is not a config.
MAX_CONFIG_BYTES = 32 * 1024 * 1024
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+(@[\w.\-/]+)?$")


@dataclass(frozen=True)
class LoadedConfig:
    """A parsed config and where it came from."""

    name: str
    data: Any
    source: str  # "file" or "hub"
    commit: str | None = None
    revision: str | None = None
    warnings: tuple[str, ...] = ()  # how it was read, when the report should say (a stale cached copy)


def parse_config_bytes(raw: bytes, name: str) -> Any:
    """JSON from bytes, with a size limit; ``SourceError`` naming ``name`` on any problem."""
    if len(raw) > MAX_CONFIG_BYTES:
        raise SourceError("too-large", f"config.json is {len(raw)} bytes, over the {MAX_CONFIG_BYTES}-byte limit", source=name)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise SourceError("invalid-json", f"config.json is not UTF-8 text (byte {err.start})", source=name) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise SourceError("invalid-json", f"config.json is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}", source=name) from None
    except ValueError as err:  # e.g. an integer literal of more than 4300 digits
        raise SourceError("invalid-json", f"config.json holds a value Python will not read ({str(err)[:80]})", source=name) from None
    except RecursionError:
        raise SourceError("invalid-json", "config.json is nested too deeply", source=name) from None


def load_local(path: str | os.PathLike) -> LoadedConfig:
    """A config from a file, or from ``config.json`` inside a folder."""
    p = Path(path)
    name = str(path) or "''"
    try:
        if p.is_dir():
            p = p / "config.json"
            if not p.exists():
                raise SourceError("no-config", "folder has no config.json", source=name)
        if not p.exists():
            raise SourceError("not-found", "no such file", source=name)
        if not p.is_file():  # a FIFO or a device (/dev/zero) would block or never end
            raise SourceError("unreadable", "not a regular file", source=name)
        with p.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)  # bounded even if the file grows while read
    except OSError as err:
        raise SourceError("unreadable", err.strerror or type(err).__name__, source=name) from None
    return LoadedConfig(name=name, data=parse_config_bytes(raw, name), source="file")


def _exists(text: str) -> bool:
    """Path.exists, with names the OS rejects (too long, NUL) meaning "not a local path"."""
    try:
        return Path(text).exists()
    except (OSError, ValueError):
        return False


def looks_like_repo_id(text: str) -> bool:
    return bool(_REPO_ID.match(text)) and not _exists(text)


def split_revision(text: str) -> tuple[str, str | None]:
    """'org/name@rev' -> ('org/name', 'rev')."""
    repo, _, revision = text.partition("@")
    return repo, revision or None


def load_config(model: str | os.PathLike, *, hub: Any = None, revision: str | None = None) -> LoadedConfig:
    """Resolve MODEL: an existing path is read locally, an ``org/name[@rev]`` id from the Hub."""
    if isinstance(model, os.PathLike):
        return load_local(model)
    if not isinstance(model, str):
        raise UsageError(f"a model is a path or a repo id, not {type(model).__name__}")
    if not model.strip():
        raise SourceError("not-found", "empty model name", source="''")
    if _exists(model):
        return load_local(model)
    if looks_like_repo_id(model):
        from .hub import HubClient  # huggingface_hub is imported only for Hub sources

        client = hub or HubClient()
        repo, at = split_revision(model)
        return client.load_config(repo, revision=at or revision)
    if model.endswith(".json") or os.sep in model:
        raise SourceError("not-found", "no such file", source=model)
    raise SourceError("not-found", "no such file, and not a Hub repo id (expected org/name)", source=model)
