"""The calculator page's memory over many requests: ``hfkv serve`` against the fake Hub, its resident
memory sampled as requests go through the page's API (what its buttons call).

The server runs in its own process (``python -m hfkv serve``), the fake Hub (tests/fakehub.py, no added
latency) and the clients in this one. After ``--warmup`` requests (imports, caches, Gradio's first
sessions), ``--requests`` more go through ``--clients`` threads, a mix of what visitors do:

    60%  Report of a Hub model on a GPU preset (TP 1, 2, 4 or 8 in turn): hfkv's report and both engines
    10%  Report of a repo that does not exist (the error path)
    10%  Report of a private repo with a visitor's token (a new token every time: the token bookkeeping)
    10%  an uploaded config.json, then its Report (the upload is deleted once read)
    10%  Compare of two models; and every 100th request a Plan (2 GPUs at most)

The server's RSS (``/proc/PID/status``) is sampled every ``--sample`` requests; the figure is the RSS
after all requests against the RSS after the warm-up (the target: within 10%). Each request's work runs
in a worker process forked by the server's helper (hfkv.runtime.worker); the memory of the helper and
its workers is sampled too (their PSS: a worker shares most of the helper's pages). Also counted: files left in Gradio's temporary folder and
``hfkv-page-*`` folders left in the temporary directory, the server's own folder included.

    python benchmarks/web_memory.py [--requests 10000] [--warmup 1000] [--clients 4] [--sample 500]

Exit status 1 when the RSS grew by more than 10%.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LLAMA = "meta-llama/Meta-Llama-3.1-8B"
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "web")]
import webkit  # noqa: E402 - the page's fields in its handlers' order, as the server tests send them

PLAN = dict(max_gpus=2, plan_kv="fp8")  # every 100th request plans: kept small


def values(**given: object) -> list:
    return webkit.values(**{**PLAN, **given})


def call(server: str, name: str, data: list) -> str:
    return webkit.call_api(server, name, data)


def upload(server: str, content: bytes) -> str:
    status, paths = webkit.upload(server, "config.json", content)
    assert status == 200, paths
    return paths[0]


def one(server: str, k: int, hub: object, config: bytes) -> bool:
    """The k-th request of the mix; True when the page answered with a report (or the expected error)."""
    kind = k % 10
    if k % 100 == 99:
        answer = call(server, "plan", [None, ""] + values(model=LLAMA, requests=16, plan_context="8k"))
        return "hfkv-plan-best" in answer
    if kind < 6:
        answer = call(server, "report", [None, ""] + values(model=LLAMA, gpu="H200-141GB", tp=(1, 2, 4, 8)[k % 4]))
        return "hfkv-verdict-vllm" in answer
    if kind == 6:
        answer = call(server, "report", [None, ""] + values(model=f"nobody/missing-{k}"))
        return "no such repo" in answer
    if kind == 7:
        token = f"hf_Visitor{k:026d}"  # a new token each time; the fake Hub accepts it as valid, not granted
        hub.ungranted_tokens.add(token)  # type: ignore[attr-defined]
        answer = call(server, "report", [None, token] + values(model="org/private-bench"))
        hub.ungranted_tokens.discard(token)  # type: ignore[attr-defined]
        return "no such repo" in answer and token not in answer
    if kind == 8:
        path = upload(server, config)
        answer = call(server, "report", [{"path": path, "meta": {"_type": "gradio.FileData"}}, ""] + values())
        return "hfkv config.json" in answer
    answer = call(server, "compare", [None, ""] + values(compare=f"{LLAMA} openai/gpt-oss-120b"))  # no files, no token
    return 'class=\\"compare\\"' in answer


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def pss(pid: int) -> int:
    """A process's proportional set size in bytes: its pages, those it shares counted in part (a worker
    shares most of its parent's: their RSS summed would count those once per worker)."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no Pss")


