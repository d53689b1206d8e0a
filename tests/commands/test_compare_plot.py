"""``hfkv compare`` and ``hfkv plot``: figures derived by hand, the pair verdicts, JSON shape, errors, files.

The four models of the comparison (bf16 KV, fp8 indexer keys, TP 1):

- Meta-Llama-3.1-8B: 32 full layers, 8 KV heads, head_dim 4096/32 = 128
  α = 32 × 8 × (128 + 128) × 2 = 131,072 B/token, γ = 0
- gpt-oss-120b: 36 layers alternating sliding (window 128) and full, 8 KV heads, head_dim 64
  E = 8 × (64 + 64) × 2 = 2,048 B; α = 18 × 2,048 = 36,864; γ = 18 × 128 × 2,048 = 4,718,592
- DeepSeek-V3.2: 61 DSA layers, latent 512 + 64 in bf16 plus a 128-value fp8 indexer key with one
  4-byte scale: α = 61 × ((512 + 64) × 2 + 128 + 4) = 61 × 1,284 = 78,324, γ = 0
- Qwen3-Next-80B-A3B: 48 layers, every 4th full (12 full, 36 Gated DeltaNet)
  full: α = 12 × 2 KV heads × (256 + 256) × 2 = 24,576
  GDN state per layer: 32 v-heads × 128 × 128 × 4 (fp32) = 2,097,152
                     + conv (4 − 1) × (32 × 128 + 2 × 16 × 128) × 2 = 49,152 → 2,146,304
  γ = 36 × 2,146,304 = 77,266,944
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from hfkv.commands.cli import main
from hfkv.render.compare import short_label, unique_labels

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LLAMA = str(FIXTURES / "meta-llama__Meta-Llama-3.1-8B" / "config.json")
GPT_OSS = str(FIXTURES / "openai__gpt-oss-120b" / "config.json")
V32 = str(FIXTURES / "deepseek-ai__DeepSeek-V3.2" / "config.json")
QWEN_NEXT = str(FIXTURES / "Qwen__Qwen3-Next-80B-A3B-Thinking" / "config.json")
QWEN25 = str(FIXTURES / "Qwen__Qwen2.5-7B" / "config.json")
GIB = 1024**3


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def compare_json(*args: str) -> dict:
    result = run("compare", *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


# -- compare: figures -----------------------------------------------------------------------------


def test_four_models_alpha_gamma_and_contexts():
    data = compare_json(LLAMA, GPT_OSS, V32, QWEN_NEXT, "--budget", "60GiB")
    assert set(data) >= {"models", "contexts", "errors"}
    assert data["errors"] == []
    by_type = {m["model_type"]: m for m in data["models"]}
    assert [m["model_type"] for m in data["models"]] == ["llama", "gpt_oss", "deepseek_v32", "qwen3_next"]
    assert by_type["llama"]["alpha_bytes_per_token"] == 131072  # 32 × 8 × 256 × 2
    assert by_type["llama"]["gamma_bytes_per_request"] == 0
    assert by_type["gpt_oss"]["alpha_bytes_per_token"] == 36864  # 18 × 2,048
    assert by_type["gpt_oss"]["gamma_bytes_per_request"] == 4718592  # 18 × 128 × 2,048
    assert by_type["deepseek_v32"]["alpha_bytes_per_token"] == 78324  # 61 × 1,284
    assert by_type["qwen3_next"]["alpha_bytes_per_token"] == 24576  # 12 × 2 × 512 × 2
    assert by_type["qwen3_next"]["gamma_bytes_per_request"] == 77266944  # 36 × 2,146,304
    # Shared contexts: 4K, 32K, 128K plus every model's maximum (V3.2 163,840; Qwen3-Next 262,144).
    assert data["contexts"] == [4096, 32768, 131072, 163840, 262144]
    for model in data["models"]:
        assert [c["tokens"] for c in model["contexts"]] == data["contexts"]
    gpt_4k = by_type["gpt_oss"]["contexts"][0]
    assert gpt_4k["kv_bytes_per_request"] == 155713536  # 36,864 × 4,096 + 4,718,592
    assert gpt_4k["max_concurrency"] == 413  # 64,424,509,440 / 155,713,536 = 413.7
    assert by_type["llama"]["contexts"][0]["max_concurrency"] == 120  # 60 GiB / (131,072 × 4,096 = 512 MiB)
    # Qwen3-Next at 4K: 24,576 × 4,096 + 77,266,944 = 177,930,240 → 64,424,509,440 / that = 362.07
    assert by_type["qwen3_next"]["contexts"][0]["max_concurrency"] == 362


def test_table_has_a_column_per_model_and_the_figures():
    result = run("compare", LLAMA, GPT_OSS, V32, QWEN_NEXT, "--context", "4k", "--budget", "60GiB")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    header = next(line for line in out.splitlines() if "Meta-Llama-3.1-8B" in line)
    for label in ("gpt-oss-120b", "DeepSeek-V3.2", "Qwen3-Next-80B-A3B-Thinking"):
        assert label in header
    for text in ("131,072 B (128.00 KiB)", "36,864 B (36.00 KiB)", "4,718,592 B (4.50 MiB)",
                 "78,324 B (76.49 KiB)", "77,266,944 B (73.69 MiB)", "sliding.", ".dsa"):
        assert text in out, text
    assert "4K: B_max in 60.00 GiB" in out
    # S* = γ/α: gpt-oss 4,718,592 / 36,864 = 128; Qwen3-Next 77,266,944 / 24,576 = 3,144.0
    assert "128 tokens" in out and "3,144 tokens" in out
    assert sum(": α " in line for line in out.splitlines()) == 6  # one line per pair of four models


def test_model_names_are_data_in_the_table(tmp_path):
    # A folder named with rich markup and an escape: shown as written, never interpreted or sent raw.
    hostile = tmp_path / "m[red]x\x1b[2J[bold]y"
    hostile.mkdir()
    (hostile / "config.json").write_text(Path(LLAMA).read_text())
    result = run("compare", LLAMA, str(hostile), "--context", "4k")
    assert result.exit_code == 0, result.stderr
    assert "m[red]x" in result.stdout and "[bold]y" in result.stdout
    assert "\x1b" not in result.stdout


# -- compare: which model fits more requests ------------------------------------------------------


def test_lead_flips_between_short_and_long_context():
    # Llama 131,072·S against Qwen3-Next 24,576·S + 77,266,944 (no window: exact for every S):
    # equal at S = 77,266,944 / (131,072 − 24,576) = 77,266,944 / 106,496 = 725.5, so Llama needs
    # less up to 725 tokens and Qwen3-Next from 726. At 512: 64 MiB vs 84.0 + 73.7 MiB; at 1K Qwen3-Next.
    result = run("compare", QWEN_NEXT, LLAMA, "--context", "512,1k,32k")
    assert result.exit_code == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if " vs " in line)
    assert line.startswith("Qwen3-Next-80B-A3B-Thinking vs Meta-Llama-3.1-8B: α 24.00 KiB vs 128.00 KiB per token, "
                           "γ 73.69 MiB vs 0 B per request")
    assert ("more requests fit with Meta-Llama-3.1-8B at 512, with Qwen3-Next-80B-A3B-Thinking at 1K and 32K" in line)
    assert "Meta-Llama-3.1-8B fits more below 726 tokens, Qwen3-Next-80B-A3B-Thinking from 726 on" in line


def test_lead_change_below_the_first_context_is_still_reported():
    # gpt-oss past its 128-token window: 36,864·S + 4,718,592; Qwen2.5-7B: 28 × 4 × 256 × 2 = 57,344·S.
    # Equal at 4,718,592 / (57,344 − 36,864) = 230.4: Qwen2.5 needs less up to 230 tokens
    # (230: 13,197,312 vs 13,189,120), gpt-oss from 231 (13,234,176 vs 13,246,464).
    data = compare_json(GPT_OSS, QWEN25, "--context", "4k,32k")
    (pair,) = data["pairs"]
    assert pair["models"] == [GPT_OSS, QWEN25]
    assert pair["more_requests"] == [{"tokens": 4096, "model": GPT_OSS}, {"tokens": 32768, "model": GPT_OSS}]
    assert pair["lead_changes"] == [{"tokens": 231, "model": GPT_OSS}]


def test_budget_ties_are_reported_as_ties():
    # At 128 tokens: gpt-oss 36 × 128 × 2,048 = 9,437,184 B, Qwen2.5 128 × 57,344 = 7,340,032 B;
    # in 10 MiB = 10,485,760 B each fits exactly one request.
    result = run("compare", GPT_OSS, QWEN25, "--context", "128", "--budget", "10MiB")
    assert result.exit_code == 0, result.stderr
    assert "more requests fit as many with either at 128" in result.stdout


def test_longest_context_for_a_batch():
    # 8 requests in 80 GiB: 10 GiB = 10,737,418,240 B each.
    # Llama: 10,737,418,240 / 131,072 = 81,920 tokens.
    # Qwen3-Next: (10,737,418,240 − 77,266,944) / 24,576 = 433,762.3 → 433,762, past its 262,144 maximum.
    result = run("compare", LLAMA, QWEN_NEXT, "--budget", "80GiB", "--batch", "8", "--context", "32k", "--format", "markdown")
    assert result.exit_code == 0, result.stderr
    assert "| longest context, 8 requests in 80.00 GiB | 81,920 tokens | 433,762 tokens† |" in result.stdout
    assert "- † past the model's max_position_embeddings" in result.stdout


def test_markdown_has_the_table_and_the_pair_lines():
    result = run("compare", LLAMA, GPT_OSS, "--context", "4k", "--format", "markdown")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "| | Meta-Llama-3.1-8B | gpt-oss-120b |"
    assert lines[1] == "|---|---:|---:|"
    assert "| α (bytes/token) | 131,072 B (128.00 KiB) | 36,864 B (36.00 KiB) |" in lines
    # 4K: Llama 131,072 × 4,096 = 512 MiB; gpt-oss 155,713,536 B = 148.50 MiB
    assert "| 4K: bytes/request | 512.00 MiB | 148.50 MiB |" in lines
    assert any(line.startswith("- Meta-Llama-3.1-8B vs gpt-oss-120b:") for line in lines)


# -- compare: errors ------------------------------------------------------------------------------


def test_a_failing_model_gives_one_line_and_the_others_are_shown(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"model_type": "llama", "num_hidden_layers": "many", "num_attention_heads": 32}')
    missing = str(tmp_path / "missing.json")
    result = run("compare", str(bad), LLAMA, missing, GPT_OSS, "--context", "4k", "--format", "json")
    assert result.exit_code == 2  # a config hfkv cannot read (2) outranks a missing file (1)
    assert len(result.stderr.strip().splitlines()) == 2
    assert "num_hidden_layers" in result.stderr and "Traceback" not in result.stderr
    data = json.loads(result.stdout)
    assert [m["model_type"] for m in data["models"]] == ["llama", "gpt_oss"]
    assert [e["model"] for e in data["errors"]] == [str(bad), missing]
    assert data["errors"][1]["error"].startswith("not-found")
    assert len(data["pairs"]) == 1


def test_only_a_missing_file_exits_1(tmp_path):
    result = run("compare", str(tmp_path / "nope.json"), LLAMA, "--context", "4k")
    assert result.exit_code == 1
    assert "Meta-Llama-3.1-8B" in result.stdout  # the readable model is still shown
    assert result.stderr.count("hfkv: error:") == 1


def test_repo_ids_come_from_the_hub_beside_files(fake_hub):
    # The fake Hub serves fixtures/<org>__<name>/config.json as org/name.
    result = run("compare", "openai/gpt-oss-120b", LLAMA, "nobody/not-here", "--endpoint", fake_hub.url,
                 "--context", "4k", "--format", "json")
    assert result.exit_code == 1, result.stderr  # the missing repo: one line, the others shown
    assert result.stderr.count("hfkv: error:") == 1 and "nobody/not-here" in result.stderr
    data = json.loads(result.stdout)
    assert [m["model"] for m in data["models"]] == ["openai/gpt-oss-120b", LLAMA]
    assert data["models"][0]["alpha_bytes_per_token"] == 36864  # 18 × 2,048, as from the file
    assert data["pairs"][0]["more_requests"] == [{"tokens": 4096, "model": "openai/gpt-oss-120b"}]


def test_labels():
    assert short_label("openai/gpt-oss-120b") == "gpt-oss-120b"
    assert short_label(GPT_OSS) == "gpt-oss-120b"  # fixtures/openai__gpt-oss-120b/config.json
    assert short_label("some/dir/model.json") == "model"
    assert unique_labels(["a/x", "b/x", "c/y"]) == ["a/x", "b/x", "y"]  # collisions keep the full text


# -- plot -----------------------------------------------------------------------------------------


def test_plot_without_matplotlib_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    target = tmp_path / "out.png"
    result = run("plot", LLAMA, "--output", str(target))
    assert result.exit_code == 2
    assert result.stderr.strip() == "hfkv: error: install hfkv[plot] for plots"
    assert not target.exists()


def test_plot_rejects_other_formats(tmp_path):
    result = run("plot", LLAMA, "--output", str(tmp_path / "out.jpg"))
    assert result.exit_code == 2
    assert ".png or .svg" in result.output


def test_plot_figures_by_band():
    from hfkv.render.curves import concurrency, curves
    from hfkv.inspection import inspect_config
    from hfkv.model.options import Options

    report = inspect_config(json.loads(Path(GPT_OSS).read_text()), model="gpt-oss", options=Options())
    c = curves(report, [64, 4096])
    # 64 tokens, inside the window: both halves hold 18 × 64 × 2,048 = 2,359,296 B
    # 4,096 tokens: window 18 × 128 × 2,048 = 4,718,592; full 18 × 4,096 × 2,048 = 150,994,944
    assert c.bands == {"window": [2359296, 4718592], "full attention": [2359296, 150994944]}
    assert c.totals == [4718592, 155713536]
    # 60 GiB / 4,718,592 = 13,653.3; 60 GiB / 155,713,536 = 413.7
    assert concurrency(c.totals, 60 * GIB) == [13653, 413]
    assert concurrency(c.totals, 1000) == [pytest.approx(float("nan"), nan_ok=True)] * 2  # not one fits


def test_plot_gives_compressor_rings_their_own_band():
    from hfkv.render.curves import curves
    from hfkv.inspection import inspect_config
    from hfkv.model.options import Options

    v4 = Path(__file__).resolve().parents[2] / "fixtures" / "deepseek-ai__DeepSeek-V4-Flash" / "config.json"
    report = inspect_config(json.loads(v4.read_text()), model="v4", options=Options())
    c = curves(report, [1024])
    # rings (bf16 KV, fp32 state): 21 CSA × (8 × 4 × 512 × 4 + 8 × 4 × 128 × 4 = 81,920) + 20 HCA × 128 × 2 × 512 × 4
    assert c.bands["compressor rings"] == [21 * 81920 + 20 * 524288] == [12206080]
    assert c.bands["window"] == [43 * 128 * 1024]  # every layer's raw window, full at 1K
    # compressed entries at 1K: 21 × 256 × 1,024 (CSA) + 20 × 8 × 1,024 (HCA); indexer 21 × 256 × 132
    assert c.bands["compressed KV"] == [21 * 256 * 1024 + 20 * 8 * 1024]
    assert c.bands["indexer keys"] == [21 * 256 * 132]


@pytest.fixture
def matplotlib_installed():
    return pytest.importorskip("matplotlib", reason="matplotlib not installed (pip install 'hfkv[plot]'): plot files not tested")


def test_plot_png_of_several_models(matplotlib_installed, tmp_path):
    target = tmp_path / "models.png"
    result = run("plot", V32, GPT_OSS, LLAMA, QWEN_NEXT, "--output", str(target), "--budget", "60GiB")
    assert result.exit_code == 0, result.stderr
    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_plot_svg_of_one_model_and_a_failure(matplotlib_installed, tmp_path):
    target = tmp_path / "one.svg"
    result = run("plot", QWEN_NEXT, str(tmp_path / "missing.json"), "-o", str(target), "--context", "512,64k")
    assert result.exit_code == 1  # the missing file; the plot of the other model is still written
    assert result.stderr.count("hfkv: error:") == 1
    assert target.stat().st_size > 0
    root = ET.parse(target).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    text = target.read_text()
    assert "recurrent state" in text  # the stacked band's legend


def test_plot_of_two_models_marks_where_the_lead_changes(matplotlib_installed, tmp_path):
    # Llama and Qwen3-Next need the same bytes near 725.5 tokens (see the compare test): from 726 on
    # Qwen3-Next needs less, and the SVG keeps the annotation's text.
    target = tmp_path / "pair.svg"
    result = run("plot", QWEN_NEXT, LLAMA, "-o", str(target), "--context", "256,32k")
    assert result.exit_code == 0, result.stderr
    assert ET.parse(target).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    assert "equal near 726 tokens" in target.read_text()


# -- compare: only contexts both models serve, and a model against itself ---------------------------


def test_verdicts_stop_at_the_shorter_maximum():
    # gpt-oss-120b serves 131,072 tokens, Qwen3-Next 262,144: the shared default contexts are 4K, 32K,
    # 128K, 256K (each model's maximum); 256K is past gpt-oss's, so no verdict there.
    # 4K: gpt-oss 36,864 × 4,096 + 4,718,592 = 155,713,536 < Qwen3-Next 24,576 × 4,096 + 77,266,944 = 177,930,240.
    # Equal at (77,266,944 − 4,718,592) / (36,864 − 24,576) = 72,548,352 / 12,288 = 5,904: gpt-oss needs
    # less below, the same at 5,904, Qwen3-Next less from 5,905.
    data = compare_json(GPT_OSS, QWEN_NEXT)
    (pair,) = data["pairs"]
    assert data["contexts"] == [4096, 32768, 131072, 262144]
    assert [row["tokens"] for row in pair["more_requests"]] == [4096, 32768, 131072]
    assert pair["not_compared"] == [262144]
    assert pair["identical"] is False
    assert pair["lead_changes"][-1] == {"tokens": 5905, "model": QWEN_NEXT}
    assert all(change["tokens"] <= 131072 for change in pair["lead_changes"])
    line = next(line for line in run("compare", GPT_OSS, QWEN_NEXT).stdout.splitlines() if " vs " in line)
    assert "256K" not in line.split("not compared")[0]
    assert line.endswith("not compared past 128K (gpt-oss-120b's maximum): 256K")


def test_a_model_compared_with_itself_says_so():
    # Same config twice: the same bytes per request at every context, no "more requests fit".
    data = compare_json(LLAMA, LLAMA, "--context", "4k,32k", "--budget", "60GiB")
    (pair,) = data["pairs"]
    assert pair["identical"] is True and pair["lead_changes"] == []
    result = run("compare", LLAMA, LLAMA, "--context", "4k,32k")
    line = next(line for line in result.stdout.splitlines() if " vs " in line)
    assert "more requests fit" not in line and "as many with either" not in line
    assert "the same bytes per request at every context compared" in line


# -- plot: crossings of every pair, small bands, the deployment panel -------------------------------


# The parsed CLI parameters of `hfkv plot` with every option left at its default.
DEFAULT_PARAMS = {"kv_cache_dtype": "auto", "state_dtype": "fp32", "conv_dtype": "auto", "indexer_dtype": "fp8",
                  "tp": 1, "contexts": None, "budget": None, "batch": None, "prefix_cache": None,
                  "snapshot_interval": None, "spec_tokens": 0}


def _reports(*paths: str, contexts: tuple[int, ...] = (4096, 131072)):
    from hfkv.commands.compare import collect_reports

    return collect_reports(list(paths), {**DEFAULT_PARAMS, "contexts": list(contexts)})


def test_crossings_are_found_for_every_pair_not_only_two():
    from hfkv.render.curves import crossings

    # Qwen3-Next 24,576·S + 77,266,944 against: Llama 131,072·S (equal at 725.5 → 726, see above),
    # gpt-oss 36,864·S + 4,718,592 (equal at 5,904 → Qwen3-Next less from 5,905); Llama vs gpt-oss:
    # 4,718,592 / (131,072 − 36,864) = 50.1 → 51, below the plotted 512.
    out = _reports(LLAMA, GPT_OSS, QWEN_NEXT)
    found = {(c.first, c.second): c.tokens for c in crossings(out.reports, 512, 131072)}
    assert found == {(0, 2): 726, (1, 2): 5905}
    (cross,) = [c for c in crossings(out.reports, 512, 131072) if c.first == 1]
    assert cross.bytes_per_request == 36864 * 5905 + 4718592  # where gpt-oss's line is circled


def test_small_bands_keep_their_exact_figures():
    from hfkv.render.curves import curves

    # The log panel draws Curves.bands as they are: Qwen3-Next's state 36 × 2,146,304 = 77,266,944 at
    # every context, full attention 24,576 × S (4,096: 100,663,296; 131,072: 3,221,225,472).
    out = _reports(QWEN_NEXT)
    c = curves(out.reports[0], [4096, 131072])
    assert c.bands == {"recurrent state": [77266944, 77266944], "full attention": [100663296, 3221225472]}


def test_deployment_figures_come_from_the_serving_plan():
    from hfkv.commands.plot import deployment

    # Llama-3.1-8B, 16 GB of weights, vLLM 0.34's budget on an H200 (tests/planning/test_serving.py): the whole
    # 150,119,844,413 B − 16,000,000,000 − the 3,621,583,590 B vLLM keeps besides − the CUDA context
    # int(0.38 × 2^30) = 408,021,893 − the margin 0.75 × 1,905,786,880 = 1,429,340,160 = 128,660,898,770 B of KV.
    # 4,096 tokens: 131,072 × 4,096 = 536,870,912 B → 239.6 → 239 requests; 32,768: 4 GiB → 29.9 → 29.
    # DP 2 on 2 GPUs (one engine per rank): twice each.
    out = _reports(LLAMA)
    params = {**DEFAULT_PARAMS, "gpu": "H200", "weights_bytes": 16 * 10**9}
    d = deployment(out.configs[0], LLAMA, [4096, 32768], params, hub=None)
    assert (d.xs, d.requests) == ([4096, 32768], [239, 29])
    d2 = deployment(out.configs[0], LLAMA, [4096, 32768], {**params, "gpu": "H200:2", "data_parallel_size": 2}, None)
    assert d2.requests == [478, 58] and d2.where.startswith("2 × H200")
    assert d2.verdict.startswith("fits on 2 × H200")


def test_plot_of_a_deployment_writes_the_layout_and_verdict(matplotlib_installed, tmp_path):
    target = tmp_path / "deploy.svg"
    result = run("plot", LLAMA, "-o", str(target), "--gpu", "H200:2", "--dp", "2", "--weights-bytes", "16GB",
                 "--context", "4k,32k")
    assert result.exit_code == 0, result.stderr
    text = target.read_text()
    assert "Requests that fit on 2 × H200" in text and "DP 2" in text


def test_plot_of_a_refused_layout_is_one_line(tmp_path, matplotlib_installed):
    # 3 GPUs cannot hold DP 2 × TP 2 (4 GPUs): serving's own refusal, one line, no traceback.
    result = run("plot", LLAMA, "-o", str(tmp_path / "x.png"), "--gpu", "H200:3", "--tp", "2", "--dp", "2")
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "x.png").exists()


# -- on a deployment: only a "fits" verdict is ranked or drawn (issue 28) ---------------------------

QWEN25_DIR = str(FIXTURES / "Qwen__Qwen2.5-7B")
LLAMA_DIR = str(FIXTURES / "meta-llama__Meta-Llama-3.1-8B")
# Qwen2.5-7B has 28 attention heads: at TP 8 both engines refuse to start. vLLM's own words
# (vllm/config/parallel.py, verify_with_model_config) and SGLang's Qwen2Attention assertion:
VLLM_28_HEADS = "Total number of attention heads (28) must be divisible by tensor parallel size (8)"
SGLANG_28_HEADS = "total_num_heads (28) % tp_size (8) == 0"
# Llama-3.1-8B on 8 × H100 at TP 8, vLLM 0.34's budget (hfkv's own count), by hand:
#   weights from the config's shapes: 8,030,261,248 parameters × 2 B / 8 GPUs = 2,007,565,312 B per GPU, plus
#   7/8 of the 65 norms every rank holds whole (65 × 4,096 × 2 B = 532,480 → 465,920): 2,008,031,232 B
#   kept besides (tests/planning/test_serving.py's terms, TP 8 on NVSwitch): sampler 558,170,112 + peak
#   1,905,786,880 + non-torch 2^30 / 4 + int(1.90 × 2^30) = 2,308,544,921 + graphs 835,504,051 + slack
#   53,687,091 + CUDA context 408,021,893 + margin 0.75 × 1,905,786,880 = 1,429,340,160 → 7,499,055,108
#   KV budget 85,029,158,912 − 2,008,031,232 − 7,499,055,108 = 75,522,072,572 B per GPU
#   one KV head per GPU: 32 × 1 × 128 × 2 × 2 = 16,384 B/token; one replica (TP 8 on 8 GPUs)
#   4K: 75,522,072,572 / 67,108,864 = 1,125.4 → 1,125; 32K: / 536,870,912 = 140.7 → 140;
#   128K: / 2,147,483,648 = 35.2 → 35
LLAMA_H100_TP8 = {4096: 1125, 32768: 140, 131072: 35}


def test_compare_ranks_only_models_that_serve():
    # The command: Qwen2.5-7B ranked above Llama-3.1-8B as "requests served" though refused.
    data = compare_json(QWEN25_DIR, LLAMA_DIR, "--gpu", "H100:8", "--tp", "8")
    qwen, llama = data["models"]
    assert qwen["serving"]["verdict_detail"]["status"] == "refused"
    assert VLLM_28_HEADS in qwen["serving"]["engines"]["vllm"]["refused"]
    assert SGLANG_28_HEADS in qwen["serving"]["engines"]["sglang"]["refused"]
    assert llama["serving"]["kv_budget_bytes"] == 75_522_072_572
    assert data["ranking"] == [{"tokens": t, "models": [{"model": LLAMA_DIR, "requests": n}]}
                               for t, n in LLAMA_H100_TP8.items()]
    assert data["not_ranked"] == [{"model": QWEN25_DIR, "status": "refused"}]
    pair = data["pairs"][0]
    assert pair["more_requests"] == [] and pair["not_serving"] == [QWEN25_DIR]
    assert pair["not_compared"] == [4096, 32768, 131072]


def test_compare_table_marks_what_does_not_serve():
    result = run("compare", QWEN25_DIR, LLAMA_DIR, "--gpu", "H100:8", "--tp", "8")
    assert result.exit_code == 0, result.stderr
    lines = [" ".join(line.replace("│", " ").split()) for line in result.stdout.splitlines()]
    assert "4K: requests served refused 1,125" in lines and "128K: requests served refused 35" in lines
    assert "requests served at 4K: Meta-Llama-3.1-8B 1,125" in lines
    assert "requests served at 128K: Meta-Llama-3.1-8B 35" in lines
    assert "not ranked (no request counted as served): Qwen2.5-7B (refused)" in lines
    assert not any(line.startswith("requests served at") and "Qwen2.5-7B" in line for line in lines)
    assert result.stdout.rstrip().endswith("not compared on requests served (Qwen2.5-7B: refused)")


def test_a_model_that_does_not_start_is_not_ranked():
    # A KV budget of 10 GiB per GPU given with the GPU: one Llama request at its maximum 131,072 tokens
    # needs 131,072 × 131,072 = 17,179,869,184 B > 10,737,418,240, so vLLM would not start it (10 GiB /
    # 131,072 = 81,920 tokens would). Qwen2.5-7B at TP 1: 28 × 4 × 128 × 2 × 2 = 57,344 B/token; 4K:
    # 10,737,418,240 / 234,881,024 = 45.7 → 45; 32K: / 1,879,048,192 = 5.7 → 5; 128K: / 7,516,192,768 → 1.
    data = compare_json(LLAMA_DIR, QWEN25_DIR, "--gpu", "H100", "--budget", "10GiB")
    assert data["models"][0]["serving"]["verdict"].startswith("does NOT start")
    assert "--max-model-len 81,920 would start" in data["models"][0]["serving"]["verdict"]
    assert data["not_ranked"] == [{"model": LLAMA_DIR, "status": "does-not-fit"}]
    assert [[(m["model"], m["requests"]) for m in row["models"]] for row in data["ranking"]] == [
        [(QWEN25_DIR, 45)], [(QWEN25_DIR, 5)], [(QWEN25_DIR, 1)]]
    table = run("compare", LLAMA_DIR, QWEN25_DIR, "--gpu", "H100", "--budget", "10GiB").stdout
    assert "not ranked (no request counted as served): Meta-Llama-3.1-8B (does NOT start)" in table


@pytest.mark.parametrize("status, words", [("may-not-start", "may not start"), ("unknown", "weights unknown"),
                                           ("does-not-fit", "does NOT fit"), ("refused", "refused")])
def test_every_verdict_but_fits_is_left_out_of_rankings(status, words):
    from hfkv.planning.compare import all_pairs, ranking
    from hfkv.render.compare import ranking_lines, table_rows

    # Both models on one H200 with 60 GiB of KV each: Llama 60 GiB / 512 MiB = 120 at 4K, Qwen2.5-7B
    # 64,424,509,440 / 234,881,024 = 274.3 → 274. Qwen's verdict is then made each other status.
    out = _planned(QWEN25, LLAMA, gpu="H200", budget=60 * GIB, contexts=[4096])
    assert ranking(out.reports) == [(4096, [(0, 274), (1, 120)])]
    out.reports[0].extra["serving"]["verdict_detail"]["status"] = status
    assert ranking(out.reports) == [(4096, [(1, 120)])]
    assert ranking_lines(out)[-1] == f"not ranked (no request counted as served): Qwen2.5-7B ({words})"
    # Its count is never shown as served: the verdict's words (with unknown weights, the upper bound).
    expected = f"≤ 274 ({words})" if status == "unknown" else words
    assert dict(table_rows(out.reports, None))["4K: requests served"] == [expected, "120"]
    assert all_pairs(out.reports, None)[0].winners == [None]


def _planned(*paths: str, **params):
    from hfkv.commands.compare import collect_reports

    return collect_reports(list(paths), {**DEFAULT_PARAMS, **params})


def test_plot_draws_only_what_serves(matplotlib_installed, tmp_path):
    # The same command drawn: Llama's line (the second model: id served-1) and none for Qwen2.5-7B, whose
    # legend entry says it is not drawn and why.
    target = tmp_path / "deploy.svg"
    result = run("plot", QWEN25_DIR, LLAMA_DIR, "--gpu", "H100:8", "--tp", "8", "-o", str(target))
    assert result.exit_code == 0, result.stderr
    text = target.read_text()
    assert 'id="served-1"' in text and 'id="served-0"' not in text
    assert "Qwen2.5-7B (not drawn): refused on 8 × H100-SXM-80GB" in " ".join(text.split())


def test_plot_deployment_keeps_the_verdicts_status():
    from hfkv.commands.plot import deployment

    out = _reports(QWEN25)
    params = {**DEFAULT_PARAMS, "gpu": "H100:8", "tp": 8}
    d = deployment(out.configs[0], QWEN25, [4096, 32768], params, hub=None)
    assert d.status == "refused" and not d.drawn and d.requests == [None, None]


# -- one line per error (issue 31) ----------------------------------------------------------------


def test_an_error_every_model_shares_is_printed_once(tmp_path):
    config = tmp_path / "x.json"
    config.write_bytes(Path(LLAMA).read_bytes())
    # The command: TP 1,000,000,000 with the same file twice. Without a deployment there is
    # nothing to refuse; with vLLM's rules its refusal of 32 heads over 10^9 ranks, said once.
    plain = run("compare", str(config), str(config), "--tp", "1000000000")
    assert plain.stderr.count("hfkv: error:") <= 1
    refused = run("compare", str(config), str(config), "--tp", "1000000000", "--engine", "vllm")
    assert refused.exit_code == 2
    assert refused.stderr.count("hfkv: error:") == 1
    assert "Total number of attention heads (32) must be divisible by tensor parallel size (1000000000)" in refused.stderr
    # An option no model can meet (3 GPUs for TP 2 × DP 2, which needs 4): one line, not one per model.
    layout = run("compare", LLAMA, QWEN25, "--gpu", "H200:3", "--tp", "2", "--dp", "2", "--format", "json")
    assert layout.exit_code == 2
    assert layout.stderr.strip().splitlines() == [
        "hfkv: error: 3 GPUs cannot hold this layout: TP 2 × DP 2 needs 4 (give --gpu NAME:4, or NAME alone)"]
    assert len(json.loads(layout.stdout)["errors"]) == 2  # the JSON still has one error per model
