"""The page as a public service: the Gradio app of ``hfkv serve`` (hfkv.commands.serve_app), served in this
process against the fake Hub, and ``hfkv serve`` itself in subprocesses.

Each test is a finding about Gradio's defaults or the old page, and fails without its fix: a URL fetched
on a visitor's behalf (``/gradio_api/file=<url>``, a ``FileData`` naming a URL), a traceback in the log,
uploads kept, an upload limit above hfkv's own, the token kept in Gradio's session state, one request at a
time, a busy port reported as an internal error, Gradio rewriting its stubs on every start.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import pytest

from fakehub import Fault
from hfkv.commands.serve_access import Settings
from webkit import call_api, file_data, free_port, get, result, upload, values

pytestmark = pytest.mark.skipif(importlib.util.find_spec("gradio") is None,
                                reason="gradio is not installed (pip install -e '.[app]')")
LLAMA_CONFIG = (Path(__file__).resolve().parents[2] / "fixtures" / "meta-llama__Meta-Llama-3.1-8B" / "config.json")
VISITOR = "hf_VisitorTokenOfTheServerTest0123"
MIB = 1 << 20


@pytest.fixture(scope="module")
def page(fake_hub_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """The page's app (what ``hfkv serve`` launches, with its launch options), in this process."""
    temp = tmp_path_factory.mktemp("gradio-temp")
    patch = pytest.MonkeyPatch()
    patch.setenv("GRADIO_TEMP_DIR", str(temp))
    import hfkv.commands.serve_app as web
    from hfkv.commands.serve_app import build_app, launch_options

    patch.setattr(web, "SWEEP_SECONDS", 0.5)
    settings = Settings(endpoint=fake_hub_server.url, concurrency=2, deadline=20)
    app = build_app(settings)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
               **launch_options(settings))
    try:
        yield SimpleNamespace(url=f"http://127.0.0.1:{port}/", app=app, temp=temp)
    finally:
        app.close()
        patch.undo()


