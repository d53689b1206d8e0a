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
from hfkv.text import one_line
from hfkv.sources.local import load_local
from hfkv.sources.parse import MAX_CONFIG_BYTES, LoadedConfig, parse_config_bytes

__all__ = ["MAX_CONFIG_BYTES", "LoadedConfig", "load_config", "load_local", "looks_like_repo_id",
           "missing_path", "parse_config_bytes", "split_revision", "written_as_path"]

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+(@[\w.\-/]+)?$")


def _exists(text: str) -> bool:
    """Path.exists, with names the OS rejects (too long, NUL) meaning "not a local path"."""
    try:
        return Path(text).exists()
    except (OSError, ValueError):
        return False


def looks_like_repo_id(text: str) -> bool:
    return bool(_REPO_ID.match(text)) and not _exists(text)


# How a path begins that no Hub id can: the folder here, above, the root, a home (the shell expands
# ``~`` only unquoted), and Windows' separator.
_PATH_STARTS = ("./", "../", "/", "~", ".\\", "..\\", "\\")


def written_as_path(text: str) -> bool:
    """True when ``text`` can only be a local path: it starts like one (``./``, ``../``, ``/``, ``~``) or
    holds a backslash or more parts than ``org/name`` (a Hub id has exactly two)."""
    name, _, _ = text.partition("@")
    return text.startswith(_PATH_STARTS) or "\\" in text or name.count("/") > 1 or text in (".", "..")


def missing_path(text: str) -> str:
    """Why ``text``, written as a path, names nothing: one line, said before any Hub request."""
    hint = "; a quoted ~ is not expanded (the shell expands it unquoted)" if text.startswith("~") else ""
    return f"no such file or folder (written as a local path: the Hub was not asked){hint}"


def _local_folder_of(text: str) -> str | None:
    """The ``org`` of an ``org/name`` that names a folder here while ``org/name`` itself does not exist
    (``fixtures/nope`` in a checkout): maybe a mistyped local path, maybe a Hub repo; else None."""
    head, _, tail = text.partition("@")[0].partition("/")
    try:
        return head if tail and Path(head).is_dir() else None
    except (OSError, ValueError):
        return None


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
    if written_as_path(model):
        raise SourceError("not-found", missing_path(model), source=model)
    if looks_like_repo_id(model):
        return _from_hub(model, hub, revision)
    if model.endswith(".json") or os.sep in model:
        raise SourceError("not-found", "no such file", source=model)
    raise SourceError("not-found", "no such file, and not a Hub repo id (expected org/name)", source=model)


def _from_hub(model: str, hub: Any, revision: str | None) -> LoadedConfig:
    """``org/name[@rev]`` from the Hub. When ``org`` is a folder here (a mistyped local path, or a repo
    whose organisation has a folder of downloads beside it), a person at a terminal hears at once that
    no local path has that name, and a Hub failure says so too."""
    from hfkv.sources.hub import HubClient  # deferred: huggingface_hub only for Hub sources

    folder = _local_folder_of(model)
    if folder is not None:
        from hfkv.runtime import notices

        notices.note(f"path:{model}", f"{one_line(model)} is no local path ({one_line(folder)}/ is a folder here "
                                      "without it): asking the Hub for the repo of that name")
    client = hub or HubClient()
    repo, at = split_revision(model)
    try:
        return client.load_config(repo, revision=at or revision)
    except SourceError as err:
        if folder is None:
            raise
        raise SourceError(err.kind, f"{err.message}; nor is it a local path ({folder}/ is a folder here, "
                                    f"without {model.partition('@')[0][len(folder) + 1:]})",
                          source=err.source or model) from None
