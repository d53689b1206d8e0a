"""How close ``hfkv scan`` gets to the latency limit of a list of repos on a slow Hub.

The fake Hub (tests/fakehub.py) runs in its own process and sleeps ``--latency`` seconds before each
answer. N repos are served under distinct ids (``bench/model-0000`` ...), their configs copied from the
fixtures that hfkv reports on. ``hfkv scan`` runs as a subprocess (process start, imports and
writing the rows included) with ``--jobs J`` against an empty cache, then again with the cache warm.

The limit is N × requests per repo × latency / J: what J perfectly overlapped requests would take
with no client or server CPU at all. The floor is what this machine needs for those requests alone:
a fresh Python process that imports huggingface_hub and GETs the same N configs through its shared
session with J threads, nothing else (no cache, no report). A scan cannot beat the floor; the
floor's own ratio to the limit says how much of the goal the machine leaves. Requests per repo are
counted from the server's log (the config's GET, cold or warm). Each process's CPU (user + system,
with its children: the transformers helper and the fetching process included) comes from ``wait4``,
its own peak RSS (and the forked fetching process's) from ``VmHWM`` at exit; CPU per repo is the
scan's CPU less the floor's, over N.

``--memory M`` also runs a cold scan of M repos and one of N at 0 ms (the latency changes nothing
in what is kept) and prints both peak RSS: rows are streamed and reports not kept, so the peak
should not grow with the list (the goal: M = 10,000 within 1.5 × N = 300).
Each of ``--runs`` rounds runs the cold scan, the warm scan and the floor in a fresh cache; the
medians of the per-round ratios to the floor are printed last.

Two costs a cold scan pays and the floor does not are first measured alone: transformers' import
(what the helper process does before it answers a config that needs transformers' defaults; one
of the fixtures does) and the cache writes (4 folders and 2 files per repo, which cost what the
disk's metadata costs: ~0.05 ms on a tmpfs, 0.1-3 ms on the benchmark VM's disk, varying from
run to run). ``--cache-root DIR`` puts the scans' ``HF_HOME`` folders under DIR (e.g. /dev/shm);
``--no-sparse`` leaves out the fixtures whose report needs transformers' defaults.
Run: ``python benchmarks/bench_scan.py [--repos 300] [--jobs 32] [--runs 3] [--memory 10000]
[--cache-root DIR] [--no-sparse]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"


def usable_configs(dense_only: bool = False, source: Path = FIXTURES) -> list[bytes]:
    """config.json bytes of every config under ``source`` (a fixture folder's config.json, or a folder of
    *.json files such as ../shared/hub-configs) that hfkv reports on without error (so every row is a
    success); with ``dense_only``, only those whose report asks transformers' config class nothing (no
    helper process): neither a default it takes nor one it looks up and finds absent."""
    import hfkv
    from hfkv.model import defaults

    asked: list[object] = []
    real_lookup = defaults.lookup

    def spy(*args, **kwargs):
        asked.append(args[0])
        return real_lookup(*args, **kwargs)

    defaults.lookup = spy
    found = []
    paths = sorted(source.glob("*/config.json")) or sorted(source.glob("*.json"))
    try:
        for path in paths:
            asked.clear()
            try:
                report = hfkv.inspect(str(path))
                report.to_dict()
            except hfkv.HfkvError:
                continue
            if not (dense_only and (report.transformers_defaults or asked)):
                found.append(path.read_bytes())
    finally:
        defaults.lookup = real_lookup
    return found


def serve(conn, configs: list[bytes], repos: int, latency: float) -> None:
    """The server process: N repos, then answer 'log' (requests since last asked) until 'stop'."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fakehub import FakeHub

    hub = FakeHub(latency=latency, fixtures_dir=None)
    for i in range(repos):
        hub.add_model(repo_id(i), {"config.json": configs[i % len(configs)]})
    with hub.running():
        conn.send(hub.url)
        while True:
            command = conn.recv()
            if command == "stop":
                break
            with hub._lock:
                entries, hub.log[:] = list(hub.log), []
            conn.send([(e["method"], e["path"]) for e in entries])


