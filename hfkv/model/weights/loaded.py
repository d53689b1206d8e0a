"""Bytes as the engines hold them, where that differs from the files: a float32 checkpoint.

Under ``--dtype auto`` (the default) vLLM and SGLang load a float32 model in a 16-bit dtype: vLLM's
``_resolve_auto_dtype`` (vllm/config/model.py) replaces a float32 config dtype by the platform's
first supported dtype ("Downcast for float32 models": bfloat16 on GPUs that support it, float16
otherwise, float16 for pooling models); SGLang's ``_get_and_verify_dtype``
(python/sglang/srt/configs/model_config.py) casts float32 to float16 (bfloat16 for Gemma). Both
are 2 bytes an element, so a float32 checkpoint is held in half its file size. Tensors a family
keeps in float32 on purpose (router biases) are stated by the family and stay at 4 bytes.
"""

from __future__ import annotations

from typing import Any

LOADED_BYTES = 2  # bfloat16 or float16: the engines' 16-bit dtype either way
DOWNCAST_NOTE = ("float32 checkpoint priced at the 16-bit dtype vLLM and SGLang load it in under --dtype auto "
                 "(bfloat16, or float16 where the GPU lacks it); the files hold {files}")


def loaded_base(base: int) -> int:
    """Bytes per unquantised element as loaded: a 32-bit (or wider) float checkpoint at 2."""
    return LOADED_BYTES if base > LOADED_BYTES else base


def downcast_checkpoint(section: dict[str, Any], base: int, stated: bool) -> dict[str, Any]:
    """``section`` (the checkpoint's figures: Hub metadata or headers) with its F32 elements at 2
    bytes when the model's dtype is float32 (``base`` 4) or unstated and the checkpoint all F32
    (vLLM then takes the dtype from the files); otherwise ``section`` unchanged."""
    counts = section.get("parameters") or {}
    f32 = counts.get("F32", 0)
    all_f32 = bool(counts) and set(counts) == {"F32"}
    if not f32 or section.get("weights_bytes") is None or not (base > LOADED_BYTES or (not stated and all_f32)):
        return section
    files = section["weights_bytes"]
    note = DOWNCAST_NOTE.format(files=f"{files:,} B")
    return {**section, "weights_bytes": files - (4 - LOADED_BYTES) * f32,
            "note": "; ".join(n for n in (section.get("note"), note) if n)}
