"""One call run in a process of its own, killed at its deadline, its memory and CPU bounded.

``run(fn, *args, limits=Limits(seconds=30), **kwargs)`` returns ``fn(*args, **kwargs)`` computed in a
child process, or raises:

* ``WorkerTimeout`` when no answer came within ``limits.seconds``: the child is killed then (SIGKILL),
  so the work stops with the answer and its memory is returned at once. A thread can only be
  abandoned (the web page's deadline answered the visitor but left the work running: eight uploads
  of a 747-byte config with 100,000 layers took the server from 282 MiB to 7.2 GiB);
* ``WorkerOutOfMemory`` when the call needed more than ``limits.memory_bytes`` beyond what its
  process started with (``RLIMIT_AS``, set in the child: an allocation past it fails there, never in
  the caller);
* ``WorkerCrashed`` when the child died without an answer (a signal: its CPU limit ``RLIMIT_CPU``,
  the kernel), or its answer was too large or could not be read back;
* the call's own exception, rebuilt here with its class and attributes (hfkv's errors keep their
  kind, source and exit code), so a caller handles a failure as if the call had run in process.

Where the children come from: a helper process (the *zygote*: ``python -I``, this process's import
path without the working directory) started on first use, which imports ``preload``'s modules once
and then forks one child per call. Never a fork of the caller: a server's other threads may hold a
lock at any moment, and a fork copies a held lock into a child that can never release it; the zygote
has one thread. A child starts in about a millisecond with the report stack already imported. Nothing
of the caller's ``__main__`` is run again (``multiprocessing``'s spawn and fork server re-import it in
every child: ``space/app.py`` would start a second server).

The protocol: per call, this process makes a pipe for the answer and hands its write end to the
zygote with the pickled request (``socket.send_fds`` on a Unix socket pair; calls from several threads
take turns for that exchange only); the zygote forks, the child answers on the pipe, and the zygote
replies with the child's pid. Children are reaped by the kernel (the zygote ignores SIGCHLD), each
is killed with the zygote (Linux ``PR_SET_PDEATHSIG``), and the zygote ends when its socket reaches
end of file: this process closed it, or died (its descriptors close with it). Not ``PR_SET_PDEATHSIG``
for the zygote: it fires when the *thread* that started a process ends, and a server starts the zygote
from whichever thread asks first (a request's, or a start-up thread that ends at once). The caller
kills a child only while the answer pipe is open: until then the pid is certainly its child's. POSIX only (``os.fork`` and ``socket.send_fds``): elsewhere ``available()`` is
False and ``run`` raises ``WorkerCrashed``.

``fn`` and its arguments cross a pipe: ``fn`` must be a module-level function, the arguments
picklable (a path, a form's fields, a token string; not an open session).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import pickle
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

MiB = 1 << 20
# What one call may add to its child: the largest real configs (a 1 MiB config.json, 100,000 layers)
# report in well under this; a server keeps its own memory whatever a visitor uploads.
DEFAULT_MEMORY = 768 * MiB
RESULT_LIMIT = 64 * MiB  # bytes of one pickled answer (the page's HTML and JSON are a few hundred kB)
START_TIMEOUT = 60.0  # seconds for the zygote to import its modules and say it is ready
_LENGTH = struct.Struct("!Q")  # every message: its length, then its pickle


class WorkerError(Exception):
    """The call gave no answer: it ran out of time or memory, or its process died. One line."""


class WorkerTimeout(WorkerError):
    """No answer within the deadline; the process was killed."""


class WorkerOutOfMemory(WorkerError):
    """The call needed more memory than its bound."""


class WorkerCrashed(WorkerError):
    """The process died without an answer, or its answer could not come back."""


@dataclass(frozen=True)
class Limits:
    """``seconds``: wall-clock deadline of the whole call; ``memory_bytes``: address space the call may
    add to its child (None: no bound); ``cpu_seconds``: CPU time of the child (default: the deadline
    plus one second, so a child the caller failed to kill still ends); ``result_bytes``: the largest
    pickled answer accepted."""

    seconds: float
    memory_bytes: int | None = DEFAULT_MEMORY
    cpu_seconds: float | None = None
    result_bytes: int = RESULT_LIMIT

    def __post_init__(self) -> None:
        if not (isinstance(self.seconds, (int, float)) and self.seconds > 0 and math.isfinite(self.seconds)):
            raise ValueError(f"seconds must be a positive number, got {self.seconds!r}")
        if self.memory_bytes is not None and self.memory_bytes < MiB:
            raise ValueError(f"memory_bytes must be at least 1 MiB, got {self.memory_bytes!r}")

    @property
    def cpu(self) -> float:
        return self.cpu_seconds if self.cpu_seconds is not None else self.seconds + 1


def available() -> bool:
    """Whether calls can run in workers here (POSIX: ``os.fork`` and ``socket.send_fds``)."""
    return hasattr(os, "fork") and hasattr(socket, "send_fds") and hasattr(socket, "AF_UNIX")


_preload: list[str] = []
_zygote: "_Zygote | None" = None
_ZYGOTE_LOCK = threading.Lock()


def preload(modules: Sequence[str]) -> None:
    """Modules the zygote imports once, before its first child (the report stack: every child then
    starts with it imported). ``module:function`` also calls ``function()`` once after the import: what
    fills the process-wide caches each call would otherwise fill again from cold (a child starts from
    the zygote's memory: lazy imports, a library's user agent). It runs in the zygote's only thread and
    must leave no other running (a fork copies a held lock). Takes effect when the zygote starts (the
    first ``run``, or after ``stop``)."""
    for module in modules:
        if module not in _preload:
            _preload.append(module)


def stop() -> None:
    """End the zygote (the next ``run`` starts another); its running children are killed with it."""
    global _zygote
    with _ZYGOTE_LOCK:
        zygote, _zygote = _zygote, None
    if zygote is not None:
        zygote.close()


def run(fn: Callable[..., Any], /, *args: Any, limits: Limits, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` computed in a child process within ``limits`` (module docstring)."""
    if not available():
        raise WorkerCrashed("no worker processes on this system (they need os.fork and socket.send_fds)")
    try:
        request = pickle.dumps((fn, args, kwargs, limits), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as err:  # noqa: BLE001 - a lambda, a session, an open file
        raise TypeError(f"cannot run {getattr(fn, '__qualname__', fn)!r} in a worker: {err}") from None
    answer_r, answer_w = os.pipe()
    try:
        pid = _get_zygote().fork(request, answer_w)
    finally:
        os.close(answer_w)  # the child holds it now: EOF here once the child is gone
    try:
        payload = _read_answer(answer_r, pid, limits)
    finally:
        os.close(answer_r)
    return _unpack(payload, limits)


def _get_zygote() -> "_Zygote":
    global _zygote
    with _ZYGOTE_LOCK:
        if _zygote is None or not _zygote.alive():
            if _zygote is not None:
                _zygote.close()
            _zygote = _Zygote(list(_preload))
        return _zygote


def _read_answer(fd: int, pid: int, limits: Limits) -> bytes:
    """The child's framed answer from ``fd`` before the deadline; the child is killed if it has not
    finished by then (only while ``fd`` is open, so ``pid`` is still the child's)."""
    end = time.monotonic() + limits.seconds
    chunks: list[bytes] = []
    size = 0
    waiting = select.poll()  # not select(): a busy server's descriptors pass FD_SETSIZE (1,024)
    waiting.register(fd, select.POLLIN)
    while True:
        left = end - time.monotonic()
        if left <= 0 or not waiting.poll(math.ceil(left * 1000)):
            _kill(pid)
            raise WorkerTimeout(f"no answer within {limits.seconds:g} s: stopped")
        chunk = os.read(fd, 1 << 20)
        if not chunk:  # EOF: the child is gone
            break
        size += len(chunk)
        if size > limits.result_bytes + _LENGTH.size:
            _kill(pid)
            raise WorkerCrashed(f"the answer was larger than {limits.result_bytes // MiB} MiB")
        chunks.append(chunk)
    data = b"".join(chunks)
    if len(data) < _LENGTH.size or len(data) != _LENGTH.size + _LENGTH.unpack_from(data)[0]:
        raise WorkerCrashed("the worker died without an answer (killed by the system: its CPU or memory "
                            "bound, most likely)")
    return data[_LENGTH.size:]


def _kill(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _unpack(payload: bytes, limits: Limits) -> Any:
    try:
        status, value = pickle.loads(payload)
    except Exception as err:  # noqa: BLE001 - an answer this process cannot rebuild
        raise WorkerCrashed(f"the answer could not be read back ({type(err).__name__})") from None
    if status == "ok":
        return value
    if status == "memory":
        raise WorkerOutOfMemory(f"needed more than its memory bound of {limits.memory_bytes // MiB} MiB"
                                if limits.memory_bytes else "out of memory")
    raise _rebuilt(value)


# -- this process's side of the zygote ----------------------------------------------------------------


def import_path() -> list[str]:
    """This process's import path for a helper started with ``python -I``: in order, without the
    working directory (``''`` or the cwd itself: nothing planted there is imported), with the folder
    holding this ``hfkv`` first when it is not on the path."""
    cwd = os.getcwd()
    root = str(Path(__file__).resolve().parents[2])
    path = [entry for entry in dict.fromkeys(sys.path) if entry and os.path.abspath(entry) != cwd]
    return path if root in path else [root, *path]


class _Zygote:
    """The helper process and the socket this process talks to it on (module docstring)."""

    def __init__(self, modules: list[str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        code = (f"import sys; sys.path[:] = {import_path()!r}; from hfkv.runtime.worker import _serve; "
                f"_serve({theirs.fileno()}, {modules!r})")
        try:
            self._proc = subprocess.Popen([sys.executable, "-I", "-c", code], pass_fds=(theirs.fileno(),),
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, cwd=_root_folder())
        finally:
            theirs.close()
        self._sock = ours
        self._lock = threading.Lock()
        self._sock.settimeout(START_TIMEOUT)
        try:
            if _receive(self._sock) != "ready":
                raise OSError("the worker helper did not start")
        except (OSError, EOFError, ValueError, pickle.UnpicklingError) as err:
            self.close()
            raise WorkerCrashed(f"the worker helper did not start ({type(err).__name__})") from None

    def alive(self) -> bool:
        return self._proc.poll() is None

    def fork(self, request: bytes, answer_w: int) -> int:
        """The pid of a child forked for ``request``, which answers on ``answer_w``."""
        with self._lock:
            try:
                socket.send_fds(self._sock, [_LENGTH.pack(len(request)) + request], [answer_w])
                reply = _receive(self._sock)
            except (OSError, EOFError, ValueError, pickle.UnpicklingError) as err:
                raise WorkerCrashed(f"the worker helper failed ({type(err).__name__})") from None
        if not isinstance(reply, int):
            raise WorkerCrashed(f"the worker helper could not fork ({reply})")
        return reply

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait(timeout=5)


def _root_folder() -> str:
    return str(Path(__file__).resolve().parents[2])


def _send(sock: socket.socket, value: Any) -> None:
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_LENGTH.pack(len(body)) + body)


def _receive(sock: socket.socket) -> Any:
    return pickle.loads(_exactly(sock, _LENGTH.unpack(_exactly(sock, _LENGTH.size))[0]))


def _exactly(sock: socket.socket, count: int, first: bytes = b"") -> bytes:
    data = bytearray(first)
    while len(data) < count:
        chunk = sock.recv(min(count - len(data), 1 << 20))
        if not chunk:
            raise EOFError("closed")
        data += chunk
    return bytes(data)


# -- the zygote -------------------------------------------------------------------------------------------


def _serve(fd: int, modules: list[str]) -> None:
    """The zygote: import ``modules``, say "ready", then fork one child per request until the socket
    closes. One thread, no other work: a fork here copies no lock held by anyone."""
    sock = socket.socket(fileno=fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    for module in modules:
        with contextlib.suppress(Exception):  # a module that fails to import is imported (and fails) in the call
            _load(module)
    _send(sock, "ready")
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 1)
        except OSError:
            break
        if not message:
            break
        try:
            head = _exactly(sock, _LENGTH.size, message) if len(message) < _LENGTH.size else message
            request = _exactly(sock, _LENGTH.size + _LENGTH.unpack_from(head)[0], head)[_LENGTH.size:]
        except (EOFError, OSError, struct.error):
            break
        answer_w = fds[0] if fds else -1
        try:
            pid = os.fork()
        except OSError as err:
            _send(sock, f"{err.strerror or type(err).__name__}")
            os.close(answer_w)
            continue
        if pid == 0:
            sock.close()
            _child(request, answer_w)  # never returns
        os.close(answer_w)
        _send(sock, pid)
    os._exit(0)


def _load(entry: str) -> None:
    """Import ``module``; for ``module:function``, call ``function()`` after (``preload``)."""
    module, _, function = entry.partition(":")
    loaded = importlib.import_module(module)
    if function:
        getattr(loaded, function)()


def _die_with_parent() -> None:
    """Be killed when the parent dies (Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)``): a child, for the zygote
    (its only thread, so its death). The zygote itself ends at its socket's end of file (module docstring)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # 1: PR_SET_PDEATHSIG


def _child(request: bytes, answer_w: int) -> None:
    """A forked child: bounds first, then the call; one framed answer: ("ok", result), ("memory", None)
    or ("error", the exception as ``_portable`` describes it); ``os._exit`` in all cases."""
    code = 0
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the call's own subprocesses are its to wait for
        _die_with_parent()
        try:
            fn, args, kwargs, limits = pickle.loads(request)  # imports fn's module: it may fail, and say so
            del request
            _bound(limits)
            payload = pickle.dumps(("ok", fn(*args, **kwargs)), protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            payload = pickle.dumps(("memory", None))
        except BaseException as err:  # noqa: BLE001 - the caller re-raises it
            try:
                payload = pickle.dumps(("error", _portable(err)), protocol=pickle.HIGHEST_PROTOCOL)
            except MemoryError:
                payload = pickle.dumps(("memory", None))
        with os.fdopen(answer_w, "wb") as out:
            out.write(_LENGTH.pack(len(payload)))
            out.write(payload)
    except BaseException:  # noqa: BLE001 - the caller gave up (a closed pipe) or the request was unreadable
        code = 1
    finally:
        os._exit(code)


def _bound(limits: Limits) -> None:
    """RLIMIT_AS = the address space now + ``memory_bytes`` (the zygote's imports are not the call's);
    RLIMIT_CPU = ``limits.cpu`` seconds of CPU from now."""
    import resource

    if limits.memory_bytes is not None:
        ceiling = _address_space() + limits.memory_bytes
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = math.ceil(used.ru_utime + used.ru_stime + limits.cpu)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU at the soft limit, SIGKILL at the hard


def _address_space() -> int:
    """This process's virtual size in bytes (Linux ``/proc/self/statm``; elsewhere the peak resident size)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


# -- exceptions across the pipe ----------------------------------------------------------------------


def _portable(err: BaseException) -> tuple[str, str, tuple, dict, str]:
    """(module, class name, args, attributes, one line) of ``err``: enough to rebuild it in the caller
    without calling its ``__init__`` (hfkv's errors take keywords that ``pickle`` would not pass)."""
    attributes = {}
    for key, value in getattr(err, "__dict__", {}).items():
        with contextlib.suppress(Exception):
            pickle.dumps(value)
            attributes[key] = value
    args = err.args
    try:
        pickle.dumps(args)
    except Exception:  # noqa: BLE001
        args = tuple(str(a) for a in args)
    return type(err).__module__, type(err).__qualname__, args, attributes, f"{type(err).__name__}: {err}"


def _rebuilt(described: tuple[str, str, tuple, dict, str]) -> BaseException:
    """The exception ``_portable`` described, of its own class when this process has it (an
    ``Exception``: a child's ``SystemExit`` must not end the caller), else a ``WorkerCrashed`` naming it."""
    module, name, args, attributes, line = described
    try:
        cls: Any = importlib.import_module(module)
        for part in name.split("."):
            cls = getattr(cls, part)
        if not (isinstance(cls, type) and issubclass(cls, Exception)):
            raise TypeError(name)
        err = cls.__new__(cls)
        BaseException.__init__(err, *args)
        err.__dict__.update(attributes)
        return err
    except Exception:  # noqa: BLE001 - a class this process cannot import or build
        return WorkerCrashed(f"the worker failed: {line.splitlines()[0][:300] if line else name}")
