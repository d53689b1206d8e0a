"""transformers defaults from a helper process: the same answers as in process, a fallback to this
process on any trouble, and a scan that reports on other models while the helper starts."""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hfkv.commands.scan import Job, Output, run
from hfkv.model import defaults as tfdefaults
from hfkv.model.options import make_options

ROOT = Path(__file__).resolve().parents[2]
GEMMA3 = ROOT / "fixtures" / "google__gemma-3-4b-it" / "config.json"


def saved_copy(name: str) -> Path:
    """fixtures/<name>/config.json with the ``transformers_version`` the real config carries (the fixtures
    leave it out): a config save_pretrained wrote, whose top level holds every key of its class, so that
    no transformers default is asked for it (``ConfigView.may_omit_class_keys``)."""
    folder = Path(tempfile.mkdtemp(prefix="hfkv-saved-")) / name
    folder.mkdir()
    data = json.loads((ROOT / "fixtures" / name / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**data, "transformers_version": "4.51.0"}))
    return folder / "config.json"


QWEN3 = saved_copy("Qwen__Qwen3-8B")
LLAMA2 = saved_copy("meta-llama__Llama-2-7b-hf")
# Gemma 3 4B's sparse text_config is completed by transformers: 4 KV heads × 256 head_dim, 5 of 34
# layers full → α = 5 × 2 × 4 × 256 × 2 = 20480 (tests/families/test_sliding.py derives the layout).
GEMMA3_ALPHA = 5 * 2 * 4 * 256 * 2


def gemma_request() -> tuple[list[tuple[str, bool]], dict]:
    root = json.loads(GEMMA3.read_text())
    return [("gemma3_text", False), ("gemma3", True)], root["text_config"]


def test_helper_answers_exactly_like_this_process():
    candidates, data = gemma_request()
    helper = tfdefaults.Helper()
    try:
        answer, status = helper.ask(candidates, data)
        assert helper.ready.is_set()
        assert (answer, status) == tfdefaults.compute_status(candidates, data) and status == tfdefaults.ANSWERED
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
        return tfdefaults.compute_status(candidates, data)


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


def fresh_store(monkeypatch) -> None:
    """What a new process sees: nothing of the store read yet."""
    monkeypatch.setattr(tfdefaults, "_STORE", tfdefaults.Store())


def store_root(tmp_path: Path) -> Path:
    return Path(tfdefaults._store_path())


def no_transformers(*args):
    raise AssertionError("transformers asked again")


