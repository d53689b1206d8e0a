"""Every command that plans takes the report's deployment options, parsed by one definition
(``hfkv.commands.deploy``), and plans as ``hfkv report`` does: the same verdict for the same model.

Hand figures (bf16 KV, 2 bytes per value):
* Meta-Llama-3.1-8B: 32 layers × 2 × 8 KV heads × 128 × 2 B = 131,072 B per token, 4 GiB at 32K;
* Qwen3-8B: 36 × 2 × 8 × 128 × 2 = 147,456 B per token, 4.5 GiB at 32K;
* DeepSeek-V3.2: 61 × ((512 + 64) × 2 + 132) = 78,324 B per token: 2,566,520,832 B at 32K;
  its 685 B published parameters are stored in fp8 (≥ 1 B each): more than one H200 (141 GB) holds.
* In a 60 GiB budget at 32K: 60 // 4 = 15 Llama requests, floor(60 / 4.5) = 13 Qwen3-8B requests,
  64,424,509,440 // 2,566,520,832 = 25 DeepSeek-V3.2 requests.
"""

from __future__ import annotations

import csv
import io
import json

import click
import pytest
from click.testing import CliRunner

from hfkv.commands.cli import main
from hfkv.commands.deploy import deployment_options
from tests._helpers import FIXTURES

from _helpers import LLAMA_FOLDER as LLAMA

QWEN3 = str(FIXTURES / "Qwen__Qwen3-8B")
DSV32 = str(FIXTURES / "deepseek-ai__DeepSeek-V3.2")


def run(*args: str) -> click.testing.Result:
    return CliRunner().invoke(main, list(args))


def report_verdict(model: str, *args: str) -> dict:
    result = run(model, *args, "--format", "json")
    assert result.exit_code in (0, 3), result.output
    return json.loads(result.output)["serving"]


def test_every_planning_command_has_the_same_deployment_flags():
    flags = set()

    @click.command()
    @deployment_options
    def probe(**_):
        pass

    flags = {opt for p in probe.params for opt in p.opts}
    for command in ("report", "compare", "scan", "plot"):
        help_text = run(command, "--help").output
        missing = [f for f in sorted(flags) if f not in help_text]
        assert not missing, f"{command} lacks {missing}"


def test_scan_rows_carry_requests_verdict_and_weights_per_gpu(tmp_path):
    listing = tmp_path / "list.txt"
    listing.write_text(f"{LLAMA}\n{DSV32}\n")
    result = run("scan", str(listing), "--gpu", "H200", "--context", "32k", "--format", "csv")
    assert result.exit_code == 0, result.output  # a "does NOT fit" is a row, not a failure
    rows = {r["model"]: r for r in csv.DictReader(io.StringIO(result.output))}
    llama, dsv32 = rows[LLAMA], rows[DSV32]
    assert dsv32["verdict_status"] == "does-not-fit" and dsv32["requests@32K"] == "0"
    assert int(dsv32["weights_bytes_per_gpu"]) > 141 * 10**9
    plan = report_verdict(LLAMA, "--gpu", "H200", "--context", "32k")
    assert llama["verdict"] == plan["verdict"]
    assert int(llama["requests@32K"]) == plan["contexts"][0]["max_concurrency_total"]
    assert llama["weights_source"] == "estimate" and int(llama["weights_bytes_per_gpu"]) == 16_060_522_496


def test_scan_with_a_budget_gains_b_max_per_context(tmp_path):
    listing = tmp_path / "list.txt"
    listing.write_text(f"{LLAMA}\n{QWEN3}\n{DSV32}\n")
    result = run("scan", str(listing), "--budget", "60GiB", "--context", "32k", "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = {r["model"]: r["requests@32K"] for r in csv.DictReader(io.StringIO(result.output))}
    assert rows == {LLAMA: "15", QWEN3: "13", DSV32: "25"}


def test_scan_refused_by_the_engine_is_a_row_in_its_words(tmp_path):
    listing = tmp_path / "list.txt"
    listing.write_text(f"{LLAMA}\n")
    # vLLM refuses TP 3: 32 attention heads are not divisible by 3.
    result = run("scan", str(listing), "--gpu", "H200:3", "--tp", "3", "--engine", "vllm", "--format", "jsonl")
    row = json.loads(result.output.splitlines()[0])
    assert result.exit_code == 1 and row["error"].startswith("unsupported:")
    assert "divisible" in row["error"] or "vLLM" in row["error"]


def test_compare_ranks_models_by_requests_served():
    result = run("compare", LLAMA, QWEN3, "--gpu", "H200", "--context", "32k", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    (at_32k,) = data["ranking"]
    served = {m: report_verdict(m, "--gpu", "H200", "--context", "32k")["contexts"][0]["max_concurrency_total"]
              for m in (LLAMA, QWEN3)}
    assert at_32k["tokens"] == 32768
    assert [(row["model"], row["requests"]) for row in at_32k["models"]] == \
        sorted(served.items(), key=lambda item: -item[1])
    # Same weights within 2% and fewer bytes per request (4 GiB vs 4.5 GiB): Llama serves more.
    assert at_32k["models"][0]["model"] == LLAMA
    assert data["pairs"][0]["more_requests"] == [{"tokens": 32768, "model": LLAMA}]


def test_compare_table_prints_each_verdict():
    result = run("compare", LLAMA, DSV32, "--gpu", "H200", "--context", "32k")
    assert result.exit_code == 0, result.output
    assert "does NOT fit on 1 × H200-141GB" in result.output
    assert "requests served at 32K:" in result.output


@pytest.mark.parametrize("command", ["compare", "scan"])
def test_a_bad_layout_is_one_line(command, tmp_path):
    target = [LLAMA, QWEN3] if command == "compare" else [str(tmp_path / "l.txt")]
    (tmp_path / "l.txt").write_text(f"{LLAMA}\n")
    result = run(command, *target, "--gpu", "H200", "--dp", "0")
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_a_gpu_no_preset_names_is_given_by_its_memory():
    # --gpu-memory 40GiB is --gpu 40GiB: a GPU whose CUDA total is exactly 40 × 2^30 = 42,949,672,960 B.
    runner = CliRunner()
    by_flag = runner.invoke(main, [LLAMA, "--gpu-memory", "40GiB", "--weights-bytes", "16GB", "--format", "json"])
    by_name = runner.invoke(main, [LLAMA, "--gpu", "40GiB", "--weights-bytes", "16GB", "--format", "json"])
    assert by_flag.exit_code == 0 and by_name.exit_code == 0, by_flag.output
    plan, same = json.loads(by_flag.stdout)["serving"], json.loads(by_name.stdout)["serving"]
    assert plan["memory_budget_bytes"] == 42_949_672_960 and plan["gpu"] == "GPU-40GiB"
    assert plan["kv_budget_bytes"] == same["kv_budget_bytes"]
    both = runner.invoke(main, [LLAMA, "--gpu", "H100", "--gpu-memory", "40GiB"])
    assert both.exit_code == 2 and "not both" in both.output
    bad = runner.invoke(main, [LLAMA, "--gpu-memory", "lots"])
    assert bad.exit_code == 2 and "not a memory size" in bad.output
