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
import copy
import hashlib
import json
import os
import queue
import re
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

from hfkv.runtime.files import TMP_SUFFIX

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
    """Defaults for ``data`` (see the module docstring): from the answers kept on disk (``Store``),
    else from the helper process when one runs, else computed here.

    Kept on disk, per transformers version: which model types transformers knows (a type it does
    not know is answered None at once, without importing it), the keys each known type's config
    class can read (``vocabulary_of``; the others are dropped before any class is built and before
    the answer is looked up, so junk keys cost neither time nor disk), and each answer (or a class's
    refusal, None) under a hash of the candidates and the kept keys."""
    types = [t for t, _ in candidates if t]
    known = _STORE.known_types()
    if known is not None and not any(t in known for t in types):
        return None  # no class of this transformers takes these types: nothing to import
    key = _key(candidates, data, types)
    if key is not None:
        found, answer = _STORE.get(*key)
        if found:
            return answer
    answer, status = _ask(candidates, data)
    if status in (ANSWERED, REJECTED):  # UNAVAILABLE (no transformers) is not an answer to keep
        key = key or _key(candidates, data, types)  # the lookup just made wrote the vocabulary
        if key is not None:
            _STORE.put(*key, answer)
    return answer


def _key(candidates: Candidates, data: dict, types: list[str]) -> tuple[str, dict] | None:
    """(the answer's key, the config as the class sees it: ``kept``), once the vocabulary is known."""
    vocabulary = _STORE.vocabulary(types)
    if vocabulary is None:
        return None
    seen = kept(data, vocabulary)
    return answer_key(candidates, seen), seen


def kept(data: dict, vocabulary: "frozenset[str] | None") -> dict:
    """``data`` without ``DROPPED_KEYS`` and, given a vocabulary, without the keys outside it."""
    if vocabulary is None:
        return {k: v for k, v in data.items() if k not in DROPPED_KEYS}
    return {k: v for k, v in data.items() if k in vocabulary and k not in DROPPED_KEYS}


def _ask(candidates: Candidates, data: dict) -> tuple[dict | None, str]:
    helper = _active
    if helper is None and _may_start and getattr(_local, "defer", False):
        helper = _start_helper()
    if helper is not None:
        if getattr(_local, "defer", False) and not helper.ready.is_set():
            raise NotReady
        answer = helper.ask(candidates, data)
        if answer is not _FAILED:
            return answer
    return compute_status(candidates, data)


# -- answers kept on disk ---------------------------------------------------------------------------

ANSWERS_FORMAT = 2  # bump when compute() would answer differently for the same input
ANSWER_LIMIT = 1024 * 1024  # bytes of one kept answer (and of any file of the store read); larger: not kept
SHARD_LIMIT = 32  # answers kept per shard folder (256 shards: 8,192 answers at most), the oldest dropped
ANSWERED, REJECTED, UNKNOWN, UNAVAILABLE = "answered", "rejected", "unknown", "unavailable"
_STATUSES = (ANSWERED, REJECTED, UNKNOWN, UNAVAILABLE)


