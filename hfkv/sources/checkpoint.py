"""Exact weights of a local model folder from its safetensors headers, without reading a tensor.

A ``.safetensors`` file starts with an 8-byte little-endian header length and a JSON header naming
every tensor's dtype, shape and byte span; the spans tile the payload that follows, without holes or
overlaps (the format's specification, which the ``safetensors`` library enforces on load).

Which files: the ones the index (``model.safetensors.index.json``) names in its ``weight_map``, else
the one ``model.safetensors``; any other ``*.safetensors`` (Mistral's ``consolidated.safetensors``
beside the same weights in shards, an adapter) is not the checkpoint an engine loads and is not read.
An index whose shards are all absent gives its ``metadata.total_size`` (a folder with the config and
the index only).

The headers are input from whoever made the folder, so they are checked before a byte is believed:
the files are regular (a FIFO or a device is never opened: it would block or never end), inside the
folder once symlinks are resolved, every shard the index names is there, each tensor's shape is
non-negative and its span is exactly its elements × its dtype's size within the file, the index's
``total_size`` agrees, and reads are bounded. Anything else makes the headers *untrusted*: the
result then carries ``untrusted`` (one line saying why) and no bytes, and the report keeps the
config's estimate with a warning — never an exact-looking figure from a file that lied.
"""

from __future__ import annotations

import json
import os
import re
import stat
import struct
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from hfkv.sources.weights import DTYPE_BYTES, weights_summary

# The safetensors library's own cap (MAX_HEADER_SIZE = 100,000,000 in its Rust crate): a larger header
# is refused by every loader, so no real checkpoint has one. A real shard's header is ~100 kB.
MAX_HEADER_BYTES = 100_000_000
# A real index is one line per tensor: DeepSeek-V3's (~92,000 tensors) is ~9 MB; 50 MB is 5× that.
MAX_INDEX_BYTES = 50 * 1024 * 1024
# A header is {name: {"shape": [..]}} (depth 3), an index {"weight_map": {..}} (depth 2): 8 is ample.
MAX_DEPTH = 8
# The largest public checkpoints hold a few hundred shards.
MAX_SHARDS = 10_000
# A stated total_size past 64 TiB is no checkpoint (the largest public ones are ~2 TB).
MAX_TOTAL_BYTES = 1 << 46
# An index's total_size and the headers' sum may differ by rounding in the tool that wrote it; a
# missing or doubled shard differs by far more.
TOTAL_TOLERANCE = Fraction(1, 100)
INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
# The output head's weight as transformers names it (``lm_head.weight``, under a wrapper
# ``language_model.lm_head.weight``): vLLM's load_weights skips the prefix "lm_head." when the config ties it.
HEAD = re.compile(r"(^|\.)lm_head\.weight$")
# A tensor's group: its name up to the first all-digit part (``model.layers.61``), else its first part
# (``mtp``); the model picks the groups an engine skips (MTP layers) by the same function.
_GROUP = re.compile(r"^(.*?\.\d+)(?:\.|$)|^([^.]+)")


def tensor_group(name: str) -> str:
    """The group of a tensor name: ``model.layers.61.mlp.gate.weight`` -> ``model.layers.61``,
    ``mtp.fc.weight`` -> ``mtp``."""
    found = _GROUP.match(name)
    return (found.group(1) or found.group(2)) if found else name
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class Untrusted(Exception):
    """The folder's safetensors files cannot be believed; the message says why in one line."""


class Span(NamedTuple):
    """One tensor of a header: its dtype, element count and byte span in the payload."""

    name: str
    dtype: str
    numel: int
    start: int
    end: int


