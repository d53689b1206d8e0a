"""The calculator page's logic, without Gradio (hfkv.commands.serve_form, serve_access, serve_pages, serve_work).

Against the fake Hub on 127.0.0.1 (tests/fakehub.py). Expected figures are derived by hand beside each
assertion, or are what the command the page prints gives (run here through the real CLI). The page as
a server (Gradio, its guard, uploads, sessions, concurrency) is tested in tests/web/test_server.py, and
in a browser in tests/web/test_browser.py.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fakehub import Fault
from hfkv import text as hfkv_text
from hfkv.commands.cli import main
from hfkv.commands.serve_access import NOT_VISIBLE, Session, Settings
from hfkv.commands.serve_form import Form
from hfkv.commands.serve_pages import compare_page, plan_page, report_page
from hfkv.units import exact_bytes
from _helpers import ALLOWED_TAGS, HOSTILE_CONFIG as HOSTILE, parse
from webkit import chart_points


LLAMA = "meta-llama/Meta-Llama-3.1-8B"
QWEN_MOE = "Qwen/Qwen3-30B-A3B"
DEEPSEEK = "deepseek-ai/DeepSeek-V3.2"
GPT_OSS = "openai/gpt-oss-120b"
VISITOR = "hf_VisitorTokenNeverShown0123456789"
SPACE = Path(__file__).resolve().parents[2] / "space"


@pytest.fixture
def settings(fake_hub: Any) -> Settings:
    return Settings(endpoint=fake_hub.url)


def cells(page: str, field: str) -> list[str]:
    return re.findall(rf'data-field="{re.escape(field)}">([^<]*)<', page)


def by_id(page: str, element_id: str) -> str:
    """The text of the element with ``id`` (HTML entities left as they are)."""
    found = re.search(rf'id="{re.escape(element_id)}"[^>]*>(.*?)</(?:td|code|p|a)>', page, re.S)
    assert found, f"no #{element_id}"
    return found.group(1).replace("&#x27;", "'").replace("&amp;", "&")


def error_line(page: str) -> str:
    found = re.findall(r'<p class="error"[^>]*>([^<]*)</p>', page)
    assert len(found) == 1, page[:500]
    return found[0].replace("&#x27;", "'")


def run_cli(command: str, fake_hub: Any, *extra: str) -> tuple[int, str]:
    """Run a command the page printed through the real CLI, against the fake Hub: (exit code, stdout, or
    stderr when stdout is empty)."""
    args = shlex.split(command)
    assert args[0] == "hfkv"
    result = CliRunner().invoke(main, [*args[1:], *extra, "--endpoint", fake_hub.url])
    return result.exit_code, result.stdout or result.stderr


# -- the form ---------------------------------------------------------------------------------------


def test_form_query_round_trip():
    form = Form(model=DEEPSEEK, kv_cache_dtype="fp8", tp=8, dp=2, pp=2, ep=True, gpu="H200-141GB", budget="60GiB",
                contexts="4k,128k", max_model_len="128k", gpu_memory_utilization="0.9", mem_fraction_static="0.85")
    query = form.query_string()
    assert query == ("?model=deepseek-ai%2FDeepSeek-V3.2&kv=fp8&tp=8&dp=2&pp=2&ep=1&gpu=H200-141GB&budget=60GiB"
                     "&context=4k%2C128k&max_len=128k&gmu=0.9&mfs=0.85")
    from urllib.parse import parse_qsl

    assert Form.from_query(dict(parse_qsl(query[1:]))) == form
    # TP 8 × PP 2 × DP 2 replicas: 32 GPUs of the preset, as the CLI spells it.
    assert form.report_command(engine="vllm") == (
        "hfkv deepseek-ai/DeepSeek-V3.2 --kv-cache-dtype fp8 --tp 8 --dp 2 --pp 2 --enable-expert-parallel "
        "--gpu H200-141GB:32 --budget 60GiB --context 4k,128k --max-model-len 128k --gpu-memory-utilization 0.9 "
        "--mem-fraction-static 0.85 --engine vllm")
    # DP attention keeps its DP ranks inside TP: 8 GPUs.
    assert Form(model="a/b", tp=8, dp=8, dp_attention=True, gpu="H200-141GB").gpu_spec() == "H200-141GB:8"
    assert Form().query_string() == ""
    bad = Form.from_query({"tp": "-3", "dp": "x", "kv": "fp7", "dpa": "maybe", "requests": "-1", "nonsense": "1"})
    assert (bad.tp, bad.dp, bad.kv_cache_dtype, bad.dp_attention, bad.requests) == (1, 1, "auto", False, 0)
    plan = Form(model=LLAMA, requests=64, plan_context="32k", plan_engine="sglang", max_gpus=4)
    assert plan.tab == "plan" and plan.query_string("plan") == (
        "?model=meta-llama%2FMeta-Llama-3.1-8B&requests=64&plan_context=32k&plan_engine=sglang&max_gpus=4")


def test_commands_are_quoted():
    assert Form(model="a/b", budget="60 GiB; rm -rf ~").report_command() == "hfkv a/b --budget '60 GiB; rm -rf ~'"


@pytest.mark.parametrize("form, line", [
    (Form(model=LLAMA, contexts="abc"), "hfkv: error: cannot read token count 'abc'"),
    (Form(model=LLAMA, budget="lots"), "hfkv: error: cannot read size 'lots'"),
    (Form(model=LLAMA, gpu="H900"), "hfkv: error: unknown GPU 'H900'"),
    (Form(model=LLAMA, kv_cache_dtype="fp7"), "hfkv: error: KV dtype 'fp7' is not one of"),
    (Form(model=LLAMA, gpu_memory_utilization="1.5"), "hfkv: error: --gpu-memory-utilization must be in (0, 1]"),
    (Form(model=LLAMA, mem_fraction_static="most"), "hfkv: error: --mem-fraction-static must be a number"),
    (Form(model=LLAMA, tp=5000), "hfkv: error: TP 5,000 is more than this page computes"),
])
def test_bad_fields_are_one_line(settings, form, line):
    html, text = report_page(form, settings)
    assert text == "" and error_line(html).startswith(line)


# -- Report: each engine's verdict, and the commands that print it ------------------------------------


def test_report_figures_equal_the_cli(settings, fake_hub):
    html, text = report_page(Form(model=LLAMA, budget="60GiB", contexts="4k,128k"), settings)
    data = json.loads(text)
    # Llama-3.1-8B: 32 layers × 2 × 8 KV heads × 128 × 2 B = 131,072 B per token.
    assert cells(html, "alpha_bytes_per_token") == [exact_bytes(131072)] == ["131,072 B (128.00 KiB)"]
    # 60 GiB / (4096 × 2^17 B) = 120; 60 GiB / (2^17 × 2^17 B) = 3.75 → 3.
    assert cells(html, "max_concurrency") == ["120", "3"]
    code, output = run_cli(by_id(html, "hfkv-cli"), fake_hub, "--format", "json")
    assert code == 0 and json.loads(output) == data  # the command the page shows prints the same JSON
    assert by_id(html, "hfkv-cli") == "hfkv meta-llama/Meta-Llama-3.1-8B --budget 60GiB --context 4k,128k"
    assert 'href="?model=meta-llama%2FMeta-Llama-3.1-8B&amp;budget=60GiB&amp;context=4k%2C128k"' in html


def test_each_engine_says_its_own_verdict(settings, fake_hub):
    """Qwen3-30B-A3B at TP 8 with DP attention 8 on 8 × H200: SGLang serves it, vLLM refuses the layout in
    its own words; each column is what `hfkv … --engine NAME` prints, and hfkv's own line names both."""
    form = Form(model=QWEN_MOE, tp=8, dp=8, dp_attention=True, gpu="H200-141GB")
    html, text = report_page(form, settings)
    vllm, sglang = by_id(html, "hfkv-verdict-vllm"), by_id(html, "hfkv-verdict-sglang")
    assert vllm == ("vLLM refused: vLLM has no --enable-dp-attention: its --data-parallel-size ranks already keep "
                    "their own requests (attention replicated per rank)")
    assert sglang.startswith("fits on 8 × H200-141GB: ") and "(SGLang 0.5.23, TP 8, DP attention 8)" in sglang
    # The page's own line is what `hfkv …` prints without --engine: vLLM refuses the layout, so SGLang's own
    # count leads, hfkv's exact one beside it.
    theory = json.loads(text)["serving"]["verdict"]
    assert "(SGLang 0.5.23, TP 8, DP attention 8)" in theory and "vLLM: would refuse" in theory and "hfkv: " in theory
    for engine, shown in (("sglang", sglang), ("vllm", vllm)):
        command = by_id(html, f"hfkv-cli-{engine}")
        assert command == f"hfkv Qwen/Qwen3-30B-A3B --tp 8 --dp 8 --enable-dp-attention --gpu H200-141GB:8 --engine {engine}"
        code, output = run_cli(command, fake_hub, "--format", "json")
        if engine == "sglang":
            assert code == 0 and json.loads(output)["serving"]["verdict"] == shown
        else:  # the CLI refuses with the same words (exit 2, one line)
            assert code == 2 and output.strip().endswith(shown.removeprefix("vLLM refused: "))


