"""``hfkv watch``'s files: the state (load, check and repair, save), its lock, report file names, and the
one error a folder that cannot be written gives.

The state is ``{"version", "since", "models": {repo id: entry}}``; an entry is ``done`` (``file``: the
stem of its report files, and the figures the indexes show), ``error`` (retried on the next run) or
``skipped`` (a permanent failure, not retried while the listing shows the same commit). States
written by earlier versions load as they are: a field they lack is shown as unknown.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import Any, Iterator

from hfkv.errors import HfkvError, UsageError
from hfkv.runtime.files import write_atomic
from hfkv.text import one_line

STATE_FILE = ".hfkv-watch.json"
STATE_VERSION = 2  # 2: per-GPU verdicts, γ and S* in done entries; version 1 states load as they are
STATUSES = ("done", "error", "skipped")
_STEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_NUMBER = (int, float)
# The type of each optional field of an entry (None is always allowed); a field of another type is removed.
ENTRY_FIELDS: dict[str, tuple[type, ...]] = {
    "author": (str,), "created_at": (str,), "sha": (str,), "error": (str,), "file": (str,), "model_type": (str,),
    "alpha_bytes_per_token": _NUMBER, "gamma_bytes_per_request": _NUMBER, "crossover_tokens": _NUMBER,
    "total_parameters": (int,), "weights_bytes": (int,), "gpus": (dict,),
}
GPU_FIELDS: dict[str, tuple[type, ...]] = {"status": (str,), "requests": (int,), "tokens": (int,)}


class OutputError(HfkvError):
    """The output folder or the state cannot be written (disk full, read-only, no permission): one
    line, exit 1. The models written before it stay recorded; the others are redone next run."""

    exit_code = 1
    kind = "output"


def output_error(err: OSError, folder: Path) -> OutputError:
    """One line for a failed write: the folder, and the system's reason."""
    where = Path(err.filename).parent if isinstance(err.filename, str) and err.filename else folder
    reason = err.strerror or type(err).__name__
    return OutputError(f"cannot write in {where}: {reason}; the models not yet recorded are redone on the next run")


# -- the lock -----------------------------------------------------------------------------------------


@contextlib.contextmanager
def state_lock(state_path: Path) -> Iterator[None]:
    """An advisory lock beside the state file: a second watcher on the same state fails at once.
    The lock file is opened without following a symlink (one planted there is an error)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    lock_path = state_path.with_name(state_path.name + ".lock")
    try:  # O_NOFOLLOW: a symlink planted at the lock path is refused, never followed and written
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as err:  # a read-only or full folder is an output error (exit 1), as any write
        raise OutputError(f"cannot use the watch lock {lock_path}: {err.strerror or type(err).__name__}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UsageError(f"another hfkv watch is using {state_path}") from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# -- the state ----------------------------------------------------------------------------------------


def parse_since(text: str) -> dt.datetime:
    """A date (``2025-06-01``) or ISO time (``2025-06-01T12:00:00Z``); no zone means UTC."""
    try:
        value = dt.datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"cannot read '{text}' as a date (try 2025-06-01 or 2025-06-01T12:00:00Z)") from None
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)


def iso(value: dt.datetime | None) -> str | None:
    return value.astimezone(dt.timezone.utc).isoformat() if value else None


def load_state(path: Path) -> dict[str, Any] | None:
    """The saved state, or None when there is none yet. A file that is not a watch state at all (not
    JSON, no ``models`` map, no readable ``since``) is an error, never overwritten; a damaged entry
    inside it is the business of ``repair_state``."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read the watch state {path}: {getattr(err, 'strerror', None) or type(err).__name__}") from None
    try:
        state = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        state = None
    if not (isinstance(state, dict) and isinstance(state.get("models"), dict) and isinstance(state.get("since"), str)):
        raise UsageError(f"{path} is not an hfkv watch state; move it away to start afresh")
    try:
        parse_since(state["since"])
    except UsageError:
        raise UsageError(f"{path}: its cut-off 'since' ({one_line(state['since'])[:40]}) is not a date; "
                         "fix it or move the file away to start afresh") from None
    return state


def repair_state(state: dict[str, Any], path: Path) -> list[str]:
    """Check every entry of ``state["models"]`` in place; return one warning per entry dropped or repaired.

    Dropped (the model is reported again when listed): an entry that is not an object, has no known
    ``status``, or is ``done`` without a plain report file name. Repaired: a field of the wrong type
    is removed (shown as unknown), as is a per-GPU summary that is not one.
    """
    warnings = []
    models = state["models"]
    for key in list(models):
        entry = models[key]
        name = one_line(key)[:120]
        why = _damage(entry)
        if why:
            del models[key]
            warnings.append(f"watch state {path}: entry {name} is damaged ({why}): dropped; the model is "
                            "reported again when it is listed")
            continue
        removed = _repair(entry)
        if removed:
            warnings.append(f"watch state {path}: entry {name}: {', '.join(removed)} of the wrong type, removed")
    return warnings


def _damage(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return f"a {type(entry).__name__}, not an object"
    if entry.get("status") not in STATUSES:
        return f"status {one_line(entry.get('status'))[:40]!s}"
    if entry["status"] == "done" and not (isinstance(entry.get("file"), str) and _STEM.fullmatch(entry["file"])):
        return "no plain report file name"
    return None


def _repair(entry: dict[str, Any]) -> list[str]:
    removed = []
    for key, types in ENTRY_FIELDS.items():
        value = entry.get(key)
        if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
            del entry[key]
            removed.append(key)
    gpus = entry.get("gpus")
    if isinstance(gpus, dict):
        for spec in list(gpus):
            summary = gpus[spec]
            if not isinstance(summary, dict) or any(
                    summary.get(k) is not None and (not isinstance(summary[k], t) or isinstance(summary[k], bool))
                    for k, t in GPU_FIELDS.items()):
                del gpus[spec]
                removed.append(f"gpus.{one_line(spec)[:40]}")
    return removed


def save_state(path: Path, state: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(state, indent=2, sort_keys=True, ensure_ascii=True) + "\n", durable=True)
