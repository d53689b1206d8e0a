"""Cold start: wall time of a fresh ``hfkv`` process against ``python -c pass``, in paired runs.

Each run is a fresh interpreter (what a user or a cron job pays). Runs are paired: every case is run
right after its own ``python -c pass``, so a change in the machine's load hits both; the figure is
the median over the pairs of case / baseline, in wall time and in CPU time (user + system: less
sensitive to other load on the machine). The first case is the floor: a process that only imports click
and pydantic's ``BaseModel``, which every report needs; hfkv's own share is a case less the floor. The targets of the project are a local report within
6 × ``python -c pass`` and ``hfkv --help`` within 3 ×, in wall time.

    python benchmarks/bench_cold.py [--runs 15] [--case NAME ...] [--imports] [--install]

``--imports`` times single imports the same way (what pydantic, click, the specs cost at start).
``--install`` installs this checkout as the README says (``pip install .``, here into a fresh venv that
sees this environment's packages, ``--no-deps``: bytecode compiled by pip) and times its ``hfkv``
console script against that venv's ``python -c pass``: the figure the 4 × target is about.
``--hfkv PATH`` times an hfkv installed elsewhere the same way (a before/after against an earlier
version installed in its own venv).

Bytecode matters: with ``PYTHONDONTWRITEBYTECODE=1`` an editable checkout recompiles hfkv at every
start; run ``python -m compileall -q hfkv mappings`` first (``pip install`` does the same).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = [sys.executable, "-c", "pass"]
HFKV = [sys.executable, "-m", "hfkv"]


# What any report must import and build whatever hfkv does (the spec classes are pydantic models, validated;
# the command line is click), in a process of its own: the floor a local report's ratio cannot go below.
# Building a first validator is part of it: pydantic imports its plugin loader then (importlib.metadata),
# plugins disabled or not.
FLOOR = ("import os; os.environ['PYDANTIC_DISABLE_PLUGINS'] = '__all__'\n"
         "import click\nfrom pydantic import BaseModel, Field, ValidationError\n"
         "class Part(BaseModel):\n    heads: int = Field(gt=0)\nPart(heads=8)")


def cases(hfkv: list[str], python: str = sys.executable) -> dict[str, list[str]]:
    return {
        "floor: click + pydantic's BaseModel, no hfkv": [python, "-c", FLOOR],
        "hfkv --help": hfkv + ["--help"],
        "hfkv Llama-3.1-8B --format json": hfkv + [str(ROOT / "fixtures/meta-llama__Meta-Llama-3.1-8B"), "--format", "json"],
        "hfkv DeepSeek-V3.2 --format json": hfkv + [str(ROOT / "fixtures/deepseek-ai__DeepSeek-V3.2"), "--format", "json"],
        "hfkv DeepSeek-V3.2 (table)": hfkv + [str(ROOT / "fixtures/deepseek-ai__DeepSeek-V3.2")],
        "hfkv gemma-3-4b --format json (transformers defaults)": hfkv + [str(ROOT / "fixtures/google__gemma-3-4b-it"), "--format", "json"],
    }


CASES = cases(HFKV)
# ``--imports``: what single imports cost, measured the same way (``python -c "import ..."``), with
# pydantic's plugin discovery off as in the CLI; each line is a part of a local report's start.
IMPORTS = {
    "import click": "import click",
    "import pydantic (BaseModel, Field, ValidationError)": "from pydantic import BaseModel, Field, ValidationError",
    "import hfkv.model.specs (19 model classes, none built)": "import hfkv.model.specs",
    "hfkv.model.specs + first validators (a part, LayerSpec, Layout)": (
        "from hfkv.model.specs import FullAttention, LayerSpec, Layout\n"
        "Layout(layers=[LayerSpec(index=0, kind='full', parts=(FullAttention(kv_heads=8, head_dim=128),))])"),
    "import importlib.metadata (pydantic's plugin loader imports it; hfkv defers it)": "import importlib.metadata",
    "import hfkv.model.report": "import hfkv.model.report",
    "import hfkv.model.config (and hfkv.model.defaults)": "import hfkv.model.config",
    "import rich (table output only)": "import rich.console, rich.table, rich.text",
}


def run(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds user + system) of one fresh process (run from a temporary folder,
    so that an installed hfkv is not shadowed by the checkout)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited with {proc.returncode}")
    return elapsed, usage.ru_utime + usage.ru_stime


def paired(cmd: list[str], runs: int, baseline: list[str] = BASELINE) -> dict[str, float]:
    """Medians over the pairs: baseline and case wall time, and the wall and CPU ratios."""
    run(baseline), run(cmd)  # warm-up (page cache), discarded
    base, case = [], []
    for _ in range(runs):
        base.append(run(baseline))
        case.append(run(cmd))
    return {
        "base": statistics.median(b[0] for b in base), "case": statistics.median(c[0] for c in case),
        "wall": statistics.median(c[0] / b[0] for b, c in zip(base, case)),
        "cpu": statistics.median(c[1] / b[1] for b, c in zip(base, case) if b[1] > 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--case", action="append", help="run only the cases whose name contains this text")
    parser.add_argument("--imports", action="store_true", help="time single imports instead of hfkv commands")
    parser.add_argument("--install", action="store_true", help="time this checkout installed with pip into a venv")
    parser.add_argument("--hfkv", help="time this installed hfkv console script (and the python beside it)")
    args = parser.parse_args()
    todo, baseline = CASES, BASELINE
    if args.imports:
        os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"  # as ``hfkv``'s own process sets it
        todo = {name: [sys.executable, "-c", code] for name, code in IMPORTS.items()}
    venv = None
    if args.install:
        venv = Path(tempfile.mkdtemp(prefix="hfkv-bench-venv-"))
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(ROOT)], check=True,
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})
        python = str(venv / "bin" / "python")
        todo, baseline = cases([str(venv / "bin" / "hfkv")], python), [python, "-c", "pass"]
    elif args.hfkv:  # another install, e.g. an earlier version in its own venv, for a before/after
        python = str(Path(args.hfkv).parent / "python")
        todo, baseline = cases([args.hfkv], python), [python, "-c", "pass"]
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'case':55s} {'python -c pass':>14s} {'case':>8s} {'wall':>6s} {'CPU':>6s}")
    for name, cmd in todo.items():
        if args.case and not any(text in name for text in args.case):
            continue
        m = paired(cmd, args.runs, baseline)
        print(f"{name[:55]:55s} {m['base'] * 1000:11.0f} ms {m['case'] * 1000:5.0f} ms {m['wall']:5.2f}× {m['cpu']:5.2f}×",
              flush=True)
    if venv is not None:
        import shutil

        shutil.rmtree(venv, ignore_errors=True)


if __name__ == "__main__":
    main()
