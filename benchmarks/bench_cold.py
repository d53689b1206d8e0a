"""Cold start: wall time of `hfkv <local config> --format json` against `python -c pass`.

Each run is a fresh interpreter (what a user or a cron job pays). Prints the median of N runs per
case and the difference. Two configs: one that needs no transformers defaults (Llama-3.1-8B) and one
whose text_config omits keys, so transformers is imported to fill them (Gemma 3).

    python benchmarks/bench_cold.py [--runs 9]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "hfkv Llama-3.1-8B --format json": [sys.executable, "-m", "hfkv", str(ROOT / "fixtures/meta-llama__Meta-Llama-3.1-8B"), "--format", "json"],
    "hfkv DeepSeek-V3.2 --format json": [sys.executable, "-m", "hfkv", str(ROOT / "fixtures/deepseek-ai__DeepSeek-V3.2"), "--format", "json"],
    "hfkv gemma-3-4b (transformers defaults)": [sys.executable, "-m", "hfkv", str(ROOT / "fixtures/google__gemma-3-4b-it"), "--format", "json"],
}


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    baseline = None
    for name, cmd in CASES.items():
        wall(cmd)  # warm-up (page cache), discarded
        median = statistics.median(wall(cmd) for _ in range(args.runs))
        baseline = median if baseline is None else baseline
        extra = "" if median is baseline else f"  (+{(median - baseline) * 1000:.0f} ms over python)"
        print(f"{name:45s} median {median * 1000:7.0f} ms over {args.runs} runs{extra}")


if __name__ == "__main__":
    main()
