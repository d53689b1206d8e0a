"""The calculator page in headless Chromium: the Space entry point (space/app.py, what ``hfkv serve``
runs too) in a subprocess against the fake Hub, driven through Selenium.

Every figure shown is compared with what the CLI prints for the command the page shows (or with the
JSON report built here). Screenshots of the Report, Compare and Plan tabs go to /tmp/hfkv-web-*.png.
The browser may reach 127.0.0.1 only (every other name fails to resolve), and the tests check that the
page asked for nothing else. They skip with the reason when gradio, selenium or the browser is missing
(``pip install -e '.[app]' selenium``; ``apt-get install chromium chromium-driver``).
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

import hfkv
from hfkv.commands.cli import main
from hfkv.commands.serve_form import Form
from hfkv.sources.hub import HubClient
from webkit import call_api, running, server_env, free_port, values

from _helpers import HOSTILE_CONFIG as HOSTILE

GIB = 2**30
LLAMA = "meta-llama/Meta-Llama-3.1-8B"
SENTINEL = "hf_SentinelTokenNeverShown0123456789"  # the server's own token (HF_TOKEN)
VISITOR = "hf_VisitorTokenTypedInTheBox01234567"  # a visitor's, typed in the token box
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SHOTS = Path("/tmp")
ROOT = Path(__file__).resolve().parents[2]


def _browser_missing() -> str | None:
    for module, hint in (("gradio", "pip install -e '.[app]'"), ("selenium", "pip install selenium")):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed ({hint})"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    return None


pytestmark = pytest.mark.skipif(_browser_missing() is not None, reason=str(_browser_missing()))


@pytest.fixture(scope="module")
def uploads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gradio-uploads")


@pytest.fixture(scope="module")
def server(fake_hub_server: Any, tmp_path_factory: pytest.TempPathFactory, uploads: Path) -> Iterator[str]:
    """``space/app.py`` in a subprocess against the fake Hub, which accepts the server's token (and, in the
    tests that say so, a visitor's). One start for every browser test."""
    home = tmp_path_factory.mktemp("serve-home")
    token = fake_hub_server.token
    fake_hub_server.token = SENTINEL
    port = free_port()
    env = server_env(fake_hub_server.url, home, HF_TOKEN=SENTINEL, GRADIO_SERVER_PORT=str(port),
                     GRADIO_TEMP_DIR=str(uploads))  # as Spaces set the port
    try:
        with running([sys.executable, str(ROOT / "space" / "app.py")], env, port, home / "serve.log") as url:
            yield url
            log = (home / "serve.log").read_text()
            assert SENTINEL not in log and VISITOR not in log and "Traceback" not in log, log[-3000:]
    finally:
        fake_hub_server.token = token


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,2000",
                # Any name but 127.0.0.1 fails to resolve: nothing the page asks for can leave the machine.
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    chrome = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    chrome.set_page_load_timeout(60)
    yield chrome
    chrome.quit()