def repo_id(i: int) -> str:
    return f"bench/model-{i:05d}"


# The process's own peak RSS (VmHWM, Linux), said on stderr at exit. Not ru_maxrss: wait4's is the
# largest of the process and its children (the transformers helper's), and Linux carries a peak
# across fork and exec, so a child would report this benchmark's own peak.
OWN_PEAK = ("import atexit, os, sys\n"
            "def _peak(tag='peak-rss-kib'):\n"
            "    for line in open('/proc/self/status'):\n"
            "        if line.startswith('VmHWM:'):\n"
            "            print(tag, line.split()[1], file=sys.stderr, flush=True)\n"
            "atexit.register(_peak)\n"
            # A scan's forked fetching process ends with os._exit (no atexit): say its peak there.
            "def _in_fork():\n"
            "    atexit.unregister(_peak)\n"
            "    real = os._exit\n"
            "    os._exit = lambda code: (_peak('fetcher-peak-rss-kib'), real(code))\n"
            "os.register_at_fork(after_in_child=_in_fork)\n")
SCAN = OWN_PEAK + "from hfkv.commands.cli import entry\nsys.argv = ['hfkv', *sys.argv[1:]]\nentry()\n"


LAST_FETCHER_PEAK: float | None = None  # peak RSS (MiB) of the last scan's fetching process, if it forked one


def measured(command: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s with its children, own peak RSS MiB) of one process run with ``OWN_PEAK``."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode(errors="replace")
    if code not in (0, 1):
        raise SystemExit(f"{command[:3]} failed ({code}): {text[-400:]}")
    peak = [line.split()[1] for line in text.splitlines() if line.startswith("peak-rss-kib ")]
    fetcher = [int(line.split()[1]) for line in text.splitlines() if line.startswith("fetcher-peak-rss-kib ")]
    global LAST_FETCHER_PEAK
    LAST_FETCHER_PEAK = max(fetcher) / 1024 if fetcher else None
    return wall, usage.ru_utime + usage.ru_stime, int(peak[-1]) / 1024 if peak else float("nan")


def run_scan(listing: Path, out: Path, url: str, jobs: int, env: dict[str, str]) -> tuple[float, float, float, list[dict]]:
    """Wall and CPU seconds and peak RSS (MiB) of one ``hfkv scan`` process, and its rows."""
    command = [sys.executable, "-c", SCAN, "scan", str(listing), "--jobs", str(jobs), "--endpoint", url,
               "--output", str(out), "--format", "jsonl"]
    wall, cpu, rss = measured(command, env)
    return wall, cpu, rss, [json.loads(line) for line in out.read_text().splitlines()]


FLOOR = """
import sys
from concurrent.futures import ThreadPoolExecutor
from huggingface_hub.utils import get_session
url, repos, jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def get(i):
    return get_session().get(f"{url}/bench/model-{i:05d}/resolve/main/config.json").content
with ThreadPoolExecutor(jobs) as pool:
    list(pool.map(get, range(repos)))
"""


def run_floor(url: str, repos: int, jobs: int, env: dict[str, str]) -> tuple[float, float, float]:
    """Wall and CPU seconds and peak RSS (MiB) of the floor process (see the module docstring)."""
    return measured([sys.executable, "-c", OWN_PEAK + FLOOR, url, str(repos), str(jobs)], env)


class Server:
    """The fake Hub process serving ``repos`` repos at ``latency``; ``requests()`` since last asked."""

    def __init__(self, configs: list[bytes], repos: int, latency: float) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=serve, args=(child, configs, repos, latency), daemon=True)
        self.process.start()
        self.url = self.conn.recv()

    def requests(self) -> int:
        self.conn.send("log")
        return len(self.conn.recv())

    def stop(self) -> None:
        self.conn.send("stop")
        self.process.join(timeout=10)


