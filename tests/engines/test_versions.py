"""Engine releases: which rule set a version picks, and what each rule changes, by hand.

Every boundary below is a release the rule first appears in, read in the released sources
(docs/engine-versions-verified.md cites file, function and line for each).
"""

from __future__ import annotations

import math

import pytest

from hfkv.engines import versions
from hfkv.engines.contract import Device, EngineKnobs
from hfkv.engines.layout import Layout
from hfkv.engines.sglang import memory as sglang_memory
from hfkv.engines.vllm.memory import batch_defaults
from hfkv.errors import UsageError

GIB = 1 << 30
MIB = 1 << 20


@pytest.mark.parametrize("version, label", [
    ("0.9.2", "0.9–0.16"), ("0.16.0", "0.9–0.16"), ("0.17.0", "0.17–0.19"), ("0.19.1", "0.17–0.19"),
    ("0.20.0", "0.20.0"), ("0.20.1", "0.20.1–0.25"),
    ("0.20.2rc1", "0.20.1–0.25"), ("0.22.1", "0.20.1–0.25"), ("0.26.0", "0.26"), ("0.27.1", "0.27"),
    ("0.28.0", "0.28–0.32"), ("0.33.0", "0.33"), ("0.34.0", "0.34"), ("0.10.0", "0.9–0.16"),
])
def test_vllm_release_picks_its_rule_set(version, label):
    # 0.10.0 sorts after 0.9.2 as a version, not before it as text.
    assert versions.rule_set("vllm", version).label == label


@pytest.mark.parametrize("version, label", [
    ("0.4.3.post4", "0.4–0.4.7"), ("0.4.8", "0.4.8–0.5.2"), ("0.5.8.post1", "0.5.5–0.5.8"), ("0.5.9", "0.5.9"),
    ("0.5.12", "0.5.10–0.5.12"), ("0.5.13", "0.5.13"), ("0.5.14", "0.5.14"), ("0.5.16", "0.5.15–0.5.16"),
    ("0.5.17", "0.5.17–0.5.19"), ("0.5.20", "0.5.20"), ("0.5.21", "0.5.21"), ("0.5.22", "0.5.22"), ("0.5.23", "0.5.23"),
])
def test_sglang_release_picks_its_rule_set(version, label):
    assert versions.rule_set("sglang", version).label == label


def test_uncovered_and_malformed_releases_are_refused_with_the_list():
    with pytest.raises(UsageError, match=r"vLLM 0\.8\.5 is not covered .*0\.9–0\.16.*newest modelled 0\.34\.0"):
        versions.parse_engine("vllm==0.8.5")
    with pytest.raises(UsageError, match="vLLM 0.35.0 is not covered"):
        versions.parse_engine("vllm==0.35.0")
    with pytest.raises(UsageError, match="not a release number"):
        versions.parse_engine("sglang==latest")
    with pytest.raises(UsageError, match="theory has no version"):
        versions.parse_engine("theory==1.0")
    assert versions.parse_engine("vLLM") == versions.Engine("vllm")
    assert versions.described("vllm", None) == "vLLM 0.34.0 (newest modelled)"


H100 = Device("H100-SXM-80GB", smi_bytes=81_559 * MIB, cuda_total_bytes=85_029_158_912, interconnect="nvswitch")
B200 = Device("B200-180GB", smi_bytes=183_359 * MIB, cuda_total_bytes=int(178.36 * GIB))
GB10 = Device("GB10", smi_bytes=128 * GIB, cuda_total_bytes=int(119.7 * GIB))


def test_vllm_batch_tiers_by_release():
    # get_batch_defaults: the >= 160 GiB tier from 0.28.0 (B200: 183,359 MiB = 179.1 GiB); GB10 kept out of
    # the >= 70 GiB tier from 0.33.0.
    rules = versions.rule_set
    assert batch_defaults(B200, rules("vllm", "0.27.1")) == (8192, 1024)
    assert batch_defaults(B200, rules("vllm", "0.28.0")) == (16384, 1024)
    assert batch_defaults(H100, rules("vllm", "0.34.0")) == (8192, 1024)
    assert batch_defaults(GB10, rules("vllm", "0.32.0")) == (8192, 1024)
    assert batch_defaults(GB10, rules("vllm", "0.33.0")) == (2048, 256)


def _fraction(version: str, device: Device, tp: int = 1, **knobs) -> float:
    knobs = EngineKnobs.resolve({"engine_version": version, **knobs})
    return sglang_memory.mem_fraction_static(device, Layout(tp=tp, engine="sglang"), knobs,
                                             sglang_memory.Traits())[0]


