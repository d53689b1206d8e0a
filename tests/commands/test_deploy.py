"""Deployments: parallel layouts (DP, SGLang DP attention, EP, PP), their refusals and the verdict line.

Every expected figure is derived by hand below from the config's shapes and the engines' rules.
"""

from __future__ import annotations

import io
import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

from hfkv.engines import simulate
from hfkv.engines import layout as lay
from hfkv.planning.enrich import enrich
from hfkv.errors import UnsupportedModelError, UsageError
from hfkv.render.terminal import render_markdown, render_table
from hfkv.inspection import inspect_config
from hfkv.model.options import Options
from hfkv.planning.serving import plan_serving

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(__file__).resolve().parents[3] / "shared"
DSV32 = SHARED / "hub-configs" / "deepseek-ai__DeepSeek-V3.2.json"

# vLLM's budget starts from the total CUDA reports: an H200's 139.81 GiB (as vLLM logs print it) =
# int(139.81 × 2^30) = 150,119,844,413 B, an H100's 85,029,158,912 B. vLLM 0.34 (the newest modelled, whose
# budget hfkv's own count uses) requests all of it (utilization 1.0, the extensible KV cache).
H200_REQUESTED = 150_119_844_413
H100_REQUESTED = 85_029_158_912
# What vLLM keeps besides the weights for DeepSeek-V3.2 (vocab 129,280, hidden 7,168, 61 layers, 256
# experts, 8 per token, expert size 2,048, one shared expert) with an H200's serve defaults (8,192
# batched tokens, 1,024 sequences), at TP 8 on an NVSwitch board (engines/vllm/memory.py):
#   sampler buffers 1,024 × 129,280 × 4 + 2 × 1,024 × ceil(129,280 / 32) × 4         =   562,626,560
#   MoE workspace 8,192 × 8 × (max(2,048 / 8, 7,168) + max(2 × 2,048 / 8, 7,168)) × 2 = 1,879,048,192
#   peak activation: the sampler, 14 × 1,024 × 129,280 + 8,192 × 7,168 × 2            = 1,970,798,592
#   non-torch 2^30 / 4 + int(1.90 × 2^30)                                                = 2,308,544,921
#   CUDA graphs int(0.30 × 2^30) + int(0.15 × 2^20) × 61 × (51 + 51)                   = 1,300,756,039
#   allocator slack int(0.05 × 2^30)                                                     =    53,687,091
#   vLLM 0.34: the CUDA context before its first snapshot int(0.38 × 2^30)            =   408,021,893
#   and its margin max(2^30, 0.75 × the peak 1,970,798,592)                             = 1,478,098,944
DS_RESERVE_TP8 = (562_626_560 + 1_879_048_192 + 1_970_798_592 + 2_308_544_921 + 1_300_756_039 + 53_687_091
                  + 408_021_893 + 1_478_098_944)
# At TP 1 (vLLM's DP ranks): the workspace is the same (7,168 outweighs 2,048 and 4,096), non-torch 2^30 / 4.
DS_RESERVE_TP1 = DS_RESERVE_TP8 - 2_308_544_921 + 268_435_456
assert (DS_RESERVE_TP8, DS_RESERVE_TP1) == (9_961_582_232, 7_921_472_767)

# DeepSeek-V3.2's weights, estimated from its config (tests/model/test_weights.py checks the count against
# the published 685,355,329,792 parameters). Its routed experts, by hand: 58 MoE layers (61 −
# first_k_dense_replace 3) × 256 experts × 3 matrices of 7168 × 2048 fp8 values, each with one fp32 scale
# per 128 × 128 block (56 × 16 blocks): 58 × 256 × 3 × (7168 × 2048 + 4 × 56 × 16) = 654,068,416,512 B.
DS_EXPERT_BYTES = 654_068_416_512
# fp8 KV on FlashMLA sparse: 656 B packed latent + 132 B indexer keys per layer: 61 × 788 = 48,068 B/token;
# one 160K request: 163,840 × 48,068 = 7,875,461,120 B.
DS_TOKEN, DS_160K = 48_068, 7_875_461_120


def _ds(tp: int):
    if not DSV32.exists():
        pytest.skip(f"{DSV32} not present (the shared hub-configs)")
    data = json.loads(DSV32.read_text())
    return inspect_config(data, model="deepseek-ai/DeepSeek-V3.2",
                          options=Options(tensor_parallel_size=tp, kv_cache_dtype="fp8"))


def _fixture(folder: str, **options):
    data = json.loads((ROOT / "fixtures" / folder / "config.json").read_text())
    return inspect_config(data, model=folder, options=Options(**options))


