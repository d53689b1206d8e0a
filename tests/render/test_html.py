"""hfkv.render.html: self-contained report pages, escaping of model-provided text, the static release site.

Expected figures are derived by hand beside each assertion; hostile text comes from a config and a
model id, as it would from the Hub.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

import hfkv
from hfkv.render.html import render_html, report_section
from hfkv.render.site import write_site
from hfkv.text import markup
from hfkv.units import format_bytes

from _helpers import ALLOWED_TAGS, parse

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
GIB = 2**30
HOSTILE = {
    "model_type": "<script>alert(1)</script>\u202eevil", "architectures": ["<img src=x onerror=alert(1)>"],
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 256,
    "torch_dtype": "bfloat16", "max_position_embeddings": 4096,
    "<b>sliding_window</b>": 5, "attn_weird_heads\n<iframe src=https://evil.example/>": 3,
}
HOSTILE_ID = "evil/<svg onload=alert(1)>\u202e"


def llama(**options) -> hfkv.Report:
    return hfkv.inspect(FIXTURES / "meta-llama__Meta-Llama-3.1-8B" / "config.json", **options)


def field_cells(page: str, field: str) -> list[str]:
    return re.findall(rf'data-field="{re.escape(field)}">([^<]*)<', page)


def test_figures_are_the_reports_exact_numbers():
    # Llama-3.1-8B: 32 layers × 2 (K, V) × 8 KV heads × 128 head_dim × 2 B = 131,072 B per token, γ = 0.
    page = render_html(llama(contexts=(4096, 131072), budget_bytes=60 * GIB))
    assert field_cells(page, "alpha_bytes_per_token") == ["131,072 B (128.00 KiB)"]
    assert field_cells(page, "gamma_bytes_per_request") == ["0 B"]
    # 4K: 4096 × 131,072 = 536,870,912 B; 128K: 131,072 × 131,072 = 17,179,869,184 B (16 GiB).
    assert field_cells(page, "kv_bytes_per_request") == ["536,870,912 B (512.00 MiB)", "17,179,869,184 B (16.00 GiB)"]
    # B_max in 60 GiB: floor(60·2^30 / 2^29) = 120 at 4K, floor(60 / 16) = 3 at 128K.
    assert field_cells(page, "max_concurrency") == ["120", "3"]
    assert "In 60.00 GiB of KV memory per GPU: 3 requests at 128K" in page


def test_dsa_alpha_by_hand():
    # DeepSeek-V3.2 bf16: 61 layers × ((512 + 64) × 2 B latent + 132 B fp8 indexer key) = 61 × 1284 = 78,324 B.
    report = hfkv.inspect(FIXTURES / "deepseek-ai__DeepSeek-V3.2" / "config.json")
    assert field_cells(render_html(report), "alpha_bytes_per_token") == ["78,324 B (76.49 KiB)"]


def test_page_is_self_contained():
    page = render_html(llama(budget_bytes=60 * GIB))
    elements = parse(page)
    tags = {tag for tag, _ in elements.tags}
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
    csp = [a["content"] for t, a in elements.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]
    for tag, attrs in elements.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in ("src", "href", "xlink:href", "srcset", "action", "data", "poster"):
                assert not re.match(r"\s*(https?:|//|javascript:)", value or "", re.I), (tag, name, value)
    assert "url(" not in page and "@import" not in page
    assert "<polyline" in page and "<polygon" in page  # the charts are inline SVG


def test_hostile_model_text_is_data():
    report = hfkv.inspect_config(json.loads(json.dumps(HOSTILE)), model=HOSTILE_ID)
    # 2 layers × 2 × 2 KV heads × (256 / 4) head_dim × 2 B = 1,024 B per token: the report did build.
    assert report.alpha_bytes_per_token == 1024
    page = render_html(report)
    elements = parse(page)
    assert {tag for tag, _ in elements.tags} <= ALLOWED_TAGS
    assert not any(name.startswith("on") for _, attrs in elements.tags for name in attrs)
    assert "\u202e" not in page and "\n<iframe" not in page
    text = "".join(elements.text)
    assert "<script>alert(1)</script>\\u202eevil" in text  # shown, escaped, visible as the escape
    assert "<img src=x onerror=alert(1)>" in text
    assert "evil/<svg onload=alert(1)>\\u202e" in text
    assert "attn_weird_heads\\n<iframe src=https://evil.example/>" in text  # one line, not a new element


def test_fragment_has_no_document_parts():
    fragment = report_section(llama())
    assert fragment.startswith('<section class="report">') and "<html" not in fragment and "<style" not in fragment


def test_json_form_renders_the_same_figures():
    report = llama(contexts=(4096,), budget_bytes=60 * GIB)
    from_json = render_html(json.loads(json.dumps(report.to_dict())))
    assert field_cells(from_json, "kv_bytes_per_request") == field_cells(render_html(report), "kv_bytes_per_request")
    assert "through the report's contexts only" in from_json  # no layer specs: sampled charts, said so


def plans_for(report: hfkv.Report, *specs: str) -> dict:
    """The watch report's plans: one copy of ``report`` planned per GPU spec by ``Deployment.apply``."""
    import dataclasses

    from hfkv.commands.deploy import Deployment
    from hfkv.planning.serving import gpu_plans

    return gpu_plans(specs, report, lambda twin, spec: dataclasses.replace(Deployment(), gpu=spec).apply(twin))