def test_engine_knobs_reach_both_engines(settings, fake_hub):
    """gpu_memory_utilization is vLLM's, mem_fraction_static SGLang's: each moves its own engine's budget,
    and each command carries both flags."""
    base = Form(model=GPT_OSS, tp=2, gpu="H200-141GB", max_model_len="32k")
    tight = Form(**{**base.__dict__, "gpu_memory_utilization": "0.6", "mem_fraction_static": "0.6"})
    counts = {}
    for form in (base, tight):
        html, _ = report_page(form, settings)
        for engine in ("vllm", "sglang"):
            command = by_id(html, f"hfkv-cli-{engine}")
            code, output = run_cli(command, fake_hub, "--format", "json")
            assert code == 0 and json.loads(output)["serving"]["verdict"] == by_id(html, f"hfkv-verdict-{engine}")
            counts[(form is tight, engine)] = json.loads(output)["serving"]["verdict_detail"]["requests"]
    assert "--gpu-memory-utilization 0.6 --mem-fraction-static 0.6" in by_id(html, "hfkv-cli-vllm")
    assert counts[(True, "vllm")] < counts[(False, "vllm")] and counts[(True, "sglang")] < counts[(False, "sglang")]


def test_engine_refusals_keep_the_theory(settings, fake_hub):
    """RWKV-4: hfkv accounts for it, neither engine serves it; each says so in its own words, which are
    what its command prints."""
    html, _ = report_page(Form(model="RWKV/rwkv-4-169m-pile"), settings)
    assert html.count('class="error" data-engine=') == 2
    assert by_id(html, "hfkv-verdict-vllm").startswith("vLLM refused: vLLM 0.34.0 would refuse to start: ")
    assert by_id(html, "hfkv-verdict-sglang").startswith("SGLang refused: SGLang 0.5.23 cannot serve this model")
    for engine in ("vllm", "sglang"):
        code, output = run_cli(by_id(html, f"hfkv-cli-{engine}"), fake_hub)
        assert code == 2 and output.strip().endswith(by_id(html, f"hfkv-verdict-{engine}").split(" refused: ", 1)[1])
    assert cells(html, "alpha_bytes_per_token")  # the theory figures stand


