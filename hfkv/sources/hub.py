"""Hub access: config.json (and, on request, parameter counts) from a Hugging Face Hub repo.

``HubClient`` holds the endpoint, token and cache explicitly and passes them to every huggingface_hub
call, so nothing depends on when ``huggingface_hub.constants`` was imported (docs/hub.md §1).

Contract:
* ``load_config`` downloads ``config.json`` only: one GET online (cold or warm: the answer carries
  the commit, and a config is a few kB, so a HEAD first would only add a request), none offline or
  for a commit already cached. The file goes into the huggingface_hub cache layout (``hfkv.sources.cache``)
  so that ``--offline`` and other tools find it. It never asks for ``.py`` files and never passes
  ``trust_remote_code``: a config with ``auto_map`` is read as JSON. (huggingface_hub's
  ``hf_hub_download`` costs a HEAD + GET and ~6 ms of CPU per file; this path ~1 ms: docs/hub.md §5.)
* Every failure becomes ``SourceError(kind, one line, source=repo_id)``; kinds: ``gated``,
  ``not-found``, ``no-config``, ``bad-revision``, ``rate-limited``, ``network``, ``offline``,
  ``invalid-json``, ``too-large``, ``hub-error``, ``cache``.
* ``weights`` never raises: parameter counts per dtype, or None (one plain GET of
  ``/api/models/{repo}?expand=safetensors``, sent with the config GET when ``prefetch_weights``).
* ``list_models`` pages through a listing on the endpoint's own origin only, at most
  ``MAX_LISTING_PAGES`` pages.
* Bounded: every request made through huggingface_hub's client inside ``request_deadline`` ends
  within the timeout, headers and body together (``hfkv.runtime.deadlines``); 429 waits are capped at
  ``MAX_WAIT_SECONDS``.
* Secrets: the token is never formatted into a message, repr or log line. Messages are built from
  our own words, the status code and the server's message (``scrub``: the token sent whatever its
  shape, anything token-shaped, URL user info); never from ``str()`` of an httpx request, response
  or headers, which carry ``Authorization``. The token goes only to the endpoint's origin.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import os
import re
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from hfkv._version import __version__
from hfkv.sources import cache as hubcache
from hfkv.runtime import notices
from hfkv.runtime.deadlines import install_deadlines, request_deadline
from hfkv.sources.failures import (RETRIED_STATUSES, BodyCut, is_request_error, is_transport_error, library_sleep,
                      retry_after_seconds, retry_once, second_try_helps, status_of, transient, transport_reason)
from hfkv.sources.weights import weights_summary
from hfkv.errors import SourceError, UsageError
from hfkv.text import add_secret, redact
from hfkv.sources.parse import MAX_CONFIG_BYTES, LoadedConfig, parse_config_bytes, too_large

log = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
# Hub tokens are "hf_" + 30-odd letters/digits; anything of that shape is redacted from server text
# (the token actually sent is redacted whatever its shape: ``text.add_secret``).
_TOKEN_SHAPE = re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{16,}")
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")  # user:password@ in any URL a server echoes
# The longest wait a 429 may ask for that hfkv honours; past it the repo fails at once, saying so
# (an hour-long Retry-After would otherwise hold a report or a scan's worker for that hour).
MAX_WAIT_SECONDS = 60
# Pages of a model listing followed at most (1,000 models a page on the Hub): a listing whose
# "next" links never end stops here with a warning.
MAX_LISTING_PAGES = 50



class HubClient:
    """Endpoint, token and cache for every Hub call hfkv makes.

    ``endpoint``: default ``HF_ENDPOINT``, else huggingface.co. ``token``: a string, ``False`` (send
    none), ``True`` (require the stored one) or None (huggingface_hub resolves ``HF_TOKEN``, then the
    token file). ``cache_dir``: default ``HF_HUB_CACHE``, else ``$HF_HOME/hub``. ``offline``: True, or
    ``HF_HUB_OFFLINE`` set (which ``offline=False`` cannot override); offline, only the cache is read.
    ``timeout``: seconds to wait for each answer (default ``HF_HUB_DOWNLOAD_TIMEOUT``, else 10).
    ``retries``: further tries of a config GET after a network error, a 429 or a 5xx, 1, 2, 4, 8, 8 s
    apart or as long as the Hub asks, up to ``MAX_WAIT_SECONDS`` (default 5, huggingface_hub's);
    none when a cached copy can stand in. ``timeout`` bounds each request as a whole, headers and
    body (a server that drips one byte a second is cut off), not only each wait for a byte, so a
    Hub that never answers holds a config for at most (retries + 1) × timeout + the waits:
    6 × 10 + 23 = 83 s by default. ``prefetch_weights``: ``load_config`` also starts the
    parameter-count request, so both go out together and ``weights`` answers from it.
    """

    def __init__(
        self, *, endpoint: str | None = None, token: str | bool | None = None, cache_dir: str | None = None,
        offline: bool | None = None, timeout: float | None = None, retries: int = 5,
        prefetch_weights: bool = False,
    ) -> None:
        from huggingface_hub import constants

        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
        _register_userinfo(self.endpoint)
        _check_endpoint(self.endpoint)
        self._token = token  # private: never shown (see __repr__)
        if isinstance(token, str):
            add_secret(token)
        self.cache_dir = str(cache_dir or _default_cache(constants.HF_HUB_CACHE))
        # HF_HUB_OFFLINE wins over offline=False: the library refuses every request in that mode anyway.
        self.offline = bool(offline) or _truthy(os.environ.get("HF_HUB_OFFLINE")) or bool(constants.HF_HUB_OFFLINE)
        self.timeout = timeout
        self.retries = retries
        self.prefetch_weights = prefetch_weights
        self._api: Any = None
        self._built_headers: dict[str, str] | None = None
        self._lock = threading.Lock()
        self._prefetched: dict[tuple[str, str | None], Future] = {}
        install_deadlines()
        notices.install()  # a person at a terminal hears of retries and slow answers (hfkv's command line)

    def __repr__(self) -> str:
        token = {None: "implicit", True: "stored", False: "none"}.get(self._token, "explicit")  # type: ignore[arg-type]
        return (f"HubClient(endpoint={self.public_endpoint!r}, cache_dir={self.cache_dir!r}, offline={self.offline}, "
                f"token={token})")

    @property
    def public_endpoint(self) -> str:
        """The endpoint without any user:password@ (for messages)."""
        parts = urlsplit(self.endpoint)
        netloc = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

    @property
    def host(self) -> str:
        """The endpoint's host[:port], for messages (no scheme, path or user info)."""
        parts = urlsplit(self.endpoint)
        return parts.hostname + (f":{parts.port}" if parts.port else "") if parts.hostname else self.endpoint

    @property
    def api(self) -> Any:
        """An ``HfApi`` bound to this client's endpoint and token (for listings, model_info, ...)."""
        with self._lock:
            if self._api is None:
                from huggingface_hub import HfApi

                self._api = HfApi(endpoint=self.endpoint, token=self._token)
            return self._api

    # -- config.json --------------------------------------------------------------------------------

    def load_config(self, repo_id: str, revision: str | None = None) -> LoadedConfig:
        """``config.json`` of ``repo_id`` at ``revision`` (default branch when None), parsed as data.

        Online: one GET of the file (its answer carries the commit), stored in the cache. Offline, or
        for a commit already cached: the cache, no request. When the Hub cannot be reached or answers
        5xx/429 and a copy of that revision is cached, the copy is used at once (no retries) and
        ``LoadedConfig.warnings`` says so. ``commit`` is the 40-hex commit read.
        Raises ``SourceError`` (see the module docstring for the kinds).
        """
        if log.isEnabledFor(logging.DEBUG):  # resolving the token state reads the token file: only for the log
            log.debug("fetching %s from %s (revision %s, offline %s, token %s)",
                      repo_id, self.host, revision or "main", self.offline, self._token_state())
        if self.prefetch_weights and not self.offline:
            self._start_weights(repo_id, revision)
        try:
            with notices.waiting(self.host, f"each try ends after {self._timeout():g} s, {self.retries} retries"):
                return self._load(repo_id, revision)
        except Exception as err:
            with self._lock:  # no report will ask for these weights
                self._prefetched.pop((repo_id, revision), None)
            error = self._source_error(err, repo_id, revision)
            if error is None:
                raise
        # Raised outside the except block, so it carries no __context__: the library's exception
        # holds the request (with its Authorization header) and the server's unfiltered text.
        raise error

    def _load(self, repo_id: str, revision: str | None) -> LoadedConfig:
        from huggingface_hub.utils import validate_repo_id

        validate_repo_id(repo_id)
        cached = hubcache.cached_file(self.cache_dir, repo_id, CONFIG_FILE, revision)
        if self.offline or (cached is not None and revision is not None and _COMMIT.match(revision)):
            if cached is None:
                raise self._offline_error(repo_id, revision)
            return self._from_cache(repo_id, revision, cached)
        try:
            return retry_once(lambda: self._fetch_waiting(repo_id, revision, retries=0 if cached else self.retries),
                               when=second_try_helps)
        except Exception as err:
            if cached is None or not transient(err):
                raise
            reason = self._source_error(err, repo_id, revision)
            why = reason.message if reason is not None else type(err).__name__  # ``err`` ends with the block
        loaded = self._from_cache(repo_id, revision, cached)
        return dataclasses.replace(loaded, warnings=(f"read the cached {CONFIG_FILE} (commit {loaded.commit}) "
                                                     f"because the Hub did not answer: {why}",))

    def _fetch_waiting(self, repo_id: str, revision: str | None, *, retries: int) -> LoadedConfig:
        """``_fetch``, with HTTP 429 waited for here: as long as the Hub asks (+1 s, as huggingface_hub
        does) up to ``MAX_WAIT_SECONDS``, else 1, 2, 4, 8 s; past the cap, ``rate-limited`` at once."""
        tries = 0
        while True:
            try:
                return self._fetch(repo_id, revision, retries=retries - tries)
            except Exception as err:
                if status_of(err) != 429 or tries >= retries:
                    raise
                asked = retry_after_seconds(err.response.headers)
                if asked is not None and asked > MAX_WAIT_SECONDS:
                    raise SourceError("rate-limited", f"rate-limited by {self.host} (HTTP 429): the Hub asks to wait "
                                                      f"{asked} s, more than hfkv waits ({MAX_WAIT_SECONDS} s); retry "
                                                      "later", source=repo_id) from None
                wait = asked + 1 if asked is not None else min(8.0, 2.0 ** tries)
                notices.note(self.host, f"rate-limited by {self.host} (HTTP 429); trying again in {wait:g} s "
                                        f"(retry {tries + 1} of {retries})")
                library_sleep(wait)
                tries += 1

    def _fetch(self, repo_id: str, revision: str | None, *, retries: int) -> LoadedConfig:
        """One GET of config.json (redirects followed), parsed and stored in the cache."""
        from huggingface_hub.utils import hf_raise_for_status, http_stream_backoff

        url = f"{self.endpoint}/{quote(repo_id, safe='/')}/resolve/{quote(revision or 'main', safe='')}/{CONFIG_FILE}"
        failure: Exception | None = None
        with request_deadline(self._timeout()), http_stream_backoff(
                "GET", url, headers=self._headers(), timeout=self._timeout(), max_retries=retries,
                retry_on_status_codes=RETRIED_STATUSES) as response:
            try:
                hf_raise_for_status(response)
                commit = _commit(response)
                body = _read_body(response, repo_id)
            except Exception as err:
                # Raised once the stream is closed: thrown into the library's retry generator, a body
                # cut mid-way would be retried there and break it ("generator didn't stop after throw").
                failure = BodyCut.of(err) if is_transport_error(err) else err
        if failure is not None:
            raise failure
        if commit is None:
            raise SourceError("hub-error", f"{self.host} did not answer like a Hugging Face Hub (no commit "
                                           "header): check HF_ENDPOINT/--endpoint and any proxy")
        data = parse_config_bytes(body, repo_id)
        warnings: tuple[str, ...] = ()
        try:
            hubcache.store(self.cache_dir, repo_id, CONFIG_FILE, revision=revision, commit=commit, body=body)
        except OSError as err:  # the report stands; only --offline later will miss this copy
            warnings = (f"could not write the cache {self.cache_dir}: {err.strerror or type(err).__name__}",)
        return LoadedConfig(name=repo_id, data=data, source="hub", commit=commit, revision=revision, warnings=warnings)

    def _from_cache(self, repo_id: str, revision: str | None, path: Path) -> LoadedConfig:
        data = parse_config_bytes(_read_limited(path, repo_id), repo_id)
        commit = path.parent.name
        return LoadedConfig(name=repo_id, data=data, source="hub",
                            commit=commit if _COMMIT.match(commit) else None, revision=revision)

    def _headers(self) -> dict[str, str]:
        """User agent and ``Authorization`` (token resolved like huggingface_hub), built once per client."""
        if self._built_headers is None:
            from huggingface_hub.utils import build_hf_headers

            headers = build_hf_headers(token=self._token, library_name="hfkv", library_version=__version__)
            sent = headers.get("authorization") or headers.get("Authorization") or ""
            if sent.lower().startswith("bearer "):
                add_secret(sent[7:])  # whatever its shape, the token sent is redacted from every message
            self._built_headers = headers
        return self._built_headers

    def _timeout(self) -> float:
        from huggingface_hub import constants

        return self.timeout if self.timeout is not None else float(constants.HF_HUB_DOWNLOAD_TIMEOUT)

    # -- parameter counts ---------------------------------------------------------------------------

    def weights(self, repo_id: str, revision: str | None = None) -> dict[str, Any] | None:
        """Parameter counts per dtype and the bytes they take, or None when nothing is known.

        One API request (``GET /api/models/{repo}?expand=safetensors``, the Hub's own count; the one
        ``load_config`` started when ``prefetch_weights`` is set); only when that field is missing,
        the safetensors headers (2 + one per shard resolver requests, through ``HfApi``). Offline, or
        on any failure, None: the caller warns. ``parameters_exact`` is False when packed integer
        tensors (``sources.weights.PACKED_DTYPES``) are present: bytes stay exact, the parameter count counts stored
        elements.
        """
        if self.offline:
            return None
        with self._lock:
            started = self._prefetched.pop((repo_id, revision), None)
        return started.result() if started is not None else self._weights(repo_id, revision)

    def _start_weights(self, repo_id: str, revision: str | None) -> None:
        """Start ``weights(repo_id, revision)`` in a thread; ``weights`` then waits for its answer."""
        future: Future = Future()
        with self._lock:
            self._prefetched[(repo_id, revision)] = future

        def run() -> None:
            future.set_result(self._weights(repo_id, revision))  # _weights never raises

        threading.Thread(target=run, name="hfkv-weights", daemon=True).start()

    def _weights(self, repo_id: str, revision: str | None) -> dict[str, Any] | None:
        at = f"/revision/{quote(revision, safe='')}" if revision else ""
        url = f"{self.endpoint}/api/models/{quote(repo_id, safe='/')}{at}?expand=safetensors"
        try:
            info = retry_once(lambda: self.get_json(url))
        except Exception as err:  # never fatal: the report stands without weights
            log.debug("weights of %s: model info failed (%s)", repo_id, type(err).__name__)
            return None
        st = info.get("safetensors") if isinstance(info, dict) else None
        try:
            if isinstance(st, dict) and isinstance(st.get("parameters"), dict):
                return weights_summary(dict(st["parameters"]), st.get("total"), source="metadata")
            with request_deadline(self._timeout()):
                meta = retry_once(lambda: self.api.get_safetensors_metadata(repo_id, revision=revision))
            return weights_summary(dict(meta.parameter_count), None, source="headers")
        except Exception as err:  # no safetensors file, gated headers, or counts of an unexpected shape
            log.debug("weights of %s: no parameter counts (%s)", repo_id, type(err).__name__)
            return None

    # -- plain API requests ---------------------------------------------------------------------

    def get_json(self, url: str, *, retries: int = 0) -> Any:
        """``GET url`` (on this endpoint) as JSON, within the request deadline; the token only
        if ``url`` is on the endpoint's origin. Raises the library's HTTP errors."""
        response = self._get(url, retries=retries)
        return json.loads(response.content)

    def _get(self, url: str, *, retries: int) -> Any:
        from huggingface_hub.utils import hf_raise_for_status, http_backoff

        if self.offline:  # no request at all: not 25 s of retries to a Hub the user said not to ask
            raise SourceError("offline", f"offline (--offline or HF_HUB_OFFLINE=1): {self.host} is not asked "
                                         "(listings and model information need the Hub; only configs are cached)")

        headers = self._headers() if same_origin(url, self.endpoint) else _without_token(self._headers())
        with request_deadline(self._timeout()):
            response = http_backoff("GET", url, headers=headers, timeout=self._timeout(), max_retries=retries,
                                    retry_on_status_codes=RETRIED_STATUSES)
        hf_raise_for_status(response)
        return response

    def list_models(self, author: str, *, limit: int, expand: list[str]) -> tuple[list["ListedModel"], list[str]]:
        """The newest ``limit`` models of ``author`` (newest first) and why the listing is incomplete.

        One request per page of the Hub's listing; "next" pages are followed only on the
        endpoint's own origin (the token goes nowhere else) and at most ``MAX_LISTING_PAGES``.
        Each returned message (``"AUTHOR: ..."``) names a point where the listing was cut short; an
        empty list means every page was read (``hfkv watch`` counts each message as a listing error).
        Raises the library's HTTP and transport errors (the caller reports a failed listing).
        """
        query = urlencode([("author", author), ("sort", "createdAt"), ("direction", "-1"), ("limit", str(limit))]
                          + [("expand", e) for e in expand])
        url: str | None = f"{self.endpoint}/api/models?{query}"
        models: list[ListedModel] = []
        warnings: list[str] = []
        for page in range(MAX_LISTING_PAGES + 1):
            if url is None or len(models) >= limit:
                break
            if page == MAX_LISTING_PAGES:
                warnings.append(f"{author}: listing stopped after {MAX_LISTING_PAGES} pages (the Hub kept "
                                "linking more)")
                break
            if not same_origin(url, self.endpoint):
                warnings.append(f"{author}: listing page on another host ({_host_of(url)}) not followed")
                break
            response = self._get(url, retries=self.retries)
            body = json.loads(response.content)
            models += [ListedModel.from_api(item) for item in body if isinstance(item, dict)] if isinstance(body, list) else []
            url = response.links.get("next", {}).get("url")
        return models[:limit], warnings

    def author_exists(self, author: str) -> bool | None:
        """Whether the Hub knows ``author`` as a user or an organisation; None when it cannot tell."""
        for kind in ("users", "organizations"):
            try:
                self._get(f"{self.endpoint}/api/{kind}/{quote(author, safe='')}/overview", retries=0)
                return True
            except Exception as err:
                if status_of(err) != 404:
                    return None
        return False

    # -- errors --------------------------------------------------------------------------------------

    def _token_state(self) -> str:
        return "sent" if self._token_sent() else "none"

    def _token_sent(self) -> bool:
        """Whether a token goes out with requests (resolved like huggingface_hub; the value is not kept)."""
        if self._token is False:
            return False
        if isinstance(self._token, str):
            return True
        from huggingface_hub import constants
        from huggingface_hub.utils import get_token

        if self._token is None and constants.HF_HUB_DISABLE_IMPLICIT_TOKEN:
            return False
        try:
            return get_token() is not None
        except Exception:
            return False

    def _scrub(self, text: str) -> str:
        """One line of server text without secrets: the token sent (any shape), anything
        token-shaped, and the user:password of any URL."""
        return scrub(text)[:200]

    def _source_error(self, err: BaseException, repo_id: str, revision: str | None) -> SourceError | None:
        """The ``SourceError`` for a failed config download (docs/hub.md §8.5 order), or None if unknown."""
        from huggingface_hub.errors import (
            GatedRepoError, HFValidationError, LocalEntryNotFoundError, LocalTokenNotFoundError, OfflineModeIsEnabled,
            RemoteEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError,
        )

        def fail(kind: str, message: str) -> SourceError:
            return SourceError(kind, message, source=repo_id)

        if isinstance(err, SourceError):
            return err.with_source(repo_id)

        token_hint = "" if self._token_sent() else " (no token was sent: set HF_TOKEN or pass --token)"
        if isinstance(err, GatedRepoError):
            page = f"{self.public_endpoint}/{repo_id}"
            if self._token_sent():
                return fail("gated", f"gated repo: the token sent has not been granted access; request access on "
                                     f"{page} with its account")
            return fail("gated", f"gated repo: request access on {page}, then set HF_TOKEN or pass --token "
                                 "(no token was sent)")
        if isinstance(err, RepositoryNotFoundError):
            return fail("not-found", f"repo not found on {self.host}, or private" +
                        (token_hint or " and the token sent cannot see it"))
        if isinstance(err, RevisionNotFoundError):
            return fail("bad-revision", f"revision '{revision}' not found (expected a branch, tag or commit)")
        if isinstance(err, RemoteEntryNotFoundError):
            return fail("no-config", f"repo has no {CONFIG_FILE} at revision '{revision or 'main'}'")
        if isinstance(err, LocalEntryNotFoundError):
            cause = err.__cause__
            if cause is None or isinstance(cause, OfflineModeIsEnabled):
                return self._offline_error(repo_id, revision)
            return self._source_error(cause, repo_id, revision) or fail("hub-error", self._scrub(str(err)))
        if isinstance(err, OfflineModeIsEnabled):
            return self._offline_error(repo_id, revision)
        if isinstance(err, HFValidationError):
            # The library's sentence ends by quoting the id again (whole, however long): the line names it once.
            reason = re.sub(r":\s*'[^']*'?\s*\.?$", "", str(err).splitlines()[0])
            return fail("not-found", "not a valid Hub repo id or revision: " + self._scrub(reason))
        http = self._http_error(err, repo_id)
        if http is not None:
            return http
        if is_transport_error(err):
            return fail("network", f"cannot reach the Hub at {self.host} ({transport_reason(err)}); check the "
                                   "network and HF_ENDPOINT/--endpoint, or use --offline for a cached copy")
        if is_request_error(err):  # httpx's other request failures: a redirect loop, an undecodable body
            return fail("hub-error", f"{self.host} gave an unusable answer ({type(err).__name__}): check "
                                     "HF_ENDPOINT/--endpoint and any proxy")
        if isinstance(err, LocalTokenNotFoundError):  # token=True and none stored (an OSError subclass)
            return fail("hub-error", "a token is required but none is set: set HF_TOKEN, pass --token or run "
                                     "`hf auth login`")
        if isinstance(err, OSError):  # the cache: permissions, disk full
            return fail("cache", f"cannot use the cache at {self.cache_dir}: {err.strerror or type(err).__name__}")
        return None

    def _http_error(self, err: BaseException, repo_id: str) -> SourceError | None:
        """``rate-limited`` / ``hub-error`` for an HTTP error the named cases did not cover."""
        from huggingface_hub.errors import DisabledRepoError, FileMetadataError, HfHubHTTPError

        if isinstance(err, DisabledRepoError):
            return SourceError("hub-error", f"the repo is disabled on {self.host} (HTTP 403)", source=repo_id)
        if isinstance(err, FileMetadataError):
            return SourceError("hub-error", f"{self.host} did not answer like a Hugging Face Hub (no commit or "
                                            "ETag header): check HF_ENDPOINT/--endpoint and any proxy", source=repo_id)
        if not isinstance(err, HfHubHTTPError) or getattr(err, "response", None) is None:
            return None
        status = err.response.status_code
        if status == 429:
            wait = retry_after_seconds(err.response.headers)
            when = f"the Hub asks to wait {wait} s" if wait is not None else "retry later"
            hint = "" if self._token_sent() else "; a token (HF_TOKEN or --token) raises the limit"
            return SourceError("rate-limited", f"rate-limited by {self.host} (HTTP 429): {when}{hint}", source=repo_id)
        # The Hub's one-line X-Error-Message first: server_message also appends the body's copy of it.
        message = self._scrub(err.response.headers.get("X-Error-Message") or err.server_message or "") or "no message"
        if status == 401:
            message += " (the token was rejected: check HF_TOKEN or --token)" if self._token_sent() else ""
        return SourceError("hub-error", f"{self.host} answered HTTP {status}: {message}", source=repo_id)

    def _offline_error(self, repo_id: str, revision: str | None) -> SourceError:
        at = f"@{revision}" if revision else ""
        return SourceError("offline", f"offline, and {CONFIG_FILE} of {repo_id}{at} is not in the cache "
                                      f"{self.cache_dir}; run once online (without --offline or HF_HUB_OFFLINE=1)",
                           source=repo_id)


# -- helpers --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ListedModel:
    """One model of a listing: what ``watch`` reads (``id``, ``created_at``, ``sha``, ``safetensors``)."""

    id: str
    created_at: dt.datetime | None = None
    sha: str | None = None
    safetensors: Any = None  # SimpleNamespace(parameters={dtype: n}, total=n) or None

    @classmethod
    def from_api(cls, item: dict[str, Any]) -> "ListedModel":
        from types import SimpleNamespace

        st = item.get("safetensors")
        safetensors = SimpleNamespace(parameters=st.get("parameters"), total=st.get("total")) if isinstance(st, dict) else None
        sha = item.get("sha")
        return cls(id=str(item.get("id") or item.get("modelId") or ""), created_at=_when(item.get("createdAt")),
                   sha=sha if isinstance(sha, str) else None, safetensors=safetensors)


def _when(value: Any) -> dt.datetime | None:
    """An ISO time from the Hub ('2025-06-01T00:00:00.000Z'), or None when absent or unreadable."""
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)