@pytest.fixture
def fetches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every URL Gradio would fetch for a visitor (its SSRF-checked download and stream paths), recorded
    instead of fetched."""
    import gradio.processing_utils as processing
    import safehttpx

    seen: list[str] = []

    async def validate(hostname: str, *args: Any, **kwargs: Any) -> str:
        seen.append(hostname)
        raise ValueError("recorded, not fetched")

    async def download(url: str, *args: Any, **kwargs: Any) -> str:
        seen.append(url)
        raise ValueError("recorded, not fetched")

    monkeypatch.setattr(safehttpx, "async_validate_url", validate)
    monkeypatch.setattr(processing, "async_ssrf_protected_download", download)
    return seen


def test_file_route_fetches_no_url(page, fetches):
    """``/gradio_api/file=<url>`` makes Gradio fetch the URL and stream it back (an open proxy to any public
    address); the page answers 403 first."""
    for target in ("https://example.com/x.json", "http://example.com/", "HTTPS://EXAMPLE.COM/",
                   "https:%2F%2Fexample.com/x", "//example.com/x"):
        for prefix in ("gradio_api/file=", "gradio_api/file/", "gradio_api/proxy="):
            status, body = get(page.url + prefix + target)
            assert status == 403 and b"fetches no URL" in body, (prefix, target, status, body[:200])
    assert fetches == []


def test_a_file_given_as_a_url_is_refused_without_a_traceback(page, fetches, capfd):
    """A ``FileData`` naming a URL, in the file box or in any other field, is refused before Gradio would
    download it into its cache (and print a traceback when that fails)."""
    capfd.readouterr()
    url = "https://example.com/config.json"
    for data in ([file_data(url), ""] + values(model="a/b"),
                 [None, ""] + values(model=file_data(url)),
                 [{"path": "/etc/hostname", "meta": {"_type": "gradio.FileData"}}, ""] + values(),
                 [{"url": url, "path": "x", "meta": {"_type": "gradio.FileData"}}, ""] + values()):
        answer = call_api(page.url, "report", data)
        assert answer.startswith("HTTP 400") and "uploads only" in answer, answer[:300]
    status, paths = upload(page.url, "notes.txt", b"hello")
    answer = call_api(page.url, "report", [file_data(paths[0]), ""] + values())
    assert answer.startswith("event: error") and "drop a .json file" in answer
    assert fetches == []
    log = capfd.readouterr()
    assert "Traceback" not in log.out + log.err


def test_gradios_own_input_checks_are_one_line_in_the_log(page, capfd):
    """A value Gradio's own checks refuse (not among a dropdown's choices, a number that is not one, too few
    values, a file that is no file's description, an event or API name the page does not have) printed a
    traceback to the server's log (two, chained, for a field), with the visitor's value in it. Now: one
    line in the log naming the field, never the value, and one line for the visitor."""
    from webkit import post

    capfd.readouterr()
    odd = "Zq9-not-a-choice"
    refused = {"GPU preset": values(gpu=odd), "TP (tensor parallel)": values(tp=odd), "engines": values(plan_engine=odd),
               "KV dtype": values(kv_cache_dtype=[odd])}
    for field, data in refused.items():
        answer = call_api(page.url, "report", [None, ""] + data)
        assert answer.startswith("event: error") and f'"{field}: not a value this field takes"' in answer, answer[:300]
    answer = call_api(page.url, "report", [None, ""])
    assert '"the request has fewer values than the page has fields"' in answer, answer[:300]
    answer = call_api(page.url, "report", [odd, ""] + values())
    assert "the request's values are not the page's fields (ValidationError)" in answer, answer[:300]
    for path, body in (("gradio_api/call/" + odd, {"data": []}),
                       ("gradio_api/queue/join", {"data": [], "fn_index": 999, "session_hash": odd})):
        status, text = post(page.url + path, json.dumps(body).encode())
        assert (status, text) == (500, b'{"error": "hfkv: the page could not take this request"}')
    log = capfd.readouterr()
    lines = (log.out + log.err).splitlines()
    assert "Traceback" not in log.out + log.err and odd not in log.out + log.err
    assert sum(line.startswith("hfkv: refused a request (") for line in lines) == len(refused) + 4, lines


def test_upload_is_deleted_once_read(page, fake_hub):
    status, paths = upload(page.url, "config.json", LLAMA_CONFIG.read_bytes())
    assert status == 200 and Path(paths[0]).is_file() and Path(paths[0]).is_relative_to(page.temp)
    html, text, box = result(call_api(page.url, "report", [file_data(paths[0]), ""] + values()))
    assert json.loads(text)["alpha_bytes_per_token"] == 131072  # 32 × 2 × 8 × 128 × 2
    assert not Path(paths[0]).exists() and not Path(paths[0]).parent.exists()
    assert paths[0] not in page.app.upload_file_set
    # Gradio's file box leaves an empty temporary file behind for every file it passes on: not here.
    assert [p for p in page.temp.rglob("*") if p.is_file()] == []
    assert str(page.temp) not in html and "<server path>" not in html  # named as dropped: config.json
    assert "hfkv config.json" in html and box is None  # the file box is emptied
    html, *_ = result(call_api(page.url, "report", [file_data(paths[0]), ""] + values()))
    assert "hfkv: error: config.json: an upload is read once, then deleted: drop the file again" in html


def test_compare_uploads_are_read_then_deleted(page, fake_hub):
    """The Compare tab's file box takes several files; each is read, then deleted, and the box emptied.
    A file that is not JSON is refused in one line and every file of that box deleted at once."""
    qwen = LLAMA_CONFIG.parents[1] / "Qwen__Qwen2.5-7B" / "config.json"
    paths = [upload(page.url, "config.json", path.read_bytes())[1][0] for path in (LLAMA_CONFIG, qwen)]
    data = [[file_data(p) for p in paths], ""] + values()
    html, text, box = result(call_api(page.url, "compare", data))
    # α: Llama 32 × 8 × 128 × 2 × 2 = 131,072 B; Qwen2.5-7B 28 × 4 × 128 × 2 × 2 = 57,344 B.
    assert [m["alpha_bytes_per_token"] for m in json.loads(text)["models"]] == [131072, 57344]
    assert "hfkv compare config.json config-2.json" in html and box is None
    assert not any(Path(p).exists() for p in paths) and [p for p in page.temp.rglob("*") if p.is_file()] == []
    assert str(page.temp) not in html + text
    good = upload(page.url, "config.json", LLAMA_CONFIG.read_bytes())[1][0]
    bad = upload(page.url, "notes.txt", b"hello")[1][0]
    answer = call_api(page.url, "compare", [[file_data(good), file_data(bad)], ""] + values(compare="a/b"))
    assert answer.startswith("event: error") and "drop a .json file" in answer
    assert not Path(good).exists() and not Path(bad).exists()


def test_upload_limit_is_hfkvs_own(page):
    """Gradio refuses an upload past hfkv's 32 MiB config limit (the old page allowed 64 MiB): exactly
    32 MiB is taken, one byte more is not."""
    from hfkv.sources import MAX_CONFIG_BYTES

    assert MAX_CONFIG_BYTES == 32 * MIB
    status, paths = upload(page.url, "config.json", b" " * MAX_CONFIG_BYTES)
    assert status == 200
    os.remove(paths[0])
    status, text = upload(page.url, "config.json", b" " * (MAX_CONFIG_BYTES + 1))
    assert status == 413 and "maximum allowed size" in str(text)


def test_the_token_is_not_kept_in_a_session(page, fake_hub):
    """Gradio keeps each session's last inputs in memory; the page drops its sessions, so the token box's
    value lives as long as its request."""
    fake_hub.add_fixture("org/private-web", folder="meta-llama__Meta-Llama-3.1-8B", private=True)
    fake_hub.token = VISITOR
    html, *_ = result(call_api(page.url, "report", [None, VISITOR] + values(model="org/private-web")))
    assert "131,072 B (128.00 KiB)" in html and VISITOR not in html
    holder = page.app.state_holder
    kept = repr([(s.config_values, s.state_data) for s in holder.session_data.values()])
    assert VISITOR not in kept
    from hfkv import text

    assert VISITOR not in text._SECRETS


def test_requests_are_served_concurrently(page, fake_hub):
    """Two requests that each wait 1.5 s on the Hub take about 1.5 s together (concurrency 2), not 3 s."""
    for name in ("org/slow-a", "org/slow-b"):
        fake_hub.add_fixture(name, folder="meta-llama__Meta-Llama-3.1-8B")
        fake_hub.faults[name] = Fault(kind="slow", delay=1.5, where="resolve", file="config.json")
    result(call_api(page.url, "report", [None, ""] + values(model="meta-llama/Meta-Llama-3.1-8B")))  # warm: imports
    answers: list[str] = []
    threads = [threading.Thread(target=lambda n=name: answers.append(call_api(page.url, "report",
                                                                              [None, ""] + values(model=n))))
               for name in ("org/slow-a", "org/slow-b")]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    took = time.monotonic() - start
    assert len(answers) == 2 and all("131,072 B" in a for a in answers) and took < 2.8, took


def test_finished_sessions_are_forgotten(page):
    """Gradio keeps two entries per session in its queue and never removes them once a result is
    delivered (a new session per API call: 3.6 kB a request, for ever); the page sweeps them."""
    queue = page.app._queue
    for k in range(20):
        result(call_api(page.url, "report", [None, ""] + values(model=f"nobody/missing-{k}")))
    time.sleep(1.5)
    assert len(queue.pending_event_ids_session) == 0 and len(queue.pending_messages_per_session) == 0


def test_no_run_history_mcp_or_ssr(page):
    """Gradio's run history keeps every input (the token box too) in the browser and can upload runs to a
    Hub bucket: off, like MCP, SSR and monitoring."""
    status, body = get(page.url + "config")
    config = json.loads(body)
    assert status == 200 and config["run_history"] is False and not config.get("mcp_server")
    assert config["max_file_size"] == 32 * MIB


# -- hfkv serve ---------------------------------------------------------------------------------------


def test_busy_port_is_one_line():
    """A port in use is one line, before Gradio is imported (it was "internal error (OSError: Cannot find
    empty port in range…)" after a 3 s import)."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        start = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "hfkv", "serve", "--port", str(port)], capture_output=True,
                             text=True, timeout=60)
        took = time.monotonic() - start
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == (f"hfkv: error: port {port} on 127.0.0.1 is already in use; stop what listens there or "
                          "pick another with --port\n")
    assert took < 2.0, took


