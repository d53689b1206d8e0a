"""GPU presets (hfkv.planning.gpus): names as the tools print them, each figure equal to its public source,
GPUs given by memory, and this machine's GPUs read from fake nvidia-smi / rocm-smi scripts."""

from __future__ import annotations

import json
import os
import stat
from fractions import Fraction
from pathlib import Path

import pytest

from hfkv.errors import UsageError
from hfkv.planning import gpus

MIB = 1 << 20
GIB = 1 << 30
DOC = Path(__file__).resolve().parents[2] / "docs" / "gpus.md"


# -- names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, canonical", [
    ("h100", "H100-SXM-80GB"), ("H100-80GB", "H100-SXM-80GB"), ("H100 SXM", "H100-SXM-80GB"),
    ("h100_pcie", "H100-PCIe-80GB"), ("mi300x", "MI300X-192GB"), ("MI300X", "MI300X-192GB"),
    ("H200", "H200-141GB"), ("rtx4090", "RTX-4090-24GB"), ("A100-40GB", "A100-40GB"),
    ("a100", "A100-SXM-80GB"), ("b300", "B300-288GB"), ("GB200", "GB200-186GB"), ("l40s", "L40S-48GB"),
    ("h20", "H20-96GB"), ("RTX 3090", "RTX-3090-24GB"), ("5070 Ti", "RTX-5070-Ti-16GB"), ("v100-32gb", "V100-32GB"),
    ("dgx spark", "GB10-128GB"), ("rtx pro 6000", "RTX-PRO-6000-96GB"), ("a6000", "RTX-A6000-48GB"),
])
def test_aliases_are_case_and_punctuation_insensitive(name, canonical):
    assert gpus.get_gpu(name).name == canonical


