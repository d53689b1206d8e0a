"""How the page runs a request's work: in a worker process of its own (hfkv.runtime.worker), killed at the
request's deadline, its memory bounded (docs/web.md, "Bounded work"); no Gradio here.

A thread could only be abandoned at the deadline: the page answered "no answer within 30 s" while the
work ran on, unbounded (issue 31: eight uploads of a 100,000-layer config took the server from 282 MiB
to 7.2 GiB, and another visitor's report from 3 s to 24-32 s). Here:

* ``run_page``: a tab's work (``serve_pages``) in a worker, with the request's Hub cache made and
  removed in the server's process (a killed worker removes nothing); without ``fork`` (Windows), in a
  thread as before (``serve_access.within``).
* ``page_work``: what runs in the worker: the request's Hub session, then the tab's work; a failure is
  its one line.
* ``start_workers``, ``stop_workers``: the workers' parent, started with the server (it imports and
  warms the report stack once: ``PRELOAD``, ``warm`` and ``serve_pages.warm``) and stopped with it.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
from typing import Any, Callable

from hfkv.commands.serve_access import Deadline, DeadlineExceeded, PageError, Session, Settings, failure_line, within
from hfkv.runtime import worker
from hfkv.text import markup

MiB = 1 << 20
PAGE_MEMORY = 512 * MiB  # what one request's worker may add to its address space: see docs/web.md, "Bounded work"
# What every request imports: the worker processes' parent imports it once, so a request starts with it
# (the Hub library's hf_api and file_download: imported by a checkpoint's parameter counts, ~90 ms)
PRELOAD = ("hfkv.inspection", "hfkv.mappings", "hfkv.mappings.sliding", "hfkv.planning.enrich",
           "hfkv.planning.compare", "hfkv.render.html", "hfkv.render.compare", "hfkv.sources.hub", "hfkv.api",
           "hfkv.commands.deploy", "hfkv.model.weights", "huggingface_hub.hf_api", "huggingface_hub.file_download",
           "hfkv.commands.serve_work:warm", "hfkv.commands.serve_pages:warm")
STOPPING = "hfkv: error: the page is stopping; retry in a while"
_stopped: set[str] = set()  # the work folders of servers that stopped (stop_workers): their requests start no worker
_starting: list[threading.Thread] = []  # start_workers' thread, which stop_workers waits for


def error_html(message: str) -> str:
    return f'<div class="hfkv"><p class="error" id="hfkv-error">{markup(message)}</p></div>'


def run_page(settings: Settings, token: str | None, what: str, deadline: Deadline,
             work: Callable[..., tuple[str, str]], args: tuple) -> tuple[str, str]:
    """``page_work`` in a worker process, killed at the deadline, its memory bounded by ``PAGE_MEMORY``.
    Its Hub cache folder is made and removed here: a killed worker removes nothing. Where there are no
    worker processes (Windows), a thread as before: the page answers at the deadline, the work ends when
    its bounded Hub requests do."""
    if not worker.available():
        return within(deadline, lambda: page_work(work, args, settings, token, what, deadline))
    if settings.work_folder in _stopped:
        raise PageError(STOPPING)
    if deadline.left() <= 0:
        raise DeadlineExceeded()
    worker.preload(PRELOAD)  # the first worker's parent imports them (a no-op once they are listed)
    folder = tempfile.mkdtemp(prefix="hfkv-page-", dir=settings.work_folder)
    try:
        return worker.run(page_work, work, args, settings, token, what, deadline, folder,
                          limits=worker.Limits(seconds=deadline.left(), memory_bytes=PAGE_MEMORY))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def page_work(work: Callable[..., tuple[str, str]], args: tuple, settings: Settings, token: str | None, what: str,
              deadline: Deadline, cache_dir: str | None = None) -> tuple[str, str]:
    """One request's work, in its worker process (or thread): its Hub session (its cache in ``cache_dir``
    when given), then ``work(session, deadline, *args)``; (HTML, JSON), not yet scrubbed; a failure is its
    one line. Module-level, as ``work`` is: a worker process imports both by name."""
    try:
        with Session(settings, token, cache_dir=cache_dir) as session:
            return work(session, deadline, *args)
    except MemoryError:  # the worker's bound: its runner says so (WorkerOutOfMemory)
        raise
    except Exception as err:  # never a traceback on the page: one line
        if isinstance(err, RuntimeError) and "new thread" in str(err):  # a thread's stack past the bound
            raise MemoryError() from None
        return error_html(failure_line(err, deadline=settings.deadline, what=what)), ""


def start_workers() -> None:
    """At the server's start: the workers' parent process (it imports ``PRELOAD``, ~1 s) is started in
    the background, so the first request does not wait for it."""
    if worker.available():
        worker.preload(PRELOAD)
        _starting[:] = [threading.Thread(target=_start_worker_parent, name="hfkv-worker-start", daemon=True)]
        _starting[0].start()


def _start_worker_parent() -> None:
    try:
        worker.run(_ready, limits=worker.Limits(seconds=worker.START_TIMEOUT))
    except Exception:  # noqa: BLE001 - the first request starts it again, and says why if it cannot
        pass


def _ready() -> bool:
    return True


def warm() -> None:
    """In the workers' parent, once (``PRELOAD``), what every worker would otherwise do afresh at its
    request (a worker starts from its parent's memory): one malloc arena, one TLS context, the Hub
    client's user agent (which huggingface_hub may fetch from the Hub, up to 3 s). No thread started: a
    fork copies a held lock. ``serve_pages.warm`` then runs a page of each tab."""
    from huggingface_hub.utils import build_hf_headers

    from hfkv._version import __version__

    _one_malloc_arena()
    _one_tls_context()
    build_hf_headers(token=False, library_name="hfkv", library_version=__version__)


def _one_malloc_arena() -> None:
    """glibc gives each thread that allocates an arena of its own, 64 MiB of address space reserved each:
    under the workers' RLIMIT_AS, a Compare of 8 Hub repos (a thread each) failed below 2 GiB while it
    uses ~30 MiB. One arena for all (``mallopt(M_ARENA_MAX, 1)``), set in the workers' parent, so every
    worker has it; elsewhere nothing (another libc has no such option, or no such arenas)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).mallopt(-8, 1)  # M_ARENA_MAX (glibc's malloc.h)


