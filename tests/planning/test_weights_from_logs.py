"""Weights per GPU against what real start-up logs printed as loaded (issue 30 item 2): vLLM's "Model loading
took X GiB" and SGLang's "Load weight end ... mem usage=X GB" (GiB), read from ../shared/docs/engine-logs*.tsv.

hfkv prices each model from its config (the estimate: no checkpoint is read), as loaded (16-bit floats, MTP
layers left out, MXFP4 padded) and split over the log's TP with what every rank holds whole. Each row must land
within the estimate's own band (``band_percent``): the figure the budget's weights term carries. Where the log's
checkpoint is a quantised copy whose config is not among the bundled ones, its quantization_config is the one
that repo publishes, written out below with the repo's name; the model's shapes are the base model's.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

import hfkv
from hfkv.engines.layout import Layout
from hfkv.planning.weights import per_gpu, shares

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
HUB = SHARED / "hub-configs"

# AutoAWQ's GEMM layout as hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4 and
# TechxGenus/Meta-Llama-3-70B-Instruct-AWQ publish it (4 bits, groups of 128, zero points)
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
# nvidia/Llama-3.1-8B-Instruct-FP4 (ModelOpt NVFP4: groups of 16 with an fp8 scale, the head unquantised)
NVFP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}
# nvidia/Llama-3.3-70B-Instruct-FP8 (per-tensor fp8 with static activation scales, the head unquantised)
FP8 = {"quant_method": "fp8", "activation_scheme": "static"}

# (log id, config, quantization_config to set or None, TP)
ROWS = [
    ("R04", ROOT / "fixtures/Qwen__Qwen3-14B-from-engine-log/config.json", None, 1),
    ("R27", HUB / "openai__gpt-oss-120b.json", None, 1),  # MXFP4 as vLLM's Marlin backend pads it
    ("H2-05", HUB / "Qwen__Qwen3-8B.json", None, 1),
    ("H2-06", HUB / "meta-llama__Meta-Llama-3.1-70B.json", AWQ, 2),  # Llama-3-70B's shapes are 3.1's
    ("H2-08", HUB / "meta-llama__Meta-Llama-3.1-70B.json", AWQ, 1),
    ("H2-17", HUB / "Qwen__Qwen3-30B-A3B.json", None, 1),
    ("H2-18", HUB / "meta-llama__Meta-Llama-3.1-70B.json", FP8, 1),  # Llama-3.3-70B's shapes are 3.1's
    ("H2-34", HUB / "meta-llama__Meta-Llama-3.1-8B.json", NVFP4, 1),
    ("L001", HUB / "Qwen__Qwen3-30B-A3B.json", None, 1),  # SGLang on ROCm; the 2507 release has 3-30B's shapes
    ("L024", ROOT / "fixtures/Qwen__Qwen3.6-27B-from-engine-log/config.json", None, 1),  # its MTP layer not loaded
]
KNOWN_GAPS = {
    # vLLM 0.23 on 2 × H200: 74.08 GiB printed, hfkv 72.98 (−1.5%). "Model loading" also counts what the model
    # allocates at load besides weights: DeepSeek-V4's two RoPE caches (main and compress) of 1,048,576
    # positions × 64 × 4 B are 0.5 GiB (vllm/models/deepseek_v4/common/rope.py, get_rope); the rest unexplained.
    "H2-07": (HUB / "deepseek-ai__DeepSeek-V4-Flash.json", None, 2),
    # SGLang ~0.4.10, Qwen3-0.6B: "mem usage=1.25 GB" where the weights are 1.11 GiB: SGLang's mem usage is the
    # free memory lost while loading, which for a small model is mostly what else the process allocates then.
    "H2-10": (ROOT / "fixtures/Qwen__Qwen3-0.6B-from-engine-log/config.json", None, 1),
}
_PRINTED = re.compile(r"(?:Model loading(?: took)? |mem usage=)([0-9.]+) G")


def printed_gib(log_id: str) -> float:
    """The weights figure a log printed, GiB (SGLang's "GB" is GiB: bytes / 2**30), from the shared tables."""
    for name in ("engine-logs.tsv", "engine-logs-2.tsv", "engine-logs-3.tsv"):
        for row in csv.DictReader((SHARED / "docs" / name).open(encoding="utf-8"), delimiter="\t"):
            if row["id"] != log_id:
                continue
            if row.get("weights_gib_printed"):
                return float(row["weights_gib_printed"].split()[0])
            text = " ".join(v for v in row.values() if isinstance(v, str))
            return float(_PRINTED.search(text).group(1))
    raise LookupError(log_id)


def hfkv_gib(config_path: Path, quantization: dict | None, tp: int) -> tuple[float, float]:
    """(hfkv's weights per GPU in GiB, the estimate's band in percent)."""
    config = json.loads(config_path.read_text())
    if quantization is not None:
        config["quantization_config"] = quantization
    report = hfkv.inspect_config(config)
    section = report.extra["weights"]
    got, _ = per_gpu(section["weights_bytes"], Layout(tp=tp), shares(report))
    return got / 2**30, section["band_percent"]


needs_shared = pytest.mark.skipif(not (SHARED / "docs" / "engine-logs-2.tsv").exists(),
                                  reason="../shared/docs (the start-up logs) absent")


@needs_shared
@pytest.mark.parametrize("log_id, config, quantization, tp", ROWS, ids=[r[0] for r in ROWS])
def test_weights_per_gpu_within_the_band_of_what_the_log_printed(log_id, config, quantization, tp):
    printed = printed_gib(log_id)
    got, band = hfkv_gib(config, quantization, tp)
    assert abs(got - printed) / printed * 100 <= band, f"{log_id}: hfkv {got:.3f} GiB, printed {printed} (±{band}%)"


@needs_shared
@pytest.mark.parametrize("log_id", sorted(KNOWN_GAPS))
@pytest.mark.xfail(strict=True, reason="load-time allocations beyond the weights (see KNOWN_GAPS)")
def test_known_gaps(log_id):
    config, quantization, tp = KNOWN_GAPS[log_id]
    printed = printed_gib(log_id)
    got, band = hfkv_gib(config, quantization, tp)
    assert abs(got - printed) / printed * 100 <= band


@needs_shared
def test_the_printed_figures_are_read():
    # the tables' own cells, as a guard on the parsing above
    assert printed_gib("R27") == 65.9651 and printed_gib("L001") == 56.98 and printed_gib("H2-06") == 18.55