def wait_for(driver: Any, css: str, timeout: float = 90) -> Any:
    """The first element matching ``css``, once there; a timeout saves /tmp/hfkv-web-timeout.png and says
    what the page shows instead."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout).until(lambda d: (d.find_elements(By.CSS_SELECTOR, css) or [None])[0])
    except TimeoutException:
        driver.save_screenshot(str(SHOTS / "hfkv-web-timeout.png"))
        text = driver.execute_script("return document.body.innerText")
        pytest.fail(f"no {css} within {timeout} s; the page shows: {text[:1500]}")


def wait_until(driver: Any, condition: Any, timeout: float = 90) -> Any:
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
    return {u for u in urls if not u.startswith(("data:", "blob:"))}


def type_into(driver: Any, elem_id: str, text: str) -> None:
    field = wait_for(driver, f"#{elem_id} textarea, #{elem_id} input")
    field.clear()
    field.send_keys(text)


def choose(driver: Any, elem_id: str, option: str) -> None:
    """Pick ``option`` in a dropdown as a person does: open it, click the option."""
    wait_for(driver, f"#{elem_id} input").click()
    wait_until(driver, lambda d: [e for e in d.find_elements("css selector", f"#{elem_id} li[role=option]")
                                  if e.text.strip().endswith(option)])[0].click()
    wait_until(driver, lambda d: d.find_element("css selector", f"#{elem_id} input").get_attribute("value") == option)


def open_tab(driver: Any, label: str) -> None:
    from selenium.webdriver.common.by import By

    wait_until(driver, lambda d: [b for b in d.find_elements(By.CSS_SELECTOR, "button[role=tab]") if b.text == label])
    next(b for b in driver.find_elements(By.CSS_SELECTOR, "button[role=tab]") if b.text == label).click()


def cli_json(command: str, fake_hub: Any, token: str | None = None) -> dict:
    """What the command the page shows prints with --format json (the fake Hub, its token when needed)."""
    args = shlex.split(command)[1:] + ["--format", "json", "--endpoint", fake_hub.url]
    if token:
        args += ["--token", token]
    result = CliRunner().invoke(main, args)
    return json.loads(result.stdout)


def test_api_reads_no_server_path(server):
    ok = call_api(server, "report", [None, ""] + values(model=LLAMA, budget="60GiB"))
    assert ok.startswith("event: complete") and "131,072 B (128.00 KiB)" in ok
    # A file "upload" naming a path on the server is refused before Gradio (or hfkv) reads it.
    fixture = str(ROOT / "fixtures" / "openai__gpt-oss-120b" / "config.json")
    refused = call_api(server, "report", [{"path": fixture, "meta": {"_type": "gradio.FileData"}}, ""] + values())
    assert refused.startswith("HTTP 400") and "36,864" not in refused and "gpt_oss" not in refused


def test_browser_report_with_each_engine(server, driver, fake_hub):
    """Typed: Llama-3.1-8B on one H200. The two engines' verdicts side by side, each what its command prints,
    and hfkv's own report below."""
    driver.get(server)
    type_into(driver, "hfkv-model", LLAMA)
    choose(driver, "hfkv-gpu", "H200-141GB")
    wait_for(driver, "#hfkv-go").click()
    wait_for(driver, "#hfkv-verdict-vllm")
    driver.save_screenshot(str(SHOTS / "hfkv-web-report.png"))
    for engine in ("vllm", "sglang"):
        command = shown(driver, f"#hfkv-cli-{engine}")[0]
        assert command == f"hfkv {LLAMA} --gpu H200-141GB:1 --engine {engine}"
        assert shown(driver, f"#hfkv-verdict-{engine}") == [cli_json(command, fake_hub)["serving"]["verdict"]]
    command = shown(driver, "#hfkv-cli")[0]
    assert command == f"hfkv {LLAMA} --gpu H200-141GB:1"
    data = cli_json(command, fake_hub)
    assert shown(driver, "#hfkv-headline") == [data["serving"]["verdict"]]
    assert shown(driver, '#hfkv-report [data-field="alpha_bytes_per_token"]') == ["131,072 B (128.00 KiB)"]
    assert len(driver.find_elements("css selector", "#hfkv-report svg.hfkv-chart")) == 2
    assert not {u for u in fetched(driver) if not u.startswith(server)}


def test_browser_link_with_a_layout(server, driver, fake_hub):
    """A link with DP attention: SGLang's own count, vLLM's refusal in vLLM's words, the fields filled."""
    form = Form(model="Qwen/Qwen3-30B-A3B", tp=8, dp=8, dp_attention=True, gpu="H200-141GB")
    driver.get(server + form.query_string())
    wait_for(driver, "#hfkv-verdict-sglang")
    driver.save_screenshot(str(SHOTS / "hfkv-web-engines.png"))
    assert shown(driver, "#hfkv-verdict-vllm") == [
        "vLLM refused: vLLM has no --enable-dp-attention: its --data-parallel-size ranks already keep their own "
        "requests (attention replicated per rank)"]
    sglang = cli_json(shown(driver, "#hfkv-cli-sglang")[0], fake_hub)["serving"]["verdict"]
    assert shown(driver, "#hfkv-verdict-sglang") == [sglang] and "(SGLang 0.5.23, TP 8, DP attention 8)" in sglang
    assert wait_for(driver, "#hfkv-tp input").get_attribute("value") == "8"
    assert wait_for(driver, "#hfkv-dpa input").is_selected()
    assert wait_for(driver, "#hfkv-link").get_attribute("href") == server + form.query_string()