# What nvidia-smi --query-gpu=name, torch.cuda.get_device_name and rocm-smi print, each seen in a public
# nvidia-smi table, collect_env output or NVIDIA's supported-chips list.
@pytest.mark.parametrize("printed, canonical", [
    ("NVIDIA GeForce RTX 3090", "RTX-3090-24GB"),
    ("NVIDIA GeForce RTX 4090", "RTX-4090-24GB"),
    ("NVIDIA GeForce RTX 5090", "RTX-5090-32GB"),
    ("NVIDIA GeForce RTX 5080", "RTX-5080-16GB"),
    ("NVIDIA GeForce RTX 5070 Ti", "RTX-5070-Ti-16GB"),
    ("NVIDIA RTX A5000", "RTX-A5000-24GB"),
    ("NVIDIA RTX A6000", "RTX-A6000-48GB"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000-96GB"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX-PRO-6000-96GB"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX-PRO-6000-96GB"),
    ("NVIDIA L4", "L4-24GB"),
    ("NVIDIA L40S", "L40S-48GB"),
    ("NVIDIA A10G", "A10G-24GB"),
    ("Tesla T4", "T4-16GB"),
    ("Tesla V100-SXM2-16GB", "V100-16GB"),
    ("Tesla V100-PCIE-16GB", "V100-16GB"),
    ("Tesla V100-SXM2-32GB", "V100-32GB"),
    ("Tesla V100-PCIE-32GB", "V100-32GB"),
    ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
    ("NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB"),
    ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"),
    ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"),
    ("NVIDIA H20", "H20-96GB"),
    ("NVIDIA H800", "H800-80GB"),
    ("NVIDIA H100 80GB HBM3", "H100-SXM-80GB"),
    ("NVIDIA H100 PCIe", "H100-PCIe-80GB"),
    ("NVIDIA H100 NVL", "H100-NVL-94GB"),
    ("NVIDIA H200", "H200-141GB"),
    ("NVIDIA H200 NVL", "H200-NVL-141GB"),
    ("NVIDIA GH200 480GB", "GH200-96GB"),
    ("NVIDIA GH200 120GB", "GH200-96GB"),
    ("NVIDIA B200", "B200-180GB"),
    ("NVIDIA B300 SXM6 AC", "B300-288GB"),
    ("NVIDIA GB200", "GB200-186GB"),
    ("NVIDIA GB10", "GB10-128GB"),
    ("AMD Instinct MI300X", "MI300X-192GB"),
    ("AMD Instinct MI300X VF", "MI300X-192GB"),
    ("AMD Instinct MI325X", "MI325X-256GB"),
    ("AMD Instinct MI355X", "MI355X-288GB"),
])
def test_the_names_the_tools_print(printed, canonical):
    assert gpus.get_gpu(printed).name == canonical
    assert gpus.parse_gpu(f"{printed}:2") == (gpus.get_gpu(canonical), 2)


def test_the_issue_list_has_a_preset_each():
    # Issue 27 item 4: at least these GPUs, and no alias names two presets (the module asserts it at import).
    wanted = ["RTX-3090-24GB", "RTX-4090-24GB", "RTX-5090-32GB", "RTX-5080-16GB", "RTX-5070-Ti-16GB",
              "RTX-A5000-24GB", "RTX-A6000-48GB", "RTX-PRO-6000-96GB", "L4-24GB", "L40S-48GB", "A10G-24GB",
              "T4-16GB", "V100-16GB", "V100-32GB", "A100-40GB", "A100-PCIe-40GB", "A100-SXM-80GB", "A100-PCIe-80GB",
              "H20-96GB", "H800-80GB", "H100-PCIe-80GB", "H100-SXM-80GB", "H100-NVL-94GB", "H200-141GB",
              "H200-NVL-141GB", "GH200-96GB", "B200-180GB", "B300-288GB", "GB200-186GB", "GB10-128GB",
              "MI300X-192GB", "MI325X-256GB", "MI355X-288GB"]
    assert sorted(wanted) == sorted(gpus.names())
    for preset in gpus.PRESETS:
        for alias in (preset.name, *preset.aliases):
            assert gpus.get_gpu(alias) is preset


def test_name_count():
    preset, count = gpus.parse_gpu("H200:8")
    assert (preset.name, count) == ("H200-141GB", 8)
    assert gpus.parse_gpu("l4")[1] == 1
    for bad in ("H200:0", "H200:x", "H200:-1"):
        with pytest.raises(UsageError):
            gpus.parse_gpu(bad)


def test_unknown_gpu_is_one_line_listing_the_choices():
    with pytest.raises(UsageError) as err:
        gpus.get_gpu("V80")
    text = str(err.value)
    assert "\n" not in text and "'V80'" in text and "--gpu-memory" in text
    for name in gpus.names():
        assert name in text
    with pytest.raises(UsageError):
        gpus.get_gpu("NVIDIA")  # a vendor word alone names nothing


# -- figures, each against its source -------------------------------------------------------------


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
    # T4 likewise: 16 × 10^9; NVML's 15,360 MiB = 16,106,127,360 B is 0.66% above it.
    assert gpus.get_gpu("t4").memory_bytes == 16_000_000_000
    # Bandwidth is decimal: 3.35 TB/s = 3.35 × 10^12 B/s.
    assert gpus.get_gpu("h100").bandwidth_bytes_per_s == 3_350_000_000_000
    assert gpus.get_gpu("mi355x").bandwidth_bytes_per_s == 8 * 10**12


# (preset, nvidia-smi/rocm-smi total in bytes, where it was seen)
REPORTED = [
    ("RTX-3090-24GB", 24_576 * MIB),  # nvidia-smi, https://github.com/noonghunna/club-3090/issues/390
    ("RTX-4090-24GB", 24_564 * MIB),  # nvidia-smi, https://github.com/vllm-project/vllm/issues/7553
    ("RTX-5090-32GB", 32_607 * MIB),  # nvidia-smi, https://github.com/noonghunna/club-3090/issues/617
    ("RTX-5080-16GB", 16_303 * MIB),  # nvidia-smi table in a public GitHub file (code-corpus id 8079537680)
    ("RTX-5070-Ti-16GB", 16_303 * MIB),  # nvidia-smi table, code-corpus id 55415122863
    ("RTX-A5000-24GB", 24_564 * MIB),  # https://github.com/akash-network/provider-configs/pull/83
    ("RTX-A6000-48GB", 49_140 * MIB),  # nvidia-smi table, code-corpus id 29086230745
    ("RTX-PRO-6000-96GB", 97_887 * MIB),  # nvidia-smi table, code-corpus id 55414006193
    ("L4-24GB", 23_034 * MIB),  # https://github.com/modal-labs/modal-client/pull/2797
    ("L40S-48GB", 46_068 * MIB),  # same PR
    ("A10G-24GB", 23_028 * MIB),  # nvidia-smi, https://github.com/NVIDIA/DCGM/issues/232
    ("T4-16GB", 15_360 * MIB),  # modal-client PR #2797; also robbyant-research/MagicQuill issue #57
    ("V100-16GB", 16_160 * MIB),  # nvidia-smi, https://github.com/4paradigm/k8s-vgpu-scheduler/issues/7
    ("V100-32GB", 32_768 * MIB),  # nvidia-smi, https://github.com/Wan-Video/Wan2.1/issues/5
    ("A100-40GB", 40_960 * MIB),  # modal-client PR #2797
    ("A100-SXM-80GB", 81_920 * MIB),  # same PR
    ("H20-96GB", 97_871 * MIB),  # nvidia-smi on an H20, code-corpus id 53244009727
    ("H800-80GB", 81_559 * MIB),  # nvidia-smi on an H800, code-corpus id 41507333121
    ("H100-SXM-80GB", 81_559 * MIB),  # modal-client PR #2797
    ("H100-PCIe-80GB", 81_559 * MIB),  # nvidia-smi on an H100 PCIe, code-corpus id 52712584324
    ("H100-NVL-94GB", 95_830 * MIB),  # nvidia-smi on an H100 NVL, code-corpus id 56777991392
    ("H200-141GB", 143_771 * MIB),  # modal-client PR #2797
    ("H200-NVL-141GB", 143_771 * MIB),  # nvidia-smi on an H200 NVL, code-corpus id 52951295611
    ("GH200-96GB", 97_871 * MIB),  # nvidia-smi on a GH200 480GB, code-corpus id 25187769457
    ("B200-180GB", 183_359 * MIB),  # nvidia-smi, NVIDIA/TensorRT-LLM issue #10278
    ("GB200-186GB", 189_471 * MIB),  # nvidia-smi on a GB200, code-corpus id 51864327511
    ("MI300X-192GB", 206_141_652_992),  # rocm-smi, ROCm issue #4750
]


@pytest.mark.parametrize("name, reported", REPORTED)
def test_reported_totals_equal_their_source(name, reported):
    preset = gpus.get_gpu(name)
    assert preset.reported_bytes == reported
    assert f"{reported // MIB:,} MiB" in preset.reported_source or f"{reported:,} B" in preset.reported_source
    # A reported total is the datasheet figure less what the driver and ECC keep: at most 1.5% below it
    # (the V100 16GB's 16,160 MiB is 1.4% below 16 GiB) and never above.
    assert 0 < preset.memory_bytes - reported < 0.015 * preset.memory_bytes or \
        0 <= reported - preset.memory_bytes < 0.01 * preset.memory_bytes  # 10^9-read GDDR6: 0.6–0.7% above


def test_no_public_record_means_none():
    # No public nvidia-smi/rocm-smi total found: left None, and the documented estimate applies.
    for name in ("B300-288GB", "GB10-128GB", "A100-PCIe-40GB", "A100-PCIe-80GB", "MI325X-256GB", "MI355X-288GB"):
        preset = gpus.get_gpu(name)
        assert preset.reported_bytes is None
        if preset.cuda_total is None:
            assert preset.cuda_total_bytes == preset.memory_bytes - 454 * MIB
            assert preset.device().cuda_total_source.startswith("estimated")


# (preset, CUDA total in bytes, where it was seen)
CUDA_TOTALS = [
    ("RTX-3090-24GB", int(Fraction("23.70") * GIB)),  # OOM "23.70 GiB total capacity", GaoLii/DSP issue #10
    ("T4-16GB", int(Fraction("14.56") * GIB)),  # OOM "total capacity of 14.56 GiB", Zheng-Chong/CatVTON #133
    ("V100-32GB", int(Fraction("31.74") * GIB)),  # OOM "31.74 GiB total capacity", liucongg/ChatGLM-Finetuning #73
    ("H100-SXM-80GB", 85_029_158_912),  # cudaGetDeviceProperties totalGlobalMem
]


@pytest.mark.parametrize("name, total", CUDA_TOTALS)
def test_cuda_totals_equal_their_source(name, total):
    assert gpus.get_gpu(name).cuda_total_bytes == total
    assert gpus.get_gpu(name).device().cuda_total_bytes == total


def test_estimated_cuda_total():
    # H20: no public CUDA total, so nvidia-smi's 97,871 MiB less 454 MiB = 97,417 MiB = 102,149,128,192 B.
    assert gpus.get_gpu("NVIDIA H20").cuda_total_bytes == 97_417 * MIB == 102_149_128_192


@pytest.mark.parametrize("name, cc", [
    # CUDA GPUs table (developer.nvidia.com/cuda-gpus).
    ("RTX 3090", "8.6"), ("RTX A5000", "8.6"), ("RTX A6000", "8.6"), ("A10G", "8.6"), ("T4", "7.5"), ("V100", "7.0"),
    ("V100-32GB", "7.0"), ("L4", "8.9"), ("H20", "9.0"), ("H800", "9.0"), ("H100 NVL", "9.0"), ("GH200", "9.0"),
    ("H200 NVL", "9.0"), ("RTX 5080", "12.0"), ("RTX 5070 Ti", "12.0"), ("RTX PRO 6000", "12.0"), ("GB10", "12.1"),
    ("B300", "10.3"), ("GB200", "10.0"), ("MI325X", None),
])
def test_compute_capability(name, cc):
    assert gpus.get_gpu(name).compute_capability == cc


@pytest.mark.parametrize("name, bandwidth, link", [
    ("RTX 3090", 936 * 10**9, "pcie"),  # 384 bits × 19.5 Gbps / 8 = 936 GB/s
    ("RTX 5080", 960 * 10**9, "pcie"),  # 256 bits × 30 Gbps / 8 = 960 GB/s
    ("RTX 5070 Ti", 896 * 10**9, "pcie"),  # 256 bits × 28 Gbps / 8 = 896 GB/s
    ("RTX PRO 6000", 1_792 * 10**9, "pcie"),  # 512 bits × 28 Gbps / 8 = 1,792 GB/s
    ("RTX A6000", 768 * 10**9, "pcie"), ("RTX A5000", 768 * 10**9, "pcie"), ("A10G", 600 * 10**9, "pcie"),
    ("T4", 320 * 10**9, "pcie"), ("V100-32GB", 900 * 10**9, "pcie"),
    ("H20", 4 * 10**12, "nvswitch"), ("H800", 3_350 * 10**9, "nvswitch"), ("H100 NVL", 3_900 * 10**9, "pcie"),
    ("H200 NVL", 4_800 * 10**9, "pcie"), ("GH200", 4 * 10**12, "pcie"), ("GB10", 273 * 10**9, "pcie"),
    ("MI325X", 6 * 10**12, "xgmi"), ("MI355X", 8 * 10**12, "xgmi"),
])
def test_bandwidth_and_interconnect(name, bandwidth, link):
    preset = gpus.get_gpu(name)
    assert (preset.bandwidth_bytes_per_s, preset.interconnect) == (bandwidth, link)


def test_every_preset_names_its_source():
    assert len(gpus.PRESETS) >= 33
    for preset in gpus.PRESETS:
        assert preset.source and preset.memory_quoted and preset.bandwidth_quoted
        assert preset.memory_unit in ("GiB", "GB")
        assert preset.memory_bytes > 0 and preset.bandwidth_bytes_per_s > 0
        assert preset.interconnect in ("nvswitch", "pcie", "xgmi")
        assert bool(preset.reported_bytes) == bool(preset.reported_source)
        json.dumps(preset.to_dict())


def test_docs_table_is_generated():
    assert gpus.gpus_markdown() in DOC.read_text()  # regenerate: see the marker in docs/gpus.md


# -- a GPU given by its memory --------------------------------------------------------------------


@pytest.mark.parametrize("given, total", [
    ("23.57GiB", 25_308_094_791),  # floor(23.57 × 2^30) = floor(25,308,094,791.68)
    ("24GB", 24_000_000_000),
    ("24564MiB", 24_564 * 2**20),  # 25,757,220,864
])
def test_custom_gpu(given, total):
    preset, count = gpus.custom_gpu(given)
    assert count == 1
    assert preset.cuda_total_bytes == total and preset.device().cuda_total_exact
    assert preset.device().smi_bytes == total
    assert preset.bandwidth_bytes_per_s is None and preset.compute_capability is None
    assert preset.vendor == "NVIDIA" and given in preset.device().cuda_total_source
    json.dumps(preset.to_dict())


def test_custom_gpu_name_count_vendor_and_errors():
    preset, count = gpus.custom_gpu("192GiB", name="MI308X\x1b[31m", count=8, vendor="AMD")
    assert (count, preset.vendor, preset.interconnect) == (8, "AMD", "xgmi")
    assert "\x1b" not in preset.name
    assert gpus.parse_gpu(preset) == (preset, 1) and gpus.get_gpu(preset) is preset
    for given, words in [("lots", "cannot read size"), ("0GB", "positive"), ("24", "has no unit")]:
        with pytest.raises(UsageError, match=words):
            gpus.custom_gpu(given)
    with pytest.raises(UsageError, match="count"):
        gpus.custom_gpu("24GB", count=0)
    with pytest.raises(UsageError, match="vendor"):
        gpus.custom_gpu("24GB", vendor="Intel")


def test_a_gpu_without_bandwidth_plans_without_a_decode_bound():
    from hfkv.inspection import inspect_config
    from hfkv.model.options import Options
    from hfkv.planning.serving import plan_serving

    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "meta-llama__Meta-Llama-3.1-8B" / "config.json"
    report = inspect_config(json.loads(fixture.read_text()), model="llama", options=Options())
    plan = plan_serving(report, gpu=gpus.custom_gpu("23.57GiB")[0])
    assert plan["bandwidth_bytes_per_s"] is None
    json.dumps(plan)


# -- the GPUs of this machine ---------------------------------------------------------------------


def _fake_tool(folder: Path, name: str, stdout: str, status: int = 0) -> None:
    script = folder / name
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{stdout}\nEOF\nexit {status}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    """A PATH holding only the fake tools this test writes (and /bin for sh and cat)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/bin")
    return folder


def test_local_nvidia(bin_dir):
    # Totals and used memory of two RTX 4090s as nvidia-smi printed them in RLinf/RLinf issue #255
    # (507MiB / 24564MiB and 459MiB / 24564MiB): free = 24,564 − 507 = 24,057 and 24,564 − 459 = 24,105 MiB.
    _fake_tool(bin_dir, "nvidia-smi", "NVIDIA GeForce RTX 4090, 24564, 24057\nNVIDIA GeForce RTX 4090, 24564, 24105")
    found = gpus.local_gpus()
    assert [(g.name, g.reported_bytes, g.free_bytes) for g in found] == [
        ("RTX-4090-24GB", 24_564 * MIB, 24_057 * MIB), ("RTX-4090-24GB", 24_564 * MIB, 24_105 * MIB)]
    preset, count = gpus.parse_gpu("local")
    # The same total as the preset's record keeps its CUDA total (23.52 GiB); the tightest free memory.
    assert (preset.name, count, preset.free_bytes) == ("RTX-4090-24GB", 2, 24_057 * MIB)
    assert preset.cuda_total_bytes == int(Fraction("23.52") * GIB)
    assert gpus.parse_gpu("LOCAL:1")[1] == 1 and gpus.get_gpu("local").name == "RTX-4090-24GB"
    with pytest.raises(UsageError, match="asks for 4 GPUs; this machine has 2"):
        gpus.parse_gpu("local:4")


def test_local_total_other_than_the_record(bin_dir):
    # An A100 80GB PCIe as nvidia-smi printed it (81,920 MiB in a public table; free invented as 81,000):
    # the preset has no record, so this machine's total is the record and the CUDA total its estimate,
    # 81,920 − 454 = 81,466 MiB.
    _fake_tool(bin_dir, "nvidia-smi", "NVIDIA A100 80GB PCIe, 81920, 81000")
    preset, count = gpus.parse_gpu("local")
    assert (preset.name, count, preset.reported_bytes) == ("A100-PCIe-80GB", 1, 81_920 * MIB)
    assert preset.cuda_total_bytes == 81_466 * MIB
    assert "this machine" in preset.reported_source


def test_local_unknown_gpu_is_its_reported_total(bin_dir):
    # An RTX 3060 as nvidia-smi printed it (1MiB / 12288MiB, geerlingguy/raspberry-pi-pcie-devices issue #790).
    _fake_tool(bin_dir, "nvidia-smi", "NVIDIA GeForce RTX 3060, 12288, 12287")
    preset, count = gpus.parse_gpu("local")
    assert (preset.name, count, preset.reported_bytes, preset.free_bytes) == (
        "NVIDIA GeForce RTX 3060", 1, 12_288 * MIB, 12_287 * MIB)
    assert preset.cuda_total_bytes == (12_288 - 454) * MIB and preset.bandwidth_bytes_per_s is None


def test_local_unified_memory(bin_dir):
    # A DGX Spark: nvidia-smi prints "Not Supported" for the GB10's memory (public tables); --query-gpu gives [N/A].
    _fake_tool(bin_dir, "nvidia-smi", "NVIDIA GB10, [N/A], [N/A]")
    preset, count = gpus.parse_gpu("local")
    assert (preset.name, count, preset.free_bytes) == ("GB10-128GB", 1, None)


def test_local_different_gpus_are_refused(bin_dir):
    # The RTX 5090 and RTX 3090 of noonghunna/club-3090 issue #741 (18MiB / 32607MiB, 23352MiB / 24576MiB).
    _fake_tool(bin_dir, "nvidia-smi", "NVIDIA GeForce RTX 5090, 32607, 32589\nNVIDIA GeForce RTX 3090, 24576, 1224")
    with pytest.raises(UsageError) as err:
        gpus.parse_gpu("local")
    assert str(err.value) == ("this machine has different GPUs (RTX-5090-32GB × 1, RTX-3090-24GB × 1): "
                              "name one with --gpu NAME:COUNT")


def test_local_rocm(bin_dir):
    # An MI300X: rocm-smi's VRAM total 206,141,652,992 B (ROCm issue #4750); the name as rocminfo's marketing name
    # prints it; ROCm 6 spells "Card Series". A warning line before the JSON, as rocm-smi prints on some hosts.
    data = {"card0": {"Card Series": "AMD Instinct MI300X", "Card Model": "0x74a1",
                      "VRAM Total Memory (B)": "206141652992", "VRAM Total Used Memory (B)": "297058304"},
            "card1": {"Card Series": "AMD Instinct MI300X", "Card Model": "0x74a1",
                      "VRAM Total Memory (B)": "206141652992", "VRAM Total Used Memory (B)": "297058304"}}
    _fake_tool(bin_dir, "rocm-smi", "WARNING: AMD GPU device(s) is/are in a low-power state.\n" + json.dumps(data))
    preset, count = gpus.parse_gpu("local")
    assert (preset.name, count) == ("MI300X-192GB", 2)
    assert preset.free_bytes == 206_141_652_992 - 297_058_304
    assert preset.cuda_total_bytes == 205_822_885_888  # the record kept: the same total as rocm-smi's record


def test_local_nvidia_fails_then_rocm(bin_dir):
    _fake_tool(bin_dir, "nvidia-smi", "No devices were found", status=6)
    _fake_tool(bin_dir, "rocm-smi", json.dumps({"card0": {"Card series": "AMD Instinct MI325X",
                                                          "VRAM Total Memory (B)": "274877906944"}}))
    preset, _ = gpus.parse_gpu("local")
    assert (preset.name, preset.reported_bytes, preset.free_bytes) == ("MI325X-256GB", 274_877_906_944, None)


@pytest.mark.parametrize("tools, message", [
    ({}, "no GPU found: nvidia-smi and rocm-smi are not on PATH"),
    ({"nvidia-smi": ("No devices were found", 6)}, "no GPU found: nvidia-smi: exit status 6 (No devices were found)"),
    ({"nvidia-smi": ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", 9),
      "rocm-smi": ("{}", 0)},
     "no GPU found: nvidia-smi: exit status 9 (NVIDIA-SMI has failed because it couldn't communicate with the "
     "NVIDIA driver.); rocm-smi: it lists no GPU"),
    ({"nvidia-smi": ("garbage", 0)}, "cannot read nvidia-smi's line 'garbage'"),
    ({"rocm-smi": ("not json", 0)}, "cannot read rocm-smi's output"),
    ({"nvidia-smi": ("NVIDIA Jetson Thing, [N/A], [N/A]", 0)},
     "nvidia-smi reports no memory total for 'NVIDIA Jetson Thing' (unified memory?): give it with --gpu-memory"),
])
def test_local_errors_are_one_line(bin_dir, tools, message):
    for name, (stdout, status) in tools.items():
        _fake_tool(bin_dir, name, stdout, status)
    with pytest.raises(UsageError) as err:
        gpus.parse_gpu("local")
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_local_tool_that_hangs(bin_dir):
    script = bin_dir / "nvidia-smi"
    script.write_text("#!/bin/sh\nexec sleep 5\n")
    script.chmod(0o755)
    with pytest.raises(UsageError, match="no GPU found: nvidia-smi: no answer within 0.2 s"):
        gpus.local_gpus(timeout=0.2)
