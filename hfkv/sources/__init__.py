"""Where a config comes from: a local ``config.json``, a model folder, or a Hub repo id.

``load_config`` returns the parsed dict plus what the report should record (name, commit). Local
files are read by ``local``; Hub repos go through ``hub`` (``HubClient``: config, cache, weights,
listings), imported only when a repo id is given, since huggingface_hub costs ~100 ms to import.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from hfkv.errors import SourceError, UsageError
from hfkv.sources.local import load_local
from hfkv.sources.parse import MAX_CONFIG_BYTES, LoadedConfig, parse_config_bytes

__all__ = ["MAX_CONFIG_BYTES", "LoadedConfig", "load_config", "load_local", "looks_like_repo_id",
           "parse_config_bytes", "split_revision"]

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+(@[\w.\-/]+)?$")


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
        from hfkv.sources.hub import HubClient  # deferred: huggingface_hub only for Hub sources

        client = hub or HubClient()
        repo, at = split_revision(model)
        return client.load_config(repo, revision=at or revision)
    if model.endswith(".json") or os.sep in model:
        raise SourceError("not-found", "no such file", source=model)
    raise SourceError("not-found", "no such file, and not a Hub repo id (expected org/name)", source=model)
