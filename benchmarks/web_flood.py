"""Issue 31's flood: ``--uploads`` uploads at once of a config of ~750 bytes with 100,000 layers (about 9 s
of work each), against ``hfkv serve`` and the fake Hub, while another visitor asks for an ordinary report.

Measured: the server's resident memory (and the PSS of its descendants: the workers and their parent)
before, at its peak and after; when each flood request answered and what it said; how long
the other visitor's report took; and the CPU time the server process still spent in the ``--after``
seconds after the last answer (the work that ran on past the deadline: it was all of it, in threads).

    python benchmarks/web_flood.py [--uploads 8] [--deadline 30] [--after 5]

The server serves ``--uploads`` + 1 requests at once, so that the other visitor's report is not queued
behind the flood (with the default 4, it waits for a slot: the deadline at most) and what it measures
is the flood's cost to everyone else.

Run from a checkout: the server is ``python -m hfkv serve`` started in the current folder, so another
checkout's ``hfkv`` (an older one, to compare) is measured by running this script from there.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LLAMA = "meta-llama/Meta-Llama-3.1-8B"
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "web"), str(ROOT / "benchmarks")]
import webkit  # noqa: E402 - the page's API as its buttons call it
from web_memory import helper_rss, rss  # noqa: E402 - the same /proc readings
from web_start import cpu_seconds  # noqa: E402

HUGE = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 2560,
        "num_hidden_layers": 100_000, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
        "sliding_window": 1024, "max_position_embeddings": 131072, "vocab_size": 262144, "torch_dtype": "bfloat16"}


def flood(server: str, count: int) -> list[tuple[float, str]]:
    """``count`` reports of the huge config at once: (seconds to the answer, its error line or "report")."""
    paths = [webkit.upload(server, "config.json", json.dumps(HUGE).encode())[1][0] for _ in range(count)]
    answers: list[tuple[float, str]] = []
    start = time.monotonic()

    def one(path: str) -> None:
        text = webkit.call_api(server, "report", [webkit.file_data(path), ""] + webkit.values(gpu="H200-141GB", tp=8))
        line = text.split("hfkv: error: ", 1)[1].split("<", 1)[0] if "hfkv: error: " in text else "report"
        answers.append((time.monotonic() - start, line))

    threads = [threading.Thread(target=one, args=(p,)) for p in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uploads", type=int, default=8)
    parser.add_argument("--deadline", type=float, default=30)
    parser.add_argument("--after", type=float, default=5)
    args = parser.parse_args()

    from fakehub import FakeHub

    hub = FakeHub().start()
    work = Path(tempfile.mkdtemp(prefix="hfkv-web-flood-"))
    port = webkit.free_port()
    env = webkit.server_env(hub.url, work / "hf", GRADIO_TEMP_DIR=str(work / "gradio"))
    command = [sys.executable, "-m", "hfkv", "serve", "--port", str(port), "--concurrency", str(args.uploads + 1),
               "--deadline", f"{args.deadline:g}"]
    try:
        with webkit.started(command, env, port, work / "serve.log", wait=120) as (server, proc):
            webkit.call_api(server, "report", [None, ""] + webkit.values(model=LLAMA, gpu="H200-141GB"))  # warm
            time.sleep(2)
            before = rss(proc.pid), helper_rss(proc.pid)
            peak = list(before)
            answers: list[tuple[float, str]] = []
            runner = threading.Thread(target=lambda: answers.extend(flood(server, args.uploads)))
            runner.start()
            time.sleep(1)
            start = time.monotonic()
            other = webkit.call_api(server, "report", [None, ""] + webkit.values(model=LLAMA, gpu="H200-141GB"))
            other_took = time.monotonic() - start
            while runner.is_alive():
                peak = [max(peak[0], rss(proc.pid)), max(peak[1], helper_rss(proc.pid))]
                time.sleep(0.2)
            cpu = cpu_seconds(proc.pid)
            time.sleep(args.after)
            ran_on = cpu_seconds(proc.pid) - cpu
            after = rss(proc.pid), helper_rss(proc.pid)
            mib = 2 ** 20
            print(f"{args.uploads} uploads of a {len(json.dumps(HUGE))}-byte config with 100,000 layers, deadline "
                  f"{args.deadline:g} s: answered after {min(a[0] for a in answers):.1f}-{max(a[0] for a in answers):.1f} s: "
                  f"{sorted({a[1] for a in answers})}")
            print(f"server RSS {before[0] / mib:.0f} MiB before, {peak[0] / mib:.0f} MiB at its peak, "
                  f"{after[0] / mib:.0f} MiB after; its descendants (the workers and their parent, PSS) "
                  f"{before[1] / mib:.0f} / {peak[1] / mib:.0f} / {after[1] / mib:.0f} MiB")
            print(f"another visitor's report during the flood: {other_took:.1f} s "
                  f"({'answered' if 'hfkv-verdict-vllm' in other else 'NOT answered'}); "
                  f"the server's CPU in the {args.after:g} s after the last answer: {ran_on:.1f} s")
    finally:
        hub.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
