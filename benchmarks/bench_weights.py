"""Cost of the weights estimate from a config (issue 30 item 4: under 0.3 ms for DeepSeek-R1 in process).

Times ``hfkv.model.weights.estimate_weights`` on the configs of ``../shared/weights-truth.tsv`` (DeepSeek-V3's
shapes are DeepSeek-R1's), in process, with the layer specs a report passes it (built once by the
mapper, not timed; imports and the config's parsing not counted either), best of ``--repeat`` rounds
of ``--number`` calls in this process's CPU time (other work on a shared machine does not count), and
prints the tensor records each estimate priced.

    python benchmarks/bench_weights.py [--number 200] [--repeat 5] [--only DeepSeek-V3]
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

from hfkv.errors import HfkvError
from hfkv.inspection import inspect_config
from hfkv.model.weights import Unknown, estimate_weights

SHARED = Path(__file__).resolve().parents[2] / "shared"
TARGET_MS = 0.3


def layer_specs(config: dict) -> list | None:
    """The mapper's layer specs, as a report passes them (None for a config the mappers refuse)."""
    try:
        return inspect_config(config).layer_specs
    except HfkvError:
        return None


def per_call_ms(config: dict, layers: list | None, number: int, repeat: int) -> float:
    """The best of ``repeat`` rounds, each ``number`` calls, in milliseconds per call."""
    rounds = []
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            estimate_weights(config, layers)
        rounds.append((time.process_time() - start) / number * 1e3)
    return min(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="", help="only configs whose file name contains this")
    args = parser.parse_args()
    with open(SHARED / "weights-truth.tsv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    for row in rows:
        if args.only not in row["config_file"]:
            continue
        config = json.loads((SHARED / row["folder"] / row["config_file"]).read_text(encoding="utf-8"))
        layers = layer_specs(config)
        got = estimate_weights(config, layers)
        if isinstance(got, Unknown):
            print(f"{row['hub_repo_id']:55} unknown: {got.reason}")
            continue
        ms = per_call_ms(config, layers, args.number, args.repeat)
        flag = "" if ms <= TARGET_MS else "  over target"
        print(f"{row['hub_repo_id']:55} {ms:7.3f} ms  {len(got.tensors):5} records{flag}")


if __name__ == "__main__":
    main()
