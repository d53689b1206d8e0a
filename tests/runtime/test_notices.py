"""A Hub that cannot be reached is said within 2 s at a terminal (issue 23): a retry is announced when
huggingface_hub decides it, a request without an answer after 2 s is noted; before, 23 s (connection
refused) to 83 s (no answer) of silence, then one error line. Scripts (stderr not a terminal) and
library users keep the one line."""

from __future__ import annotations

import logging
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from fakehub import NOWHERE
from fakehub import Fault
from hfkv.commands.cli import main
from hfkv.runtime import notices
from hfkv.sources.hub import HubClient

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def heard(monkeypatch) -> list[tuple[float, str]]:
    """Notices on: each line with the time it was written. The library's logger is put back afterwards
    (``install`` sets it up once per process, as the command line does)."""
    lines: list[tuple[float, str]] = []
    logger = logging.getLogger("huggingface_hub.utils._http")
    saved = (list(logger.handlers), logger.propagate, logger.level)
    monkeypatch.setattr(notices, "_installed", False)
    monkeypatch.setattr(notices, "enabled", True)
    monkeypatch.setattr(notices, "_write", lambda line: lines.append((time.monotonic(), line)))
    monkeypatch.setattr(notices, "_said", {})
    yield lines
    logger.handlers[:], logger.propagate = saved[0], saved[1]
    logger.setLevel(saved[2])  # and the loggers' cached answers are cleared


def test_a_refused_connection_announces_the_retry_at_once(heard, hub_cache, no_sleep):
    client = HubClient(endpoint=NOWHERE, cache_dir=hub_cache, retries=2)
    started = time.monotonic()
    with pytest.raises(Exception):
        client.load_config("org/model")
    assert heard, "silence until the error"
    at, line = heard[0]
    assert at - started < 2.0
    assert line == "hfkv: note: 127.0.0.1:9 did not answer (connection refused); trying again in 1 s (retry 1 of 2)\n"
    assert len(heard) == 1  # the second retry, within REPEAT_SECONDS, is not said again


def test_a_request_without_an_answer_is_noted_after_2_s(heard, fake_hub, hub_cache):
    fake_hub.faults["org/slow"] = Fault(kind="slow", delay=3.0, where="resolve")
    fake_hub.add_model("org/slow", {"config.json": (ROOT / "fixtures" / "Qwen__Qwen3-8B" / "config.json").read_bytes()})
    client = HubClient(endpoint=fake_hub.url, cache_dir=hub_cache, timeout=10)
    started = time.monotonic()
    client.load_config("org/slow")  # answers after 3 s
    assert len(heard) == 1
    at, line = heard[0]
    assert 2.0 <= at - started < 2.9
    assert line.startswith(f"hfkv: note: no answer from {client.host} after 2 s; still trying (each try ends "
                           "after 10 s, 5 retries)")


def test_a_quick_answer_says_nothing(heard, fake_hub, hub_cache):
    HubClient(endpoint=fake_hub.url, cache_dir=hub_cache).load_config("Qwen/Qwen3-8B")
    time.sleep(0.3)
    assert heard == []


def test_notices_are_off_for_the_library_and_for_scripts(fake_hub, no_sleep, tmp_path, capsys):
    assert notices.enabled is False  # import hfkv: nothing on stderr
    result = CliRunner().invoke(main, ["org/model", "--endpoint", NOWHERE, "--format", "json"])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1  # stderr not a terminal: the one line
    assert result.stderr.startswith("hfkv: error: org/model: cannot reach the Hub at 127.0.0.1:9")


def test_a_429_wait_is_announced(heard, fake_hub, hub_cache, no_sleep):
    fake_hub.faults["Qwen/Qwen3-8B"] = Fault(status=429, headers={"Retry-After": "3"}, where="resolve", times=1)
    HubClient(endpoint=fake_hub.url, cache_dir=hub_cache).load_config("Qwen/Qwen3-8B")
    assert [line for _, line in heard] == [
        f"hfkv: note: rate-limited by {fake_hub.url.split('://')[1]} (HTTP 429); trying again in 4 s (retry 1 of 5)\n"]


def test_at_a_terminal_the_command_says_so_within_2_s_of_its_first_request():
    """The real command with stderr on a pseudo-terminal, against a port where nothing listens."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HOME=str(Path(os.environ["HF_HOME"])), HF_HUB_DISABLE_TELEMETRY="1")
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "hfkv", "org/model", "--endpoint", NOWHERE, "--format", "json"],
                               stdout=subprocess.PIPE, stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    started, text = time.monotonic(), ""
    try:
        while "hfkv: note:" not in text and time.monotonic() - started < 15:
            if select.select([master], [], [], 0.2)[0]:
                text += os.read(master, 4096).decode()
        waited = time.monotonic() - started
    finally:
        process.kill()
        process.wait()
        os.close(master)
    assert "hfkv: note: 127.0.0.1:9 did not answer (connection refused); trying again in 1 s (retry 1 of 5)" in text
    assert waited < 5.0  # process start and imports included; the retries alone take 23 s
    assert "http://" not in text  # the host is named, never a URL

