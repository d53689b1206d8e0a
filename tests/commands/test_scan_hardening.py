"""Scans that finish what they start (hfkv/commands/scan.py): one writer per output, no lock or rewrite
through a symlink, transient failures retried on --resume (permanent ones kept), no resume across
other report options, a row without figures never taken as done, a full disk or a busy file one line
with exit 1, bounded row errors, and memory that does not grow with the list."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

import hfkv
from hfkv.commands import scan as scan_module
from hfkv.commands.cli import main
from hfkv.commands.scan import claim_output, fingerprint, open_output
from hfkv.model.options import Options

from fakehub import Fault

from _helpers import one_error_line, write_config_in as write_config, write_list


# -- a full disk, a read-only folder, a busy file -------------------------------------------------------


QWEN3 = "Qwen/Qwen3-8B"

LLAMA2 = "meta-llama/Llama-2-7b-hf"


def scan(*args: str):
    return CliRunner().invoke(main, ["scan", *args], catch_exceptions=False)


def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_resume_on_a_full_disk_exits_1_and_leaves_the_file(fake_hub, tmp_path, monkeypatch):
    """--resume must rewrite a file ending in a cut row; on a full disk that is the system's refusal,
    exit 1 like a write that failed mid-scan (before: exit 2, as if the usage were bad)."""
    out = tmp_path / "rows.jsonl"
    assert scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out)).exit_code == 0
    out.write_text(out.read_text() + '{"model": "cut mid-wri')
    before = out.read_text()
    monkeypatch.setattr(scan_module, "write_atomic", full_disk)
    result = scan(write_list(tmp_path, QWEN3, LLAMA2), "--endpoint", fake_hub.url, "-o", str(out), "--resume")
    assert one_error_line(result, 1) == f"hfkv: error: cannot rewrite {out}: No space left on device"
    assert out.read_text() == before


def test_a_busy_file_on_resume_is_one_line_exit_1(fake_hub, tmp_path, monkeypatch):
    out = tmp_path / "rows.jsonl"
    assert scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out)).exit_code == 0
    out.write_text(out.read_text() + '{"model": "cut')

    def busy(src, dst):
        raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(dst))

    monkeypatch.setattr(os, "replace", busy)
    result = scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out), "--resume")
    assert one_error_line(result, 1) == f"hfkv: error: cannot rewrite {out}: {os.strerror(errno.EBUSY)}"


def test_a_full_disk_before_the_first_row_is_one_line_exit_1(fake_hub, tmp_path, monkeypatch):
    """The side file that records a scan's options is written first; on a full disk that write failed
    with "internal error (OSError ...); please report it"."""
    monkeypatch.setattr(os, "pwrite", full_disk)
    out = tmp_path / "rows.jsonl"
    result = scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out))
    line = one_error_line(result, 1)
    assert line == f"hfkv: error: cannot write {out.parent / '.rows.jsonl.hfkv-scan'}: No space left on device"
    assert fake_hub.log == []


# -- --resume takes only finished rows as done ------------------------------------------------------------


@pytest.mark.parametrize("fmt, row", [
    ("jsonl", '{"model": "Qwen/Qwen3-8B"}'),
    ("jsonl", '{"model": "Qwen/Qwen3-8B", "alpha_bytes_per_token": "many"}'),
    ("csv", None),  # the model's name and nothing else, no error
    ("markdown", None),
])
def test_resume_refuses_a_row_without_figures(fake_hub, tmp_path, fmt, row):
    """A row naming a model with neither figures nor an error is not one a scan wrote; --resume took it
    as done and never fetched the model. Now the file is refused (exit 2) and left as it was."""
    suffix = {"jsonl": "jsonl", "csv": "csv", "markdown": "md"}[fmt]
    out = tmp_path / f"rows.{suffix}"
    assert scan(write_list(tmp_path, LLAMA2), "--endpoint", fake_hub.url, "-o", str(out)).exit_code == 0
    written = out.read_text()
    if row is None:
        width = len(scan_module.Columns.for_options(hfkv.Options()).names())
        row = (QWEN3 + "," * (width - 1)) if fmt == "csv" else "| " + " | ".join([QWEN3] + [""] * (width - 1)) + " |"
    out.write_text(written + row + "\n")
    fake_hub.reset()
    result = scan(write_list(tmp_path, LLAMA2, QWEN3), "--endpoint", fake_hub.url, "-o", str(out), "--resume")
    assert "is not a scan row of this format" in one_error_line(result, 2)
    assert out.read_text() == written + row + "\n" and fake_hub.log == []


def test_resume_still_takes_finished_rows_and_error_rows(fake_hub, tmp_path):
    out = tmp_path / "rows.jsonl"
    first = scan(write_list(tmp_path, QWEN3, "nobody/not-here"), "--endpoint", fake_hub.url, "-o", str(out))
    assert first.exit_code == 1
    fake_hub.reset()
    again = scan(write_list(tmp_path, QWEN3, "nobody/not-here"), "--endpoint", fake_hub.url, "-o", str(out),
                 "--resume")
    assert again.exit_code == 1 and fake_hub.log == []  # nothing fetched again


# -- every error line is bounded ------------------------------------------------------------------------


ROOT = Path(__file__).resolve().parents[2]


LLAMA_FIXTURE = ROOT / "fixtures" / "meta-llama__Meta-Llama-3.1-8B" / "config.json"


def llama() -> dict:
    return json.loads(LLAMA_FIXTURE.read_text())


def test_a_scan_row_error_is_bounded_too(tmp_path):
    config = write_config(tmp_path / "m", {**llama(), "layer_types": ["y" * 50_000] * 32})
    result = scan(write_list(tmp_path, config), "--format", "jsonl")
    assert result.exit_code == 1
    row = json.loads(result.stdout)
    assert row["error"].startswith("config: key 'layer_types': unknown layer type 'yyy")
    assert row["error"].endswith("' (50,000 characters)") and len(row["error"]) < 300


def test_a_second_writer_of_the_same_output_is_refused(fake_hub, tmp_path):
    out = tmp_path / "rows.jsonl"
    held = claim_output(out, fingerprint(Options(), False), resume=False)  # another scan, still running
    try:
        for extra in ([], ["--resume"]):
            result = scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out), *extra)
            assert result.exit_code == 2 and "another hfkv scan is writing" in result.stderr
        assert fake_hub.log == [] and not out.exists()
    finally:
        os.close(held)
    assert scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out)).exit_code == 0


def test_another_name_for_the_same_output_is_refused_too(fake_hub, tmp_path):
    out = tmp_path / "rows.jsonl"
    held = claim_output(out, fingerprint(Options(), False), resume=False)  # another scan, writing its rows
    stream = open_output(str(out), append=False)
    stream.write('{"model": "theirs"}\n')
    stream.flush()
    try:
        os.symlink(out, tmp_path / "alias.jsonl")
        os.link(out, tmp_path / "hard.jsonl")
        for name in ("alias.jsonl", "hard.jsonl"):
            result = scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(tmp_path / name))
            assert result.exit_code == 2 and "another hfkv scan is writing" in result.stderr, name
        assert out.read_text() == '{"model": "theirs"}\n'  # not emptied, not mixed
    finally:
        stream.close()
        os.close(held)


def test_the_lock_file_is_never_followed_through_a_symlink(fake_hub, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "rows.jsonl"
    os.symlink(victim, tmp_path / ".rows.jsonl.hfkv-scan")
    result = scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out))
    assert result.exit_code == 2 and victim.read_text() == "precious\n"


# Qwen3-8B: 36 layers × 2 (K, V) × 8 kv heads × 128 head_dim × 2 bytes = 147456 per token.
QWEN3_ALPHA = 36 * 2 * 8 * 128 * 2
assert QWEN3_ALPHA == 147456


def rows(path: Path) -> dict[str, dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len({r["model"] for r in lines}) == len(lines), "a model twice"
    return {r["model"]: r for r in lines}


def test_resume_retries_transient_failures_and_keeps_permanent_ones(fake_hub, tmp_path):
    out = tmp_path / "rows.jsonl"
    listing = write_list(tmp_path, QWEN3, LLAMA2, "nobody/not-here")
    fake_hub.faults[QWEN3] = Fault(status=503, message="Service Unavailable")
    first = scan(listing, "--endpoint", fake_hub.url, "-o", str(out), "--retries", "0")
    assert first.exit_code == 1
    assert rows(out)[QWEN3]["error"].startswith("hub-error:") and rows(out)["nobody/not-here"]["error"].startswith("not-found:")

    fake_hub.reset()  # the Hub is back
    again = scan(listing, "--endpoint", fake_hub.url, "-o", str(out), "--resume")
    assert again.exit_code == 1  # the not-found row still counts
    final = rows(out)
    assert final[QWEN3]["alpha_bytes_per_token"] == QWEN3_ALPHA and "error" not in final[QWEN3]
    assert final["nobody/not-here"]["error"].startswith("not-found:")
    assert fake_hub.calls("nobody/not-here") == [] and fake_hub.calls(LLAMA2) == []  # kept, not refetched
    assert len(fake_hub.calls(QWEN3)) == 1


def test_resume_with_other_report_options_is_refused(fake_hub, tmp_path):
    out = tmp_path / "rows.jsonl"
    listing = write_list(tmp_path, QWEN3)
    assert scan(listing, "--endpoint", fake_hub.url, "-o", str(out)).exit_code == 0
    before = out.read_text()
    for args in (["--tp", "2"], ["--kv-cache-dtype", "fp8"], ["--weights"], ["--revision", "v1"]):
        result = scan(write_list(tmp_path, QWEN3, LLAMA2), "--endpoint", fake_hub.url, "-o", str(out), "--resume", *args)
        assert result.exit_code == 2 and "other report options" in result.stderr, (args, result.stderr)
        assert out.read_text() == before
    same = scan(write_list(tmp_path, QWEN3, LLAMA2), "--endpoint", fake_hub.url, "-o", str(out), "--resume")
    assert same.exit_code == 0 and set(rows(out)) == {QWEN3, LLAMA2}


def test_a_scan_keeps_no_report_once_its_row_is_written(tmp_path, monkeypatch):
    """Memory flat in the list: each report is dropped once its row is written (a pool's futures,
    or a list of rows, kept every report until the scan ended: 0.1-0.35 MiB a repo)."""
    import gc
    import io
    import weakref

    from hfkv.commands import scan as scan_module

    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "Qwen__Qwen3-8B"
    entries = []
    for n in range(20):
        folder = tmp_path / f"m{n}"
        folder.mkdir()
        (folder / "config.json").write_bytes((fixture / "config.json").read_bytes())
        entries.append(str(folder))
    refs: list = []
    real_finish = scan_module.Job.finish

    def finish(self, fetched, *, defer=False):
        row = real_finish(self, fetched, defer=defer)
        if row is not None and row.report is not None:
            refs.append(weakref.ref(row.report))
        return row

    monkeypatch.setattr(scan_module.Job, "finish", finish)
    columns = scan_module.Columns.for_options(Options())
    out = scan_module.Output(writer=scan_module.JsonlWriter(columns), stream=io.StringIO(), columns=columns)
    scan_module.run(entries, scan_module.Job(options=Options()), out, jobs=4)
    gc.collect()
    assert len(refs) == 20 and out.written == 20
    assert [r for r in refs if r() is not None] == []


def test_a_resume_rewrite_never_writes_through_a_planted_symlink(fake_hub, tmp_path):
    import threading

    out = tmp_path / "rows.jsonl"
    assert scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out)).exit_code == 0
    out.write_text(out.read_text() + '{"model": "cut mid-wri')  # a truncated row: --resume rewrites the file
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink(victim, f"{out}.{os.getpid()}-{threading.get_ident()}.hfkv-tmp")  # the rewrite's temporary name
    result = scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out), "--resume")
    assert result.exit_code == 0 and victim.read_text() == "precious\n"
    assert list(rows(out)) == [QWEN3]


# -- issue 31: a reader that leaves (`hfkv scan list | head -1`) --------------------------------------------


def test_a_reader_that_leaves_after_one_row_ends_the_scan_quietly(tmp_path):
    # Before: "hfkv: error: cannot write <stdout>: Broken pipe (N of M rows not written: lost)", as if
    # the rows the reader did not want were lost
    import subprocess
    import sys

    fixtures = sorted(p for p in (Path(__file__).resolve().parents[2] / "fixtures").iterdir() if p.is_dir())
    entries = [str(p) for p in fixtures] + [str(p / "config.json") for p in fixtures]  # ~250 rows: past 64 KiB
    listing = write_list(tmp_path, *entries)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    scan = subprocess.Popen([sys.executable, "-m", "hfkv", "scan", listing, "--format", "jsonl"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    first = scan.stdout.readline()
    scan.stdout.close()  # what `head -1` does
    _, stderr = scan.communicate(timeout=300)
    assert json.loads(first)["model"] in entries  # rows come in completion order
    assert stderr == b"" and scan.returncode == 1  # exit 1 as the command line does for a closed pipe
