"""The defaults that ``save_pretrained`` leaves out of config.json, from transformers' own config classes.

``lookup(candidates, data)`` builds the first transformers config class that accepts the config
(``candidates``: model types, each with whether to take its text sub-config) and returns its full
``to_dict()``, made JSON-plain; None when transformers is missing or no class accepts the data.
Only classes that transformers itself ships are used: ``auto_map`` and ``trust_remote_code`` are
dropped (``DROPPED_KEYS``), no repo code runs.

Importing transformers costs 0.7 s on a quick machine and 1.6 s on the 2-core VM the benchmarks run
on, more than a 300-repo scan spends on everything else. Inside ``helper_running()``, the first
lookup made inside ``deferring()`` starts a child process (``python -I -c ...``: isolated, with
this process's import path minus the working directory, see ``child_path``) that
imports transformers on another core and raises ``NotReady``: the scan reports on other models
while the child imports, and asks again later; later lookups go to the child. A list with no sparse
config starts no child. Any trouble with the child (it cannot start, dies, or takes over
``HELPER_TIMEOUT``) sends lookups back to this process: the answers are the same either way, only
the time differs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

Candidates = list[tuple[str, bool]]  # (model_type, take get_text_config())

# Never handed to a config class: ``auto_map`` names repo code, ``trust_remote_code`` would ask to
# run it (so "never passed" holds literally, whatever a config says), ``model_type`` picks the class.
DROPPED_KEYS = frozenset({"auto_map", "trust_remote_code", "model_type"})
HELPER_TIMEOUT = 120.0  # seconds for one answer, the child's transformers import included
# The child: isolated (-I: no PYTHON* variables, no user site, no working directory on its path),
# then given this process's import path without the working directory (see ``child_path``).
_CHILD = "import sys; sys.path[:] = {path!r}; from hfkv.model.defaults import serve; serve()"
_LOCK = threading.Lock()  # first import of transformers (threads may see a half-initialised module)
_active: "Helper | None" = None
_may_start = False  # inside helper_running(): the first deferring lookup starts the helper
_local = threading.local()


class NotReady(Exception):
    """Raised by ``lookup`` inside ``deferring()`` while the helper is still importing transformers."""


@contextlib.contextmanager
def deferring(enabled: bool = True) -> Iterator[None]:
    """In this thread, inside the block: ``lookup`` raises ``NotReady`` rather than wait for the helper."""
    before = getattr(_local, "defer", False)
    _local.defer = enabled
    try:
        yield
    finally:
        _local.defer = before


def ready() -> bool:
    """True when a lookup would not wait for the helper's start (no helper, or it is ready or gone)."""
    helper = _active
    return helper is None or helper.ready.is_set()


def lookup(candidates: Candidates, data: dict) -> dict | None:
    """Defaults for ``data`` (see the module docstring): from the answers kept on disk
    (``AnswerFile``), else from the helper process when one runs, else computed here."""
    key = answer_key(candidates, data)
    kept = _ANSWERS.get(key)
    if kept is not None:
        return kept
    answer = _ask(candidates, data)
    if answer is not None:
        _ANSWERS.put(key, answer)
    return answer


def _ask(candidates: Candidates, data: dict) -> dict | None:
    helper = _active
    if helper is None and _may_start and getattr(_local, "defer", False):
        helper = _start_helper()
    if helper is not None:
        if getattr(_local, "defer", False) and not helper.ready.is_set():
            raise NotReady
        answer = helper.ask(candidates, data)
        if answer is not _FAILED:
            return answer
    return compute(candidates, data)


# -- answers kept on disk ---------------------------------------------------------------------------

ANSWERS_FORMAT = 1  # bump when compute() would answer differently for the same input
ANSWERS_LIMIT = 64 * 1024 * 1024  # bytes of the answer file read at most; past it, it is ignored