def watch_dict(report: hfkv.Report, created: str, plans: dict | None = None) -> dict:
    data = report.to_dict()
    data["model"] = "meta-llama/Meta-Llama-3.1-8B"  # as watch names it: the repo id
    data["watch"] = {"created_at": created, "plans": plans or {}}
    return data


def test_site_index_newest_first_with_a_verdict_per_gpu(tmp_path):
    base = llama()
    old = watch_dict(base, "2025-01-01T00:00:00+00:00", plans_for(base, "H200-141GB", "L4-24GB"))
    new = hfkv.inspect(FIXTURES / "openai__gpt-oss-120b" / "config.json")
    new.model = "openai/gpt-oss-120b"
    new.extra["watch"] = {"created_at": "2025-06-01T00:00:00+00:00", "plans": plans_for(new, "H200-141GB")}
    written = write_site(tmp_path, [old, new])
    assert {p.name for p in written} == {"index.html", "openai__gpt-oss-120b.html", "meta-llama__Meta-Llama-3.1-8B.html"}
    index = (tmp_path / "index.html").read_text()
    rows = re.findall(r"<tr><td>([^<]*)</td><td><a href=\"([^\"]+)\">", index)
    assert [href for _, href in rows] == ["openai__gpt-oss-120b.html", "meta-llama__Meta-Llama-3.1-8B.html"]
    assert "<th>H200-141GB</th><th>L4-24GB</th>" in index  # a column per GPU spec of any row
    llama_row = index.split('meta-llama__Meta-Llama-3.1-8B.html">')[1].split("</tr>")[0]
    # α 131,072; γ 0; S* 0; then each GPU's verdict at its context. H200: vLLM's budget 123,285,789,410 B less
    # the estimated weights' reserve ... the plan's own count at 128K (17,179,869,184 B per request).
    h200 = old["watch"]["plans"]["H200-141GB"]["verdict_detail"]
    assert h200["status"] == "fits" and h200["tokens"] == 131072
    cells = re.findall(r'<td class="num[^"]*"[^>]*>([^<]*)</td>', llama_row)
    # L4 (24 GB): 16 GB of estimated weights leave not one 128K request (17.2 GB), so vLLM would not start at
    # the model's maximum 131,072: the cell says it does not fit. vLLM 0.34 on an L4 (22,580 MiB = 23,676,846,080 B, 2,048
    # batched tokens, 256 sequences): − 16,060,522,496 weights − sampler buffers 139,542,528 − peak 476,446,720
    # − non-torch 268,435,456 − graphs int(0.30 × 2^30) + int(0.15 × 2^20) × 32 × (51 + 35) = 754,973,619 −
    # slack 53,687,091 − context 408,021,893 − margin max(2^30, 0.75 × peak) = 1,073,741,824 → 4,441,474,453 B:
    # the longest length one request fits is 4,441,474,453 // 131,072 = 33,885 tokens.
    l4 = old["watch"]["plans"]["L4-24GB"]["verdict_detail"]
    assert l4["status"] == "does-not-fit" and l4["tokens"] == 131072
    assert "--max-model-len 33,885 would start" in old["watch"]["plans"]["L4-24GB"]["verdict"]
    assert cells == ["131,072", "0", "0", f"✓ {h200['requests']} at 128K", "✗ does not fit"]
    assert 'class="num verdict does-not-fit" data-gpu="L4-24GB"' in llama_row
    oss_row = index.split('openai__gpt-oss-120b.html">')[1].split("</tr>")[0]
    # gpt-oss-120b: 18 full + 18 sliding (W = 128) layers × 2 × 8 heads × 64 × 2 B = 2,048 B each per token;
    # α = 18 × 2048 = 36,864 B, γ = 18 × 128 × 2048 = 4,718,592 B; S* = γ/α = 128; no L4 plan: "-".
    assert re.findall(r'<td class="num[^"]*"[^>]*>([^<]*)</td>', oss_row)[:3] == ["36,864", "4,718,592", "128"]
    assert re.findall(r'<td class="num[^"]*"[^>]*>([^<]*)</td>', oss_row)[-1] == "-"


