"""``hfkv watch`` hardening (issue 23, the watch items): each test failed before its fix.

A linear ``--html`` pass, a full disk or read-only folder as one line and exit 1, a damaged state entry
reported and dropped or repaired, an ``invalid-json`` config not retried for the same commit, report
file names distinct where the file system folds case, a repeating listing page reported, and no live
link or image in the Markdown a release thread gets.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import re
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from hfkv.commands import watch
from hfkv.commands.cli import main
from hfkv.model.options import Options
from hfkv.runtime import files
from hfkv.sources import LoadedConfig

from _helpers import LLAMA_DICT as LLAMA

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ORG = "hardenorg"
SINCE = "2026-01-01"


def run(fake_hub, out: Path, *extra: str):
    args = ["watch", "--author", ORG, "--out", str(out), "--since", SINCE, "--endpoint", fake_hub.url, "--once",
            "--gpu", "H100", *extra]
    return CliRunner().invoke(main, args, catch_exceptions=False)


class Listing:
    """A Hub client listing ``ids`` (newest last), every config Llama-3.1-8B's; counts the configs loaded."""

    def __init__(self, ids: list[str], config: dict | None = None) -> None:
        created = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
        self.infos = [SimpleNamespace(id=i, sha=None, created_at=created + dt.timedelta(minutes=n), safetensors=None)
                      for n, i in enumerate(ids)]
        self.config = config or LLAMA
        self.loaded: list[str] = []

    def list_models(self, author: str, *, limit: int, expand: list[str]) -> tuple[list, list[str]]:
        return list(self.infos), []

    def load_config(self, repo_id: str, revision: str | None = None) -> LoadedConfig:
        self.loaded.append(repo_id)
        return LoadedConfig(name=repo_id, data=self.config, source="hub", commit="c" * 40)


def config(out: Path, **kwargs) -> watch.WatchConfig:
    return watch.WatchConfig(authors=(ORG,), out_dir=out, state_path=out / watch.STATE_FILE, options=Options(),
                             since=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), gpus=("H100-SXM-80GB",), **kwargs)


# -- --html is linear: the site is written once per pass from the entries in memory ------------------------


def test_html_reads_no_report_back_and_writes_the_index_once_per_pass(tmp_path, monkeypatch):
    out = tmp_path / "out"
    reads: list[str] = []
    real_read = Path.read_text

    def counting_read(self, *args, **kwargs):
        if self.suffix == ".json" and self.parent == out and not self.name.startswith("."):
            reads.append(self.name)
        return real_read(self, *args, **kwargs)

    index_writes: list[str] = []
    real_write = files.write_atomic

    def counting_write(path, data, **kwargs):
        if Path(path).name == "index.html":
            index_writes.append(str(path))
        return real_write(path, data, **kwargs)

    monkeypatch.setattr(Path, "read_text", counting_read)
    monkeypatch.setattr("hfkv.render.site.write_atomic", counting_write)
    monkeypatch.setattr(watch, "COMMIT_SECONDS", 0.0)  # index.md and state saved after every model, as a slow poll
    n = 12
    summary = watch.poll(Listing([f"{ORG}/m{i}" for i in range(n)]), config(out, html=True))
    assert len(summary.written) == n
    # Before: every save re-read every report written so far (n(n+1)/2 = 78 reads) and rewrote index.html.
    assert reads == [] and len(index_writes) == 1
    index = (out / "index.html").read_text()
    assert all(f'href="{ORG}__m{i}.html"' in index for i in range(n))
    assert all((out / f"{ORG}__m{i}.html").is_file() for i in range(n))


def test_a_run_killed_before_its_index_html_rewrites_it_next_time(tmp_path):
    out = tmp_path / "out"
    client = Listing([f"{ORG}/a", f"{ORG}/b"])
    watch.poll(client, config(out, html=True))
    (out / "index.html").unlink()  # as if killed after the state was saved
    again = watch.poll(client, config(out, html=True))
    assert not again.written and f'href="{ORG}__b.html"' in (out / "index.html").read_text()


# -- a folder that cannot be written: one line, exit 1 ---------------------------------------------------


def test_a_full_disk_is_one_error_line_and_exit_1(fake_hub, tmp_path, monkeypatch):
    fake_hub.add_model(f"{ORG}/full", {"config.json": LLAMA}, created_at="2026-06-01T00:00:00.000Z")
    out = tmp_path / "out"

    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "fsync", no_space)  # every durable write: reports, index, state
    result = run(fake_hub, out)
    assert result.exit_code == 1, result.output
    assert result.stderr == f"hfkv: error: cannot write in {out}: No space left on device; the models not yet " \
                            "recorded are redone on the next run\n"
    assert not list(out.glob(f"*{files.TMP_SUFFIX}"))


