"""vLLM's whole budget against real start-up logs: every row of ../shared/docs/engine-logs*.tsv that prints
both the weights ("Model loading took") and the KV memory ("Available KV cache memory") on a GPU whose
CUDA total and settings can be told (``engine-log-budgets.tsv``: the printed figures, and how each row's
GPU and settings were read).

hfkv predicts ``ceil(total × utilization) − weights − its estimate of the rest`` (hfkv/engines/vllm/memory.py)
under the rules of the row's own release (``engine_version``: before 0.20 vLLM did not subtract its
CUDA-graph estimate) and says how far off that estimate can be (the budget's band). Each prediction must
land within hfkv's stated band, plus 0.25 GiB for what the rule sets do not model (the sampler warm-up
and the non-torch baseline of older releases). The errors are listed in docs/deployments.md.
"""

from __future__ import annotations

import csv
from fractions import Fraction
from pathlib import Path

import pytest

import hfkv
from hfkv.engines.contract import Device, EngineInput, EngineKnobs
from hfkv.engines.layout import Layout
from hfkv.engines.vllm.memory import memory_budget

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
ROWS = list(csv.DictReader((Path(__file__).parent / "engine-log-budgets.tsv").open(encoding="utf-8"), delimiter="\t"))
GIB = 1 << 30
VERSION_ALLOWANCE = 0.25 * GIB


def _release(version: str) -> str:
    """The row's release as a version ("0.28", "0.11.2"; a leading "~" or "<=" dropped)."""
    return version.lstrip("<=~").strip()


def _printed(row_id: str) -> str:
    """The row as the shared log tables print it: the test's figures must be the log's own."""
    for name in ("engine-logs.tsv", "engine-logs-2.tsv"):
        path = SHARED / "docs" / name
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith(row_id + "\t"):
                return line
    raise AssertionError(f"{row_id} is not in the shared engine logs")


def predict(row: dict[str, str]) -> tuple[float, float]:
    """(hfkv's prediction less the printed KV memory, hfkv's band), in bytes, for one log row."""
    config = ROOT / row["config"] if row["config"].startswith("fixtures") else SHARED / row["config"]
    if not config.exists():
        pytest.skip(f"{config} not present")
    tp = int(row["tp"])
    report = hfkv.inspect(str(config), tensor_parallel_size=tp, weights=False)
    total = int(Fraction(row["gpu_total_gib"]) * GIB)
    device = Device(row["id"], smi_bytes=total, cuda_total_bytes=total, interconnect=row["interconnect"])
    knobs = EngineKnobs.resolve({
        "gpu_memory_utilization": float(row["gpu_memory_utilization"]),
        "max_num_batched_tokens": int(row["max_num_batched_tokens"]), "max_num_seqs": int(row["max_num_seqs"]),
        "enforce_eager": row["enforce_eager"] == "yes", "engine_version": _release(row["engine_version"])})
    budget = memory_budget(EngineInput.of(report), device, int(float(row["weights_gib"]) * GIB), "given", knobs,
                           Layout(tp=tp))
    return budget.kv_bytes - float(row["available_gib"]) * GIB, budget.error_bytes


# Rows of releases before 0.20 where the 0.9–0.19 rule set (no graph estimate subtracted) still leaves hfkv
# ~0.5 GiB above the printed memory, outside its band: the older profiler's accounting is not modelled.
OUTSIDE_BAND = {"H2-05": "vLLM 0.9.2: +0.52 GiB against a ±0.25 GiB band",
                "H2-34": "vLLM 0.13.0: +0.54 GiB against a ±0.24 GiB band"}


@pytest.mark.parametrize("row", [pytest.param(r, marks=pytest.mark.xfail(reason=OUTSIDE_BAND[r["id"]], strict=True))
                                 if r["id"] in OUTSIDE_BAND else r for r in ROWS], ids=[r["id"] for r in ROWS])
def test_vllm_budget_lands_within_its_band_on_real_logs(row):
    if not (SHARED / "docs").is_dir():
        pytest.skip(f"{SHARED / 'docs'} not present (the shared engine logs)")
    printed = _printed(row["id"])
    assert row["weights_gib"] in printed and row["available_gib"] in printed
    error, band = predict(row)
    assert abs(error) <= band + VERSION_ALLOWANCE, (
        f"{row['id']}: {error / GIB:+.2f} GiB, band ±{band / GIB:.2f} GiB")


if __name__ == "__main__":  # the table of docs/deployments.md: python tests/planning/test_engine_log_budgets.py
    print("| row | vLLM | model, GPU | printed KV | hfkv − printed | band |")
    print("|---|---|---|---:|---:|---:|")
    for row in ROWS:
        error, band = predict(row)
        print(f"| {row['id']} | {row['engine_version']} | {Path(row['config']).name.split('.json')[0]}, "
              f"{row['gpu_total_gib']} GiB × TP {row['tp']} | {row['available_gib']} GiB | {error / GIB:+.2f} GiB | "
              f"±{band / GIB:.2f} GiB |")