def test_browser_engine_figures_with_checkpoint_weights(server, driver, fake_hub, hub_cache):
    # DeepSeek-V3.2's config with 689e9 fp8 weights in the Hub's safetensors metadata.
    repo = "demo/DeepSeek-V3.2"
    fake_hub.add_fixture(repo, folder="deepseek-ai__DeepSeek-V3.2",
                         safetensors={"model.safetensors": {"w": ("F8_E4M3", [689 * 10**9])}})
    driver.get(server + Form(model=repo, kv_cache_dtype="fp8", tp=8, gpu="H200-141GB").query_string())
    wait_for(driver, "#hfkv-headline")
    assert shown(driver, '[data-field="alpha_bytes_per_token"]') == ["48,068 B (46.94 KiB)"]  # 61 × (656 + 132)
    # KV budget per GPU, vLLM 0.34's rule: the whole 150,119,844,413 B an H200 reports requested − 689e9 / 8 =
    # 86,125,000,000 of weights − the 9,961,582,232 B vLLM keeps besides, its CUDA context and margin included
    # (DS_RESERVE_TP8 in tests/commands/test_deploy.py) = 54,033,262,181 B; at 160K a request holds
    # 163,840 × 48,068 = 7,875,461,120 B → 6 requests (6.86), whichever count leads the line (issue 28.2).
    assert shown(driver, "#hfkv-headline")[0].startswith("fits on 8 × H200-141GB: 6 requests at 160K (")
    engines = []
    for name in ("vllm", "sglang"):
        report = hfkv.inspect(repo, hub=HubClient(endpoint=fake_hub.url, cache_dir=hub_cache, token=SENTINEL),
                              kv_cache_dtype="fp8", tp=8, gpu="H200-141GB:8", engine=name)
        engines.append(report.extra["engine"])
        assert shown(driver, f"#hfkv-verdict-{name}") == [report.serving.verdict]
    assert shown(driver, '[data-field="engine.kv_cache_tokens"]') == [f"{e['kv_cache_tokens']:,}" for e in engines]
    assert shown(driver, '[data-field="engine.bytes_per_token"]') == ["48,068", "48,068"]


def test_browser_tokens_and_errors(server, driver, fake_hub):
    driver.get(server + "?model=nobody/missing")
    assert wait_for(driver, "#hfkv-error").text == (
        "hfkv: error: nobody/missing: no such repo, or not one this page can read (a private repo needs your own token)")
    # A gated repo opens with the server's token, which the page never shows.
    fake_hub.add_fixture("org/gated-llama", folder="meta-llama__Meta-Llama-3.1-8B", gated="manual")
    driver.get(server + "?model=org/gated-llama")
    wait_for(driver, "#hfkv-headline")
    assert shown(driver, '[data-field="alpha_bytes_per_token"]') == ["131,072 B (128.00 KiB)"]
    # A private repo the server's token could read stays closed; the visitor's own token opens it.
    fake_hub.add_fixture("org/private-llama", folder="meta-llama__Meta-Llama-3.1-8B", private=True)
    driver.get(server + "?model=org/private-llama")
    assert "no such repo, or not one this page can read" in wait_for(driver, "#hfkv-error").text
    fake_hub.token = VISITOR  # the fake Hub now grants the visitor's token (and no longer the server's)
    try:
        driver.get(server)
        type_into(driver, "hfkv-model", "org/private-llama")
        type_into(driver, "hfkv-token", VISITOR)
        wait_for(driver, "#hfkv-go").click()
        wait_for(driver, "#hfkv-headline")
        assert shown(driver, '[data-field="alpha_bytes_per_token"]') == ["131,072 B (128.00 KiB)"]
        assert {e["auth"] for e in fake_hub.requests("org/private-llama") if e["file"] == "config.json"} == {VISITOR}
    finally:
        fake_hub.token = SENTINEL
    stored = driver.execute_script("return JSON.stringify([Object.entries(localStorage), "
                                   "Object.entries(sessionStorage), document.cookie])")
    text = driver.execute_script("return document.body.innerText") + driver.page_source
    assert VISITOR not in stored and VISITOR not in text and SENTINEL not in text
    assert "hfkv org/private-llama" in text and "HF_TOKEN" in text  # the command, and what it needs


