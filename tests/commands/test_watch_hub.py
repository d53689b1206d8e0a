"""``hfkv watch`` against the Hub (hfkv/commands/watch.py): the token only to the endpoint, a symlink at
the lock refused, index and state saved in batches, bad --since and unknown authors said once, ids
the Hub rejects recorded once as skipped."""

from __future__ import annotations

import datetime as dt
import json
import os

import pytest
from click.testing import CliRunner

from hfkv.commands import watch
from hfkv.commands.cli import main
from hfkv.model.options import Options


# -- item 5: the token goes to the endpoint only -------------------------------------------------------


ORG = "acme"

CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_attention_heads": 8,
          "num_key_value_heads": 4, "num_hidden_layers": 2, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}


def test_watch_listing_sends_the_token_only_to_the_endpoint(fake_hub, tmp_path):
    for n in range(2):
        fake_hub.add_model(f"{ORG}/m{n}", {"config.json": CONFIG}, created_at=f"2026-06-0{n + 1}T00:00:00.000Z")
    fake_hub.page_size = 1
    fake_hub.next_link_base = fake_hub.cdn_url
    result = CliRunner().invoke(main, ["watch", "--author", ORG, "--out", str(tmp_path / "out"), "--once",
                                       "--since", "2026-01-01", "--endpoint", fake_hub.url, "--token", fake_hub.token])
    assert "another host" in result.stderr
    assert {e["host"] for e in fake_hub.log} == {fake_hub.url[7:]}


@pytest.mark.parametrize("how", ["--offline", "HF_HUB_OFFLINE"])
def test_watch_offline_asks_nothing_and_says_so_at_once(fake_hub, tmp_path, monkeypatch, how):
    # Before: --offline listed anyway (25 s of retries, then a DNS error); HF_HUB_OFFLINE=1 failed the listing
    fake_hub.add_model(f"{ORG}/m0", {"config.json": CONFIG}, created_at="2026-06-01T00:00:00.000Z")
    args = ["watch", "--author", ORG, "--out", str(tmp_path / "out"), "--once", "--endpoint", fake_hub.url]
    if how == "HF_HUB_OFFLINE":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = CliRunner().invoke(main, args + (["--offline"] if how == "--offline" else []))
    assert result.exit_code == 2, result.output
    cause = "--offline" if how == "--offline" else "HF_HUB_OFFLINE=1"
    assert result.stderr == (f"hfkv: error: watch needs the Hub (each poll lists the organisations' new models) and "
                             f"{cause} forbids asking it: nothing to watch offline (hfkv MODEL --offline reports on "
                             "a cached config)\n")
    assert fake_hub.log == [] and not (tmp_path / "out").exists()


# -- items 6 and 9: no code from the working directory, no remote code flag, no symlinked lock ---------


def test_a_symlink_at_the_watch_lock_path_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink(victim, out / f"{watch.STATE_FILE}.lock")
    with pytest.raises(Exception) as caught:
        with watch.state_lock(out / watch.STATE_FILE):
            pass
    assert "lock" in str(caught.value) and victim.read_text() == "precious\n"


# -- item 11: batched watch writes ---------------------------------------------------------------------


class ManyModels:
    """A Hub client listing ``n`` models with one small config (no HTTP)."""

    def __init__(self, n: int) -> None:
        created = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
        from types import SimpleNamespace

        self.infos = [SimpleNamespace(id=f"{ORG}/m{i}", sha=None, created_at=created, safetensors=None) for i in range(n)]

    def list_models(self, author, *, limit, expand):
        return list(self.infos), []

    def load_config(self, repo_id, revision=None):
        from hfkv.sources import LoadedConfig

        return LoadedConfig(name=repo_id, data=CONFIG, source="hub", commit="c" * 40)


def test_watch_saves_its_index_and_state_in_batches(tmp_path, monkeypatch):
    out = tmp_path / "out"
    saves: list[int] = []
    real = watch.save_state
    monkeypatch.setattr(watch, "save_state", lambda path, state: (saves.append(len(state["models"])), real(path, state)))
    cfg = watch.WatchConfig(authors=(ORG,), out_dir=out, state_path=out / watch.STATE_FILE, options=Options(),
                            since=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), gpus=("H100",))
    summary = watch.poll(ManyModels(40), cfg)
    assert len(summary.written) == 40
    assert saves[-1] == 40 and len(saves) <= 4  # the first-run save, then a few batches, not 40 saves
    state = json.loads((out / watch.STATE_FILE).read_text())
    assert all(v["status"] == "done" and (out / f"{v['file']}.md").is_file() for v in state["models"].values())


# -- item 15: messages ---------------------------------------------------------------------------------


def test_since_with_a_bad_date_has_no_doubled_prefix(tmp_path):
    result = CliRunner().invoke(main, ["watch", "--author", ORG, "--out", str(tmp_path), "--since", "60d"])
    assert result.exit_code == 2 and result.stderr.count("--since") == 1 and "60d" in result.stderr


def test_a_watch_author_that_does_not_exist_says_so(fake_hub, tmp_path):
    result = CliRunner().invoke(main, ["watch", "--author", "nobody-at-all", "--out", str(tmp_path / "o"), "--once",
                                       "--endpoint", fake_hub.url])
    # Not a clean run: the author a scheduler watches does not exist (one line, exit 1).
    assert result.exit_code == 1 and "hfkv: error: nobody-at-all: no such user or organisation" in result.stderr
    fake_hub.reset()
    fake_hub.add_model(f"{ORG}/old", {"config.json": CONFIG}, created_at="2020-01-01T00:00:00.000Z")
    quiet = CliRunner().invoke(main, ["watch", "--author", ORG, "--out", str(tmp_path / "p"), "--once",
                                      "--endpoint", fake_hub.url])
    assert "no such user" not in quiet.stderr  # an organisation with nothing new is not "missing"


def test_ids_the_hub_rejects_are_recorded_once_as_skipped(fake_hub, tmp_path):
    fake_hub.add_model(f"{ORG}/a..b", {"config.json": CONFIG}, created_at="2026-06-01T00:00:00.000Z")
    args = ["watch", "--author", ORG, "--out", str(tmp_path / "o"), "--once", "--since", "2026-01-01",
            "--endpoint", fake_hub.url]
    first = CliRunner().invoke(main, args)
    assert "not a valid Hub repo id" in first.stderr and "not retried" in first.stderr
    second = CliRunner().invoke(main, args)
    assert "a..b" not in second.stderr and fake_hub.requests(f"{ORG}/a..b") == []
