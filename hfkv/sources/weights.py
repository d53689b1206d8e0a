"""Weight bytes from parameter counts per safetensors dtype: the Hub's ``safetensors`` field (source
``metadata``) or the files' headers (``headers``), as the section ``hfkv.model.weights.attach`` puts
into a report."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

# Bytes per stored element, by safetensors dtype name (safetensors 0.8: F4 and F6_* are sub-byte floats).
DTYPE_BYTES: dict[str, Fraction] = {
    "F64": Fraction(8), "I64": Fraction(8), "U64": Fraction(8), "C64": Fraction(8),
    "F32": Fraction(4), "I32": Fraction(4), "U32": Fraction(4),
    "F16": Fraction(2), "BF16": Fraction(2), "I16": Fraction(2), "U16": Fraction(2),
    "F8_E4M3": Fraction(1), "F8_E5M2": Fraction(1), "F8_E8M0": Fraction(1), "F8_E4M3FNUZ": Fraction(1),
    "F8_E5M2FNUZ": Fraction(1), "I8": Fraction(1), "U8": Fraction(1), "BOOL": Fraction(1),
    "F6_E2M3": Fraction(3, 4), "F6_E3M2": Fraction(3, 4), "F4": Fraction(1, 2),
    "U4": Fraction(1, 2), "I4": Fraction(1, 2),  # not safetensors 0.8 names; kept in case the Hub reports them
}
# Integer containers that quantisation formats pack several weights into (MXFP4/NVFP4/bnb-4bit blocks in
# U8, GPTQ/AWQ int4 in I32): their element count is not the weight count, but their bytes are the bytes.
PACKED_DTYPES = ("U8", "I32", "U32")


def weights_summary(parameters: dict[str, int], total: int | None, *, source: str,
                    payload_bytes: int | None = None) -> dict[str, Any] | None:
    """``{"parameters", "total_parameters", "weights_bytes", "parameters_exact", "source"[, "note"]}``.

    ``source``: ``metadata`` (the Hub's count) or ``headers`` (the safetensors files' headers). Bytes
    are ``payload_bytes`` when the headers gave the tensors' byte spans, else elements × ``DTYPE_BYTES``
    rounded up to a whole byte; an unknown dtype then makes them None.
    """
    counts = {dtype: int(n) for dtype, n in parameters.items() if n}
    if not counts:
        return None
    unknown = sorted(d for d in counts if d not in DTYPE_BYTES)
    size = sum((DTYPE_BYTES[d] * n for d, n in counts.items() if d in DTYPE_BYTES), Fraction(0))
    packed = sorted(d for d in counts if d in PACKED_DTYPES)
    result: dict[str, Any] = {
        "parameters": counts,
        "total_parameters": int(total) if total else sum(counts.values()),
        "weights_bytes": payload_bytes if payload_bytes is not None else None if unknown else math.ceil(size),
        "parameters_exact": not packed,
        "source": source,
    }
    notes = []
    if packed:
        notes.append(f"{'/'.join(packed)} tensors may pack several quantised weights per element: "
                     "weights_bytes is exact, the parameter count is approximate")
    if unknown and payload_bytes is None:
        notes.append(f"unknown dtype {', '.join(unknown)}: weights_bytes not computed")
    if notes:
        result["note"] = "; ".join(notes)
    return result
