"""GPU presets and the serving planner, checked against figures derived by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hfkv.model.weights import Unknown
from hfkv.model.weights import attach as attach_weights
from hfkv.planning import gpus
from hfkv.errors import UsageError
from hfkv.render.terminal import render_markdown
from hfkv.inspection import inspect_config
from hfkv.model.options import Options
from hfkv.planning.serving import gpu_budgets, plan_serving

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# Llama-3.1-8B: 32 layers × 8 KV heads × head_dim 128 × 2 (K and V) × 2 B (bf16) = 131,072 B per token.
LLAMA_PER_TOKEN = 32 * 8 * 128 * 2 * 2
# Its 8,030,261,248 parameters in bf16: 8,030,261,248 × 2 = 16,060,522,496 B of weights.
LLAMA_WEIGHTS = 8_030_261_248 * 2
# Budgets use what the device reports: H100 81,559 MiB = 81,559 × 2^20 = 85,520,809,984 B (the datasheet's
# 80 GiB is 85,899,345,920). × 0.92 = 78,679,145,185.28, rounded up (vLLM's ceil) to 78,679,145,186;
# minus the weights: 78,679,145,186 − 16,060,522,496 = 62,618,622,690.
H100_USABLE = 78_679_145_186
H100_BUDGET_LLAMA = 62_618_622_690


def _report(folder: str, **options) -> object:
    data = json.loads((FIXTURES / folder / "config.json").read_text())
    return inspect_config(data, model=folder, options=Options(**options))


@pytest.fixture(scope="module")
def llama():
    return _report("meta-llama__Meta-Llama-3.1-8B")


# -- presets ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, canonical", [
    ("h100", "H100-SXM-80GB"), ("H100-80GB", "H100-SXM-80GB"), ("H100 SXM", "H100-SXM-80GB"),
    ("h100_pcie", "H100-PCIe-80GB"), ("mi300x", "MI300X-192GB"), ("MI300X", "MI300X-192GB"),
    ("H200", "H200-141GB"), ("rtx4090", "RTX-4090-24GB"), ("A100-40GB", "A100-40GB"),
    ("a100", "A100-SXM-80GB"), ("b300", "B300-288GB"), ("GB200", "GB200-186GB"), ("l40s", "L40S-48GB"),
])
def test_aliases_are_case_and_punctuation_insensitive(name, canonical):
    assert gpus.get_gpu(name).name == canonical


def test_name_count():
    preset, count = gpus.parse_gpu("H200:8")
    assert (preset.name, count) == ("H200-141GB", 8)
    assert gpus.parse_gpu("l4")[1] == 1
    for bad in ("H200:0", "H200:x", "H200:-1"):
        with pytest.raises(UsageError):
            gpus.parse_gpu(bad)


def test_unknown_gpu_is_one_line_listing_the_choices():
    with pytest.raises(UsageError) as err:
        gpus.get_gpu("V100")
    text = str(err.value)
    assert "\n" not in text and "'V100'" in text
    for name in gpus.names():
        assert name in text


def test_memory_conventions():
    # HBM: datasheet GB read as GiB; 80 × 2^30 = 85,899,345,920.
    assert gpus.get_gpu("h100").memory_bytes == 85_899_345_920
    # 141 × 2^30 = 151,397,597,184.
    assert gpus.get_gpu("h200").memory_bytes == 151_397_597_184
    # MI300X 192 × 2^30 = 206,158,430,208; rocm-smi reports 206,141,652,992 (16 MiB less).
    mi300x = gpus.get_gpu("mi300x")
    assert mi300x.memory_bytes == 206_158_430_208
    assert mi300x.memory_bytes - mi300x.reported_bytes == 16 * 2**20
    # L40S (GDDR6 + ECC): read as 10^9; 48 × 10^9 = 48,000,000,000.
    assert gpus.get_gpu("l40s").memory_bytes == 48_000_000_000
    # Bandwidth is decimal: 3.35 TB/s = 3.35 × 10^12 B/s.
    assert gpus.get_gpu("h100").bandwidth_bytes_per_s == 3_350_000_000_000
    assert gpus.get_gpu("mi355x").bandwidth_bytes_per_s == 8 * 10**12


def test_every_preset_names_its_source():
    assert len(gpus.PRESETS) >= 15
    for preset in gpus.PRESETS:
        assert preset.source and preset.memory_quoted and preset.bandwidth_quoted
        assert preset.memory_unit in ("GiB", "GB")
        assert preset.memory_bytes > 0 and preset.bandwidth_bytes_per_s > 0
        # A reported total is never far from the datasheet reading (within 1%).
        if preset.reported_bytes:
            assert abs(preset.reported_bytes / preset.memory_bytes - 1) < 0.01
        json.dumps(preset.to_dict())


# -- planner ------------------------------------------------------------------------------------


def test_llama_8b_on_h100(llama):
    plan = plan_serving(llama, gpu="H100", weights_bytes=LLAMA_WEIGHTS, batch=8)
    assert plan["gpu"] == "H100-SXM-80GB"
    assert plan["kv_budget_bytes"] == H100_BUDGET_LLAMA
    assert plan["budget_source"] == "gpu" and plan["weights_fit"] is True
    by_tokens = {c["tokens"]: c for c in plan["contexts"]}
    # 4K: 4096 × 131,072 = 536,870,912 B; 62,618,622,690 / 536,870,912 = 116.64 → 116.
    assert by_tokens[4096]["bytes_per_request"] == 4096 * LLAMA_PER_TOKEN == 536_870_912
    assert by_tokens[4096]["max_concurrency"] == 116
    # 32K: 32,768 × 131,072 = 4,294,967,296 B; 14 × that = 60,129,542,144 ≤ budget < 15 × = 64,424,509,440.
    assert by_tokens[32768]["bytes_per_request"] == 4_294_967_296
    assert by_tokens[32768]["max_concurrency"] == 14
    # 128K: 17,179,869,184 B; 3 × = 51,539,607,552 ≤ budget < 4 × = 68,719,476,736.
    assert by_tokens[131072]["max_concurrency"] == 3
    # 8 requests: S ≤ 62,618,622,690 / (8 × 131,072 = 1,048,576) = 59,717.7 → 59,717 tokens.
    assert plan["max_context_for_batch"] == 59_717 and plan["max_context_unbounded"] is False
    # One 128K request (17,179,869,184 B) fits in 62,618,622,690.
    assert plan["max_length"] == {"tokens": 131072, "bytes_per_request": 17_179_869_184, "fits": True}
    # Decode at 32K, B = 1: (16,060,522,496 + 4,294,967,296 = 20,355,489,792) / 3.35e12 = 6.0763 ms.
    assert by_tokens[32768]["decode_step_seconds"]["1"] == pytest.approx(20_355_489_792 / 3.35e12)
    # B = 8: (16,060,522,496 + 8 × 4,294,967,296 = 50,420,260,864) / 3.35e12 = 15.05 ms.
    assert by_tokens[32768]["decode_step_seconds"]["8"] == pytest.approx(50_420_260_864 / 3.35e12)
    assert set(by_tokens[32768]["decode_step_seconds"]) == {"1", "8", "14"}
    assert plan["decode_includes_weights"] is True
    assert any("lower bound" in e for e in plan["estimates"])
    assert any("activations" in e for e in plan["estimates"])
    json.dumps(plan)


def test_tensor_parallel_and_replicas():
    report = _report("meta-llama__Meta-Llama-3.1-8B", tensor_parallel_size=2)
    plan = plan_serving(report, gpu="H100:8", weights_bytes=LLAMA_WEIGHTS)
    # Weights per GPU: 16,060,522,496 / 2 = 8,030,261,248; budget 78,679,145,186 − 8,030,261,248 = 70,648,883,938.
    assert plan["weights_bytes_per_gpu"] == 8_030_261_248
    assert plan["kv_budget_bytes"] == 70_648_883_938
    # Per GPU 4 of the 8 KV heads: 32 × 4 × 128 × 2 × 2 = 65,536 B/token; 32K → 2,147,483,648 B;
    # 70,648,883,938 / 2,147,483,648 = 32.9 → 32 per replica; 8 GPUs / TP 2 = 4 replicas → 128.
    ctx = next(c for c in plan["contexts"] if c["tokens"] == 32768)
    assert ctx["bytes_per_request"] == 2_147_483_648
    assert (ctx["max_concurrency"], plan["replicas"], ctx["max_concurrency_total"]) == (32, 4, 128)
    # The default single GPU is raised to the TP size; fewer GPUs than TP is an error.
    assert plan_serving(report, gpu="H100", weights_bytes=LLAMA_WEIGHTS)["gpu_count"] == 2
    with pytest.raises(UsageError):
        plan_serving(_report("meta-llama__Meta-Llama-3.1-8B", tensor_parallel_size=4), gpu="H100:2")


def test_explicit_budget_overrides_the_gpu(llama):
    # 40 GiB = 42,949,672,960 = 10 × 4,294,967,296 exactly: 10 requests at 32K.
    plan = plan_serving(llama, gpu="L4", kv_cache_memory_bytes=40 * 2**30, weights_bytes=LLAMA_WEIGHTS)
    assert plan["kv_budget_bytes"] == 42_949_672_960 and plan["budget_source"] == "explicit"
    assert plan["gpu_memory_utilization"] is None
    assert next(c for c in plan["contexts"] if c["tokens"] == 32768)["max_concurrency"] == 10


def test_weights_that_do_not_fit(llama):
    # L4 reports 23,034 MiB = 24,152,899,584 B; × 0.92 = 22,220,667,617.28 → 22,220,667,618 usable;
    # 22,220,667,618 − 30,000,000,000 = −7,779,332,382.
    plan = plan_serving(llama, gpu="l4", weights_bytes=30_000_000_000)
    assert plan["kv_budget_bytes"] == -7_779_332_382 and plan["weights_fit"] is False
    assert plan["verdict"].startswith("does not fit on 1 × L4-24GB: weights need 27.94 GiB per GPU of 20.69 GiB")
    assert all(c["max_concurrency"] == 0 for c in plan["contexts"])
    assert plan["max_length"]["fits"] is False


def test_utilization_is_a_parameter(llama):
    # 0.9 (SGLang-style static fraction): ceil(85,520,809,984 × 0.9 = 76,968,728,985.6) = 76,968,728,986
    # − 16,060,522,496 = 60,908,206,490.
    plan = plan_serving(llama, gpu="h100", weights_bytes=LLAMA_WEIGHTS, gpu_memory_utilization=0.9)
    assert plan["kv_budget_bytes"] == 60_908_206_490
    for bad in (0, 1.5, "x"):
        with pytest.raises(UsageError):
            plan_serving(llama, gpu="h100", weights_bytes=LLAMA_WEIGHTS, gpu_memory_utilization=bad)


def test_without_weights_or_gpu(llama):
    plan = plan_serving(llama, gpu="h200")
    # Weights from the config's shapes (Llama-3.1-8B, bf16, untied embeddings):
    #   embeddings 2 × 128,256 × 4,096 = 1,050,673,152
    #   per layer: attention 2·4096·4096 + 2·4096·(8·128) = 41,943,040; MLP 3·4096·14,336 = 176,160,768;
    #   2 norms 2 × 4,096 = 8,192; 32 × 218,112,000 = 6,979,584,000; final norm 4,096
    #   total 8,030,261,248 parameters (the Hub's count) × 2 B = 16,060,522,496 B (the index's total_size).
    # H200 reports 143,771 MiB = 150,754,820,096 B; ceil(× 0.92) = 138,694,434,489; − 16,060,522,496 = 122,633,911,993.
    assert plan["weights_bytes"] == 16_060_522_496 and plan["weights_source"] == "estimate"
    assert plan["kv_budget_bytes"] == 122_633_911_993 and plan["budget_source"] == "gpu"
    assert any("estimated from the config" in e for e in plan["estimates"])
    assert plan["verdict"].endswith("weights estimated from the config's shapes")
    # B_max at 4K: floor(122,633,911,993 / (4096 × 131072 = 536,870,912)) = 228
    assert plan["contexts"][0]["max_concurrency"] == 228
    # The decode bound reads the estimated weights: 4K → (16,060,522,496 + 536,870,912) / 4.8e12.
    assert plan["decode_includes_weights"] is True
    assert plan["contexts"][0]["decode_step_seconds"]["1"] == pytest.approx(16_597_393_408 / 4.8e12)
    bare = plan_serving(llama)
    assert bare["gpu"] is None and bare["contexts"][0]["decode_step_seconds"] is None
    assert bare["verdict"] == "no verdict: give --gpu or --budget"
    with pytest.raises(UsageError):
        plan_serving(llama, gpu="Z80")


def test_without_any_weights_the_budget_is_an_upper_bound():
    report = _report("meta-llama__Meta-Llama-3.1-8B")
    report._weights_estimate = Unknown("test: no shapes")  # no parameter count, no checkpoint
    attach_weights(report)
    plan = plan_serving(report, gpu="h200")
    # Nothing subtracted: ceil(150,754,820,096 × 0.92) = 138,694,434,489 (138,694,434,488.32 rounded up).
    assert plan["kv_budget_bytes"] == 138_694_434_489 and plan["weights_fit"] is None
    assert plan["budget_source"] == "gpu-without-weights"
    assert any("upper bound" in e for e in plan["estimates"])
    # B_max at 4K: floor(138,694,434,489 / 536,870,912) = 258; the decode bound counts KV reads only.
    assert plan["contexts"][0]["max_concurrency"] == 258
    assert plan["decode_includes_weights"] is False
    assert plan["contexts"][0]["decode_step_seconds"]["1"] == pytest.approx(536_870_912 / 4.8e12)
    assert plan["verdict"].endswith("an upper bound: weights unknown")


def test_windowed_model_is_unbounded_for_small_batches():
    # Mistral-7B-v0.1: 32 sliding layers, window 4096, 131,072 B/token → at most 4096 × 131,072 = 536,870,912 B.
    report = _report("Hugofernandez__Mistral-7B-v0.1-colab-sharded")
    two = plan_serving(report, kv_cache_memory_bytes=2**30, batch=2)
    # 2 × 536,870,912 = 1 GiB exactly: any context fits.
    assert two["max_context_for_batch"] is None and two["max_context_unbounded"] is True
    three = plan_serving(report, kv_cache_memory_bytes=2**30, batch=3)
    # 3 × 131,072 × S ≤ 1,073,741,824 → S ≤ 2,730.67 → 2,730.
    assert three["max_context_for_batch"] == 2730 and three["max_context_unbounded"] is False


def test_gpu_budgets_feed_the_markdown_columns(llama):
    budgets = gpu_budgets(["h100", "MI300X"], llama, weights_bytes=LLAMA_WEIGHTS)
    # MI300X as rocm-smi reports it: ceil(206,141,652,992 × 0.92 = 189,650,320,752.64) = 189,650,320,753
    # − 16,060,522,496 = 173,589,798,257.
    assert budgets == {"H100-SXM-80GB": H100_BUDGET_LLAMA, "MI300X-192GB": 173_589_798_257}
    text = render_markdown(llama, budgets=budgets)
    # 32K row: 62,618,622,690 / 4,294,967,296 = 14.58 → 14 on H100; 173,589,798,257 / 4,294,967,296 = 40.42 → 40.
    assert "| 32K | 4.00 GiB | 4.00 GiB | 14 | 40 |" in text
    unknown = gpu_budgets(["h100"], llama)
    # No weights: 78,679,145,186 and the column says so.
    assert unknown == {"H100-SXM-80GB (weights unknown)": H100_USABLE}
    # Weights larger than the GPU: budget 0, never negative.
    assert gpu_budgets(["l4"], llama, weights_bytes=10**11) == {"L4-24GB": 0}