def test_browser_hostile_upload_is_text_and_deleted(server, driver, tmp_path, uploads):
    path = tmp_path / "hostile-config.json"
    path.write_text(json.dumps(HOSTILE))
    driver.get(server)
    wait_for(driver, "#hfkv-upload input[type=file]").send_keys(str(path))
    wait_until(driver, lambda d: list(uploads.rglob(path.name)))  # uploaded: held by Gradio until read
    wait_for(driver, "#hfkv-go").click()
    wait_for(driver, "#hfkv-headline")
    driver.save_screenshot(str(SHOTS / "hfkv-web-hostile.png"))
    assert driver.execute_script("return document.querySelectorAll('#hfkv-report img, #hfkv-report script').length") == 0
    assert "<img src=x onerror=alert(1)>" in wait_for(driver, "#hfkv-report section.report p.meta").text
    assert shown(driver, '[data-field="alpha_bytes_per_token"]') == ["1,024 B (1.00 KiB)"]  # 2 × 2 × 2 × 64 × 2
    assert shown(driver, "#hfkv-cli") == ["hfkv hostile-config.json"]
    assert list(uploads.rglob("*.json")) == []  # read, then deleted


def test_browser_dark_theme_keeps_the_report_readable(server, driver):
    driver.get(server + Form(model=LLAMA).query_string() + "&__theme=dark")
    wait_for(driver, "#hfkv-headline")
    colours = driver.execute_script(
        "const s = e => getComputedStyle(document.querySelector(e));"
        "return [s('#hfkv-headline').color, s('#hfkv-report td.num').color, s('#hfkv-report div.hfkv').backgroundColor];")
    assert colours == ["rgb(27, 27, 27)", "rgb(27, 27, 27)", "rgb(255, 255, 255)"]  # dark text on the white card


def test_browser_compare_view(server, driver, fake_hub):
    form = Form(compare=f"{LLAMA},openai/gpt-oss-120b", gpu="H200-141GB", budget="60GiB")
    driver.get(server + form.query_string("compare"))
    table = wait_for(driver, "#hfkv-compared table.compare")
    wait_for(driver, "#hfkv-compare-vllm-1")
    driver.execute_script("document.querySelector('#hfkv-compared').scrollIntoView()")
    driver.save_screenshot(str(SHOTS / "hfkv-web-compare.png"))
    assert "Meta-Llama-3.1-8B" in table.text and "gpt-oss-120b" in table.text
    # α row: 131,072 B (Llama, by hand above) and 18 × 2 × 8 × 64 × 2 = 36,864 B (gpt-oss-120b full layers).
    assert "α (bytes/token) 131,072 B (128.00 KiB) 36,864 B (36.00 KiB)" in table.text
    command = shown(driver, "#hfkv-cli")[0]
    assert command == f"hfkv compare {LLAMA} openai/gpt-oss-120b --gpu H200-141GB:1 --budget 60GiB"
    cli = cli_json(command, fake_hub)
    assert [r["model"] for r in cli["ranking"][0]["models"]] == ["openai/gpt-oss-120b", LLAMA]
    for engine in ("vllm", "sglang"):
        verdicts = [m["serving"]["verdict"] for m in cli_json(shown(driver, f"#hfkv-cli-compare-{engine}")[0],
                                                               fake_hub)["models"]]
        assert shown(driver, f"#hfkv-compare-{engine}-0") + shown(driver, f"#hfkv-compare-{engine}-1") == verdicts


