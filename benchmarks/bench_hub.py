"""One Hub report, hfkv against hf-mem 0.5.6, on the same fake Hub at the same latency.

The fake Hub (tests/fakehub.py) runs in its own process, sleeps ``--latency`` seconds before each
answer and serves one repo: Llama-3.1-8B's config.json plus a header-only ``model.safetensors``
(what hf-mem reads for the weights). Each round runs, in alternating order, one fresh process of:

* ``hfkv``: ``python -m hfkv bench/llama-3.1-8b --endpoint URL --format json`` against an empty
  cache (the report with its parameter counts, as a user runs it);
* ``hfkv-prefetch``: the same command with ``HubClient(prefetch_weights=True)``, i.e. with the
  config GET and the parameter-count request sent together (what the CLI does once ``build_hub``
  passes ``prefetch_weights=not --no-weights``);
* ``hf-mem``: ``hf-mem --model-id bench/llama-3.1-8b --experimental --json-output`` (weights and KV
  cache; ``--experimental`` is what reads config.json). hf-mem only talks to https://huggingface.co,
  so its httpx2 client is pointed at the fake Hub by a two-line patch of ``AsyncClient.send`` that
  rewrites the URL; nothing else of hf-mem is touched;
* ``python -c pass``, the price of a process on this machine.

It prints the median wall time of each, the median of the per-round ratios hfkv / hf-mem, and the
requests each made (from the fake Hub's log). hf-mem must be installed in its own venv
(``python -m venv /tmp/hfmem-venv && /tmp/hfmem-venv/bin/pip install hf-mem==0.5.6``), given
with ``--hf-mem-python``. Run: ``python benchmarks/bench_hub.py [--rounds 9] [--latency 0.05]``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPO = "bench/llama-3.1-8b"
CONFIG = ROOT / "fixtures" / "meta-llama__Meta-Llama-3.1-8B" / "config.json"
# A few of Llama-3.1-8B's tensors are enough: hf-mem and the Hub's count read the header, never data.
TENSORS = {"model.embed_tokens.weight": ("BF16", [128256, 4096]), "lm_head.weight": ("BF16", [128256, 4096]),
           "model.layers.0.self_attn.q_proj.weight": ("BF16", [4096, 4096])}

HF_MEM = """
import sys, httpx2
url = httpx2.URL(sys.argv[1])
send = httpx2.AsyncClient.send
async def to_fake(self, request, **kwargs):
    if request.url.host == "huggingface.co":
        request.url = request.url.copy_with(scheme=url.scheme, host=url.host, port=url.port)
    return await send(self, request, **kwargs)
httpx2.AsyncClient.send = to_fake
sys.argv = ["hf-mem", *sys.argv[2:]]
from hf_mem.cli import main
main()
"""

PREFETCH = """
import sys
import hfkv.sources.hub as hub
init = hub.HubClient.__init__
def prefetching(self, *args, **kwargs):
    kwargs.setdefault("prefetch_weights", True)
    init(self, *args, **kwargs)
hub.HubClient.__init__ = prefetching
from hfkv.commands.cli import entry
sys.argv = ["hfkv", *sys.argv[1:]]
entry()
"""


def serve(conn, latency: float) -> None:
    """The fake Hub process: one repo; answers 'log' with the requests since last asked, until 'stop'."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fakehub import FakeHub

    hub = FakeHub(latency=latency, fixtures_dir=None)
    hub.add_model(REPO, {"config.json": CONFIG.read_bytes()}, safetensors={"model.safetensors": TENSORS})
    with hub.running():
        conn.send(hub.url)
        while conn.recv() != "stop":
            with hub._lock:
                entries, hub.log[:] = list(hub.log), []
            conn.send([f"{e['method']} {e['path']}" for e in entries])


def commands(url: str, hf_mem_python: str) -> dict[str, list[str]]:
    hfkv_args = [REPO, "--endpoint", url, "--format", "json"]
    return {
        "hfkv": [sys.executable, "-m", "hfkv", *hfkv_args],
        "hfkv-prefetch": [sys.executable, "-c", PREFETCH, *hfkv_args],
        "hf-mem": [hf_mem_python, "-c", HF_MEM, url, "--model-id", REPO, "--experimental", "--json-output"],
        "python -c pass": [sys.executable, "-c", "pass"],
    }


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} {command[1][:20]!r} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the fake Hub sleeps per request")
    parser.add_argument("--hf-mem-python", default="/tmp/hfmem-venv/bin/python",
                        help="the python of a venv with hf-mem==0.5.6 installed")
    args = parser.parse_args()
    if not Path(args.hf_mem_python).exists():
        raise SystemExit(f"{args.hf_mem_python} not found: python -m venv /tmp/hfmem-venv && "
                         "/tmp/hfmem-venv/bin/pip install hf-mem==0.5.6")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "hfkv"), str(ROOT / "mappings")],
                   check=True, capture_output=True)  # as pip install does (see bench_scan.py)
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    server = ctx.Process(target=serve, args=(child, args.latency), daemon=True)
    server.start()
    url = parent.recv()
    walls: dict[str, list[float]] = {}
    requests: dict[str, list[str]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="hfkv-bench-hub-") as tmp:
            runs = commands(url, args.hf_mem_python)
            names = list(runs)
            for number in range(args.rounds):
                order = names if number % 2 == 0 else names[::-1]  # paired, alternating order
                for name in order:
                    home = Path(tmp) / f"{name.replace(' ', '_')}-{number}"  # an empty cache every run
                    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
                    env.update(HF_HOME=str(home), HF_HUB_CACHE=str(home / "hub"), HF_HUB_DISABLE_TELEMETRY="1",
                               HF_HUB_DISABLE_IMPLICIT_TOKEN="1")
                    walls.setdefault(name, []).append(timed(runs[name], env))
                    parent.send("log")
                    requests[name] = parent.recv()
    finally:
        parent.send("stop")
        server.join(timeout=10)
    report(walls, requests, args)


def report(walls: dict[str, list[float]], requests: dict[str, list[str]], args: argparse.Namespace) -> None:
    print(f"one Hub report, {args.rounds} paired rounds, fake Hub at {args.latency * 1000:.0f} ms per request; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'run':<16} {'median s':>9} {'min s':>7} {'max s':>7}  requests")
    for name, values in walls.items():
        print(f"{name:<16} {statistics.median(values):>9.3f} {min(values):>7.3f} {max(values):>7.3f}  "
              f"{len(requests[name])}: {', '.join(requests[name]) or '-'}")
    for name in ("hfkv", "hfkv-prefetch"):
        ratios = [a / b for a, b in zip(walls[name], walls["hf-mem"])]
        print(f"{name} / hf-mem: median of per-round ratios {statistics.median(ratios):.2f} "
              f"(range {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
