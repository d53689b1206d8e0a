"""``hfkv watch`` against the fake Hub: reports, index, state, idempotence, hostile ids and crashes."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from fakehub import Fault

from hfkv.commands import watch
from hfkv.runtime import files
from hfkv.errors import SourceError
from hfkv.model.options import Options
from hfkv.sources import LoadedConfig
from hfkv.text import one_line

from _helpers import LLAMA_DICT as LLAMA

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ORG = "watchorg"  # an author no other test lists
SINCE = "2026-01-01"


def run(fake_hub, out: Path, *extra: str, authors: tuple[str, ...] = (ORG,)):
    args = [*(a for author in authors for a in ("--author", author)), "--out", str(out), "--since", SINCE, "--endpoint", fake_hub.url, "--once", *extra]
    return CliRunner().invoke(watch.watch_command, args, catch_exceptions=False)


def snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.iterdir() if p.is_file()}


def listing_calls(fake_hub) -> list[dict]:
    return [e for e in fake_hub.log if e["path"] == "/api/models"]


@pytest.fixture
def two_models(fake_hub):
    # A: 1,000 × 1,000 BF16 weights = 1,000,000 parameters, 2,000,000 bytes.
    fake_hub.add_model(f"{ORG}/new-a", {"config.json": LLAMA}, created_at="2026-06-01T08:00:00.000Z",
                       safetensors={"model.safetensors": {"w": ("BF16", [1000, 1000])}})
    fake_hub.add_model(f"{ORG}/new-b", {"config.json": LLAMA}, created_at="2026-06-02T08:00:00.000Z")
    fake_hub.add_model(f"{ORG}/old", {"config.json": LLAMA}, created_at="2025-12-01T08:00:00.000Z")
    return fake_hub


def test_first_run_writes_a_report_per_new_model_and_the_index(two_models, tmp_path):
    out = tmp_path / "out"
    result = run(two_models, out)
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([".hfkv-watch.json", ".hfkv-watch.json.lock", "index.md",
                            f"{ORG}__new-a.md", f"{ORG}__new-a.json", f"{ORG}__new-b.md", f"{ORG}__new-b.json"])
    assert len(listing_calls(two_models)) == 1  # one list_models call per author per poll

    report_a = json.loads((out / f"{ORG}__new-a.json").read_text())
    assert report_a["model"] == f"{ORG}/new-a" and report_a["alpha_bytes_per_token"] == 131072
    assert report_a["weights"]["total_parameters"] == 1_000_000
    assert report_a["weights_bytes"] == 2_000_000  # 1,000,000 × 2 B
    # H100 budget, vLLM 0.34's rule (Llama-3.1-8B's shapes: vocab 128,256, hidden 4,096, 32 layers):
    #   requested: the whole 85,029,158,912 B CUDA total (utilization 1.0)
    #   − weights 2,000,000 − sampler buffers 1,024 × 128,256 × 4 + 2 × 1,024 × ceil(128,256 / 32) × 4 = 558,170,112
    #   − peak activation 14 × 1,024 × 128,256 + 8,192 × 4,096 × 2 = 1,905,786,880 − non-torch 2^30 / 4 = 268,435,456
    #   − CUDA graphs int(0.30 GiB) + int(0.15 MiB) × 32 layers × (51 + 51) graphs = 835,504,051
    #   − allocator slack int(0.05 GiB) = 53,687,091 − the CUDA context int(0.38 GiB) = 408,021,893
    #   − the margin 0.75 × 1,905,786,880 = 1,429,340,160 → 79,568,213,269
    plans = report_a["watch"]["plans"]
    assert list(plans) == ["H100-SXM-80GB", "H200-141GB", "B200-180GB", "MI300X-192GB"]  # COMMON_GPUS, one each
    h100 = plans["H100-SXM-80GB"]
    assert h100["kv_budget_bytes"] == 79_568_213_269 and h100["gpu_count"] == 1
    assert h100["weights_bytes_per_gpu"] == 2_000_000 and h100["weights_source"] == "metadata"
    # 4K: 79,568,213,269 / (4096 × 131,072 = 536,870,912) = 148.2 → 148; 32K: 18.5 → 18; 128K: / 17,179,869,184
    # = 4.6 → 4.
    assert [c["max_concurrency_total"] for c in h100["contexts"]] == [148, 18, 4]
    assert h100["verdict"].startswith("fits on 1 × H100-SXM-80GB: 4 requests at 128K (vLLM 0.34.0, TP 1)")
    assert report_a["serving"] is None  # the report itself is not planned: one plan per GPU, in watch.plans
    md_a = (out / f"{ORG}__new-a.md").read_text()
    assert "parameters: 1,000,000" in md_a and "weights: 2,000,000 B" in md_a
    assert re.search(r"^\| 4K \| 512\.00 MiB \| 512\.00 MiB \| 148 \| \d[\d,]* \| \d[\d,]* \| \d[\d,]* \|$", md_a, re.M)
    assert f"- **✓ 1 × H100-SXM-80GB**: {h100['verdict']}" in md_a
    assert "  - weights per GPU 1.91 MiB (the Hub's safetensors metadata); KV budget per GPU 74.10 GiB" in md_a  # 79,568,213,269 B
    md_b = (out / f"{ORG}__new-b.md").read_text()
    assert "not listed by the Hub" in md_b and "weights per GPU 14.96 GiB (estimated from the config's shapes)" in md_b

    index = (out / "index.md").read_text()
    assert index.index(f"{ORG}/new-b") < index.index(f"{ORG}/new-a")  # newest first
    assert f"{ORG}/old" not in index  # created before --since
    assert "| H100-SXM-80GB | H200-141GB | B200-180GB | MI300X-192GB |" in index
    assert re.search(rf"\| {ORG}/new-a \| llama \| 131,072 \| 1,000,000 \| 1\.91 MiB \| ✓ 4 at 128K \| ", index)
    state = json.loads((out / ".hfkv-watch.json").read_text())
    assert {k: v["status"] for k, v in state["models"].items()} == {f"{ORG}/new-a": "done", f"{ORG}/new-b": "done"}
    assert state["models"][f"{ORG}/new-a"]["gpus"]["H100-SXM-80GB"] == {"status": "fits", "requests": 4, "tokens": 131072}
    assert state["since"].startswith(SINCE)


def test_second_run_with_nothing_new_writes_nothing(two_models, tmp_path):
    out = tmp_path / "out"
    assert run(two_models, out).exit_code == 0
    before = snapshot(out)
    two_models.reset()
    result = run(two_models, out)
    assert result.exit_code == 0 and "nothing new" in result.output
    assert snapshot(out) == before  # no file rewritten, none added (not even index or state)
    assert [e["path"] for e in two_models.log] == ["/api/models"]  # the listing only: no config fetched

    # A model published later is picked up alone; the state's cut-off still applies without --since.
    two_models.add_model(f"{ORG}/new-c", {"config.json": LLAMA}, created_at="2026-07-01T08:00:00.000Z")
    again = CliRunner().invoke(watch.watch_command, ["--author", ORG, "--out", str(out), "--endpoint", two_models.url])
    assert again.exit_code == 0, again.output
    assert (out / f"{ORG}__new-c.md").exists()
    index = (out / "index.md").read_text()
    assert index.index(f"{ORG}/new-c") < index.index(f"{ORG}/new-b") < index.index(f"{ORG}/new-a")


def test_failed_model_is_recorded_and_retried(fake_hub, tmp_path):
    out = tmp_path / "out"
    fake_hub.add_model(f"{ORG}/broken", {"config.json": {"model_type": "llama", "num_hidden_layers": "many"}},
                       created_at="2026-06-03T00:00:00.000Z")
    result = run(fake_hub, out)
    assert result.exit_code == 0
    assert "retried on the next run" in result.output
    state = json.loads((out / ".hfkv-watch.json").read_text())
    entry = state["models"][f"{ORG}/broken"]
    assert entry["status"] == "error" and "num_hidden_layers" in entry["error"]
    assert not list(out.glob(f"{ORG}__broken.*"))  # no report for a model that failed
    assert "Not reported yet" in (out / "index.md").read_text()

    # Same failure again: retried (read again from the cache at the listed commit, so no download), but
    # nothing changes, so nothing is written.
    before = snapshot(out)
    again = run(fake_hub, out)
    assert again.exit_code == 0 and f"{ORG}/broken: config:" in again.output
    assert snapshot(out) == before

    # Fixed upstream: the next run reports it.
    fake_hub.add_model(f"{ORG}/broken", {"config.json": LLAMA}, created_at="2026-06-03T00:00:00.000Z")
    assert run(fake_hub, out).exit_code == 0
    state = json.loads((out / ".hfkv-watch.json").read_text())
    assert state["models"][f"{ORG}/broken"]["status"] == "done"
    assert (out / f"{ORG}__broken.md").exists()
    assert "Not reported yet" not in (out / "index.md").read_text()


def test_listing_failure_exits_1(fake_hub, tmp_path, no_sleep):
    fake_hub.faults[f"{ORG}/*"] = Fault(status=500, where="api")
    result = run(fake_hub, tmp_path / "out")
    assert result.exit_code == 1
    assert f"{ORG}: listing failed" in result.output


def test_hostile_ids_from_the_hub_stay_inside_out(fake_hub, tmp_path):
    out = tmp_path / "deep" / "out"
    for name in ("../../escape", "..", "x" * 300, "模型", "a\x00b"):
        fake_hub.add_model(f"{ORG}/{name}", {"config.json": LLAMA}, created_at="2026-06-05T00:00:00.000Z")
    result = run(fake_hub, out)
    assert result.exit_code == 0
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and out not in p.parents]
    assert outside == []
    for path in out.iterdir():
        assert re.fullmatch(r"[A-Za-z0-9._-]+", path.name) and len(path.name) <= 255
    index = (out / "index.md").read_text()
    assert "\x00" not in index and "<" not in index.replace("<token>", "")


class StubClient:
    """A Hub client that lists ``ids`` and returns the Llama config for any of them (no HTTP)."""

    def __init__(self, ids: list[str]) -> None:
        created = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
        self.infos = [SimpleNamespace(id=i, sha=None, created_at=created + dt.timedelta(minutes=n), safetensors=None)
                      for n, i in enumerate(ids)]
        self.loaded: list[str] = []

    def list_models(self, author: str, *, limit: int, expand: list[str]) -> tuple[list, list[str]]:
        return list(self.infos), []

    def load_config(self, repo_id: str, revision: str | None = None) -> LoadedConfig:
        self.loaded.append(repo_id)
        return LoadedConfig(name=repo_id, data=LLAMA, source="hub", commit="c" * 40)


def _config(out: Path, **kwargs) -> watch.WatchConfig:
    return watch.WatchConfig(authors=(ORG,), out_dir=out, state_path=out / watch.STATE_FILE, options=Options(),
                             since=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), **kwargs)


HOSTILE = ["../../evil", "/etc/passwd", "org/..", "..", ".", "a\x00b/c", "x/" + "y" * 5000, "org/模型",
           "org/.hidden", "C:\\win\\evil", "org/a b|c", "org/index", "index", "org__a/b", "org/__a_b", "org/a..b",
           "org/\ud800x", "org/\u202egnp.exe"]


# The ids the Hub could serve: org/name of ASCII word characters, . and -, not starting or ending with
# . or -, no ".." or "--", at most 96 characters a part (huggingface_hub's validate_repo_id).
VALID = {"org/index", "org__a/b", "org/__a_b"}


def test_hostile_ids_make_distinct_plain_names_inside_out(tmp_path):
    out = tmp_path / "out"
    client = StubClient(HOSTILE)
    summary = watch.poll(client, _config(out))
    # Ids the Hub could serve are reported; the others are never fetched, only recorded once as
    # skipped under their escaped form.
    assert sorted(summary.written) == sorted(VALID) and not summary.failed
    assert sorted(client.loaded) == sorted(VALID)
    invalid = [i for i in HOSTILE if i not in VALID]
    assert sorted(k for k, _ in summary.skipped) == sorted(one_line(i) for i in invalid)
    assert one_line("a\x00b/c") == "a\\x00b/c" and one_line("org/\u202egnp.exe") == "org/\\u202egnp.exe"
    assert [p for p in tmp_path.rglob("*") if p.is_file() and p.parent != out] == []
    stems = {files.safe_name(i) for i in HOSTILE}
    assert len(stems) == len(HOSTILE)  # distinct ids never share a file
    for stem in stems:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", stem) and len(stem) <= 110
    for repo_id in VALID:
        stem = files.safe_name(repo_id)
        assert (out / f"{stem}.md").is_file() and (out / f"{stem}.json").is_file()
    for path in out.iterdir():
        text = path.read_text()
        assert "\x00" not in text and "\u202e" not in text
    assert files.safe_name("meta-llama/Llama-3.1-8B") == "meta-llama__Llama-3.1-8B"


class Crash(BaseException):
    """Stands in for the process being killed (not an Exception: nothing may swallow it)."""


def test_crash_between_report_and_state_redoes_the_model(tmp_path, monkeypatch):
    out = tmp_path / "out"
    client = StubClient([f"{ORG}/m1", f"{ORG}/m2"])
    real_save = watch.save_state

    def save_then_crash_on_m2(path, state):
        if state["models"].get(f"{ORG}/m2", {}).get("status") == "done":
            raise Crash  # report files (and index) of m2 are written; its state entry is not
        real_save(path, state)

    monkeypatch.setattr(watch, "save_state", save_then_crash_on_m2)
    monkeypatch.setattr(watch, "COMMIT_SECONDS", 0.0)  # save after every model, as a slow poll does
    with pytest.raises(Crash):
        watch.poll(client, _config(out))
    saved = json.loads((out / watch.STATE_FILE).read_text())  # valid JSON: the old state
    assert list(saved["models"]) == [f"{ORG}/m1"]
    assert (out / f"{ORG}__m2.md").is_file()
    assert not list(out.glob(f"*{files.TMP_SUFFIX}"))

    monkeypatch.setattr(watch, "save_state", real_save)
    client.loaded.clear()
    summary = watch.poll(client, _config(out))
    assert summary.written == [f"{ORG}/m2"] and client.loaded == [f"{ORG}/m2"]  # redone, m1 not
    saved = json.loads((out / watch.STATE_FILE).read_text())
    assert {k: v["status"] for k, v in saved["models"].items()} == {f"{ORG}/m1": "done", f"{ORG}/m2": "done"}


def test_crash_inside_a_write_leaves_no_half_file(tmp_path, monkeypatch):
    out = tmp_path / "out"
    client = StubClient([f"{ORG}/m1"])
    real_replace = watch.os.replace

    def crash_on_markdown(src, dst):
        if str(dst).endswith(".md") and "index" not in str(dst):
            raise Crash
        real_replace(src, dst)

    monkeypatch.setattr(watch.os, "replace", crash_on_markdown)
    with pytest.raises(Crash):
        watch.poll(client, _config(out))
    assert not (out / f"{ORG}__m1.md").exists()
    assert not list(out.glob(f"*{files.TMP_SUFFIX}"))
    assert f"{ORG}/m1" not in json.loads((out / watch.STATE_FILE).read_text())["models"]

    monkeypatch.setattr(watch.os, "replace", real_replace)
    assert watch.poll(client, _config(out)).written == [f"{ORG}/m1"]
    assert (out / f"{ORG}__m1.md").read_text().startswith(f"# KV cache: {ORG}/m1")


def test_leftover_temporary_files_are_removed(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / f".index.md.abc{files.TMP_SUFFIX}").write_text("half")
    (out / "notes.txt").write_text("mine")
    watch.poll(StubClient([]), _config(out))
    assert not list(out.glob(f"*{files.TMP_SUFFIX}")) and (out / "notes.txt").read_text() == "mine"


def test_damaged_state_is_an_error_and_left_alone(tmp_path, fake_hub):
    out = tmp_path / "out"
    out.mkdir()
    (out / watch.STATE_FILE).write_text("{not json")
    result = run(fake_hub, out)
    assert result.exit_code == 2
    assert "not an hfkv watch state" in result.output
    assert (out / watch.STATE_FILE).read_text() == "{not json"


@pytest.mark.parametrize("args, message", [
    (["--once", "--interval", "5"], "exclude each other"),
    (["--since", "yesterday"], "--since"),
    (["--gpu", "Z80"], "unknown GPU"),
])
def test_usage_errors(tmp_path, args, message):
    result = CliRunner().invoke(watch.watch_command, ["--author", ORG, "--out", str(tmp_path / "o"), *args])
    assert result.exit_code == 2 and message in result.output


def test_killed_process_leaves_complete_files_and_a_valid_state(fake_hub, tmp_path):
    """SIGKILL a real ``hfkv watch`` once its first report appears; the next run finishes the job."""
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    ids = [f"{ORG}/k{n}" for n in range(6)]
    for n, repo_id in enumerate(ids):
        fake_hub.add_model(repo_id, {"config.json": LLAMA}, created_at=f"2026-06-0{n + 1}T00:00:00.000Z")
    fake_hub.latency = 0.0
    fake_hub.faults.update({r: Fault(kind="slow", delay=0.3, where="resolve") for r in ids})
    cmd = [sys.executable, "-c", "from hfkv.commands.cli import entry; entry()", "watch", "--author", ORG, "--out", str(out),
           "--since", SINCE, "--endpoint", fake_hub.url, "--once"]
    proc = subprocess.Popen(cmd, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(out.glob(f"{ORG}__*.md")) and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)

    state = json.loads((out / watch.STATE_FILE).read_text())  # valid JSON whatever the kill point
    assert len(state["models"]) < len(ids)  # the kill did land mid-run
    for repo_id, entry in state["models"].items():
        assert entry["status"] == "done"
        stem = files.safe_name(repo_id)
        json.loads((out / f"{stem}.json").read_text())  # complete
        assert (out / f"{stem}.md").read_text().startswith(f"# KV cache: {repo_id}")
    for report in out.glob("*.json"):
        if not report.name.startswith("."):
            json.loads(report.read_text())  # no half-written report, recorded or not

    fake_hub.faults.clear()
    assert run(fake_hub, out).exit_code == 0
    state = json.loads((out / watch.STATE_FILE).read_text())
    assert sorted(state["models"]) == sorted(ids) and not list(out.glob(f"*{files.TMP_SUFFIX}"))


def test_an_id_with_a_newline_cannot_forge_a_line_and_is_recorded_once(fake_hub, tmp_path):
    evil = f"{ORG}/x\nInjected: 1"
    fake_hub.add_model(evil, {"config.json": LLAMA}, created_at="2026-06-05T00:00:00.000Z")
    fake_hub.add_model(f"{ORG}/fine", {"config.json": LLAMA}, created_at="2026-06-04T00:00:00.000Z")
    out = tmp_path / "out"
    result = run(fake_hub, out)
    assert result.exit_code == 0, result.output
    assert not [line for line in result.output.splitlines() if line.startswith("Injected")]
    escaped = f"{ORG}/x\\nInjected: 1"  # backslash and n: two characters
    assert f"hfkv: warning: {escaped}: not a valid Hub repo id (org/name) (recorded; not retried)" in result.output
    state = json.loads((out / watch.STATE_FILE).read_text())
    assert state["models"][escaped]["status"] == "skipped" and evil not in state["models"]
    assert state["models"][f"{ORG}/fine"]["status"] == "done"
    index = (out / "index.md").read_text()
    # In Markdown the backslash is itself escaped: the page shows the two characters \n.
    shown = escaped.replace("\\", "\\\\")
    assert "## Skipped (not retried)" in index and "\nInjected" not in index and shown in index
    assert not fake_hub.requests(evil)  # never fetched

    before = snapshot(out)
    fake_hub.reset()
    again = run(fake_hub, out)
    assert again.exit_code == 0 and "Injected" not in again.output  # recorded once: not reported again
    assert snapshot(out) == before and [e["path"] for e in fake_hub.log] == ["/api/models"]


class TooLargeClient(StubClient):
    """The first listed id's config is refused as too large; the others load."""

    def load_config(self, repo_id: str, revision: str | None = None) -> LoadedConfig:
        if repo_id == self.infos[0].id:
            self.loaded.append(repo_id)
            raise SourceError("too-large", "config.json is 40000000 bytes, over the 33554432-byte limit")
        return super().load_config(repo_id, revision)