def test_report_without_gpu_says_how_to_get_a_verdict(settings):
    html, _ = report_page(Form(model=LLAMA), settings)
    assert by_id(html, "hfkv-verdict-vllm").startswith("no verdict: pick a GPU preset")


# -- Compare ------------------------------------------------------------------------------------------


def test_compare_page_and_its_commands(settings, fake_hub):
    form = Form(compare=f"{LLAMA}, {GPT_OSS}\nnobody/missing", gpu="H200-141GB", tp=2)
    html, text = compare_page(form, settings)
    assert error_line(html).startswith("hfkv: error: nobody/missing: " + NOT_VISIBLE)
    assert "Meta-Llama-3.1-8B vs gpt-oss-120b" in html
    command = by_id(html, "hfkv-cli")
    assert command == ("hfkv compare meta-llama/Meta-Llama-3.1-8B openai/gpt-oss-120b nobody/missing --tp 2 "
                       "--gpu H200-141GB:2")
    code, output = run_cli(command, fake_hub, "--format", "json")
    cli, page = json.loads(output), json.loads(text)
    assert code == 1 and cli["models"] == page["models"] and cli["pairs"] == page["pairs"]
    assert cli["ranking"] == page["ranking"] and page["ranking"]  # planned on 2 × H200: requests served
    for engine in ("vllm", "sglang"):
        code, output = run_cli(by_id(html, f"hfkv-cli-compare-{engine}"), fake_hub, "--format", "json")
        shown = [by_id(html, f"hfkv-compare-{engine}-{k}") for k in range(2)]
        assert [m["serving"]["verdict"] for m in json.loads(output)["models"]] == shown


def test_compare_needs_two_to_eight(settings):
    html, _ = compare_page(Form(compare=" ".join(f"org/m{k}" for k in range(9))), settings)
    assert "give 2 to 8 Hub repo ids" in html


def test_compare_fetches_in_parallel_under_one_deadline(fake_hub):
    """Three repos answering in 1 s each: one page in about 1 s, not 3. A repo that answers in 6 s misses a
    3 s deadline: the page answers within it, the others shown, that one one line."""
    for name in ("a", "b", "c", "slow"):
        fake_hub.add_fixture(f"org/{name}", folder="meta-llama__Meta-Llama-3.1-8B")
    for name in ("a", "b", "c"):
        fake_hub.faults[f"org/{name}"] = Fault(kind="slow", delay=1.0, where="resolve", file="config.json")
    fake_hub.faults["org/slow"] = Fault(kind="slow", delay=6.0, where="resolve", file="config.json")
    settings = Settings(endpoint=fake_hub.url, deadline=3.0)
    start = time.monotonic()
    html, _ = compare_page(Form(compare="org/a org/b org/c"), settings)
    took = time.monotonic() - start
    assert 'class="compare"' in html and "error" not in html and took < 2.5, took
    start = time.monotonic()
    html, _ = compare_page(Form(compare="org/a org/slow"), settings)
    took = time.monotonic() - start
    assert took < 3.5, took
    # its one request ran out of its own time first (at most half the deadline), and the line says so
    assert error_line(html) == "hfkv: error: org/slow: the Hub did not answer within 1.5 s; retry in a while"
    assert "<th>a</th>" in html  # org/a is still compared (alone)


def test_a_fetch_that_outlives_its_compare_leaves_no_folder(fake_hub, tmp_path, monkeypatch):
    """With the server's token, a repo is first shown public (one API request), then its config is read:
    1.4 s each here, so the config arrives at ~2.8 s, after the 3 s page gave up fetching (2.4 s) and
    answered. The request's cache folder is removed once that fetch has ended, not before (a removed
    folder would be recreated by the late write and stay)."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for name in ("a", "late", "warm"):
        fake_hub.add_fixture(f"org/{name}", folder="meta-llama__Meta-Llama-3.1-8B")
    # first a compare with time to spare: the engines' view of a config asks transformers' config class
    # (its first import, 2.5-4.5 s with torch installed, is not what this test times)
    compare_page(Form(compare="org/a org/warm"), Settings(endpoint=fake_hub.url, server_token=fake_hub.token,
                                                          deadline=30.0))
    for leftover in tmp_path.iterdir():
        shutil.rmtree(leftover)
    fake_hub.faults["org/late"] = Fault(kind="slow", delay=1.4, where="all")
    settings = Settings(endpoint=fake_hub.url, server_token=fake_hub.token, deadline=3.0)
    html, _ = compare_page(Form(compare="org/a org/late"), settings)
    assert error_line(html) == "hfkv: error: org/late: no answer within 3 s; retry in a while"
    time.sleep(4.0)  # the late fetch ends: its API, config and parameter-count requests, each within 1.5 s
    assert list(tmp_path.iterdir()) == []

# -- Compare on a deployment: each model in its own budget, only a "fits" verdict ranked (issue 28) -------

LLAMA_DIR = "meta-llama__Meta-Llama-3.1-8B"


def _llama_with_weights(fake_hub: Any, repo: str, parameters: int) -> None:
    """Llama-3.1-8B's config under ``repo`` with ``parameters`` bf16 weights in its safetensors."""
    fake_hub.add_fixture(repo, folder=LLAMA_DIR, safetensors={"model.safetensors": {"w": ("BF16", [parameters])}})