def folder_weights(folder: str | Path) -> dict[str, Any] | None:
    """The ``weights`` section (``sources.weights.weights_summary``, source ``headers``) of the
    checkpoint in ``folder``; ``{"weights_bytes": None, "source": "headers", "untrusted": why}`` when
    its files are there but fail a check; None when the folder holds no checkpoint."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    try:
        return _checkpoint(folder, _roots(folder))
    except Untrusted as exc:
        return {"weights_bytes": None, "source": "headers", "untrusted": str(exc)}


def _checkpoint(folder: Path, roots: tuple[Path, ...]) -> dict[str, Any] | None:
    """The checkpoint's figures (raises ``Untrusted``); None when the folder holds none."""
    if os.path.lexists(folder / INDEX):
        return _sharded(folder, roots)
    if os.path.lexists(folder / SINGLE):
        return _summary([folder / SINGLE], roots, {})
    other = next(iter(sorted(folder.glob("*.safetensors"))), None)
    if other is not None:
        raise Untrusted(f"{_name(other.name)} is neither {SINGLE} nor named by a {INDEX}: not read")
    return None


def _roots(folder: Path) -> tuple[Path, ...]:
    """Where a file of ``folder`` may resolve to: the folder itself, and for a Hub cache snapshot
    (``…/snapshots/<commit>``, whose files are symlinks to ``…/blobs/<hash>``) the repo's blobs."""
    real = folder.resolve()
    if real.parent.name == "snapshots":
        return real, real.parent.parent / "blobs"
    return (real,)


def _sharded(folder: Path, roots: tuple[Path, ...]) -> dict[str, Any] | None:
    """Every shard the index names, checked against it; its ``total_size`` alone when none is there."""
    weight_map, total = _read_index(folder / INDEX, roots)
    shards = sorted(set(weight_map.values()))
    paths = [_inside(folder / shard, roots) for shard in shards]
    present = [p for p in paths if os.path.lexists(p)]
    if not present:
        return _index_weights(total)
    if len(present) < len(paths):
        missing = next(shard for shard, p in zip(shards, paths) if not os.path.lexists(p))
        raise Untrusted(f"{len(paths) - len(present)} of the {len(paths)} shards {INDEX} names are missing "
                        f"(first: {_name(missing)})")
    expected = {shard: set() for shard in shards}
    for tensor, shard in weight_map.items():
        expected[shard].add(tensor)
    result = _summary(paths, roots, dict(zip(paths, (expected[s] for s in shards))))
    if total is not None and abs(result["weights_bytes"] - total) > total * TOTAL_TOLERANCE:
        raise Untrusted(f"{INDEX}'s total_size {total:,} B disagrees with its shards' headers "
                        f"({result['weights_bytes']:,} B)")
    return result


def _summary(paths: list[Path], roots: tuple[Path, ...], expected: dict[Path, set[str]]) -> dict[str, Any]:
    """Parameters per dtype and the payload of ``paths``; each file holds the tensors ``expected``
    names for it (when given), and no tensor is in two files."""
    counts: dict[str, int] = {}
    payload = 0
    seen: set[str] = set()
    heads: list[Span] = []
    groups: dict[str, int] = {}
    for path in paths:
        spans = read_header(path, roots)
        names = {span.name for span in spans}
        absent = expected.get(path, set()) - names
        if absent:
            raise Untrusted(f"{_name(path.name)} lacks {len(absent)} tensor(s) {INDEX} puts in it "
                            f"(e.g. {_name(min(absent))})")
        twice = names & seen
        if twice:
            raise Untrusted(f"tensor {_name(min(twice))} is in two files")
        seen |= names
        for span in spans:
            counts[span.dtype] = counts.get(span.dtype, 0) + span.numel
            payload += span.end - span.start
            group = tensor_group(span.name)
            groups[group] = groups.get(group, 0) + span.end - span.start
        heads += [span for span in spans if HEAD.search(span.name)]
    summary = weights_summary(counts, None, source="headers", payload_bytes=payload)
    if summary is None:
        raise Untrusted("the safetensors headers name no tensor with an element")
    # the output head's own tensors (none: zeros), which an engine skips when the config ties it to the
    # embeddings; the model decides (``hfkv.model.weights.attach``), the section does not carry the key
    summary["lm_head"] = {"elements": sum(h.numel for h in heads), "bytes": sum(h.end - h.start for h in heads)}
    # bytes by tensor group, from which the model takes the layers an engine skips (MTP); not carried either
    summary["groups"] = groups
    return summary