@pytest.mark.parametrize("lock_writable", [False, True])
def test_a_read_only_folder_is_one_error_line_and_exit_1(fake_hub, tmp_path, monkeypatch, lock_writable):
    """Root ignores permission bits, so the read-only file system is played by ``os.open``: EROFS for
    every file created or written in the folder (the lock file too, unless ``lock_writable``)."""
    fake_hub.add_model(f"{ORG}/ro", {"config.json": LLAMA}, created_at="2026-06-01T00:00:00.000Z")
    out = tmp_path / "out"
    out.mkdir()
    real_open = os.open

    def read_only(path, flags, *args, **kwargs):
        writing = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        if writing and Path(os.fsdecode(path)).parent == out and not (lock_writable and str(path).endswith(".lock")):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    result = run(fake_hub, out)
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hfkv: error: cannot ") and "Read-only file system" in lines[0]
    assert "internal error" not in result.output and "Traceback" not in result.output


# -- a damaged entry of the state: reported, dropped or repaired -------------------------------------------


def test_damaged_state_entries_are_reported_and_dropped_or_repaired(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    models = {
        f"{ORG}/number": 5,
        f"{ORG}/nofile": {"status": "done"},
        f"{ORG}/escape": {"status": "done", "file": "../../etc/passwd"},
        f"{ORG}/unknown": {"status": "finished"},
        f"{ORG}/typed": {"status": "error", "error": "network: down", "created_at": 7, "gpus": {"H100": "x"}},
        f"{ORG}/fine": {"status": "done", "file": f"{ORG}__fine", "created_at": "2026-06-01T00:00:00+00:00"},
    }
    (out / watch.STATE_FILE).write_text(json.dumps({"version": 1, "since": "2026-01-01T00:00:00+00:00",
                                                    "models": models}))
    summary = watch.poll(Listing([]), config(out))
    dropped = [w for w in summary.warnings if "dropped" in w]
    assert len(dropped) == 4 and all("damaged" in w for w in dropped)
    assert any(f"{ORG}/typed: created_at, gpus.H100 of the wrong type, removed" in w for w in summary.warnings)
    state = json.loads((out / watch.STATE_FILE).read_text())  # saved repaired
    assert sorted(state["models"]) == [f"{ORG}/fine", f"{ORG}/typed"]
    assert state["models"][f"{ORG}/typed"] == {"status": "error", "error": "network: down", "gpus": {}}
    assert "| 2026-06-01 | hardenorg/fine |" in (out / "index.md").read_text()

    # A dropped model is reported again when listed.
    client = Listing([f"{ORG}/nofile"])
    assert watch.poll(client, config(out)).written == [f"{ORG}/nofile"] and client.loaded == [f"{ORG}/nofile"]


def test_a_damaged_entry_through_the_command_line_is_a_warning_not_an_internal_error(fake_hub, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / watch.STATE_FILE).write_text(json.dumps({"since": "2026-01-01", "models": {f"{ORG}/x": None}}))
    fake_hub.organizations.add(ORG)
    result = run(fake_hub, out)
    assert result.exit_code == 0, result.output
    assert f"hfkv: warning: watch state {out / watch.STATE_FILE}: entry {ORG}/x is damaged (a NoneType, not an " \
           "object): dropped" in result.stderr


def test_a_state_whose_cut_off_is_not_a_date_says_so(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / watch.STATE_FILE).write_text(json.dumps({"since": "yesterday", "models": {}}))
    result = CliRunner().invoke(main, ["watch", "--author", ORG, "--out", str(out), "--once"])
    assert result.exit_code == 2 and "its cut-off 'since' (yesterday) is not a date" in result.stderr


# -- invalid-json: permanent for that commit ---------------------------------------------------------------


def test_an_invalid_json_config_is_recorded_once_until_a_new_commit(fake_hub, tmp_path):
    repo = f"{ORG}/garbled"
    fake_hub.add_model(repo, {"config.json": b"{not json"}, created_at="2026-06-01T00:00:00.000Z")
    out = tmp_path / "out"
    first = run(fake_hub, out)
    assert first.exit_code == 0, first.output
    assert f"hfkv: warning: {repo}: invalid-json:" in first.stderr and "(recorded; not retried)" in first.stderr
    entry = json.loads((out / watch.STATE_FILE).read_text())["models"][repo]
    assert entry["status"] == "skipped" and entry["sha"] == fake_hub.commit(repo)

    for thread in threading.enumerate():  # the first run's parameter-count prefetch may still be on its way
        if thread.name == "hfkv-weights":
            thread.join(timeout=10)
    fake_hub.reset()
    second = run(fake_hub, out)
    assert second.exit_code == 0 and repo not in second.stderr and "nothing new" in second.stdout
    assert fake_hub.requests(repo) == []  # not fetched again for the same commit

    fake_hub.add_model(repo, {"config.json": LLAMA}, created_at="2026-06-01T00:00:00.000Z")  # a new commit
    third = run(fake_hub, out)
    assert third.exit_code == 0 and f"1 report(s) written ({repo})" in third.stdout


# -- file names distinct where the file system folds case ------------------------------------------------


def test_ids_that_differ_only_in_case_never_share_a_file(tmp_path):
    out = tmp_path / "out"
    ids = ["evil/Good", "evil/good", "evil/GOOD"]
    summary = watch.poll(Listing(ids), config(out, html=True))
    assert sorted(summary.written) == sorted(ids)
    names = [p.name for p in out.iterdir()]
    assert len({n.casefold() for n in names}) == len(names)  # macOS and Windows would keep every file
    state = json.loads((out / watch.STATE_FILE).read_text())
    stems = {repo: entry["file"] for repo, entry in state["models"].items()}
    assert stems["evil/Good"] == "evil__Good"  # the first keeps the plain name; the others get a hash
    assert all(re.fullmatch(r"evil__(good|GOOD)-[0-9a-f]{12}", stems[r]) for r in ("evil/good", "evil/GOOD"))
    for repo, stem in stems.items():
        assert (out / f"{stem}.md").read_text().startswith(f"# KV cache: {repo}\n")
        assert json.loads((out / f"{stem}.json").read_text())["model"] == repo

    # Next run: a fourth spelling gets its own name; the names already given stay.
    again = watch.poll(Listing([*ids, "evil/gOOd"]), config(out))
    assert again.written == ["evil/gOOd"]
    state = json.loads((out / watch.STATE_FILE).read_text())
    assert {r: e["file"] for r, e in state["models"].items() if r in stems} == stems
    assert len({e["file"].casefold() for e in state["models"].values()}) == 4


# -- a listing whose "next" page repeats one already read ------------------------------------------------


def test_a_repeating_next_page_is_a_listing_error(fake_hub, tmp_path):
    for n in range(3):
        fake_hub.add_model(f"{ORG}/r{n}", {"config.json": LLAMA}, created_at=f"2026-06-0{n + 1}T00:00:00.000Z")
    fake_hub.page_size = 1
    # Every page links to the first again: the Hub's first "cursor" value wins over the one appended.
    fake_hub.next_link_base = f"{fake_hub.url}/api/models?author={ORG}&cursor=0&x="
    out = tmp_path / "out"
    result = run(fake_hub, out, "--limit", "5")
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("hfkv: error:")]
    assert errors == [f"hfkv: error: {ORG}: the listing repeated 4 model(s) it had already listed (a 'next' page "
                      "served again): listing incomplete, only the models listed before it were reported"]
    assert "newer than the cut-off" not in result.stderr  # not mistaken for a full listing
    assert sorted(json.loads((out / watch.STATE_FILE).read_text())["models"]) == [f"{ORG}/r2"]


