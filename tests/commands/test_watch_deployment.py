"""``hfkv watch`` plans each report as ``hfkv report`` does, once per ``--gpu`` spec, with the report's
deployment options (``hfkv.commands.deploy``): the same verdict, the same requests served.

Hand figures: Meta-Llama-3.1-8B keeps 32 layers × 2 × 8 KV heads × 128 × 2 B = 131,072 B per token
(bf16), 17,179,869,184 B (16 GiB) per 128K request, 536,870,912 B at 4K; at TP 8 one GPU keeps 1/8.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from hfkv.commands import watch
from hfkv.commands.cli import main
from hfkv.commands.deploy import deployment_options
from hfkv.planning.gpus import COMMON_GPUS

from _helpers import LLAMA_DICT as LLAMA

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ORG = "deployorg"
REPO = f"{ORG}/llama"


@pytest.fixture
def hub(fake_hub):
    fake_hub.add_model(REPO, {"config.json": LLAMA}, created_at="2026-06-01T00:00:00.000Z")  # no safetensors
    return fake_hub


def watch_json(hub, out: Path, *args: str) -> dict:
    result = CliRunner().invoke(main, ["watch", "--author", ORG, "--out", str(out), "--since", "2026-01-01", "--once",
                                       "--endpoint", hub.url, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads((out / f"{ORG}__llama.json").read_text())


def report_serving(hub, gpu: str, *args: str) -> dict:
    result = CliRunner().invoke(main, [REPO, "--endpoint", hub.url, "--gpu", gpu, "--format", "json", *args])
    assert result.exit_code in (0, 3), result.output
    return json.loads(result.output)["serving"]


def test_watch_takes_the_deployment_flags_of_report():
    @click.command()
    @deployment_options
    def probe(**_):
        pass

    flags = {opt for p in probe.params for opt in p.opts}
    help_text = CliRunner().invoke(main, ["watch", "--help"]).output
    assert not [f for f in sorted(flags) if f not in help_text]
    assert "--gpu-memory-utilization" in flags  # an engine knob of every command, not watch's own option
    assert [p for p in watch.watch_command.params if p.name == "gpus"][0].multiple  # --gpu is repeatable


def test_the_default_gpus_are_the_common_presets_one_each(hub, tmp_path):
    data = watch_json(hub, tmp_path / "out")
    plans = data["watch"]["plans"]
    assert tuple(plans) == COMMON_GPUS and data["watch"]["gpus"] == list(COMMON_GPUS)
    assert all(plan["gpu_count"] == 1 and plan["gpu"] == spec for spec, plan in plans.items())
    assert data["serving"] is None


@pytest.mark.parametrize("gpu, args", [
    ("H200:8", ("--tp", "8")),  # one engine copy on 8 GPUs
    ("H100:8", ("--dp", "8")),  # 8 replicas: requests counted on every rank
    ("H200", ("--engine", "sglang", "--mem-fraction-static", "0.8")),  # the engine's own count and budget
    ("B200", ("--gpu-memory-utilization", "0.5",)),
])
def test_each_plan_is_what_report_prints_for_that_gpu(hub, tmp_path, gpu, args):
    data = watch_json(hub, tmp_path / "out", "--gpu", gpu, "--no-weights", *args)
    (spec,) = data["watch"]["plans"]
    plan = data["watch"]["plans"][spec]
    assert plan == report_serving(hub, gpu, "--no-weights", *args)  # the one planning path, the one verdict
    md = (tmp_path / "out" / f"{ORG}__llama.md").read_text()
    where = f"{plan['gpu_count']} × {plan['gpu']}"
    assert f"| requests on {where} |" in md
    assert f"** {where}**: {plan['verdict']}" in md.replace("✓", "").replace("✗", "").replace("?", "")
    served = [c["max_concurrency_total"] for c in plan["contexts"]]
    rows = re.findall(r"^\| (4K|32K|128K) \| [^|]+ \| [^|]+ \| ([\d,]+) \|$", md, re.M)
    assert [int(n.replace(",", "")) for _, n in rows] == served


def test_data_parallel_replicas_count_every_rank(hub, tmp_path):
    data = watch_json(hub, tmp_path / "out", "--gpu", "H200:8", "--dp", "8", "--no-weights")
    plan = data["watch"]["plans"]["H200-141GB:8"]
    assert plan["request_ranks"] == 8 and plan["gpu_count"] == 8
    # Each H200 keeps its own requests: the deployment serves 8 × one GPU's B_max (what budget // bytes
    # on one GPU, the old column, said for the whole deployment).
    one = watch_json(hub, tmp_path / "one", "--gpu", "H200", "--no-weights")["watch"]["plans"]["H200-141GB"]
    assert [c["max_concurrency_total"] for c in plan["contexts"]] == [8 * c["max_concurrency"] for c in one["contexts"]]
    index = (tmp_path / "out" / "index.md").read_text()
    assert f"✓ {plan['verdict_detail']['requests']:,} at 128K" in index


def test_a_spec_whose_gpus_cannot_hold_the_layout_is_shown_refused(hub, tmp_path):
    out = tmp_path / "out"
    data = watch_json(hub, out, "--gpu", "H200:2", "--gpu", "H200:8", "--tp", "8", "--no-weights")
    plans = data["watch"]["plans"]
    assert "refused" in plans["H200-141GB:2"] and "8" in plans["H200-141GB:2"]["refused"]
    assert plans["H200-141GB:8"]["verdict_detail"]["status"] == "fits"
    md = (out / f"{ORG}__llama.md").read_text()
    assert "- **✗ H200-141GB:2**: refused on H200-141GB:2: " in md
    assert re.search(r"^\| 4K \| [^|]+ \| [^|]+ \| refused \| [\d,]+ \|$", md, re.M)
    assert "✗ refused" in (out / "index.md").read_text()


def test_a_gpu_the_weights_fill_serves_nothing_and_says_why(hub, tmp_path):
    out = tmp_path / "out"
    data = watch_json(hub, out, "--gpu", "L4", "--weights-bytes", "100GB", "--html")
    plan = data["watch"]["plans"]["L4-24GB"]
    assert plan["weights_fit"] is False and plan["verdict_detail"]["status"] == "does-not-fit"
    assert plan["weights_source"] == "given" and plan["weights_bytes_per_gpu"] == 100 * 10**9
    md = (out / f"{ORG}__llama.md").read_text()
    assert re.search(r"^\| 128K \| 16\.00 GiB \| 16\.00 GiB \| 0 \|$", md, re.M)
    assert "  - weights per GPU 93.13 GiB (given with --weights-bytes); KV budget per GPU none: the weights do not fit" in md
    page = (out / f"{ORG}__llama.html").read_text()
    assert 'class="headline failed" data-gpu="L4-24GB"' in page
    assert 'class="num verdict does-not-fit" data-gpu="L4-24GB">✗ does not fit<' in (out / "index.html").read_text()


def test_a_state_and_reports_of_the_previous_version_still_load(hub, tmp_path):
    """A folder the previous hfkv watch wrote (state version 1, reports with watch.gpu_budgets): the next
    run with --html loads it, draws the missing pages and keeps the old rows beside the new ones."""
    out = tmp_path / "out"
    out.mkdir()
    old_report = json.loads(CliRunner().invoke(main, [str(FIXTURES / "Qwen__Qwen3-8B"), "--format", "json"]).output)
    old_report["model"] = f"{ORG}/older"
    old_report["watch"] = {"created_at": "2026-03-01T00:00:00+00:00", "listing_sha": None,
                           "gpu_memory_utilization": 0.92, "gpu_budgets": {"H200-141GB": 123_285_789_410}}
    (out / f"{ORG}__older.json").write_text(json.dumps(old_report))
    (out / f"{ORG}__older.md").write_text("# KV cache: older\n")
    state = {"version": 1, "since": "2026-01-01T00:00:00+00:00", "models": {
        f"{ORG}/older": {"status": "done", "author": ORG, "created_at": "2026-03-01T00:00:00+00:00", "sha": None,
                         "file": f"{ORG}__older", "model_type": "qwen3", "alpha_bytes_per_token": 147456,
                         "total_parameters": None, "weights_bytes": None},
        f"{ORG}/flaky": {"status": "error", "author": ORG, "created_at": "2026-02-01T00:00:00+00:00", "sha": None,
                         "error": "network: down"}}}
    (out / watch.STATE_FILE).write_text(json.dumps(state, indent=2))
    result = CliRunner().invoke(main, ["watch", "--author", ORG, "--out", str(out), "--once", "--html", "--gpu", "H200",
                                       "--endpoint", hub.url], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"1 report(s) written ({REPO})" in result.output
    saved = json.loads((out / watch.STATE_FILE).read_text())
    older = saved["models"][f"{ORG}/older"]
    assert older["gamma_bytes_per_request"] == 0 and older["gpus"] == {}  # completed once from its JSON
    assert (out / f"{ORG}__older.html").is_file() and (out / f"{ORG}__older.md").read_text() == "# KV cache: older\n"
    index = (out / "index.html").read_text()
    assert index.index(f"{ORG}__llama.html") < index.index(f"{ORG}__older.html") and "network: down" in index
    md_index = (out / "index.md").read_text()
    assert re.search(rf"\| 2026-03-01 \| {ORG}/older \| qwen3 \| 147,456 \| - \| - \| - \| \[md\]", md_index)
    # And nothing is read or written again by a run with nothing new.
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    again = CliRunner().invoke(main, ["watch", "--author", ORG, "--out", str(out), "--once", "--html", "--gpu", "H200",
                                      "--endpoint", hub.url], catch_exceptions=False)
    assert again.exit_code == 0 and {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
