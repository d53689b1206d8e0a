"""Hardening round 2, the Hub side: the token goes to the configured endpoint only, every request has
a deadline, waits are capped (and said), listings are bounded, secrets of any shape are scrubbed,
the transformers helper imports nothing from the working directory, and ``watch`` keeps its files
safe and its writes batched."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from fakehub import Fault
from hfkv.model import defaults as tfdefaults
from hfkv.commands import watch
from hfkv.commands.cli import main
from hfkv.errors import SourceError
from hfkv.sources.hub import MAX_LISTING_PAGES, HubClient
from hfkv.model.options import Options

ROOT = Path(__file__).resolve().parents[1]
ORG = "acme"
CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_attention_heads": 8,
          "num_key_value_heads": 4, "num_hidden_layers": 2, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}


def client(hub, cache: str, **kwargs) -> HubClient:
    return HubClient(endpoint=hub.url, cache_dir=cache, **kwargs)


# -- item 10: deadlines, capped waits, bounded listings ----------------------------------------------


@pytest.mark.parametrize("kind", ["drip", "drip-headers"])
def test_timeout_bounds_a_server_that_drips_one_byte_at_a_time(fake_hub, hub_cache, kind):
    # ~600 bytes at 0.05 s a byte would take 30 s; --timeout 0.5 must end the request at about 0.5 s.
    fake_hub.add_model("org/drip", {"config.json": dict(CONFIG, padding="x" * 400)})
    fake_hub.faults["org/drip"] = Fault(kind=kind, delay=0.05, methods=("GET",))
    started = time.monotonic()
    with pytest.raises(SourceError) as caught:
        client(fake_hub, hub_cache, timeout=0.5, retries=0).load_config("org/drip")
    assert time.monotonic() - started < 4
    assert caught.value.kind == "network" and "timed out" in caught.value.message


def test_an_hour_long_retry_after_is_not_waited_and_says_so(fake_hub, hub_cache, no_sleep):
    fake_hub.add_model("org/limited", {"config.json": CONFIG})
    fake_hub.faults["org/limited"] = Fault(status=429, headers={"Retry-After": "3600"})
    with pytest.raises(SourceError) as caught:
        client(fake_hub, hub_cache).load_config("org/limited")
    assert caught.value.kind == "rate-limited" and "3600 s" in caught.value.message
    assert "more than hfkv waits (60 s)" in caught.value.message
    assert no_sleep == [] and len(fake_hub.requests("org/limited")) == 1


def test_the_weights_lookup_honours_the_timeout(fake_hub, hub_cache):
    fake_hub.add_model("org/slow-api", {"config.json": CONFIG}, safetensors={"model.safetensors": {"w": ("BF16", [4, 4])}})
    fake_hub.faults["org/slow-api"] = Fault(kind="slow", delay=3, where="api")
    started = time.monotonic()
    assert client(fake_hub, hub_cache, timeout=0.3).weights("org/slow-api") is None
    assert time.monotonic() - started < 2.5  # two tries of 0.3 s, not 2 × 3 s


def test_weights_are_prefetched_with_the_config(fake_hub, hub_cache):
    fake_hub.add_model("org/w", {"config.json": CONFIG}, safetensors={"model.safetensors": {"w": ("BF16", [64, 32])}})
    fake_hub.latency = 0.5
    hub = client(fake_hub, hub_cache, prefetch_weights=True)
    started = time.monotonic()
    hub.load_config("org/w")
    weights = hub.weights("org/w")
    took = time.monotonic() - started
    fake_hub.latency = 0.0
    # 64 × 32 = 2048 BF16 parameters, 2 bytes each = 4096 bytes.
    assert weights["total_parameters"] == 2048 and weights["weights_bytes"] == 4096
    assert took < 0.95  # the two requests of 0.5 s each went out together (one after the other: ≥ 1.0 s)
    assert sorted(e["path"] for e in fake_hub.requests("org/w")) == ["/api/models/org/w", "/org/w/resolve/main/config.json"]


def test_a_listing_whose_pages_never_end_is_bounded(fake_hub, hub_cache):
    fake_hub.add_model(f"{ORG}/a", {"config.json": CONFIG})
    fake_hub.page_size = 1
    fake_hub.endless_listing = True
    models, warnings = client(fake_hub, hub_cache).list_models(ORG, limit=10**6, expand=["createdAt"])
    assert len(fake_hub.requests()) == MAX_LISTING_PAGES
    assert warnings and "stopped after" in warnings[0]


# -- item 5: the token goes to the endpoint only -------------------------------------------------------


def test_a_listing_page_on_another_host_is_not_followed_with_the_token(fake_hub, hub_cache):
    for n in range(3):
        fake_hub.add_model(f"{ORG}/m{n}", {"config.json": CONFIG}, created_at=f"2026-06-0{n + 1}T00:00:00.000Z")
    fake_hub.page_size = 1
    fake_hub.next_link_base = fake_hub.cdn_url  # same server, another origin
    models, warnings = client(fake_hub, hub_cache, token=fake_hub.token).list_models(ORG, limit=100, expand=["createdAt"])
    assert [m.id for m in models] == [f"{ORG}/m2"]
    assert warnings and "another host" in warnings[0]
    assert [e["host"] for e in fake_hub.log] == [fake_hub.url[7:]]  # nothing reached the other origin


def test_watch_listing_sends_the_token_only_to_the_endpoint(fake_hub, tmp_path):
    for n in range(2):
        fake_hub.add_model(f"{ORG}/m{n}", {"config.json": CONFIG}, created_at=f"2026-06-0{n + 1}T00:00:00.000Z")
    fake_hub.page_size = 1
    fake_hub.next_link_base = fake_hub.cdn_url
    result = CliRunner().invoke(main, ["watch", "--author", ORG, "--out", str(tmp_path / "out"), "--once",
                                       "--since", "2026-01-01", "--endpoint", fake_hub.url, "--token", fake_hub.token])
    assert "another host" in result.stderr
    assert {e["host"] for e in fake_hub.log} == {fake_hub.url[7:]}


# -- item 8: secrets of any shape ------------------------------------------------------------------


ODD_TOKEN = "SECRETplainToken-not-hf-shaped"


def test_a_token_of_any_shape_echoed_by_the_server_is_scrubbed(fake_hub, hub_cache, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", False)
    monkeypatch.setenv("HF_TOKEN", ODD_TOKEN)  # resolved by the library, never passed to hfkv as a value
    fake_hub.add_model("org/echo", {"config.json": CONFIG})
    fake_hub.faults["org/echo"] = Fault(status=400, message=f"bad request from Bearer {ODD_TOKEN}")
    with pytest.raises(SourceError) as caught:
        client(fake_hub, hub_cache).load_config("org/echo")
    assert ODD_TOKEN not in str(caught.value) and "<token>" in str(caught.value)
    assert fake_hub.requests("org/echo")[0]["auth"] == ODD_TOKEN  # it was really sent


def test_endpoint_credentials_are_never_printed(fake_hub, hub_cache, tmp_path):
    endpoint = fake_hub.url.replace("http://", "http://alice:pa55word-xyz@")
    fake_hub.add_model("org/echo-url", {"config.json": CONFIG})
    fake_hub.faults["org/echo-url"] = Fault(status=500, message=f"upstream {endpoint}/x failed")
    hub = HubClient(endpoint=endpoint, cache_dir=hub_cache, retries=0)
    assert "pa55word" not in repr(hub)
    for repo in ("org/echo-url", "org/absent"):
        with pytest.raises(SourceError) as caught:
            hub.load_config(repo)
        assert "pa55word" not in str(caught.value) and "alice" not in str(caught.value), str(caught.value)
    listing = tmp_path / "list.txt"
    listing.write_text("org/echo-url\norg/absent\n")
    result = CliRunner().invoke(main, ["scan", str(listing), "--endpoint", endpoint, "--retries", "0"])
    assert "pa55word" not in result.stdout + result.stderr


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


def test_the_gated_message_says_its_hint_once(fake_hub, hub_cache):
    fake_hub.add_model("org/gated", {"config.json": CONFIG}, gated="manual")
    with pytest.raises(SourceError) as caught:
        client(fake_hub, hub_cache).load_config("org/gated")
    assert caught.value.message.count("HF_TOKEN") == 1 and "no token was sent" in caught.value.message


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


def test_a_symlink_planted_at_a_cache_temporary_name_is_not_written_through(tmp_path):
    import threading

    from hfkv.sources import cache as hubcache

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    commit = "a" * 40
    target = hubcache.repo_folder(tmp_path / "cache", "org/m") / "snapshots" / commit / "config.json"
    target.parent.mkdir(parents=True)
    planted = f"{target}.{os.getpid()}-{threading.get_ident()}.hfkv-tmp"  # the name a store will use
    os.symlink(victim, planted)
    hubcache.store(tmp_path / "cache", "org/m", "config.json", revision=None, commit=commit, body=b"{}")
    assert victim.read_text() == "precious\n" and target.read_bytes() == b"{}"
