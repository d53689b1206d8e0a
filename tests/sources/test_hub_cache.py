"""The cache hfkv writes is huggingface_hub's own layout: the library and ``--offline`` read what hfkv
stored, hfkv reads what the library stored, and names taken from server answers never leave the
repo's folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import hfkv
from hfkv.sources import cache as hubcache
from hfkv.errors import SourceError
from hfkv.sources.hub import HubClient

CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_attention_heads": 8,
          "num_key_value_heads": 2, "num_hidden_layers": 3, "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}
BODY = json.dumps(CONFIG).encode()
# 3 layers × 2 (K, V) × 2 KV heads × 64 head_dim (512 / 8) × 2 bytes (bf16) = 1536
ALPHA = 3 * 2 * 2 * 64 * 2


def test_stored_config_is_found_by_huggingface_hub_offline(fake_hub, hub_client, hub_cache):
    from huggingface_hub import hf_hub_download, scan_cache_dir

    fake_hub.add_model("org/cached", {"config.json": BODY})
    loaded = hub_client.load_config("org/cached")
    folder = Path(hub_cache) / "models--org--cached"
    snapshot = folder / "snapshots" / loaded.commit / "config.json"
    assert snapshot.read_bytes() == BODY and (folder / "refs" / "main").read_text() == loaded.commit
    path = hf_hub_download("org/cached", "config.json", cache_dir=hub_cache, local_files_only=True)
    assert Path(path).read_bytes() == BODY and Path(path).parent.name == loaded.commit
    assert not list(folder.rglob("*hfkv-tmp"))  # no temporary file left behind
    # and the library's cache scanner (`hf cache ls`) sees a sound repo with that revision
    info = {repo.repo_id: repo for repo in scan_cache_dir(hub_cache).repos}["org/cached"]
    assert [r.commit_hash for r in info.revisions] == [loaded.commit] and info.size_on_disk == len(BODY)


def test_config_stored_by_huggingface_hub_is_read_offline(fake_hub, hub_cache):
    from huggingface_hub import hf_hub_download

    fake_hub.add_model("org/by-library", {"config.json": BODY})
    hf_hub_download("org/by-library", "config.json", endpoint=fake_hub.url, cache_dir=hub_cache)
    fake_hub.reset()
    report = hfkv.inspect("org/by-library", hub=HubClient(endpoint=fake_hub.url, cache_dir=hub_cache, offline=True))
    assert report.alpha_bytes_per_token == ALPHA == 1536
    assert report.commit == fake_hub.commit("org/by-library") and fake_hub.log == []


def test_a_moved_branch_is_read_again_and_recorded(fake_hub, hub_client, hub_cache):
    fake_hub.add_model("org/moving", {"config.json": BODY})
    first = hub_client.load_config("org/moving").commit
    second = fake_hub.add_revision("org/moving", "main", {"config.json": dict(CONFIG, num_hidden_layers=5)})
    loaded = hub_client.load_config("org/moving")
    assert (loaded.commit, loaded.data["num_hidden_layers"]) == (second, 5) and first != second
    assert (Path(hub_cache) / "models--org--moving" / "refs" / "main").read_text() == second
    offline = HubClient(endpoint=fake_hub.url, cache_dir=hub_cache, offline=True).load_config("org/moving")
    assert offline.commit == second


def test_unwritable_cache_keeps_the_report_and_warns(fake_hub, tmp_path):
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache folder should be")
    fake_hub.add_model("org/nocache", {"config.json": BODY})
    report = hfkv.inspect("org/nocache", hub=HubClient(endpoint=fake_hub.url, cache_dir=str(blocked)))
    assert report.alpha_bytes_per_token == 1536
    assert report.warnings[0].startswith(f"could not write the cache {blocked}: ")


def test_config_over_the_size_limit_is_refused_without_keeping_it(fake_hub, hub_client, hub_cache, monkeypatch):
    import hfkv.sources.hub

    monkeypatch.setattr(hfkv.sources.hub, "MAX_CONFIG_BYTES", 100)
    fake_hub.add_model("org/huge", {"config.json": BODY})  # len(BODY) > 100
    with pytest.raises(SourceError) as caught:
        hub_client.load_config("org/huge")
    assert caught.value.kind == "too-large" and f"is {len(BODY)} bytes" in caught.value.message
    assert len(fake_hub.requests("org/huge")) == 1 and not (Path(hub_cache) / "models--org--huge").exists()


def test_names_from_server_answers_stay_inside_the_repo_folder(tmp_path):
    commit = "0123456789abcdef0123456789abcdef01234567"
    for revision in ("../../evil", "main"):
        hubcache.store(tmp_path, "org/m", "config.json", revision=revision, commit=commit, body=BODY)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models--org--m"]
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert files == [os.path.join("models--org--m", "refs", "main"),
                     os.path.join("models--org--m", "snapshots", commit, "config.json")]


def test_revision_names_that_are_not_paths_are_not_recorded(tmp_path):
    commit = "0123456789abcdef0123456789abcdef01234567"
    for revision in ("../../evil", "refs/pr/../../x", "/abs", "a//b"):
        hubcache.store(tmp_path, "org/m", "config.json", revision=revision, commit=commit, body=BODY)
    hubcache.store(tmp_path, "org/m", "config.json", revision="refs/pr/1", commit=commit, body=BODY)
    refs = tmp_path / "models--org--m" / "refs"
    assert [str(p.relative_to(refs)) for p in refs.rglob("*") if p.is_file()] == [os.path.join("refs", "pr", "1")]
    with pytest.raises(ValueError):
        hubcache.store(tmp_path, "org/m", "config.json", revision="main", commit="../x", body=BODY)


# -- item 15: messages ---------------------------------------------------------------------------------


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
