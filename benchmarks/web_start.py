"""How soon ``hfkv serve`` answers its first page: wall time from the process's start to the first 200 on
``/``, and the CPU time (user + system) the server had used by then (less sensitive to other load on
the machine), over ``--runs`` fresh processes; the load average is printed beside them.

    python benchmarks/web_start.py [--runs 7] [--baseline]

``--baseline`` also times a bare Gradio app (one textbox, no hfkv) started the same way, with Gradio
imported as it comes (stub rewriting and IPython included): what a page costs before hfkv's own work.
The target of the project: the first page within 3 s of start.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BARE = ("import os, sys; os.environ['GRADIO_ANALYTICS_ENABLED'] = 'False'; import gradio as gr\n"
        "with gr.Blocks() as app: gr.Textbox()\n"
        "app.launch(server_name='127.0.0.1', server_port=int(sys.argv[1]))")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime


def first_page(command: list[str], port: int, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds to the first 200 on /, the server's CPU seconds by then)."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                    response.read()
                break
            except OSError:
                if proc.poll() is not None:
                    raise SystemExit(f"{command} exited with {proc.returncode}")
                time.sleep(0.01)
        return time.perf_counter() - start, cpu_seconds(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", action="store_true")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "GRADIO_", "HFKV_"))}
    env.update(HF_HOME=tempfile.mkdtemp(prefix="hfkv-web-start-"), HF_HUB_DISABLE_TELEMETRY="1")
    cases = {"hfkv serve": lambda port: [sys.executable, "-m", "hfkv", "serve", "--port", str(port)]}
    if args.baseline:
        cases["bare Gradio app"] = lambda port: [sys.executable, "-c", BARE, str(port)]
    for name, command in cases.items():
        port = free_port()
        first_page(command(port), port, env)  # warm-up, not counted: the files in the page cache
        walls, cpus = [], []
        for _ in range(args.runs):
            port = free_port()
            wall, cpu = first_page(command(port), port, env)
            walls.append(wall)
            cpus.append(cpu)
        print(f"{name}: first page in {statistics.median(walls):.2f} s wall (min {min(walls):.2f}, max "
              f"{max(walls):.2f}), {statistics.median(cpus):.2f} s CPU (min {min(cpus):.2f}), {args.runs} runs, "
              f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
