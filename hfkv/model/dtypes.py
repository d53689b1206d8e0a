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
from typing import Any

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


# -- the KV-cache quantisation a config declares ---------------------------------------------------

# modelopt ``kv_cache_quant_algo`` values hfkv reads (any case), and the dtype each stores.
MODELOPT_KV_ALGOS = {"fp8": "fp8", "nvfp4": "fp4"}
# compressed-tensors ``kv_cache_scheme``: (num_bits, type) hfkv reads. ``type`` must be written: the
# library's default is ``int``, which no engine stores.
COMPRESSED_TENSORS_KV = {(8, "float"): "fp8", (4, "float"): "fp4"}
# Keys of ``quantization_config`` (or its nested ``quantization``) that declare a KV-cache quantisation.
KV_DECLARATION_KEYS = ("kv_cache_quant_algo", "kv_cache_scheme", "kv_cache_group", "kv_cache_dtype")


@dataclass(frozen=True)
class KvDeclaration:
    """What a config declares about its KV cache's storage: the dtype hfkv reads from it (None: none it
    understands), and every declaration it does not understand, as ``key = value`` (each a warning: the
    figures are then an estimate)."""

    dtype: str | None = None
    unknown: tuple[str, ...] = ()


def kv_cache_declaration(quant: Any, root_kv_dtype: Any = None) -> KvDeclaration:
    """Read the KV-cache quantisation of ``quantization_config`` (``quant``) and of a root
    ``kv_cache_dtype``.

    Understood: modelopt ``kv_cache_quant_algo`` ``FP8`` / ``NVFP4``; compressed-tensors ``kv_cache_scheme``
    with integer ``num_bits`` 8 or 4 and ``type`` float. Everything else that declares a KV
    quantisation is returned in ``unknown``: another algorithm (``INT8``, ``FP8_PER_TENSOR``), a scheme
    with ``num_bits`` as a string or another width, or of ``type`` int, Quark's ``kv_cache_group`` (the
    layers whose outputs its ``layer_quant_config`` quantises), a ``kv_cache_dtype`` other than ``auto``,
    and any other key of ``quantization_config`` naming a KV cache. Null and empty values declare nothing.
    """
    dtype: str | None = None
    unknown: list[str] = []
    scopes: list[tuple[str, dict]] = []
    if isinstance(quant, dict):
        scopes.append(("quantization_config", quant))
        nested = quant.get("quantization")
        if isinstance(nested, dict):  # modelopt's hf_quant_config layout
            scopes.append(("quantization_config.quantization", nested))
    elif quant is not None and quant != {}:
        unknown.append(f"quantization_config = {quant!r}"[:160])
    for where, scope in scopes:
        for key, value in scope.items():
            if value is None or value == [] or value == {} or value == "":
                continue
            found = _kv_key(key, value)
            if found is None:
                continue
            if found:
                dtype = dtype or found
            else:
                unknown.append(f"{where}.{key} = {value!r}"[:160])
    if root_kv_dtype is not None and str(root_kv_dtype).lower() != "auto":
        unknown.append(f"kv_cache_dtype = {root_kv_dtype!r}"[:160])
    return KvDeclaration(dtype=dtype, unknown=tuple(unknown))


def _kv_key(key: str, value: Any) -> str | None:
    """For one non-empty key of a quantisation config: None when it does not concern the KV cache, the
    dtype it declares when understood, "" when it declares one hfkv does not understand."""
    if key == "kv_cache_quant_algo":
        return MODELOPT_KV_ALGOS.get(value.lower(), "") if isinstance(value, str) else ""
    if key == "kv_cache_scheme":
        if not isinstance(value, dict):
            return ""
        bits, kind = value.get("num_bits"), value.get("type")
        if isinstance(bits, bool) or not isinstance(bits, int):
            return ""
        return COMPRESSED_TENSORS_KV.get((bits, kind), "") if isinstance(kind, str) else ""
    if key in KV_DECLARATION_KEYS:  # kv_cache_group, kv_cache_dtype: declared, not read
        return "" if not (key == "kv_cache_dtype" and str(value).lower() == "auto") else None
    if "kv" in key.lower() and "cache" in key.lower():
        return ""
    return None


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
