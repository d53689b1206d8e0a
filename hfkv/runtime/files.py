"""Files hfkv writes: one atomic writer, the temporaries a killed run leaves, and file names made
from repo ids (reports, the watch state, cache entries, rewritten scan outputs)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from hfkv.errors import UsageError
from hfkv.text import one_line

TMP_SUFFIX = ".hfkv-tmp"
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, durable: bool = False) -> None:
    """``data`` at ``path`` by way of a temporary file in the same folder and ``os.replace``.

    Readers see the old file or the new one, never a part. The temporary file is created exclusively
    under an unpredictable name (``mkstemp``: never through a planted symlink), with the permissions
    the umask gives a new file; it is removed on any error (KeyboardInterrupt included), and a process
    killed outright leaves only a hidden ``*.hfkv-tmp`` file (``remove_stale_temporaries``). The
    folder is created when missing. ``durable``: fsync before the rename (reports, state), not for
    cache entries a later run can fetch again.
    """
    path = Path(path)
    body = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:60]}.", suffix=TMP_SUFFIX)
    except FileNotFoundError:  # the first file of its folder: make the folders, once
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:60]}.", suffix=TMP_SUFFIX)
    try:
        with contextlib.suppress(OSError, AttributeError):  # mkstemp makes 0600; these files are for reading
            os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def remove_stale_temporaries(directory: Path) -> None:
    """Delete temporary files a killed run left behind (only ours: hidden, ``*.hfkv-tmp``)."""
    for leftover in directory.glob(f".*{TMP_SUFFIX}"):
        with contextlib.suppress(OSError):
            leftover.unlink()


def inside(directory: Path, name: str) -> Path:
    """``directory / name``, refusing anything that would not be a direct child of ``directory``."""
    path = directory / name
    if "/" in name or "\\" in name or "\0" in name or name in ("", ".", "..") or path.parent != directory:
        raise ValueError(f"unsafe file name {name!r}")
    return path


def safe_name(repo_id: str) -> str:
    """A file stem for ``repo_id`` that is one plain name: [A-Za-z0-9._-] only, no leading dot, ≤ 110 chars.

    An ordinary id ``org/name`` gives ``org__name``; anything else is cleaned and suffixed with a hash
    of the exact id, so two different ids never share a file.
    """
    text = str(repo_id)
    if _PLAIN_ID.fullmatch(text) and ".." not in text:
        return text.replace("/", "__")
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text)
    cleaned = re.sub(r"\.{2,}", "_", cleaned).strip("._-")[:80] or "model"
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{cleaned}-{digest}"


class FileNames:
    """Stems of report files (``<stem>.md``, ``.json``, ``.html``), distinct even on a file system that
    folds case (macOS, Windows): ``evil/Good`` and ``evil/good`` never share a file.

    A stem is ``safe_name(repo id)`` (``org__name``) unless another model (of ``models``: a watch
    state's, whose done entries keep their ``file``, or claimed before) already owns that stem up to
    case; it is then suffixed with a hash of the exact id. ``index`` is never given (the site's index).
    """

    RESERVED = frozenset({"index"})  # index.md, index.html

    def __init__(self, models: dict[str, Any]) -> None:
        self.owner: dict[str, str] = {}
        for repo_id, entry in models.items():
            if isinstance(entry, dict) and entry.get("status") == "done" and isinstance(entry.get("file"), str):
                self.owner.setdefault(entry["file"].casefold(), repo_id)

    def claim(self, repo_id: str) -> str:
        """The stem of ``repo_id``'s report files, recorded as taken."""
        base = safe_name(repo_id)
        digest = hashlib.sha256(repo_id.encode("utf-8", "surrogatepass")).hexdigest()
        for stem in (base, f"{base}-{digest[:12]}", f"{base}-{digest}"):
            key = stem.casefold()
            if key not in self.RESERVED and self.owner.get(key, repo_id) == repo_id:
                self.owner[key] = repo_id
                return stem
        raise UsageError(f"no free report file name for {one_line(repo_id)[:120]}")  # 2^-256: never
