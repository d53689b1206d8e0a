"""HubClient against the fake Hub: same figures as the local file, commit recorded, request counts pinned,
revisions, parameter counts per dtype."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import quote

import pytest

import hfkv
from hfkv.errors import SourceError
from hfkv.sources.hub import MAX_LISTING_PAGES, HubClient
from hfkv.sources.weights import weights_summary

from fakehub import Fault

ROOT = Path(__file__).resolve().parents[2]
LLAMA2 = "meta-llama/Llama-2-7b-hf"
CONFIG_PATH = "/meta-llama/Llama-2-7b-hf/resolve/main/config.json"


def _without_origin(report: hfkv.Report) -> dict:
    data = report.to_dict()
    for key in ("model", "source", "commit"):
        data.pop(key)
    return data


# -- same figures as the local fixture ------------------------------------------------------------------


def test_llama2_from_hub_matches_hand_figures_and_records_commit(fake_hub, hub_client):
    report = hfkv.inspect(LLAMA2, hub=hub_client)
    # 32 layers × 2 (K and V) × 32 kv heads × 128 head_dim (4096 / 32) × 2 bytes (float16) = 524288
    assert report.alpha_bytes_per_token == 32 * 2 * 32 * 128 * 2 == 524288
    assert report.model == LLAMA2
    assert report.source == "hub"
    assert report.commit == fake_hub.commit(LLAMA2)
    assert len(report.commit) == 40


@pytest.mark.parametrize("repo", [LLAMA2, "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-120b", "Qwen/Qwen3-Next-80B-A3B-Thinking"])
def test_hub_report_equals_local_report(fake_hub, hub_client, repo):
    local = hfkv.inspect(str(ROOT / "fixtures" / repo.replace("/", "__") / "config.json"))
    remote = hfkv.inspect(repo, hub=hub_client)
    assert _without_origin(remote) == _without_origin(local)


def test_load_config_returns_loaded_config(fake_hub, hub_client):
    loaded = hub_client.load_config(LLAMA2)
    assert loaded.source == "hub" and loaded.name == LLAMA2 and loaded.revision is None
    assert loaded.data == json.loads((ROOT / "fixtures/meta-llama__Llama-2-7b-hf/config.json").read_text())
    assert loaded.commit == fake_hub.commit(LLAMA2)


# -- requests per repo ---------------------------------------------------------------------------------


def test_request_counts_cold_warm_pinned_offline(fake_hub, hub_cache):
    client = HubClient(endpoint=fake_hub.url, cache_dir=hub_cache)
    client.load_config(LLAMA2)
    assert fake_hub.calls(LLAMA2) == [("GET", CONFIG_PATH)]  # cold: one GET (its answer carries the commit)

    fake_hub.reset()
    warm = client.load_config(LLAMA2)
    assert fake_hub.calls(LLAMA2) == [("GET", CONFIG_PATH)]  # warm on a branch: the branch may have moved

    fake_hub.reset()
    pinned = client.load_config(LLAMA2, revision=warm.commit)
    assert fake_hub.calls(LLAMA2) == []  # a cached commit: no request
    assert pinned.commit == warm.commit

    fake_hub.reset()
    offline = HubClient(endpoint=fake_hub.url, cache_dir=hub_cache, offline=True).load_config(LLAMA2)
    assert fake_hub.log == []  # offline: no request at all
    assert offline.commit == warm.commit and offline.data == warm.data


def test_offline_from_environment(fake_hub, hub_cache, monkeypatch):
    HubClient(endpoint=fake_hub.url, cache_dir=hub_cache).load_config(LLAMA2)
    fake_hub.reset()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    client = HubClient(endpoint=fake_hub.url, cache_dir=hub_cache, offline=False)  # the CLI's default
    assert client.offline
    assert client.load_config(LLAMA2).commit == fake_hub.commit(LLAMA2)
    assert fake_hub.log == []


def test_offline_asks_the_hub_for_nothing_not_even_a_listing(fake_hub, hub_cache):
    # Before: --offline covered the config only; a listing went out (25 s of retries, then a DNS error)
    fake_hub.add_model("acme/m0", {"config.json": {"model_type": "llama"}})
    client = HubClient(endpoint=fake_hub.url, cache_dir=hub_cache, offline=True)
    for ask in (lambda: client.list_models("acme", limit=10, expand=["sha"]), lambda: client.get_json(fake_hub.url)):
        with pytest.raises(SourceError, match=r"offline \(--offline or HF_HUB_OFFLINE=1\)") as caught:
            ask()
        assert caught.value.kind == "offline"
    assert fake_hub.log == []


def test_an_org_name_whose_org_is_a_local_folder_says_no_local_path_has_it(fake_hub, hub_cache, tmp_path,
                                                                              monkeypatch, capsys):
    # fixtures/nope in a checkout: a mistyped folder, or a repo; the Hub is asked, and its failure (and,
    # at a terminal, a notice at once) says no local path has that name
    from hfkv.runtime import notices
    from hfkv.sources import load_config

    (tmp_path / "fixtures").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(notices, "enabled", True)
    with pytest.raises(SourceError) as caught:
        load_config("fixtures/nope", hub=HubClient(endpoint=fake_hub.url, cache_dir=hub_cache))
    assert caught.value.kind == "not-found"
    assert str(caught.value).endswith("; nor is it a local path (fixtures/ is a folder here, without nope)")
    assert "fixtures/nope is no local path (fixtures/ is a folder here without it)" in capsys.readouterr().err


@pytest.mark.parametrize("written", ["./fixtures/nope", "~/models/x", "../nope/x", "/nonexistent-hfkv/x", "a/b/c",
                                     "org\\name", "./org/name@main"])
def test_a_name_written_as_a_path_is_never_asked_of_the_hub(fake_hub, hub_cache, written):
    from hfkv.sources import load_config

    with pytest.raises(SourceError, match=r"no such file or folder \(written as a local path: the Hub was not asked"):
        load_config(written, hub=HubClient(endpoint=fake_hub.url, cache_dir=hub_cache))
    assert fake_hub.log == []


def test_no_token_sent_by_default(fake_hub, hub_client):
    hub_client.load_config(LLAMA2)
    assert [e["auth"] for e in fake_hub.requests(LLAMA2)] == [None]


def test_endpoint_and_cache_from_environment(fake_hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", fake_hub.url + "/")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "c"))
    client = HubClient()
    assert client.endpoint == fake_hub.url and client.cache_dir == str(tmp_path / "c")
    client.load_config(LLAMA2)
    assert (tmp_path / "c" / "models--meta-llama--Llama-2-7b-hf").is_dir()


# -- revisions -------------------------------------------------------------------------------------------


def _small_llama(layers: int) -> dict:
    return {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 1024,
            "num_attention_heads": 8, "num_key_value_heads": 2, "num_hidden_layers": layers,
            "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}


@pytest.mark.parametrize("revision", ["v1", "refs/pr/1"])
def test_org_name_at_revision(fake_hub, hub_client, revision):
    fake_hub.add_model("org/rev-model", {"config.json": _small_llama(4)})
    commit = fake_hub.add_revision("org/rev-model", revision, {"config.json": _small_llama(6)})
    report = hfkv.inspect(f"org/rev-model@{revision}", hub=hub_client, weights=False)
    # 6 layers × 2 (K, V) × 2 kv heads × 128 head_dim (1024 / 8) × 2 bytes (bf16) = 6144
    assert report.alpha_bytes_per_token == 6 * 2 * 2 * 128 * 2 == 6144
    assert report.commit == commit
    assert [e["method"] for e in fake_hub.requests("org/rev-model")] == ["GET"]
    assert fake_hub.requests("org/rev-model")[0]["path"] == f"/org/rev-model/resolve/{quote(revision, safe='')}/config.json"

    main = hfkv.inspect("org/rev-model", hub=hub_client)
    # 4 layers × 2 × 2 × 128 × 2 = 4096
    assert main.alpha_bytes_per_token == 4 * 2 * 2 * 128 * 2 == 4096
    assert main.commit == fake_hub.commit("org/rev-model")


def test_revision_keyword_and_commit_revision(fake_hub, hub_client):
    fake_hub.add_model("org/rev-model", {"config.json": _small_llama(4)})
    commit = fake_hub.add_revision("org/rev-model", "v2", {"config.json": _small_llama(2)})
    loaded = hub_client.load_config("org/rev-model", revision="v2")
    assert loaded.revision == "v2" and loaded.commit == commit and loaded.data["num_hidden_layers"] == 2
    by_commit = hfkv.inspect("org/rev-model", hub=hub_client, revision=commit)
    assert by_commit.commit == commit


def test_renamed_repo_follows_redirect(fake_hub, hub_client):
    fake_hub.add_model("org/new-name", {"config.json": _small_llama(3)})
    fake_hub.aliases["org/old-name"] = "org/new-name"
    loaded = hub_client.load_config("org/old-name")
    assert loaded.data["num_hidden_layers"] == 3 and loaded.commit == fake_hub.commit("org/new-name")


def test_same_content_new_commit_is_recorded(fake_hub, hub_client):
    fake_hub.add_model("org/moving", {"config.json": _small_llama(3)})
    first = hub_client.load_config("org/moving").commit
    second_commit = fake_hub.add_revision("org/moving", "main", {"config.json": _small_llama(3), "README.md": "x"})
    assert hub_client.load_config("org/moving").commit == second_commit != first


# -- parameter counts -------------------------------------------------------------------------------------

DENSE = {"model.safetensors": {"embed": ("BF16", [32000, 4096]), "norm": ("F32", [4096])}}


def test_weights_from_api_field(fake_hub, hub_client):
    fake_hub.add_model("org/dense", {"config.json": _small_llama(2)}, safetensors=DENSE)
    info = hub_client.weights("org/dense")
    # BF16: 32000 × 4096 = 131072000 elements; F32: 4096
    assert info["parameters"] == {"BF16": 131072000, "F32": 4096}
    assert info["total_parameters"] == 131072000 + 4096 == 131076096
    # 131072000 × 2 + 4096 × 4 = 262144000 + 16384 = 262160384
    assert info["weights_bytes"] == 262160384
    assert info["parameters_exact"] is True and info["source"] == "metadata"
    assert [(e["method"], e["path"], e["query"]) for e in fake_hub.requests("org/dense")] == [
        ("GET", "/api/models/org/dense", "expand=safetensors")]


def test_weights_fall_back_to_safetensors_headers_when_field_missing(fake_hub, hub_client):
    shards = {"model-00001-of-00002.safetensors": {"a": ("BF16", [1000, 10])},
              "model-00002-of-00002.safetensors": {"b": ("F8_E4M3", [300, 7]), "s": ("F32", [300])}}
    fake_hub.add_model("org/sharded", {"config.json": _small_llama(2)}, safetensors=shards, api_safetensors=None)
    info = hub_client.weights("org/sharded")
    # BF16 1000 × 10 = 10000; F8_E4M3 300 × 7 = 2100; F32 300
    assert info["parameters"] == {"BF16": 10000, "F8_E4M3": 2100, "F32": 300}
    # 10000 × 2 + 2100 × 1 + 300 × 4 = 20000 + 2100 + 1200 = 23300
    assert info["weights_bytes"] == 23300 and info["source"] == "headers"
    assert not any(e["file"] and e["file"].endswith(".py") for e in fake_hub.requests("org/sharded"))


def test_weights_packed_quantised_dtypes_are_flagged(fake_hub, hub_client):
    # An MXFP4-style repo: U8 blocks (two 4-bit weights per byte), U8 scales, BF16 rest.
    quant = {"model.safetensors": {"blocks": ("U8", [64, 90, 16]), "scales": ("U8", [64, 90]), "emb": ("BF16", [100, 64])}}
    fake_hub.add_model("org/mxfp4", {"config.json": _small_llama(2)}, safetensors=quant)
    info = hub_client.weights("org/mxfp4")
    # U8: 64 × 90 × 16 + 64 × 90 = 92160 + 5760 = 97920 elements = 97920 bytes; BF16: 6400 × 2 = 12800
    assert info["parameters"] == {"U8": 97920, "BF16": 6400}
    assert info["weights_bytes"] == 97920 + 12800 == 110720
    assert info["parameters_exact"] is False and "approximate" in info["note"]


def test_weights_summary_sub_byte_and_unknown_dtypes():
    # F4: 3 × 0.5 = 1.5 bytes, F6_E2M3: 4 × 0.75 = 3 bytes → 4.5 → rounded up to 5
    assert weights_summary({"F4": 3, "F6_E2M3": 4}, None, source="x")["weights_bytes"] == 5
    unknown = weights_summary({"Q7": 10, "BF16": 1}, None, source="x")
    assert unknown["weights_bytes"] is None and "Q7" in unknown["note"]
    assert weights_summary({}, None, source="x") is None


def test_weights_none_when_unknown_or_failing(fake_hub, hub_client, hub_cache):
    fake_hub.add_model("org/no-weights", {"config.json": _small_llama(2)})
    assert hub_client.weights("org/no-weights") is None  # no field, no safetensors file
    assert hub_client.weights("org/does-not-exist") is None
    fake_hub.add_model("org/api-down", {"config.json": _small_llama(2)}, safetensors=DENSE)
    fake_hub.faults["org/api-down"] = Fault(status=503, message="down", where="api")
    fake_hub.log.clear()
    assert hub_client.weights("org/api-down") is None  # model_info does not retry: one request
    assert len(fake_hub.requests("org/api-down")) == 1
    assert HubClient(endpoint=fake_hub.url, cache_dir=hub_cache, offline=True).weights("org/api-down") is None


def test_weights_of_gated_repo_use_public_metadata(fake_hub, hub_client):
    fake_hub.add_model("org/gated-w", {"config.json": _small_llama(2)}, safetensors=DENSE, gated="manual")
    assert hub_client.weights("org/gated-w")["total_parameters"] == 131076096


def test_a_hub_report_carries_the_hubs_weights(fake_hub, hub_client):
    fake_hub.add_model("org/dense", {"config.json": _small_llama(2)}, safetensors=DENSE)
    data = hfkv.inspect("org/dense", hub=hub_client).to_dict()
    assert data["weights_bytes"] == 262160384 and data["weights"]["parameters"]["F32"] == 4096
    assert data["weights"]["source"] == "metadata"


def test_api_property_lists_models_newest_first(fake_hub, hub_client):
    fake_hub.add_model("acme/old", {"config.json": _small_llama(2)}, created_at="2025-01-01T00:00:00.000Z")
    fake_hub.add_model("acme/new", {"config.json": _small_llama(2)}, created_at="2025-06-01T00:00:00.000Z",
                       safetensors=DENSE)
    models = list(hub_client.api.list_models(author="acme", sort="created_at", limit=5,
                                             expand=["createdAt", "sha", "config", "safetensors"]))
    assert [m.id for m in models] == ["acme/new", "acme/old"]
    assert models[0].sha == fake_hub.commit("acme/new") and models[0].config["model_type"] == "llama"
    assert models[0].safetensors.total == 131076096
    assert fake_hub.calls("acme/*") == [("GET", "/api/models")]


def test_listing_follows_pages(fake_hub, hub_client):
    for day in (1, 2, 3):
        fake_hub.add_model(f"paged/m{day}", {"config.json": _small_llama(2)}, created_at=f"2025-03-0{day}T00:00:00.000Z")
    fake_hub.page_size = 2
    models = list(hub_client.api.list_models(author="paged", sort="created_at", expand=["createdAt"]))
    assert [m.id for m in models] == ["paged/m3", "paged/m2", "paged/m1"]
    assert len(fake_hub.requests("paged/*")) == 2  # two pages linked by Link: rel="next"


def test_thread_pool_of_cold_downloads(fake_hub, hub_client):
    from concurrent.futures import ThreadPoolExecutor

    repos = [f"pool/m{i}" for i in range(24)]
    for i, repo in enumerate(repos):
        fake_hub.add_model(repo, {"config.json": _small_llama(1 + i % 4)})
    fake_hub.latency = 0.01
    with ThreadPoolExecutor(8) as pool:
        loaded = list(pool.map(hub_client.load_config, repos))
    assert [c.data["num_hidden_layers"] for c in loaded] == [1 + i % 4 for i in range(24)]
    assert all(c.commit == fake_hub.commit(c.name) for c in loaded)
    assert len(fake_hub.log) == 24  # one GET each


# -- item 10: deadlines, capped waits, bounded listings ----------------------------------------------


CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_attention_heads": 8,
          "num_key_value_heads": 4, "num_hidden_layers": 2, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}


def client(hub, cache: str, **kwargs) -> HubClient:
    return HubClient(endpoint=hub.url, cache_dir=cache, **kwargs)


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


ORG = "acme"


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


# -- item 15: messages ---------------------------------------------------------------------------------


def test_the_gated_message_says_its_hint_once(fake_hub, hub_cache):
    fake_hub.add_model("org/gated", {"config.json": CONFIG}, gated="manual")
    with pytest.raises(SourceError) as caught:
        client(fake_hub, hub_cache).load_config("org/gated")
    assert caught.value.message.count("HF_TOKEN") == 1 and "no token was sent" in caught.value.message
