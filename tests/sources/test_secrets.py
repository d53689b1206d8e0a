"""Secrets and remote code: a token never shows up in output, logs or exceptions, even with HF_DEBUG=1;
a config with ``auto_map`` is read as data and the repo's Python module is never requested or run."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

import hfkv
from hfkv.commands.cli import main
from hfkv.errors import SourceError
from hfkv.sources.hub import HubClient

from fakehub import Fault

ROOT = Path(__file__).resolve().parents[2]
SENTINEL = "hf_SENTINELx7Qk2Lm9Pz4Rt8Vw3Yb6"
CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_attention_heads": 8,
          "num_key_value_heads": 4, "num_hidden_layers": 2, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}


def _secret_repos(hub: Any) -> None:
    """A gated repo (readable with the token), one served through a CDN redirect, and none for 'org/absent'."""
    hub.add_model("org/gated-secret", {"config.json": CONFIG}, gated="manual")
    hub.add_model("org/cdn-secret", {"config.json": CONFIG}, gated="auto")
    hub.faults["org/cdn-secret"] = Fault(kind="redirect")


def _token_args(source: str, env: dict[str, str]) -> list[str]:
    """Hand SENTINEL to the CLI by ``source``; returns extra arguments (``env`` is updated in place)."""
    env.pop("HF_HUB_DISABLE_IMPLICIT_TOKEN", None)
    if source == "flag":
        return ["--token", SENTINEL]
    if source == "HF_TOKEN":
        env["HF_TOKEN"] = SENTINEL
    else:
        Path(env["HF_TOKEN_PATH"]).write_text(SENTINEL)
    return []


def _check_cli_run(hub: Any, code: int, stdout: str, stderr: str) -> None:
    assert code == 1, stderr  # org/absent fails, the other two are reported
    assert "SENTINEL" not in stdout + stderr
    rows = json.loads(stdout)  # reports, then error rows
    assert [r["model"] for r in rows] == ["org/gated-secret", "org/cdn-secret", "org/absent"]
    # 2 layers × 2 (K, V) × 4 kv heads × 64 head_dim (512 / 8) × 2 bytes (bf16) = 2048
    assert rows[0]["alpha_bytes_per_token"] == rows[1]["alpha_bytes_per_token"] == 2 * 2 * 4 * 64 * 2 == 2048
    assert rows[2]["error"].startswith("not-found:")
    # The token was sent to the Hub (the gated repo was readable), and never to the other origin.
    hub_auth = {e["auth"] for e in hub.log if e["host"] == hub.url[7:]}
    cdn = [e for e in hub.log if e["host"] == hub.cdn_url[7:]]
    assert hub_auth == {SENTINEL} and cdn and all(e["auth"] is None for e in cdn)


CLI_ARGS = ["org/gated-secret", "org/cdn-secret", "org/absent", "--format", "json"]


def test_token_never_printed_by_the_cli_process_with_hf_debug(fake_hub):
    """A real process: HF_DEBUG=1 is read at import, the library logs to the real stderr."""
    fake_hub.token = SENTINEL
    _secret_repos(fake_hub)
    env = dict(os.environ, HF_DEBUG="1", HF_HUB_VERBOSITY="debug", PYTHONPATH=str(ROOT))
    args = CLI_ARGS + ["--endpoint", fake_hub.url] + _token_args("flag", env)
    run = subprocess.run([sys.executable, "-c", "from hfkv.commands.cli import entry; entry()", *args],
                         capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    _check_cli_run(fake_hub, run.returncode, run.stdout, run.stderr)
    assert "(authenticated: True)" in run.stderr and "authorization: <TOKEN>" in run.stderr  # debug log did run


@pytest.mark.parametrize("source", ["flag", "HF_TOKEN", "token-file"])
def test_token_never_printed_by_the_cli_with_debug_logging(source, fake_hub, debug_logs, capfd, monkeypatch):
    from click.testing import CliRunner
    from huggingface_hub import constants

    from hfkv.commands.cli import main

    fake_hub.token = SENTINEL
    _secret_repos(fake_hub)
    env = dict(os.environ)
    args = CLI_ARGS + ["--endpoint", fake_hub.url] + _token_args(source, env)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", False)
    if "HF_TOKEN" in env:
        monkeypatch.setenv("HF_TOKEN", env["HF_TOKEN"])
    result = CliRunner().invoke(main, args)
    _check_cli_run(fake_hub, result.exit_code, result.stdout, result.stderr)
    out, err = capfd.readouterr()
    assert SENTINEL not in out + err
    assert any("authenticated: True" in line for line in debug_logs)
    assert not [line for line in debug_logs if SENTINEL in line]


@pytest.fixture
def debug_logs() -> Iterator[list[str]]:
    """huggingface_hub at DEBUG with HF_DEBUG curl lines, and hfkv at DEBUG; yields the formatted lines."""
    from huggingface_hub import constants
    from huggingface_hub.utils import logging as hf_logging

    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Keep()
    loggers = [logging.getLogger("huggingface_hub"), logging.getLogger("hfkv")]
    levels = [lg.level for lg in loggers]
    old_debug = constants.HF_DEBUG
    constants.HF_DEBUG = True
    hf_logging.set_verbosity_debug()
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    try:
        yield lines
    finally:
        constants.HF_DEBUG = old_debug
        for lg, level in zip(loggers, levels):
            lg.removeHandler(handler)
            lg.setLevel(level)


def _texts(err: BaseException) -> str:
    """Everything an exception can print: str, repr, the formatted traceback and its whole chain."""
    parts = [str(err), repr(err), "".join(traceback.format_exception(err))]
    seen = err.__cause__ or err.__context__
    while seen is not None:
        parts += [str(seen), repr(seen)]
        seen = seen.__cause__ or seen.__context__
    return "\n".join(parts)


def _failures(hub: Any) -> list[tuple[str, str]]:
    """(repo, expected kind) for failing requests made with SENTINEL as the token."""
    hub.token = "hf_theOtherValidToken12345678"
    hub.ungranted_tokens.add(SENTINEL)
    hub.add_model("org/gated", {"config.json": CONFIG}, gated="manual")
    hub.add_model("org/limited", {"config.json": CONFIG})
    hub.faults["org/limited"] = Fault(status=429, headers={"Retry-After": "3"})
    hub.add_model("org/down", {"config.json": CONFIG})
    hub.faults["org/down"] = Fault(status=503, message="down")
    hub.add_model("org/reset", {"config.json": CONFIG})
    hub.faults["org/reset"] = Fault(kind="reset")
    hub.add_model("org/echo", {"config.json": CONFIG})  # a misbehaving mirror echoing the credentials back
    hub.faults["org/echo"] = Fault(status=400, message=f"bad request from Bearer {SENTINEL}")
    return [("org/gated", "gated"), ("org/absent", "not-found"), ("org/limited", "rate-limited"),
            ("org/down", "hub-error"), ("org/reset", "network"), ("org/echo", "hub-error")]


def test_token_never_in_exceptions_or_debug_logs(fake_hub, hub_cache, no_sleep, debug_logs, capfd):
    client = HubClient(endpoint=fake_hub.url, cache_dir=hub_cache, token=SENTINEL)
    for repo, kind in _failures(fake_hub):
        with pytest.raises(SourceError) as caught:
            client.load_config(repo)
        assert caught.value.kind == kind, str(caught.value)
        assert SENTINEL not in _texts(caught.value), repo
        assert client.weights(repo) is None or repo == "org/gated"
    assert "<token>" in str(caught.value)  # the echoed credential was redacted from the server's message
    assert all(e["auth"] == SENTINEL for e in fake_hub.log)  # ... and it was really sent
    assert any("authenticated: True" in line for line in debug_logs)
    assert any("curl" in line for line in debug_logs)  # HF_DEBUG curl lines were produced
    assert not [line for line in debug_logs if SENTINEL in line]
    out, err = capfd.readouterr()
    assert SENTINEL not in out and SENTINEL not in err


def test_rejected_token_from_environment_not_in_exception(fake_hub, hub_cache, monkeypatch, debug_logs):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", False)
    monkeypatch.setenv("HF_TOKEN", SENTINEL)  # not the fake's token: rejected with 401
    with pytest.raises(SourceError) as caught:
        HubClient(endpoint=fake_hub.url, cache_dir=hub_cache).load_config("meta-llama/Llama-2-7b-hf")
    assert caught.value.kind == "hub-error" and "token was rejected" in caught.value.message
    assert SENTINEL not in _texts(caught.value)
    assert [e["auth"] for e in fake_hub.log] == [SENTINEL]
    assert not [line for line in debug_logs if SENTINEL in line]


def test_token_not_in_client_repr(fake_hub, hub_cache):
    client = HubClient(endpoint=fake_hub.url, cache_dir=hub_cache, token=SENTINEL)
    assert SENTINEL not in repr(client) and "token=explicit" in repr(client)
    assert SENTINEL not in repr(client.api) and SENTINEL not in str(vars(client).get("_api"))


def test_token_file_is_used_and_not_leaked(fake_hub, hub_cache, monkeypatch, isolated_hub_env):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", False)
    Path(constants.HF_TOKEN_PATH).write_text(SENTINEL)
    fake_hub.token = SENTINEL
    fake_hub.add_model("org/gated-secret", {"config.json": CONFIG}, gated="manual")
    loaded = HubClient(endpoint=fake_hub.url, cache_dir=hub_cache).load_config("org/gated-secret")
    assert loaded.data == CONFIG and [e["auth"] for e in fake_hub.log] == [SENTINEL]


# -- remote code --------------------------------------------------------------------------------------------


def test_auto_map_config_is_read_as_data_and_module_never_fetched(fake_hub, hub_client, tmp_path):
    marker = tmp_path / "imported.marker"
    trap = f"open({str(marker)!r}, 'w').write('remote code ran')\nclass DeepseekV3Config: pass\n"
    config = (ROOT / "fixtures/moonshotai__Kimi-K2-Instruct/config.json").read_bytes()
    assert b"configuration_deepseek.DeepseekV3Config" in config  # the auto_map points at the trap
    fake_hub.add_model("trap/kimi", {"config.json": config, "configuration_deepseek.py": trap,
                                     "modeling_deepseek.py": trap})

    report = hfkv.inspect("trap/kimi", hub=hub_client, kv_cache_dtype="bf16")
    # MLA latent per layer: 61 layers × (kv_lora_rank 512 + rope 64) × 2 bytes (bf16) = 70272
    assert report.alpha_bytes_per_token == 61 * (512 + 64) * 2 == 70272
    assert any("auto_map" in note for note in report.notes)
    # The config, and the weights' safetensors metadata (an API request, then the files' headers): no module.
    assert [e["file"] for e in fake_hub.requests("trap/kimi")][0] == "config.json"
    assert {e["file"] for e in fake_hub.requests("trap/kimi")} <= {"config.json", "model.safetensors.index.json",
                                                                 "model.safetensors", None}
    assert not any(str(e["path"]).endswith(".py") for e in fake_hub.log)
    assert not marker.exists()
    assert "configuration_deepseek" not in sys.modules


def test_load_config_never_passes_trust_remote_code():
    source = (ROOT / "hfkv" / "sources" / "hub.py").read_text()
    assert "trust_remote_code=True" not in source and "snapshot_download" not in source


# -- item 8: secrets of any shape ------------------------------------------------------------------


def client(hub, cache: str, **kwargs) -> HubClient:
    return HubClient(endpoint=hub.url, cache_dir=cache, **kwargs)


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
