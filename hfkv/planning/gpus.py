"""Accelerator presets: memory and memory bandwidth per GPU, with where each figure comes from.

Conventions (read before using a figure):

* **Memory.** Vendors print "80GB", "141GB", "192GB" and leave the unit ambiguous. Each preset keeps
  the datasheet's words (``memory_quoted``) and says how hfkv reads them (``memory_unit``):

  - ``"GiB"`` (2^30 bytes) for every HBM part and the GeForce cards. What the devices report backs
    this reading: NVML gives 81,559 MiB for an H100 80GB, 143,771 MiB for an H200 141GB, 81,920 MiB
    for an A100 80GB, 183,359 MiB for a B200 180GB, and rocm-smi 206,141,652,992 B for an MI300X
    192GB; each is within 0.5% of the GiB reading and 6–7% above the 10^9 reading.
  - ``"GB"`` (10^9 bytes) for the L40S and L4 (GDDR6 with ECC): NVML gives 46,068 MiB for the
    L40S 48GB and 23,034 MiB for the L4 24GB, 0.6% above the 10^9 reading and 6% below GiB.

  ``memory_bytes`` is the datasheet figure read that way. The driver keeps a little of it for
  itself, so the device reports slightly less (``reported_bytes`` when a public record exists);
  engines such as vLLM multiply the *reported* total by their utilisation fraction.
* **Compute capability** is CUDA's ``MAJOR.MINOR`` (CUDA GPUs table, developer.nvidia.com/cuda-gpus):
  Ampere A100 8.0, Ada L40S/L4/RTX 4090 8.9, Hopper 9.0, Blackwell B200/GB200 10.0, B300 10.3,
  RTX 5090 12.0; None for AMD. Engine modes choose attention backends (block sizes) by it.
* **Bandwidth** is always decimal, as every vendor means it: 1 TB/s = 10^12 bytes/s, 1 GB/s =
  10^9 bytes/s. It is the peak figure of the datasheet; sustained bandwidth is lower.

Names are matched case-insensitively with punctuation ignored (``h100``, ``H100-80GB``,
``h100_sxm``, ``MI300X``); ``NAME:COUNT`` (``H200:8``) gives a count. An unknown name raises a
one-line ``UsageError`` listing the choices.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from hfkv.engines.contract import Device
from hfkv.errors import UsageError

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
    bandwidth_quoted: str
    bandwidth_bytes_per_s: int
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
    # "nvswitch" on HGX/DGX boards (NCCL's NVLS buffers grow with TP), "xgmi" on AMD's boards, "pcie" otherwise.
    interconnect: str = "pcie"

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
        }


_MIB = 1 << 20
_DRIVER_KEEP = 454 * _MIB
_LOGS = "vLLM start-up logs and PyTorch out-of-memory messages (\"total capacity of ... GiB\"), docs/deployments.md"
_NVML_MODAL = "nvidia-smi totals published by Modal (modal-labs/modal-client PR #2797; thundergolfer.com/blog/nvidia-gpu-memory-capacity)"

PRESETS: tuple[GpuPreset, ...] = (
    GpuPreset(
        "H100-SXM-80GB", "NVIDIA", "80GB HBM3", Fraction(80), "GiB", "3.35TB/s", 3_350 * GB_PER_S,
        "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column: 80GB, 3.35TB/s)",
        aliases=("h100", "h100sxm", "h100sxm5", "h10080gb", "h100sxm580gb", "h100hbm3"),
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
        compute_capability="9.0",
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
        compute_capability="10.0",
        interconnect="nvswitch",
    ),
    GpuPreset(
        "B300-288GB", "NVIDIA", "288GB HBM3e", Fraction(288), "GiB", "8TB/s", 8_000 * GB_PER_S,
        "NVIDIA DGX B300 / HGX B300 specifications (Blackwell Ultra: 2.3TB total for 8 GPUs = 288GB HBM3e each; "
        "up to 8TB/s per GPU)",
        aliases=("b300", "b300288gb", "blackwellultra", "b300sxm"),
        compute_capability="10.3",
        interconnect="nvswitch",
    ),
    GpuPreset(
        "A100-40GB", "NVIDIA", "40GB HBM2", Fraction(40), "GiB", "1,555GB/s", 1_555 * GB_PER_S,
        "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB: 40GB HBM2, 1,555GB/s)",
        aliases=("a10040gb", "a100sxm40gb", "a100sxm440gb", "a100pcie40gb"),
        reported_bytes=40_960 * _MIB, reported_source=_NVML_MODAL + ": 40,960 MiB",
        compute_capability="8.0",
        cuda_total=Fraction("39.49"), cuda_total_source="39.49 GiB (39.39–39.50 seen): " + _LOGS,
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
        aliases=("a100pcie", "a100pcie80gb"),
        compute_capability="8.0",
    ),
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
        compute_capability="12.0",
        cuda_total=Fraction("31.36"), cuda_total_source="31.36 GiB: " + _LOGS,
    ),
    GpuPreset(
        "MI300X-192GB", "AMD", "192GB HBM3", Fraction(192), "GiB", "5.3TB/s", 5_300 * GB_PER_S,
        "AMD Instinct MI300X accelerator datasheet (192GB HBM3, 5.3TB/s peak)",
        aliases=("mi300x", "mi300x192gb", "instinctmi300x"),
        reported_bytes=206_141_652_992,
        reported_source="rocm-smi in ROCm issue #4750: VRAM Total Memory 206,141,652,992 B",
        cuda_total=Fraction(205_822_885_888), cuda_total_exact=True,
        cuda_total_source="191.69 GiB = 205,822,885,888 B in a vLLM log on an MI300X droplet",
        interconnect="xgmi",
    ),
    GpuPreset(
        "MI325X-256GB", "AMD", "256GB HBM3E", Fraction(256), "GiB", "6TB/s", 6_000 * GB_PER_S,
        "AMD Instinct MI325X accelerator datasheet (256GB HBM3E, 6TB/s peak)",
        aliases=("mi325x", "mi325x256gb", "instinctmi325x"),
    ),
    GpuPreset(
        "MI355X-288GB", "AMD", "288GB HBM3E", Fraction(288), "GiB", "8TB/s", 8_000 * GB_PER_S,
        "AMD Instinct MI355X accelerator datasheet (288GB HBM3E, 8TB/s peak)",
        aliases=("mi355x", "mi355x288gb", "instinctmi355x"),
    ),
)


def _key(text: str) -> str:
    """Lower case, letters and digits only: 'H100-SXM 80GB' -> 'h100sxm80gb'."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


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


def names() -> list[str]:
    """Canonical preset names, in table order."""
    return [p.name for p in PRESETS]


def get_gpu(name: str) -> GpuPreset:
    """The preset for ``name`` (any alias, any case); ``UsageError`` listing the choices otherwise."""
    if isinstance(name, GpuPreset):
        return name
    preset = _BY_KEY.get(_key(str(name)))
    if preset is None:
        raise UsageError(f"unknown GPU '{name}' (choose from {', '.join(names())})")
    return preset


def parse_gpu(text: str) -> tuple[GpuPreset, int]:
    """``NAME`` or ``NAME:COUNT`` -> (preset, count); count defaults to 1."""
    name, sep, count_text = str(text).strip().rpartition(":")
    if not sep:
        return get_gpu(count_text), 1
    if not re.fullmatch(r"\s*[0-9]+\s*", count_text) or int(count_text) < 1:
        raise UsageError(f"GPU count in '{text}' must be a positive whole number (e.g. H200:8)")
    return get_gpu(name), int(count_text)
