"""Accelerator presets: memory and memory bandwidth per GPU, with where each figure comes from.

Conventions (read before using a figure):

* **Memory.** Vendors print "80GB", "141GB", "192GB" and leave the unit ambiguous. Each preset keeps
  the datasheet's words (``memory_quoted``) and says how hfkv reads them (``memory_unit``):

  - ``"GiB"`` (2^30 bytes) for every HBM part and the GeForce cards. What the devices report backs
    this reading: NVML gives 81,559 MiB for an H100 80GB, 143,771 MiB for an H200 141GB, 81,920 MiB
    for an A100 80GB, 183,359 MiB for a B200 180GB, and rocm-smi 206,141,652,992 B for an MI300X
    192GB; each is within 0.5% of the GiB reading and 6–7% above the 10^9 reading.
  - ``"GB"`` (10^9 bytes) for the L40S, L4, A10G and T4 (GDDR6 with ECC on): NVML gives 46,068 MiB
    for the L40S 48GB, 23,034 MiB for the L4 24GB, 23,028 MiB for the A10G and 15,360 MiB for the T4
    16GB, 0.6–0.7% above the 10^9 reading and 6% below GiB. Workstation cards ship with ECC off and
    report GiB-sized totals (RTX A6000 49,140 MiB), so they are read as GiB.
  - The GB10 (DGX Spark) has no memory of its own: 128GB of LPDDR5x is shared with the CPU, nvidia-smi
    prints "Not Supported" for it, and CUDA reports the operating system's memory; its figures are
    the datasheet's and the estimate below, to be checked on the box with ``--gpu local``.

  ``memory_bytes`` is the datasheet figure read that way. The driver keeps a little of it for
  itself, so the device reports slightly less (``reported_bytes`` when a public record exists);
  engines such as vLLM multiply the *reported* total by their utilisation fraction.
* **Compute capability** is CUDA's ``MAJOR.MINOR`` (CUDA GPUs table, developer.nvidia.com/cuda-gpus):
  Ampere A100 8.0, Ada L40S/L4/RTX 4090 8.9, Hopper 9.0, Blackwell B200/GB200 10.0, B300 10.3,
  RTX 5090 12.0; None for AMD. Engine modes choose attention backends (block sizes) by it.
* **Bandwidth** is always decimal, as every vendor means it: 1 TB/s = 10^12 bytes/s, 1 GB/s =
  10^9 bytes/s. It is the peak figure of the datasheet; sustained bandwidth is lower.

* **CUDA total** is a public record where one exists (``cuda_total_source`` names it), else an
  estimate: the reported total (or the datasheet figure) less the 454 MiB an H100's driver keeps.
* **Interconnect**: ``nvswitch`` on HGX/DGX SXM boards, ``xgmi`` on AMD's, ``pcie`` for everything
  else, NVLink-bridged pairs (H100 NVL, H200 NVL) and SXM2 boards without an NVSwitch included:
  what the engines key on is NCCL's NVLS buffers, which need an NVSwitch.

Names are matched case-insensitively with punctuation and the vendor words (``NVIDIA``, ``AMD``,
``Tesla``) ignored, so the names nvidia-smi, ``torch.cuda.get_device_name`` and rocm-smi print
resolve (``NVIDIA H100 80GB HBM3``, ``Tesla V100-SXM2-32GB``, ``AMD Instinct MI300X VF``), as do
the short ones (``h100``, ``H100-80GB``, ``h100_sxm``, ``MI300X``); ``NAME:COUNT`` (``H200:8``)
gives a count. ``custom_gpu`` describes any other GPU by its memory, ``local`` (``local_gpus``) the
GPUs of the machine hfkv runs on. An unknown name raises a one-line ``UsageError`` listing the
choices. docs/gpus.md is generated from ``PRESETS`` (``gpus_markdown``).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from fractions import Fraction

from hfkv.engines.contract import Device
from hfkv.errors import UsageError
from hfkv.text import one_line
from hfkv.units import format_gib, parse_size

GIB = 1 << 30
GB = 10**9
TB_PER_S = 10**12
GB_PER_S = 10**9

# Presets the Markdown release report shows B_max columns for (see hfkv.planning.serving.gpu_budgets).
COMMON_GPUS = ("H100-SXM-80GB", "H200-141GB", "B200-180GB", "MI300X-192GB")


@dataclass(frozen=True)
class GpuPreset:
    """One accelerator: the datasheet's words, the bytes hfkv reads from them, and the source."""

    name: str
    vendor: str
    memory_quoted: str
    memory_value: Fraction
    memory_unit: str  # "GiB" or "GB": how hfkv reads the datasheet's figure (see module docstring)
    bandwidth_quoted: str | None
    bandwidth_bytes_per_s: int | None  # None for a GPU given by its memory alone: no decode-time bound
    source: str
    aliases: tuple[str, ...] = ()
    reported_bytes: int | None = None
    reported_source: str | None = None
    # CUDA compute capability "MAJOR.MINOR" (engines pick attention backends by it); None off NVIDIA.
    compute_capability: str | None = None
    # The total cudaMemGetInfo (torch ``mem_get_info``) reports, what vLLM multiplies by its utilisation
    # and free memory starts from; "exact" bytes or a 2-decimal GiB figure as engine logs print it.
    cuda_total: Fraction | None = None
    cuda_total_exact: bool = False
    cuda_total_source: str | None = None
    # "nvswitch" on HGX/DGX boards (NCCL's NVLS buffers grow with TP), "xgmi" on AMD's boards, "pcie" otherwise
    # (PCIe cards, NVLink-bridged pairs such as the H100 NVL, and SXM2 boards without an NVSwitch).
    interconnect: str = "pcie"
    # Free memory the tool reported on this machine (``local_gpus``); None for a preset.
    free_bytes: int | None = None

    @property
    def memory_bytes(self) -> int:
        """The datasheet memory in bytes under ``memory_unit``."""
        scale = GIB if self.memory_unit == "GiB" else GB
        return int(self.memory_value * scale)

    @property
    def device_bytes(self) -> int:
        """What budgets use: the memory the device reports when a record exists, else the datasheet figure."""
        return self.reported_bytes or self.memory_bytes

    @property
    def cuda_total_bytes(self) -> int:
        """The total CUDA reports: the public record, else nvidia-smi's total less the 454 MiB an H100's
        driver keeps (85,520,809,984 − 85,029,158,912 B; an estimate, said in ``device().cuda_total_source``)."""
        if self.cuda_total is not None:
            return int(self.cuda_total) if self.cuda_total_exact else int(self.cuda_total * GIB)
        return self.device_bytes - _DRIVER_KEEP

    def device(self) -> Device:
        """The GPU as engine modes measure it (``hfkv.engines.contract.Device``)."""
        if self.cuda_total is not None:
            source = self.cuda_total_source or ""
        else:
            source = (f"estimated: {self.device_bytes:,} B (nvidia-smi or datasheet) less the 454 MiB an H100's "
                      "driver keeps; no public record of this GPU's CUDA total")
        return Device(name=self.name, smi_bytes=self.device_bytes, cuda_total_bytes=self.cuda_total_bytes,
                      cuda_total_exact=self.cuda_total_exact, cuda_total_source=source,
                      interconnect=self.interconnect, vendor=self.vendor, compute_capability=self.compute_capability)

    def to_dict(self) -> dict:
        """JSON-able description (stable keys)."""
        return {
            "name": self.name,
            "vendor": self.vendor,
            "memory_quoted": self.memory_quoted,
            "memory_unit": self.memory_unit,
            "memory_bytes": self.memory_bytes,
            "bandwidth_quoted": self.bandwidth_quoted,
            "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
            "reported_bytes": self.reported_bytes,
            "source": self.source,
            "reported_source": self.reported_source,
            "compute_capability": self.compute_capability,
            "cuda_total_bytes": self.cuda_total_bytes,
            "cuda_total_source": self.device().cuda_total_source,
            "interconnect": self.interconnect,
            "free_bytes": self.free_bytes,
        }


