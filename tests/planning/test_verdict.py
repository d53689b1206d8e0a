"""The verdict (hfkv/planning/verdict.py) when nothing fits: a budget too small for one token, weights
larger than the GPU, said in every format."""

from __future__ import annotations

import json

import pytest

from _helpers import FIXTURES, run_cli as run, SMALL_LLAMA as LLAMA, write_named_config as write_config


# -- item 14: budgets ----------------------------------------------------------------------------------


def test_a_budget_too_small_for_one_token_says_it_does_not_fit(tmp_path):
    # 1 KiB = 1024 B < 2048 B, one token of one request: not even one token fits.
    result = run(write_config(tmp_path, "m", LLAMA), "--budget", "1KiB", "--batch", "1")
    assert "does not fit" in result.stdout and ": 0 tokens" not in result.stdout


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_weights_that_do_not_fit_are_said_in_every_format(tmp_path, fmt):
    # An H100's CUDA total 85,029,158,912 B: vLLM 0.34 (the newest modelled, utilization 1.0) may use all of it,
    # < 200 × 10^9 B of weights.
    result = run(write_config(tmp_path, "m", LLAMA), "--gpu", "H100", "--weights-bytes", "200GB", "--format", fmt)
    assert "the weights do not fit" in result.stdout
    if fmt == "json":
        serving = json.loads(result.stdout)["serving"]
        assert serving["weights_fit"] is False and serving["usable_bytes"] == 85_029_158_912


# -- issue 28: the verdict answers the start the engine would make ---------------------------------------

LLAMA_8B = str(FIXTURES / "meta-llama__Meta-Llama-3.1-8B")
QWEN3_8B = str(FIXTURES / "Qwen__Qwen3-8B")


def test_a_deployment_whose_max_length_does_not_fit_does_not_start():
    # Llama-3.1-8B, 16,060,522,496 B of weights on an L4, vLLM 0.34's budget (tests/render/test_html.py):
    # 4,441,474,453 B of KV. One request at its maximum 131,072 needs 131,072 × 131,072 B = 16 GiB: vLLM would
    # not start. The longest that fits: 4,441,474,453 // 131,072 B per token = 33,885.
    result = run(LLAMA_8B, "--gpu", "L4", "--weights-bytes", "16060522496")
    assert result.exit_code == 3
    assert result.stdout.splitlines()[0] == (
        "does NOT start on 1 × L4-24GB (hfkv, TP 1): one request at the max length 131,072 needs 16.00 GiB per "
        "GPU of the 4.14 GiB KV budget; --max-model-len 33,885 would start")
    # Asked at a length that starts: 4,441,474,453 // (32,768 × 131,072 = 4,294,967,296) = 1 request at the central
    # estimate, none at the low end of its band (4,441,474,453 − 1.0 GiB): it may not start, said with both ends.
    fits = run(LLAMA_8B, "--gpu", "L4", "--weights-bytes", "16060522496", "--max-model-len", "32768",
               "--context", "32k")
    assert fits.exit_code == 0 and fits.stdout.splitlines()[0].startswith(
        "may not start on 1 × L4-24GB: 1 at 32K (vLLM 0.34.0, TP 1) at the central estimate; 0–1 within the "
        "estimates' bands")


