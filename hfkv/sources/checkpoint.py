"""Exact weights of a local model folder from its safetensors headers, without reading a tensor.

A ``.safetensors`` file starts with an 8-byte little-endian header length and a JSON header naming
every tensor's dtype, shape and byte span (the format's specification); the spans sum to the exact
payload. With no shard in the folder but a ``model.safetensors.index.json``, its ``metadata.total_size``
is the payload (the index a sharded checkpoint ships). Header lengths past 100 MiB are refused: no
real checkpoint has one, and it would be read whole.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

from hfkv.sources.weights import weights_summary

MAX_HEADER_BYTES = 100 * 1024 * 1024
INDEX = "model.safetensors.index.json"


def read_header(path: str | Path) -> dict[str, Any]:
    """The JSON header of one .safetensors file; ValueError when it is not one."""
    with open(path, "rb") as handle:
        raw = handle.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: too short for a safetensors header")
        (length,) = struct.unpack("<Q", raw)
        if length > MAX_HEADER_BYTES:
            raise ValueError(f"{path}: a {length:,}-byte header is not a safetensors header")
        header = json.loads(handle.read(length))
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not a JSON object")
    return header


def folder_weights(folder: str | Path) -> dict[str, Any] | None:
    """The ``weights`` section (``sources.weights.weights_summary``, source ``headers``) of the
    safetensors files in ``folder``, or of its index's ``total_size``; None when the folder holds
    neither, or a file is not readable as one (the report then falls back to the estimate)."""
    folder = Path(folder)
    try:
        files = sorted(folder.glob("*.safetensors")) if folder.is_dir() else []
        if not files:
            return _index_weights(folder / INDEX)
        counts: dict[str, int] = {}
        payload = 0
        for path in files:
            for name, info in read_header(path).items():
                if name == "__metadata__" or not isinstance(info, dict):
                    continue
                dtype = str(info.get("dtype"))
                counts[dtype] = counts.get(dtype, 0) + math.prod(int(s) for s in info.get("shape") or [])
                start, end = info.get("data_offsets") or (0, 0)
                payload += int(end) - int(start)
    except (OSError, ValueError, TypeError):
        return None
    return weights_summary(counts, None, source="headers", payload_bytes=payload)


def _index_weights(index: Path) -> dict[str, Any] | None:
    """``metadata.total_size`` of a sharded checkpoint's index: bytes without the per-dtype counts."""
    try:
        total = (json.loads(index.read_text(encoding="utf-8")).get("metadata") or {}).get("total_size")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(total, int) or isinstance(total, bool) or total <= 0:
        return None
    return {"parameters": None, "total_parameters": None, "weights_bytes": total, "parameters_exact": False,
            "source": "headers", "note": f"{INDEX}'s total_size (no shard in the folder to count parameters)"}