_MIB = 1 << 20
_DRIVER_KEEP = 454 * _MIB
_LOGS = "vLLM start-up logs and PyTorch out-of-memory messages (\"total capacity of ... GiB\"), docs/deployments.md"
_NVML_MODAL = "nvidia-smi totals published by Modal (modal-labs/modal-client PR #2797; thundergolfer.com/blog/nvidia-gpu-memory-capacity)"
# Public GitHub files found by exact text in the code corpus; the id names the stored file (no URL was kept).
_CORPUS = "nvidia-smi in a public GitHub file (code-corpus id {}): {:,} MiB"
_OOM = "PyTorch out-of-memory message \"total capacity of {} GiB\" in {}"

PRESETS: tuple[GpuPreset, ...] = (
    # -- Hopper -----------------------------------------------------------------------------------
    GpuPreset(
        "H100-SXM-80GB", "NVIDIA", "80GB HBM3", Fraction(80), "GiB", "3.35TB/s", 3_350 * GB_PER_S,
        "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column: 80GB, 3.35TB/s)",
        aliases=("h100", "h100sxm", "h100sxm5", "h10080gb", "h100sxm580gb", "h100hbm3", "h10080gbhbm3"),
        reported_bytes=81_559 * _MIB, reported_source=_NVML_MODAL + ": 81,559 MiB",
        compute_capability="9.0",
        cuda_total=Fraction(85_029_158_912), cuda_total_exact=True,
        cuda_total_source="cudaGetDeviceProperties totalGlobalMem 85,029,158,912 B (79.19 GiB, as vLLM logs print it)",
        interconnect="nvswitch",
    ),
    GpuPreset(
        "H100-PCIe-80GB", "NVIDIA", "80GB HBM2e", Fraction(80), "GiB", "2TB/s", 2_000 * GB_PER_S,
        "NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe column: 80GB, 2TB/s); "
        "H100 PCIe product brief PB-11133-001 (memory bandwidth greater than 2,000 GB/s)",
        aliases=("h100pcie", "h100pcie80gb"),
        reported_bytes=81_559 * _MIB, reported_source=_CORPUS.format(52712584324, 81_559),
        compute_capability="9.0",
    ),
    GpuPreset(
        # PCIe cards joined in pairs by NVLink bridges: no NVSwitch, so no NVLS buffers ("pcie").
        "H100-NVL-94GB", "NVIDIA", "94GB HBM3", Fraction(94), "GiB", "3.9TB/s", 3_900 * GB_PER_S,
        "NVIDIA H100 Tensor Core GPU datasheet (H100 NVL column: 94GB, 3.9TB/s)",
        aliases=("h100nvl", "h100nvl94gb"),
        reported_bytes=95_830 * _MIB, reported_source=_CORPUS.format(56777991392, 95_830),
        compute_capability="9.0",
    ),
    GpuPreset(
        "H800-80GB", "NVIDIA", "80GB HBM3", Fraction(80), "GiB", "3.35TB/s", 3_350 * GB_PER_S,
        "NVIDIA H800 SXM5 (the H100 SXM's memory, 80GB HBM3 at 3.35TB/s, with NVLink cut to 400GB/s for export); "
        "HGX H800 boards keep the NVSwitch",
        aliases=("h800", "h800sxm", "h800sxm5", "h80080gb"),
        reported_bytes=81_559 * _MIB, reported_source=_CORPUS.format(41507333121, 81_559),
        compute_capability="9.0",
        interconnect="nvswitch",
    ),
    GpuPreset(
        "H20-96GB", "NVIDIA", "96GB HBM3", Fraction(96), "GiB", "4.0TB/s", 4_000 * GB_PER_S,
        "NVIDIA HGX H20 (Hopper for China: 96GB HBM3, 4.0TB/s, NVLink 900GB/s on an NVSwitch board)",
        aliases=("h20", "h2096gb", "hgxh20"),
        reported_bytes=97_871 * _MIB, reported_source=_CORPUS.format(53244009727, 97_871),
        compute_capability="9.0",
        interconnect="nvswitch",
    ),
    GpuPreset(
        "H200-141GB", "NVIDIA", "141GB HBM3e", Fraction(141), "GiB", "4.8TB/s", 4_800 * GB_PER_S,
        "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM: 141GB HBM3e, 4.8TB/s)",
        aliases=("h200", "h200sxm", "h200141gb", "h200sxm141gb"),
        reported_bytes=143_771 * _MIB, reported_source=_NVML_MODAL + ": 143,771 MiB",
        compute_capability="9.0",
        cuda_total=Fraction("139.81"), cuda_total_source="139.81 GiB: " + _LOGS, interconnect="nvswitch",
    ),
    GpuPreset(
        # PCIe cards with 2- or 4-way NVLink bridges: no NVSwitch ("pcie").
        "H200-NVL-141GB", "NVIDIA", "141GB HBM3e", Fraction(141), "GiB", "4.8TB/s", 4_800 * GB_PER_S,
        "NVIDIA H200 Tensor Core GPU datasheet (H200 NVL column: 141GB HBM3e, 4.8TB/s)",
        aliases=("h200nvl", "h200nvl141gb"),
        reported_bytes=143_771 * _MIB, reported_source=_CORPUS.format(52951295611, 143_771),
        compute_capability="9.0",
    ),
    GpuPreset(
        # One Grace Hopper superchip: the GPU's 96GB HBM3 (the 480GB of the name counts the CPU's LPDDR5X).
        "GH200-96GB", "NVIDIA", "96GB HBM3", Fraction(96), "GiB", "4TB/s", 4_000 * GB_PER_S,
        "NVIDIA GH200 Grace Hopper Superchip datasheet (96GB HBM3, 4TB/s; the 144GB HBM3e version is another part)",
        aliases=("gh200", "gh20096gb", "gh200480gb", "gh200120gb"),
        reported_bytes=97_871 * _MIB, reported_source=_CORPUS.format(25187769457, 97_871),
        compute_capability="9.0",
    ),
    # -- Blackwell --------------------------------------------------------------------------------
    GpuPreset(
        "B200-180GB", "NVIDIA", "180GB HBM3e", Fraction(180), "GiB", "8TB/s", 8_000 * GB_PER_S,
        "NVIDIA DGX B200 / HGX B200 specifications (1,440GB total for 8 GPUs = 180GB each; 8TB/s per GPU); "
        "the launch announcement said 192GB; CUDA reports a 7680-bit bus, i.e. about 7.67TB/s (pytorch/ao PR #4002)",
        aliases=("b200", "b200180gb", "b200sxm", "b200sxm180gb", "hgxb200", "dgxb200"),
        reported_bytes=183_359 * _MIB,
        reported_source="nvidia-smi in NVIDIA/TensorRT-LLM issue #10278: 183,359 MiB",
        compute_capability="10.0",
        cuda_total=Fraction("178.36"), cuda_total_source="178.36 GiB: " + _LOGS, interconnect="nvswitch",
    ),
    GpuPreset(
        "GB200-186GB", "NVIDIA", "186GB HBM3e", Fraction(186), "GiB", "8TB/s", 8_000 * GB_PER_S,
        "NVIDIA GB200 NVL72 specifications (13.4TB HBM3e and 576TB/s for 72 GPUs; 186GB per GPU as in "
        "NVIDIA NIM support matrices and MLPerf GB200-186GB system descriptions)",
        aliases=("gb200", "gb200nvl72", "gb200186gb"),
        reported_bytes=189_471 * _MIB, reported_source=_CORPUS.format(51864327511, 189_471),
        compute_capability="10.0",
        interconnect="nvswitch",
    ),
    GpuPreset(
        "B300-288GB", "NVIDIA", "288GB HBM3e", Fraction(288), "GiB", "8TB/s", 8_000 * GB_PER_S,
        "NVIDIA DGX B300 / HGX B300 specifications (Blackwell Ultra: 2.3TB total for 8 GPUs = 288GB HBM3e each; "
        "up to 8TB/s per GPU)",
        aliases=("b300", "b300288gb", "blackwellultra", "b300sxm", "b300sxm6ac"),
        compute_capability="10.3",
        interconnect="nvswitch",
    ),
    GpuPreset(
        # DGX Spark: one pool of LPDDR5x shared by the Arm CPU and the GPU. nvidia-smi prints "Not Supported"
        # for its memory and CUDA reports the operating system's memory, so the KV cache competes with the OS.
        "GB10-128GB", "NVIDIA", "128GB LPDDR5x unified memory", Fraction(128), "GiB", "273GB/s", 273 * GB_PER_S,
        "NVIDIA DGX Spark specifications (GB10 Grace Blackwell: 128GB LPDDR5x coherent unified system memory, "
        "273GB/s); unified memory: nvidia-smi reports no GPU total",
        aliases=("gb10", "dgxspark", "gb10128gb"),
        compute_capability="12.1",
    ),
    # -- Ampere and Volta data centre -------------------------------------------------------------
    GpuPreset(
        "A100-40GB", "NVIDIA", "40GB HBM2", Fraction(40), "GiB", "1,555GB/s", 1_555 * GB_PER_S,
        "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB: 40GB HBM2, 1,555GB/s)",
        aliases=("a10040gb", "a100sxm40gb", "a100sxm440gb"),
        reported_bytes=40_960 * _MIB, reported_source=_NVML_MODAL + ": 40,960 MiB",
        compute_capability="8.0",
        cuda_total=Fraction("39.49"), cuda_total_source="39.49 GiB (39.39–39.50 seen): " + _LOGS,
    ),
    GpuPreset(
        "A100-PCIe-40GB", "NVIDIA", "40GB HBM2", Fraction(40), "GiB", "1,555GB/s", 1_555 * GB_PER_S,
        "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB PCIe: 40GB HBM2, 1,555GB/s)",
        aliases=("a100pcie40gb", "a100pcie440gb", "a10040gbpcie"),
        compute_capability="8.0",
    ),
    GpuPreset(
        "A100-SXM-80GB", "NVIDIA", "80GB HBM2e", Fraction(80), "GiB", "2,039GB/s", 2_039 * GB_PER_S,
        "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM: 80GB HBM2e, 2,039GB/s)",
        aliases=("a100", "a10080gb", "a100sxm", "a100sxm80gb", "a100sxm480gb"),
        reported_bytes=81_920 * _MIB, reported_source=_NVML_MODAL + ": 81,920 MiB",
        compute_capability="8.0",
        cuda_total=Fraction("79.15"), cuda_total_source="79.15 GiB: " + _LOGS, interconnect="nvswitch",
    ),
    GpuPreset(
        "A100-PCIe-80GB", "NVIDIA", "80GB HBM2e", Fraction(80), "GiB", "1,935GB/s", 1_935 * GB_PER_S,
        "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB PCIe: 80GB HBM2e, 1,935GB/s)",
        aliases=("a100pcie", "a100pcie80gb", "a10080gbpcie"),
        compute_capability="8.0",
    ),
    GpuPreset(
        # AWS's A10 variant (G5 instances); GDDR6 with ECC on, read as 10^9 like the L4.
        "A10G-24GB", "NVIDIA", "24GB GDDR6", Fraction(24), "GB", "600GB/s", 600 * GB_PER_S,
        "Amazon EC2 G5 instances (NVIDIA A10G Tensor Core GPU, 24GB); NVIDIA A10 datasheet (24GB GDDR6, 600GB/s)",
        aliases=("a10g", "a10g24gb"),
        reported_bytes=23_028 * _MIB,
        reported_source="nvidia-smi in NVIDIA/DCGM issue #232 (https://github.com/NVIDIA/DCGM/issues/232): 23,028 MiB",
        compute_capability="8.6",
    ),
    GpuPreset(
        # SXM2 boards (DGX-1) join GPUs by NVLink without an NVSwitch, and NVLS needs Hopper: "pcie".
        "V100-16GB", "NVIDIA", "16GB HBM2", Fraction(16), "GiB", "900GB/s", 900 * GB_PER_S,
        "NVIDIA V100 Tensor Core GPU datasheet (16GB HBM2, 900GB/s for SXM2 and PCIe)",
        aliases=("v100", "v10016gb", "v100sxm216gb", "v100pcie16gb", "v100sxm16gb"),
        reported_bytes=16_160 * _MIB,
        reported_source="nvidia-smi in 4paradigm/k8s-vgpu-scheduler issue #7 "
                        "(https://github.com/4paradigm/k8s-vgpu-scheduler/issues/7): 16,160 MiB",
        compute_capability="7.0",
    ),
    GpuPreset(
        "V100-32GB", "NVIDIA", "32GB HBM2", Fraction(32), "GiB", "900GB/s", 900 * GB_PER_S,
        "NVIDIA V100 Tensor Core GPU datasheet (32GB HBM2, 900GB/s for SXM2 and PCIe)",
        aliases=("v10032gb", "v100sxm232gb", "v100pcie32gb", "v100sxm32gb"),
        reported_bytes=32_768 * _MIB,
        reported_source="nvidia-smi in Wan-Video/Wan2.1 issue #5 (https://github.com/Wan-Video/Wan2.1/issues/5): "
                        "32,768 MiB (32,480 MiB under driver 418 in godweiyang/GrabGPU issue #5)",
        compute_capability="7.0",
        cuda_total=Fraction("31.74"),
        cuda_total_source=_OOM.format("31.74", "liucongg/ChatGLM-Finetuning issue #73 "
                                      "(https://github.com/liucongg/ChatGLM-Finetuning/issues/73)")
                          + "; the same figure in vLLM log H2-23 (docs/deployments.md)",
    ),
    GpuPreset(
        # GDDR6 with ECC on: NVML's 15,360 MiB is 0.7% above the 10^9 reading and 6% below GiB.
        "T4-16GB", "NVIDIA", "16GB GDDR6", Fraction(16), "GB", "320GB/s", 320 * GB_PER_S,
        "NVIDIA T4 Tensor Core GPU datasheet (16GB GDDR6, 320+GB/s)",
        aliases=("t4", "t416gb", "teslat4"),
        reported_bytes=15_360 * _MIB, reported_source=_NVML_MODAL + ": 15,360 MiB",
        compute_capability="7.5",
        cuda_total=Fraction("14.56"),
        cuda_total_source=_OOM.format("14.56", "Zheng-Chong/CatVTON issue #133 and AlphaGPU/leetgpu-challenges "
                                      "issue #52 (14.56–14.58 seen; 14.75–14.76 under 2021 drivers)"),
    ),
    # -- Ada and Ampere workstation and inference cards -------------------------------------------
    GpuPreset(
        "L40S-48GB", "NVIDIA", "48GB GDDR6 with ECC", Fraction(48), "GB", "864GB/s", 864 * GB_PER_S,
        "NVIDIA L40S datasheet (48GB GDDR6 with ECC, 864GB/s)",
        aliases=("l40s", "l40s48gb"),
        reported_bytes=46_068 * _MIB, reported_source=_NVML_MODAL + ": 46,068 MiB",
        compute_capability="8.9",
        cuda_total=Fraction("44.39"), cuda_total_source="44.39 GiB (44.39–44.42 seen): " + _LOGS,
    ),
    GpuPreset(
        "L4-24GB", "NVIDIA", "24GB", Fraction(24), "GB", "300GB/s", 300 * GB_PER_S,
        "NVIDIA L4 Tensor Core GPU datasheet (24GB GDDR6, 300GB/s)",
        aliases=("l4", "l424gb"),
        reported_bytes=23_034 * _MIB, reported_source=_NVML_MODAL + ": 23,034 MiB",
        compute_capability="8.9",
    ),
    GpuPreset(
        # ECC off by default on the workstation cards: NVML gives 2^30-based totals as on a GeForce.
        "RTX-A6000-48GB", "NVIDIA", "48GB GDDR6 with ECC", Fraction(48), "GiB", "768GB/s", 768 * GB_PER_S,
        "NVIDIA RTX A6000 datasheet (48GB GDDR6 with error-correcting code, 768GB/s)",
        aliases=("rtxa6000", "a6000", "rtxa600048gb"),
        reported_bytes=49_140 * _MIB, reported_source=_CORPUS.format(29086230745, 49_140),
        compute_capability="8.6",
    ),
    GpuPreset(
        "RTX-A5000-24GB", "NVIDIA", "24GB GDDR6 with ECC", Fraction(24), "GiB", "768GB/s", 768 * GB_PER_S,
        "NVIDIA RTX A5000 datasheet (24GB GDDR6 with error-correction code, 768GB/s)",
        aliases=("rtxa5000", "a5000", "rtxa500024gb"),
        reported_bytes=24_564 * _MIB,
        reported_source="nvidia-smi --query-gpu in akash-network/provider-configs PR #83 "
                        "(https://github.com/akash-network/provider-configs/pull/83): 24,564 MiB",
        compute_capability="8.6",
    ),
    GpuPreset(
        "RTX-PRO-6000-96GB", "NVIDIA", "96GB GDDR7 with ECC", Fraction(96), "GiB", "1,792GB/s", 1_792 * GB_PER_S,
        "NVIDIA RTX PRO 6000 Blackwell Workstation Edition datasheet (96GB GDDR7 with ECC, 512-bit, 1,792GB/s); "
        "the Server and Max-Q editions carry the same 96GB",
        aliases=("rtxpro6000", "rtxpro6000blackwell", "rtxpro6000blackwellworkstationedition",
                 "rtxpro6000blackwellserveredition", "rtxpro6000blackwellmaxqworkstationedition", "rtxpro600096gb"),
        reported_bytes=97_887 * _MIB, reported_source=_CORPUS.format(55414006193, 97_887),
        compute_capability="12.0",
    ),
    # -- GeForce ----------------------------------------------------------------------------------
    GpuPreset(
        "RTX-3090-24GB", "NVIDIA", "24GB GDDR6X", Fraction(24), "GiB", "936GB/s", 936 * GB_PER_S,
        "NVIDIA GeForce RTX 3090 specifications (24GB GDDR6X, 384-bit at 19.5Gbps = 936GB/s)",
        aliases=("rtx3090", "3090", "geforcertx3090", "rtx309024gb"),
        reported_bytes=24_576 * _MIB,
        reported_source="nvidia-smi in noonghunna/club-3090 issue #390 "
                        "(https://github.com/noonghunna/club-3090/issues/390): 24,576 MiB",
        compute_capability="8.6",
        cuda_total=Fraction("23.70"),
        cuda_total_source=_OOM.format("23.70", "GaoLii/DSP issue #10 and xiaoxiangAQ/GAS-Net issue #7 (RTX 3090)"),
    ),
    GpuPreset(
        "RTX-4090-24GB", "NVIDIA", "24GB GDDR6X", Fraction(24), "GiB", "1,008GB/s", 1_008 * GB_PER_S,
        "NVIDIA GeForce RTX 4090 specifications (24GB GDDR6X, 384-bit at 21Gbps = 1,008GB/s)",
        aliases=("rtx4090", "4090", "geforcertx4090", "rtx409024gb"),
        reported_bytes=24_564 * _MIB, reported_source="nvidia-smi in vllm-project/vllm issue #7768: 24,564 MiB",
        compute_capability="8.9",
        cuda_total=Fraction("23.52"), cuda_total_source="23.52 GiB on Linux (23.52–23.69 seen; 24.0 under WSL): " + _LOGS,
    ),
    GpuPreset(
        "RTX-5090-32GB", "NVIDIA", "32GB GDDR7", Fraction(32), "GiB", "1,792GB/s", 1_792 * GB_PER_S,
        "NVIDIA GeForce RTX 5090 specifications (32GB GDDR7, 512-bit at 28Gbps = 1,792GB/s)",
        aliases=("rtx5090", "5090", "geforcertx5090", "rtx509032gb"),
        reported_bytes=32_607 * _MIB,
        reported_source="nvidia-smi in noonghunna/club-3090 issue #617 "
                        "(https://github.com/noonghunna/club-3090/issues/617): 32,607 MiB",
        compute_capability="12.0",
        cuda_total=Fraction("31.36"), cuda_total_source="31.36 GiB: " + _LOGS,
    ),
    GpuPreset(
        "RTX-5080-16GB", "NVIDIA", "16GB GDDR7", Fraction(16), "GiB", "960GB/s", 960 * GB_PER_S,
        "NVIDIA GeForce RTX 5080 specifications (16GB GDDR7, 256-bit at 30Gbps = 960GB/s)",
        aliases=("rtx5080", "5080", "geforcertx5080", "rtx508016gb"),
        reported_bytes=16_303 * _MIB, reported_source=_CORPUS.format(8079537680, 16_303),
        compute_capability="12.0",
    ),
    GpuPreset(
        "RTX-5070-Ti-16GB", "NVIDIA", "16GB GDDR7", Fraction(16), "GiB", "896GB/s", 896 * GB_PER_S,
        "NVIDIA GeForce RTX 5070 Ti specifications (16GB GDDR7, 256-bit at 28Gbps = 896GB/s)",
        aliases=("rtx5070ti", "5070ti", "geforcertx5070ti", "rtx5070ti16gb"),
        reported_bytes=16_303 * _MIB, reported_source=_CORPUS.format(55415122863, 16_303),
        compute_capability="12.0",
    ),
    # -- AMD --------------------------------------------------------------------------------------
    GpuPreset(
        "MI300X-192GB", "AMD", "192GB HBM3", Fraction(192), "GiB", "5.3TB/s", 5_300 * GB_PER_S,
        "AMD Instinct MI300X accelerator datasheet (192GB HBM3, 5.3TB/s peak)",
        # "VF": the virtual function a cloud VM sees (torch and rocm-smi print "AMD Instinct MI300X VF").
        aliases=("mi300x", "mi300x192gb", "instinctmi300x", "instinctmi300xvf", "mi300xvf"),
        reported_bytes=206_141_652_992,
        reported_source="rocm-smi in ROCm issue #4750: VRAM Total Memory 206,141,652,992 B",
        cuda_total=Fraction(205_822_885_888), cuda_total_exact=True,
        cuda_total_source="191.69 GiB = 205,822,885,888 B in a vLLM log on an MI300X droplet",
        interconnect="xgmi",
    ),
    GpuPreset(
        "MI325X-256GB", "AMD", "256GB HBM3E", Fraction(256), "GiB", "6TB/s", 6_000 * GB_PER_S,
        "AMD Instinct MI325X accelerator datasheet (256GB HBM3E, 6TB/s peak)",
        aliases=("mi325x", "mi325x256gb", "instinctmi325x", "instinctmi325xvf", "mi325xvf"),
        interconnect="xgmi",
    ),
    GpuPreset(
        "MI355X-288GB", "AMD", "288GB HBM3E", Fraction(288), "GiB", "8TB/s", 8_000 * GB_PER_S,
        "AMD Instinct MI355X accelerator datasheet (288GB HBM3E, 8TB/s peak)",
        aliases=("mi355x", "mi355x288gb", "instinctmi355x", "instinctmi355xvf", "mi355xvf"),
        interconnect="xgmi",
    ),
)


