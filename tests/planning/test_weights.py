"""Weights per GPU (hfkv.planning.weights): padded MXFP4 experts per TP rank. Expected figures are hand
arithmetic from vLLM 0.34.0's Mxfp4MoEMethod.create_weights (vllm/model_executor/layers/quantization/
mxfp4.py) and mxfp4_round_up_hidden_size_and_intermediate_size (fused_moe/oracle/mxfp4.py, Marlin: the
per-rank expert width up to 128, the hidden size up to 256), written beside each."""

from __future__ import annotations

from pathlib import Path

import pytest

import hfkv
from hfkv.engines.layout import Layout
from hfkv.planning.weights import per_gpu, shares

GPT_OSS_120B = Path(__file__).resolve().parents[3] / "shared" / "hub-configs" / "openai__gpt-oss-120b.json"
LAYERS, EXPERTS, HIDDEN_PADDED = 36, 128, 3072  # gpt-oss-120b: 36 layers, 128 experts, hidden 2880 -> 3072
# What every rank holds whole (bf16): 73 norms × 2880 × 2 = 420,480; 36 routers (128 × 2880 + 128 bias) × 2 =
# 26,551,296; 36 o_proj biases × 2880 × 2 = 207,360: 27,179,136 B, of which a rank of tp holds (tp − 1)/tp more.
WHOLE = 420_480 + 26_551_296 + 207_360


def held(tp: int) -> int:
    return -(-WHOLE * (tp - 1) // tp)


def expert_bytes(width: int) -> int:
    """One expert on one rank at a padded per-rank width (uint8 weights 2 per byte, an e8m0 scale per 32,
    bf16 biases): w13 (2w, H'/2) + scales (2w, H'/32) + bias 2w; w2 (H', w/2) + scales (H', w/32); w2 bias
    (H') whole on every rank."""
    h = HIDDEN_PADDED
    return 2 * width * h // 2 + 2 * width * h // 32 + 2 * 2 * width + h * width // 2 + h * width // 32 + 2 * h


@pytest.fixture(scope="module")
def report():
    if not GPT_OSS_120B.exists():
        pytest.skip("../shared/hub-configs absent")
    return hfkv.inspect(str(GPT_OSS_120B))


@pytest.mark.parametrize("tp, rank_width", [(2, 1536), (4, 768), (8, 384)])  # 2880/tp = 1440, 720, 360 -> up to 128
def test_each_tp_rank_pads_its_own_slice_of_every_expert(report, tp, rank_width):
    whole = report.extra["weights"]["weights_bytes"]
    # TP 1 holds each expert at width 2944 (2880 up to 128): 14,431,744 B; an even split gives 1/tp of it
    assert expert_bytes(2944) == 14_431_744
    extra = LAYERS * EXPERTS * (expert_bytes(rank_width) * tp - expert_bytes(2944))
    got, how = per_gpu(whole, Layout(tp=tp), shares(report))
    assert got == -(-whole // tp) + -(-extra // tp) + held(tp)
    assert "pads its own slice" in how


def test_tp2_adds_1_36_gib_a_gpu(report):
    # 36 × 128 × (7,532,544 − 14,431,744 / 2) = 4,608 × 316,672 = 1,459,224,576 B (1.36 GiB) beyond half the model
    assert expert_bytes(1536) == 7_532_544
    whole = report.extra["weights"]["weights_bytes"]
    assert per_gpu(whole, Layout(tp=2), shares(report))[0] == -(-whole // 2) + 1_459_224_576 + held(2)


def test_expert_parallel_deals_experts_out_whole(report):
    # under EP every expert keeps its TP-1 padding: an even split, nothing more
    whole = report.extra["weights"]["weights_bytes"]
    got, how = per_gpu(whole, Layout(tp=2, expert_parallel=True), shares(report))
    assert got == -(-whole // 2) + held(2) and "pads" not in how


def test_an_unpadded_model_pads_nothing():
    report = hfkv.inspect(str(Path(__file__).resolve().parents[2] / "fixtures" / "Qwen__Qwen3-30B-A3B"))
    assert "pads" not in per_gpu(report.extra["weights"]["weights_bytes"], Layout(tp=4), shares(report))[1]


SHARED_CONFIGS = Path(__file__).resolve().parents[3] / "shared" / "hub-configs"


def _report(name: str):
    path = SHARED_CONFIGS / name
    if not path.exists():
        pytest.skip("../shared/hub-configs absent")
    return hfkv.inspect(str(path))


def test_mla_down_projections_norms_and_routers_are_held_whole_by_every_rank():
    # DeepSeek-V2-Lite (bf16, no q_lora): vLLM's kv_a_proj_with_mqa is a ReplicatedLinear, GateLinear a
    # ReplicatedLinear, norms whole. Attention: 27 layers × (576 × 2048 × 2 B + 512 × 2 B) = 63,728,640 B.
    # Other: the final norm 2048 × 2 + 54 layer norms × 4,096 + 26 routers × 64 × 2048 × 2 = 7,041,024 B.
    # At TP 4 a rank holds all of them, not a quarter: (63,728,640 + 7,041,024) × 3/4 = 53,077,248 B more.
    report = _report("deepseek-ai__DeepSeek-V2-Lite.json")
    whole = report.extra["weights"]["weights_bytes"]
    got, how = per_gpu(whole, Layout(tp=4), shares(report))
    assert got == -(-whole // 4) + 53_077_248
    assert "does not split 4 ways" in how


def test_key_value_heads_are_replicated_when_tp_exceeds_them():
    # Llama-3.1-8B, 8 KV heads, bf16: k_proj and v_proj (1024 × 4096 × 2 B) × 32 layers = 536,870,912 B, which
    # QKVParallelLinear splits at most 8 ways: at TP 16 a rank holds 1/8, not 1/16: 33,554,432 B more; the
    # 65 norms (4096 × 2 B: 532,480 B) whole: 532,480 × 15/16 = 499,200 B more.
    report = _report("meta-llama__Meta-Llama-3.1-8B.json")
    whole = report.extra["weights"]["weights_bytes"]
    assert per_gpu(whole, Layout(tp=16), shares(report))[0] == -(-whole // 16) + 33_554_432 + 499_200
    # at TP 8 the heads split evenly: only the norms, 532,480 × 7/8 = 465,920 B
    assert per_gpu(whole, Layout(tp=8), shares(report))[0] == -(-whole // 8) + 465_920