def test_answers_are_kept_on_disk_and_need_no_transformers_next_time(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    candidates, data = gemma_request()
    assert tfdefaults.lookup(candidates, data)["head_dim"] == 256  # computed (transformers imported)
    answers = list((store_root(tmp_path) / "answers").glob("*/*.json"))
    assert len(answers) == 1
    monkeypatch.setattr(tfdefaults, "_ask", no_transformers)
    fresh_store(monkeypatch)
    with tfdefaults.deferring():  # no NotReady, no helper: the answer is on disk
        assert tfdefaults.lookup(candidates, data) == tfdefaults.compute(candidates, data)
    answers[0].write_text("not json")  # a damaged answer is no answer: computed again
    fresh_store(monkeypatch)
    with pytest.raises(AssertionError, match="asked again"):
        tfdefaults.lookup(candidates, data)


def test_a_planted_link_is_neither_read_nor_written_through(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    candidates, data = gemma_request()
    tfdefaults.lookup(candidates, data)
    [answer] = list((store_root(tmp_path) / "answers").glob("*/*.json"))
    victim = tmp_path / "victim"
    victim.write_text(answer.read_text())
    answer.unlink()
    answer.symlink_to(victim)
    fresh_store(monkeypatch)
    assert tfdefaults.lookup(candidates, data)["head_dim"] == 256  # the link is not read: computed, kept anew
    assert not answer.is_symlink() and victim.read_text() == json.dumps(json.loads(victim.read_text()))


def test_a_store_whose_folder_is_a_planted_link_is_no_store(monkeypatch, tmp_path):
    # O_NOFOLLOW covers the last part of a path only: a linked folder above the file was followed. A
    # planted store folder saying transformers knows no model type made every lookup answer None.
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    candidates, data = gemma_request()
    root = store_root(tmp_path)
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "types.json").write_text(json.dumps({"model_types": []}))
    root.parent.mkdir(parents=True)
    root.symlink_to(planted, target_is_directory=True)
    fresh_store(monkeypatch)
    assert tfdefaults.lookup(candidates, data)["head_dim"] == 256  # the planted "no type known" is not read
    assert sorted(p.name for p in planted.iterdir()) == ["types.json"]  # and nothing is written through it
    assert root.is_symlink()


@pytest.mark.parametrize("linked", ["hfkv", "answers", "shard"])
def test_a_linked_folder_inside_the_store_is_neither_read_nor_written_through(monkeypatch, tmp_path, linked):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    candidates, data = gemma_request()
    tfdefaults.lookup(candidates, data)
    [answer] = list((store_root(tmp_path) / "answers").glob("*/*.json"))
    folder = {"hfkv": store_root(tmp_path).parent, "answers": answer.parent.parent, "shard": answer.parent}[linked]
    victim = tmp_path / "victim"
    folder.rename(victim)
    folder.symlink_to(victim, target_is_directory=True)
    before = sorted(str(p.relative_to(victim)) for p in victim.rglob("*"))
    fresh_store(monkeypatch)
    asked = []
    compute = tfdefaults._ask
    monkeypatch.setattr(tfdefaults, "_ask", lambda *a: (asked.append(1), compute(*a))[1])
    assert tfdefaults.lookup(candidates, data)["head_dim"] == 256
    assert asked  # the answer behind the link was not read: computed
    assert sorted(str(p.relative_to(victim)) for p in victim.rglob("*")) == before  # nothing written there
    assert folder.is_symlink()


# -- a store that stays small and is read in constant time (issue 23) ---------------------------------


def test_a_lookup_reads_a_few_small_files_whatever_the_store_holds(monkeypatch, tmp_path):
    """Before: one JSONL file, appended without bound (9.5 MB after a day) and parsed whole at every
    start. Now a lookup opens types.json, its types' key lists and one answer, however many are kept."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    candidates, data = gemma_request()
    for size in range(300):  # 300 distinct configs answered and kept
        tfdefaults.lookup(candidates, dict(data, vocab_size=1000 + size))
    assert len(list((store_root(tmp_path) / "answers").glob("*/*.json"))) == 300
    fresh_store(monkeypatch)
    monkeypatch.setattr(tfdefaults, "_ask", no_transformers)
    opened: list[str] = []
    read = tfdefaults._read_json
    monkeypatch.setattr(tfdefaults, "_read_json", lambda path: (opened.append(path), read(path))[1])
    assert tfdefaults.lookup(candidates, dict(data, vocab_size=1042))["vocab_size"] == 1042
    names = sorted(Path(p).relative_to(store_root(tmp_path)).parts[0] for p in opened)
    assert names == ["answers", "keys", "keys", "keys", "types.json"]  # _shared, gemma3_text, gemma3


def test_the_store_is_bounded(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(tfdefaults, "SHARD_LIMIT", 2)
    candidates, data = gemma_request()
    for size in range(600):
        tfdefaults.lookup(candidates, dict(data, vocab_size=2000 + size))
    shards = [shard for shard in (store_root(tmp_path) / "answers").iterdir()]
    assert all(len(list(shard.iterdir())) <= 2 for shard in shards)  # 256 shards × 2 at most
    assert len(list((store_root(tmp_path) / "answers").glob("*/*.json"))) <= 2 * 256


def test_an_answer_is_kept_as_what_differs_from_its_config(monkeypatch, tmp_path):
    """A legal 100,000-layer config: its layer_types are the config's own, not copied into the store."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    config = json.loads(LLAMA2.read_text()) | {"num_hidden_layers": 100_000,
                                                  "layer_types": ["full_attention"] * 100_000}
    answer = tfdefaults.lookup([("llama", False)], config)
    assert answer["layer_types"] == config["layer_types"] and answer["rope_parameters"]["rope_theta"] == 10000.0
    [kept] = list((store_root(tmp_path) / "answers").glob("*/*.json"))
    assert kept.stat().st_size < 4096
    fresh_store(monkeypatch)
    monkeypatch.setattr(tfdefaults, "_ask", no_transformers)
    assert tfdefaults.lookup([("llama", False)], config) == answer