# The vendor words nvidia-smi, torch and rocm-smi print before the model ("NVIDIA GeForce RTX 4090", "Tesla T4",
# "AMD Instinct MI300X") tell no two presets apart, so matching drops them.
_VENDOR_WORDS = re.compile(r"^(?:nvidia|amd)?(?:tesla)?")


def _key(text: str) -> str:
    """Lower case, letters and digits only, vendor words dropped: 'NVIDIA H100-SXM 80GB' -> 'h100sxm80gb'."""
    return _VENDOR_WORDS.sub("", re.sub(r"[^a-z0-9]", "", text.lower()), count=1)


def _index() -> dict[str, GpuPreset]:
    table: dict[str, GpuPreset] = {}
    for preset in PRESETS:
        for alias in (preset.name, *preset.aliases):
            key = _key(alias)
            if key in table and table[key] is not preset:
                raise AssertionError(f"GPU alias '{alias}' names two presets")
            table[key] = preset
    return table


_BY_KEY = _index()
LOCAL = "local"


def names() -> list[str]:
    """Canonical preset names, in table order."""
    return [p.name for p in PRESETS]


def _find(name: str) -> GpuPreset | None:
    return _BY_KEY.get(_key(name))


def get_gpu(name: str | GpuPreset) -> GpuPreset:
    """The preset for ``name`` (any alias, any case, as nvidia-smi, torch or rocm-smi print it; ``local``: this
    machine's GPU); ``UsageError`` listing the choices otherwise."""
    if isinstance(name, GpuPreset):
        return name
    if _key(str(name)) == LOCAL:
        return parse_gpu(LOCAL)[0]
    preset = _find(str(name))
    if preset is None:
        raise UsageError(f"unknown GPU '{name}' (choose from {', '.join(names())}, or local; "
                         "give another GPU's memory with --gpu-memory)")
    return preset


