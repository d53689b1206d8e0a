"""hfkv.runtime.fetchers: a scan's fetches in a forked process lose no entry, end with the scan, and fall
back to threads where a fork is not safe.

A fork is only taken by a process with no other thread, and pytest's process runs the fake Hub in
a thread: the forked path is exercised in fresh interpreters (``python -c``), as ``hfkv scan`` runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from hfkv.runtime import fetchers

ROOT = Path(__file__).resolve().parents[2]
needs_fork = pytest.mark.skipif(not (sys.platform.startswith("linux") and (os.cpu_count() or 1) > 1),
                                reason="the fetching process is forked on Linux with a second core only")


def run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


PROBE = """
    import json, os, sys
    from hfkv.runtime import fetchers
    parent = os.getpid()
    {fetch}
    entries = [f"e{{i}}" for i in range({count})]
    seen = []
    with fetchers.fetching(entries, fetch, 4) as results:
        for result in results:
            seen.append(result)
            {after_each}
    try:
        left = os.waitpid(-1, os.WNOHANG)  # a child not reaped yet
    except ChildProcessError:
        left = None
    print(json.dumps({{"seen": seen, "parent": parent, "left": left}}))
"""


def probe(fetch: str, count: int = 40, after_each: str = "pass") -> dict:
    result = run_python(PROBE.format(fetch=fetch, count=count, after_each=after_each))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@needs_fork
def test_a_long_list_is_fetched_in_another_process_and_every_entry_comes_back():
    out = probe("def fetch(entry): return [entry, os.getpid()]")
    assert sorted(e for e, _ in out["seen"]) == sorted(f"e{i}" for i in range(40))  # each once, none lost
    assert {pid for _, pid in out["seen"]} - {out["parent"]}  # fetched elsewhere than in the scan
    assert out["left"] is None  # the fetching process was reaped


def test_a_short_list_is_fetched_by_threads_here():
    out = probe("def fetch(entry): return [entry, os.getpid()]", count=fetchers.FORK_MIN - 1)
    assert len(out["seen"]) == fetchers.FORK_MIN - 1 and {pid for _, pid in out["seen"]} == {out["parent"]}


@needs_fork
def test_entries_the_process_did_not_send_are_fetched_here():
    # The fetching process dies at e7 (as a crash would end it): e7 and whatever it had not sent yet
    # are fetched by this process, so the scan still has one result per entry.
    fetch = ("def fetch(entry):\n"
             "        if entry == 'e7' and os.getpid() != parent: os._exit(3)\n"
             "        return [entry, os.getpid()]")
    out = probe(fetch)
    assert sorted(e for e, _ in out["seen"]) == sorted(f"e{i}" for i in range(40))
    assert ["e7", out["parent"]] in out["seen"]
    assert out["left"] is None


@needs_fork
def test_leaving_early_kills_the_fetching_process():
    # A slow fetch (the process would take 40 × 0.2 s / 4 = 2 s): the scan stops after one result,
    # and by the time the block is left the process is gone and reaped.
    fetch = "import time\n    def fetch(entry):\n        time.sleep(0.2)\n        return [entry, os.getpid()]"
    out = probe(fetch, after_each="break")
    assert len(out["seen"]) == 1 and out["left"] is None


def test_no_fork_while_another_thread_runs():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    try:
        assert not fetchers._fork_helps(1000)  # a fork would copy that thread's locks, maybe held
    finally:
        stop.set()
    with fetchers.fetching([f"e{i}" for i in range(40)], lambda e: (e, os.getpid()), 4) as results:
        seen = list(results)
    assert sorted(e for e, _ in seen) == sorted(f"e{i}" for i in range(40)) and {p for _, p in seen} == {os.getpid()}


@needs_fork
def test_hfkv_scan_through_the_fetching_process_writes_every_row_and_the_cache(fake_hub, tmp_path):
    """The real command in a fresh process (so it forks): 20 Hub repos and a local path, rows and exit
    code as always, every config in the cache (an offline re-run finds all 20)."""
    config = json.loads((ROOT / "fixtures" / "Qwen__Qwen2.5-7B" / "config.json").read_text())
    repos = [f"org/model-{i:02d}" for i in range(20)]
    for repo in repos:
        fake_hub.add_model(repo, {"config.json": json.dumps(config)})
    local = ROOT / "fixtures" / "Qwen__Qwen2.5-7B" / "config.json"
    listing = tmp_path / "models.txt"
    listing.write_text("\n".join([*repos, str(local), "org/missing"]) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_DISABLE_TELEMETRY="1")
    command = [sys.executable, "-m", "hfkv", "scan", str(listing), "--format", "jsonl", "--jobs", "4"]
    online = subprocess.run([*command, "--endpoint", fake_hub.url], capture_output=True, text=True, env=env, timeout=120)
    rows = [json.loads(line) for line in online.stdout.splitlines()]
    assert online.returncode == 1 and "1 of 22 models failed" in online.stderr  # org/missing: a 404 row
    assert sorted(r["model"] for r in rows) == sorted([*repos, str(local), "org/missing"])
    # 28 layers × 2 (K and V) × 4 KV heads × 128 × 2 bytes = 57344 bytes per token (Qwen2.5-7B: 3584 / 28 heads = 128)
    assert {r["alpha_bytes_per_token"] for r in rows if "error" not in r} == {28 * 2 * 4 * 128 * 2}
    offline = subprocess.run([*command[:4], "-", "--format", "jsonl"], input="\n".join(repos), capture_output=True,
                             text=True, env={**env, "HF_HUB_OFFLINE": "1"}, timeout=120)
    assert offline.returncode == 0, offline.stderr
    assert len(offline.stdout.splitlines()) == 20


@needs_fork
def test_rows_are_the_same_through_the_fetching_process_and_through_threads(fake_hub, tmp_path):
    """The same list scanned by a fresh ``hfkv scan`` (forks) and in this process (a thread runs here,
    so threads fetch): the same rows, errors included, whatever the order they completed in."""
    from click.testing import CliRunner

    from hfkv.commands.cli import main

    configs = sorted(ROOT.glob("fixtures/*/config.json"))[:18]
    repos = [f"org/m-{i:02d}" for i in range(len(configs))]
    for repo, path in zip(repos, configs):
        fake_hub.add_model(repo, {"config.json": path.read_bytes()})
    listing = tmp_path / "models.txt"
    listing.write_text("\n".join([*repos, "org/missing"]) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HOME=str(tmp_path / "forked"), HF_HUB_DISABLE_TELEMETRY="1")
    forked = subprocess.run([sys.executable, "-m", "hfkv", "scan", str(listing), "--format", "jsonl",
                             "--endpoint", fake_hub.url], capture_output=True, text=True, env=env, timeout=120)
    threaded = CliRunner().invoke(main, ["scan", str(listing), "--format", "jsonl", "--endpoint", fake_hub.url],
                                  env={"HF_HOME": str(tmp_path / "threads")})
    assert forked.returncode == threaded.exit_code == 1

    def rows(text: str) -> list[str]:
        return sorted(json.dumps(json.loads(line), sort_keys=True) for line in text.splitlines())

    assert rows(forked.stdout) == rows(threaded.stdout) and len(rows(forked.stdout)) == len(repos) + 1


@needs_fork
def test_a_stopped_fetching_process_is_killed_and_its_entries_fetched_here():
    # The fetching process stops itself at e7 (as SIGSTOP from outside, or a frozen process, would
    # leave it): after STALL_SECONDS without a result or a heartbeat it is killed, and e7 and every
    # entry it had not sent are fetched by this process. Before the deadline, the scan waited forever.
    fetch = ("import signal, time\n"
             "    fetchers.STALL_SECONDS = 1.0\n"
             "    started = time.monotonic()\n"
             "    def fetch(entry):\n"
             "        if entry == 'e7' and os.getpid() != parent: os.kill(os.getpid(), signal.SIGSTOP)\n"
             "        return [entry, os.getpid(), round(time.monotonic() - started, 1)]")
    out = probe(fetch)
    assert sorted(e for e, *_ in out["seen"]) == sorted(f"e{i}" for i in range(40))  # none lost, none twice
    by_entry = {e: (pid, at) for e, pid, at in out["seen"]}
    assert by_entry["e7"][0] == out["parent"]
    assert max(at for _, at in by_entry.values()) < 10  # the stall cost about STALL_SECONDS, not forever
    assert out["left"] is None  # the stopped process was killed and reaped


@needs_fork
def test_a_slow_fetch_is_not_a_stall():
    # Every fetch takes 3 × STALL_SECONDS (a slow Hub): the process keeps sending heartbeats while its
    # threads wait, so it is not killed and fetches every entry itself.
    fetch = ("import time\n"
             "    fetchers.STALL_SECONDS, fetchers.BEAT_SECONDS = 0.4, 0.05\n"
             "    def fetch(entry):\n"
             "        time.sleep(1.2)\n"
             "        return [entry, os.getpid()]")
    out = probe(fetch, count=fetchers.FORK_MIN)
    assert sorted(e for e, _ in out["seen"]) == sorted(f"e{i}" for i in range(fetchers.FORK_MIN))
    assert out["parent"] not in {pid for _, pid in out["seen"]}


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found += [int(p) for p in (task / "children").read_text().split()]
    return found


@needs_fork
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to find the fetching process")
def test_hfkv_scan_survives_a_stopped_fetching_process(fake_hub, tmp_path):
    """The real command: its fetching process is stopped with SIGSTOP mid-scan; the scan kills it after
    ``STALL_SECONDS`` and fetches the rest itself: every row, exit 0 (before: the scan hung forever)."""
    config = (ROOT / "fixtures" / "Qwen__Qwen2.5-7B" / "config.json").read_bytes()
    repos = [f"org/stall-{i:02d}" for i in range(20)]
    for repo in repos:
        fake_hub.add_model(repo, {"config.json": config})
    fake_hub.latency = 0.3  # 20 repos, 2 at a time: ~3 s of fetching, time to stop the process mid-way
    listing = tmp_path / "models.txt"
    listing.write_text("\n".join(repos) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_DISABLE_TELEMETRY="1")
    started = time.monotonic()
    scan = subprocess.Popen([sys.executable, "-m", "hfkv", "scan", str(listing), "--format", "jsonl", "--jobs", "2",
                             "--endpoint", fake_hub.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    try:
        stopped = None
        while stopped is None and time.monotonic() - started < 30 and scan.poll() is None:
            children = _children(scan.pid)
            if children and len(fake_hub.requests()) >= 2:
                stopped = children[0]
                os.kill(stopped, signal.SIGSTOP)
            time.sleep(0.05)
        out, err = scan.communicate(timeout=60)
    finally:
        fake_hub.latency = 0.0
        if scan.poll() is None:
            scan.kill()
    assert stopped is not None, "the scan ended before its fetching process could be stopped"
    assert scan.returncode == 0, err
    assert sorted(json.loads(line)["model"] for line in out.splitlines()) == repos
    assert not Path(f"/proc/{stopped}").exists()  # killed and reaped, not left stopped