IMPORT_TRANSFORMERS = ("import os; os.environ['TRANSFORMERS_VERBOSITY'] = 'error'\n"
                       "from transformers import CONFIG_MAPPING; CONFIG_MAPPING.keys()\n")


def side_costs(root: str | None, repos: int) -> None:
    """Two costs a cold scan pays that the floor does not, each measured alone: transformers'
    import (what the helper does before it can answer) and the cache writes (``hubcache.store`` of
    ``repos`` configs under ``root``: 4 folders and 2 files per repo, the disk's metadata cost)."""
    from hfkv.sources import cache as hubcache

    wall, cpu, _ = measured([sys.executable, "-c", OWN_PEAK + IMPORT_TRANSFORMERS], dict(os.environ))
    print(f"transformers import alone (fresh process): {wall:.2f} s wall, {cpu:.2f} s CPU")
    body = FIXTURES.joinpath("Qwen__Qwen2.5-7B", "config.json").read_bytes()
    with tempfile.TemporaryDirectory(prefix="hfkv-bench-store-", dir=root) as tmp:
        start = time.process_time()
        for i in range(repos):
            hubcache.store(tmp, repo_id(i), "config.json", revision=None, commit=f"{i:040x}", body=body)
        print(f"cache writes alone under {tmp.rsplit('/', 1)[0]}: {(time.process_time() - start) / repos * 1000:.2f} ms "
              "CPU per repo")


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    env.update(HF_HOME=str(home / "hf"), HF_HUB_CACHE=str(home / "hf" / "hub"),
               HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_IMPLICIT_TOKEN="1")
    return env


def write_listing(path: Path, repos: int) -> Path:
    path.write_text("".join(repo_id(i) + "\n" for i in range(repos)))
    return path


def latency_runs(args: argparse.Namespace, configs: list[bytes]) -> None:
    """``--runs`` rounds of a cold scan, a warm scan and the floor at ``--latency`` (each round in a
    fresh cache), one line each, then the medians of the per-round ratios to the floor."""
    server = Server(configs, args.repos, args.latency)
    print(f"{args.repos} repos ({len(configs)} distinct configs from {args.configs.name}), --jobs {args.jobs}, "
          f"{args.latency * 1000:.0f} ms per request, fake Hub in its own process, {args.runs} round(s)")
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (timings are shared-machine noisy)")
    print(f"{'run':<6} {'requests':>8} {'per repo':>8} {'wall s':>7} {'limit s':>7} {'ratio':>6} "
          f"{'cpu s':>6} {'RSS MiB':>7}  rows ok/failed")
    ratios: dict[str, list[float]] = {"cold": [], "warm": []}
    extra_cpu: dict[str, list[float]] = {"cold": [], "warm": []}
    try:
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="hfkv-bench-", dir=args.cache_root) as tmp:
                home = Path(tmp)
                listing = write_listing(home / "models.txt", args.repos)
                env = environment(home)
                results = {label: scan_line(label, listing, home, server, args, env) for label in ("cold", "warm")}
                wall, cpu, rss = run_floor(server.url, args.repos, args.jobs, env)
                print_line("floor", server.requests(), args, wall, cpu, rss,
                           "(bare GETs: python + huggingface_hub's session, no hfkv)")
                for label, (scan_wall, scan_cpu) in results.items():
                    ratios[label].append(scan_wall / wall)
                    extra_cpu[label].append((scan_cpu - cpu) / args.repos * 1000)
    finally:
        server.stop()
    for label in ratios:
        print(f"{label}: median {statistics.median(ratios[label]):.2f} × the floor's wall time "
              f"(rounds: {', '.join(f'{r:.2f}' for r in ratios[label])}); "
              f"{statistics.median(extra_cpu[label]):.1f} ms CPU per repo beyond the floor's")