_SIZE = re.compile(r"[0-9]+(?:\.[0-9]+)?\s*(?:[KMGT]i?B|[KMGT])", re.IGNORECASE)  # a memory size, not a name


def parse_gpu(text: str | GpuPreset) -> tuple[GpuPreset, int]:
    """``NAME`` or ``NAME:COUNT`` -> (preset, count); count defaults to 1. ``local`` is this machine's GPUs
    (``local_gpus``), all of them unless a count says fewer; a memory size (``23.57GiB``, ``--gpu-memory``) is
    a GPU no preset names (``custom_gpu``)."""
    if isinstance(text, GpuPreset):
        return text, 1
    name, sep, count_text = str(text).strip().rpartition(":")
    if not sep:
        name, count = count_text, None
    elif not re.fullmatch(r"\s*[0-9]+\s*", count_text) or int(count_text) < 1:
        raise UsageError(f"GPU count in '{text}' must be a positive whole number (e.g. H200:8)")
    else:
        count = int(count_text)
    if _key(name) == LOCAL:
        return _local(count)
    if _SIZE.fullmatch(name.strip()):  # "23.57GiB": a GPU no preset names, by the total CUDA reports
        return custom_gpu(name.strip(), count=count or 1)
    return get_gpu(name), count or 1


# -- any other GPU ---------------------------------------------------------------------------------


