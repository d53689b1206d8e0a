"""config.json in the huggingface_hub cache layout, read and written without the download machinery.

The layout is huggingface_hub's (``docs/hub.md`` §5), so a file stored here is found by
``hf_hub_download(..., local_files_only=True)``, ``try_to_load_from_cache`` and ``HF_HUB_OFFLINE=1``,
and a config already downloaded by other tools is found by hfkv offline::

    <cache>/models--org--name/blobs/<etag>
    <cache>/models--org--name/snapshots/<commit>/config.json -> ../../blobs/<etag>
    <cache>/models--org--name/refs/<revision>                  (the commit a branch or tag pointed to)

Contract: every write is atomic (temporary name, then ``os.replace``), so a killed process leaves
either the old file or the new one; names built from server answers (commit, ETag, revision) are
checked before they become paths, so nothing is ever written outside the repo's folder.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
from pathlib import Path

COMMIT = re.compile(r"^[0-9a-f]{40}$")
_BLOB_NAME = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")  # git blob sha1 or LFS sha256, as the Hub sends them
_REF_PART = re.compile(r"^[\w.\-]+$")


def repo_folder(cache_dir: str | os.PathLike, repo_id: str) -> Path:
    """``<cache>/models--org--name`` (huggingface_hub's ``repo_folder_name`` for a model repo)."""
    from huggingface_hub.file_download import repo_folder_name

    return Path(cache_dir) / repo_folder_name(repo_id=repo_id, repo_type="model")


def cached_file(cache_dir: str | os.PathLike, repo_id: str, filename: str, revision: str | None) -> Path | None:
    """The cached ``filename`` of ``repo_id`` at ``revision`` (branch, tag or commit), or None."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, filename, cache_dir=str(cache_dir), revision=revision)
    return Path(found) if isinstance(found, str) else None


def blob_name(etag: str | None, body: bytes) -> str:
    """The blob's file name: the Hub's ETag when it has the usual shape, else the body's sha256."""
    tag = (etag or "").strip()
    tag = tag[2:] if tag.startswith("W/") else tag
    tag = tag.strip('"').lower()
    return tag if _BLOB_NAME.match(tag) else hashlib.sha256(body).hexdigest()


def safe_ref(revision: str) -> bool:
    """Whether a revision name can be a path under ``refs/`` (``main``, ``v1.0``, ``refs/pr/1``)."""
    parts = revision.split("/")
    return all(_REF_PART.match(p) and p not in (".", "..") for p in parts)


def store(cache_dir: str | os.PathLike, repo_id: str, filename: str, *, revision: str | None, commit: str,
          etag: str | None, body: bytes) -> Path:
    """Put ``body`` into the cache as ``filename`` at ``commit``; record ``revision`` -> ``commit``.

    ``commit`` must be 40 hex (``ValueError`` otherwise). Returns the snapshot path. Raises
    ``OSError`` when the cache cannot be written (read-only, disk full).
    """
    if not COMMIT.match(commit):
        raise ValueError(f"not a commit hash: {commit!r}")
    folder = repo_folder(cache_dir, repo_id)
    blob = folder / "blobs" / blob_name(etag, body)
    snapshot = folder / "snapshots" / commit / filename
    if not blob.is_file():
        _write_atomic(blob, body)
    if not snapshot.exists():  # follows the link: a dangling link is rewritten too
        _link_atomic(snapshot, blob, body)
    name = revision or "main"
    if name != commit and safe_ref(name):
        ref = folder / "refs" / name
        if _read_text(ref) != commit:
            _write_atomic(ref, commit.encode())
    return snapshot


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".hfkv-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise


def _link_atomic(link: Path, blob: Path, body: bytes) -> None:
    """``link`` -> ``blob`` as a relative symlink, like huggingface_hub; a copy where links fail."""
    link.parent.mkdir(parents=True, exist_ok=True)
    tmp = link.parent / f".hfkv-{os.getpid()}-{threading.get_ident()}.link"  # unique per thread
    try:
        os.symlink(os.path.relpath(blob, link.parent), tmp)
        os.replace(tmp, link)
    except OSError:  # no symlinks here (some Windows setups, some network file systems): copy
        _unlink(tmp)
        _write_atomic(link, body)


def _unlink(path: str | os.PathLike) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