def read_header(path: str | Path, roots: tuple[Path, ...] | None = None) -> list[Span]:
    """The tensors of one .safetensors file, checked against the file's size (``Untrusted`` when a
    check fails); only the 8-byte length and the header are read. ``roots``: where the file may
    resolve to (default: its own folder)."""
    path = Path(path)
    fd = _open_regular(path, roots or (path.parent.resolve(),))
    try:
        size = os.fstat(fd).st_size
        raw = _read_exactly(fd, 8, path)
        (length,) = struct.unpack("<Q", raw)
        if length > MAX_HEADER_BYTES or 8 + length > size:
            raise Untrusted(f"{_name(path.name)}: a {length:,}-byte header in a {size:,}-byte file is not a "
                            "safetensors header")
        header = _parse_json(_read_exactly(fd, length, path), path)
    finally:
        os.close(fd)
    return _spans(header, size - 8 - length, path)


def _spans(header: Any, payload: int, path: Path) -> list[Span]:
    """The header's tensors, each checked; together their spans tile ``payload`` bytes exactly."""
    if not isinstance(header, dict):
        raise Untrusted(f"{_name(path.name)}: the header is not a JSON object")
    spans = [_span(name, info, payload, path) for name, info in header.items() if name != "__metadata__"]
    at = 0
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if span.start != at:
            raise Untrusted(f"{_name(path.name)}: tensor {_name(span.name)}'s bytes overlap another's or leave a hole")
        at = span.end
    if at != payload:
        raise Untrusted(f"{_name(path.name)}: the tensors cover {at:,} of the payload's {payload:,} bytes")
    return spans


def _span(name: str, info: Any, payload: int, path: Path) -> Span:
    """One header entry, checked: a known dtype, a shape of non-negative integers, and a span of
    exactly elements × dtype size that ends within the payload."""
    where = f"{_name(path.name)}: tensor {_name(name)}"
    if not isinstance(info, dict):
        raise Untrusted(f"{where} is not described by an object")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if dtype not in DTYPE_BYTES:
        raise Untrusted(f"{where} has an unknown dtype {_name(str(dtype))}")
    if not isinstance(shape, list) or not all(_natural(d) for d in shape):
        raise Untrusted(f"{where} has an impossible shape (dimensions must be non-negative integers)")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_natural(o) for o in offsets)
            and offsets[0] <= offsets[1] <= payload):
        raise Untrusted(f"{where}'s data_offsets {_name(str(offsets))} lie outside the file's {payload:,}-byte payload")
    numel = _numel(shape, limit=payload * 2)  # 2: the smallest dtype is half a byte
    if numel is None or DTYPE_BYTES[dtype] * numel != offsets[1] - offsets[0]:
        raise Untrusted(f"{where}'s shape does not fit its {offsets[1] - offsets[0]:,} bytes of {dtype}")
    return Span(name, dtype, numel, offsets[0], offsets[1])


def _numel(shape: list[int], limit: int) -> int | None:
    """The product of ``shape``, or None once it passes ``limit`` (a shape of a 4,000-digit product
    is stopped after a few multiplications, not carried to the end)."""
    if 0 in shape:
        return 0
    product = 1
    for dim in shape:
        product *= dim
        if product > limit:
            return None
    return product