def custom_gpu(memory: str, name: str | None = None, count: int = 1, *,
               vendor: str = "NVIDIA") -> tuple[GpuPreset, int]:
    """(preset, count) for a GPU given by the total CUDA reports ("23.57GiB", "24GB", "24564MiB"), taken as given.

    The figure is both the CUDA total (exact, as given) and the nvidia-smi total the engines' tiers read (a real
    card's is about 0.5 GiB more). No bandwidth, so no decode-time bound; compute capability None, so the engines'
    default applies. ``UsageError`` (one line) for an unreadable size, a count below 1 or an unknown vendor.
    """
    total = parse_size(memory)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise UsageError(f"GPU count must be a positive whole number, got {count!r}")
    if vendor not in ("NVIDIA", "AMD"):
        raise UsageError(f"GPU vendor must be NVIDIA or AMD, got {vendor!r}")
    given = str(memory).strip()
    label = one_line(name).strip() if name else ""
    preset = GpuPreset(
        label or f"GPU-{given.replace(' ', '')}", vendor, given, Fraction(total, GIB), "GiB", None, None,
        f"given: {given} (the total CUDA reports)",
        cuda_total=Fraction(total), cuda_total_exact=True, cuda_total_source=f"given: {given} = {total:,} B",
        interconnect="xgmi" if vendor == "AMD" else "pcie",
    )
    return preset, count