def test_site_keeps_a_page_drawn_from_layers(tmp_path):
    report = llama()
    report.model = "meta-llama/Meta-Llama-3.1-8B"
    report.extra["watch"] = {"created_at": "2025-01-01T00:00:00+00:00", "gpu_budgets": {}}
    write_site(tmp_path, [report])
    page = tmp_path / "meta-llama__Meta-Llama-3.1-8B.html"
    first = page.read_text()
    written = write_site(tmp_path, [json.loads(json.dumps(report.to_dict()))])
    assert page not in written and page.read_text() == first  # the JSON-only entry left the exact page alone


@pytest.mark.parametrize("repo_id", ["../../etc/passwd", "/abs/path", "a/b\x00c", "x/" + "y" * 300, "org/..", HOSTILE_ID])
def test_site_file_names_stay_inside(tmp_path, repo_id):
    report = llama()
    report.model = repo_id
    site = tmp_path / "site"
    for path in write_site(site, [report]):
        assert path.parent == site and path.exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(["site"] + [p.name for p in site.iterdir()])
    assert {tag for tag, _ in parse((site / "index.html").read_text()).tags} <= ALLOWED_TAGS


def test_several_reports_in_one_file():
    page = render_html([llama(), hfkv.inspect(FIXTURES / "openai__gpt-oss-120b" / "config.json")])
    assert page.count('<section class="report">') == 2 and page.count("<html") == 1
    assert field_cells(page, "alpha_bytes_per_token") == ["131,072 B (128.00 KiB)", "36,864 B (36.00 KiB)"]


def test_watch_site_is_drawn_from_the_state_alone(tmp_path):
    from hfkv.render.site import write_watch_site

    models = {
        "org/new": {"status": "done", "file": "org__new", "created_at": "2025-06-01T00:00:00+00:00",
                    "model_type": "llama", "alpha_bytes_per_token": 131072, "gamma_bytes_per_request": 0,
                    "crossover_tokens": 0, "gpus": {"H200-141GB": {"status": "fits", "requests": 6, "tokens": 131072}}},
        "org/older": {"status": "done", "file": "org__older", "created_at": "2025-01-01T00:00:00+00:00"},
        "org/failed": {"status": "error", "error": "network: down"},
        "org/<b>skipped</b>": {"status": "skipped", "error": "too-large: not retried"},
    }
    path = write_watch_site(tmp_path, models)  # no report file exists: none is read
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.html"] and path == tmp_path / "index.html"
    index = path.read_text()
    assert index.index("org__new.html") < index.index("org__older.html")
    assert "✓ 6 at 128K" in index and index.count("org/failed") == 1 and "network: down" in index
    assert "skipped" not in index
    older = index.split('org__older.html">')[1].split("</tr>")[0]
    assert re.findall(r'<td class="num[^"]*"[^>]*>([^<]*)</td>', older) == ["-", "-", "-", "-"]


def test_a_watch_report_of_an_earlier_version_is_read_once_and_keeps_its_page(tmp_path):
    """A ``<name>.json`` written by the previous hfkv (``watch.gpu_budgets``, no plans) completes its
    state entry (γ, S*) and gets a page when it has none; an existing page is left as it was."""
    from hfkv.render.site import upgrade_entry

    old = llama().to_dict()
    old["model"] = "meta-llama/Meta-Llama-3.1-8B"
    old["watch"] = {"created_at": "2025-01-01T00:00:00+00:00", "gpu_memory_utilization": 0.92,
                    "gpu_budgets": {"H200-141GB": 60 * GIB}}
    (tmp_path / "meta-llama__Meta-Llama-3.1-8B.json").write_text(json.dumps(old))
    entry = {"status": "done", "file": "meta-llama__Meta-Llama-3.1-8B", "created_at": "2025-01-01T00:00:00+00:00",
             "model_type": "llama", "alpha_bytes_per_token": 131072}
    upgraded = upgrade_entry(tmp_path, entry)
    assert upgraded["gamma_bytes_per_request"] == 0 and upgraded["crossover_tokens"] == 0 and upgraded["gpus"] == {}
    page = tmp_path / "meta-llama__Meta-Llama-3.1-8B.html"
    assert "contexts only" in page.read_text()  # drawn from the JSON: sampled curves, said so
    page.write_text("kept")
    assert upgrade_entry(tmp_path, entry) is not None and page.read_text() == "kept"
    assert upgrade_entry(tmp_path, dict(entry, file="org__lost")) is None  # its JSON is gone: shown as it is