def test_a_config_refused_as_too_large_is_recorded_and_not_retried(tmp_path):
    out = tmp_path / "out"
    huge, fine = f"{ORG}/huge", f"{ORG}/fine"
    client = TooLargeClient([huge, fine])
    summary = watch.poll(client, _config(out))
    assert summary.written == [fine] and not summary.failed
    assert summary.skipped == [(huge, "too-large: config.json is 40000000 bytes, over the 33554432-byte limit")]
    state = json.loads((out / watch.STATE_FILE).read_text())
    assert state["models"][huge]["status"] == "skipped"

    client.loaded.clear()
    before = snapshot(out)
    again = watch.poll(client, _config(out))
    assert client.loaded == [] and not again.skipped and not again.wrote_anything
    assert snapshot(out) == before

    client.infos[0].sha = "a" * 40  # a new commit: one more try
    third = watch.poll(client, _config(out))
    assert client.loaded == [huge] and third.skipped and third.skipped[0][0] == huge


def test_html_writes_a_static_site_beside_the_markdown(two_models, tmp_path):
    out = tmp_path / "out"
    result = run(two_models, out, "--html")
    assert result.exit_code == 0, result.output
    for name in ("index.html", f"{ORG}__new-a.html", f"{ORG}__new-b.html"):
        assert (out / name).is_file(), name
    index = (out / "index.html").read_text()
    assert index.index(f"{ORG}/new-b") < index.index(f"{ORG}/new-a")  # newest first, as index.md
    assert "131,072" in (out / f"{ORG}__new-a.html").read_text()  # Llama-3.1-8B: 32 × 8 × 128 × 2 × 2 B
    pages = snapshot(out)
    assert run(two_models, out, "--html").exit_code == 0
    assert snapshot(out) == pages  # nothing new: the site is left as it was