# -- the GPUs of this machine ----------------------------------------------------------------------

_TOOL_TIMEOUT_S = 10
_NVIDIA_SMI = ("nvidia-smi", "--query-gpu=name,memory.total,memory.free", "--format=csv,noheader,nounits")
_ROCM_SMI = ("rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json")


def local_gpus(timeout: float = _TOOL_TIMEOUT_S) -> list[GpuPreset]:
    """This machine's GPUs as nvidia-smi (NVML) or else rocm-smi reports them: each a preset matched by name, with
    the reported total and free memory, or a GPU of the reported total when no preset names it.

    A reported total other than the preset's record replaces it, and the preset's CUDA total (a record of
    another machine's) gives way to the module's estimate from this total. ``UsageError`` (one line) when
    neither tool is on PATH, when they fail or list no GPU, or when their output cannot be read.
    """
    said = []
    for argv, read in ((_NVIDIA_SMI, _read_nvidia_smi), (_ROCM_SMI, _read_rocm_smi)):
        tool = argv[0]
        path = shutil.which(tool)
        if path is None:
            continue
        output, problem = _run([path, *argv[1:]], timeout)
        if problem is None:
            gpus = read(output)
            if gpus:
                return gpus
            problem = "it lists no GPU"
        said.append(f"{tool}: {problem}")
    if not said:
        raise UsageError("no GPU found: nvidia-smi and rocm-smi are not on PATH (name the GPU with --gpu, or give "
                         "its memory with --gpu-memory)")
    raise UsageError("no GPU found: " + "; ".join(said))


