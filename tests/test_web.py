"""The calculator page (hfkv.commands.serve): its logic without a browser, then the real page in headless Chromium.

The browser tests start ``hfkv serve`` (``serve_command``) in a subprocess against the fake Hub, drive
Debian's Chromium through Selenium, compare every figure shown with the JSON report built here, save
screenshots under /tmp (hfkv-web-*.png) and check that the page fetched nothing but 127.0.0.1. They
skip with the reason when gradio, selenium or the browser is missing (``pip install 'hfkv[app]'
selenium``; ``apt-get install chromium chromium-driver``). Expected figures are derived by hand beside
each assertion, or taken from the engine modes' JSON (themselves checked against the engines).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

import hfkv
from hfkv.units import exact_bytes
from hfkv.planning.enrich import enrich
from hfkv.sources.hub import HubClient
from hfkv.commands.serve import MISSING_EXTRA, Form, compare_page, report_page
from test_html import ALLOWED_TAGS, parse

GIB = 2**30
LLAMA = "meta-llama/Meta-Llama-3.1-8B"
DEEPSEEK = "deepseek-ai/DeepSeek-V3.2"
SENTINEL = "hf_SentinelTokenNeverShown0123456789"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SHOTS = Path("/tmp")
SPACE = Path(__file__).resolve().parents[1] / "space"
HOSTILE = {
    "model_type": "<img src=x onerror=alert(1)>", "architectures": ["<script>alert(2)</script>"],
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 256,
    "torch_dtype": "bfloat16", "max_position_embeddings": 4096, "<svg onload=alert(3)>": 1,
}


@pytest.fixture
def client(fake_hub: Any, hub_cache: str) -> HubClient:
    return HubClient(endpoint=fake_hub.url, cache_dir=hub_cache)


def cells(page: str, field: str) -> list[str]:
    return re.findall(rf'data-field="{re.escape(field)}">([^<]*)<', page)


# -- the page logic, no browser -------------------------------------------------------------------


def test_form_query_round_trip():
    form = Form(model=DEEPSEEK, kv_cache_dtype="fp8", tp=8, dp=2, gpu="H200-141GB", budget="60GiB", contexts="4k,128k")
    query = form.query_string()
    assert query == ("?model=deepseek-ai%2FDeepSeek-V3.2&kv=fp8&tp=8&dp=2&gpu=H200-141GB&budget=60GiB"
                     "&context=4k%2C128k")
    from urllib.parse import parse_qsl

    assert Form.from_query(dict(parse_qsl(query[1:]))) == form
    # DP 2 replicas of TP 8: 16 GPUs of the preset, as the CLI spells it.
    assert form.cli_command() == ("hfkv deepseek-ai/DeepSeek-V3.2 --kv-cache-dtype fp8 --tp 8 --gpu H200-141GB:16 "
                                  "--budget 60GiB --context 4k,128k")
    assert Form().query_string() == ""
    bad = Form.from_query({"tp": "-3", "dp": "x", "kv": "fp7", "nonsense": "1"})
    assert (bad.tp, bad.dp, bad.kv_cache_dtype) == (1, 1, "auto")


@pytest.mark.parametrize("form, line", [
    (Form(model=LLAMA, contexts="abc"), "hfkv: error: cannot read token count 'abc'"),
    (Form(model=LLAMA, budget="lots"), "hfkv: error: cannot read size 'lots'"),
    (Form(model=LLAMA, gpu="H900"), "hfkv: error: unknown GPU 'H900'"),
    (Form(model=LLAMA, kv_cache_dtype="fp7"), "hfkv: error: KV dtype 'fp7' is not one of"),
])
def test_bad_fields_are_one_line(client, form, line):
    html, text = report_page(form, client)
    assert text == "" and f'<p class="error" id="hfkv-error">{line}' in html.replace("&#x27;", "'")


def test_cli_command_is_quoted():
    assert Form(model="a/b", budget="60 GiB; rm -rf ~").cli_command() == "hfkv a/b --budget '60 GiB; rm -rf ~'"


def test_report_figures_equal_the_json(client):
    html, text = report_page(Form(model=LLAMA, budget="60GiB", contexts="4k,128k"), client)
    data = json.loads(text)
    # Llama-3.1-8B: 32 layers × 2 × 8 KV heads × 128 × 2 B = 131,072 B per token.
    assert data["alpha_bytes_per_token"] == 131072
    assert cells(html, "alpha_bytes_per_token") == [exact_bytes(data["alpha_bytes_per_token"])] == ["131,072 B (128.00 KiB)"]
    # 60 GiB / (4096 × 2^17 B) = 120; 60 GiB / (2^17 × 2^17 B) = 3.75 → 3.
    assert cells(html, "max_concurrency") == [f"{c['max_concurrency']:,}" for c in data["contexts"]] == ["120", "3"]
    from hfkv.commands.cli import main

    cli = CliRunner().invoke(main, [LLAMA, "--budget", "60GiB", "--context", "4k,128k", "--format", "json",
                                    "--endpoint", client.endpoint])
    assert json.loads(cli.output) == data  # the command the page shows prints the same JSON
    assert 'href="?model=meta-llama%2FMeta-Llama-3.1-8B&amp;budget=60GiB&amp;context=4k%2C128k"' in html
    assert ">hfkv meta-llama/Meta-Llama-3.1-8B --budget 60GiB --context 4k,128k<" in html


def test_engine_figures_and_refusals(client):
    html, _ = report_page(Form(model=DEEPSEEK, kv_cache_dtype="fp8", tp=8, gpu="H200-141GB"), client)
    # SGLang's fp8 DSA cell: 61 × (656 B packed latent + 132 B indexer) = 48,068 B per token, both engines.
    assert cells(html, "engine.bytes_per_token") == ["48,068", "48,068"]
    whisper, _ = report_page(Form(model="openai/whisper-large-v3"), client)
    assert whisper.count('class="error" data-engine=') == 2 and "cross-attention" in whisper
    assert cells(whisper, "alpha_bytes_per_token")  # the theory figures stand


@pytest.mark.parametrize("typed", ["/etc/passwd", "../fixtures/openai__gpt-oss-120b/config.json",
                                   "fixtures/openai__gpt-oss-120b", "a b/c", ""])
def test_only_hub_repos_are_read(client, typed):
    html, text = report_page(Form(model=typed), client)
    assert text == "" and html.count('class="error"') == 1 and "hfkv: error: " in html
    assert "gpt_oss" not in html  # no server file was read


def test_hub_errors_are_one_line(client, fake_hub):
    fake_hub.add_model("org/gated", {"config.json": {"model_type": "llama"}}, gated="manual")
    html, _ = report_page(Form(model="org/gated"), client)
    assert "hfkv: error: org/gated: " in html and "gated" in html and "Traceback" not in html


def test_upload_goes_through_the_local_reader(tmp_path, client):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(HOSTILE))
    html, text = report_page(Form(model="ignored/when-uploaded"), client, upload=str(path))
    # 2 layers × 2 × 2 KV heads × 64 head_dim × 2 B = 1,024 B per token.
    assert json.loads(text)["alpha_bytes_per_token"] == 1024
    assert {tag for tag, _ in parse(html).tags} <= ALLOWED_TAGS  # no img, script or svg onload: text only
    assert not any(name.startswith("on") for _, attrs in parse(html).tags for name in attrs)
    assert ">hfkv config.json<" in html
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (32 * 1024 * 1024 + 1))
    html, _ = report_page(Form(), client, upload=str(big))
    # The CLI's one line, naming the file as dropped (not the server's temporary path).
    assert ">hfkv: error: big.json: config.json is " in html and "33,554,433" in html and "limit" in html
    assert str(tmp_path) not in html


def test_compare_page(client):
    page = compare_page(Form(compare=f"{LLAMA}, openai/gpt-oss-120b\nnobody/missing", budget="60GiB"), client)
    assert page.count('class="error"') == 1 and "nobody/missing" in page
    assert "Meta-Llama-3.1-8B vs gpt-oss-120b" in page
    # gpt-oss-120b at 4K: 4096 × 36,864 + 4,718,592 = 155,713,536 B → floor(60 GiB / that) = 413; Llama 120.
    assert "<td>4K: B_max in 60.00 GiB</td><td class=\"num\">120</td><td class=\"num\">413</td>" in page
    too_many = compare_page(Form(compare=" ".join(f"org/m{k}" for k in range(9))), client)
    assert "give 2 to 8 Hub repo ids" in too_many


def test_serve_binds_what_it_is_told(monkeypatch):
    import hfkv.commands.serve as web
    from hfkv.render.html import STYLE

    launched: list[dict] = []

    class App:
        def launch(self, **options: Any) -> None:
            launched.append(options)

    monkeypatch.setattr(web, "import_gradio", lambda: None)
    monkeypatch.setattr(web, "build_app", lambda: App())
    assert CliRunner().invoke(web.serve_command, []).exit_code == 0
    assert CliRunner().invoke(web.serve_command, ["--host", "0.0.0.0", "--port", "8080"]).exit_code == 0
    assert [(o["server_name"], o["server_port"]) for o in launched] == [("127.0.0.1", 7860), ("0.0.0.0", 8080)]
    assert launched[0]["css"] == STYLE and launched[0]["share"] is False
    assert CliRunner().invoke(web.serve_command, ["--port", "0"]).exit_code == 2  # a usage error, one line


def test_serve_without_gradio_is_one_line(monkeypatch):
    import hfkv.commands.serve as web

    def missing() -> None:
        raise ImportError("No module named 'gradio'")

    monkeypatch.setattr(web, "import_gradio", missing)
    result = CliRunner().invoke(web.serve_command, ["--port", "7999"])
    assert result.exit_code == 2 and result.output.strip() == f"hfkv: error: {MISSING_EXTRA}"


def test_hfkv_imports_without_gradio():
    code = ("import sys; sys.modules['gradio'] = None; import hfkv, hfkv.commands.serve, hfkv.render.html; "
            "print('gradio' in sys.modules and sys.modules['gradio'] is not None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


# -- the page in a real browser ------------------------------------------------------------------


def _browser_missing() -> str | None:
    for module, hint in (("gradio", "pip install 'hfkv[app]'"), ("selenium", "pip install selenium")):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed ({hint})"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    return None


browser = pytest.mark.skipif(_browser_missing() is not None, reason=str(_browser_missing()))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(hub_url: str, home: Path) -> dict[str, str]:
    """The server's environment: the fake Hub as HF_ENDPOINT, a cache in ``home``, the token only here."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "GRADIO_"))}
    env.update(HF_ENDPOINT=hub_url, HF_HOME=str(home), HF_HUB_CACHE=str(home / "hub"), HF_TOKEN=SENTINEL,
               HF_HUB_DISABLE_TELEMETRY="1", GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
    return env


@contextlib.contextmanager
def running(command: list[str], env: dict[str, str], port: int, log_path: Path) -> Iterator[str]:
    """Run a page server until the block ends; yields its URL once it answers (90 s at most)."""
    url = f"http://127.0.0.1:{port}/"
    with open(log_path, "w+") as log:
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 90
            while True:
                try:
                    urllib.request.urlopen(url, timeout=2).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        pytest.fail(f"{command[1:]} did not start: {log.read()[-2000:]}")
                    time.sleep(0.3)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture(scope="module")
def server(fake_hub_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The Space entry point (``space/app.py``: ``build_app().launch(**launch_options())``, what ``hfkv
    serve`` launches too) in a subprocess against the fake Hub, which accepts only the server's token.
    One Gradio start for every browser test; ``serve_command``'s own part is tested without one."""
    home = tmp_path_factory.mktemp("serve-home")
    token = fake_hub_server.token
    fake_hub_server.token = SENTINEL
    port = _free_port()
    env = server_env(fake_hub_server.url, home) | {"GRADIO_SERVER_PORT": str(port)}  # as Spaces set it
    try:
        with running([sys.executable, str(SPACE / "app.py")], env, port, home / "serve.log") as url:
            yield url
    finally:
        fake_hub_server.token = token


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1800",
                # Any name but 127.0.0.1 fails to resolve: nothing the page asks for can leave the machine.
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    chrome = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    chrome.set_page_load_timeout(60)
    yield chrome
    chrome.quit()


def wait_for(driver: Any, css: str, timeout: float = 60) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: (d.find_elements(By.CSS_SELECTOR, css) or [None])[0])


def wait_until(driver: Any, condition: Any, timeout: float = 60) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def shown(driver: Any, css: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]


def fetched(driver: Any) -> set[str]:
    """Every URL the page requested since the last call, data: URLs aside."""
    urls = set()
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.add(message["params"]["request"]["url"])
    return {u for u in urls if not u.startswith("data:")}


def type_into(driver: Any, elem_id: str, text: str) -> None:
    field = wait_for(driver, f"#{elem_id} textarea, #{elem_id} input")
    field.clear()
    field.send_keys(text)


def json_report(fake_hub: Any, cache: str, repo: str, **options: Any) -> dict:
    return hfkv.inspect(repo, hub=HubClient(endpoint=fake_hub.url, cache_dir=cache), **options).to_dict()


def call_api(server: str, name: str, data: list) -> str:
    """One call of the page's API (what the buttons call): the event stream's text."""
    base = f"{server}gradio_api/call/{name}"
    request = urllib.request.Request(base, data=json.dumps({"data": data}).encode(),
                                     headers={"Content-Type": "application/json"})
    event = json.loads(urllib.request.urlopen(request, timeout=30).read())["event_id"]
    return urllib.request.urlopen(f"{base}/{event}", timeout=60).read().decode()


@browser
def test_api_reads_no_server_path(server):
    assert "hfkv: KV cache calculator" in urllib.request.urlopen(server, timeout=10).read().decode()
    knobs = ["auto", 1, 1, "(none)", "60GiB", ""]
    ok = call_api(server, "report", [LLAMA, None] + knobs)
    assert ok.startswith("event: complete") and "131,072 B (128.00 KiB)" in ok
    # A file "upload" naming a path on the server is refused by Gradio before hfkv sees it.
    fixture = str(Path(__file__).resolve().parents[1] / "fixtures" / "openai__gpt-oss-120b" / "config.json")
    refused = call_api(server, "report", ["", {"path": fixture, "meta": {"_type": "gradio.FileData"}}] + knobs)
    assert refused.startswith("event: error") and "36,864" not in refused and "gpt_oss" not in refused


@browser
def test_browser_report_from_typed_id(server, driver, fake_hub, hub_cache):
    driver.get(server)
    type_into(driver, "hfkv-model", LLAMA)
    type_into(driver, "hfkv-budget", "60GiB")
    wait_for(driver, "#hfkv-go").click()
    wait_for(driver, "#hfkv-headline")
    driver.save_screenshot(str(SHOTS / "hfkv-web-report.png"))
    data = json_report(fake_hub, hub_cache, LLAMA, budget_bytes=60 * GIB)
    assert shown(driver, '[data-field="alpha_bytes_per_token"]') == ["131,072 B (128.00 KiB)"]  # 32 × 2 × 8 × 128 × 2
    assert shown(driver, '[data-field="gamma_bytes_per_request"]') == [exact_bytes(data["gamma_bytes_per_request"])]
    assert shown(driver, '[data-field="kv_bytes_per_request"]') == [exact_bytes(c["kv_bytes_per_request"])
                                                                   for c in data["contexts"]]
    # B_max in 60 GiB at 4K, 32K, 128K: 60·2^30 / (S · 2^17) = 120, 15, 3 (the model's max is 128K).
    assert shown(driver, '#hfkv-report [data-field="max_concurrency"]') == ["120", "15", "3"]
    assert shown(driver, "#hfkv-headline") == ["In 60.00 GiB of KV memory per GPU: 3 requests at 128K"]
    assert len(driver.find_elements("css selector", "#hfkv-report svg.hfkv-chart")) == 2
    assert not {u for u in fetched(driver) if not u.startswith(server)}


@browser
def test_browser_link_reproduces_the_page_with_engines(server, driver, fake_hub, hub_cache):
    # DeepSeek-V3.2's config with 689e9 fp8 weights in the Hub's safetensors metadata.
    repo = "demo/DeepSeek-V3.2"
    fake_hub.add_fixture(repo, folder="deepseek-ai__DeepSeek-V3.2",
                         safetensors={"model.safetensors": {"w": ("F8_E4M3", [689 * 10**9])}})
    query = Form(model=repo, kv_cache_dtype="fp8", tp=8, gpu="H200-141GB").query_string()
    driver.get(server + query)
    wait_for(driver, "#hfkv-headline")
    driver.save_screenshot(str(SHOTS / "hfkv-web-link.png"))
    assert shown(driver, '[data-field="alpha_bytes_per_token"]') == ["48,068 B (46.94 KiB)"]  # 61 × (656 + 132)
    # The verdict every output prints. KV budget per GPU, vLLM's rule: 138,110,256,860 requested (an H200's
    # CUDA total × 0.92) − 689e9 / 8 = 86,125,000,000 of weights − the 8,075,461,395 B vLLM keeps besides
    # (tests/test_deploy.py, DS_RESERVE_TP8) = 43,909,795,465 B; at 160K a request holds 163,840 × 48,068 =
    # 7,875,461,120 B → 5 requests (5.58).
    headline = shown(driver, "#hfkv-headline")[0]
    assert headline.startswith("fits on 8 × H200-141GB: 5 requests at 160K (hfkv, TP 8)")
    planned = hfkv.inspect(repo, hub=HubClient(endpoint=fake_hub.url, cache_dir=hub_cache), kv_cache_dtype="fp8",
                           tensor_parallel_size=8)
    assert headline == enrich(planned, gpu="H200-141GB:8").extra["serving"]["verdict"]  # the CLI's line
    assert wait_for(driver, "#hfkv-link").get_attribute("href") == server + query
    assert shown(driver, "#hfkv-cli") == [f"hfkv {repo} --kv-cache-dtype fp8 --tp 8 --gpu H200-141GB:8"]
    engines = []
    for name in ("sglang", "vllm"):
        report = hfkv.inspect(repo, hub=HubClient(endpoint=fake_hub.url, cache_dir=hub_cache),
                              kv_cache_dtype="fp8", tensor_parallel_size=8)
        engines.append(enrich(report, gpu="H200-141GB:8", engine=name, weights_bytes=689 * 10**9).extra["engine"])
    assert shown(driver, '[data-field="engine.kv_cache_tokens"]') == [f"{e['kv_cache_tokens']:,}" for e in engines]
    assert shown(driver, '[data-field="engine.bytes_per_token"]') == ["48,068", "48,068"]


@browser
def test_browser_errors_token_and_hostile_upload(server, driver, fake_hub, tmp_path):
    driver.get(server + "?model=nobody/missing")
    assert wait_for(driver, "#hfkv-error").text.startswith("hfkv: error: nobody/missing: repo not found")
    # A gated repo opens with the server's token, which the page never shows.
    fake_hub.add_fixture("org/gated-llama", folder="meta-llama__Meta-Llama-3.1-8B", gated="manual")
    driver.get(server + "?model=org/gated-llama")
    wait_for(driver, "#hfkv-headline")
    assert shown(driver, '[data-field="alpha_bytes_per_token"]') == ["131,072 B (128.00 KiB)"]
    assert SENTINEL not in driver.page_source
    # A hostile config dropped on the page is shown as text: no element, no script runs.
    path = tmp_path / "hostile-config.json"
    path.write_text(json.dumps(HOSTILE))
    driver.get(server)
    wait_for(driver, "#hfkv-upload input[type=file]").send_keys(str(path))
    wait_until(driver, lambda d: path.stem in d.find_element("css selector", "#hfkv-upload").text)  # uploaded
    wait_for(driver, "#hfkv-go").click()
    wait_for(driver, "#hfkv-headline")
    driver.save_screenshot(str(SHOTS / "hfkv-web-hostile.png"))
    assert driver.execute_script("return document.querySelectorAll('#hfkv-report img, #hfkv-report script').length") == 0
    assert "<img src=x onerror=alert(1)>" in wait_for(driver, "#hfkv-report section.report p.meta").text
    assert shown(driver, '[data-field="alpha_bytes_per_token"]') == ["1,024 B (1.00 KiB)"]  # 2 × 2 × 2 × 64 × 2


@browser
def test_browser_dark_theme_keeps_the_report_readable(server, driver):
    driver.get(server + Form(model=LLAMA).query_string() + "&__theme=dark")
    wait_for(driver, "#hfkv-headline")
    colours = driver.execute_script(
        "const s = e => getComputedStyle(document.querySelector(e));"
        "return [s('#hfkv-headline').color, s('#hfkv-report td.num').color, s('#hfkv-report div.hfkv').backgroundColor];")
    assert colours == ["rgb(27, 27, 27)", "rgb(27, 27, 27)", "rgb(255, 255, 255)"]  # dark text on the white card


@browser
def test_browser_compare_view(server, driver):
    driver.get(server + Form(compare=f"{LLAMA},openai/gpt-oss-120b", budget="60GiB").query_string())
    table = wait_for(driver, "#hfkv-compared table.compare")
    driver.save_screenshot(str(SHOTS / "hfkv-web-compare.png"))
    assert "Meta-Llama-3.1-8B" in table.text and "gpt-oss-120b" in table.text
    # α row: 131,072 B (Llama, by hand above) and 18 × 2 × 8 × 64 × 2 = 36,864 B (gpt-oss-120b full layers).
    assert "α (bytes/token) 131,072 B (128.00 KiB) 36,864 B (36.00 KiB)" in table.text


@browser
def test_browser_static_report_fetches_nothing(driver, tmp_path):
    from hfkv.render.html import render_html

    report = hfkv.inspect(Path(__file__).resolve().parents[1] / "fixtures" / "openai__gpt-oss-120b" / "config.json",
                          budget_bytes=60 * GIB)
    path = tmp_path / "report.html"
    path.write_text(render_html(report))
    fetched(driver)  # drop what earlier pages asked for
    driver.get(path.as_uri())
    wait_for(driver, "svg.hfkv-chart")
    driver.save_screenshot(str(SHOTS / "hfkv-web-static.png"))
    assert fetched(driver) == {path.as_uri()}
    assert shown(driver, '[data-field="max_concurrency"]')[0] == "413"  # 60 GiB / 155,713,536 B at 4K


# -- the Space -----------------------------------------------------------------------------------

def front_matter(text: str) -> dict[str, str]:
    head = text.split("---\n")[1]
    pairs = (line.split(":", 1) for line in head.strip().splitlines())
    return {key.strip(): value.strip().strip('"') for key, value in pairs}


def test_space_front_matter():
    meta = front_matter((SPACE / "README.md").read_text(encoding="utf-8"))
    assert meta["sdk"] == "gradio" and (SPACE / meta["app_file"]).is_file()
    assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", meta["sdk_version"])
    assert "hfkv" in (SPACE / "requirements.txt").read_text().split()
    if importlib.util.find_spec("gradio") is not None:  # the Space runs the Gradio major the tests ran
        from importlib.metadata import version

        assert meta["sdk_version"].split(".")[0] == version("gradio").split(".")[0]