def _at(plan: dict, tokens: int) -> dict:
    return next(c for c in plan["contexts"] if c["tokens"] == tokens)


# -- DeepSeek-V3.2 fp8 on 8 × H200 ----------------------------------------------------------------

# What every TP rank holds whole (vLLM's ReplicatedLinear / disable_tp, norms, routers), fp8 128 × 128 blocks with
# a 4 B scale each, bf16 norms. Attention, per layer: q_a_proj 1536 × 7168 + 4 × 12 × 56 = 11,012,736;
# kv_a_proj_with_mqa 576 × 7168 + 4 × 5 × 56 = 4,129,888; indexer wq_b 8192 × 1536 + 4 × 64 × 12 = 12,585,984,
# wk 128 × 7168 + 4 × 56 = 917,728, weights_proj 64 × 7168 + 4 × 56 = 458,976; norms 3,072 + 1,024 + 256 + 256:
# 29,109,920 × 61 layers. Other: 123 norms × 14,336 + 58 routers × (256 × 7168 × 2 + a 1,024 B fp32 bias).
DS_WHOLE_ATTENTION = 61 * 29_109_920
DS_WHOLE_OTHER = 123 * 14_336 + 58 * (3_670_016 + 1_024)


def _roles(report) -> tuple[int, int, int]:
    """(whole weights W, routed experts E, attention A) in bytes, from the report's weights section."""
    weights = report.extra["weights"]
    roles = weights["roles"]
    assert sum(r["bytes"] for r in roles.values()) == weights["weights_bytes"]
    assert roles["routed_experts"]["bytes"] == DS_EXPERT_BYTES
    return weights["weights_bytes"], roles["routed_experts"]["bytes"], roles["attention"]["bytes"]