def answer_key(candidates: Candidates, data: dict) -> str:
    """What an answer depends on besides transformers' version: the candidates and the config."""
    text = json.dumps([candidates, data], sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class AnswerFile:
    """Answers of ``compute`` kept between runs, one JSON line each, in
    ``$HF_HOME/hfkv/tfdefaults-<transformers version>-<format>.jsonl``.

    transformers costs 0.7-1.6 s to import; its answers for one config never change for one
    version of it, so a config seen before (a second report, a warm scan) needs no import at
    all. Only dict answers are kept (None may mean transformers is missing or broken). The file
    holds data only (read with ``json``); a damaged line is skipped; any error reading or
    writing it (read-only home, no transformers) just means no kept answers. Appends are opened
    without following a symlink.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: dict[str, dict] | None = None
        self._path: str | None = None

    def get(self, key: str) -> dict | None:
        with self._lock:
            return self._load().get(key)

    def put(self, key: str, answer: dict) -> None:
        with self._lock:
            answers = self._load()
            if key in answers or self._path is None:
                return
            answers[key] = answer
            line = json.dumps({"key": key, "defaults": answer}, sort_keys=True) + "\n"
            try:
                os.makedirs(os.path.dirname(self._path), exist_ok=True)
                fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
                with os.fdopen(fd, "a", encoding="utf-8") as handle:
                    handle.write(line)
            except OSError:
                pass

    def _load(self) -> dict[str, dict]:
        """The answers of the file for the current ``HF_HOME`` (read again when it changes)."""
        path = _answers_path()
        if self._answers is None or path != self._path:
            self._path = path
            self._answers = _read_answers(path) if path is not None else {}
        return self._answers


_TF_VERSION: list[str | None] = []  # transformers' installed version, looked up once


def _answers_path() -> str | None:
    """The answer file for the installed transformers under ``HF_HOME``, or None without one."""
    if not _TF_VERSION:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found: str | None = version("transformers")
        except (PackageNotFoundError, ValueError):
            found = None
        _TF_VERSION.append(found)
    if _TF_VERSION[0] is None:
        return None
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    safe = "".join(c if c.isalnum() or c in ".-+" else "_" for c in _TF_VERSION[0])
    return os.path.join(home, "hfkv", f"tfdefaults-{safe}-{ANSWERS_FORMAT}.jsonl")


def _read_answers(path: str) -> dict[str, dict]:
    answers: dict[str, dict] = {}
    try:
        with open(path, "rb") as handle:
            raw = handle.read(ANSWERS_LIMIT + 1)
    except OSError:
        return answers
    if len(raw) > ANSWERS_LIMIT:
        return answers
    for line in raw.decode("utf-8", "replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and isinstance(item.get("key"), str) and isinstance(item.get("defaults"), dict):
            answers[item["key"]] = item["defaults"]
    return answers


_ANSWERS = AnswerFile()


def compute(candidates: Candidates, data: dict) -> dict | None:
    """``lookup`` in this process."""
    mapping = _config_mapping()
    if mapping is None:  # transformers missing or broken: no defaults, the mapper decides
        return None
    kwargs = {k: v for k, v in data.items() if k not in DROPPED_KEYS}
    for model_type, text_of_it in candidates:
        with _LOCK:  # the first lookup of a type imports its configuration module
            if not model_type or model_type not in mapping:
                continue
            cls = mapping[model_type]
        for attempt in (kwargs, {}):
            try:
                config = cls(**attempt)
                if text_of_it:
                    config = config.get_text_config()
                return _plain(config.to_dict())
            except Exception:  # strict dataclass checks reject odd values; try bare defaults
                continue
    return None


def _plain(data: dict) -> dict:
    """JSON-plain (what the helper's pipe carries), so both paths give identical values."""
    return json.loads(json.dumps(data, default=str))


def _config_mapping() -> Any:
    """transformers' CONFIG_MAPPING, imported once under a lock, or None when unavailable."""
    with _LOCK:
        try:
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # no "PyTorch was not found" noise
            os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
            from transformers import CONFIG_MAPPING

            CONFIG_MAPPING.keys()  # force the lazy mapping to load while holding the lock
            return CONFIG_MAPPING
        except Exception:
            return None


# -- the helper process --------------------------------------------------------------------------

_FAILED = object()


class Helper:
    """A child process answering lookups, one JSON line in, one out."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _CHILD.format(path=child_path())], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8", bufsize=1,
            cwd=_package_root(),
        )
        self._answers: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._dead = False
        self.ready = threading.Event()  # set once the child has imported transformers (or has ended)
        threading.Thread(target=self._read, name="hfkv-tfdefaults", daemon=True).start()

    def _read(self) -> None:
        try:
            for line in self._proc.stdout:
                if not self.ready.is_set():
                    self.ready.set()  # the first line only says the import is done
                    continue
                self._answers.put(line)
        except (OSError, ValueError):
            pass
        self.ready.set()
        self._answers.put(None)  # the child ended

    def ask(self, candidates: Candidates, data: dict) -> Any:
        """The child's answer, or ``_FAILED`` (the caller computes in process)."""
        with self._lock:
            if self._dead:
                return _FAILED
            try:
                self._proc.stdin.write(json.dumps({"candidates": candidates, "data": data}) + "\n")
                self._proc.stdin.flush()
                line = self._answers.get(timeout=HELPER_TIMEOUT)
                answer = json.loads(line)["defaults"]
                if answer is None or isinstance(answer, dict):
                    return answer
            except (OSError, ValueError, TypeError, KeyError, queue.Empty):
                pass
            self._dead = True
            self._proc.kill()
            return _FAILED

    def close(self) -> None:
        """End the child now: no lookup is pending, and one still importing must not delay the exit."""
        self._proc.kill()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self._proc.stdin.close()
            self._proc.wait(timeout=5)


def _package_root() -> str:
    """The folder holding the ``hfkv`` package this process runs (site-packages, or a checkout)."""
    return str(Path(__file__).resolve().parents[1])


def child_path() -> list[str]:
    """The helper's import path: this process's, in order, with the working directory (``''`` or
    the cwd itself) replaced by the folder this ``hfkv`` came from. So the child imports the very
    hfkv and transformers this process would, and nothing planted in the working directory."""
    cwd, root = os.getcwd(), _package_root()
    path: list[str] = []
    for entry in sys.path:
        entry = root if not entry or os.path.abspath(entry) == cwd else entry
        if entry not in path:
            path.append(entry)
    if root not in path:
        path.insert(0, root)
    return path


def _start_helper() -> "Helper | None":
    """Start the helper once (None when it cannot start: lookups then stay in this process)."""
    global _active, _may_start
    with _LOCK:
        if _active is None and _may_start:
            _may_start = False
            try:
                _active = Helper()
            except OSError:
                _active = None
        return _active


@contextlib.contextmanager
def helper_running(enabled: bool = True) -> Iterator[None]:
    """Inside the block, a lookup that would import transformers here starts a helper process instead
    (when ``enabled``, transformers is not imported yet and the machine has a second core)."""
    global _active, _may_start
    _may_start = enabled and _worth_starting()
    try:
        yield
    finally:
        _may_start = False
        helper, _active = _active, None
        if helper is not None:
            helper.close()


def _worth_starting() -> bool:
    """A helper pays off when transformers is still to be imported and another core can do it."""
    return "transformers" not in sys.modules and (os.cpu_count() or 1) > 1


def serve() -> None:
    """The child: import transformers at once, then answer one JSON line per request until EOF."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    out, sys.stdout = sys.stdout, sys.stderr  # whatever a library prints must not enter the pipe
    _config_mapping()
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            request = json.loads(line)
            candidates = [(str(t), bool(text)) for t, text in request["candidates"]]
            answer = compute(candidates, request["data"])
        except Exception:
            answer = None
        out.write(json.dumps({"defaults": answer}) + "\n")
        out.flush()


if __name__ == "__main__":  # python -m hfkv.model.defaults: the helper, by hand
    serve()