def scan_line(label: str, listing: Path, home: Path, server: "Server", args: argparse.Namespace,
              env: dict[str, str]) -> tuple[float, float]:
    """One scan, printed as one line; (wall, CPU)."""
    wall, cpu, rss, rows = run_scan(listing, home / f"{label}.jsonl", server.url, args.jobs, env)
    failed = [r for r in rows if "error" in r]
    print_line(label, server.requests(), args, wall, cpu, rss, f"{len(rows) - len(failed)}/{len(failed)}")
    for row in failed[:3]:
        print(f"       failed: {row['model']}: {row['error'][:120]}")
    return wall, cpu


def print_line(label: str, requests: int, args: argparse.Namespace, wall: float, cpu: float, rss: float,
               tail: str) -> None:
    limit = requests * args.latency / args.jobs  # N × requests per repo × latency / jobs
    ratio = f"{wall / limit:>6.2f}" if limit else f"{'-':>6}"  # --latency 0: the CPU floor alone
    print(f"{label:<6} {requests:>8} {requests / args.repos:>8.2f} {wall:>7.2f} {limit:>7.2f} {ratio} "
          f"{cpu:>6.2f} {rss:>7.1f}  {tail}")


def memory_runs(args: argparse.Namespace, configs: list[bytes]) -> None:
    """Peak RSS of a cold scan of ``--repos`` and of ``--memory`` repos (0 ms per request)."""
    peaks = {}
    for repos in (args.repos, args.memory):
        server = Server(configs, repos, 0.0)
        try:
            with tempfile.TemporaryDirectory(prefix="hfkv-bench-mem-", dir=args.cache_root) as tmp:
                home = Path(tmp)
                listing = write_listing(home / "models.txt", repos)
                wall, cpu, rss, rows = run_scan(listing, home / "rows.jsonl", server.url, args.jobs, environment(home))
                peaks[repos] = (rss, LAST_FETCHER_PEAK)
                fetcher = f", fetching process {LAST_FETCHER_PEAK:7.1f} MiB" if LAST_FETCHER_PEAK else ""
                print(f"memory: {repos:>6} repos, peak RSS {rss:7.1f} MiB{fetcher}, {wall:6.1f} s wall, "
                      f"{cpu:6.1f} s CPU, {sum('error' not in r for r in rows)} rows ok")
        finally:
            server.stop()
    (big, big_fetch), (small, small_fetch) = peaks[args.memory], peaks[args.repos]
    print(f"memory: peak RSS ratio {args.memory} / {args.repos} repos = {big / small:.2f}"
          + (f" (fetching process: {big_fetch / small_fetch:.2f}; it shares the scan's pages from the fork)"
             if big_fetch and small_fetch else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the fake Hub sleeps per request")
    parser.add_argument("--runs", type=int, default=3, help="rounds of cold, warm and floor (medians reported)")
    parser.add_argument("--memory", type=int, default=0, metavar="M",
                        help="also compare the peak RSS of a scan of M repos with one of --repos (0 ms)")
    parser.add_argument("--cache-root", metavar="DIR", help="where the scans' HF_HOME folders are made "
                        "(default: the system's temporary folder; a tmpfs such as /dev/shm leaves out the disk)")
    parser.add_argument("--no-sparse", action="store_true",
                        help="only configs whose report asks transformers nothing (no helper process)")
    parser.add_argument("--configs", type=Path, default=FIXTURES, metavar="DIR",
                        help="the configs to serve: fixture folders (the default: trimmed, and without the "
                        "transformers_version save_pretrained writes, so read as hand-written) or a folder of "
                        "*.json as the Hub serves them, e.g. ../shared/hub-configs")
    args = parser.parse_args()

    # An installed hfkv has bytecode (pip compiles it); an editable checkout under
    # PYTHONDONTWRITEBYTECODE=1 would recompile every module at every start: compile once here.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "hfkv"), str(ROOT / "mappings")],
                   check=True, capture_output=True)
    configs = usable_configs(dense_only=args.no_sparse, source=args.configs)
    side_costs(args.cache_root, args.repos)
    latency_runs(args, configs)
    if args.memory:
        memory_runs(args, configs)


if __name__ == "__main__":
    main()