def test_browser_compare_with_a_dropped_file_on_a_deployment(server, driver, fake_hub, tmp_path, uploads,
                                                             monkeypatch):
    """Issue 28's case typed and dropped: Qwen2.5-7B (typed) and Llama-3.1-8B (a dropped config.json) at TP 8
    on 8 × H100. Both engines refuse Qwen's 28 heads at TP 8: it is ranked and drawn nowhere. Llama by hand
    (tests/commands/test_compare_plot.py): 75,522,072,572 B of KV per GPU, 16,384 B/token → 1,125 at 4K,
    140 at 32K, 35 at 128K. The table, the ranking and the chart are what the printed command's JSON says."""
    from webkit import chart_points

    config = tmp_path / "config.json"
    config.write_bytes((ROOT / "fixtures" / "meta-llama__Meta-Llama-3.1-8B" / "config.json").read_bytes())
    driver.get(server)
    open_tab(driver, "Compare")
    type_into(driver, "hfkv-compare", "Qwen/Qwen2.5-7B")
    wait_for(driver, "#hfkv-compare-upload input[type=file]").send_keys(str(config))
    wait_until(driver, lambda d: list(uploads.rglob("config.json")))  # held by Gradio until read
    choose(driver, "hfkv-gpu", "H100-SXM-80GB")
    type_into(driver, "hfkv-tp", "8")
    wait_for(driver, "#hfkv-go-compare").click()
    table = wait_for(driver, "#hfkv-compared table.compare")
    wait_for(driver, "#hfkv-compare-vllm-1")
    driver.execute_script("document.querySelector('#hfkv-compared').scrollIntoView()")
    driver.save_screenshot(str(SHOTS / "hfkv-web-compare-deployment.png"))
    command = shown(driver, "#hfkv-compared #hfkv-cli")[0]
    assert command == "hfkv compare Qwen/Qwen2.5-7B config.json --tp 8 --gpu H100-SXM-80GB:8"
    assert list(uploads.rglob("*.json")) == []  # read, then deleted
    monkeypatch.chdir(tmp_path)  # the command reads the dropped file under its name
    cli = cli_json(command, fake_hub)
    llama = {4096: 1125, 32768: 140, 131072: 35}
    assert cli["ranking"] == [{"tokens": t, "models": [{"model": "config.json", "requests": n}]} for t, n in llama.items()]
    assert cli["not_ranked"] == [{"model": "Qwen/Qwen2.5-7B", "status": "refused"}]
    lines = table.text.splitlines()
    for tokens, n in (("4K", "1,125"), ("32K", "140"), ("128K", "35")):
        assert f"{tokens}: requests served refused {n}" in lines
    said = shown(driver, "#hfkv-compared p.verdict-line")
    assert said[:2] == [f"Qwen2.5-7B: {cli['models'][0]['serving']['verdict']}",
                        f"config: {cli['models'][1]['serving']['verdict']}"]
    assert said[2:] == ["requests served at 4K: config 1,125", "requests served at 32K: config 140",
                        "requests served at 128K: config 35",
                        "not ranked (no request counted as served): Qwen2.5-7B (refused)"]
    chart = driver.execute_script("return [...document.querySelectorAll('#hfkv-compared svg.hfkv-chart')]"
                                  ".map(e => e.outerHTML).find(s => s.includes('aria-label=\"Requests served'))")
    points = chart_points(chart)
    assert points["Qwen2.5-7B: refused (not drawn)"] == []
    assert [(round(x), round(y)) for x, y in points["config"]] == list(llama.items())
    for engine in ("vllm", "sglang"):
        verdicts = [m["serving"]["verdict"] if m.get("serving") else None
                    for m in cli_json(shown(driver, f"#hfkv-cli-compare-{engine}")[0], fake_hub)["models"]]
        assert shown(driver, f"#hfkv-compare-{engine}-1") == [verdicts[-1]]
        assert "(28)" in shown(driver, f"#hfkv-compare-{engine}-0")[0]  # the engine's refusal, in its words


def test_browser_plan_view(server, driver, fake_hub):
    driver.get(server)
    type_into(driver, "hfkv-model", LLAMA)
    open_tab(driver, "Plan")
    type_into(driver, "hfkv-requests", "96")
    type_into(driver, "hfkv-plan-context", "32k")
    type_into(driver, "hfkv-max-gpus", "4")
    wait_for(driver, "#hfkv-go-plan").click()
    wait_for(driver, "#hfkv-plan-best")
    driver.save_screenshot(str(SHOTS / "hfkv-web-plan.png"))
    command = shown(driver, "#hfkv-planned #hfkv-cli")[0]
    assert command == (f"hfkv plan {LLAMA} --requests 96 --context 32k --gpu H200-141GB --engine both --max-gpus 4 "
                       "--kv-cache-dtype both")
    plan = cli_json(command, fake_hub)
    best = plan["best"]
    assert shown(driver, "#hfkv-plan-verdict") == [best["verdict"]]
    assert shown(driver, "#hfkv-plan-best-cli") == [best["command"]]
    assert shown(driver, "#hfkv-plan-best")[0].startswith(f"{best['gpus']} × H200-141GB hold 96 requests of 32K tokens")


def test_browser_static_report_fetches_nothing(driver, tmp_path):
    from hfkv.render.html import render_html

    report = hfkv.inspect(ROOT / "fixtures" / "openai__gpt-oss-120b" / "config.json", budget_bytes=60 * GIB)
    path = tmp_path / "report.html"
    path.write_text(render_html(report))
    fetched(driver)  # drop what earlier pages asked for
    driver.get(path.as_uri())
    wait_for(driver, "svg.hfkv-chart")
    driver.save_screenshot(str(SHOTS / "hfkv-web-static.png"))
    assert fetched(driver) == {path.as_uri()}
    assert shown(driver, '[data-field="max_concurrency"]')[0] == "413"  # 60 GiB / 155,713,536 B at 4K
