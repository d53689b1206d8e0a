"""Every Hub failure is one actionable line (``SourceError`` kind + message, exit code 1 through the CLI),
and the transport faults the library recovers from (reset, truncated body, slow answer, stale cache) are
recovered from with a pinned number of requests.

The library's retries on an uncached file sleep 1+2+4+8+8 s (or Retry-After+1 s each); tests that go
through them use ``no_sleep`` and assert the waits it was asked for instead of sleeping.
"""

from __future__ import annotations

import socket
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest
from click.testing import CliRunner

import hfkv
from fakehub import Fault
from hfkv.commands.cli import main
from hfkv.errors import SourceError
from hfkv.sources.hub import HubClient
from hfkv.sources.failures import retry_once

CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_attention_heads": 8,
          "num_key_value_heads": 8, "num_hidden_layers": 2, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}
WRONG_TOKEN = "hf_WRONGtoken0123456789abcdef"
UNGRANTED = "hf_UNGRANTEDtoken0123456789ab"


def closed_port_url() -> str:
    """A local URL where nothing listens (connection refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@dataclass
class Case:
    """One failure: how to provoke it, and what hfkv must say."""

    kind: str
    fragments: tuple[str, ...]
    setup: Callable[[Any], None] = lambda hub: hub.add_model("org/broken", {"config.json": CONFIG})
    repo: str = "org/broken"
    client: dict[str, Any] = field(default_factory=dict)  # HubClient kwargs (endpoint/offline/token)
    revision: str | None = None
    requests: int | None = None  # requests the fake sees for the repo
    waits: list[float] | None = None  # sleeps huggingface_hub asked for


def _fault(fault: Fault, files: dict | None = None) -> Callable[[Any], None]:
    def setup(hub: Any) -> None:
        hub.add_model("org/broken", files or {"config.json": CONFIG})
        hub.faults["org/broken"] = fault
    return setup


def _gated(hub: Any) -> None:
    hub.add_model("org/broken", {"config.json": CONFIG}, gated="manual")
    hub.ungranted_tokens.add(UNGRANTED)


CASES = {
    "gated-no-token": Case("gated", ("gated repo", "request access on http://127.0.0.1:", "/org/broken",
                                     "HF_TOKEN", "--token", "no token was sent"), _gated, requests=1),
    "gated-ungranted-token": Case("gated", ("request access", "not been granted"), _gated,
                                  client={"token": UNGRANTED}, requests=1),
    "missing-no-token": Case("not-found", ("not found", "private", "no token was sent", "HF_TOKEN"),
                             lambda hub: None, repo="org/nothing-here", requests=1),
    "missing-with-token": Case("not-found", ("not found", "private", "token sent cannot see it"),
                               lambda hub: None, repo="org/nothing-here", client={"token": "hf_valid"}, requests=1),
    "private-no-token": Case("not-found", ("private", "no token was sent"),
                             lambda hub: hub.add_model("org/broken", {"config.json": CONFIG}, private=True), requests=1),
    "no-config": Case("no-config", ("no config.json", "'main'"),
                      lambda hub: hub.add_model("org/broken", {"README.md": "weights only"}), requests=1),
    "bad-revision": Case("bad-revision", ("revision 'nope' not found",), revision="nope", requests=1),
    "rate-limited-retry-after": Case(
        "rate-limited", ("HTTP 429", "wait 7 s", "HF_TOKEN"), _fault(Fault(status=429, headers={"Retry-After": "7"})),
        # the GET and the library's 5 retries, each after Retry-After + 1 s
        requests=6, waits=[8.0] * 5),
    "rate-limited-ratelimit-header": Case(
        "rate-limited", ("wait 42 s",), _fault(Fault(status=429, headers={"RateLimit": '"resolvers";r=0;t=42'})),
        requests=6, waits=[43.0] * 5),
    "server-error": Case("hub-error", ("HTTP 503", "maintenance window"),
                         _fault(Fault(status=503, message="Service unavailable:\nmaintenance window")),
                         requests=6, waits=[1, 2, 4, 8, 8]),
    "disabled": Case("hub-error", ("disabled",),
                     lambda hub: hub.add_model("org/broken", {"config.json": CONFIG}, disabled=True), requests=1),
    "rejected-token": Case("hub-error", ("HTTP 401", "Invalid credentials", "token was rejected"),
                           client={"token": WRONG_TOKEN}, requests=1),
    "not-a-hub": Case("hub-error", ("did not answer like a Hugging Face Hub", "--endpoint"),
                      _fault(Fault(status=200, message="a plain web server")), requests=1),
    "connection-refused": Case("network", ("cannot reach the Hub at 127.0.0.1:", "could not connect", "--offline"),
                               client={"endpoint": "CLOSED"}, waits=[1, 2, 4, 8, 8]),
    "connection-reset": Case("network", ("cannot reach the Hub", "dropped"), _fault(Fault(kind="reset")),
                             requests=6, waits=[1, 2, 4, 8, 8]),  # the library's retries; none more of ours
    "truncated-body": Case("network", ("dropped",), _fault(Fault(kind="truncate", methods=("GET",))),
                           requests=2),  # the body is read past the library's retries: our one more try
    "offline-not-cached": Case("offline", ("offline", "not in the cache", "HF_HUB_OFFLINE"),
                               client={"offline": True}, requests=0),
    "invalid-json": Case("invalid-json", ("not valid JSON", "line 1"),
                         lambda hub: hub.add_model("org/broken", {"config.json": b'{"model_type": '}), requests=1),
    "invalid-utf8": Case("invalid-json", ("not UTF-8",), _fault(Fault(kind="invalid-utf8", methods=("GET",))),
                         requests=1),
    "token-required-none-set": Case("hub-error", ("token is required", "HF_TOKEN"), client={"token": True},
                                    requests=0),
    "invalid-repo-id": Case("not-found", ("not a valid Hub repo id",), lambda hub: None, repo="org/bad..name",
                            requests=0),
}


def _client(case: Case, hub: Any, cache: str) -> HubClient:
    kwargs = dict(case.client)
    if kwargs.get("endpoint") == "CLOSED":
        kwargs["endpoint"] = closed_port_url()
    kwargs.setdefault("endpoint", hub.url)
    return HubClient(cache_dir=cache, **kwargs)


@pytest.mark.parametrize("name", list(CASES))
def test_failure_is_one_actionable_line(name, fake_hub, hub_cache, no_sleep):
    case = CASES[name]
    case.setup(fake_hub)
    client = _client(case, fake_hub, hub_cache)
    with pytest.raises(SourceError) as caught:
        client.load_config(case.repo, revision=case.revision)
    err = caught.value
    assert err.kind == case.kind, str(err)
    assert err.source == case.repo
    assert "\n" not in str(err) and len(str(err)) < 400
    for fragment in case.fragments:
        assert fragment in err.message, (fragment, err.message)
    if case.requests is not None:
        assert len(fake_hub.requests(case.repo)) == case.requests, fake_hub.calls(case.repo)
    if case.waits is not None:
        assert no_sleep == case.waits
    assert not any(str(e["file"]).endswith(".py") for e in fake_hub.log)


@pytest.mark.parametrize("name", ["gated-no-token", "missing-no-token", "no-config", "bad-revision",
                                  "rate-limited-retry-after", "server-error", "connection-refused",
                                  "connection-reset", "offline-not-cached", "invalid-utf8", "rejected-token"])
def test_cli_failure_exit_code_1_and_one_line(name, fake_hub, no_sleep):
    case = CASES[name]
    case.setup(fake_hub)
    endpoint = closed_port_url() if case.client.get("endpoint") == "CLOSED" else fake_hub.url
    args = [case.repo + (f"@{case.revision}" if case.revision else ""), "--endpoint", endpoint]
    if case.client.get("offline"):
        args.append("--offline")
    if case.client.get("token"):
        args += ["--token", case.client["token"]]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hfkv: error: {case.repo}: "), result.stderr
    assert case.fragments[0] in lines[0]
    assert result.stdout == ""


# -- faults the client recovers from ----------------------------------------------------------------------


def test_server_error_with_cached_copy_serves_cache_and_its_commit(fake_hub, hub_client, no_sleep):
    fake_hub.add_model("org/flaky", {"config.json": CONFIG})
    cached = hub_client.load_config("org/flaky").commit
    fake_hub.add_revision("org/flaky", "main", {"config.json": dict(CONFIG, num_hidden_layers=3)})
    fake_hub.reset()
    fake_hub.faults["org/flaky"] = Fault(status=503, message="down")
    loaded = hub_client.load_config("org/flaky")
    # the GET fails, the cached copy stands in at once (no retries): the *cached* commit is what was read
    assert loaded.commit == cached != fake_hub.commit("org/flaky")
    assert loaded.data["num_hidden_layers"] == 2
    assert len(fake_hub.requests("org/flaky")) == 1 and no_sleep == []
    assert loaded.warnings == (f"read the cached config.json (commit {cached}) because the Hub did not answer: "
                               f"{fake_hub.url[7:]} answered HTTP 503: down",)
    report = hfkv.inspect("org/flaky", hub=hub_client)
    assert report.warnings[0] == loaded.warnings[0]  # and the report says so


def test_connection_reset_once_is_retried(fake_hub, hub_client, no_sleep):
    fake_hub.add_model("org/reset-once", {"config.json": CONFIG})
    fake_hub.faults["org/reset-once"] = Fault(kind="reset", times=1)
    loaded = hub_client.load_config("org/reset-once")
    assert loaded.commit == fake_hub.commit("org/reset-once")
    assert [e["method"] for e in fake_hub.requests("org/reset-once")] == ["GET", "GET"]
    assert no_sleep == [1]  # the library's first backoff


def test_truncated_body_once_is_fetched_again(fake_hub, hub_client, no_sleep):
    fake_hub.add_model("org/cut-once", {"config.json": CONFIG})
    fake_hub.faults["org/cut-once"] = Fault(kind="truncate", methods=("GET",), times=1)
    loaded = hub_client.load_config("org/cut-once")
    assert loaded.data == CONFIG
    assert [e["method"] for e in fake_hub.requests("org/cut-once")] == ["GET", "GET"]
    assert no_sleep == []  # our second try follows at once


def test_redirect_to_other_origin_drops_authorization(fake_hub, hub_cache):
    fake_hub.add_model("org/on-cdn", {"config.json": CONFIG}, gated="auto")
    fake_hub.faults["org/on-cdn"] = Fault(kind="redirect")
    client = HubClient(endpoint=fake_hub.url, cache_dir=hub_cache, token=fake_hub.token)
    loaded = client.load_config("org/on-cdn")
    assert loaded.data == CONFIG and loaded.commit == fake_hub.commit("org/on-cdn")
    hub, cdn = fake_hub.requests("org/on-cdn")
    assert (hub["method"], hub["host"], hub["auth"]) == ("GET", fake_hub.url[7:], fake_hub.token)
    assert (cdn["method"], cdn["host"], cdn["auth"]) == ("GET", fake_hub.cdn_url[7:], None)
    assert cdn["path"].startswith("/cdn/")


def test_slow_metadata_answer_past_timeout_is_retried(fake_hub, hub_cache, no_sleep):
    fake_hub.add_model("org/slow", {"config.json": CONFIG})
    fake_hub.faults["org/slow"] = Fault(kind="slow", delay=0.6, times=1, methods=("GET",))
    client = HubClient(endpoint=fake_hub.url, cache_dir=hub_cache, timeout=0.2)
    assert client.load_config("org/slow").data == CONFIG
    assert len(fake_hub.requests("org/slow")) == 2 and no_sleep == [1]  # timed out, then the library's retry


def test_latency_does_not_change_requests(fake_hub, hub_client):
    fake_hub.latency = 0.02
    hub_client.load_config("meta-llama/Llama-2-7b-hf")
    assert [e["method"] for e in fake_hub.requests("meta-llama/Llama-2-7b-hf")] == ["GET"]


def test_closed_shared_client_in_a_thread_pool_is_retried_once(fake_hub, hub_client, monkeypatch):
    """Another thread's ConnectError closes the shared HTTP client under us (docs/hub.md §8.5)."""
    import huggingface_hub.utils as hub_utils

    real = hub_utils.http_stream_backoff
    failures = [RuntimeError("Cannot send a request, as the client has been closed.")]

    def flaky(*args: Any, **kwargs: Any) -> Any:
        if failures:
            raise failures.pop()
        return real(*args, **kwargs)

    monkeypatch.setattr(hub_utils, "http_stream_backoff", flaky)
    assert hub_client.load_config("meta-llama/Llama-2-7b-hf").data["num_hidden_layers"] == 32
    assert fake_hub.calls("meta-llama/Llama-2-7b-hf") == [("GET", "/meta-llama/Llama-2-7b-hf/resolve/main/config.json")]