def test_deepseek_tp8_one_copy_of_the_latents():
    report = _ds(8)
    W, _, _ = _roles(report)
    plan = plan_serving(report, gpu="H200:8")
    # One divisor for every role, ceil(W / 8) per GPU, plus 7/8 of what every rank holds whole; the KV budget is
    # what vLLM's budget leaves.
    held = -(-(DS_WHOLE_ATTENTION + DS_WHOLE_OTHER) * 7 // 8)
    assert held == 1_741_590_172
    assert plan["weights_bytes_per_gpu"] == -(-W // 8) + held and plan["weights_source"] == "estimate"
    budget = H200_REQUESTED - -(-W // 8) - held - DS_RESERVE_TP8
    assert plan["kv_budget_bytes"] == budget
    # Every GPU of the TP group holds every request's latent: budget / 7,875,461,120 per 160K request, 1 rank.
    ctx = _at(plan, 163840)
    assert ctx["bytes_per_request"] == DS_160K == 163840 * DS_TOKEN
    assert (ctx["max_concurrency"], ctx["max_concurrency_total"], plan["request_ranks"]) == (budget // DS_160K,) * 2 + (1,)


def test_deepseek_tp8_dp8_dp_attention():
    plan = plan_serving(_ds(8), gpu="H200:8", engine="sglang",
                        layout_knobs={"data_parallel_size": 8, "enable_dp_attention": True})
    # Attention at TP 8 / 8 = 1 is replicated on every GPU; experts and the rest stay ÷ 8: W/8 + (1 − 1/8)·A.
    W, _, A = _roles(_ds(8))
    # ... and 7/8 of the other roles' whole-held tensors (the attention's are whole already)
    expected = math.ceil(Fraction(W, 8) + Fraction(7, 8) * A) + DS_WHOLE_OTHER * 7 // 8
    assert plan["weights_bytes_per_gpu"] == expected
    # SGLang's budget: mem_fraction_static by its ServerArgs rule on an H200 (nvidia-smi 143,771 MiB) at
    # TP 8 with DP attention 8, an MLA model: chunk 8,192, decode graphs up to 512, reserve 512 + 1.5 ×
    # 8,192 + 8 / 8 × 1,024 + (2 × 512 + 3 × 512 × 8 + 1.5 × 512 × 8 + 1,536) = 34,816 MiB; (143,771 −
    # 34,816) / 143,771 = 0.758. Free memory before loading: the CUDA total less the context and the
    # communicators, 150,119,844,413 − int(0.38 × 2^30) − int(0.6 × 2^30) = 149,067,577,426 B; × 0.758,
    # less the weights and int(0.13 × 2^30) = 139,586,437 B that loading leaves.
    assert plan["gpu_memory_utilization"] == 0.758
    budget = int(149_067_577_426 * 0.758) - expected - 139_586_437
    assert plan["kv_budget_bytes"] == budget
    ctx = _at(plan, 163840)
    assert (ctx["max_concurrency"], ctx["max_concurrency_total"]) == (budget // DS_160K, 8 * (budget // DS_160K))
    assert plan["layout"]["attention_tensor_parallel_size"] == 1 and plan["gpu_count"] == 8
    assert plan["verdict"].startswith(f"fits on 8 × H200-141GB: {8 * (budget // DS_160K)} requests at 160K "
                                      "(SGLang, TP 8, DP attention 8)")


def test_deepseek_sglang_dp_attention_pools_per_rank():
    report = _ds(8)
    result = simulate(report, engine="sglang", budget_bytes=44_570_262_510, data_parallel_size=8,
                      enable_dp_attention=True)
    # Cell at attention TP 1: 48,068 B; floor(44,570,262,510 / 48,068) = 927,233 → page 64: 927,232 tokens.
    assert result["bytes_per_token"] == DS_TOKEN and result["max_total_num_tokens"] == 927_232
    # Running requests per worker: int(927,232 / 163,840 × 512) = 2897 within [2048, 4096] and ≤ 927,232 // 2.
    assert result["max_running_requests"] == 2897
    # 927,232 / 163,840 = 5.659 → 5.66 per rank; 8 ranks: 7,417,856 tokens, 45.28 requests of 160K.
    assert result["max_concurrency"] == 5.66
    assert result["deployment"]["kv_cache_tokens_total"] == 8 * 927_232 == 7_417_856
    assert result["deployment"]["max_concurrency_total"] == 45.28


def test_deepseek_engine_verdict_counts_whole_requests_per_rank():
    report = _ds(8)
    enrich(report, gpu="H200:8", engine="sglang", engine_knobs={"data_parallel_size": 8, "enable_dp_attention": True})
    # SGLang's own count: its token pool per rank (page 64) over 163,840 tokens, floored, × 8 ranks.
    tokens = report.extra["engine"]["max_total_num_tokens"]
    assert tokens == report.extra["serving"]["kv_budget_bytes"] // DS_TOKEN // 64 * 64
    assert report.extra["serving"]["verdict"].startswith(
        f"fits on 8 × H200-141GB: {8 * (tokens // 163840)} requests at 160K (SGLang 0.5.23, TP 8, DP attention 8)")
    assert report.extra["serving"]["verdict_detail"]["counted_by"] == "SGLang 0.5.23"


def test_deepseek_vllm_dp8_expert_parallel():
    plan = plan_serving(_ds(1), gpu="H200:8", engine="vllm",
                        layout_knobs={"data_parallel_size": 8, "enable_expert_parallel": True})
    # TP 1 per DP rank: attention and the rest whole on each GPU, routed experts ÷ EP 8 (= TP 1 × DP 8): E/8 + (W − E).
    W, E, _ = _roles(_ds(1))
    expected = math.ceil(Fraction(E, 8) + W - E)
    assert plan["weights_bytes_per_gpu"] == expected
    budget = H200_REQUESTED - expected - DS_RESERVE_TP1
    ctx = _at(plan, 163840)
    assert plan["kv_budget_bytes"] == budget
    assert (ctx["max_concurrency"], ctx["max_concurrency_total"]) == (budget // DS_160K, 8 * (budget // DS_160K))
    assert plan["layout"]["expert_shards"] == 8 and plan["replicas"] == 8
    assert "(vLLM, TP 1, DP 8, EP 8)" in plan["verdict"]


def test_deepseek_vllm_dp_ranks_are_engines_of_their_own():
    result = simulate(_ds(1), engine="vllm", budget_bytes=39_566_175_138, data_parallel_size=8,
                      enable_expert_parallel=True)
    # FlashMLA-sparse block 64 × 48,068 B = 3,076,352 B; 39,566,175,138 // 3,076,352 = 12,861 blocks;
    # 163,840 / 64 = 2,560 blocks per request → 12,861 / 2,560 = 5.0238 → 5.02; int(5.0238 × 163,840) = 823,104.
    assert (result["bytes_per_block"], result["num_blocks"], result["max_concurrency"]) == (3_076_352, 12_861, 5.02)
    assert result["kv_cache_tokens"] == 823_104
    # 8 DP engines, each its own pool: 8 × 823,104 = 6,584,832 tokens, 5.02 × 8 = 40.16 requests.
    deployment = result["deployment"]
    assert (deployment["request_ranks"], deployment["kv_cache_tokens_total"]) == (8, 6_584_832)
    assert deployment["max_concurrency_total"] == 40.16


# -- pipeline parallelism -------------------------------------------------------------------------


def test_stage_sizes_follow_get_pp_indices():
    # 32 = 2 × 16; 36 = 5 × 7 + 1: the remainder goes to partitions[-2]; 62 = 4 × 15 + 2 → [-2] and [-3].
    assert lay.stage_sizes(32, 2) == [16, 16]
    assert lay.stage_sizes(36, 5) == [7, 7, 7, 8, 7]
    assert lay.stage_sizes(62, 4) == [15, 16, 16, 15]


def test_pp2_dense_llama():
    report = _fixture("meta-llama__Meta-Llama-3.1-8B")
    weights = 8_030_261_248 * 2  # 16,060,522,496 B of bf16 weights
    plan = plan_serving(report, gpu="H100:2", weights_bytes=weights, layout_knobs={"pipeline_parallel_size": 2})
    # Each stage: 16 layers and half the weights: 16,060,522,496 / 2 = 8,030,261,248. vLLM's reserve for a
    # 16-layer stage (the H100 serve defaults of tests/planning/test_serving.py): sampler buffers 558,170,112 +
    # peak activation 1,905,786,880 + non-torch 268,435,456 + CUDA graphs int(0.30 × 2^30) + int(0.15 ×
    # 2^20) × 16 × 102 = 578,813,299 + slack 53,687,091 = 3,364,892,838; vLLM 0.34 also keeps the CUDA context
    # int(0.38 × 2^30) = 408,021,893 and its margin 0.75 × 1,905,786,880 = 1,429,340,160: budget 85,029,158,912 −
    # 8,030,261,248 − 3,364,892,838 − 408,021,893 − 1,429,340,160 = 71,796,642,773.
    assert plan["weights_bytes_per_gpu"] == 8_030_261_248 and plan["kv_budget_bytes"] == 71_796_642_773
    # Per GPU 16 × 8 × 128 × 2 × 2 = 65,536 B/token; 32K → 2,147,483,648 B; 71,796,642,773 / that = 33.4 → 33.
    ctx = _at(plan, 32768)
    assert ctx["bytes_per_request"] == 2_147_483_648 and ctx["max_concurrency"] == 33
    # vLLM 0.34 per stage: block 64 × 65,536 = 4,194,304 B; 71,796,642,773 // 4,194,304 = 17,117 blocks;
    # 131,072 / 64 = 2,048 blocks per request → 17,117 / 2,048 = 8.36.
    result = simulate(report, engine="vllm", budget_bytes=plan["kv_budget_bytes"], pipeline_parallel_size=2)
    assert (result["bytes_per_block"], result["num_blocks"], result["max_concurrency"]) == (4_194_304, 17_117, 8.36)
    assert [s["layers"] for s in result["stages"]] == [16, 16]


def test_uneven_stages_size_the_fullest():
    report = _fixture("Qwen__Qwen3-8B")
    # 36 layers over PP 5: [7, 7, 7, 8, 7]; the 8-layer stage binds. Qwen3-8B: 8 KV heads × 128 × 2 × 2 B
    # = 4,096 B per layer-token; 8 layers → 32,768 B/token; at 4K: 4096 × 32,768 = 134,217,728 B.
    plan = plan_serving(report, kv_cache_memory_bytes=2**30, layout_knobs={"pipeline_parallel_size": 5})
    assert _at(plan, 4096)["bytes_per_request"] == 134_217_728
    # 2^30 / 134,217,728 = 8 requests.
    assert _at(plan, 4096)["max_concurrency"] == 8
    result = simulate(report, engine="sglang", budget_bytes=2**30, pipeline_parallel_size=5)
    # SGLang's pool at the 8-layer stage: 2^30 // 32,768 = 32,768 tokens (page 1).
    assert result["bytes_per_token"] == 32_768 and result["max_total_num_tokens"] == 32_768
    assert [s["layers"] for s in result["stages"]] == [7, 7, 7, 8, 7]


# -- refusals -------------------------------------------------------------------------------------


def test_sglang_dp_attention_needs_tp_divisible_by_dp():
    report = _fixture("Qwen__Qwen3-30B-A3B", tensor_parallel_size=8)
    with pytest.raises(UnsupportedModelError, match=r"tp_size \(8\) must be divisible by the DP attention size \(3\)"):
        simulate(report, engine="sglang", data_parallel_size=3, enable_dp_attention=True)
    with pytest.raises(UnsupportedModelError, match="divisible"):
        plan_serving(report, gpu="H200:8", layout_knobs={"data_parallel_size": 3, "enable_dp_attention": True})


def test_vllm_has_no_dp_attention_flag():
    report = _fixture("Qwen__Qwen3-30B-A3B", tensor_parallel_size=8)
    with pytest.raises(UnsupportedModelError, match=r"vLLM( [\d.]+)? has no --enable-dp-attention"):
        simulate(report, engine="vllm", data_parallel_size=8, enable_dp_attention=True)


def test_vllm_expert_parallel_needs_experts():
    with pytest.raises(UnsupportedModelError, match="Number of experts in the model must be greater than 0"):
        simulate(_fixture("Qwen__Qwen3-8B"), engine="vllm", enable_expert_parallel=True)


def test_layout_values_and_gpu_counts():
    report = _fixture("Qwen__Qwen3-8B")
    with pytest.raises(UsageError, match="larger than the model's 36 layers"):
        plan_serving(report, gpu="H100", layout_knobs={"pipeline_parallel_size": 37})
    for knob, bad in (("data_parallel_size", 0), ("pipeline_parallel_size", "x"), ("enable_dp_attention", "maybe")):
        with pytest.raises(UsageError):
            plan_serving(report, gpu="H100", layout_knobs={knob: bad})
    # TP 1 × DP 8 needs 8 GPUs: 4 cannot hold it; the default single GPU is raised to 8.
    with pytest.raises(UsageError, match="4 GPUs cannot hold this layout: TP 1 × DP 8 needs 8"):
        plan_serving(report, gpu="H100:4", layout_knobs={"data_parallel_size": 8})
    assert plan_serving(report, gpu="H100", layout_knobs={"data_parallel_size": 8})["gpu_count"] == 8


# -- the verdict, first in every format -----------------------------------------------------------


def _planned(weights: int):
    report = _fixture("meta-llama__Meta-Llama-3.1-8B")
    return enrich(report, gpu="H100", weights_bytes=weights)


@pytest.mark.parametrize("weights, expected, mark", [
    # 63,509,690,773 B budget under vLLM 0.34 (tests/planning/test_serving.py); one 128K request is
    # 17,179,869,184 B: 3 fit, in vLLM's and SGLang's budgets alike (neither differs by 10%, so neither is named).
    # The reserve's band: activation 1,905,786,880 // 10 + non-torch int(0.15 × 2^30) + graphs 835,504,051 // 2
    # + slack 53,687,091 + the CUDA context's int(0.2 × 2^30) + the margin's 0.75 × 190,578,688 =
    # 190,578,688 + 161,061,273 + 417,752,025 + 53,687,091 + 214,748,364 + 142,934,016 = 1,180,761,457 B = 1.10 GiB.
    # The band is said on the line below the verdict ("the engine's reserve is an estimate (±1.10 GiB)"). vLLM's
    # own count leads (no engine asked for): 63,509,690,773 B // (64-token blocks of 64 × 131,072 = 8,388,608 B)
    # = 7,570 blocks; 131,072 / 64 = 2,048 blocks a request: 7,570 // 2,048 = 3, as hfkv counts.
    (16_060_522_496, "fits on 1 × H100-SXM-80GB: 3 requests at 128K (vLLM 0.34.0, TP 1)", "✓"),
    # 200 × 10^9 B = 186.26 GiB of weights; vLLM 0.34 may use the whole 85,029,158,912 B = 79.19 GiB.
    (200 * 10**9, "does NOT fit on 1 × H100-SXM-80GB: weights need 186.26 GiB per GPU of 79.19 GiB the engine "
                  "may use (hfkv, TP 1)", "✗"),
])
def test_verdict_first_in_every_format(weights, expected, mark):
    from rich.console import Console

    report = _planned(weights)
    assert report.to_dict()["serving"]["verdict"] == expected
    assert render_markdown(report).splitlines()[2] == f"**{mark} {expected}**"
    out = io.StringIO()
    render_table(report, console=Console(file=out, width=300, highlight=False))
    assert out.getvalue().splitlines()[0] == expected
    details = report.to_dict()["serving"]["verdict_detail"]["details"]
    if mark == "✓":
        assert details == ["the engine's reserve is an estimate (±1.10 GiB)"]
        assert out.getvalue().splitlines()[1] == "  the engine's reserve is an estimate (±1.10 GiB)"


def test_verdict_never_counts_past_the_models_maximum():
    # Contexts beyond max_position_embeddings (131,072) are not what the verdict reports.
    report = _fixture("meta-llama__Meta-Llama-3.1-8B")
    report.max_position_embeddings = 32768
    plan = plan_serving(report, gpu="H100", weights_bytes=16_060_522_496)
    # 63,509,690,773 / 4,294,967,296 = 14.8 → 14 at 32K (vLLM 0.34's budget).
    assert plan["verdict"].startswith("fits on 1 × H100-SXM-80GB: 14 requests at 32K")
