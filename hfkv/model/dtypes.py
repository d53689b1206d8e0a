"""Element sizes and the precision settings of one report.

Sizes are exact: ``int`` bytes, and a ``Fraction`` for fp4 (half a byte); a figure is reported as an
``int`` whenever it is integral.

``Precision`` is a frozen dataclass, not a pydantic model: it is a value object built by hfkv itself
from dtype names already checked (``require`` turns a bad user option into a one-line ``UsageError``),
it is a dict key of every cached figure (``accounting.costs``), and it needs no validation of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from hfkv.errors import UsageError

# Canonical dtype names and their bytes per element.
BYTES: dict[str, int | Fraction] = {
    "fp32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "fp4": Fraction(1, 2),
}

_ALIASES = {
    "float32": "fp32", "float": "fp32", "f32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16", "half": "fp16", "f16": "fp16",
    "float8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8", "fp8_ds_mla": "fp8", "e4m3": "fp8",
    "float4": "fp4", "nvfp4": "fp4", "mxfp4": "fp4", "fp4_e2m1": "fp4",
}

# Block quantisation used for fp8/fp4 latents and indexer keys: one fp32 scale per 128 values.
SCALE_BLOCK = 128
SCALE_BYTES = 4


def canonical(name: str | None) -> str | None:
    """The canonical dtype name ('bf16', 'fp8', ...) for any spelling, or None when unknown."""
    if name is None:
        return None
    key = str(name).strip().lower().replace("torch.", "")
    if key in BYTES:
        return key
    return _ALIASES.get(key)


def require(name: str, option: str) -> str:
    """Canonical dtype for a user option, or a UsageError naming the option."""
    dt = canonical(name)
    if dt is None:
        raise UsageError(f"{option}: unknown dtype '{name}' (choose from {', '.join(BYTES)})")
    return dt


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def block_scaled_bytes(values: int, dtype: str) -> int | Fraction:
    """Bytes of ``values`` elements in ``dtype``; 8- and 4-bit add one fp32 scale per 128 values."""
    data = values * BYTES[dtype]
    if BYTES[dtype] < 2:
        data += ceil_div(values, SCALE_BLOCK) * SCALE_BYTES
    return data


@dataclass(frozen=True)
class Precision:
    """Storage dtypes of one report: KV entries, recurrent state, conv state, indexer keys (canonical
    names, keys of ``BYTES``). Frozen and hashable: figures computed for one precision can be cached."""

    kv: str = "bf16"
    state: str = "fp32"
    conv: str = "bf16"
    indexer: str = "fp8"

    @property
    def kv_bytes(self) -> int | Fraction:
        return BYTES[self.kv]

    @property
    def state_bytes(self) -> int | Fraction:
        return BYTES[self.state]

    @property
    def conv_bytes(self) -> int | Fraction:
        return BYTES[self.conv]
