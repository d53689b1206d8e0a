"""How the page reads the Hub for a visitor, and what it says when it cannot (docs/security.md, "The web page").

The page is a public service: whoever reaches it chooses the repo ids. So:

* The server's own token (``HF_TOKEN`` of the server's environment; never the token file of whoever
  runs it) is sent only for public repos, gated ones included: before it is used, an anonymous request
  (``GET /api/models/{repo}``, no token) must show the repo as public. A private repo the server's
  token could read stays unreadable unless the operator opts in (``Settings.allow_private``:
  ``hfkv serve --allow-private-repos`` or ``HFKV_ALLOW_PRIVATE_REPOS=1``).
* A visitor's own token (the page's token box) is used for that visitor's request only: sent to the
  configured endpoint alone (``HubClient`` sends it nowhere else), never written into a message, a
  log, the page or a link, and forgotten when the request ends (hfkv's list of values to redact
  included).
* Nothing fetched outlives its request: each request reads the Hub through a fresh ``HubClient``
  whose cache is a temporary folder removed afterwards. A config read with one visitor's token can
  never be served to another, and no config the operator's own tools cached is ever read.
* Every failure is one line naming the repo, in the page's words: a repo that does not exist and one
  the visitor cannot see read the same (``NOT_VISIBLE``); no line names the server's endpoint, its
  host or its paths (``Scrubber``), and no line is built from a traceback.
* Every request has one deadline (``Settings.deadline``): the page answers by then, with
  ``hfkv: error: … no answer within N s`` if it must, and its work, in a worker process
  (``serve_pages``), is killed then; each Hub request made for it is bounded too.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Callable, TypeVar
from urllib.parse import quote, urlsplit

from hfkv.errors import ConfigError, HfkvError, SourceError, UsageError, shorten
from hfkv.runtime.worker import WorkerCrashed, WorkerOutOfMemory, WorkerTimeout
from hfkv.text import add_secret, forget_secret, one_line
from hfkv.commands.serve_form import check_repo

T = TypeVar("T")

NOT_VISIBLE = "no such repo, or not one this page can read"
UNREACHABLE = "the Hub did not answer this server usefully; retry in a while"
NO_BOUND = "hfkv on the command line has no such bound"
DEFAULT_DEADLINE = 30.0
DEFAULT_CONCURRENCY = 4
TRUE = ("1", "true", "yes", "on")
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_\-.]{4,512}")  # what a token may look like before it goes into a header


@dataclass(frozen=True)
class Settings:
    """How the page reaches the Hub and how long a request may take.

    ``endpoint``: the Hub (None: ``HF_ENDPOINT``, else huggingface.co). ``server_token``: the server's
    token (``HF_TOKEN``), None for none. ``allow_private``: the server's token may read private repos
    too. ``deadline``: seconds a request may take, fetching and computing. ``hub_timeout``: seconds
    per Hub request (None: ``HF_HUB_DOWNLOAD_TIMEOUT``, else 10), at most half the deadline.
    ``concurrency``: requests served at once (Gradio's queue). ``work_folder``: where each request's
    cache folder is made (None: the system's temporary folder); ``hfkv serve`` gives a folder of its own,
    removed when it stops, so that a request cut short by a stop leaves nothing behind."""

    endpoint: str | None = None
    server_token: str | None = None
    allow_private: bool = False
    deadline: float = DEFAULT_DEADLINE
    hub_timeout: float | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    work_folder: str | None = None

    @classmethod
    def from_env(cls, env: Any = None, **overrides: Any) -> "Settings":
        """Settings from the environment (``HF_ENDPOINT``, ``HF_TOKEN``, ``HF_HUB_DOWNLOAD_TIMEOUT``,
        ``HFKV_ALLOW_PRIVATE_REPOS``, ``HFKV_DEADLINE``, ``HFKV_CONCURRENCY``); ``overrides`` that are
        not None win."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {
            "endpoint": env.get("HF_ENDPOINT") or None,
            "server_token": env.get("HF_TOKEN") or None,
            "allow_private": str(env.get("HFKV_ALLOW_PRIVATE_REPOS", "")).strip().lower() in TRUE,
            "deadline": _positive(env.get("HFKV_DEADLINE"), DEFAULT_DEADLINE),
            "hub_timeout": _positive(env.get("HF_HUB_DOWNLOAD_TIMEOUT"), None),
            "concurrency": int(_positive(env.get("HFKV_CONCURRENCY"), DEFAULT_CONCURRENCY)),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def __repr__(self) -> str:  # the token is never shown
        return (f"Settings(endpoint={self.endpoint!r}, server_token={'set' if self.server_token else None}, "
                f"allow_private={self.allow_private}, deadline={self.deadline}, concurrency={self.concurrency})")

    @property
    def request_timeout(self) -> float:
        """Seconds per Hub request: the Hub timeout, at most half the deadline (a request and its one
        retry fit in it)."""
        base = self.hub_timeout if self.hub_timeout is not None else 10.0
        return max(0.5, min(base, self.deadline / 2))

    def base_endpoint(self) -> str:
        if self.endpoint:
            return self.endpoint.rstrip("/")
        from huggingface_hub import constants

        return str(constants.ENDPOINT).rstrip("/")


def _positive(value: Any, default: Any) -> Any:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if number > 0 else default


# -- deadlines ------------------------------------------------------------------------------------


class DeadlineExceeded(Exception):
    """The request's deadline passed before its answer was ready."""


class Deadline:
    """The end of one request: ``left()`` seconds remain."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def fetch_left(self) -> float:
        """Seconds left for fetching: the deadline less the time kept to compute and answer (a fifth of
        it, at most 5 s), so that what was fetched in time is still shown."""
        return max(0.0, self.left() - min(5.0, self.seconds / 5))


_POOLS: dict[str, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()
POOL_SIZES = {"page": 16, "fetch": 32}  # pages computing at once (work past its deadline included); Hub loads


def pool(name: str) -> ThreadPoolExecutor:
    with _POOLS_LOCK:
        if name not in _POOLS:
            _POOLS[name] = ThreadPoolExecutor(max_workers=POOL_SIZES[name], thread_name_prefix=f"hfkv-{name}")
        return _POOLS[name]


def within(deadline: Deadline, call: Callable[[], T], *, name: str = "page") -> T:
    """``call()`` run in a worker thread, its result if it is ready before ``deadline`` ends, else
    ``DeadlineExceeded`` (the call goes on until its own bounded requests end, and cleans up after itself)."""
    future = pool(name).submit(call)
    try:
        return future.result(timeout=deadline.left())
    except FutureTimeout:
        raise DeadlineExceeded() from None


# -- tokens ---------------------------------------------------------------------------------------

_TOKEN_USERS: dict[str, int] = {}
_TOKEN_LOCK = threading.Lock()


def _hold(token: str) -> None:
    with _TOKEN_LOCK:
        _TOKEN_USERS[token] = _TOKEN_USERS.get(token, 0) + 1
    add_secret(token)


def _release(token: str, server_token: str | None) -> None:
    """The request using ``token`` is over: once no request uses it, hfkv forgets it (its list of values
    to redact holds the server's token and nothing a visitor typed)."""
    with _TOKEN_LOCK:
        left = _TOKEN_USERS.get(token, 1) - 1
        if left > 0:
            _TOKEN_USERS[token] = left
            return
        _TOKEN_USERS.pop(token, None)
        if token != server_token:
            forget_secret(token)


# -- one request's Hub access ---------------------------------------------------------------------


class PageError(Exception):
    """A failure already worded for the page (one line, ``hfkv: error: …``)."""


class Session:
    """The Hub, for one request: ``load(repo)`` reads a config (and its parameter counts) under the
    access rules above. Use as a context manager: on leaving, its temporary cache is removed and the
    visitor's token forgotten, once the last fetch it started (``submit``) has ended too: a fetch left
    running past the deadline would otherwise write into a removed folder, which then stays."""

    def __init__(self, settings: Settings, token: str | None = None, *, cache_dir: str | None = None) -> None:
        self.settings = settings
        self.visitor_token = (token or "").strip() or None
        self._given_cache = cache_dir  # made by the caller, who removes it too (a worker killed at its deadline cannot)
        self.cache_dir: str | None = None
        self.endpoint = settings.base_endpoint()
        self._lock = threading.Lock()
        self._running = 0  # fetches started by submit and not ended
        self._left = False  # the request is over: clean up when _running reaches 0

    def __enter__(self) -> "Session":
        if self.visitor_token and not TOKEN_SHAPE.fullmatch(self.visitor_token):
            raise PageError("hfkv: error: that is not a Hub token (hf_ followed by letters and digits); it was "
                            "not used")
        self.cache_dir = self._given_cache or tempfile.mkdtemp(prefix="hfkv-page-", dir=self.settings.work_folder)
        if self.visitor_token:
            _hold(self.visitor_token)
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._left = True
            now = self._running == 0
        if now:
            self._clean_up()

    def submit(self, call: Callable[..., T], *args: Any) -> "Future[T]":
        """``call(*args)`` in the fetch pool, as part of this request (its cache and token stay until it ends)."""
        with self._lock:
            self._running += 1
        future = pool("fetch").submit(call, *args)
        future.add_done_callback(self._ended)
        return future

    def _ended(self, _future: Any) -> None:
        with self._lock:
            self._running -= 1
            last = self._left and self._running == 0
        if last:
            self._clean_up()

    def _clean_up(self) -> None:
        if self.cache_dir:
            shutil.rmtree(self.cache_dir, ignore_errors=True)
        if self.visitor_token:
            _release(self.visitor_token, self.settings.server_token)

    @property
    def token(self) -> str | None:
        """The token sent: the visitor's, else the server's."""
        return self.visitor_token or self.settings.server_token

    def client(self, *, token: Any = "default") -> Any:
        """A ``HubClient`` for this request: the endpoint, the token sent, the request's own cache, no
        retries after a wait (each request bounded by ``request_timeout``)."""
        from hfkv.sources.hub import HubClient

        # A visitor's token: the parameter counts are asked after the config, in this thread, so that no
        # request of theirs is still running (holding their token) once the request is over.
        return HubClient(endpoint=self.endpoint, token=(self.token or False) if token == "default" else token,
                         cache_dir=self.cache_dir, retries=0, timeout=self.settings.request_timeout,
                         prefetch_weights=not self.visitor_token, offline=False)

    def needs_probe(self) -> bool:
        """Whether the repo must first be shown public to an anonymous request: the server's token would
        be sent, and the operator has not opted in to private repos."""
        return not self.visitor_token and bool(self.settings.server_token) and not self.settings.allow_private

    def check(self, text: str) -> tuple[str, str | None]:
        """(repo, revision) of a typed id, after the probe when ``needs_probe``; ``PageError`` otherwise."""
        from hfkv.sources import split_revision

        check_repo(text)
        repo, revision = split_revision(text)
        if self.needs_probe():
            self._probe(repo, revision)
        return repo, revision

    def load(self, text: str) -> tuple[Any, dict[str, Any] | None]:
        """(``LoadedConfig``, the checkpoint's parameter counts or None) of the Hub repo ``text``."""
        repo, revision = self.check(text)
        client = self.client()
        try:
            loaded = client.load_config(repo, revision=revision)
        except SourceError as err:
            raise PageError(self.line(err, repo)) from None
        return loaded, client.weights(repo, revision)

    def _probe(self, repo: str, revision: str | None) -> None:
        """``PageError`` unless an anonymous request shows ``repo`` (at ``revision``) as public."""
        from hfkv.sources.failures import status_of

        probe = self.client(token=False)
        url = f"{self.endpoint}/api/models/{quote(repo, safe='/')}"
        if revision:
            url += f"/revision/{quote(revision, safe='')}"
        try:
            info = probe.get_json(url)
        except Exception as err:
            status = status_of(err)
            code = (getattr(getattr(err, "response", None), "headers", None) or {}).get("X-Error-Code")
            if status == 404 and code == "RevisionNotFound":  # the repo is public: its revisions are too
                raise PageError(f"hfkv: error: {repo}: revision '{revision}' not found (expected a branch, tag or "
                                "commit)") from None
            if status in (401, 403, 404):
                raise PageError(self.line(SourceError("not-found", "", source=repo), repo)) from None
            kind = "rate-limited" if status == 429 else "network"
            raise PageError(self.line(SourceError(kind, "", source=repo), repo)) from None
        if not isinstance(info, dict) or info.get("private") is not False:
            raise PageError(self.line(SourceError("not-found", "", source=repo), repo))

    def line(self, err: SourceError, repo: str) -> str:
        """The page's one line for a Hub failure of ``repo`` (``hfkv: error: REPO: …``)."""
        name = shorten(one_line(repo))
        kind = err.kind
        if kind == "not-found":
            hint = " (or your token cannot see it)" if self.visitor_token else " (a private repo needs your own token)"
            text = NOT_VISIBLE + hint
        elif kind == "gated":
            if self.visitor_token:
                text = "gated repo: your token has not been granted access; request access on the model's page"
            elif self.settings.server_token:
                text = ("gated repo: this server's token has not been granted access; paste a token whose account "
                        "has access")
            else:
                text = "gated repo: paste a read token whose account has been granted access"
        elif kind == "rate-limited":
            text = "the Hub is rate-limiting this server; retry in a minute" + (
                "" if self.token else " (a token of your own raises the limit)")
        elif kind in ("bad-revision", "no-config", "invalid-json", "too-large"):
            text = err.message
        elif kind == "hub-error" and "HTTP 401" in err.message and self.token:
            text = ("the Hub rejected the token sent (check the token you pasted)" if self.visitor_token
                    else "the Hub rejected this server's token; paste a token of your own")
        elif kind == "network" and "timed out" in err.message:
            # One Hub request's own bound, not the page's deadline: saying "no answer within 30 s" after 10 s
            # (the adversarial run saw it after 12) told the visitor a wait they never had
            text = f"the Hub did not answer within {self.settings.request_timeout:g} s; retry in a while"
        else:  # network, hub-error, offline, cache, anything else: nothing about the server's side
            text = UNREACHABLE
        return f"hfkv: error: {name}: {text}"


# -- what a page may show -------------------------------------------------------------------------


class Scrubber:
    """Removes from any text the page shows what names the server's side: its Hub endpoint (URL, host,
    hostname), its temporary and cache folders, and the tokens (the server's and the visitor's)."""

    def __init__(self, settings: Settings, *, token: str | None = None, paths: tuple[str, ...] = ()) -> None:
        self.pairs: list[tuple[str, str]] = []
        endpoint = settings.base_endpoint()
        parts = urlsplit(endpoint)
        for secret in (token, settings.server_token):
            if secret and len(secret) >= 4:
                self.pairs.append((secret, "<token>"))
        hostname = parts.hostname or ""
        host = parts.netloc.rpartition("@")[2]
        for text in (endpoint, f"{parts.scheme}://{host}", host):
            if text and len(text) >= 4:
                self.pairs.append((text, "the Hub"))
        if hostname and len(hostname) >= 4:
            self.pairs.append((hostname, "the Hub"))
        for path in (*paths, tempfile.gettempdir(), os.environ.get("GRADIO_TEMP_DIR"), os.environ.get("HF_HOME"),
                     os.environ.get("HF_HUB_CACHE"), os.path.expanduser("~")):
            if path and len(path) >= 4 and path not in ("/tmp/",):
                self.pairs.append((str(path), "<server path>"))
        self.pairs.sort(key=lambda pair: len(pair[0]), reverse=True)  # the longest first: a URL before its host

    def __call__(self, text: str) -> str:
        from html import escape

        for secret, shown in self.pairs:
            if secret in text:
                text = text.replace(secret, shown)
            quoted = escape(secret)
            if quoted != secret and quoted in text:
                text = text.replace(quoted, escape(shown))
        return text


def failure_line(err: BaseException, *, deadline: float | None = None, what: str = "") -> str:
    """The page's one line for any failure: its own words for Hub failures and deadlines, hfkv's line for
    a config or a usage problem, and a bug is still one line, with no detail that could leak."""
    if isinstance(err, PageError):
        return str(err)
    where = f"{shorten(one_line(what))}: " if what else ""
    if isinstance(err, (DeadlineExceeded, WorkerTimeout)):  # the worker was killed at the deadline
        return f"hfkv: error: {where}no answer within {deadline or 0:g} s; retry in a while"
    if isinstance(err, WorkerOutOfMemory):  # "needed more than its memory bound of 512 MiB"
        return f"hfkv: error: {where}stopped: it {err}, which this page gives one request; {NO_BOUND}"
    if isinstance(err, WorkerCrashed):  # its words may carry a class's text: none shown
        return f"hfkv: error: {where}stopped before its answer (this page's CPU or memory bound, most likely); {NO_BOUND}"
    if isinstance(err, SourceError) and err.kind not in ("bad-revision", "no-config", "invalid-json", "too-large",
                                                         "not-found", "unreadable"):
        return f"hfkv: error: {shorten(one_line(err.source or what))}: {UNREACHABLE}"
    if isinstance(err, (ConfigError, UsageError, HfkvError)):
        return f"hfkv: error: {err}"
    return f"hfkv: error: internal error ({type(err).__name__}); please report it"