def _one_tls_context() -> None:
    """huggingface_hub closes its HTTP client in a forked process (``os.register_at_fork``), and the next
    client reads the system's certificates again for its TLS context: 25-30 ms of every request in a
    worker (measured), ~1 ms with a context made before. Here, in the workers' parent, httpcore2's
    default context is made once and kept for every client made after: a context is safely shared, and
    hfkv passes no client certificate (httpx2's only change to the context it gets). Elsewhere (another
    httpcore2) nothing changes but the cost."""
    with contextlib.suppress(Exception):
        import httpcore2

        make = httpcore2.default_ssl_context
        kept: dict[bool, Any] = {}

        def default_ssl_context(*, _trust_env: bool = True) -> Any:
            if _trust_env not in kept:
                kept[_trust_env] = make(_trust_env=_trust_env)
            return kept[_trust_env]

        default_ssl_context(_trust_env=True)
        httpcore2.default_ssl_context = default_ssl_context


def stop_workers(work_folder: str | None) -> None:
    """At the stop of the server whose requests work in ``work_folder``: none of them starts a worker any
    more, and the running ones are killed (their requests then remove their folders; the server removes
    its own folder after this). A start still under way is waited for (about a second): killed in
    ``warm``, the workers' parent would leave its temporary folder behind."""
    if work_folder is not None:
        _stopped.add(work_folder)
    for thread in _starting:
        thread.join(worker.START_TIMEOUT)
    _starting.clear()
    worker.stop()