def _run(argv: list[str], timeout: float) -> tuple[str, str | None]:
    """(stdout, None), or ("", what went wrong in one line)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return "", f"no answer within {timeout:g} s"
    except OSError as exc:
        return "", exc.strerror or str(exc)
    if done.returncode != 0:
        said = next((line.strip() for line in (done.stdout + "\n" + done.stderr).splitlines() if line.strip()), "")
        return "", f"exit status {done.returncode}" + (f" ({one_line(said)[:200]})" if said else "")
    return done.stdout, None


def _mib(text: str) -> int | None:
    """A nounits MiB figure; None for what NVML does not report ("[N/A]", "[Not Supported]" on unified memory)."""
    text = text.strip()
    return int(text) * _MIB if text.isdigit() else None


def _read_nvidia_smi(output: str) -> list[GpuPreset]:
    gpus = []
    for line in output.splitlines():
        if not line.strip():
            continue
        fields = line.rsplit(",", 2)
        if len(fields) != 3 or not fields[0].strip():
            raise UsageError(f"cannot read nvidia-smi's line '{one_line(line)[:120]}' (expected name, total, free)")
        gpus.append(_local_gpu(fields[0].strip(), "NVIDIA", _mib(fields[1]), _mib(fields[2]), "nvidia-smi"))
    return gpus


def _read_rocm_smi(output: str) -> list[GpuPreset]:
    # rocm-smi may print warnings before its JSON; the JSON starts at the first brace.
    try:
        data = json.loads(output[output.index("{"):])
        cards = [data[k] for k in sorted(data, key=lambda k: (len(k), k)) if k.lower().startswith("card")]
        gpus = []
        for card in cards:
            # ROCm 5 spells the key "Card series", ROCm 6 "Card Series".
            name = next((str(card[k]) for k in ("Card Series", "Card series", "Card SKU", "Card Model", "Card model")
                         if str(card.get(k, "")).strip()), "AMD GPU")
            total = int(card["VRAM Total Memory (B)"])
            used = card.get("VRAM Total Used Memory (B)")
            gpus.append(_local_gpu(name.strip(), "AMD", total, total - int(used) if used is not None else None,
                                   "rocm-smi"))
        return gpus
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"cannot read rocm-smi's output ({one_line(exc)[:120]})") from None


def _local_gpu(name: str, vendor: str, total: int | None, free: int | None, tool: str) -> GpuPreset:
    """One reported GPU: its preset with this machine's figures, else a GPU of the reported total."""
    record = f"{tool} on this machine: {total:,} B" if total is not None else None
    preset = _find(name)
    if preset is not None:
        if total is None or total == preset.reported_bytes:
            return dataclasses.replace(preset, free_bytes=free)
        return dataclasses.replace(preset, reported_bytes=total, reported_source=record, cuda_total=None,
                                   cuda_total_exact=False, cuda_total_source=None, free_bytes=free)
    label = one_line(name)
    if total is None:
        raise UsageError(f"{tool} reports no memory total for '{label}' (unified memory?): give it with --gpu-memory")
    return GpuPreset(label, vendor, f"{total:,} B", Fraction(total, GIB), "GiB", None, None, record or "",
                     reported_bytes=total, reported_source=record, free_bytes=free,
                     interconnect="xgmi" if vendor == "AMD" else "pcie")


