"""Telling a person at a terminal that the Hub is slow or unreachable, as it happens.

A Hub that refuses connections costs 23 s of retries (1, 2, 4, 8, 8 s apart) and one that never
answers up to 83 s, in silence. When ``enabled`` (the ``hfkv`` command sets it when stderr is a
terminal, as for the progress bar; never for a library user or a script reading stderr, which get
the one error line at the end), two notices go to stderr, one line each:

* a retry, when it is decided: ``hfkv: note: 127.0.0.1:9 did not answer (connection refused);
  trying again in 1 s (retry 1 of 5)`` (from huggingface_hub's own retry loop, through its logger;
  hfkv's own 429 waits say so too);
* a request still without an answer after ``SLOW_SECONDS``: ``hfkv: note: no answer from HOST after
  2 s; still waiting (each try ends after 10 s, 5 retries)`` (a watchdog thread, started by the
  first request that waits).

At most one notice per host every ``REPEAT_SECONDS``, so a scan of 10,000 repos on a dead Hub says
it every few seconds, not 10,000 times. Notices name the host only (never a URL, which may carry
user info, nor the library's own text).
"""

from __future__ import annotations

import contextlib
import itertools
import re
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    import logging

enabled = False  # set by the command line (stderr is a terminal); importing this module costs nothing more
SLOW_SECONDS = 2.0
REPEAT_SECONDS = 10.0

_lock = threading.Lock()
_said: dict[str, float] = {}  # host -> when it was last noted
_waits: dict[int, tuple[float, str, str]] = {}  # wait id -> (since, host, what the retries are)
_watchdog: threading.Thread | None = None
_installed = False
_last_reason = threading.local()
_write: Callable[[str], None] | None = None
_ids = itertools.count()

# huggingface_hub's retry records (re source: compiled by ``re`` when the first record comes, not at start).
_RETRY = r"(?:Retrying in|Waiting) ([0-9.]+)s (?:before retry )?\[Retry (\d+)/(\d+)\]"
_THROWN = r"(?s)^(?:HTTP Error (\d+)|'(.*)') thrown while requesting \S+ (\S+)"


def note(host: str, text: str) -> None:
    """Write ``hfkv: note: TEXT`` unless ``host`` was noted less than ``REPEAT_SECONDS`` ago."""
    if not enabled:
        return
    now = time.monotonic()
    with _lock:
        if now - _said.get(host, -REPEAT_SECONDS) < REPEAT_SECONDS:
            return
        _said[host] = now
    from hfkv.text import one_line

    line = f"hfkv: note: {one_line(text)}\n"
    try:
        (_write or _stderr)(line)
    except (OSError, ValueError):
        pass


def _stderr(line: str) -> None:
    sys.stderr.write(line)
    sys.stderr.flush()


def install() -> None:
    """Listen to huggingface_hub's retry loop (once per process, only when ``enabled``)."""
    global _installed
    if not enabled:
        return
    with _lock:
        if _installed:
            return
        _installed = True
    import logging  # here: the command line imports this module at every start

    logger = logging.getLogger("huggingface_hub.utils._http")
    if not logger.isEnabledFor(logging.WARNING):  # hidden anyway (hfkv sets HF_HUB_VERBOSITY=error):
        logger.setLevel(logging.WARNING)  # let its retry records reach the handler below,
        logger.propagate = False  # and nothing else (its text names URLs)
    logger.addHandler(_retry_handler(logging))


def _retry_handler(logging: "Any") -> "logging.Handler":
    """huggingface_hub logs why a request failed, then that it will retry: one notice of both."""

    class RetryHandler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            _on_record(record)

    return RetryHandler(logging.WARNING)


def _on_record(record: "logging.LogRecord") -> None:
    try:
        text = record.getMessage()
    except Exception:  # noqa: BLE001 - a record we cannot read is not ours to report
        return
    thrown = re.match(_THROWN, text)
    if thrown:
        status, error, url = thrown.groups()
        _last_reason.value = (_host_of(url), f"HTTP {status}" if status else _reason(error or ""))
        return
    retry = re.search(_RETRY, text)
    if retry:
        host, reason = getattr(_last_reason, "value", ("the Hub", "no answer"))
        wait, number, total = retry.groups()
        note(host, f"{host} did not answer ({reason}); trying again in {float(wait):g} s (retry {number} of {total})")


def _reason(error: str) -> str:
    lowered = error.lower()
    if "refused" in lowered:
        return "connection refused"
    if "timed out" in lowered or "timeout" in lowered or "deadline" in lowered:
        return "no answer in time"
    if "name or service" in lowered or "nodename" in lowered or "resolution" in lowered:
        return "host name not found"
    return "network error"


def _host_of(url: str) -> str:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        return (parts.hostname or "the Hub") + (f":{parts.port}" if parts.port else "")
    except ValueError:
        return "the Hub"


@contextlib.contextmanager
def waiting(host: str, detail: str) -> Iterator[None]:
    """Inside the block, a request to ``host`` is under way: noted if it lasts ``SLOW_SECONDS``."""
    if not enabled:
        yield
        return
    key = next(_ids)
    with _lock:
        _waits[key] = (time.monotonic(), host, detail)
        _start_watchdog()
    try:
        yield
    finally:
        with _lock:
            _waits.pop(key, None)


def _start_watchdog() -> None:
    global _watchdog
    if _watchdog is None or not _watchdog.is_alive():
        _watchdog = threading.Thread(target=_watch, name="hfkv-notices", daemon=True)
        _watchdog.start()


def _watch() -> None:
    while True:
        time.sleep(0.25)
        now = time.monotonic()
        with _lock:
            slow = {host: (now - since, detail) for since, host, detail in sorted(_waits.values(), reverse=True)
                    if now - since >= SLOW_SECONDS}  # per host, its oldest wait
        for host, (waited, detail) in slow.items():
            note(host, f"no answer from {host} after {waited:.0f} s; still trying ({detail})")
