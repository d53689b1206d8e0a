"""Where a scan's fetches run: worker threads here, or those threads in a forked process.

``fetching(entries, fetch, jobs)`` is a context manager giving an iterator over ``fetch(entry)``
for every entry, in completion order, with at most ``jobs`` fetches at a time. ``fetch`` must not
raise (a scan's ``Job.fetch`` turns every failure into an error row). Leaving the block early (an
exception, Ctrl-C) stops the fetching at once: nothing is joined, since a fetch may be stuck in a
Hub request.

Why a second process: a scan is CPU-bound in Python on a Hub that answers quickly. The fetches
(HTTP, JSON parsing, the cache) and the reports share one interpreter lock, so a scan used one
core however many it had; a forked process (on Linux, for ``FORK_MIN`` entries or more, with a
second core) fetches while this one reports. It is forked before any thread runs here (a fork
copies no thread, so no lock can be copied held), ignores Ctrl-C (the scan handles it), is killed
with this process (``PR_SET_PDEATHSIG``) and when the block is left, and sends each result back
pickled over a pipe. The pipe holds a few results at most, so memory stays flat however long
the list. If the process ends early, the entries it did not send are fetched here: a scan never
loses a row to it. Without ``os.fork`` (Windows), on other systems (macOS forbids many libraries
after a fork) and for short lists, the threads run in this process.

The process has a deadline: while it has nothing to send it says so every ``BEAT_SECONDS``, and when
the scan waits on it for ``STALL_SECONDS`` without hearing anything (the process was stopped with
SIGSTOP, or is frozen some other way), it is killed and its remaining entries are fetched here. A
fetch that is slow on the Hub does not count: the process keeps beating while its threads wait.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import sys
import threading
from typing import Any, Callable, Iterator

FORK_MIN = 16  # entries from which a fetching process repays its start (a fork: ~10 ms)
# The fetching process sends a heartbeat when it has had nothing to send for BEAT_SECONDS; a scan
# waiting STALL_SECONDS without a result or a heartbeat takes it for stalled (killed, entries fetched here).
BEAT_SECONDS = 0.5
STALL_SECONDS = 5.0
_DONE = object()  # a worker thread's last item on the results queue
_BEAT = "beat"  # what the fetching process sends when it is alive but has no result to send

Fetch = Callable[[str], Any]


@contextlib.contextmanager
def fetching(entries: list[str], fetch: Fetch, jobs: int) -> Iterator[Iterator[Any]]:
    """``fetch(entry)`` of every entry, in completion order (see the module docstring)."""
    runner = _forked if _fork_helps(len(entries)) else _threads
    with runner(list(enumerate(entries)), fetch, jobs) as items:
        yield (result for _, result in items)


def _fork_helps(count: int) -> bool:
    return (count >= FORK_MIN and sys.platform.startswith("linux") and hasattr(os, "fork")
            and (os.cpu_count() or 1) > 1 and threading.active_count() == 1)


@contextlib.contextmanager
def _threads(todo: list[tuple[int, str]], fetch: Fetch, jobs: int,
             idle: float | None = None) -> Iterator[Iterator[Any]]:
    """``(index, fetch(entry))`` pairs from ``jobs`` daemon threads, handed over a bounded queue:
    a fetched result is held only until it is taken, so memory does not grow with the list (a
    pool's futures would keep every result). With ``idle``: also None after each ``idle`` seconds
    without a result (the fetching process's cue for a heartbeat)."""
    count = min(jobs, len(todo))
    results: queue.Queue = queue.Queue(maxsize=4 * max(count, 1))
    feed, feed_lock, stop = iter(todo), threading.Lock(), threading.Event()

    def work() -> None:
        try:
            while not stop.is_set():
                with feed_lock:
                    item = next(feed, None)
                if item is None:
                    break
                results.put((item[0], fetch(item[1])))
        finally:
            results.put(_DONE)

    for number in range(count):
        threading.Thread(target=work, name=f"hfkv-fetch-{number}", daemon=True).start()

    def items() -> Iterator[tuple[int, Any] | None]:
        ended = 0
        while ended < count:
            try:
                item = results.get(timeout=idle)
            except queue.Empty:
                yield None
                continue
            if item is _DONE:
                ended += 1
            else:
                yield item

    try:
        yield items()
    finally:
        stop.set()


@contextlib.contextmanager
def _forked(todo: list[tuple[int, str]], fetch: Fetch, jobs: int) -> Iterator[Iterator[tuple[int, Any]]]:
    """``_threads`` run in a forked process, its results read from a pipe (module docstring)."""
    from multiprocessing.connection import Pipe

    reader, writer = Pipe(duplex=False)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        _child(reader, writer, todo, fetch, jobs, parent)  # never returns
    writer.close()
    received: set[int] = set()
    finished = False

    def items() -> Iterator[tuple[int, Any]]:
        nonlocal finished
        try:
            while True:
                if not reader.poll(STALL_SECONDS):  # not a result, not a heartbeat: stopped or frozen
                    _kill(pid)
                    break
                item = reader.recv()
                if item is None:
                    finished = True
                    break
                if isinstance(item, str):  # _BEAT: alive, nothing to send yet
                    continue
                received.add(item[0])
                yield item
        except (EOFError, OSError):  # the process ended before its last result
            pass
        if not finished:
            rest = [(i, entry) for i, entry in todo if i not in received]
            with _threads(rest, fetch, jobs) as more:
                yield from more

    try:
        yield items()
    finally:
        reader.close()
        if not finished:
            _kill(pid)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)


def _kill(pid: int) -> None:
    """SIGKILL ``pid`` (it works on a stopped process too); nothing if it is gone already."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _child(reader: Any, writer: Any, todo: list[tuple[int, str]], fetch: Fetch, jobs: int, parent: int) -> None:
    """The fetching process: every result down the pipe, then None; ``os._exit`` in all cases (no
    atexit handler, no flush of buffers inherited from the parent, no exit of the parent's code)."""
    code = 0
    try:
        reader.close()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the scan's to handle
        _end_with(parent)
        with _threads(todo, fetch, jobs, idle=BEAT_SECONDS) as items:
            for item in items:
                writer.send(_BEAT if item is None else item)
        writer.send(None)
    except BaseException:  # noqa: BLE001 - a broken pipe (the scan ended) or a bug: the scan fetches the rest
        code = 1
    finally:
        os._exit(code)


def _end_with(parent: int) -> None:
    """Be killed when the parent dies (Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)``), so no fetching
    process outlives its scan; exit now if the parent is already gone."""
    import ctypes

    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)
