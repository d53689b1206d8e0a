"""How a Hub request fails, and what is tried again: transport failures told apart from answers, one
more try where the library cannot make it, and 429 waits on the library's clock.

huggingface_hub's own loop retries network errors and ``RETRIED_STATUSES``; 429 is left out of
it so that ``HubClient`` can cap the wait (``MAX_WAIT_SECONDS`` in ``hfkv.sources.hub``). Two failures
the library cannot retry get one more try here (``retry_once``): a body cut mid-way, and the
shared client closed under a request by another thread.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, TypeVar

log = logging.getLogger("hfkv.sources.hub")

T = TypeVar("T")


def retry_after_seconds(headers: Any) -> int | None:
    """The wait a 429 asks for: ``RateLimit: "api";r=0;t=N`` first, else ``Retry-After: N`` (seconds)."""
    from huggingface_hub.utils import parse_ratelimit_headers

    info = parse_ratelimit_headers(headers)
    if info is not None:
        return info.reset_in_seconds
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    return int(value) if value is not None and str(value).strip().isdigit() else None


def status_of(err: BaseException) -> int | None:
    response = getattr(err, "response", None)
    return getattr(response, "status_code", None)


def library_sleep(seconds: float) -> None:
    """Wait before a retry on huggingface_hub's clock: its waits and ours are one sequence (and a
    test that stubs the library's clock stubs both)."""
    from huggingface_hub.utils import _http

    _http.time.sleep(seconds)


# Statuses the library's own loop retries: 429 is left out, so that its wait can be capped here.
RETRIED_STATUSES = (408, 500, 502, 503, 504)


class BodyCut(Exception):
    """The connection dropped, or the deadline passed, while the body was read (after the library's
    retries had ended)."""

    timed_out = False

    @classmethod
    def of(cls, err: BaseException) -> "BodyCut":
        import httpx2

        cut = cls(str(err))
        cut.timed_out = isinstance(err, httpx2.TimeoutException) or getattr(err, "timed_out", False)
        return cut


def retry_once(call: Callable[[], T], when: Callable[[BaseException], bool] | None = None) -> T:
    """``call()``, tried a second time after a failure ``when`` accepts (default: a transport failure).

    In a thread pool, huggingface_hub closes its shared HTTP client when any thread hits a
    ConnectError, killing other threads' requests with ReadError or RuntimeError("...client has been
    closed") (docs/hub.md §8.5); a reset connection surfaces the same way. The second try gets a new client.
    """
    try:
        return call()
    except Exception as err:
        if not (when or is_transport_error)(err):
            raise
        log.debug("transient %s, retrying once", type(err).__name__)
        return call()


def transient(err: BaseException) -> bool:
    """A failure that a cached copy may stand in for: no connection, a 5xx, or a 429."""
    from huggingface_hub.errors import HfHubHTTPError

    if is_transport_error(err):
        return True
    response = getattr(err, "response", None) if isinstance(err, HfHubHTTPError) else None
    return response is not None and (response.status_code == 429 or response.status_code >= 500)


def second_try_helps(err: BaseException) -> bool:
    """For the config GET, whose request the library already retries on network errors: a body cut
    mid-way, or the shared client closed under us by another thread."""
    return isinstance(err, BodyCut) or client_closed(err)


def client_closed(err: BaseException) -> bool:
    return isinstance(err, RuntimeError) and "client has been closed" in str(err)


def is_request_error(err: BaseException) -> bool:
    import httpx2

    return isinstance(err, httpx2.RequestError)


def is_transport_error(err: BaseException) -> bool:
    import httpx2

    return isinstance(err, (httpx2.TransportError, BodyCut)) or client_closed(err)


def transport_reason(err: BaseException) -> str:
    import httpx2

    if isinstance(err, httpx2.ConnectError):
        return "could not connect"
    if isinstance(err, httpx2.TimeoutException) or getattr(err, "timed_out", False):
        return "timed out"
    if isinstance(err, RuntimeError):
        return "HTTP client closed under the request"
    return "connection dropped mid-response"