def test_retry_once_gives_up_after_second_failure():
    calls = []

    def always_closed() -> None:
        calls.append(1)
        raise RuntimeError("Cannot send a request, as the client has been closed.")

    with pytest.raises(RuntimeError):
        retry_once(always_closed)
    assert len(calls) == 2
    with pytest.raises(ValueError):
        retry_once(lambda: (_ for _ in ()).throw(ValueError("not transient")))


def test_other_runtime_errors_are_not_hidden(fake_hub, hub_client, monkeypatch):
    import huggingface_hub.utils as hub_utils

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("etag is empty due to uncovered problems")

    monkeypatch.setattr(hub_utils, "http_stream_backoff", broken)
    with pytest.raises(RuntimeError, match="uncovered"):
        hub_client.load_config("org/x")


def test_timeout_and_retries_bound_a_hub_that_never_answers(fake_hub, no_sleep):
    """--timeout per answer, --retries after it: 1 + 1 tries of 0.2 s here, one 1 s backoff (recorded, not slept)."""
    fake_hub.add_model("org/stalled", {"config.json": CONFIG})
    fake_hub.faults["org/stalled"] = Fault(kind="slow", delay=0.6, methods=("GET",))
    result = CliRunner().invoke(main, ["org/stalled", "--endpoint", fake_hub.url, "--timeout", "0.2", "--retries", "1"])
    assert result.exit_code == 1
    assert "cannot reach the Hub" in result.stderr and "timed out" in result.stderr
    # The config GET is tried 1 + 1 times; the parameter-count request, sent beside it, stalls the same
    # way and is bounded by the same deadline (its backoff is not recorded: it is the lookup's own).
    configs = [r for r in fake_hub.requests("org/stalled") if r["file"] == "config.json"]
    assert len(configs) == 2 and no_sleep == [1]