def test_without_html_no_page_is_written(two_models, tmp_path):
    out = tmp_path / "out"
    assert run(two_models, out).exit_code == 0
    assert not list(out.glob("*.html"))


# -- a listing that did not see everything it was asked to is not a clean run ---------------------------


MISSING = "nobody-watch-typo"  # no repo, user or organisation of this name on the fake Hub


def test_a_missing_author_is_a_failed_listing_and_the_other_authors_are_reported(two_models, tmp_path):
    out = tmp_path / "out"
    result = run(two_models, out, "--author", MISSING)
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if MISSING in line]
    assert lines == [f"hfkv: error: {MISSING}: no such user or organisation on the Hub"]
    assert "Traceback" not in result.output and result.output.endswith("; 0 failed; 1 listing error(s)\n")
    # The other author of the run is still reported: a batch never loses rows that succeeded.
    assert (out / f"{ORG}__new-a.md").is_file() and (out / f"{ORG}__new-b.md").is_file()
    state = json.loads((out / watch.STATE_FILE).read_text())
    assert sorted(state["models"]) == [f"{ORG}/new-a", f"{ORG}/new-b"]


def test_an_existing_author_with_nothing_listed_is_a_clean_run(fake_hub, tmp_path):
    for kind, name in (("organizations", "empty-watch-org"), ("users", "empty-watch-user")):
        getattr(fake_hub, kind).add(name)
        result = run(fake_hub, tmp_path / name, authors=(name,))
        assert result.exit_code == 0, result.output
        assert "error" not in result.stderr and "no such user" not in result.stderr
        assert "0 report(s) written (nothing new)" in result.output


