"""The architectures each pinned engine serves, as its own registry names them, and which of them the
engine runs under pipeline parallelism.

``vllm-0.33.0-archs.tsv``: every key of vLLM 0.33.0's ``_TEXT_GENERATION_MODELS``, ``_MULTIMODAL_MODELS``
and ``_SPECULATIVE_DECODING_MODELS`` (``vllm/model_executor/models/registry.py``): registry, architecture,
vLLM module, ``supports_pp``. ``sglang-0.5.23-archs.tsv``: every ``EntryClass`` of SGLang 0.5.23's
``sglang/srt/models/*.py``: architecture, SGLang module, ``tp_asserts``, ``supports_pp``. The names were read from the
released wheels; ``supports_pp`` was asked of each engine in its oracle venv: vLLM's
``_ModelInfo.from_model_cls`` (the ``SupportsPP`` interface and an ``intermediate_tensors`` forward
argument, what ``ModelRegistry.is_pp_supported_model`` reads), SGLang's ``ModelRunner`` test
(``pp_proxy_tensors`` among the parameters of the model's ``forward``). docs/vllm.md and docs/sglang.md
say how to regenerate the column when the pinned versions move.

``tp_asserts`` (``tests/oracles/sglang-tp-asserts.py``, docs/sglang.md) is what the attention classes the model
builds assert about TP in their ``__init__``: ``<kind>@<tp>:<Class>`` joined by ``,``, kind ``heads``
(``total_num_heads % tp == 0``), ``kv`` (``kv % tp == 0`` at or above TP, else ``tp % kv == 0``) or
``heads+kv``; tp ``tp`` (the whole TP group), ``attn_tp`` (the attention TP, tp / dp under DP attention)
or ``?``; ``none`` when no class asserts, ``?`` when the classes could not be read.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

_HERE = Path(__file__).resolve().parent
PP_VALUES = {"yes": True, "no": False}


class TpAssert(NamedTuple):
    """One attention class's TP assertions: ``kinds`` among heads / kv, ``tp`` the TP it divides by
    (``tp``, ``attn_tp``, or None when unknown), ``cls`` its SGLang class name."""

    kinds: frozenset[str]
    tp: str | None
    cls: str


def _rows(name: str) -> list[list[str]]:
    lines = (_HERE / name).read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in lines[1:] if line.strip()]


@lru_cache(maxsize=None)
def vllm_architectures() -> dict[str, tuple[str, str]]:
    """vLLM 0.33.0: architecture -> (registry, module); registry is text_generation, multimodal or
    speculative_decoding."""
    return {arch: (registry, module) for registry, arch, module, _ in _rows("vllm-0.33.0-archs.tsv")}


@lru_cache(maxsize=None)
def sglang_architectures() -> dict[str, str]:
    """SGLang 0.5.23: architecture -> module of its native model class."""
    return {row[0]: row[1] for row in _rows("sglang-0.5.23-archs.tsv")}


@lru_cache(maxsize=None)
def vllm_pp_support() -> dict[str, bool]:
    """vLLM 0.33.0: architecture -> whether its model class implements ``SupportsPP``."""
    return {row[1]: PP_VALUES[row[-1]] for row in _rows("vllm-0.33.0-archs.tsv")}


@lru_cache(maxsize=None)
def sglang_pp_support() -> dict[str, bool]:
    """SGLang 0.5.23: architecture -> whether its model's ``forward`` takes ``pp_proxy_tensors``."""
    return {row[0]: PP_VALUES[row[-1]] for row in _rows("sglang-0.5.23-archs.tsv")}


@lru_cache(maxsize=None)
def sglang_tp_asserts() -> dict[str, tuple[TpAssert, ...] | None]:
    """SGLang 0.5.23: architecture -> its attention classes' TP assertions (empty: none assert; None:
    unknown)."""
    return {row[0]: parse_tp_asserts(row[2]) for row in _rows("sglang-0.5.23-archs.tsv")}


def parse_tp_asserts(value: str) -> tuple[TpAssert, ...] | None:
    """One ``tp_asserts`` cell (the module docstring); ValueError on a malformed one."""
    if value == "?":
        return None
    if value == "none":
        return ()
    out = []
    for item in value.split(","):
        kinds, rest = item.split("@", 1)
        tp, cls = rest.split(":", 1)
        if not set(kinds.split("+")) <= {"heads", "kv"} or tp not in ("tp", "attn_tp", "?") or not cls:
            raise ValueError(f"malformed tp_asserts entry {item!r}")
        out.append(TpAssert(frozenset(kinds.split("+")), None if tp == "?" else tp, cls))
    return tuple(out)