# -- Markdown a release thread gets: no live link, no image ----------------------------------------------


HOSTILE = dict(LLAMA, model_type="[click](http://attacker.example/a)",
               architectures=["![](http://attacker.example/pixel.png)"],
               **{"[x](http://attacker.example/key)": 1})


def test_markdown_reports_and_index_have_no_live_link_or_image(tmp_path):
    from markdown_it import MarkdownIt  # rich's Markdown parser: a CommonMark renderer

    out = tmp_path / "out"

    class Hostile(Listing):
        def load_config(self, repo_id, revision=None):
            if repo_id.endswith("broken"):
                from hfkv.errors import ConfigError

                raise ConfigError("num_hidden_layers", "[oops](http://attacker.example/err) ![](http://attacker.example/i)")
            return super().load_config(repo_id, revision)

    client = Hostile([f"{ORG}/evil", f"{ORG}/broken", "x/[a](http://attacker.example/id)"], HOSTILE)
    watch.poll(client, config(out))
    renderer = MarkdownIt("commonmark")
    pages = [p for p in out.glob("*.md")]
    assert len(pages) == 2  # the report and the index
    for page in pages:
        rendered = renderer.render(page.read_text())
        assert "attacker.example" in rendered  # the hostile text is shown ...
        assert "<img" not in rendered  # ... as text
        hrefs = re.findall(r'<a href="([^"]*)"', rendered)
        assert all(re.fullmatch(r"[A-Za-z0-9._-]+\.(md|json)", h) for h in hrefs), hrefs  # only our own files


# -- saves stay a bounded share of a pass however many reports the state holds ---------------------------


def test_a_slow_save_is_made_less_often(tmp_path, monkeypatch):
    """A save rewrites the whole index and state (O(reports): ~0.5 s at 6,000); saving every 2 s
    whatever it costs made a long pass quadratic. The next save waits 10 × what the last one took."""
    import time

    out = tmp_path / "out"
    saves: list[int] = []
    real = watch.save_state

    def slow_save(path, state):
        saves.append(len(state["models"]))
        time.sleep(0.2)  # as a state of thousands of reports
        real(path, state)

    monkeypatch.setattr(watch, "save_state", slow_save)
    monkeypatch.setattr(watch, "COMMIT_SECONDS", 0.0)
    summary = watch.poll(Listing([f"{ORG}/s{i}" for i in range(15)]), config(out))
    assert len(summary.written) == 15 and saves[-1] == 15
    assert len(saves) <= 4  # the first run's save, one after the first model, the end (was 16: one per model)
