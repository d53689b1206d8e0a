"""Shared fixtures. Their names are stable: scan, watch and hub tests rely on them.

``fake_hub_server`` (session)
    The running ``tests.fakehub.FakeHub`` on 127.0.0.1 (port 0). Any ``fixtures/<org>__<name>/config.json``
    is served as repo ``org/name`` without being added. Prefer ``fake_hub`` in tests.
``fake_hub`` (function)
    The same server, with its request log, faults, aliases and token reset before and after the test;
    repos a test adds are removed afterwards. ``fake_hub.url``, ``fake_hub.add_model(...)``,
    ``fake_hub.faults[repo] = Fault(...)``, ``fake_hub.requests(repo)``, ``fake_hub.calls(repo)``,
    ``fake_hub.commit(repo)``, ``fake_hub.token`` (the one accepted token, default ``hf_valid``).
``hub_cache`` (function)
    An empty Hugging Face cache folder (str) for this test.
``hub_client`` (function)
    ``hfkv.sources.hub.HubClient(endpoint=fake_hub.url, cache_dir=hub_cache)``, no token.
``no_sleep`` (function)
    huggingface_hub's retry/backoff sleeps return at once; the fixture is the list of requested waits.
    Use it when a test must go through the library's retries (429/5xx/connection errors on an uncached
    file take ~23 s otherwise, docs/hub.md §1).
``isolated_hub_env`` (autouse, function)
    Keeps every test away from the real Hub, the developer's token and cache: HF_HOME, HF_HUB_CACHE and
    the token paths point into tmp; HF_TOKEN/HUGGING_FACE_HUB_TOKEN/HF_ENDPOINT/HF_HUB_OFFLINE are
    removed; telemetry off and implicit tokens off; huggingface_hub's default endpoint is a closed
    local port, so a forgotten ``endpoint=`` fails instead of reaching huggingface.co.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `import fakehub` from any test file

from fakehub import NOWHERE, FakeHub  # noqa: E402



@pytest.fixture(scope="session")
def fake_hub_server() -> Iterator[FakeHub]:
    hub = FakeHub()
    with hub.running():
        yield hub


@pytest.fixture
def fake_hub(fake_hub_server: FakeHub) -> Iterator[FakeHub]:
    hub = fake_hub_server
    before = set(hub.repos)
    default_token = hub.token
    hub.reset()
    yield hub
    hub.reset()
    hub.token = default_token
    with hub._lock:
        for repo_id in set(hub.repos) - before:
            del hub.repos[repo_id]


@pytest.fixture
def hub_cache(tmp_path: Path) -> str:
    path = tmp_path / "hf-cache"
    path.mkdir()
    return str(path)


@pytest.fixture
def hub_client(fake_hub: FakeHub, hub_cache: str) -> Any:
    from hfkv.sources.hub import HubClient

    return HubClient(endpoint=fake_hub.url, cache_dir=hub_cache)


class _InstantTime:
    """``time`` as huggingface_hub sees it, except that ``sleep`` only records the wait."""

    def __init__(self, waits: list[float]) -> None:
        self._waits = waits

    def sleep(self, seconds: float) -> None:
        self._waits.append(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    import huggingface_hub.file_download as file_download
    import huggingface_hub.utils._http as http

    waits: list[float] = []
    monkeypatch.setattr(http, "time", _InstantTime(waits))
    monkeypatch.setattr(file_download, "time", _InstantTime(waits))
    return waits


@pytest.fixture(autouse=True)
def isolated_hub_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from huggingface_hub import constants

    home = tmp_path_factory.mktemp("hf-home")
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
                 "HF_OIDC_RESOURCE", "HF_DEBUG", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    env = {
        "HF_HOME": str(home), "HF_HUB_CACHE": str(home / "hub"), "HF_TOKEN_PATH": str(home / "token"),
        "HF_STORED_TOKENS_PATH": str(home / "stored_tokens"), "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # The library read these at import; patch the module values it actually uses.
    patches = {
        "HF_HOME": str(home), "HF_HUB_CACHE": str(home / "hub"), "HF_TOKEN_PATH": str(home / "token"),
        "HF_STORED_TOKENS_PATH": str(home / "stored_tokens"), "HF_HUB_DISABLE_TELEMETRY": True,
        "HF_HUB_DISABLE_IMPLICIT_TOKEN": True, "HF_HUB_OFFLINE": False, "HF_DEBUG": False,
        "ENDPOINT": NOWHERE, "HUGGINGFACE_CO_URL_TEMPLATE": NOWHERE + "/{repo_id}/resolve/{revision}/{filename}",
    }
    for name, value in patches.items():
        if hasattr(constants, name):
            monkeypatch.setattr(constants, name, value)
    return home
