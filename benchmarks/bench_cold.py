"""Cold start: wall time of a fresh ``hfkv`` process against ``python -c pass``, in paired runs.

Each run is a fresh interpreter (what a user or a cron job pays). Runs are paired: every case is run
right after its own ``python -c pass``, so a change in the machine's load hits both; the figure is
the median over the pairs of case / baseline. The targets of the project are a local report within
6 × ``python -c pass`` and ``hfkv --help`` within 3 ×.

    python benchmarks/bench_cold.py [--runs 15] [--case NAME ...]

Bytecode matters: with ``PYTHONDONTWRITEBYTECODE=1`` an editable checkout recompiles hfkv at every
start; run ``python -m compileall -q hfkv mappings`` first (``pip install`` does the same).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = [sys.executable, "-c", "pass"]
HFKV = [sys.executable, "-m", "hfkv"]
CASES = {
    "hfkv --help": HFKV + ["--help"],
    "hfkv Llama-3.1-8B --format json": HFKV + [str(ROOT / "fixtures/meta-llama__Meta-Llama-3.1-8B"), "--format", "json"],
    "hfkv DeepSeek-V3.2 --format json": HFKV + [str(ROOT / "fixtures/deepseek-ai__DeepSeek-V3.2"), "--format", "json"],
    "hfkv DeepSeek-V3.2 (table)": HFKV + [str(ROOT / "fixtures/deepseek-ai__DeepSeek-V3.2")],
    "hfkv gemma-3-4b --format json (transformers defaults)": HFKV + [str(ROOT / "fixtures/google__gemma-3-4b-it"), "--format", "json"],
}


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def paired(cmd: list[str], runs: int) -> tuple[float, float, float]:
    """(median baseline s, median case s, median of the per-pair ratios)."""
    wall(BASELINE), wall(cmd)  # warm-up (page cache), discarded
    base, case = [], []
    for _ in range(runs):
        base.append(wall(BASELINE))
        case.append(wall(cmd))
    ratios = [c / b for b, c in zip(base, case)]
    return statistics.median(base), statistics.median(case), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--case", action="append", help="run only the cases whose name contains this text")
    args = parser.parse_args()
    print(f"{'case':55s} {'python -c pass':>14s} {'case':>8s} {'ratio':>6s}")
    for name, cmd in CASES.items():
        if args.case and not any(text in name for text in args.case):
            continue
        base, case, ratio = paired(cmd, args.runs)
        print(f"{name:55s} {base * 1000:11.0f} ms {case * 1000:5.0f} ms {ratio:5.2f}×", flush=True)


if __name__ == "__main__":
    main()
