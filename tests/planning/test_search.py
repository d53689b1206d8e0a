"""``hfkv plan`` / ``hfkv.plan``: the fewest GPUs, and the layouts, that hold N requests of S tokens.

The hand bounds below (Meta-Llama-3.1-8B, the README's fixture: 32 layers, 8 KV heads of 128, bf16):

* one request of 32K at bf16: 32 × 8 × 128 × 2 (K and V) × 2 B × 32,768 = 4,294,967,296 B (4 GiB);
* what vLLM may use of one H100: ceil(85,029,158,912 × 0.92) = 78,226,826,200 B; the weights alone
  are 8,030,261,248 parameters (Meta's published count) × 2 B = 16,060,522,496 B;
* so one H100 holds at most (78,226,826,200 − 16,060,522,496) // 4,294,967,296 = 14 requests, even
  with no reserve at all, and 15 requests need a second GPU;
* two H100 at TP 2 halve both (2 GiB per request per GPU, 8,030,261,248 B of weights): with a reserve
  of even 6 GiB, (78,226,826,200 − 8,030,261,248 − 6 × 2**30) // 2**31 = 29 requests ≥ 15.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import hfkv
from hfkv.commands.cli import main as cli
from hfkv.planning.search import Layout, layouts
from tests._helpers import FIXTURES

from _helpers import LLAMA_FOLDER as LLAMA

CTX = 32 * 1024


def test_layouts_counted_by_hand():
    # GPUs 1: TP1 → 1. GPUs 2: TP1 × PP {1,2}, TP2 → 3. GPUs 3: TP1 × PP {1,3} → 2.
    # GPUs 4: TP1 × PP {1,2,4}, TP2 × PP {1,2}, TP4 → 6. 1 + 3 + 2 + 6 = 12.
    found = layouts(("vllm",), max_gpus=4, gpus_per_node=4, moe=False, kv_dtypes=("auto",))
    assert len(found) == 12
    assert all(o.tp * o.pp * o.dp == o.gpus for o in found)
    # TP stays in a node: with 2 GPUs per node, TP 4 on 4 GPUs goes (12 − 1 = 11).
    assert len(layouts(("vllm",), 4, 2, False, ("auto",))) == 11
    # SGLang adds DP attention at DP = TP where there are no other replicas: (2: TP2), (4: TP2 × PP2, TP4).
    sglang = layouts(("sglang",), 4, 4, False, ("auto",))
    assert len(sglang) == 12 + 3
    assert Layout("sglang", 4, 4, 1, 4, True) in sglang
    # A MoE model is also tried with EP wherever the experts span more than one GPU of a stage:
    # 12 layouts, of which TP1 PP1, TP1 PP2 (GPUs 2), TP1 PP3 (GPUs 3) and TP1 PP4 (GPUs 4) span one.
    assert len(layouts(("vllm",), 4, 4, True, ("auto",))) == 12 + (12 - 4)
    # Both KV dtypes double everything.
    assert len(layouts(("vllm",), 4, 4, False)) == 24


def test_one_h100_cannot_hold_15_requests_of_32k():
    found = hfkv.plan(LLAMA, requests=15, context=CTX, gpu="H100", max_gpus=1, kv_cache_dtypes=("auto",))
    assert found.best is None
    assert found.dropped and all(o.status != "kept" for o in found.dropped)
    assert all((o.requests or 0) <= 14 for o in found.dropped)  # the hand bound, either engine


def test_two_h100_are_the_fewest_for_15_requests():
    found = hfkv.plan(LLAMA, requests=15, context=CTX, gpu="H100", max_gpus=2, kv_cache_dtypes=("auto",))
    assert found.best is not None and found.best.layout.gpus == 2
    tp2 = [o for o in found.kept if o.layout.tp == 2 and o.layout.engine == "vllm"]
    assert tp2 and 15 <= tp2[0].requests <= 32  # ≥ 15 asked; ≤ (78,226,826,200 − 8,030,261,248) // 2**31 = 32
    # The fewest GPUs first, then the alternatives by requests per GPU.
    assert found.best.layout.gpus == min(o.layout.gpus for o in found.kept)
    density = [o.requests_per_gpu for o in found.kept[1:]]
    assert density == sorted(density, reverse=True)


def test_the_printed_command_gives_the_same_verdict():
    found = hfkv.plan(LLAMA, requests=15, context=CTX, gpu="H100", max_gpus=2, kv_cache_dtypes=("auto",))
    best = found.best
    assert "--max-model-len 32k" in best.command  # the engines size their pools at the context asked
    args = best.command.split()[1:] + ["--format", "json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["serving"]["verdict"] == best.verdict


def test_marginal_layouts_are_not_kept():
    # At 4K a request is 32 × 8 × 128 × 2 × 2 × 4,096 = 536,870,912 B: the reserve's band (about 1 GiB)
    # moves the count by about two, so the count at the band's low end is below the central one.
    ctx = 4096
    probe = hfkv.plan(LLAMA, requests=1, context=ctx, gpu="H100", engine="vllm", max_gpus=1,
                      kv_cache_dtypes=("auto",))
    one = probe.best
    assert one is not None and one.requests_low < one.requests
    found = hfkv.plan(LLAMA, requests=one.requests, context=ctx, gpu="H100", engine="vllm", max_gpus=1,
                      kv_cache_dtypes=("auto",))
    assert found.best is None
    (marginal,) = found.dropped
    assert marginal.status == "marginal" and "low end" in marginal.reason


def test_cli_exit_codes_and_json():
    runner = CliRunner()
    ok = runner.invoke(cli, ["plan", LLAMA, "--requests", "15", "--context", "32k", "--gpu", "H100",
                             "--max-gpus", "2", "--kv-cache-dtype", "auto", "--format", "json"])
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.output)
    assert data["best"]["gpus"] == 2 and data["requests"] == 15 and data["context"] == CTX
    assert {o["status"] for o in data["dropped"]} <= {"too-few", "marginal", "weights", "refused", "unknown"}
    no = runner.invoke(cli, ["plan", LLAMA, "--requests", "15", "--context", "32k", "--gpu", "H100",
                             "--max-gpus", "1", "--kv-cache-dtype", "auto"])
    assert no.exit_code == 3
    assert "does NOT fit" in no.output and "closest" in no.output


@pytest.mark.parametrize("args, word", [
    (["--context", "lots"], "lots"),
    (["--gpu", "Z9000"], "Z9000"),
])
def test_cli_bad_input_is_one_line(args, word):
    result = CliRunner().invoke(cli, ["plan", LLAMA, "--requests", "4", "--context", "8k", *args])
    assert result.exit_code == 2
    assert word in result.output and "Traceback" not in result.output


def test_the_command_carries_the_given_weights_and_knobs():
    found = hfkv.plan(LLAMA, requests=4, context=CTX, gpu="H100", max_gpus=1, engine="vllm",
                      kv_cache_dtypes=("auto",), weights_bytes=16 * 10**9, gpu_memory_utilization=0.8)
    best = found.best
    assert "--weights-bytes 16000000000" in best.command and "--gpu-memory-utilization 0.8" in best.command
    result = CliRunner().invoke(cli, best.command.split()[1:] + ["--format", "json"])
    serving = json.loads(result.output)["serving"]
    assert serving["verdict"] == best.verdict
    assert serving["usable_bytes"] == 68_023_327_130  # ceil(85,029,158,912 × 0.8)


def test_the_fewest_gpus_keep_the_models_kv_dtype_when_it_suffices():
    # One 4K request (512 MiB at bf16) fits one H100 either way: fp8 would trade accuracy for nothing.
    found = hfkv.plan(LLAMA, requests=1, context=4096, gpu="H100", max_gpus=1)
    assert found.best.layout.kv_cache_dtype == "auto"


def test_unknown_weights_are_not_a_no(tmp_path):
    # Gemma 3 4B with its vision_config written as null: a wrapper with a tower it does not describe, so the weights
    # are unknown (left out, Gemma3Config's own default tower would be priced)
    config = json.loads((FIXTURES / "google__gemma-3-4b-it" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "vision_config": None}))
    result = CliRunner().invoke(cli, ["plan", str(tmp_path), "--requests", "1",
                                      "--context", "4k", "--gpu", "H100", "--max-gpus", "1"])
    assert result.exit_code == 3
    first = result.output.splitlines()[0]
    assert first.startswith("unknown:") and "--weights-bytes" in first and "does NOT fit" not in result.output
