"""Accounting cost against the number of context points, on every fixture.

For each bundled fixture that reports, builds the report (mapper, accounting, JSON dict) with one
context and with N contexts (default 10⁴, spread over 1 … 2^20 tokens) and prints the extra time N
points cost over one point (best of ``--repeat`` runs, in-process, so imports and process start are
not counted). The project's target: at most 50 ms extra for 10⁴ points on every fixture.

    python benchmarks/bench_accounting.py [--points 10000] [--repeat 3] [--json] [--top 10]

``--json`` also times ``json.dumps`` of the report (the CLI's ``--format json``); it is listed apart.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import hfkv
from hfkv.errors import HfkvError

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 50.0


def contexts(points: int) -> tuple[int, ...]:
    """``points`` distinct context lengths from 1 to about 2^20 tokens (windows and ratios crossed)."""
    step = max(1, (1 << 20) // points)
    return tuple(1 + i * step for i in range(points))


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(config: dict, name: str, points: int, repeat: int, with_json: bool) -> tuple[float, float]:
    """(extra seconds of ``points`` contexts over one, extra seconds of their JSON text)."""
    many = contexts(points)

    def build(ctx):
        return hfkv.inspect_config(config, model=name, contexts=ctx).to_dict()

    one = best(lambda: build((4096,)), repeat)
    full = best(lambda: build(many), repeat)
    dumped = 0.0
    if with_json:
        small, large = build((4096,)), build(many)
        dumped = best(lambda: json.dumps(large, indent=2), repeat) - best(lambda: json.dumps(small, indent=2), repeat)
    return full - one, dumped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="also time json.dumps of the report")
    parser.add_argument("--top", type=int, default=10, help="print the N slowest fixtures")
    args = parser.parse_args()
    rows = []
    for path in sorted((ROOT / "fixtures").glob("*/config.json")):
        config = json.loads(path.read_text())
        try:
            hfkv.inspect_config(config, model=path.parent.name)
        except HfkvError:
            continue  # refused models (encoder-only, encoder-decoder) have no figures to sweep
        extra, dumped = measure(config, path.parent.name, args.points, args.repeat, args.json)
        rows.append((extra, dumped, path.parent.name))
    rows.sort(reverse=True)
    print(f"{len(rows)} fixtures, {args.points:,} context points vs one (best of {args.repeat})")
    for extra, dumped, name in rows[: args.top]:
        print(f"  {extra * 1000:7.1f} ms" + (f"   json.dumps +{dumped * 1000:6.1f} ms" if args.json else "") + f"  {name}")
    worst = rows[0][0] * 1000 if rows else 0.0
    print(f"worst {worst:.1f} ms (target ≤ {TARGET_MS:.0f} ms): {'met' if worst <= TARGET_MS else 'NOT met'}")


if __name__ == "__main__":
    main()
