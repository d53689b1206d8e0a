"""How pipeline parallelism splits a model's layers into stages (both engines alike). Kept apart from
the accounting core, which needs pydantic's specs, so that the engines' layout loads without it."""

from __future__ import annotations

from typing import Sequence


def stage_sizes(layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage, as ``get_pp_indices`` splits them (vLLM 0.33.0 and SGLang alike).

    Even split; the remainder goes one each to the stages before the last, counting back from it
    (``partitions[-i] += 1`` for i in 2..remainder+1), since the last stage holds the final norm and
    LM head. ``VLLM_PP_LAYER_PARTITION`` is not modelled.
    """
    base, remainder = divmod(layers, pp)
    sizes = [base] * pp
    for i in range(2, remainder + 2):
        sizes[-i] += 1
    return sizes


def stages(layers: Sequence, pp: int) -> list[list]:
    """``layers`` cut into the ``pp`` stages of ``stage_sizes``."""
    out, start = [], 0
    for size in stage_sizes(len(layers), pp):
        out.append(list(layers[start:start + size]))
        start += size
    return out