def test_sigterm_stops_the_page_and_removes_its_folder(tmp_path):
    """docker stop, systemd and a Space's restart send SIGTERM: the page stops as for Ctrl-C and removes
    its temporary folder (Python's default ended the process at once, leaving hfkv-serve-* behind)."""
    import signal

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADIO_", "HF_"))}
    env.update(TMPDIR=str(tmp_path), HF_HOME=str(tmp_path / "hf"))
    proc = subprocess.Popen([sys.executable, "-m", "hfkv", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killer = threading.Timer(60, proc.kill)  # a page that never says it serves fails, not hangs
    killer.start()
    try:
        line = proc.stderr.readline()  # printed once the page answers
        assert line == f"hfkv: serving the calculator page on http://127.0.0.1:{port}/ (Ctrl-C stops it)\n"
        assert [p.name[:11] for p in tmp_path.iterdir() if p.name.startswith("hfkv-")] == ["hfkv-serve-"]
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        killer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("hfkv-serve-")]


def test_sigterm_during_requests_leaves_no_folder(fake_hub, tmp_path):
    """SIGTERM while requests wait on the Hub left their ``hfkv-page-*`` cache folders behind (the process
    ended with their threads mid-request). Each request's cache is now in the server's own folder, removed
    at the stop after the requests' workers are killed: nothing is left, and the stop is quick."""
    import signal

    from webkit import server_env

    for name in ("a", "b", "c"):
        fake_hub.add_fixture(f"org/slow-{name}", folder="meta-llama__Meta-Llama-3.1-8B")
        fake_hub.faults[f"org/slow-{name}"] = Fault(kind="slow", delay=40.0, where="resolve", file="config.json")
    port = free_port()
    env = server_env(fake_hub.url, tmp_path / "hf", TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "hfkv", "serve", "--port", str(port), "--deadline", "60"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    killer = threading.Timer(90, proc.kill)
    killer.start()
    try:
        assert proc.stderr.readline().startswith("hfkv: serving the calculator page")
        url = f"http://127.0.0.1:{port}/"
        for name in ("a", "b", "c"):
            threading.Thread(target=call_api, args=(url, "report", [None, ""] + values(model=f"org/slow-{name}")),
                             daemon=True).start()
        end = time.monotonic() + 30
        while len(fake_hub.requests(file="config.json")) < 3 and time.monotonic() < end:
            time.sleep(0.05)
        assert len(fake_hub.requests(file="config.json")) == 3  # the three requests wait on the Hub
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        took = time.monotonic() - start
    finally:
        killer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("hfkv-")) == []
    assert proc.returncode == 0 and took < 5, took  # Gradio's close waited 5 s for the requests in flight


def test_serve_binds_what_it_is_told(monkeypatch):
    import hfkv.commands.serve_app as web
    from hfkv.commands.serve import serve_command
    from click.testing import CliRunner

    launched: list[dict] = []
    built: list[Settings] = []

    class App:
        def launch(self, **options: Any) -> None:
            launched.append(options)

        def block_thread(self) -> None:
            pass

    monkeypatch.setattr(web, "import_gradio", lambda lean=False: None)
    monkeypatch.setattr(web, "build_app", lambda settings: built.append(settings) or App())
    port = free_port()
    first = CliRunner().invoke(serve_command, ["--port", str(port)])
    assert first.exit_code == 0 and first.stdout == ""
    assert first.stderr == f"hfkv: serving the calculator page on http://127.0.0.1:{port}/ (Ctrl-C stops it)\n"
    assert CliRunner().invoke(serve_command, ["--host", "0.0.0.0", "--port", str(port), "--allow-private-repos",
                                              "--concurrency", "8", "--deadline", "12"]).exit_code == 0
    assert [(o["server_name"], o["server_port"]) for o in launched] == [("127.0.0.1", port), ("0.0.0.0", port)]
    assert launched[0]["max_file_size"] == 32 * MIB and launched[0]["share"] is False and launched[0]["quiet"]
    assert launched[0]["run_history"] is False and launched[0]["mcp_server"] is False
    assert (built[0].allow_private, built[0].concurrency, built[0].deadline) == (False, 4, 30.0)
    assert (built[1].allow_private, built[1].concurrency, built[1].deadline) == (True, 8, 12.0)
    assert CliRunner().invoke(serve_command, ["--port", "0"]).exit_code == 2  # a usage error, one line


def test_gradio_keeps_the_timings_of_a_few_events_only(page, monkeypatch):
    """Gradio's queue kept every event's timings up to 10,000 (~0.7 kB each: RSS +7.4% over 10,000
    requests); the page's queue keeps 256, and an operator's GRADIO_ANALYTICS_MAX_EVENTS wins."""
    import hfkv.commands.serve_app as web

    for _ in range(3):
        result(call_api(page.url, "report", [None, ""] + values(model="nobody/missing")))
    queue = page.app._queue
    assert queue.ANALYTICS_MAX_EVENTS == web.ANALYTICS_EVENTS == 256 and 0 < len(queue.event_analytics) <= 256
    monkeypatch.setenv("GRADIO_ANALYTICS_MAX_EVENTS", "50")
    web.import_gradio()
    assert os.environ["GRADIO_ANALYTICS_MAX_EVENTS"] == "50"


def test_serve_without_gradio_is_one_line(monkeypatch):
    import hfkv.commands.serve_app as web
    from hfkv.commands.serve import serve_command
    from click.testing import CliRunner

    def missing(lean: bool = False) -> None:
        raise ImportError("No module named 'gradio'")

    monkeypatch.setattr(web, "import_gradio", missing)
    result_ = CliRunner().invoke(serve_command, ["--port", str(free_port())])
    # hfkv is not on the package index yet: the command that works is the checkout's, as the README says
    assert result_.exit_code == 2 and result_.stderr == (
        "hfkv: error: the web page needs the app extra (Gradio): pip install -e '.[app]' in a checkout of hfkv "
        "(pip install 'hfkv[app]' once hfkv is released)\n")


def test_gradio_starts_without_rewriting_its_stubs():
    """Gradio parses every component's source and rewrites its .pyi stub on each import (most of its
    import time, and a write into the installed package); the server imports it without that, and
    without IPython."""
    code = ("import sys; from hfkv.commands.serve_app import import_gradio; gr = import_gradio(lean=True); "
            "import gradio.component_meta as m; print(m.create_or_modify_pyi(None, 'x', []), "
            "'IPython' in sys.modules and sys.modules['IPython'] is not None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["None", "False"], out.stderr[-2000:]