def served_svg(page: str) -> str:
    found = re.search(r'<svg[^>]*aria-label="Requests served.*?</svg>', page, re.S)
    assert found, "no chart of requests served"
    return found.group(0)


def near(points: list[tuple[float, float]], expected: dict[int, int]) -> bool:
    """The dots sit at ``expected`` {context: requests}: within 0.3% (the chart's pixels are rounded to 0.1)."""
    return (len(points) == len(expected) and
            all(abs(x / t - 1) < 0.003 and abs(y / n - 1) < 0.003 for (x, y), (t, n) in zip(points, expected.items())))


def table_row(page: str, title: str) -> list[str]:
    """The cells of the comparison table's row ``title``, as shown."""
    table = page[page.index('class="compare"'):]
    table = table[:table.index("</table>")]
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.S):
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
        if cells and cells[0] == title:
            return cells[1:]
    raise AssertionError(f"no row {title!r}")


def cli_compare(html: str, fake_hub: Any) -> dict:
    code, output = run_cli(by_id(html, "hfkv-cli"), fake_hub, "--format", "json")
    return json.loads(output)


def test_compare_chart_draws_each_model_in_its_own_budget(settings, fake_hub):
    # The same config under two names, with 16 GB and 40 GB of bf16 weights, each on one H200, vLLM 0.34's
    # budget: 150,119,844,413 − the weights − 3,621,583,590 kept besides − the CUDA context 408,021,893 −
    # the margin 1,429,340,160 (tests/commands/test_compare_plot.py). A request: 131,072 B × S.
    #   16 GB: 128,660,898,770 B → 4K: / 536,870,912 = 239.6 → 239; 32K: / 4 GiB = 29.96 → 29; 128K: 7.49 → 7
    #   40 GB: 104,660,898,770 B → 4K: 194.9 → 194; 32K: 24.4 → 24; 128K: 6.09 → 6
    # The chart drew every model in the first one's budget (the second at 239, 29, 7 too).
    _llama_with_weights(fake_hub, "demo/llama-16gb", 8 * 10**9)
    _llama_with_weights(fake_hub, "demo/llama-40gb", 20 * 10**9)
    html, text = compare_page(Form(compare="demo/llama-16gb demo/llama-40gb", gpu="H200-141GB"), settings)
    small, big = {4096: 239, 32768: 29, 131072: 7}, {4096: 194, 32768: 24, 131072: 6}
    points = chart_points(served_svg(html))
    assert near(points["llama-16gb"], small) and near(points["llama-40gb"], big)
    page, cli = json.loads(text), cli_compare(html, fake_hub)
    assert page["ranking"] == cli["ranking"] == [
        {"tokens": t, "models": [{"model": "demo/llama-16gb", "requests": small[t]},
                                 {"model": "demo/llama-40gb", "requests": big[t]}]} for t in small]
    assert page["models"] == cli["models"] and page["pairs"] == cli["pairs"]


def test_compare_never_draws_a_model_that_does_not_fit(settings, fake_hub):
    # Kimi-K2's config with 1.25e12 B of fp8 weights at TP 8: 156,250,000,000 B per GPU, more than the
    # 150,119,844,413 B vLLM may use on an H200, so it does NOT fit (the chart drew it at ~14 requests at
    # 128K in Llama's budget, under a table that said 0). Llama-3.1-8B with 16 GB: 2,000,000,000 B per GPU;
    # kept besides at TP 8: 7,499,055,108 (tests/commands/test_compare_plot.py) → 140,620,789,305 B; one KV
    # head per GPU, 16,384 B/token: 4K 2,095.4 → 2,095; 32K 261.9 → 261; 128K 65.5 → 65.
    _llama_with_weights(fake_hub, "demo/llama-16gb", 8 * 10**9)
    fake_hub.add_fixture("demo/kimi-k2", folder="moonshotai__Kimi-K2-Instruct",
                         safetensors={"model.safetensors": {"w": ("F8_E4M3", [1_250_000_000_000])}})
    html, text = compare_page(Form(compare="demo/llama-16gb demo/kimi-k2", gpu="H200-141GB", tp=8), settings)
    llama = {4096: 2095, 32768: 261, 131072: 65}
    points = chart_points(served_svg(html))
    assert near(points["llama-16gb"], llama) and points["kimi-k2: does NOT fit (not drawn)"] == []
    page, cli = json.loads(text), cli_compare(html, fake_hub)
    assert page["models"][1]["serving"]["verdict"].startswith("does NOT fit on 8 × H200-141GB: weights need")
    assert page["not_ranked"] == cli["not_ranked"] == [{"model": "demo/kimi-k2", "status": "does-not-fit"}]
    assert page["ranking"] == cli["ranking"] == [
        {"tokens": t, "models": [{"model": "demo/llama-16gb", "requests": n}]} for t, n in llama.items()]
    assert table_row(html, "128K: requests served") == ["65", "does NOT fit"]
    assert table_row(html, "verdict") == ["fits: 65 at 128K", "does NOT fit"]


