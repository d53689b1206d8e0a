"""transformers defaults from a helper process: the same answers as in process, a fallback to this
process on any trouble, and a scan that reports on other models while the helper starts."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hfkv.model import defaults as tfdefaults
from hfkv.model.options import make_options
from hfkv.commands.scan import Job, Output, run

ROOT = Path(__file__).resolve().parents[1]
GEMMA3 = ROOT / "fixtures" / "google__gemma-3-4b-it" / "config.json"
QWEN3 = ROOT / "fixtures" / "Qwen__Qwen3-8B" / "config.json"
LLAMA2 = ROOT / "fixtures" / "meta-llama__Llama-2-7b-hf" / "config.json"
# Gemma 3 4B's sparse text_config is completed by transformers: 4 KV heads × 256 head_dim, 5 of 34
# layers full → α = 5 × 2 × 4 × 256 × 2 = 20480 (test_foundation_families derives the layout).
GEMMA3_ALPHA = 5 * 2 * 4 * 256 * 2


def gemma_request() -> tuple[list[tuple[str, bool]], dict]:
    root = json.loads(GEMMA3.read_text())
    return [("gemma3_text", False), ("gemma3", True)], root["text_config"]


def test_helper_answers_exactly_like_this_process():
    candidates, data = gemma_request()
    helper = tfdefaults.Helper()
    try:
        answer = helper.ask(candidates, data)
        assert helper.ready.is_set()
        assert answer == tfdefaults.compute(candidates, data)
        assert (answer["num_key_value_heads"], answer["head_dim"]) == (4, 256)
    finally:
        helper.close()
    assert helper._proc.returncode is not None  # ended on end of input


def test_a_dead_helper_sends_lookups_back_to_this_process(monkeypatch):
    candidates, data = gemma_request()
    helper = tfdefaults.Helper()
    helper._proc.kill()
    helper._proc.wait()
    monkeypatch.setattr(tfdefaults, "_active", helper)
    assert helper.ask(candidates, data) is tfdefaults._FAILED
    assert tfdefaults.lookup(candidates, data) == tfdefaults.compute(candidates, data)
    helper.close()


def test_helper_that_cannot_start_is_skipped(monkeypatch):
    monkeypatch.setattr(tfdefaults, "_worth_starting", lambda: True)
    monkeypatch.setattr(tfdefaults.sys, "executable", "/nonexistent/python")
    candidates, data = gemma_request()
    with tfdefaults.helper_running(), tfdefaults.deferring():
        assert tfdefaults.lookup(candidates, data)["head_dim"] == 256  # in process, no NotReady
        assert tfdefaults._active is None and tfdefaults.ready()


def test_the_first_deferring_lookup_starts_the_helper_and_the_end_kills_it(monkeypatch):
    monkeypatch.setattr(tfdefaults, "_worth_starting", lambda: True)
    candidates, data = gemma_request()
    with tfdefaults.helper_running():
        assert tfdefaults._active is None  # nothing started until a config needs defaults
        assert tfdefaults.lookup(candidates, data)["head_dim"] == 256  # not deferring: in process, no child
        assert tfdefaults._active is None
        with tfdefaults.deferring(), pytest.raises(tfdefaults.NotReady):
            tfdefaults.lookup(candidates, dict(data, vocab_size=1000))  # a config not answered yet
        helper = tfdefaults._active
        assert isinstance(helper, tfdefaults.Helper)
        started = time.monotonic()
    # the end does not wait for the child's import: it is killed
    assert time.monotonic() - started < 1.0
    assert tfdefaults._active is None and helper._proc.returncode is not None
    with tfdefaults.helper_running(enabled=False), tfdefaults.deferring():
        assert tfdefaults.lookup(candidates, data)["head_dim"] == 256 and tfdefaults._active is None


def test_a_list_with_no_sparse_config_starts_no_helper(monkeypatch):
    monkeypatch.setattr(tfdefaults, "_worth_starting", lambda: True)
    started = []
    monkeypatch.setattr(tfdefaults, "Helper", lambda: started.append(1))
    rows: list = []
    with tfdefaults.helper_running():
        run([str(QWEN3), str(LLAMA2)], Job(options=make_options()), Collect(rows), jobs=2)
    assert len(rows) == 2 and all(r.ok for r in rows) and started == []


class Collect(Output):
    """An output that keeps its rows (``run`` streams them and keeps none)."""

    def __init__(self, rows: list) -> None:
        super().__init__(writer=None, stream=None)
        self.kept = rows

    def add(self, row: Any) -> None:
        self.kept.append(row)


class SlowStart:
    """A helper still importing transformers until ``ready`` is set; then it answers in process."""

    def __init__(self) -> None:
        self.ready = threading.Event()

    def ask(self, candidates: Any, data: dict) -> Any:
        return tfdefaults.compute(candidates, data)


def scan_rows(monkeypatch, helper: SlowStart, paths: list[Path], on_row=None) -> list:
    monkeypatch.setattr(tfdefaults, "_active", helper)
    rows: list = []
    out = Collect(rows)
    if on_row is not None:
        add = out.add
        monkeypatch.setattr(out, "add", lambda row: (add(row), on_row(out)))
    run([str(p) for p in paths], Job(options=make_options()), out, jobs=1)
    return rows


def test_a_report_needing_defaults_waits_while_the_others_go_first(monkeypatch):
    rows = scan_rows(monkeypatch, SlowStart(), [GEMMA3, QWEN3, LLAMA2])
    assert [Path(r.model) for r in rows] == [QWEN3, LLAMA2, GEMMA3]  # waited for the helper, not failed
    assert all(r.ok for r in rows)
    assert rows[-1].report.alpha_bytes_per_token == GEMMA3_ALPHA == 20480
    assert "head_dim" in rows[-1].report.transformers_defaults


def test_a_waiting_report_goes_as_soon_as_the_helper_is_ready(monkeypatch):
    helper = SlowStart()
    rows = scan_rows(monkeypatch, helper, [GEMMA3, QWEN3, LLAMA2], on_row=lambda out: helper.ready.set())
    # Qwen3's row makes the helper ready; Gemma's waiting report is built before Llama's
    assert [Path(r.model) for r in rows] == [QWEN3, GEMMA3, LLAMA2]
    assert rows[1].report.alpha_bytes_per_token == GEMMA3_ALPHA


def test_deferring_is_per_thread_and_restored():
    helper = SlowStart()
    candidates, data = gemma_request()
    tfdefaults._active = helper
    try:
        with tfdefaults.deferring():
            with pytest.raises(tfdefaults.NotReady):
                tfdefaults.lookup(candidates, data)
            seen: list = []
            worker = threading.Thread(target=lambda: seen.append(tfdefaults.lookup(candidates, data)["head_dim"]))
            worker.start()
            worker.join()
            assert seen == [256]  # another thread does not defer
        assert tfdefaults.lookup(candidates, data)["head_dim"] == 256  # outside the block: waits and answers
    finally:
        tfdefaults._active = None


def test_answers_are_kept_on_disk_and_need_no_transformers_next_time(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    candidates, data = gemma_request()
    assert tfdefaults.lookup(candidates, data)["head_dim"] == 256  # computed (transformers imported)
    files = list((tmp_path / "home" / "hfkv").glob("tfdefaults-*.jsonl"))
    assert len(files) == 1 and len(files[0].read_text().splitlines()) == 1

    def no_transformers(*args):
        raise AssertionError("transformers asked again")

    monkeypatch.setattr(tfdefaults, "_ask", no_transformers)
    monkeypatch.setattr(tfdefaults, "_ANSWERS", tfdefaults.AnswerFile())  # a new process's view
    with tfdefaults.deferring():  # no NotReady, no helper: the answer is on disk
        assert tfdefaults.lookup(candidates, data)["head_dim"] == 256
    files[0].write_text("not json\n" + files[0].read_text())  # a damaged line is skipped
    monkeypatch.setattr(tfdefaults, "_ANSWERS", tfdefaults.AnswerFile())
    assert tfdefaults.lookup(candidates, data)["head_dim"] == 256


def test_the_answer_file_is_not_written_through_a_symlink(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    path = Path(tfdefaults._answers_path())
    path.parent.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    path.symlink_to(victim)
    candidates, data = gemma_request()
    monkeypatch.setattr(tfdefaults, "_ANSWERS", tfdefaults.AnswerFile())
    assert tfdefaults.lookup(candidates, data)["head_dim"] == 256  # still answered
    assert victim.read_text() == "precious\n"