def answer_key(candidates: Candidates, data: dict) -> str:
    """What an answer depends on besides transformers' version: the candidates and the config."""
    text = json.dumps([candidates, data], sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Store:
    """What ``compute`` found, kept between runs in ``$HF_HOME/hfkv/tfdefaults-<transformers version>-2/``.

    transformers costs 0.7-1.6 s to import; its answers never change for one version of it, so a
    config seen before (a second report, a warm scan) and a model type it does not know need no
    import at all. Bounded and indexed: a lookup opens a few small files whatever the store holds
    (``types.json``, ``keys/<type>.json``, ``answers/<ab>/<key>.json``); each of the 256 shards
    keeps its ``SHARD_LIMIT`` newest answers, each at most ``ANSWER_LIMIT`` bytes. An answer is
    kept as what differs from the config it answers (the config's own values are not copied), so it
    stays small whatever the config's size. Files hold JSON data only; anything unreadable, damaged
    or not a regular file (a planted link is not followed) is no answer; a store that cannot be
    written (read-only home, full disk) only means nothing is kept. Every folder below ``HF_HOME``
    (``hfkv``, the store, ``keys``, ``answers``, a shard) is opened one at a time without following a
    link (``_open_folder``): a store with a linked folder is no store, nothing read through it or
    written into it. Writes are atomic (``_write_json``). The single ``tfdefaults-*-1.jsonl`` file
    of the previous format (it grew without bound and was read whole at every start) is removed when
    the store is first written.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._root: str | None = None
        self._known: frozenset[str] | None = None
        self._vocabulary: dict[str, frozenset[str]] = {}

    def root(self) -> str | None:
        """This store's folder for the current ``HF_HOME`` and transformers (None: no transformers)."""
        root = _store_path()
        with self._lock:
            if root != self._root:  # another HF_HOME (tests) or a first call: forget what was read
                self._root, self._known, self._vocabulary = root, None, {}
        return root

    def known_types(self) -> frozenset[str] | None:
        """The model types this transformers has a config class for, once a lookup has imported it."""
        root = self.root()
        if root is None:
            return None
        if self._known is None:
            found = _read_json(os.path.join(root, "types.json"))
            types = found.get("model_types") if isinstance(found, dict) else None
            if isinstance(types, list):
                self._known = frozenset(str(t) for t in types)
        return self._known

    def vocabulary(self, types: list[str]) -> frozenset[str] | None:
        """The keys the config classes of ``types`` can read (None until a lookup has written them)."""
        root, known = self.root(), self.known_types()
        if root is None or known is None:
            return None
        words: set[str] = set()
        for name in ["_shared", *(t for t in types if t in known)]:
            if name not in self._vocabulary:
                found = _read_json(os.path.join(root, "keys", (name if name == "_shared" else _file_name(name)) + ".json"))
                if not isinstance(found, dict) or not isinstance(found.get("keys"), list):
                    return None
                self._vocabulary[name] = frozenset(str(k) for k in found["keys"])
            words |= self._vocabulary[name]
        return frozenset(words)

    def get(self, key: str, seen: dict) -> tuple[bool, dict | None]:
        """(found, the answer) for ``key``; ``seen``: the config it was asked for (``kept``)."""
        root = self.root()
        found = _read_json(self._answer_path(root, key)) if root is not None and _HEX.fullmatch(key) else None
        if not isinstance(found, dict) or found.get("key") != key or "changed" not in found:
            return False, None
        changed, absent = found["changed"], found.get("absent") or []
        if changed is None:
            return True, None  # no class accepted this config: None, as compute() said
        if not isinstance(changed, dict) or not isinstance(absent, list):
            return False, None
        dropped = set(absent)
        return True, {**{k: v for k, v in seen.items() if k not in dropped}, **changed}

    def put(self, key: str, seen: dict, answer: dict | None) -> None:
        """Keep ``answer`` (None: refused) for ``key`` as its difference from ``seen``."""
        root = self.root()
        if root is None or not _HEX.fullmatch(key):
            return
        record: dict[str, Any] = {"key": key, "changed": None}
        if answer is not None:
            record["changed"] = {k: v for k, v in answer.items() if k not in seen or not _same(seen[k], v)}
            record["absent"] = [k for k in seen if k not in answer]
        text = json.dumps(record, sort_keys=True)
        if len(text) > ANSWER_LIMIT:
            return
        path = self._answer_path(root, key)
        if _write_json(path, text):
            self._trim(os.path.dirname(path))

    def note(self, types: list[str], vocabulary: dict[str, frozenset[str]]) -> None:
        """Record the model types transformers knows and the vocabulary of some (``compute`` calls it)."""
        root = self.root()
        if root is None:
            return
        if types and not _in_store(os.path.join(root, "types.json")):
            if _write_json(os.path.join(root, "types.json"), json.dumps({"model_types": sorted(types)})):
                _remove_previous_format(os.path.dirname(root))
        shared = _shared_vocabulary()
        if vocabulary and not _in_store(os.path.join(root, "keys", "_shared.json")):
            _write_json(os.path.join(root, "keys", "_shared.json"), json.dumps({"keys": sorted(shared)}))
        for model_type, words in vocabulary.items():  # each type's own words: ~100 times smaller
            path = os.path.join(root, "keys", _file_name(model_type) + ".json")
            if not _in_store(path):
                _write_json(path, json.dumps({"keys": sorted(words - shared)}))

    @staticmethod
    def _answer_path(root: str, key: str) -> str:
        return os.path.join(root, "answers", key[:2], key + ".json")

    @staticmethod
    def _trim(shard: str) -> None:
        """Keep the ``SHARD_LIMIT`` newest answers of a shard (a listing of ~32 names: constant work)."""
        folder = _open_folder(shard)
        if folder is None:
            return
        try:
            names = [n for n in os.listdir(folder) if n.endswith(".json")]
            if len(names) <= SHARD_LIMIT:
                return
            dated = sorted((os.stat(n, dir_fd=folder, follow_symlinks=False).st_mtime, n) for n in names)
            for _, name in dated[: len(names) - SHARD_LIMIT]:
                os.unlink(name, dir_fd=folder)
        except OSError:
            pass
        finally:
            os.close(folder)


_HEX = re.compile(r"[0-9a-f]{64}")


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _file_name(model_type: str) -> str:
    """A file stem for a model type (transformers' own names: plain; anything else is hashed)."""
    if re.fullmatch(r"[a-z0-9][a-z0-9_.-]{0,80}", model_type) and ".." not in model_type:
        return model_type
    return "type-" + hashlib.sha256(model_type.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# A folder of the store opened without following a link: O_NOFOLLOW refuses a link as the last part
# of a path only, so each folder is opened by itself, relative to the one above it (``dir_fd``).
_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FOLDERS_BY_FD = os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd and _NOFOLLOW != 0


def _open_folder(folder: str, *, create: bool = False) -> int | None:
    """An open descriptor of ``folder``, a folder of the store, or None.

    ``HF_HOME`` is opened as the user set it (it may be a link of their own); every folder below it is
    opened relative to its parent with ``O_DIRECTORY | O_NOFOLLOW``, so a planted link anywhere in
    ``hfkv/tfdefaults-…/answers/ab`` fails the open: None, no store (a folder swapped for a link after
    the check cannot be followed either: the descriptors are of the folders checked). ``create`` makes
    the missing folders. None too where the system cannot open by descriptor (no store kept there)."""
    root = _store_path()
    if root is None or not _FOLDERS_BY_FD:
        return None
    base = os.path.dirname(os.path.dirname(root))
    relative = os.path.relpath(folder, base)
    parts = [] if relative == "." else relative.split(os.sep)
    if any(part in ("", ".", "..") for part in parts):
        return None  # not below HF_HOME: not the store's
    try:
        if create:
            os.makedirs(base, exist_ok=True)
        fd = os.open(base, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None
    for part in parts:
        try:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
            child = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
        except OSError:  # missing, a link (ELOOP), a file (ENOTDIR), unreadable
            os.close(fd)
            return None
        os.close(fd)
        fd = child
    return fd


def _in_store(path: str) -> bool:
    """True when ``path`` names something in its store folder (a link counts: it is never replaced by
    following it, ``_write_json`` swaps the name)."""
    folder = _open_folder(os.path.dirname(path))
    if folder is None:
        return False
    try:
        os.stat(os.path.basename(path), dir_fd=folder, follow_symlinks=False)
        return True
    except OSError:
        return False
    finally:
        os.close(folder)


def _write_json(path: str, text: str) -> bool:
    """``text`` at ``path`` atomically (a temporary file created exclusively, then renamed over the
    name: a link there is replaced, never written through), in folders opened by ``_open_folder``;
    False when it cannot be written (a linked folder, read-only home, full disk: nothing kept)."""
    folder = _open_folder(os.path.dirname(path), create=True)
    if folder is None:
        return False
    name = os.path.basename(path)
    temporary = f".{name[:60]}.{os.getpid()}.{threading.get_ident()}.{os.urandom(4).hex()}{TMP_SUFFIX}"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666, dir_fd=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            # rename replaces the name atomically on POSIX (the only systems with folder descriptors)
            os.rename(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise
        return True
    except Exception:  # noqa: BLE001 - whatever goes wrong, a store that cannot be written only keeps nothing
        return False
    finally:
        os.close(folder)


def _read_json(path: str) -> Any:
    """The JSON in ``path``, or None: missing, unreadable, in a linked folder or a link itself (neither
    is followed), not a regular file, over ``ANSWER_LIMIT`` bytes, or not JSON."""
    folder = _open_folder(os.path.dirname(path))
    if folder is None:
        return None
    try:
        fd = os.open(os.path.basename(path), os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0), dir_fd=folder)
    except OSError:
        return None
    finally:
        os.close(folder)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, ANSWER_LIMIT + 1)
        if len(raw) > ANSWER_LIMIT:
            return None
        return json.loads(raw)
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)


def _remove_previous_format(folder: str) -> None:
    """Delete the answer files of format 1 (``tfdefaults-<version>-1.jsonl``: unbounded, read whole)."""
    fd = _open_folder(folder)
    if fd is None:
        return
    try:
        for name in os.listdir(fd):
            if name.startswith("tfdefaults-") and name.endswith("-1.jsonl"):
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_TF_VERSION: list[str | None] = []  # transformers' installed version, looked up once


def transformers_version() -> str | None:
    """The installed transformers' version, without importing it: the name of its ``.dist-info``
    folder beside the package (one directory listing), else ``importlib.metadata``; None when it
    is not installed."""
    if not _TF_VERSION:
        _TF_VERSION.append(_find_version())
    return _TF_VERSION[0]


def _find_version() -> str | None:
    import importlib.util

    try:
        spec = importlib.util.find_spec("transformers")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    origin = spec.origin or next(iter(spec.submodule_search_locations or []), None)
    if origin:
        site = os.path.dirname(os.path.dirname(os.path.abspath(origin)))
        with contextlib.suppress(OSError):
            found = [n[len("transformers-"):-len(".dist-info")] for n in os.listdir(site)
                     if n.startswith("transformers-") and n.endswith(".dist-info")]
            if len(found) == 1:
                return found[0]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("transformers")
    except (PackageNotFoundError, ValueError):
        return None


def _store_path() -> str | None:
    """The store's folder for the installed transformers under ``HF_HOME``, or None without one."""
    found = transformers_version()
    if found is None:
        return None
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    safe = "".join(c if c.isalnum() or c in ".-+" else "_" for c in found)
    return os.path.join(home, "hfkv", f"tfdefaults-{safe}-{ANSWERS_FORMAT}")


_STORE = Store()


def compute(candidates: Candidates, data: dict) -> dict | None:
    """``lookup`` in this process, nothing kept (see ``compute_status``)."""
    return compute_status(candidates, data)[0]


def compute_status(candidates: Candidates, data: dict) -> tuple[dict | None, str]:
    """(the defaults, ``ANSWERED``), else (None, why): ``REJECTED`` (no class of the candidate types
    accepts the config, not even bare), ``UNKNOWN`` (transformers has none of the types),
    ``UNAVAILABLE`` (transformers missing or broken). The config class is built with the keys it
    can read only (``vocabulary_of``): a config with 1.5 million junk keys builds it with its own.
    The types transformers knows and the vocabularies are recorded in the store (``Store.note``)."""
    mapping = _config_mapping()
    if mapping is None:  # transformers missing or broken: no defaults, the mapper decides
        return None, UNAVAILABLE
    classes: list[tuple[str, Any, bool]] = []
    with _LOCK:  # the first lookup of a type imports its configuration module
        for model_type, text_of_it in candidates:
            if model_type and model_type in mapping:
                classes.append((model_type, mapping[model_type], text_of_it))
    vocabulary = {t: vocabulary_of(cls, mapping) for t, cls, _ in classes}
    _STORE.note(_mapping_keys(mapping), {t: v for t, v in vocabulary.items() if v is not None})
    if not classes:
        return None, UNKNOWN
    words = None if any(v is None for v in vocabulary.values()) else frozenset().union(*vocabulary.values())
    kwargs = kept(data, words)
    for _, cls, text_of_it in classes:
        for attempt in (kwargs, {}):
            try:
                # A copy: transformers standardises nested values in place (rope_scaling gains rope_theta and
                # original_max_position_embeddings), which would change the caller's config.
                config = cls(**copy.deepcopy(attempt))
                if text_of_it:
                    config = config.get_text_config()
                return _plain(config.to_dict()), ANSWERED
            except Exception:  # strict dataclass checks reject odd values; try bare defaults
                continue
    return None, REJECTED


def _mapping_keys(mapping: Any) -> list[str]:
    try:
        return [str(k) for k in mapping.keys()]
    except Exception:
        return []


_VOCABULARY: dict[Any, "frozenset[str] | None"] = {}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Modules whose code reads a config's keyword arguments for every class (legacy names, RoPE, backbones).
_SHARED_MODULES = ("transformers.configuration_utils", "transformers.modeling_rope_utils",
                   "transformers.utils.backbone_utils")


def _shared_vocabulary() -> frozenset[str]:
    """The words every class's vocabulary holds: its base class's and the shared modules' (stored once)."""
    with contextlib.suppress(Exception):
        from transformers import PretrainedConfig

        return vocabulary_of(PretrainedConfig) or frozenset()
    return frozenset()


def vocabulary_of(cls: Any, mapping: Any = None) -> "frozenset[str] | None":
    """Every key the config class ``cls`` could read: each word of the source of the modules that
    define it, its bases and its sub-configs' classes (recursively), and of the modules every class
    shares; its fields and ``attribute_map`` too. A key outside it is a name the classes' code never
    spells, so dropping it changes nothing but the time (and the copy ``to_dict`` returns). None
    (keep every key) when a source cannot be read."""
    if cls in _VOCABULARY:
        return _VOCABULARY[cls]
    words: set[str] = set()
    modules: set[str] = set()
    todo, seen = [cls], set()
    while todo:
        current = todo.pop()
        if current in seen or not isinstance(current, type):
            continue
        seen.add(current)
        modules.update(base.__module__ for base in current.__mro__ if base is not object)
        words.update(getattr(current, "attribute_map", None) or {})
        words.update(getattr(current, "__dataclass_fields__", None) or {})
        for spec in (getattr(current, "sub_configs_defaults", None) or {}).values():
            todo.append(getattr(spec, "config_class", None))
            default_type = getattr(spec, "model_type", None)
            if mapping is not None and default_type:
                with contextlib.suppress(Exception):
                    todo.append(mapping[default_type])
    result: frozenset[str] | None
    try:
        for name in [*sorted(modules), *_SHARED_MODULES]:
            module = sys.modules.get(name)
            path = getattr(module, "__file__", None)
            if not path:
                if name in _SHARED_MODULES:
                    continue  # not in this version of transformers, or not imported: not used
                raise OSError(name)
            with open(path, encoding="utf-8", errors="replace") as handle:
                words.update(_WORD.findall(handle.read()))
        result = frozenset(words)
    except OSError:
        result = None
    _VOCABULARY[cls] = result
    return result


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
        """The child's (answer, status) (``compute_status``), or ``_FAILED`` (the caller computes in process)."""
        with self._lock:
            if self._dead:
                return _FAILED
            try:
                self._proc.stdin.write(json.dumps({"candidates": candidates, "data": data}) + "\n")
                self._proc.stdin.flush()
                line = self._answers.get(timeout=HELPER_TIMEOUT)
                reply = json.loads(line)
                answer, status = reply["defaults"], reply["status"]
                if (answer is None or isinstance(answer, dict)) and status in _STATUSES:
                    return answer, status
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
            answer, status = compute_status(candidates, request["data"])
        except Exception:
            answer, status = None, UNAVAILABLE
        out.write(json.dumps({"defaults": answer, "status": status}) + "\n")
        out.flush()


if __name__ == "__main__":  # python -m hfkv.model.defaults: the helper, by hand
    serve()