def test_a_context_past_the_models_maximum_is_refused_as_the_engines_refuse_it(monkeypatch):
    # Llama-3.1-8B's maximum is 131,072 (max_position_embeddings): vLLM and SGLang refuse a longer length.
    result = run(LLAMA_8B, "--gpu", "H100", "--context", "1000000000000")
    assert result.exit_code == 3
    assert result.stdout.splitlines()[0].startswith(
        "refused on 1 × H100-SXM-80GB (hfkv, TP 1): 1,000,000,000,000 tokens is past the model's maximum (131,072)")
    # Qwen3-8B (40,960) with --max-model-len 131072: each engine mode refuses in its engine's words (exit 2).
    vllm = run(QWEN3_8B, "--gpu", "H100", "--engine", "vllm", "--max-model-len", "131072")
    assert vllm.exit_code == 2 and "max_model_len (131072) is greater than the derived max_model_len (40960)" in (
        vllm.stderr)
    sglang = run(QWEN3_8B, "--gpu", "H100", "--engine", "sglang", "--max-model-len", "131072")
    assert sglang.exit_code == 2 and "context_length (131072) is greater than the derived" in sglang.stderr
    theory = run(QWEN3_8B, "--gpu", "H100", "--max-model-len", "131072")
    assert theory.exit_code == 3 and "131,072 tokens is past the model's maximum (40,960)" in theory.stdout
    # With both engines' opt-ins set, they serve it and so does the verdict.
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
    monkeypatch.setenv("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "1")
    assert run(QWEN3_8B, "--gpu", "H100", "--max-model-len", "131072").exit_code == 0


def test_a_gpu_count_is_what_the_user_gave_bounded_both_ways():
    # TP 8 needs 8 GPUs: "H100" alone is raised to them, an explicit "H100:1" is refused; 10^9 GPUs is a typo.
    assert run(QWEN3_8B, "--gpu", "H100", "--tp", "8").stdout.startswith("fits on 8 × H100-SXM-80GB")
    one = run(QWEN3_8B, "--gpu", "H100:1", "--tp", "8")
    assert one.exit_code == 2 and "1 GPU cannot hold this layout: TP 8 needs 8" in one.stderr
    huge = run(QWEN3_8B, "--gpu", "H100:1000000000")
    assert huge.exit_code == 2 and "1,000,000,000 GPUs is more than one deployment holds" in huge.stderr


def test_plan_takes_a_gpu_name_and_says_no_where_a_layout_holds_too_few():
    zero = run("plan", QWEN3_8B, "--requests", "4", "--context", "8k", "--gpu", "H100:0")
    assert zero.exit_code == 2 and "must be a positive whole number" in zero.stderr
    counted = run("plan", QWEN3_8B, "--requests", "4", "--context", "8k", "--gpu", "H100:2")
    assert counted.exit_code == 2 and "plan chooses how many GPUs" in counted.stderr
    many = run("plan", QWEN3_8B, "--requests", "1000000000000", "--context", "8k", "--gpu", "H100",
               "--format", "json")
    data = json.loads(many.stdout)
    assert data["best"] is None and data["dropped"]
    assert all(not (o["verdict"] or "").startswith("fits") for o in data["dropped"])
    assert any(o["verdict"].startswith("does NOT hold 1,000,000,000,000 requests of 8K") for o in data["dropped"])


def test_brief_prints_the_answer_alone():
    # --brief: the verdict, the weights, the KV budget per GPU and the requests per context, nothing else.
    # Llama-3.1-8B on an H100 with 16,060,522,496 B of weights: vLLM 0.34's 63,509,690,773 B of KV
    # (tests/planning/test_serving.py) = 59.15 GiB; per context 4K: 63,509,690,773 // 536,870,912 = 118,
    # 32K: // 4,294,967,296 = 14, 128K: // 17,179,869,184 = 3.
    result = run(LLAMA_8B, "--gpu", "H100", "--weights-bytes", "16060522496", "--brief")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 4 and lines[0] == "fits on 1 × H100-SXM-80GB: 3 requests at 128K (vLLM 0.34.0, TP 1)"
    assert lines[1].startswith("weights: ") and lines[2] == "KV budget per GPU: 59.15 GiB"
    assert lines[3] == "requests across the deployment: 4K 118 · 32K 14 · 128K 3"
    assert len(lines[0]) < 160


def test_where_vllm_refuses_sglangs_own_count_leads():
    # Nemotron-H-56B on one H200 at 8K: vLLM (0.34) refuses its default 1,024 sequences for fewer Mamba cache
    # blocks (config/compilation.py), SGLang starts: its own count is the one the line gives, hfkv's beside it.
    result = run(str(FIXTURES / "nvidia__Nemotron-H-56B-Base-8K"), "--gpu", "H200", "--context", "8k", "--format", "json")
    detail = json.loads(result.stdout)["serving"]["verdict_detail"]
    assert detail["counted_by"] == "SGLang 0.5.23" and detail["status"] in ("fits", "may-not-start")
    assert detail["engines"]["vLLM"].startswith("would refuse (vLLM 0.34.0 would refuse to start: max_num_seqs (1024) "
                                                "exceeds available Mamba cache blocks")
    assert detail["engines"]["hfkv"].endswith("(exact bytes per request)")