def test_the_previous_unbounded_file_is_removed(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    old = Path(tfdefaults._store_path()).parent / f"tfdefaults-{tfdefaults.transformers_version()}-1.jsonl"
    old.parent.mkdir(parents=True)
    old.write_text('{"key": "x", "defaults": {}}\n' * 1000)
    tfdefaults.lookup(*gemma_request())
    assert not old.exists()


# -- negative answers, junk keys ----------------------------------------------------------------------


def test_a_model_type_transformers_does_not_know_is_answered_without_importing_it(monkeypatch, tmp_path):
    """Before: looked up again on every run (--engine vllm: +1.5 s each, transformers imported to say no)."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    config = json.loads(LLAMA2.read_text()) | {"model_type": "not_in_transformers"}
    assert tfdefaults.lookup([("not_in_transformers", False)], config) is None  # imports transformers once
    fresh_store(monkeypatch)
    monkeypatch.setattr(tfdefaults, "_ask", no_transformers)
    assert tfdefaults.lookup([("not_in_transformers", False)], config) is None
    assert tfdefaults.lookup([("another_unknown", False), ("", True)], {"x": 1}) is None


def test_a_config_no_class_accepts_is_kept_as_such(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(tfdefaults, "compute_status", lambda c, d: (None, tfdefaults.REJECTED))
    candidates, data = gemma_request()
    tfdefaults._STORE.note(["gemma3", "gemma3_text"], {"gemma3": frozenset({"a"}), "gemma3_text": frozenset({"b"})})
    assert tfdefaults.lookup(candidates, data) is None
    fresh_store(monkeypatch)
    monkeypatch.setattr(tfdefaults, "_ask", no_transformers)
    assert tfdefaults.lookup(candidates, data) is None  # kept: not asked again


def test_junk_keys_never_reach_a_config_class(monkeypatch):
    seen: list[dict] = []

    class Recorder:
        hidden_size: int = 0  # a name this class's code spells

        def __init__(self, **kwargs):
            seen.append(kwargs)

        def to_dict(self):
            return {"ok": True}

    monkeypatch.setattr(tfdefaults, "_config_mapping", lambda: {"x": Recorder})
    monkeypatch.setattr(tfdefaults, "_STORE", tfdefaults.Store())
    junk = {f"junk_{i}": i for i in range(100_000)}
    tfdefaults.compute([("x", False)], {"hidden_size": 8, "num_hidden_layers": 2, **junk})
    assert seen == [{"hidden_size": 8, "num_hidden_layers": 2}]  # words of this file; no junk_*


def test_junk_keys_cost_no_time(monkeypatch, tmp_path):
    """100,000 junk keys: the class was built with all of them (~40 µs each: 4-12 s here); now with its own."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    config = json.loads(LLAMA2.read_text())
    tfdefaults.compute([("llama", False)], config)  # transformers imported, not timed
    junk = {f"junk_{i}": i for i in range(100_000)}
    started = time.process_time()
    answer = tfdefaults.lookup([("llama", False)], {**config, **junk})
    assert time.process_time() - started < 1.0
    assert answer == tfdefaults.compute([("llama", False)], config)  # the same answer as without the junk


def test_dropping_keys_outside_the_vocabulary_changes_no_answer_on_the_bundled_configs():
    """Every fixture whose mapper asks transformers: the defaults for the keys its config lacks are
    the same whether the class got every key or only its vocabulary's."""
    from transformers import CONFIG_MAPPING

    checked = 0
    for path in sorted(ROOT.glob("fixtures/*/config.json")):
        config = json.loads(path.read_text())
        text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
        model_type = text.get("model_type") or config.get("model_type")
        if model_type not in CONFIG_MAPPING:
            continue
        filtered = tfdefaults.compute([(model_type, False)], text)
        vocabulary = tfdefaults.vocabulary_of
        try:
            tfdefaults.vocabulary_of = lambda cls, mapping=None: None  # every key, as before
            whole = tfdefaults.compute([(model_type, False)], text)
        finally:
            tfdefaults.vocabulary_of = vocabulary
        assert (filtered is None) == (whole is None), path
        if whole is not None:
            missing = {k for k in whole if text.get(k) is None}
            assert {k: filtered.get(k) for k in missing} == {k: whole[k] for k in missing}, path
            checked += 1
    assert checked > 80


def test_the_transformers_version_is_read_without_importing_anything():
    from importlib.metadata import version

    assert tfdefaults._find_version() == version("transformers")


# -- items 6 and 9: no code from the working directory, no remote code flag, no symlinked lock ---------


def test_the_helper_imports_nothing_from_the_working_directory(tmp_path, monkeypatch):
    planted = tmp_path / "hfkv"
    planted.mkdir()
    marker = tmp_path / "planted-ran"
    (planted / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    (planted / "tfdefaults.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.chdir(tmp_path)
    helper = tfdefaults.Helper()
    try:
        assert helper.ready.wait(120)  # the real helper started and imported transformers
        answer, _ = helper.ask([("gemma3_text", False)], {"model_type": "gemma3_text"})
        assert isinstance(answer, dict) and answer.get("head_dim") == 256  # transformers' own Gemma 3 default
    finally:
        helper.close()
    assert not marker.exists()


def test_the_helpers_import_path_is_ours_without_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = str(Path(tfdefaults.__file__).resolve().parents[1])
    monkeypatch.setattr(sys, "path", ["", str(tmp_path), "/opt/lib", root, "/opt/lib"])
    assert tfdefaults.child_path() == [root, "/opt/lib"]  # the cwd's entries become hfkv's own folder


def test_trust_remote_code_in_a_config_is_never_passed_to_a_config_class(monkeypatch):
    seen: list[dict] = []

    class Recorder:
        def __init__(self, **kwargs):
            seen.append(kwargs)

        def to_dict(self):
            return {"ok": True}

    monkeypatch.setattr(tfdefaults, "_config_mapping", lambda: {"x": Recorder})
    tfdefaults.compute([("x", False)], {"model_type": "x", "trust_remote_code": True, "auto_map": {"a": "b"}, "k": 1})
    assert seen == [{"k": 1}]


def test_asking_the_config_class_leaves_the_config_as_written():
    # transformers' LlamaConfig standardises rope_scaling in place (adds rope_theta and
    # original_max_position_embeddings); SGLang's get_context_length then reads a factor of 1. The config
    # hfkv was given must come back as written, whether the answer was cached or computed.
    rope = {"rope_type": "yarn", "factor": 4.0}
    data = {"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 2,
            "max_position_embeddings": 32768, "rope_scaling": rope}
    tfdefaults.compute([("llama", False)], data)
    assert rope == {"rope_type": "yarn", "factor": 4.0} and data["rope_scaling"] is rope