def scrub(text: Any) -> str:
    """``text`` on one line without secrets: every token hfkv sent (``text.redact``), anything
    token-shaped, and the user:password of any URL."""
    line = redact(" ".join(str(text).split()))
    return _USERINFO.sub("<credentials>@", _TOKEN_SHAPE.sub("<token>", line))


def _register_userinfo(endpoint: str) -> None:
    """The user and password of an endpoint URL are secrets too (``text.add_secret``)."""
    try:
        parts = urlsplit(endpoint)
    except ValueError:  # an unparsable URL: hide whatever stands between :// and @
        parts = None
    users = [parts.username, parts.password] if parts else [m.group(0)[:-1] for m in _USERINFO.finditer(endpoint)]
    for secret in users:
        if secret:
            add_secret(secret)


def _check_endpoint(endpoint: str) -> None:
    """An http(s) URL with a host (and a numeric port, if any), else one ``UsageError`` line."""
    try:
        parts = urlsplit(endpoint)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError as err:
        ok, why = False, str(err)
    else:
        why = "it needs http:// or https:// and a host"
    if not ok:
        shown = scrub(_USERINFO.sub("", endpoint))[:120]
        raise UsageError(f"--endpoint / HF_ENDPOINT {shown!r} is not a Hub URL: {why}")


