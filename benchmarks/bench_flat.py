"""Costs that must stay flat (issue 23): each section times fresh ``hfkv`` processes, so imports count.

    python benchmarks/bench_flat.py [--section NAME ...] [--hfkv PATH] [--runs 5]

Sections (all local: fixtures, generated configs, a closed port on 127.0.0.1; never the real Hub):

``store``
    A report that needs transformers' defaults (gemma-3-4b-it, answered from hfkv's store) with a
    store of 0, 1,000 and 8,000 other answers: start-up must not depend on the store's size. The
    store is filled in the format of the hfkv that runs (``Store`` of format 2, or the single JSONL
    file of format 1), so ``--hfkv`` pointed at an older install gives the figures before.
``unknown``
    ``--engine vllm`` on a config whose model type transformers does not know, three runs on one
    ``HF_HOME``: the first imports transformers to learn it; the next ones must not.
``junk``
    A Llama config plus 100,000 and 1,500,000 junk keys, ``--engine vllm --gpu H200``, cold (empty
    ``HF_HOME``) then warm; and, in process, the CPU seconds of building the config class.
``layers``
    A legal config of 100,000 layers (``layer_types`` listed): theory and ``--engine vllm``.
``unreachable``
    ``hfkv org/model --endpoint http://127.0.0.1:9`` with stderr on a pseudo-terminal: seconds until
    the first line on stderr (a notice or the error), and until the process ends.

``--hfkv PATH``: the ``hfkv`` command to time (default: this checkout, ``python -m hfkv``); its Python
is the one next to it (``PATH/../python``) for the in-process parts.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
LLAMA = json.loads((FIXTURES / "meta-llama__Meta-Llama-3.1-8B" / "config.json").read_text())


def command(args: argparse.Namespace) -> list[str]:
    return [args.hfkv] if args.hfkv else [sys.executable, "-m", "hfkv"]


def python_of(args: argparse.Namespace) -> str:
    return str(Path(args.hfkv).parent / "python") if args.hfkv else sys.executable


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HOME=str(home), HF_HUB_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1")
    return env


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall s, CPU s of the process and its children, exit code) of one fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tempfile.gettempdir())
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def write_config(folder: Path, data: dict) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(data))
    return str(folder)


FILL = r"""
import json, os, sys
from hfkv.model import defaults
count, home = int(sys.argv[1]), sys.argv[2]
os.environ["HF_HOME"] = home
answer = {"vocab_size": 1, "hidden_size": 2, "num_attention_heads": 3, "note": "x" * 2000}
if hasattr(defaults, "Store"):  # format 2: one file per answer
    store = defaults.Store()
    for i in range(count):
        key = f"{i:064x}"
        store.put(key, {"i": i}, dict(answer, i=i))
else:  # format 1: one JSONL file, read whole at start
    path = defaults._answers_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as handle:
        for i in range(count):
            handle.write(json.dumps({"key": f"{i:064x}", "defaults": dict(answer, i=i)}) + "\n")
