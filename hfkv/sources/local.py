"""A config from a local ``config.json``, or from the ``config.json`` inside a model folder."""

from __future__ import annotations

import os
from pathlib import Path

from hfkv.errors import SourceError
from hfkv.sources.parse import MAX_CONFIG_BYTES, LoadedConfig, parse_config_bytes


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
            size = os.fstat(handle.fileno()).st_size
    except OSError as err:
        raise SourceError("unreadable", err.strerror or type(err).__name__, source=name) from None
    return LoadedConfig(name=name, data=parse_config_bytes(raw, name, size=size), source="file", folder=str(p.parent))
