"""The serving planner, checked against figures derived by hand (the GPU presets: test_gpus.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hfkv
from hfkv.model.weights import Unknown
from hfkv.model.weights import attach as attach_weights
from hfkv.errors import UsageError
from hfkv.render.terminal import render_markdown
from hfkv.inspection import inspect_config
from hfkv.model.options import Options
from hfkv.planning.serving import gpu_plans, plan_serving

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

# Llama-3.1-8B: 32 layers × 8 KV heads × head_dim 128 × 2 (K and V) × 2 B (bf16) = 131,072 B per token.
LLAMA_PER_TOKEN = 32 * 8 * 128 * 2 * 2
# Its 8,030,261,248 parameters in bf16: 8,030,261,248 × 2 = 16,060,522,496 B of weights.
LLAMA_WEIGHTS = 8_030_261_248 * 2


def _report(folder: str, **options) -> object:
    data = json.loads((FIXTURES / folder / "config.json").read_text())
    return inspect_config(data, model=folder, options=Options(**options))


@pytest.fixture(scope="module")
def llama():
    return _report("meta-llama__Meta-Llama-3.1-8B")


# -- planner ------------------------------------------------------------------------------------
#
# hfkv's own count uses vLLM's budget (engines/vllm/memory.py); these figures pin vLLM 0.33.0's rules (V033),
# the 0.34 extensible rule has its own test below. For Llama-3.1-8B (vocab 128,256,
# hidden 4,096, intermediate 14,336, 32 layers) on an H100 or H200 with vLLM's serve defaults for a
# >= 70 GiB GPU (8,192 batched tokens, 1,024 sequences), what vLLM keeps besides the weights:
#   sampler buffers 1,024 × 128,256 × 4 + 2 × 1,024 × ceil(128,256 / 32) × 4      =   558,170,112 (its code)
#   peak activation max(14 × 1,024 × 128,256 + 8,192 × 4,096 × 2,                 = 1,905,786,880
#                       8,192 × (4,096 + 4 × 14,336) × 2 = 1,006,632,960)
#   non-torch memory (TP 1) 2^30 / 4                                               =   268,435,456
#   CUDA graphs int(0.30 × 2^30) + int(0.15 × 2^20) × 32 × (51 + 51)              =   835,504,051
#   allocator slack int(0.05 × 2^30)                                               =    53,687,091
#                                                                                     3,621,583,590
LLAMA_RESERVE = 558_170_112 + 1_905_786_880 + 268_435_456 + 835_504_051 + 53_687_091
# The H100 reports a CUDA total of 85,029,158,912 B: vLLM asks for ceil(× 0.92) = 78,226,826,200.
H100_REQUESTED = 78_226_826_200
# 78,226,826,200 − 16,060,522,496 − 3,621,583,590 = 58,544,720,114.
H100_BUDGET_LLAMA = H100_REQUESTED - LLAMA_WEIGHTS - LLAMA_RESERVE
V033 = {"engine_version": "0.33.0"}
assert LLAMA_RESERVE == 3_621_583_590 and H100_BUDGET_LLAMA == 58_544_720_114


def test_llama_8b_on_h100_under_vllm_034_extensible_sizing(llama):
    # vLLM 0.34 (extensible_kv_cache.py measure_kv_cache_bytes) requests the whole total (utilization 1.0) and
    # keeps, besides the 0.33 reserve above, the CUDA context before its first snapshot (0.38 GiB, an estimate:
    # int(0.38 × 2^30) = 408,021,893) and a margin max(1 GiB, 0.75 × peak 1,905,786,880 = 1,429,340,160)
    # = 1,429,340,160: 85,029,158,912 − 16,060,522,496 − 3,621,583,590 − 408,021,893 − 1,429,340,160
    # = 63,509,690,773.
    plan = plan_serving(llama, gpu="H100", weights_bytes=LLAMA_WEIGHTS, layout_knobs={"engine_version": "0.34.0"})
    assert plan["usable_bytes"] == 85_029_158_912 and plan["kv_budget_bytes"] == 63_509_690_773
    terms = {term["name"]: term for term in plan["memory"]["terms"]}
    assert terms["KV margin"]["bytes"] == 1_429_340_160 and terms["CUDA context"]["bytes"] == 408_021_893
    # --gpu-memory-utilization 0.9 only lowers the request (it does not bring back the 0.92 rule):
    # min(ceil(0.9 × 85,029,158,912) = 76,526,243,021 − used, total − context − margin − used) binds at the
    # request: 76,526,243,021 − 16,060,522,496 − 3,621,583,590 = 56,844,136,935.
    lowered = plan_serving(llama, gpu="H100", weights_bytes=LLAMA_WEIGHTS, gpu_memory_utilization=0.9,
                           layout_knobs={"engine_version": "0.34.0"})
    assert lowered["kv_budget_bytes"] == 56_844_136_935 and "KV margin" not in {
        term["name"] for term in lowered["memory"]["terms"]}


def test_llama_8b_on_h100(llama):
    plan = plan_serving(llama, gpu="H100", weights_bytes=LLAMA_WEIGHTS, batch=8, layout_knobs=V033)
    assert plan["gpu"] == "H100-SXM-80GB"
    assert plan["usable_bytes"] == H100_REQUESTED and plan["kv_budget_bytes"] == H100_BUDGET_LLAMA
    assert plan["budget_source"] == "gpu" and plan["weights_fit"] is True
    terms = {term["name"]: term for term in plan["memory"]["terms"]}
    assert terms["sampler buffers"]["bytes"] == 558_170_112 and terms["sampler buffers"]["source"] == "code"
    assert terms["weights"]["source"] == "checkpoint"  # given: not an estimate
    by_tokens = {c["tokens"]: c for c in plan["contexts"]}
    # 4K: 4096 × 131,072 = 536,870,912 B; 58,544,720,114 / 536,870,912 = 109.05 → 109.
    assert by_tokens[4096]["bytes_per_request"] == 4096 * LLAMA_PER_TOKEN == 536_870_912
    assert by_tokens[4096]["max_concurrency"] == 109
    # 32K: 4,294,967,296 B; 13 × that = 55,834,574,848 ≤ budget < 14 × = 60,129,542,144.
    assert by_tokens[32768]["bytes_per_request"] == 4_294_967_296
    assert by_tokens[32768]["max_concurrency"] == 13
    # 128K: 17,179,869,184 B; 3 × = 51,539,607,552 ≤ budget < 4 × = 68,719,476,736.
    assert by_tokens[131072]["max_concurrency"] == 3
    # 8 requests: S ≤ 58,544,720,114 / (8 × 131,072 = 1,048,576) = 55,832.7 → 55,832 tokens.
    assert plan["max_context_for_batch"] == 55_832 and plan["max_context_unbounded"] is False
    assert plan["max_length"] == {"tokens": 131072, "bytes_per_request": 17_179_869_184, "fits": True,
                                  "given": False, "largest": None}
    # Decode at 32K, B = 1: (16,060,522,496 + 4,294,967,296 = 20,355,489,792) / 3.35e12 = 6.0763 ms.
    assert by_tokens[32768]["decode_step_seconds"]["1"] == pytest.approx(20_355_489_792 / 3.35e12)
    # B = 8: (16,060,522,496 + 8 × 4,294,967,296 = 50,420,260,864) / 3.35e12 = 15.05 ms.
    assert by_tokens[32768]["decode_step_seconds"]["8"] == pytest.approx(50_420_260_864 / 3.35e12)
    assert set(by_tokens[32768]["decode_step_seconds"]) == {"1", "8", "13"}
    assert plan["decode_includes_weights"] is True
    assert any("lower bound" in e for e in plan["estimates"])
    assert any(e.startswith("peak activation") for e in plan["estimates"])
    assert plan["verdict"].startswith("fits on 1 × H100-SXM-80GB: 3 requests at 128K (hfkv, TP 1)")
    json.dumps(plan)


def test_tensor_parallel_and_replicas():
    report = _report("meta-llama__Meta-Llama-3.1-8B", tensor_parallel_size=2)
    plan = plan_serving(report, gpu="H100:8", weights_bytes=LLAMA_WEIGHTS, layout_knobs=V033)
    # Weights per GPU: 16,060,522,496 / 2 = 8,030,261,248, plus half of the 65 norms every rank holds whole
    # (65 × 4,096 × 2 B = 532,480; half: 266,240) = 8,030,527,488. At TP 2 on an NVSwitch board vLLM's non-torch
    # memory grows by NCCL's buffers: 2^30 / 4 + int(1.82 × 2^30) = 2,222,645,575 (the other terms as at TP 1:
    # the sampler sees the gathered vocabulary, and it outweighs the forward pass at 8,192 × (4,096 +
    # 4 × 14,336 / 2) × 2): reserve 3,621,583,590 − 268,435,456 + 2,222,645,575 = 5,575,793,709.
    assert plan["weights_bytes_per_gpu"] == 8_030_261_248 + 266_240
    assert plan["kv_budget_bytes"] == H100_REQUESTED - 8_030_527_488 - 5_575_793_709 == 64_620_505_003
    # Per GPU 4 of the 8 KV heads: 32 × 4 × 128 × 2 × 2 = 65,536 B/token; 32K → 2,147,483,648 B;
    # 64,620,505,003 / 2,147,483,648 = 30.09 → 30 per replica; 8 GPUs / TP 2 = 4 replicas → 120.
    ctx = next(c for c in plan["contexts"] if c["tokens"] == 32768)
    assert ctx["bytes_per_request"] == 2_147_483_648
    assert (ctx["max_concurrency"], plan["replicas"], ctx["max_concurrency_total"]) == (30, 4, 120)
    # The default single GPU is raised to the TP size; fewer GPUs than TP is an error.
    assert plan_serving(report, gpu="H100", weights_bytes=LLAMA_WEIGHTS)["gpu_count"] == 2
    with pytest.raises(UsageError):
        plan_serving(_report("meta-llama__Meta-Llama-3.1-8B", tensor_parallel_size=4), gpu="H100:2")


def test_explicit_budget_overrides_the_gpu(llama):
    # 40 GiB = 42,949,672,960 = 10 × 4,294,967,296 exactly: 10 requests at 32K.
    plan = plan_serving(llama, gpu="L4", kv_cache_memory_bytes=40 * 2**30, weights_bytes=LLAMA_WEIGHTS)
    assert plan["kv_budget_bytes"] == 42_949_672_960 and plan["budget_source"] == "explicit"
    assert plan["gpu_memory_utilization"] is None and plan["memory"] is None
    assert next(c for c in plan["contexts"] if c["tokens"] == 32768)["max_concurrency"] == 10


def test_weights_that_do_not_fit(llama):
    # L4: no public record of its CUDA total; nvidia-smi's 23,034 MiB less the 454 MiB an H100's driver
    # keeps = 22,580 MiB = 23,676,846,080 B (an estimate, said so); ceil(× 0.92) = 21,782,698,394 < 30e9.
    plan = plan_serving(llama, gpu="l4", weights_bytes=30_000_000_000, layout_knobs=V033)
    assert plan["usable_bytes"] == 21_782_698_394 and plan["weights_fit"] is False
    assert plan["kv_budget_bytes"] < 0
    assert plan["verdict"].startswith("does NOT fit on 1 × L4-24GB: weights need 27.94 GiB per GPU of 20.29 GiB")
    assert plan["verdict_detail"]["status"] == "does-not-fit"
    assert all(c["max_concurrency"] == 0 for c in plan["contexts"])
    assert plan["max_length"]["fits"] is False


def test_utilization_is_a_parameter(llama):
    # 0.9: ceil(85,029,158,912 × 0.9 = 76,526,243,020.8) = 76,526,243,021 − 16,060,522,496 − 3,621,583,590.
    plan = plan_serving(llama, gpu="h100", weights_bytes=LLAMA_WEIGHTS, gpu_memory_utilization=0.9)
    assert plan["kv_budget_bytes"] == 76_526_243_021 - LLAMA_WEIGHTS - LLAMA_RESERVE == 56_844_136_935
    assert plan["gpu_memory_utilization"] == 0.9 and plan["memory"]["fraction_source"] == "given"
    for bad in (0, 1.5, "x"):
        with pytest.raises(UsageError):
            plan_serving(llama, gpu="h100", weights_bytes=LLAMA_WEIGHTS, gpu_memory_utilization=bad)


def test_without_weights_or_gpu(llama):
    plan = plan_serving(llama, gpu="h200", layout_knobs=V033)
    # Weights from the config's shapes (Llama-3.1-8B, bf16, untied embeddings):
    #   embeddings 2 × 128,256 × 4,096 = 1,050,673,152
    #   per layer: attention 2·4096·4096 + 2·4096·(8·128) = 41,943,040; MLP 3·4096·14,336 = 176,160,768;
    #   2 norms 2 × 4,096 = 8,192; 32 × 218,112,000 = 6,979,584,000; final norm 4,096
    #   total 8,030,261,248 parameters (the Hub's count) × 2 B = 16,060,522,496 B (the index's total_size).
    # H200: CUDA total 139.81 GiB as vLLM logs print it = int(139.81 × 2^30) = 150,119,844,413 B;
    # ceil(× 0.92) = 138,110,256,860 − 16,060,522,496 − 3,621,583,590 (the same reserve as the H100's:
    # the same scheduler defaults) = 118,428,150,774.
    assert plan["weights_bytes"] == 16_060_522_496 and plan["weights_source"] == "estimate"
    assert plan["kv_budget_bytes"] == 118_428_150_774 and plan["budget_source"] == "gpu"
    assert any("estimated from the config" in e for e in plan["estimates"])
    assert "weights estimated from the config's shapes" in plan["verdict_detail"]["details"]
    # B_max at 4K: floor(118,428,150,774 / (4096 × 131072 = 536,870,912)) = 220
    assert plan["contexts"][0]["max_concurrency"] == 220
    # The decode bound reads the estimated weights: 4K → (16,060,522,496 + 536,870,912) / 4.8e12.
    assert plan["decode_includes_weights"] is True
    assert plan["contexts"][0]["decode_step_seconds"]["1"] == pytest.approx(16_597_393_408 / 4.8e12)
    bare = plan_serving(llama)
    assert bare["gpu"] is None and bare["contexts"][0]["decode_step_seconds"] is None
    assert bare["verdict"] == "no verdict: give --gpu or --budget"
    with pytest.raises(UsageError):
        plan_serving(llama, gpu="Z80")


def test_without_any_weights_the_budget_is_an_upper_bound_and_the_verdict_unknown():
    report = _report("meta-llama__Meta-Llama-3.1-8B")
    report._weights_estimate = Unknown("test: no shapes")  # no parameter count, no checkpoint
    attach_weights(report)
    plan = plan_serving(report, gpu="h200", layout_knobs=V033)
    # Nothing subtracted for the weights: 138,110,256,860 − 3,621,583,590 = 134,488,673,270.
    assert plan["kv_budget_bytes"] == 134_488_673_270 and plan["weights_fit"] is None
    assert plan["budget_source"] == "gpu-without-weights"
    assert any("upper bound" in e for e in plan["estimates"])
    # B_max at 4K: floor(134,488,673,270 / 536,870,912) = 250; the decode bound counts KV reads only.
    assert plan["contexts"][0]["max_concurrency"] == 250
    assert plan["decode_includes_weights"] is False
    assert plan["contexts"][0]["decode_step_seconds"]["1"] == pytest.approx(536_870_912 / 4.8e12)
    # Fail closed: the verdict is "unknown", naming why, with the upper bound (7 at 128K:
    # 134,488,673,270 / 17,179,869,184 = 7.83).
    assert plan["verdict_detail"]["status"] == "unknown"
    assert plan["verdict"].startswith("unknown on 1 × H200-141GB (hfkv, TP 1): the weights are unknown (test: no shapes)")
    assert plan["verdict"].endswith("without them at most 7 requests at 128K")


def test_windowed_model_is_unbounded_for_small_batches():
    # Mistral-7B-v0.1: 32 sliding layers, window 4096, 131,072 B/token → at most 4096 × 131,072 = 536,870,912 B.
    report = _report("Hugofernandez__Mistral-7B-v0.1-colab-sharded")
    two = plan_serving(report, kv_cache_memory_bytes=2**30, batch=2)
    # 2 × 536,870,912 = 1 GiB exactly: any context fits.
    assert two["max_context_for_batch"] is None and two["max_context_unbounded"] is True
    three = plan_serving(report, kv_cache_memory_bytes=2**30, batch=3)
    # 3 × 131,072 × S ≤ 1,073,741,824 → S ≤ 2,730.67 → 2,730.
    assert three["max_context_for_batch"] == 2730 and three["max_context_unbounded"] is False


def test_gpu_plans_feed_the_markdown_columns(llama):
    import dataclasses

    from hfkv.commands.deploy import Deployment

    given = Deployment(weights_bytes=LLAMA_WEIGHTS, knobs=V033)
    plans = gpu_plans(["H100-SXM-80GB", "MI300X-192GB"], llama,
                      lambda twin, spec: dataclasses.replace(given, gpu=spec).apply(twin))
    # MI300X: CUDA total 205,822,885,888 B (a vLLM log's 191.69 GiB); ceil(× 0.92) = 189,357,055,017. Its
    # 191.69 GiB puts it in vLLM's >= 160 GiB tier: 16,384 batched tokens, so the forward pass,
    # 16,384 × (4,096 + 4 × 14,336) × 2 = 2,013,265,920, outweighs the sampler warm-up (14 × 1,024 ×
    # 128,256 + 16,384 × 4,096 × 2 = 1,972,895,744): reserve 3,621,583,590 − 1,905,786,880 + 2,013,265,920
    # = 3,729,062,630; 189,357,055,017 − 16,060,522,496 − 3,729,062,630 = 169,567,469,891.
    assert {spec: plan["kv_budget_bytes"] for spec, plan in plans.items()} == {
        "H100-SXM-80GB": H100_BUDGET_LLAMA, "MI300X-192GB": 169_567_469_891}
    assert llama.extra.get("serving") is None and llama.extra["weights"]["source"] == "estimate"  # copies planned
    text = render_markdown(llama, plans=plans)
    # 32K row: 58,544,720,114 / 4,294,967,296 = 13.6 → 13 on H100; 169,567,469,891 / 4,294,967,296 = 39.5 → 39.
    assert "| 32K | 4.00 GiB | 4.00 GiB | 13 | 39 |" in text
    assert "- **✓ 1 × H100-SXM-80GB**: fits on 1 × H100-SXM-80GB: 3 requests at 128K" in text
    # Weights larger than the GPU: no KV budget, 0 requests at every context, the verdict a "no".
    full = gpu_plans(["L4-24GB"], llama, lambda twin, spec: Deployment(gpu=spec, weights_bytes=10**11).apply(twin))
    assert full["L4-24GB"]["weights_fit"] is False and full["L4-24GB"]["verdict"].startswith("does NOT fit")
    assert "| 4K | 512.00 MiB | 512.00 MiB | 0 |" in render_markdown(llama, plans=full)

def test_an_estimate_carries_its_own_band_into_the_budget():
    # gpt-oss-120b's MXFP4 experts are priced as vLLM's Marlin kernels pad them; other backends pad less, so the
    # estimate's band is 8% (weights section band_percent), not the 1% of a family's own layout: the budget's
    # weights term carries int(weights per GPU × 8 / 100).
    report = hfkv.inspect(str(FIXTURES / "openai__gpt-oss-120b"), gpu="H100", engine="theory")
    weights = report.extra["weights"]
    term = next(t for t in report.extra["serving"]["memory"]["terms"] if t["name"] == "weights")
    assert weights["band_percent"] == 8.0 and term["error_bytes"] == int(term["bytes"] * 8 / 100)
    llama = hfkv.inspect(str(FIXTURES / "meta-llama__Meta-Llama-3.1-8B"), gpu="H100", engine="theory")
    term = next(t for t in llama.extra["serving"]["memory"]["terms"] if t["name"] == "weights")
    assert llama.extra["weights"]["band_percent"] == 1.0 and term["error_bytes"] == term["bytes"] // 100
