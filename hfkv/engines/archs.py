"""The architectures each pinned engine serves, as its own registry names them.

``vllm-0.33.0-archs.tsv``: every key of vLLM 0.33.0's ``_TEXT_GENERATION_MODELS``, ``_MULTIMODAL_MODELS``
and ``_SPECULATIVE_DECODING_MODELS`` (``vllm/model_executor/models/registry.py``): registry, architecture,
vLLM module. ``sglang-0.5.23-archs.tsv``: every ``EntryClass`` of SGLang 0.5.23's ``sglang/srt/models/*.py``:
architecture, SGLang module. Both were read from the released wheels; regenerate them the same way when
the pinned versions move.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _rows(name: str) -> list[list[str]]:
    lines = (_HERE / name).read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in lines[1:] if line.strip()]


@lru_cache(maxsize=None)
def vllm_architectures() -> dict[str, tuple[str, str]]:
    """vLLM 0.33.0: architecture -> (registry, module); registry is text_generation, multimodal or
    speculative_decoding."""
    return {arch: (registry, module) for registry, arch, module in _rows("vllm-0.33.0-archs.tsv")}


@lru_cache(maxsize=None)
def sglang_architectures() -> dict[str, str]:
    """SGLang 0.5.23: architecture -> module of its native model class."""
    return {arch: module for arch, module in _rows("sglang-0.5.23-archs.tsv")}