@pytest.mark.parametrize("args", [["--timeout", "0"], ["--retries", "-1"]])
def test_bad_timeout_or_retries_is_usage_error(args):
    result = CliRunner().invoke(main, ["org/x", *args])
    assert result.exit_code == 2


def test_redirect_loop_is_one_line_hub_error(fake_hub, hub_client):
    fake_hub.aliases.update({"org/loop-a": "org/loop-b", "org/loop-b": "org/loop-a"})  # renamed into each other
    with pytest.raises(SourceError) as caught:
        hub_client.load_config("org/loop-a")
    assert caught.value.kind == "hub-error" and "TooManyRedirects" in caught.value.message


def test_the_real_hubs_resolve_cache_redirect_is_followed_with_the_token(fake_hub, hub_cache):
    """The Hub answers resolve/main with a same-origin 307 to /api/resolve-cache/... (commit on the target)."""
    from huggingface_hub import hf_hub_download

    fake_hub.resolve_cache = True
    fake_hub.add_model("org/rc", {"config.json": CONFIG}, gated="auto")
    client = HubClient(endpoint=fake_hub.url, cache_dir=hub_cache, token=fake_hub.token)
    loaded = client.load_config("org/rc")
    assert loaded.data == CONFIG and loaded.commit == fake_hub.commit("org/rc")
    first, second = fake_hub.requests("org/rc")
    assert (first["method"], first["path"]) == ("GET", "/org/rc/resolve/main/config.json")
    assert second["path"] == f"/api/resolve-cache/models/org/rc/{loaded.commit}/config.json"
    assert first["auth"] == second["auth"] == fake_hub.token  # same origin: the token follows
    # the library reads the same fake the same way (so the fake is faithful, not tailored to hfkv)
    path = hf_hub_download("org/rc", "config.json", endpoint=fake_hub.url, cache_dir=hub_cache + "-lib",
                           token=fake_hub.token)
    assert Path(path).parent.name == loaded.commit


def test_a_very_long_invalid_id_is_named_once_in_a_bounded_line(hub_client):
    repo = "org/" + "a" * 2000  # over the Hub's 96-character limit
    with pytest.raises(SourceError) as err:
        hub_client.load_config(repo)
    line = str(err.value)
    assert "\n" not in line and len(line) < 400 and line.count("org/aaaa") == 1  # named once, not re-quoted
    assert "not a valid Hub repo id" in line and "maximum length is 96" in line
