"""A fake Hugging Face Hub on 127.0.0.1 for tests (stdlib ``http.server`` only; docs/hub.md §1).

    hub = FakeHub(token="hf_valid", fixtures_dir=Path("fixtures"))
    hub.add_model("org/m", {"config.json": {...}}, created_at="2025-06-01T00:00:00.000Z",
                  safetensors={"model.safetensors": {"w": ("BF16", [4096, 4096])}},
                  gated=False | "auto" | "manual", private=False, disabled=False)
    hub.add_revision("org/m", "v1", {"config.json": {...}})   # a branch/tag with other files
    hub.aliases["org/old"] = "org/m"                           # renamed repo -> 307
    hub.faults["org/x"] = Fault(status=503, headers={"Retry-After": "1"}, times=1)
    with hub.running():
        hf_hub_download("org/m", "config.json", endpoint=hub.url, cache_dir=tmp)
        hub.requests("org/m")   # [{method, path, query, repo, file, auth, range, host, user_agent}, ...]

What it serves, and why (each point was measured against huggingface_hub 2.4):
* ``HEAD|GET /{repo}/resolve/{revision}/{file}`` with ``X-Repo-Commit`` (40 hex) and ``ETag``: without
  either the library refuses the file. ``Range`` gets a 206 (safetensors headers are read by range).
* Errors carry ``X-Error-Code`` (``RepoNotFound``, ``GatedRepo``, ``EntryNotFound``, ``RevisionNotFound``):
  over ``http://`` the library classifies by that header only, never by the status code.
  Missing/private repo: 401 without a valid token, 404 with one. Gated: 401 without a token, 403 with a
  token that is not granted (``hub.ungranted_tokens``), served with ``hub.token``. A wrong token: 401
  "Invalid credentials in Authorization header" (no error code), like the real Hub.
* ``GET /api/models/{repo}[/revision/{rev}]`` (``?expand=`` keeps only the named fields),
  ``GET /api/models/{repo}/tree/{rev}`` (the commit's files, as hf-mem lists them), ``GET
  /api/models?author=&sort=createdAt&limit=&expand=`` newest first (pages of ``hub.page_size`` linked by
  ``Link: <...>; rel="next"``), ``GET /api/whoami-v2``. Anything else: 404.
* HTTP/1.1 with ``Content-Length`` (connection reuse), Nagle off (a 44 ms stall per body otherwise),
  listen backlog 256 (SYN-retransmit stalls with 128 concurrent connects otherwise).
* Faults (``hub.faults[repo]``, a ``Fault`` or a ``(status, headers)`` tuple): a status with headers,
  ``reset`` (RST, no answer), ``truncate`` (announce the full length, send part, close), ``slow`` (sleep
  ``delay`` first), ``invalid-utf8`` (same length, bytes that are not UTF-8), ``redirect`` (302 to
  ``hub.cdn_url`` on another origin, ``localhost`` instead of ``127.0.0.1``, which serves the blob and
  logs whether an ``Authorization`` header arrived). ``times`` limits a fault to its first N matches.
* Repos not added explicitly are served from ``fixtures/<org>__<name>/config.json`` on first use.
* ``hub.resolve_cache = True`` answers a resolve with the real Hub's same-origin 307 to
  ``/api/resolve-cache/models/{repo}/{commit}/{file}?etag=...`` (seen since 2025-07,
  huggingface/swift-transformers#209); the 307 carries no commit, the cached answer does.

Sleeps use ``_sleep`` bound at import, so a test that stubs ``time.sleep`` inside huggingface_hub does
not speed up or break the server.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import sys
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

_sleep = time.sleep
DEFAULT_CREATED = "2024-01-01T00:00:00.000Z"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NOWHERE = "http://127.0.0.1:9"  # discard port: nothing listens, connections are refused at once


@dataclass
class Fault:
    """A failure injected into the responses for one repo.

    ``kind``: ``status`` (answer ``status`` with ``headers`` and ``message``), ``reset``, ``truncate``,
    ``slow`` (then answer normally), ``invalid-utf8``, ``redirect``. ``where``: ``resolve``, ``api`` or
    ``all``. ``file``: only this file (resolve only). ``methods``: only these methods.
    ``times``: only the first N matching requests (None = every one).
    """

    kind: str = "status"
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "Internal Error"
    delay: float = 0.0
    where: str = "all"
    file: str | None = None
    methods: tuple[str, ...] = ("HEAD", "GET")
    times: int | None = None
    hits: int = 0

    def matches(self, method: str, area: str, filename: str | None) -> bool:
        if method not in self.methods or (self.where != "all" and self.where != area):
            return False
        if self.file is not None and filename != self.file:
            return False
        return self.times is None or self.hits < self.times


@dataclass
class Repo:
    """One model repo: commits (sha -> files), refs (name -> sha) and Hub metadata."""

    repo_id: str
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    created_at: str = DEFAULT_CREATED
    gated: bool | str = False
    private: bool = False
    disabled: bool = False
    api_safetensors: Any = None  # {"parameters": {...}, "total": n}, or None to leave the field out


def _commit_sha(repo_id: str, revision: str, files: dict[str, bytes]) -> str:
    digest = hashlib.sha1(f"{repo_id}@{revision}".encode())
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha1(files[name]).digest())
    return digest.hexdigest()


def _as_bytes(content: Any) -> bytes:
    if isinstance(content, bytes):
        return content
    if isinstance(content, str):
        return content.encode()
    return json.dumps(content, indent=2).encode()


def safetensors_header(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A header-only safetensors file: 8-byte little-endian length, then the JSON header (no data)."""
    sizes = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "U16": 2}
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        count = 1
        for dim in shape:
            count *= dim
        nbytes = count * sizes.get(dtype, 1)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    body = json.dumps(header).encode()
    return struct.pack("<Q", len(body)) + body