def _local(count: int | None) -> tuple[GpuPreset, int]:
    """``--gpu local[:COUNT]``: the machine's GPUs when all are one kind; the tightest free memory of them."""
    gpus = local_gpus()
    kinds: dict[str, int] = {}
    for gpu in gpus:
        kinds[gpu.name] = kinds.get(gpu.name, 0) + 1
    if len(kinds) > 1 or len({g.reported_bytes for g in gpus}) > 1:
        listed = ", ".join(f"{n} × {c}" for n, c in kinds.items()) if len(kinds) > 1 else \
            ", ".join(f"{g.name} ({g.device_bytes:,} B)" for g in gpus)
        raise UsageError(f"this machine has different GPUs ({listed}): name one with --gpu NAME:COUNT")
    if count is not None and count > len(gpus):
        raise UsageError(f"--gpu local:{count} asks for {count} GPUs; this machine has {len(gpus)}")
    frees = [g.free_bytes for g in gpus if g.free_bytes is not None]
    return dataclasses.replace(gpus[0], free_bytes=min(frees) if frees else None), count or len(gpus)


# -- docs/gpus.md ----------------------------------------------------------------------------------



def gpus_markdown() -> str:
    """The presets as Markdown (docs/gpus.md): one row each, then each figure's source and the names accepted."""
    rows = ["| preset | vendor | memory (datasheet) | nvidia-smi / rocm-smi total | CUDA total | compute capability "
            "| bandwidth | interconnect |", "|---|---|---|---:|---:|---|---:|---|"]
    notes = []
    for p in PRESETS:
        reported = f"{p.reported_bytes // _MIB:,} MiB" if p.reported_bytes else "no public record"
        cuda = format_gib(p.cuda_total_bytes) + ("" if p.cuda_total is not None else " (estimate)")
        rows.append(f"| {p.name} | {p.vendor} | {p.memory_quoted} (= {p.memory_bytes:,} B, read as {p.memory_unit}) "
                    f"| {reported} | {cuda} | {p.compute_capability or '—'} | {p.bandwidth_quoted or '—'} "
                    f"| {p.interconnect} |")
        accepted = ", ".join(f"`{a}`" for a in (p.name, *p.aliases))
        notes += [f"- **{p.name}**: datasheet: {p.source}. Total reported: {p.reported_source or 'no public record'}. "
                  f"CUDA total: {p.device().cuda_total_source}. Accepted: {accepted}."]
    return "\n".join(rows + [""] + notes)
