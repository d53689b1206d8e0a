"""A call in a worker process (hfkv/runtime/worker.py): its answer or its own exception back, killed at its
deadline (the work stops, its memory is returned), bounded in memory and CPU, never forked from the caller.

The functions the workers run are defined here at module level: a worker imports them by name."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from hfkv.errors import SourceError
from hfkv.runtime import worker
from hfkv.runtime.worker import Limits, WorkerCrashed, WorkerOutOfMemory, WorkerTimeout


@pytest.fixture(autouse=True)
def no_zygote_left():
    """Each test's zygote ends with it: one started here (with this module's preload list, without the page's
    report stack) would otherwise serve the web tests that run later, cold, and miss their deadlines."""
    yield
    worker.stop()

pytestmark = pytest.mark.skipif(not worker.available(), reason="worker processes need os.fork and socket.send_fds")

MiB = 1 << 20


def add(a: int, b: int, *, times: int = 1) -> int:
    return (a + b) * times


def sleep_after_noting(path: str, seconds: float) -> str:
    Path(path).write_text(str(os.getpid()))
    time.sleep(seconds)
    return "too late"


def allocate(size: int) -> int:
    return len(bytearray(size))


def refuse() -> None:
    raise SourceError("not-found", "no such repo", source="org/missing")


def leave() -> None:
    raise SystemExit(3)


def pids() -> tuple[int, int]:
    return os.getpid(), os.getppid()


def report_alpha(path: str) -> int:
    """The report of a config (the page's work, reduced to its figure)."""
    from hfkv.inspection import inspect_config

    return inspect_config(json.loads(Path(path).read_text())).alpha_bytes_per_token


WARMED: list[int] = []


def note_warm() -> None:
    WARMED.append(os.getpid())


def warmed() -> list[int]:
    return list(WARMED)


def gone(pid: int, within: float = 5.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def rss() -> int:
    """This process's resident memory in bytes (Linux)."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_the_answer_comes_back_from_another_process():
    assert worker.run(add, 2, 3, times=7, limits=Limits(seconds=30)) == 35
    child, parent = worker.run(pids, limits=Limits(seconds=30))
    assert child != os.getpid() and parent != os.getpid()  # forked by the zygote, not from this process


def test_at_the_deadline_the_work_is_killed_not_left_running(tmp_path):
    # The page's deadline answered the visitor but left the thread's work running; here the process
    # is killed when the deadline passes, so the work stops with it
    noted = tmp_path / "pid"
    start = time.monotonic()
    with pytest.raises(WorkerTimeout, match=r"no answer within 1 s: stopped"):
        worker.run(sleep_after_noting, str(noted), 60, limits=Limits(seconds=1))
    assert time.monotonic() - start < 3
    assert gone(int(noted.read_text()))


def test_memory_past_the_bound_fails_in_the_worker_not_here():
    before = rss()
    with pytest.raises(WorkerOutOfMemory, match=r"needed more than its memory bound of 64 MiB"):
        worker.run(allocate, 2048 * MiB, limits=Limits(seconds=30, memory_bytes=64 * MiB))
    assert rss() - before < 64 * MiB  # the 2 GiB were never this process's
    assert worker.run(allocate, 16 * MiB, limits=Limits(seconds=30, memory_bytes=64 * MiB)) == 16 * MiB


def test_the_calls_own_exception_comes_back_as_itself():
    with pytest.raises(SourceError) as caught:
        worker.run(refuse, limits=Limits(seconds=30))
    err = caught.value
    assert (err.kind, err.source, err.message, err.exit_code) == ("not-found", "org/missing", "no such repo", 1)
    assert str(err) == "org/missing: no such repo"


def test_a_childs_exit_never_ends_the_caller():
    with pytest.raises(WorkerCrashed, match="SystemExit"):
        worker.run(leave, limits=Limits(seconds=30))


def test_a_function_that_cannot_cross_is_refused_here():
    with pytest.raises(TypeError, match="cannot run .* in a worker"):
        worker.run(lambda: 1, limits=Limits(seconds=30))


def test_an_answer_past_its_size_bound_is_refused():
    with pytest.raises(WorkerCrashed, match="larger than 1 MiB"):
        worker.run(bytes, 4 * MiB, limits=Limits(seconds=30, result_bytes=MiB))


def test_limits_are_checked():
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="seconds"):
            Limits(seconds=bad)
    with pytest.raises(ValueError, match="memory_bytes"):
        Limits(seconds=1, memory_bytes=1000)


def test_eight_uploads_of_a_huge_config_cost_the_server_nothing(tmp_path):
    # The case: a 747-byte config with 100,000 layers, uploaded 8 times at once, took the
    # server from 282 MiB to 7.2 GiB; in workers, each is stopped at its deadline and this process
    # keeps its memory
    config = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 2560,
              "num_hidden_layers": 100_000, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
              "sliding_window": 1024, "max_position_embeddings": 131072, "vocab_size": 262144,
              "torch_dtype": "bfloat16"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert len(path.read_bytes()) < 1024
    before = rss()
    outcomes: list[BaseException | int] = []

    def upload() -> None:
        try:
            outcomes.append(worker.run(report_alpha, str(path), limits=Limits(seconds=1, memory_bytes=512 * MiB)))
        except BaseException as err:  # noqa: BLE001 - collected and checked below
            outcomes.append(err)

    threads = [threading.Thread(target=upload) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(outcomes) == 8 and all(isinstance(o, (WorkerTimeout, WorkerOutOfMemory)) for o in outcomes), outcomes
    assert rss() - before < 32 * MiB
    # a small config in the same way: the answer, as in process (4 layers × 2 × 4 KV heads × 256 × 2 B)
    path.write_text(json.dumps(dict(config, num_hidden_layers=4, sliding_window=None)))
    assert worker.run(report_alpha, str(path), limits=Limits(seconds=60)) == 4 * 2 * 4 * 256 * 2 == 16384


def test_a_zygote_started_from_a_thread_that_ends_keeps_serving():
    """The kernel's parent-death signal fires when the *thread* that started a process ends: a zygote
    started from a server's start-up thread (or a request's) was killed with it, and a call at that moment
    failed ("the worker helper failed (EOFError)": the page's first request in the browser tests). It ends
    with its socket instead: the same zygote serves the next call."""
    worker.stop()
    first: list[tuple[int, int]] = []
    starter = threading.Thread(target=lambda: first.append(worker.run(pids, limits=Limits(seconds=60))))
    starter.start()
    starter.join(60)
    time.sleep(0.5)
    zygote = first[0][1]
    assert not gone(zygote, within=0.1) and worker.run(pids, limits=Limits(seconds=30))[1] == zygote


def test_the_zygote_ends_with_its_caller(tmp_path):
    """Without the parent-death signal, the zygote still ends when its caller dies (even by SIGKILL): its
    socket reaches end of file. And so do the children, with the zygote."""
    import signal
    import subprocess
    import sys

    code = ("import os, sys, time; from hfkv.runtime import worker; from test_worker import sleep_after_noting; "
            "import threading; threading.Thread(target=worker.run, args=(sleep_after_noting, sys.argv[1], 60), "
            "kwargs={'limits': worker.Limits(seconds=60)}, daemon=True).start(); time.sleep(60)")
    noted = tmp_path / "pid"
    caller = subprocess.Popen([sys.executable, "-c", code, str(noted)], cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])})
    try:
        end = time.monotonic() + 60
        while not (noted.exists() and noted.read_text()) and time.monotonic() < end:
            time.sleep(0.05)
        child = int(noted.read_text())
        zygote = int(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[1])  # its parent
    finally:
        caller.send_signal(signal.SIGKILL)
        caller.wait()
    assert gone(zygote) and gone(child)


def test_preload_calls_a_function_once_in_the_zygote(monkeypatch):
    """``module:function`` in preload: called once after the import, in the zygote, so every child starts
    with what it filled (the page warms its caches so)."""
    monkeypatch.setattr(worker, "_preload", [f"{__name__}:note_warm"])
    worker.stop()
    try:
        zygote = worker.run(pids, limits=Limits(seconds=60))[1]
        assert worker.run(warmed, limits=Limits(seconds=30)) == worker.run(warmed, limits=Limits(seconds=30)) == [zygote]
    finally:
        worker.stop()


def test_a_stopped_zygote_is_replaced():
    assert worker.run(add, 1, 1, limits=Limits(seconds=30)) == 2
    worker.stop()
    assert worker.run(add, 1, 2, limits=Limits(seconds=30)) == 3
