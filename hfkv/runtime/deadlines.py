"""Deadlines for huggingface_hub's HTTP client: every request ends within its timeout.

httpx's own timeouts bound each wait for a byte, so a server that sends one byte a second holds a
request forever. ``install_deadlines`` (once per process) wraps the library's client so that, inside
``request_deadline(seconds)``, every request — each retry and redirect hop — ends within ``seconds``
of being sent, headers and body together. ``sync_http_only`` is for a process that runs no async
HTTP (hfkv's command line): httpcore2 is then imported without trio.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
import time
from typing import Any, Iterator

_DEADLINE = threading.local()  # .budget: seconds per request in this thread; .at: when the current one ends
_INSTALLED = threading.Lock()
_installed = False


@contextlib.contextmanager
def request_deadline(seconds: float) -> Iterator[None]:
    """In this thread, inside the block: every HTTP request (each retry and redirect hop) ends within
    ``seconds`` of being sent, headers and body together; past it, the read in progress times out."""
    before = getattr(_DEADLINE, "budget", None)
    _DEADLINE.budget = seconds
    try:
        yield
    finally:
        _DEADLINE.budget, _DEADLINE.at = before, None


def install_deadlines() -> None:
    """Make huggingface_hub's HTTP client honour ``request_deadline`` (once per process).

    The client is the library's own (its session, proxies, retries and error classes), built by
    the factory in use, plus two things: a request hook that starts the clock of each request,
    and a network layer whose reads and writes wait at most until that clock runs out. httpx's
    own timeouts bound each wait for a byte, so without this a server that sends one byte a
    second holds a request forever. Threads outside ``request_deadline`` are not affected.
    """
    global _installed
    with _INSTALLED:
        if _installed:
            return
        if _sync_http_only:
            _import_sync_http()
        from huggingface_hub.utils import _http, set_client_factory

        previous = getattr(_http, "_GLOBAL_CLIENT_FACTORY", _http.default_client_factory)
        set_client_factory(lambda: _with_deadlines(previous()))
        _installed = True


_sync_http_only = False


def sync_http_only() -> None:
    """Declare that this process runs no async HTTP (hfkv's own command line calls this).

    Then the first ``HubClient`` imports httpcore2 without trio (see ``_import_sync_http``). Only a
    process that owns its whole HTTP stack may say so: a library user's application may run httpx2
    under trio after importing hfkv, so ``import hfkv`` alone never does this.
    """
    global _sync_http_only
    _sync_http_only = True


def _import_sync_http() -> None:
    """Import httpcore2 (under huggingface_hub) without trio, unless the process already uses trio.

    hfkv's HTTP is synchronous, but httpcore2 imports trio, when it is installed, for its async
    locks: ~40% of the Hub stack's import time (~110 ms here), for nothing hfkv runs. trio itself
    stays importable afterwards; only httpcore2's async primitives under trio are off in this
    process, which is why only ``sync_http_only`` processes do it.
    """
    if "httpcore2" in sys.modules or "trio" in sys.modules:
        return
    sys.modules["trio"] = None  # type: ignore[assignment]  # "import trio" raises ImportError meanwhile
    try:
        importlib.import_module("httpcore2")  # imported now, without trio; later imports reuse it
    finally:
        if sys.modules.get("trio", 0) is None:
            del sys.modules["trio"]


def _with_deadlines(client: Any) -> Any:
    client.event_hooks["request"].append(_start_clock)
    for transport in [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is not None and not isinstance(backend, _DeadlineBackend):
            pool._network_backend = _DeadlineBackend(backend)
    return client


def _start_clock(request: Any) -> None:
    budget = getattr(_DEADLINE, "budget", None)
    _DEADLINE.at = time.monotonic() + budget if budget else None


def _clamp(timeout: float | None, expired: type[Exception]) -> float | None:
    """``timeout`` cut to what is left of this thread's request deadline; ``expired`` once it is past."""
    at = getattr(_DEADLINE, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise expired("the request took longer than its deadline")
    return left if timeout is None else min(timeout, left)


class _DeadlineBackend:
    """httpcore's network backend (the same methods, delegated), with connects bounded by the
    request deadline (see ``_clamp``)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> Any:
        import httpcore2

        stream = self._inner.connect_tcp(host, port, _clamp(timeout, httpcore2.ConnectTimeout), local_address,
                                         socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
        import httpcore2

        return _DeadlineStream(self._inner.connect_unix_socket(path, _clamp(timeout, httpcore2.ConnectTimeout),
                                                               socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _DeadlineStream:
    """httpcore's connection (the same methods, delegated), every read and write waiting at most
    until the request deadline."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        import httpcore2

        return self._inner.read(max_bytes, _clamp(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        import httpcore2

        self._inner.write(buffer, _clamp(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        import httpcore2

        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                     _clamp(timeout, httpcore2.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)
