"""How ``hfkv watch`` scales with the number of new models, with and without ``--html``.

The fake Hub (tests/fakehub.py, 127.0.0.1 only) runs in its own process with no added latency and
serves N new models of one author (``bench/model-00000`` ..., created one minute apart, configs
copied from the fixtures whose reports need no transformers defaults). One ``hfkv watch --once``
process (start-up, listing, N config fetches, N reports planned on the four default GPUs, the
files) runs against an empty output folder and an empty Hub cache, once without ``--html`` and once
with it. Its wall time and CPU (user + system, ``wait4``) are printed per N, with the time per
model: a watch that is linear in N keeps the time per model flat as N grows.

``--pythonpath DIR`` runs the watch of another checkout (e.g. an older version, for the figures
before a change): its ``hfkv`` is imported from DIR, with DIR/mappings linked as DIR/hfkv/mappings
when missing (an editable install of this checkout would otherwise provide ``hfkv.mappings``).

Run: ``python benchmarks/watch_scale.py [--models 1000,3000,6000] [--modes plain,html]
[--pythonpath DIR]``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scan import usable_configs  # noqa: E402  (the same fixtures the scan benchmark serves)

AUTHOR = "bench"


def repo_id(i: int) -> str:
    return f"{AUTHOR}/model-{i:05d}"


def serve(conn, configs: list[bytes], models: int) -> None:
    """The server process: ``models`` repos of one author, then wait for 'stop'."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fakehub import FakeHub

    hub = FakeHub(latency=0.0, fixtures_dir=None)
    for i in range(models):
        created = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(1_780_000_000 + 60 * i))  # June 2026
        hub.add_model(repo_id(i), {"config.json": configs[i % len(configs)]}, created_at=created)
    with hub.running():
        conn.send(hub.url)
        conn.recv()


def run_watch(url: str, models: int, html: bool, pythonpath: str | None) -> tuple[float, float, int]:
    """(wall s, CPU s, reports written) of one ``hfkv watch --once`` on a fresh folder and cache."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        env = dict(os.environ, HF_HOME=str(Path(tmp) / "hf"), HF_HUB_DISABLE_IMPLICIT_TOKEN="1",
                   HF_HUB_OFFLINE="0")
        env.pop("HF_HUB_CACHE", None)
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        command = [sys.executable, "-m", "hfkv", "watch", "--author", AUTHOR, "--out", str(out), "--once",
                   "--since", "2026-01-01", "--limit", str(models), "--endpoint", url] + (["--html"] if html else [])
        start = time.perf_counter()
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(command, env=env, stdout=err, stderr=err, cwd=tmp)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
            err.seek(0)
            text = err.read().decode(errors="replace")
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise SystemExit(f"watch failed ({code}): {text[-600:]}")
        written = len([p for p in out.glob(f"{AUTHOR}__*.md")])
        if written != models:
            print(text[-1500:], file=sys.stderr)
        if html and written and not (out / "index.html").is_file():
            raise SystemExit("--html wrote no index.html")
        return wall, usage.ru_utime + usage.ru_stime, written


def link_mappings(pythonpath: str) -> None:
    """DIR/hfkv/mappings -> DIR/mappings, so that the checkout's own mappers are imported."""
    target = Path(pythonpath) / "hfkv" / "mappings"
    if not target.exists() and (Path(pythonpath) / "mappings").is_dir():
        target.symlink_to(Path(pythonpath) / "mappings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="1000,3000,6000", help="comma-separated N (default 1000,3000,6000)")
    parser.add_argument("--modes", default="plain,html", help="plain, html or both (default both)")
    parser.add_argument("--pythonpath", help="run the hfkv of this checkout instead")
    args = parser.parse_args()
    sizes = [int(n) for n in args.models.split(",")]
    modes = [m.strip() for m in args.modes.split(",")]
    if args.pythonpath:
        link_mappings(args.pythonpath)
    configs = usable_configs(dense_only=True)
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    print(f"{len(configs)} fixture configs; {os.cpu_count()} CPUs; load average {load:.1f} at start")
    print(f"{'models':>7} {'mode':>6} {'wall s':>8} {'CPU s':>8} {'ms/model':>9} {'reports':>8}")
    for n in sizes:
        parent, child = mp.Pipe()
        server = mp.Process(target=serve, args=(child, configs, n), daemon=True)
        server.start()
        url = parent.recv()
        try:
            for mode in modes:
                wall, cpu, written = run_watch(url, n, mode == "html", args.pythonpath)
                print(f"{n:>7,} {mode:>6} {wall:>8.1f} {cpu:>8.1f} {1000 * wall / n:>9.1f} {written:>8,}", flush=True)
        finally:
            parent.send("stop")
            server.join(timeout=30)


if __name__ == "__main__":
    main()
