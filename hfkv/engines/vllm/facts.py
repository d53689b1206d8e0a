"""What vLLM 0.33.0 knows per architecture, as data: ``0.33.0.tsv`` beside this module.

One row per key of vLLM 0.33.0's ``_TEXT_GENERATION_MODELS``, ``_MULTIMODAL_MODELS`` and
``_SPECULATIVE_DECODING_MODELS`` (``vllm/model_executor/models/registry.py``): registry, architecture,
vLLM module, ``supports_pp``. The names were read from the released wheel; ``supports_pp`` was asked
of vLLM in its oracle venv (``_ModelInfo.from_model_cls``: the ``SupportsPP`` interface and an
``intermediate_tensors`` forward argument, what ``ModelRegistry.is_pp_supported_model`` reads).
docs/vllm.md says how to regenerate the table when the pinned version moves.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "0.33.0.tsv"
PP_VALUES = {"yes": True, "no": False}


def _rows() -> list[list[str]]:
    lines = TABLE.read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in lines[1:] if line.strip()]


@lru_cache(maxsize=None)
def architectures() -> dict[str, tuple[str, str]]:
    """architecture -> (registry, module); registry is text_generation, multimodal or speculative_decoding."""
    return {arch: (registry, module) for registry, arch, module, _ in _rows()}


@lru_cache(maxsize=None)
def pp_support() -> dict[str, bool]:
    """architecture -> whether its model class implements ``SupportsPP``."""
    return {row[1]: PP_VALUES[row[-1]] for row in _rows()}
