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
counted from the server's log (the config's GET, cold or warm).
Run: ``python benchmarks/bench_scan.py [--repos 300] [--jobs 32]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"


def usable_configs() -> list[bytes]:
    """config.json bytes of every fixture hfkv reports on without error (so every row is a success)."""
    import hfkv

    found = []
    for path in sorted(FIXTURES.glob("*/config.json")):
        try:
            hfkv.inspect(str(path))
        except hfkv.HfkvError:
            continue
        found.append(path.read_bytes())
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
    return f"bench/model-{i:04d}"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_scan(listing: Path, out: Path, url: str, jobs: int, env: dict[str, str]) -> tuple[float, float, list[dict]]:
    """Wall and CPU seconds of one ``hfkv scan`` process, and its rows."""
    command = [sys.executable, "-m", "hfkv", "scan", str(listing), "--jobs", str(jobs), "--endpoint", url,
               "--output", str(out), "--format", "jsonl"]
    cpu = children_cpu()
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"hfkv scan failed ({done.returncode}): {done.stderr.strip()}")
    return wall, children_cpu() - cpu, [json.loads(line) for line in out.read_text().splitlines()]


FLOOR = """
import sys
from concurrent.futures import ThreadPoolExecutor
from huggingface_hub.utils import get_session
url, repos, jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def get(i):
    return get_session().get(f"{url}/bench/model-{i:04d}/resolve/main/config.json").content
with ThreadPoolExecutor(jobs) as pool:
    list(pool.map(get, range(repos)))
"""


def run_floor(url: str, repos: int, jobs: int, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of the floor process (see the module docstring)."""
    cpu = children_cpu()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR, url, str(repos), str(jobs)], env=env, check=True, timeout=600)
    return time.perf_counter() - start, children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the fake Hub sleeps per request")
    args = parser.parse_args()

    # An installed hfkv has bytecode (pip compiles it); an editable checkout under
    # PYTHONDONTWRITEBYTECODE=1 would recompile every module at every start: compile once here.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "hfkv"), str(ROOT / "mappings")],
                   check=True, capture_output=True)
    configs = usable_configs()
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    server = ctx.Process(target=serve, args=(child, configs, args.repos, args.latency), daemon=True)
    server.start()
    url = parent.recv()
    try:
        with tempfile.TemporaryDirectory(prefix="hfkv-bench-") as tmp:
            home = Path(tmp)
            listing = home / "models.txt"
            listing.write_text("".join(repo_id(i) + "\n" for i in range(args.repos)))
            env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
            env.update(HF_HOME=str(home / "hf"), HF_HUB_CACHE=str(home / "hf" / "hub"),
                       HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_IMPLICIT_TOKEN="1")
            print(f"{args.repos} repos ({len(configs)} distinct fixture configs), --jobs {args.jobs}, "
                  f"{args.latency * 1000:.0f} ms per request, fake Hub in its own process")
            print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (timings are shared-machine noisy)")
            print(f"{'cache':<6} {'requests':>8} {'per repo':>8} {'wall s':>7} {'limit s':>7} {'ratio':>6} {'cpu s':>6}  rows ok/failed")
            for label in ("cold", "warm"):
                wall, cpu, rows = run_scan(listing, home / f"{label}.jsonl", url, args.jobs, env)
                parent.send("log")
                requests = len(parent.recv())
                per_repo = requests / args.repos
                limit = args.repos * per_repo * args.latency / args.jobs
                failed = [r for r in rows if "error" in r]
                ratio = f"{wall / limit:>6.2f}" if limit else f"{'-':>6}"  # --latency 0: the CPU floor alone
                print(f"{label:<6} {requests:>8} {per_repo:>8.2f} {wall:>7.2f} {limit:>7.2f} {ratio} "
                      f"{cpu:>6.2f}  {len(rows) - len(failed)}/{len(failed)}")
                for row in failed[:3]:
                    print(f"       failed: {row['model']}: {row['error'][:120]}")
            wall, cpu = run_floor(url, args.repos, args.jobs, env)
            parent.send("log")
            requests = len(parent.recv())
            limit = requests * args.latency / args.jobs
            ratio = f"{wall / limit:>6.2f}" if limit else f"{'-':>6}"
            print(f"{'floor':<6} {requests:>8} {requests / args.repos:>8.2f} {wall:>7.2f} {limit:>7.2f} {ratio} {cpu:>6.2f}"
                  "  (bare GETs: python + huggingface_hub's session, no hfkv)")
    finally:
        parent.send("stop")
        server.join(timeout=10)


if __name__ == "__main__":
    main()
