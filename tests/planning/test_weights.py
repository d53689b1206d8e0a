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
    assert got == -(-whole // tp) + -(-extra // tp)
    assert "pads its own slice" in how


def test_tp2_adds_1_36_gib_a_gpu(report):
    # 36 × 128 × (7,532,544 − 14,431,744 / 2) = 4,608 × 316,672 = 1,459,224,576 B (1.36 GiB) beyond half the model
    assert expert_bytes(1536) == 7_532_544
    whole = report.extra["weights"]["weights_bytes"]
    assert per_gpu(whole, Layout(tp=2), shares(report))[0] == -(-whole // 2) + 1_459_224_576


def test_expert_parallel_deals_experts_out_whole(report):
    # under EP every expert keeps its TP-1 padding: an even split, nothing more
    whole = report.extra["weights"]["weights_bytes"]
    got, how = per_gpu(whole, Layout(tp=2, expert_parallel=True), shares(report))
    assert got == -(-whole // 2) and "pads" not in how


def test_an_unpadded_model_splits_evenly():
    report = hfkv.inspect(str(Path(__file__).resolve().parents[2] / "fixtures" / "Qwen__Qwen3-30B-A3B"))
    whole = report.extra["weights"]["weights_bytes"]
    assert per_gpu(whole, Layout(tp=4), shares(report))[0] == -(-whole // 4)