def _natural(value: Any) -> bool:
    """A JSON integer ≥ 0 that fits the format's 64-bit fields."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 64


def _read_index(path: Path, roots: tuple[Path, ...]) -> tuple[dict[str, str], int | None]:
    """The index's ``weight_map`` (tensor → shard file name) and its ``metadata.total_size`` (None
    when absent), checked for shape; the file is read up to ``MAX_INDEX_BYTES``."""
    fd = _open_regular(path, roots)
    try:
        raw = _read_at_most(fd, MAX_INDEX_BYTES)
    finally:
        os.close(fd)
    if len(raw) > MAX_INDEX_BYTES:
        raise Untrusted(f"{INDEX} is over {MAX_INDEX_BYTES // (1024 * 1024)} MiB: no real index is")
    index = _parse_json(raw, path)
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise Untrusted(f"{INDEX} has no weight_map")
    if not all(isinstance(k, str) and isinstance(v, str) and v for k, v in weight_map.items()):
        raise Untrusted(f"{INDEX}'s weight_map does not map tensor names to file names")
    if len(set(weight_map.values())) > MAX_SHARDS:
        raise Untrusted(f"{INDEX} names over {MAX_SHARDS:,} shards")
    metadata = index.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    if total is not None and not (_natural(total) and 0 < total <= MAX_TOTAL_BYTES):
        raise Untrusted(f"{INDEX}'s total_size {_name(str(total))} is not a possible checkpoint size")
    return weight_map, total


def _index_weights(total: int | None) -> dict[str, Any]:
    """``metadata.total_size`` of an index whose shards are all absent: bytes without per-dtype counts."""
    if total is None:
        raise Untrusted(f"{INDEX} has no total_size and none of its shards is in the folder")
    return {"parameters": None, "total_parameters": None, "weights_bytes": total, "parameters_exact": False,
            "source": "headers", "note": f"{INDEX}'s total_size (no shard in the folder to count parameters)"}


def _inside(path: Path, roots: tuple[Path, ...]) -> Path:
    """``path`` with its symlinks resolved, refused unless it lies under one of ``roots``."""
    real = path.resolve()
    if not any(real == root or root in real.parents for root in roots):
        raise Untrusted(f"{_name(path.name)} resolves outside the model folder: not read")
    return real


def _open_regular(path: Path, roots: tuple[Path, ...]) -> int:
    """A read-only descriptor of ``path`` once it is known to be a regular file inside ``roots``. The
    type is checked before opening (a FIFO's open would wait for a writer) and again on the opened
    descriptor (the file could have been swapped in between); O_NONBLOCK keeps even that open from
    waiting, O_NOFOLLOW refuses a symlink planted after the path was resolved."""
    real = _inside(path, roots)
    try:
        if not stat.S_ISREG(os.stat(real).st_mode):
            raise Untrusted(f"{_name(path.name)} is not a regular file: not read")
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as err:
        raise Untrusted(f"{_name(path.name)}: {err.strerror or type(err).__name__}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Untrusted(f"{_name(path.name)} is not a regular file: not read")
    return fd


def _read_exactly(fd: int, n: int, path: Path) -> bytes:
    """``n`` bytes from ``fd``; ``Untrusted`` when the file ends first."""
    raw = _read_at_most(fd, n - 1) if n else b""
    if len(raw) != n:
        raise Untrusted(f"{_name(path.name)} ends inside its safetensors header")
    return raw


def _read_at_most(fd: int, cap: int) -> bytes:
    """Up to ``cap + 1`` bytes from ``fd`` (one more than allowed, so that the caller sees an
    oversized file), in chunks: never the whole of a file that keeps growing."""
    chunks, got = [], 0
    while got <= cap:
        chunk = os.read(fd, min(cap + 1 - got, 1 << 24))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")


def _parse_json(raw: bytes, path: Path) -> Any:
    """``raw`` parsed as JSON, refused past ``MAX_DEPTH`` levels of nesting before the parser
    recurses into them (Python's raises RecursionError a thousand levels down)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Untrusted(f"{_name(path.name)}: the JSON is not UTF-8") from None
    if _deeper_than(text, MAX_DEPTH):
        raise Untrusted(f"{_name(path.name)}: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:  # ValueError: bad JSON, or an integer over 4,300 digits
        raise Untrusted(f"{_name(path.name)}: not valid JSON ({str(err)[:80]})") from None


def _deeper_than(text: str, bound: int) -> bool:
    """Whether ``text``'s brackets nest deeper than ``bound``: strings removed, then only brackets
    kept, each pass deletes the innermost pairs (one level); what is left after ``bound`` passes is
    deeper. Each pass is one regular-expression scan, so a 100 MB header costs a few scans."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    for _ in range(bound):
        brackets, removed = _INNERMOST.subn("", brackets)
        if not brackets or not removed:
            break
    return bool(brackets)


def _name(text: str) -> str:
    """A file or tensor name from the folder, cut short for a one-line message (the output's own
    sanitiser handles its characters)."""
    return text if len(text) <= 80 else text[:77] + "..."