def helper_rss(pid: int) -> int:
    """The memory of the server's descendants (their PSS: see ``pss``), its workers' parent and the
    workers then running (0 where there is none)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):  # gone meanwhile
                continue
    family, grew = {pid}, True
    while grew:
        more = {child for child, parent in parents.items() if parent in family} - family
        family |= more
        grew = bool(more)
    total = 0
    for member in family - {pid}:
        try:
            total += pss(member)
        except (OSError, RuntimeError):
            continue
    return total


def page_folders() -> set[str]:
    """``hfkv-page-*`` folders in the temporary directory, and in the servers' own folders there."""
    temp = Path(tempfile.gettempdir())
    return {str(p) for pattern in ("hfkv-page-*", "hfkv-serve-*/pages/hfkv-page-*") for p in temp.glob(pattern)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=1_000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--sample", type=int, default=500)
    args = parser.parse_args()

    from fakehub import FakeHub

    hub = FakeHub().start()
    hub.add_fixture("org/private-bench", folder="meta-llama__Meta-Llama-3.1-8B", private=True)
    config = (ROOT / "fixtures" / "meta-llama__Meta-Llama-3.1-8B" / "config.json").read_bytes()
    work = Path(tempfile.mkdtemp(prefix="hfkv-web-bench-"))
    gradio_temp = work / "gradio"
    gradio_temp.mkdir()
    port = webkit.free_port()
    env = webkit.server_env(hub.url, work / "hf", GRADIO_TEMP_DIR=str(gradio_temp))
    command = [sys.executable, "-m", "hfkv", "serve", "--port", str(port), "--concurrency", str(args.clients)]
    try:
        with webkit.started(command, env, port, work / "serve.log", wait=120) as (server, proc):
            before_tmp = page_folders()
            counter = iter(range(args.warmup + args.requests))
            lock = threading.Lock()
            failures: list[int] = []
            done = [0]
            samples: list[tuple[int, int, int, float, int]] = []
            start = [time.monotonic()]

            def worker() -> None:
                while True:
                    with lock:
                        k = next(counter, None)
                    if k is None:
                        return
                    try:
                        ok = one(server, k, hub, config)
                    except Exception:
                        ok = False
                    with lock:
                        if not ok:
                            failures.append(k)
                        done[0] += 1
                        n = done[0]
                        if n == args.warmup:
                            hub.log.clear()
                            start[0] = time.monotonic()
                        if n >= args.warmup and (n - args.warmup) % args.sample == 0:
                            samples.append((n - args.warmup, rss(proc.pid), threads(proc.pid), time.monotonic(),
                                            helper_rss(proc.pid)))
                            print(f"{n - args.warmup:>6} requests after warm-up: RSS {samples[-1][1] / 2**20:7.1f} MiB, "
                                  f"{samples[-1][2]} threads; workers' parent {samples[-1][4] / 2**20:.1f} MiB",
                                  flush=True)
                        if n % 1000 == 0:
                            hub.log.clear()

            pool = [threading.Thread(target=worker) for _ in range(args.clients)]
            for t in pool:
                t.start()
            for t in pool:
                t.join()
            elapsed = samples[-1][3] - start[0]
            first, last = samples[0][1], samples[-1][1]
            peak = max(s[1] for s in samples)
            left_uploads = [p for p in gradio_temp.rglob("*") if p.is_file()]
            left_pages = page_folders() - before_tmp
            growth = (last - first) / first
            print()
            print(f"requests: {args.warmup:,} warm-up + {args.requests:,} measured, {args.clients} clients, "
                  f"{args.requests / elapsed:.1f} requests/s, {len(failures)} failed")
            print(f"RSS after warm-up {first / 2**20:.1f} MiB; after {args.requests:,} more {last / 2**20:.1f} MiB "
                  f"({growth:+.1%}); peak {peak / 2**20:.1f} MiB; median {statistics.median(s[1] for s in samples) / 2**20:.1f} MiB")
            print(f"threads {samples[0][2]} → {samples[-1][2]}; files left in Gradio's folder: {len(left_uploads)}; "
                  f"hfkv-page-* folders left: {len(left_pages)}")
            print(f"the workers' parent (and any worker then running): {samples[0][4] / 2**20:.1f} → "
                  f"{samples[-1][4] / 2**20:.1f} MiB")
            return 0 if abs(growth) <= 0.10 and not failures else 1
    finally:
        hub.stop()


if __name__ == "__main__":
    raise SystemExit(main())