def test_plans_give_a_verdict_and_requests_per_gpu():
    report = llama()
    plans = plans_for(report, "H100-SXM-80GB", "H200-141GB:8")
    page = render_html(report, plans=plans)
    headlines = re.findall(r'<p class="headline[^"]*" data-gpu="([^"]+)">([^<]*)</p>', page)
    assert [spec for spec, _ in headlines] == ["H100-SXM-80GB", "H200-141GB:8"]
    assert [html.unescape(line) for _, line in headlines] == [plans["H100-SXM-80GB"]["verdict"],
                                                              plans["H200-141GB:8"]["verdict"]]
    # Requests served, every rank counted: H200:8 at TP 1 is 8 replicas, 8 × the per-rank count.
    h200 = plans["H200-141GB:8"]
    assert h200["request_ranks"] == 8
    assert field_cells(page, "requests_on.H200-141GB:8") == [
        f"{c['max_concurrency_total']:,}" for c in h200["contexts"]]
    assert all(c["max_concurrency_total"] == 8 * c["max_concurrency"] for c in h200["contexts"])
    assert "<th>requests on 1 × H100-SXM-80GB</th><th>requests on 8 × H200-141GB</th>" in page
    # Weights per GPU and their source; the chart in the H200 plan's KV budget per GPU.
    assert field_cells(page, "weights_source") == ["estimated from the config&#x27;s shapes"] * 2
    assert field_cells(page, "weights_bytes_per_gpu") == ["16,060,522,496 B (14.96 GiB)"] * 2
    assert f"Requests that fit in {format_bytes(h200['kv_budget_bytes'])} (B_max)" in page
    # A report read back from its JSON shows the same, from its watch.plans.
    data = report.to_dict() | {"watch": {"plans": plans}}
    assert field_cells(render_html(data), "requests_on.H200-141GB:8") == field_cells(page, "requests_on.H200-141GB:8")


def test_chart_scales_and_ticks():
    from hfkv.render import svg

    assert svg.Scale(1, 100, 0, 100, log=True)(10) == 50  # log10(10) is half of log10(100)
    assert svg.Scale(0, 10, 300, 100)(5) == 200  # linear, y pointing up
    assert svg.decade_ticks(3, 600) == [5, 10, 20, 50, 100, 200, 500]
    assert svg.linear_ticks(6.2) == [0, 2, 4, 6]  # 6.2 / 5 = 1.24 → step 2
    assert svg.log2_ticks(1024, 131072, 9) == [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
    assert svg.log2_ticks(1000, 140_000, 9) == [1024, 4096, 16384, 65536]  # 2^9..2^18: 10 > 9, every other
    assert markup('a<b>"\u202e\n') == "a&lt;b&gt;&quot;\\u202e\\n"


@pytest.mark.parametrize("fixture, shown", [
    ("meta-llama__Meta-Llama-3.1-8B", "KV bf16 · TP 1"),  # attention only: no state, conv or indexer dtype
    ("deepseek-ai__DeepSeek-V3.2", "KV bf16 · indexer fp8 · TP 1"),  # DSA keeps indexer keys
    ("Qwen__Qwen3-Next-80B-A3B-Thinking", "KV bf16 · state fp32 · conv bf16 · TP 1"),  # GDN state + full layers
])
def test_the_precision_line_names_the_dtypes_that_apply(fixture, shown):
    section = report_section(hfkv.inspect(str(FIXTURES / fixture)))
    assert f'<p class="meta">{shown}</p>' in section


def test_site_pages_of_ids_differing_in_case_are_two_files(tmp_path):
    """On a file system that folds case (macOS, Windows) evil/Good.html and evil/good.html would be one
    file: the second id gets the hash of its exact text."""
    first, second = llama(), llama()
    first.model, second.model = "evil/Good", "evil/good"
    written = write_site(tmp_path, [first, second])
    pages = sorted(p.name for p in written if p.name != "index.html")
    assert len({p.casefold() for p in pages}) == 2 and "evil__Good.html" in pages
    assert all(href.casefold() in {p.casefold() for p in pages}
               for href in re.findall(r'href="([^"]+\.html)"', (tmp_path / "index.html").read_text()))