class UnsureClient(StubClient):
    """Lists nothing; whether the author exists cannot be told (the overview requests failed)."""

    def author_exists(self, author: str) -> bool | None:
        return None


def test_an_empty_listing_whose_author_cannot_be_checked_says_so_and_is_not_a_failure(tmp_path):
    summary = watch.poll(UnsureClient([]), _config(tmp_path / "out"))
    assert summary.list_errors == []
    assert summary.warnings == [f"{ORG}: nothing listed, and the Hub could not say whether {ORG} exists"]


@pytest.mark.parametrize("cut", ["other-host", "page-limit"])
def test_a_truncated_listing_reports_what_was_listed_and_exits_1(fake_hub, tmp_path, monkeypatch, cut):
    for n in range(3):
        fake_hub.add_model(f"{ORG}/t{n}", {"config.json": LLAMA}, created_at=f"2026-06-0{n + 1}T00:00:00.000Z")
    fake_hub.page_size = 1  # one model per page, newest first: t2, then t1, then t0
    if cut == "other-host":
        fake_hub.next_link_base = fake_hub.cdn_url  # page 2 is on another origin: not followed
        seen, reason = [f"{ORG}/t2"], "listing page on another host"
    else:
        monkeypatch.setattr("hfkv.sources.hub.MAX_LISTING_PAGES", 2)  # pages 1 and 2 read, a 3rd one linked
        seen, reason = [f"{ORG}/t2", f"{ORG}/t1"], "listing stopped after 2 pages"
    out = tmp_path / "out"
    result = run(fake_hub, out)
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("hfkv: error:")]
    assert len(errors) == 1 and errors[0].startswith(f"hfkv: error: {ORG}: {reason}") and "incomplete" in errors[0]
    # What was listed is reported and recorded; the rest is listed again next run.
    state = json.loads((out / watch.STATE_FILE).read_text())
    assert sorted(state["models"]) == sorted(seen)
    assert all((out / f"{files.safe_name(r)}.md").is_file() for r in seen)


def test_the_interval_loop_reports_a_failed_listing_at_every_poll(two_models, tmp_path, monkeypatch):
    import time as real_time

    sleeps: list[float] = []

    def sleep(seconds: float) -> None:  # the third wait ends the loop (a scheduler stopping it)
        sleeps.append(seconds)
        if len(sleeps) == 3:
            raise SystemExit(0)

    monkeypatch.setattr(watch, "time", SimpleNamespace(sleep=sleep, monotonic=real_time.monotonic))
    out = tmp_path / "out"
    args = ["--author", MISSING, "--author", ORG, "--out", str(out), "--since", SINCE,
            "--endpoint", two_models.url, "--interval", "1"]
    result = CliRunner().invoke(watch.watch_command, args, catch_exceptions=False)
    assert sleeps == [60, 60, 60]  # three polls, the loop alive after each failed listing
    assert result.stderr.count(f"hfkv: error: {MISSING}: no such user or organisation on the Hub\n") == 3
    assert (out / f"{ORG}__new-a.md").is_file() and (out / f"{ORG}__new-b.md").is_file()