def parameters_by_dtype(files: dict[str, dict[str, tuple[str, list[int]]]]) -> dict[str, Any]:
    """The Hub's ``safetensors`` field: element counts per dtype over all files, and their total."""
    counts: dict[str, int] = {}
    for tensors in files.values():
        for dtype, shape in tensors.values():
            n = 1
            for dim in shape:
                n *= dim
            counts[dtype] = counts.get(dtype, 0) + n
    return {"parameters": counts, "total": sum(counts.values())}


class FakeHub:
    """The fake Hub: models, faults, a request log and a server on 127.0.0.1 (port 0)."""

    def __init__(self, *, token: str = "hf_valid", latency: float = 0.0, fixtures_dir: Path | None = FIXTURES) -> None:
        self.token = token
        self.ungranted_tokens: set[str] = set()  # valid tokens with no access to gated repos
        self.latency = latency
        self.fixtures_dir = fixtures_dir
        self.repos: dict[str, Repo] = {}
        self.aliases: dict[str, str] = {}
        self.faults: dict[str, Fault | tuple] = {}
        self.page_size = 1000
        self.resolve_cache = False
        self.next_link_base: str | None = None
        self.endless_listing = False
        self.users: set[str] = set()
        self.organizations: set[str] = set()
        self.log: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- content -------------------------------------------------------------------------------

    def add_model(
        self, repo_id: str, files: dict[str, Any] | None = None, *, created_at: str = DEFAULT_CREATED,
        safetensors: dict[str, dict[str, tuple[str, list[int]]]] | None = None, api_safetensors: Any = "auto",
        gated: bool | str = False, private: bool = False, disabled: bool = False,
    ) -> Repo:
        """Add (or replace) a repo whose ``main`` holds ``files`` (dicts are served as JSON).

        ``safetensors``: header-only weight files ``{filename: {tensor: (dtype, shape)}}``; several files
        get a ``model.safetensors.index.json``. ``api_safetensors``: the ``safetensors`` field of
        ``/api/models`` ("auto" = counted from ``safetensors``; None = left out, as for repos the Hub has
        not analysed).
        """
        content = {name: _as_bytes(data) for name, data in (files or {}).items()}
        if safetensors:
            for name, tensors in safetensors.items():
                content[name] = safetensors_header(tensors)
            if len(safetensors) > 1:
                weight_map = {t: name for name, tensors in safetensors.items() for t in tensors}
                content["model.safetensors.index.json"] = _as_bytes({"metadata": {}, "weight_map": weight_map})
        if api_safetensors == "auto":
            api_safetensors = parameters_by_dtype(safetensors) if safetensors else None
        repo = Repo(repo_id, created_at=created_at, gated=gated, private=private, disabled=disabled,
                    api_safetensors=api_safetensors)
        with self._lock:
            self.repos[repo_id] = repo
        self.add_revision(repo_id, "main", content)
        return repo

    def add_revision(self, repo_id: str, name: str, files: dict[str, Any]) -> str:
        """Point branch/tag ``name`` at a new commit holding ``files``; returns the commit sha."""
        content = {fname: _as_bytes(data) for fname, data in files.items()}
        sha = _commit_sha(repo_id, name, content)
        with self._lock:
            repo = self.repos[repo_id]
            repo.commits[sha] = content
            repo.refs[name] = sha
        return sha

    def add_fixture(self, repo_id: str, folder: str | None = None, **kwargs: Any) -> Repo:
        """A repo whose config.json is ``fixtures/<folder>/config.json`` (folder default: org__name)."""
        assert self.fixtures_dir is not None
        path = self.fixtures_dir / (folder or repo_id.replace("/", "__")) / "config.json"
        return self.add_model(repo_id, {"config.json": path.read_bytes()}, **kwargs)

    def commit(self, repo_id: str, revision: str = "main") -> str:
        """The commit sha ``revision`` points at."""
        repo = self._repo(repo_id)
        assert repo is not None, repo_id
        return repo.refs[revision]

    def _repo(self, repo_id: str) -> Repo | None:
        with self._lock:
            repo = self.repos.get(repo_id)
        if repo is None and self.fixtures_dir is not None:
            path = self.fixtures_dir / repo_id.replace("/", "__") / "config.json"
            if "/" in repo_id and ".." not in repo_id and path.is_file():
                return self.add_fixture(repo_id)
        return repo

    # -- requests made ----------------------------------------------------------------------------

    def requests(self, repo: str | None = None, *, method: str | None = None, file: str | None = None) -> list[dict]:
        """Logged requests, optionally only those for ``repo`` / ``method`` / ``file``."""
        with self._lock:
            entries = list(self.log)
        return [e for e in entries if (repo is None or e["repo"] == repo) and (method is None or e["method"] == method)
                and (file is None or e["file"] == file)]

    def calls(self, repo: str | None = None) -> list[tuple[str, str]]:
        """``(method, path)`` of the logged requests, for compact assertions."""
        return [(e["method"], e["path"]) for e in self.requests(repo)]

    def reset(self) -> None:
        """Forget the log and the faults (repos stay)."""
        with self._lock:
            self.log.clear()
            self.faults.clear()
            self.aliases.clear()
            self.ungranted_tokens.clear()
            self.latency = 0.0
            self.page_size = 1000
            self.resolve_cache = False
            self.next_link_base = None
            self.endless_listing = False
            self.users.clear()
            self.organizations.clear()

    # -- server -----------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "FakeHub is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def cdn_url(self) -> str:
        """The same server under another origin (``localhost``): a stand-in for the Hub's CDN."""
        return self.url.replace("127.0.0.1", "localhost")

    def start(self) -> "FakeHub":
        server = _Server(("127.0.0.1", 0), _Handler)
        server.hub = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="fakehub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @contextlib.contextmanager
    def running(self) -> Iterator["FakeHub"]:
        self.start()
        try:
            yield self
        finally:
            self.stop()

    # -- used by the handler ------------------------------------------------------------------------

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.log.append(entry)

    def _fault_for(self, repo_id: str | None, method: str, area: str, filename: str | None) -> Fault | None:
        with self._lock:
            fault = self.faults.get(repo_id) if repo_id else None
            if isinstance(fault, tuple):
                status, headers = fault
                fault = self.faults[repo_id] = Fault(status=status, headers=dict(headers))
            if fault is None or not fault.matches(method, area, filename):
                return None
            fault.hits += 1
            return fault


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # the default 5 stalls bursts of new connections for seconds
    hub: FakeHub

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that closes a connection mid-answer (an error body it did not read) is no error here;
        the default prints a traceback to stderr, which CLI tests capture."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; every response has a Content-Length
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid the delayed-ACK stall
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_GET(self) -> None:
        self._dispatch()

    # -- plumbing --------------------------------------------------------------------------------

    @property
    def hub(self) -> FakeHub:
        return self.server.hub

    def _dispatch(self) -> None:
        split = urlsplit(self.path)
        self._query = parse_qs(split.query)
        parts = [unquote(p) for p in split.path.split("/")[1:]]
        self._entry = {
            "method": self.command, "path": split.path, "query": split.query, "repo": None, "file": None,
            "auth": _bearer(self.headers.get("Authorization")), "range": self.headers.get("Range"),
            "if_none_match": self.headers.get("If-None-Match"), "user_agent": self.headers.get("User-Agent"),
            "host": self.headers.get("Host"),
        }
        # Logged before answering (and completed before the answer is sent), so a client that has its
        # answer always finds its request in the log.
        self.hub._record(self._entry)
        if self.hub.latency:
            _sleep(self.hub.latency)
        try:
            if len(parts) >= 5 and parts[2] == "resolve":
                self._resolve(f"{parts[0]}/{parts[1]}", parts[3], "/".join(parts[4:]))
            elif parts[:3] == ["api", "resolve-cache", "models"] and len(parts) >= 7:
                self._resolve(f"{parts[3]}/{parts[4]}", parts[5], "/".join(parts[6:]), cached=True)
            elif parts[:1] == ["cdn"] and len(parts) >= 4:
                self._cdn(f"{parts[1]}/{parts[2]}", parts[3], "/".join(parts[4:]))
            elif parts[:2] == ["api", "models"] and len(parts) == 2:
                self._list_models()
            elif parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "tree":
                self._tree(f"{parts[2]}/{parts[3]}", parts[5])
            elif parts[:2] == ["api", "models"] and len(parts) >= 4:
                revision = parts[5] if len(parts) >= 6 and parts[4] == "revision" else None
                self._model_info(f"{parts[2]}/{parts[3]}", revision)
            elif parts[:2] == ["api", "whoami-v2"]:
                self._whoami()
            elif parts[:2] in (["api", "users"], ["api", "organizations"]) and len(parts) == 4 and parts[3] == "overview":
                self._overview(parts[1], parts[2])
            else:
                self._error(404, None, "Not Found")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
              content_type: str = "application/json", fault: Fault | None = None) -> None:
        """One response with Content-Length; ``fault`` may corrupt, cut or drip it."""
        if fault is not None and fault.kind == "drip-headers":
            self._drip(f"HTTP/1.1 {status} OK\r\nContent-Length: {len(body)}\r\n".encode(), fault.delay)
            return
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command == "HEAD":
            return
        if fault is not None and fault.kind == "truncate":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault is not None and fault.kind == "invalid-utf8":
            body = b"\xff\xfe" + body[2:]
        if fault is not None and fault.kind == "drip":
            self.wfile.flush()
            self._drip(body, fault.delay)
            return
        self.wfile.write(body)

    def _drip(self, data: bytes, delay: float) -> None:
        """``data`` one byte every ``delay`` s, then the connection closed (a client gone ends it early)."""
        self.close_connection = True
        try:
            for i in range(len(data)):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                _sleep(delay)
        except OSError:
            pass

    def _error(self, status: int, code: str | None, message: str, headers: dict[str, str] | None = None) -> None:
        extra = {"X-Error-Message": " ".join(message.split())}  # a header is one line; the body keeps it all
        if code:
            extra["X-Error-Code"] = code
        extra.update(headers or {})
        self._send(status, json.dumps({"error": message}).encode(), extra)

    def _apply_fault(self, repo_id: str | None, area: str, filename: str | None) -> Fault | None:
        """Apply a status/reset/slow fault; return a body fault (truncate, invalid-utf8, redirect) or None.

        Returns the sentinel ``_HANDLED`` when the request has been answered (or dropped) already.
        """
        fault = self.hub._fault_for(repo_id, self.command, area, filename)
        if fault is None:
            return None
        if fault.delay:
            _sleep(fault.delay)
        if fault.kind == "status":
            self._error(fault.status, None, fault.message, fault.headers)  # headers may add X-Error-Code
            return _HANDLED
        if fault.kind == "reset":
            # RST instead of FIN: the client sees a reset connection and no response at all.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return _HANDLED
        if fault.kind == "slow":
            return None
        return fault

    def _access(self, repo: Repo, area: str) -> tuple[int, str, str] | None:
        """None when the caller may read ``repo``; else (status, X-Error-Code, message)."""
        token = self._entry["auth"]
        valid = token == self.hub.token or token in self.hub.ungranted_tokens
        if repo.disabled:
            return 403, "", "Access to this resource is disabled."
        if repo.private and token != self.hub.token:
            return (404 if valid else 401), "RepoNotFound", "Repository not found"
        if repo.gated and area == "resolve" and token != self.hub.token:
            if valid:
                return 403, "GatedRepo", f"Access to model {repo.repo_id} is restricted and you are not in the authorized list."
            return 401, "GatedRepo", f"Access to model {repo.repo_id} is restricted. You must have access to it and be authenticated to access it."
        return None

    def _find(self, repo_id: str, area: str) -> Repo | None:
        """The repo, or None after answering an error (bad token, missing, alias redirect handled by caller)."""
        token = self._entry["auth"]
        if token is not None and token != self.hub.token and token not in self.hub.ungranted_tokens:
            self._error(401, None, "Invalid credentials in Authorization header")
            return None
        repo = self.hub._repo(repo_id)
        if repo is None:
            self._error(404 if token else 401, "RepoNotFound", "Repository not found")
            return None
        denied = self._access(repo, area)
        if denied is not None:
            self._error(denied[0], denied[1] or None, denied[2])
            return None
        return repo

    # -- endpoints ----------------------------------------------------------------------------------

    def _resolve(self, repo_id: str, revision: str, filename: str, cached: bool = False) -> None:
        self._entry.update(repo=repo_id, file=filename)
        if repo_id in self.hub.aliases:
            target = f"/{self.hub.aliases[repo_id]}/resolve/{quote(revision, safe='')}/{filename}"
            self._send(307, b"", {"Location": target})
            return
        fault = self._apply_fault(repo_id, "resolve", filename)
        if fault is _HANDLED:
            return
        repo = self._find(repo_id, "resolve")
        if repo is None:
            return
        sha = self._commit_of(repo, revision)
        if sha is None:
            return
        files = repo.commits[sha]
        if filename not in files:
            self._error(404, "EntryNotFound", f"{filename} does not exist on \"{revision}\"", {"X-Repo-Commit": sha})
            return
        body = files[filename]
        etag = hashlib.sha1(body).hexdigest()
        if self.hub.resolve_cache and not cached:
            location = f"/api/resolve-cache/models/{repo_id}/{sha}/{quote(filename)}?etag=%22{etag}%22"
            self._send(307, b"", {"Location": location})
            return
        headers = {"X-Repo-Commit": sha, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"}
        if fault is not None and fault.kind == "redirect":
            location = f"{self.hub.cdn_url}/cdn/{repo_id}/{sha}/{quote(filename)}"
            headers.update({"Location": location, "X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(len(body))})
            self._send(302, b"", headers)
            return
        self._send_range(body, headers, "application/octet-stream", fault)

    def _send_range(self, body: bytes, headers: dict[str, str], content_type: str, fault: Fault | None) -> None:
        wanted = self.headers.get("Range")
        if wanted and wanted.startswith("bytes=") and self.command == "GET":
            first, _, last = wanted[6:].partition("-")
            start = int(first or 0)
            end = min(int(last), len(body) - 1) if last else len(body) - 1
            if start >= len(body):
                self._send(416, b"", {"Content-Range": f"bytes */{len(body)}"})
                return
            headers = dict(headers, **{"Content-Range": f"bytes {start}-{end}/{len(body)}"})
            self._send(206, body[start:end + 1], headers, content_type, fault)
            return
        self._send(200, body, headers, content_type, fault)

    def _cdn(self, repo_id: str, sha: str, filename: str) -> None:
        self._entry.update(repo=repo_id, file=filename)
        repo = self.hub._repo(repo_id)
        files = repo.commits.get(sha, {}) if repo else {}
        if filename not in files:
            self._send(404, b"")
            return
        self._send_range(files[filename], {"ETag": f'"{hashlib.sha1(files[filename]).hexdigest()}"'},
                         "application/octet-stream", None)

    def _model_json(self, repo: Repo, sha: str, expand: list[str] | None) -> dict[str, Any]:
        files = repo.commits[sha]
        config: dict[str, Any] = {}
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            raw = json.loads(files.get("config.json", b"{}"))
            if isinstance(raw, dict):
                config = {k: raw[k] for k in ("architectures", "model_type") if k in raw}
        data: dict[str, Any] = {
            "_id": sha[:24], "id": repo.repo_id, "modelId": repo.repo_id, "author": repo.repo_id.split("/")[0],
            "sha": sha, "createdAt": repo.created_at, "lastModified": repo.created_at, "private": repo.private,
            "gated": repo.gated, "disabled": repo.disabled, "downloads": 0, "likes": 0, "tags": [],
            "library_name": "transformers", "config": config,
            "siblings": [{"rfilename": name} for name in sorted(files)],
        }
        if repo.api_safetensors is not None:
            data["safetensors"] = repo.api_safetensors
        if expand:
            data = {k: v for k, v in data.items() if k in ("_id", "id") or k in expand}
        return data

    def _model_info(self, repo_id: str, revision: str | None) -> None:
        self._entry.update(repo=repo_id)
        if self._apply_fault(repo_id, "api", None) is _HANDLED:
            return
        repo = self._find(repo_id, "api")
        if repo is None:
            return
        sha = repo.refs.get(revision or "main") or (revision if revision in repo.commits else None)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return
        self._send(200, json.dumps(self._model_json(repo, sha, self._query.get("expand"))).encode())

    def _commit_of(self, repo: Any, revision: str) -> str | None:
        """The commit ``revision`` (a ref or a commit) names in ``repo``; None after a 404 answer."""
        sha = repo.refs.get(revision) or (revision if revision in repo.commits else None)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return sha

    def _tree(self, repo_id: str, revision: str) -> None:
        """``GET /api/models/{repo}/tree/{revision}``: the files of a commit (what hf-mem lists first)."""
        self._entry.update(repo=repo_id)
        if self._apply_fault(repo_id, "api", None) is _HANDLED:
            return
        repo = self._find(repo_id, "api")
        if repo is None:
            return
        sha = self._commit_of(repo, revision)
        if sha is None:
            return
        files = repo.commits[sha]
        body = [{"type": "file", "path": name, "size": len(data), "oid": hashlib.sha1(data).hexdigest()}
                for name, data in sorted(files.items())]
        self._send(200, json.dumps(body).encode())

    def _list_models(self) -> None:
        token = self._entry["auth"]
        author = (self._query.get("author") or [None])[0]
        limit = int((self._query.get("limit") or ["0"])[0]) or None
        start = int((self._query.get("cursor") or ["0"])[0])
        self._entry.update(repo=f"{author}/*" if author else None)
        if self._apply_fault(f"{author}/*" if author else None, "api", None) is _HANDLED:
            return
        with self.hub._lock:
            repos = [r for r in self.hub.repos.values()
                     if (author is None or r.repo_id.split("/")[0] == author) and (not r.private or token == self.hub.token)]
        repos.sort(key=lambda r: r.created_at, reverse=True)  # the Hub sorts createdAt descending
        if limit:
            repos = repos[:limit]
        page = repos[start:start + self.hub.page_size]
        headers = {}
        if start + self.hub.page_size < len(repos) or self.hub.endless_listing:
            params = {k: v for k, v in self._query.items() if k != "cursor"}
            query = urlencode([(k, x) for k, vs in params.items() for x in vs] + [("cursor", start + self.hub.page_size)])
            headers["Link"] = f'<{self.hub.next_link_base or self.hub.url}/api/models?{query}>; rel="next"'
        expand = self._query.get("expand")
        body = [self._model_json(r, r.refs["main"], expand) for r in page]
        self._send(200, json.dumps(body).encode(), headers)

    def _overview(self, kind: str, name: str) -> None:
        with self.hub._lock:
            has_repos = any(r.split("/")[0] == name for r in self.hub.repos)
        known = name in self.hub.users if kind == "users" else (has_repos or name in self.hub.organizations)
        if not known:
            self._error(404, None, f"{kind[:-1].capitalize()} not found")
            return
        self._send(200, json.dumps({"name": name, "type": kind[:-1]}).encode())

    def _whoami(self) -> None:
        token = self._entry["auth"]
        if token != self.hub.token and token not in self.hub.ungranted_tokens:
            self._error(401, None, "Invalid credentials in Authorization header")
            return
        self._send(200, json.dumps({"type": "user", "name": "tester", "auth": {"type": "access_token"}}).encode())


_HANDLED: Any = object()


def _bearer(value: str | None) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header (None when absent)."""
    if not value:
        return None
    return value[7:] if value.lower().startswith("bearer ") else value