def same_origin(url: str, endpoint: str) -> bool:
    """Whether ``url`` has the scheme, host and port of ``endpoint`` (where the token may go)."""
    a, b = urlsplit(url), urlsplit(endpoint)
    return (a.scheme, a.hostname, a.port) == (b.scheme, b.hostname, b.port)


def _host_of(url: str) -> str:
    return urlsplit(url).hostname or "?"


def _without_token(headers: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() != "authorization"}


def _commit(response: Any) -> str | None:
    """The commit the file was read at: ``X-Repo-Commit`` of the last Hub answer that carried one.

    A redirect to a CDN puts it on the Hub's 302, not on the CDN's answer; a renamed repo's 307
    carries none, its target does. None when absent or not 40 hex.
    """
    for answer in reversed([*response.history, response]):
        commit = (answer.headers.get("X-Repo-Commit") or "").strip().lower()
        if commit:
            return commit if _COMMIT.match(commit) else None
    return None


def _read_body(response: Any, repo_id: str) -> bytes:
    """The streamed body, refused past the config size limit (checked on Content-Length, then as read)."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > MAX_CONFIG_BYTES:
        raise too_large(int(declared), repo_id)
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_CONFIG_BYTES:
            raise too_large(None, repo_id)
        chunks.append(chunk)
    return b"".join(chunks)


def _read_limited(path: Path, repo_id: str) -> bytes:
    """The file's bytes; ``too-large`` past the config size limit (checked before reading)."""
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise too_large(size, repo_id)
        return path.read_bytes()
    except OSError as err:
        raise SourceError("cache", f"cannot read the cached {CONFIG_FILE}: {err.strerror or type(err).__name__}",
                          source=repo_id) from None


def _default_cache(library_default: str) -> str:
    """``HF_HUB_CACHE``, else ``$HF_HOME/hub``, read now (the library froze its value at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    return library_default


def _truthy(value: str | None) -> bool:
    return (value or "").strip().upper() in {"1", "ON", "YES", "TRUE"}