def test_compare_takes_dropped_files_as_report_does(settings, fake_hub, tmp_path, monkeypatch):
    # A typed repo and two dropped files, both named config.json (as most are): the second is called
    # config-2.json on the page and in its command, which gives the same JSON with the files saved so.
    _llama_with_weights(fake_hub, "demo/llama-16gb", 8 * 10**9)
    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    drops = []
    for k, folder in enumerate(("Qwen__Qwen2.5-7B", LLAMA_DIR)):
        (tmp_path / f"upload{k}").mkdir()
        drops.append(tmp_path / f"upload{k}" / "config.json")
        drops[-1].write_bytes((fixtures / folder / "config.json").read_bytes())
    bad = tmp_path / "upload2" / "broken.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    form = Form(compare="demo/llama-16gb", gpu="H200-141GB")
    html, text = compare_page(form, settings, uploads=[str(p) for p in (*drops, bad)])
    assert by_id(html, "hfkv-cli") == ("hfkv compare demo/llama-16gb config.json config-2.json broken.json "
                                       "--gpu H200-141GB:1")
    assert "No link to this page" in html and str(tmp_path) not in html + text
    assert error_line(html).startswith("hfkv: error: broken.json: ")
    # Qwen2.5-7B's α: 28 layers × 4 KV heads × 128 × 2 × 2 = 57,344 B; Llama's 131,072 B.
    assert [m["alpha_bytes_per_token"] for m in json.loads(text)["models"]] == [131072, 57344, 131072]
    for drop, name in zip(drops, ("config.json", "config-2.json")):
        (tmp_path / name).write_bytes(drop.read_bytes())
    (tmp_path / "broken.json").write_bytes(bad.read_bytes())
    monkeypatch.chdir(tmp_path)
    page, cli = json.loads(text), cli_compare(html, fake_hub)
    for key in ("models", "pairs", "ranking", "not_ranked", "errors"):
        assert page[key] == cli[key], key
    for engine in ("vllm", "sglang"):
        code, output = run_cli(by_id(html, f"hfkv-cli-compare-{engine}"), fake_hub, "--format", "json")
        shown = [by_id(html, f"hfkv-compare-{engine}-{k}") for k in range(3)]
        assert [m["serving"]["verdict"] for m in json.loads(output)["models"]] == shown


# -- Plan ---------------------------------------------------------------------------------------------


def test_plan_page_is_hfkv_plan(settings, fake_hub):
    form = Form(model=LLAMA, requests=32, plan_context="32k", plan_engine="both", max_gpus=2)
    html, text = plan_page(form, settings)
    page = json.loads(text)
    command = by_id(html, "hfkv-cli")
    assert command == ("hfkv plan meta-llama/Meta-Llama-3.1-8B --requests 32 --context 32k --gpu H200-141GB "
                       "--engine both --max-gpus 2 --kv-cache-dtype both")
    code, output = run_cli(command, fake_hub, "--format", "json")
    assert code == 0 and json.loads(output) == page
    # The fewest GPUs: one H200 holds 32 requests of 32K (Llama-3.1-8B at fp8: 64 KiB per token → 2 GiB each).
    assert by_id(html, "hfkv-plan-best").startswith("1 × H200-141GB hold 32 requests of 32K tokens: ")
    best = page["best"]
    assert by_id(html, "hfkv-plan-verdict") == best["verdict"] and by_id(html, "hfkv-plan-best-cli") == best["command"]
    code, output = run_cli(best["command"], fake_hub, "--format", "json")  # the layout's own command
    assert code == 0 and json.loads(output)["serving"]["verdict"] == best["verdict"]
    assert f"Layouts that hold them ({len(page['kept'])} of {len(page['kept']) + len(page['dropped'])} tried)" in html


def test_plan_that_nothing_holds(settings):
    html, text = plan_page(Form(model=DEEPSEEK, requests=5000, plan_context="128k", max_gpus=1), settings)
    assert by_id(html, "hfkv-plan-best").startswith("does NOT fit: no layout of up to 1 GPUs tried holds 5,000")
    assert json.loads(text)["best"] is None


def test_plan_never_reads_a_server_path(settings, monkeypatch):
    """hfkv.api.plan reads a local path when one exists under the name given: the page asks it for the
    Hub repo only (here the checkout's fixtures folder, which the working directory holds)."""
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    html, text = plan_page(Form(model="fixtures/openai__gpt-oss-120b", requests=1, plan_context="4k"), settings)
    assert text == "" and error_line(html).startswith("hfkv: error: fixtures/openai__gpt-oss-120b: " + NOT_VISIBLE)


def test_plan_limits(settings):
    html, _ = plan_page(Form(model=LLAMA, requests=1, plan_context="4k", max_gpus=64), settings)
    assert error_line(html) == "hfkv: error: the page tries at most 16 GPUs, got 64"


# -- reading the Hub for a visitor --------------------------------------------------------------------


@pytest.mark.parametrize("typed", ["/etc/passwd", "../fixtures/openai__gpt-oss-120b/config.json",
                                   "fixtures/openai__gpt-oss-120b", "a b/c", "a/..", "https://evil.example/x", ""])