"""


def section_store(args: argparse.Namespace) -> None:
    gemma = str(FIXTURES / "google__gemma-3-4b-it")
    print("store: gemma-3-4b-it --format json, its answer kept; other answers in the store")
    for count in (0, 1000, 8000):
        home = Path(tempfile.mkdtemp(prefix="hfkv-bench-store-"))
        try:
            subprocess.run([python_of(args), "-c", FILL, str(count), str(home)], check=True, cwd=tempfile.gettempdir())
            env = environment(home)
            timed(command(args) + [gemma, "--format", "json"], env)  # computes and keeps gemma's answer
            size = sum(p.stat().st_size for p in home.rglob("*") if p.is_file())
            pairs = []
            for _ in range(args.runs):
                base = timed([python_of(args), "-c", "pass"], env)
                case = timed(command(args) + [gemma, "--format", "json"], env)
                pairs.append((case[0], case[0] / base[0], case[1] / base[1]))
            print(f"  {count:5d} other answers ({size / 2**20:6.1f} MiB on disk): "
                  f"{statistics.median(p[0] for p in pairs):.3f} s, "
                  f"{statistics.median(p[1] for p in pairs):.2f}× python -c pass (CPU "
                  f"{statistics.median(p[2] for p in pairs):.2f}×)", flush=True)
        finally:
            shutil.rmtree(home, ignore_errors=True)


def section_unknown(args: argparse.Namespace) -> None:
    home = Path(tempfile.mkdtemp(prefix="hfkv-bench-unknown-"))
    try:
        config = write_config(home / "model", dict(LLAMA, model_type="not_a_transformers_type"))
        runs = [timed(command(args) + [config, "--format", "json", "--engine", "vllm", "--gpu", "H200"],
                      environment(home)) for _ in range(3)]
        print("unknown model type, --engine vllm, one HF_HOME: " +
              ", ".join(f"run {i + 1} {wall:.2f} s ({cpu:.2f} s CPU)" for i, (wall, cpu, _) in enumerate(runs)))
    finally:
        shutil.rmtree(home, ignore_errors=True)


def section_junk(args: argparse.Namespace) -> None:
    for count in (100_000, 1_500_000):
        home = Path(tempfile.mkdtemp(prefix="hfkv-bench-junk-"))
        try:
            config = write_config(home / "model", dict(LLAMA, **{f"k{i}": 0 for i in range(count)}))  # 1.5 M: 21 MB
            cmd = command(args) + [config, "--format", "json", "--engine", "vllm", "--gpu", "H200"]
            cold, warm = timed(cmd, environment(home)), timed(cmd, environment(home))
            inproc = subprocess.run([python_of(args), "-c", JUNK_IN_PROCESS, str(count), str(home / "inproc")],
                                    capture_output=True, text=True, cwd=tempfile.gettempdir())
            print(f"junk keys {count:>9,}: CLI cold {cold[0]:.2f} s ({cold[1]:.2f} s CPU), warm {warm[0]:.2f} s "
                  f"({warm[1]:.2f} s CPU); building the config class {inproc.stdout.strip()} s CPU", flush=True)
        finally:
            shutil.rmtree(home, ignore_errors=True)


JUNK_IN_PROCESS = r"""
import json, os, sys, time
os.environ["HF_HOME"] = sys.argv[2]
from hfkv.model import defaults
llama = json.load(open(os.path.join(%r, "meta-llama__Meta-Llama-3.1-8B", "config.json")))
defaults.compute([("llama", False)], llama)  # transformers imported, not timed
data = dict(llama, **{f"k{i}": 0 for i in range(int(sys.argv[1]))})
started = time.process_time()
defaults.compute([("llama", False)], data)
print(round(time.process_time() - started, 2))
""" % str(FIXTURES)


def section_layers(args: argparse.Namespace) -> None:
    home = Path(tempfile.mkdtemp(prefix="hfkv-bench-layers-"))
    try:
        config = write_config(home / "model", dict(LLAMA, num_hidden_layers=100_000,
                                                   layer_types=["full_attention"] * 100_000))
        env = environment(home)
        theory = timed(command(args) + [config, "--format", "json"], env)
        timed(command(args) + [config, "--format", "json", "--engine", "vllm", "--gpu", "H200"], env)  # keeps defaults
        vllm = timed(command(args) + [config, "--format", "json", "--engine", "vllm", "--gpu", "H200"], env)
        print(f"100,000 layers: theory {theory[0]:.2f} s ({theory[1]:.2f} s CPU), --engine vllm --gpu H200 "
              f"{vllm[0]:.2f} s ({vllm[1]:.2f} s CPU)", flush=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def section_unreachable(args: argparse.Namespace) -> None:
    home = Path(tempfile.mkdtemp(prefix="hfkv-bench-hub-"))
    env = environment(home)
    env.pop("HF_HUB_OFFLINE")
    master, slave = pty.openpty()
    started = time.monotonic()
    proc = subprocess.Popen(command(args) + ["org/model", "--endpoint", "http://127.0.0.1:9", "--format", "json"],
                            stdout=subprocess.DEVNULL, stderr=slave, env=env, cwd=tempfile.gettempdir())
    os.close(slave)
    first, text = None, ""
    try:
        while proc.poll() is None or select.select([master], [], [], 0)[0]:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    chunk = os.read(master, 4096).decode(errors="replace")
                except OSError:
                    break
                if chunk and first is None:
                    first = time.monotonic() - started
                text += chunk
    finally:
        proc.wait()
        os.close(master)
        shutil.rmtree(home, ignore_errors=True)
    line = text.strip().splitlines()[0] if text.strip() else "(nothing)"
    print(f"unreachable Hub (connection refused): first stderr line after {first:.1f} s, exit after "
          f"{time.monotonic() - started:.1f} s; first line: {line[:100]}")


SECTIONS = {"store": section_store, "unknown": section_unknown, "junk": section_junk, "layers": section_layers,
            "unreachable": section_unreachable}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", action="append", choices=list(SECTIONS))
    parser.add_argument("--hfkv", help="the hfkv command to time (default: this checkout's python -m hfkv)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    for name in args.section or list(SECTIONS):
        SECTIONS[name](args)


if __name__ == "__main__":
    main()