def test_sglang_fraction_eras():
    # <= 0.4.7: the TP table on a GPU up to 81,920 MiB (an H100's 81,559): 0.88 at TP 1, 0.81 at TP 8 —
    # what logs R13–R15 print.
    assert _fraction("0.4.3", H100) == 0.88 and _fraction("0.4.3", H100, tp=8) == 0.81
    # 0.4.8–0.5.2, tiered: 81,559 MiB < 90 GiB, reserve (9.5 + 1/2) × 1024 = 10,240 MiB:
    # round((81,559 − 10,240) / 81,559, 3) = round(0.87445, 3) = 0.874.
    assert _fraction("0.5.1", H100) == 0.874
    # 0.5.3 on, the reserve rule: 512 + 1.5 × 8192 + 2 × 256 + 1/8 × 1024 = 13,440 MiB (above the 10,240 floor),
    # no prefill graph before 0.5.10: round((81,559 − 13,440) / 81,559, 3) = round(0.83521, 3) = 0.835.
    assert _fraction("0.5.9", H100) == 0.835
    # 0.5.10 adds the prefill graph: 8 MiB × the shapes up to 8,192 tokens (4..32 by 4: 8, 48..256 by 16: 14,
    # 288..512 by 32: 8, 576..1024 by 64: 8, 1280..4096 by 256: 12, 4608..8192 by 512: 8; 58 in all):
    # 13,440 + 464 = 13,904; round((81,559 − 13,904) / 81,559, 3) = round(0.82952, 3) = 0.830.
    assert sglang_memory.prefill_graph_shapes(8192) == 58
    assert _fraction("0.5.12", H100) == 0.83
    # EAGLE's reserve after the floor: 4,096 MiB in 0.5.10–0.5.13, none from 0.5.14:
    # round((81,559 − 18,000) / 81,559, 3) = round(0.77930, 3) = 0.779.
    assert _fraction("0.5.12", H100, speculative_draft_layers=1) == 0.779
    assert _fraction("0.5.16", H100, speculative_draft_layers=1) == _fraction("0.5.16", H100) == 0.83


def test_sglang_rocm_aiter_factor():
    # ROCm: no prefill graph (piecewise graphs are off on HIP), and the fraction × 0.85 when aiter serves a
    # context above 8,192. MI300X: rocm-smi 206,141,652,992 B = 196,592 MiB; reserve 512 + 1.5 × 16,384 +
    # 2 × 512 + 128 = 26,240 MiB: round((196,592 − 26,240) / 196,592, 3) = round(0.86652, 3) = 0.867;
    # × 0.85 = 0.73695.
    mi300x = Device("MI300X-192GB", smi_bytes=206_141_652_992, cuda_total_bytes=205_822_885_888, vendor="AMD")
    layout = Layout(tp=1, engine="sglang")
    knobs = EngineKnobs.resolve({})
    short = sglang_memory.budget(mi300x, None, None, knobs, layout, sglang_memory.Traits(), context=8192)
    long = sglang_memory.budget(mi300x, None, None, knobs, layout, sglang_memory.Traits(), context=40960)
    assert short.fraction == 0.867
    assert math.isclose(long.fraction, 0.867 * 0.85)


def test_vllm_sampler_warm_up_before_017_keeps_twice_the_bytes():
    # topk_topp_sampler.py before 0.17 sorts the logits in PyTorch (values and int64 indices besides): 28 B per
    # logits element; from 0.17 the Triton kernel: 14. Qwen3-8B (vocab 151,936, hidden 4,096) on an H100's
    # defaults (1,024 sequences, 8,192 tokens): 28 × 1,024 × 151,936 + 8,192 × 4,096 × 2 = 4,356,308,992 +
    # 67,108,864 = 4,423,417,856 B; 14 × 1,024 × 151,936 + 67,108,864 = 2,245,263,360 B.
    from hfkv.engines import memory_budget
    from hfkv.engines.layout import Layout
    from hfkv.planning.gpus import get_gpu
    from _helpers import fixture_report

    qwen = fixture_report("Qwen__Qwen3-8B")
    device = get_gpu("H100").device()
    for release, peak in (("0.16.0", 4_423_417_856), ("0.17.0", 2_245_263_360)):
        knobs = EngineKnobs.resolve({"max_num_seqs": 1024, "max_num_batched_tokens": 8192})
        budget = memory_budget(f"vllm=={release}", qwen, device, 16 * GIB, "given", knobs, Layout(tp=1))
        assert budget.term("peak activation").bytes == peak