def test_only_hub_repos_are_read(settings, typed, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    html, text = report_page(Form(model=typed), settings)
    assert text == "" and html.count('class="error"') == 1 and "hfkv: error: " in html
    assert "gpt_oss" not in html  # no server file was read


def test_server_token_reads_public_and_gated_repos_only(fake_hub):
    """The server's token goes to a repo only after an anonymous request showed it public: a gated repo
    opens, a private one the token could read does not (no request for it carries the token), unless the
    operator opts in."""
    fake_hub.add_fixture("org/gated", folder="meta-llama__Meta-Llama-3.1-8B", gated="manual")
    fake_hub.add_fixture("org/private", folder="meta-llama__Meta-Llama-3.1-8B", private=True)
    server = Settings(endpoint=fake_hub.url, server_token=fake_hub.token)
    html, _ = report_page(Form(model="org/gated"), server)
    assert cells(html, "alpha_bytes_per_token") == ["131,072 B (128.00 KiB)"]
    assert any(e["auth"] == fake_hub.token for e in fake_hub.requests("org/gated", file="config.json"))
    html, _ = report_page(Form(model="org/private"), server)
    assert error_line(html) == f"hfkv: error: org/private: {NOT_VISIBLE} (a private repo needs your own token)"
    assert [e["auth"] for e in fake_hub.requests("org/private")] == [None]  # the anonymous probe, nothing else
    opted_in = Settings(endpoint=fake_hub.url, server_token=fake_hub.token, allow_private=True)
    html, _ = report_page(Form(model="org/private"), opted_in)
    assert cells(html, "alpha_bytes_per_token") == ["131,072 B (128.00 KiB)"]


def test_missing_and_invisible_read_the_same(fake_hub):
    """For a repo the visitor cannot see, the line is the same whether it exists or not, with a server
    token or without, at any revision."""
    fake_hub.add_fixture("org/private", folder="meta-llama__Meta-Llama-3.1-8B", private=True)
    lines = set()
    for server_token in (None, fake_hub.token, "hf_OtherServerTokenWithNoAccess00"):
        fake_hub.ungranted_tokens.add("hf_OtherServerTokenWithNoAccess00")
        settings = Settings(endpoint=fake_hub.url, server_token=server_token)
        for repo in ("org/private", "org/nothing-here", "org/private@v9", "org/nothing-here@v9"):
            html, _ = report_page(Form(model=repo), settings)
            lines.add(error_line(html).replace(repo.split("@")[0], "REPO"))
    assert lines == {f"hfkv: error: REPO: {NOT_VISIBLE} (a private repo needs your own token)"}


def test_visitor_token_is_used_for_that_request_only(fake_hub, hub_cache):
    """A visitor's token opens their private repo, goes only to the Hub, is shown nowhere, is forgotten
    afterwards, and what it read is not served to the next visitor (not even at its commit, from a cache)."""
    fake_hub.token = VISITOR
    fake_hub.add_fixture("org/mine", folder="meta-llama__Meta-Llama-3.1-8B", private=True)
    settings = Settings(endpoint=fake_hub.url)
    html, text = report_page(Form(model="org/mine"), settings, token=VISITOR)
    assert cells(html, "alpha_bytes_per_token") == ["131,072 B (128.00 KiB)"]
    assert VISITOR not in html + text and VISITOR not in hfkv_text._SECRETS
    assert {e["auth"] for e in fake_hub.requests("org/mine")} == {VISITOR}
    assert {e["host"] for e in fake_hub.requests()} == {fake_hub.url.removeprefix("http://")}
    commit = fake_hub.commit("org/mine")
    html, _ = report_page(Form(model=f"org/mine@{commit}"), settings)
    assert error_line(html).startswith(f"hfkv: error: org/mine: {NOT_VISIBLE}")
    # A wrong token is the visitor's to fix, and is not shown either.
    html, _ = report_page(Form(model="org/mine"), settings, token="hf_WrongTokenOfTheVisitor000000")
    assert error_line(html) == ("hfkv: error: org/mine: the Hub rejected the token sent (check the token you "
                                "pasted)")
    # Anything that is not token-shaped never reaches a request header, nor the page.
    odd = "hf_abc\r\nX-Injected: 1 " + "x" * 600
    html, _ = report_page(Form(model="org/mine"), settings, token=odd)
    assert error_line(html) == "hfkv: error: that is not a Hub token (hf_ followed by letters and digits); it was not used"
    assert "X-Injected" not in html


def test_gated_lines_say_whose_token(fake_hub):
    fake_hub.add_fixture("org/gated", folder="meta-llama__Meta-Llama-3.1-8B", gated="manual")
    fake_hub.ungranted_tokens.add("hf_ValidButNotGranted000000000")
    page = lambda **kw: error_line(report_page(Form(model="org/gated"), **kw)[0])  # noqa: E731
    assert page(settings=Settings(endpoint=fake_hub.url)) == (
        "hfkv: error: org/gated: gated repo: paste a read token whose account has been granted access")
    assert page(settings=Settings(endpoint=fake_hub.url), token="hf_ValidButNotGranted000000000") == (
        "hfkv: error: org/gated: gated repo: your token has not been granted access; request access on the "
        "model's page")
    assert page(settings=Settings(endpoint=fake_hub.url, server_token="hf_ValidButNotGranted000000000")) == (
        "hfkv: error: org/gated: gated repo: this server's token has not been granted access; paste a token "
        "whose account has access")


def test_errors_name_neither_the_endpoint_nor_server_paths(fake_hub, tmp_path):
    """A Hub that cannot be reached, a Hub error and a gated page name no host, port or folder of the
    server (the CLI's lines do: the page is not the operator's terminal)."""
    closed = Settings(endpoint="http://127.0.0.1:9", hub_timeout=2)
    html, _ = report_page(Form(model=LLAMA), closed)
    assert error_line(html) == ("hfkv: error: meta-llama/Meta-Llama-3.1-8B: the Hub did not answer this server "
                                "usefully; retry in a while")
    fake_hub.faults["org/broken"] = Fault(status=418, message="teapot at /srv/hub/internal", where="all")
    html, _ = report_page(Form(model="org/broken"), Settings(endpoint=fake_hub.url))
    line = error_line(html)
    assert "127.0.0.1" not in line and "/srv" not in line and str(fake_hub.url) not in html
    path = tmp_path / "config.json"
    path.write_text("{not json")
    html, _ = report_page(Form(), Settings(endpoint=fake_hub.url), upload=str(path))
    assert error_line(html) == "hfkv: error: config.json: config.json is not valid JSON: Expecting property name " \
                               "enclosed in double quotes at line 1 column 2"
    assert str(tmp_path) not in html


def test_a_slow_hub_meets_the_deadline(fake_hub):
    fake_hub.add_fixture("org/slow", folder="meta-llama__Meta-Llama-3.1-8B")
    fake_hub.faults["org/slow"] = Fault(kind="slow", delay=5.0, where="resolve")
    start = time.monotonic()
    html, _ = report_page(Form(model="org/slow"), Settings(endpoint=fake_hub.url, deadline=2.0))
    assert time.monotonic() - start < 2.5
    assert error_line(html) == "hfkv: error: org/slow: the Hub did not answer within 1 s; retry in a while"


def test_a_hub_request_that_times_out_says_its_own_bound(fake_hub):
    """One Hub request has its own timeout (10 s by default, at most half the deadline); when it runs out the
    page answered "no answer within 30 s" after 10-12 s. The line says the bound that ran out."""
    fake_hub.add_fixture("org/slow", folder="meta-llama__Meta-Llama-3.1-8B")
    fake_hub.faults["org/slow"] = Fault(kind="slow", delay=5.0, where="resolve")
    start = time.monotonic()
    html, _ = report_page(Form(model="org/slow"), Settings(endpoint=fake_hub.url, deadline=30.0, hub_timeout=1.0))
    assert time.monotonic() - start < 4
    assert error_line(html) == "hfkv: error: org/slow: the Hub did not answer within 1 s; retry in a while"


# -- each request's work in a worker process (issue 31: the deadline answered, the work ran on) -----------

# The kind of upload: a config of ~750 bytes with 100,000 layers (~9 s of work, in process)
HUGE = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 2560,
        "num_hidden_layers": 100_000, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
        "sliding_window": 1024, "max_position_embeddings": 131072, "vocab_size": 262144, "torch_dtype": "bfloat16"}


def rss() -> int:
    """This process's resident memory in bytes (Linux)."""
    import os

    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_eight_huge_uploads_stop_at_the_deadline_and_cost_the_server_nothing(fake_hub, tmp_path):
    """Eight uploads at once of a 100,000-layer config took the server from 282 MiB to 7.2 GiB and another
    visitor's report from 3 s to 24-32 s: the page answered at the deadline while each request's thread
    computed on. Each request's work is a worker process now, killed at the deadline: the answers come
    by then, nothing computes after them, the server keeps its memory, the next visitor is served at once."""
    import threading

    path = tmp_path / "config.json"
    path.write_text(json.dumps(HUGE))
    assert len(path.read_bytes()) < 1024
    report_page(Form(model=LLAMA), Settings(endpoint=fake_hub.url))  # warm: the workers' parent started
    before = rss()
    answers: list[str] = []
    form, settings = Form(gpu="H200-141GB", tp=8), Settings(endpoint=fake_hub.url, deadline=2.0)
    threads = [threading.Thread(target=lambda: answers.append(report_page(form, settings, upload=str(path))[0]))
               for _ in range(8)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert time.monotonic() - start < 4.5
    assert [error_line(a) for a in answers] == ["hfkv: error: config.json: no answer within 2 s; retry in a while"] * 8
    cpu = time.process_time()  # this process's CPU time, every thread's: none works on
    time.sleep(1.0)
    assert time.process_time() - cpu < 0.2
    assert rss() - before < 64 * 2**20
    start = time.monotonic()
    html, _ = report_page(Form(model=LLAMA, gpu="H200-141GB"), Settings(endpoint=fake_hub.url))
    assert time.monotonic() - start < 2 and by_id(html, "hfkv-verdict-vllm").startswith("fits on 1 × H200-141GB")


def test_a_request_past_its_memory_bound_is_one_line(tmp_path, settings, monkeypatch):
    """A request's worker may add ``PAGE_MEMORY`` to its address space (512 MiB; 64 here): a config that
    needs more is stopped, in one line, and the server's memory is not what it used."""
    from hfkv.commands import serve_work

    monkeypatch.setattr(serve_work, "PAGE_MEMORY", 64 * 2**20)
    path = tmp_path / "config.json"  # 8 MiB of empty objects: ~150 MiB once read
    path.write_text(json.dumps(dict(json.loads((Path(__file__).resolve().parents[2] / "fixtures" / LLAMA_DIR /
                                                "config.json").read_text()), extra=[{}] * 2_000_000)))
    html, text = report_page(Form(), settings, upload=str(path))
    assert text == "" and error_line(html) == (
        "hfkv: error: config.json: stopped: it needed more than its memory bound of 64 MiB, which this page gives "
        "one request; hfkv on the command line has no such bound")


def test_the_workers_parent_warms_up_without_a_thread():
    """The workers' parent imports the report stack and warms it once (``serve_work.warm``, then a page of
    each tab: ``serve_pages.warm``), so that every worker starts warm; it must start no thread doing so
    (a fork copies a held lock)."""
    code = ("import importlib, threading; from hfkv.commands.serve_work import PRELOAD\n"
            "for entry in PRELOAD:\n"
            "    module, _, function = entry.partition(':')\n"
            "    loaded = importlib.import_module(module)\n"
            "    if function: getattr(loaded, function)(); print(entry)\n"
            "print(threading.active_count())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["hfkv.commands.serve_work:warm", "hfkv.commands.serve_pages:warm", "1"], \
        out.stderr[-2000:]


def test_without_worker_processes_the_page_works_as_before(fake_hub, tmp_path, monkeypatch):
    """Where there are no worker processes (Windows: no fork), the work runs in a thread as before: the
    page answers, and at the deadline (its work then runs on: ~1 s here, 20,000 layers)."""
    from hfkv.runtime import worker

    monkeypatch.setattr(worker, "available", lambda: False)
    html, _ = report_page(Form(model=LLAMA), Settings(endpoint=fake_hub.url))
    assert cells(html, "alpha_bytes_per_token") == ["131,072 B (128.00 KiB)"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(HUGE, num_hidden_layers=20_000)))
    start = time.monotonic()
    html, _ = report_page(Form(), Settings(endpoint=fake_hub.url, deadline=0.3), upload=str(path))
    assert time.monotonic() - start < 0.8
    assert error_line(html) == "hfkv: error: config.json: no answer within 0.3 s; retry in a while"


def test_each_request_reads_the_hub_afresh(fake_hub, tmp_path, monkeypatch):
    """Nothing the page fetches outlives its request: no cache folder is left behind, and the operator's
    own Hub cache is never read (a config cached there by the CLI is not served)."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    report_page(Form(model=LLAMA), Settings(endpoint=fake_hub.url))
    assert list(tmp_path.iterdir()) == []
    with Session(Settings(endpoint=fake_hub.url)) as session:
        assert session.cache_dir and Path(session.cache_dir).parent == tmp_path
    assert list(tmp_path.iterdir()) == []


# -- uploads ------------------------------------------------------------------------------------------


def test_upload_goes_through_the_local_reader(tmp_path, settings):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(HOSTILE))
    html, text = report_page(Form(model="ignored/when-uploaded"), settings, upload=str(path))
    # 2 layers × 2 × 2 KV heads × 64 head_dim × 2 B = 1,024 B per token.
    assert json.loads(text)["alpha_bytes_per_token"] == 1024
    assert {tag for tag, _ in parse(html).tags} <= ALLOWED_TAGS  # no img, script or svg onload: text only
    assert not any(name.startswith("on") for _, attrs in parse(html).tags for name in attrs)
    assert by_id(html, "hfkv-cli") == "hfkv config.json" and "No link to this page" in html
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (32 * 1024 * 1024 + 1))
    html, _ = report_page(Form(), settings, upload=str(big))
    # The CLI's one line, naming the file as dropped (not the server's temporary path).
    assert error_line(html).startswith("hfkv: error: big.json: config.json is ") and "33,554,433" in html
    assert str(tmp_path) not in html


def test_plan_of_an_upload_names_the_file(tmp_path, settings):
    path = tmp_path / "config.json"
    path.write_bytes((Path(__file__).resolve().parents[2] / "fixtures" / "meta-llama__Meta-Llama-3.1-8B" /
                      "config.json").read_bytes())
    html, text = plan_page(Form(requests=8, plan_context="8k", max_gpus=1), settings, upload=str(path))
    assert str(tmp_path) not in html + text
    assert by_id(html, "hfkv-plan-best-cli").startswith("hfkv config.json --gpu H200-141GB:1 --tp 1 --engine")


# -- the command and the Space ------------------------------------------------------------------------


def test_hfkv_imports_without_gradio():
    code = ("import sys; sys.modules['gradio'] = None; import hfkv, hfkv.commands.serve, hfkv.commands.serve_pages, "
            "hfkv.commands.serve_app, hfkv.render.html; print('gradio' in sys.modules and sys.modules['gradio'] is not None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


def test_serve_help_loads_neither_gradio_nor_the_report_stack():
    code = ("import sys; from click.testing import CliRunner; from hfkv.commands.cli import main; "
            "r = CliRunner().invoke(main, ['serve', '--help']); "
            "print(r.exit_code, 'gradio' in sys.modules, 'pydantic' in sys.modules, '--allow-private-repos' in r.output)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["0", "False", "False", "True"], out.stderr


def front_matter(text: str) -> dict[str, str]:
    head = text.split("---\n")[1]
    pairs = (line.split(":", 1) for line in head.strip().splitlines())
    return {key.strip(): value.strip().strip('"') for key, value in pairs}


def test_space_front_matter():
    meta = front_matter((SPACE / "README.md").read_text(encoding="utf-8"))
    assert meta["sdk"] == "gradio" and (SPACE / meta["app_file"]).is_file()
    assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", meta["sdk_version"])
    assert "hfkv" in (SPACE / "requirements.txt").read_text().split()
    import importlib.util

    if importlib.util.find_spec("gradio") is not None:  # the Space runs the Gradio major the tests ran
        from importlib.metadata import version

        assert meta["sdk_version"].split(".")[0] == version("gradio").split(".")[0]
