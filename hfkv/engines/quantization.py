"""Which checkpoint quantisation formats an engine loads, as data: each engine's ``<version>-quantization.tsv``
(one row per ``quant_method`` its code accepts from a config), and how a config declares its format.

Both engines read ``quantization_config.quant_method`` (lower-cased) in ``ModelConfig._verify_quantization``
and raise "Unknown quantization method: X. Must be one of [...]" for a name outside their
``QUANTIZATION_METHODS`` (vLLM: ``model_executor/layers/quantization/__init__.py``'s ``QuantizationMethods``;
SGLang: ``layers/quantization/__init__.py``'s ``BASE_QUANTIZATION_METHODS`` on a CUDA GPU, ``mxfp4`` included),
after each method's ``override_quantization_method`` may rename a checkpoint's method (vLLM's INC takes
``auto-round``; SGLang's GPTQ-Marlin takes a Marlin-convertible ``gptq``). A row's ``accepted``: ``listed``
(in the list), ``deprecated`` (vLLM's ``DEPRECATED_QUANTIZATION_METHODS``: refused without
``--allow-deprecated-quantization``), ``override:<method>`` (taken through that override).

MLX checkpoints (mlx-community) write ``quantization_config: {"group_size": 64, "bits": 4}`` with no
``quant_method``: SGLang's method is then the empty name, refused as above ("Unknown quantization method: .";
its ``mlx_q4`` / ``mlx_q8`` are registered on Apple's MPS only); vLLM's becomes None and it builds an
unquantized model, which cannot load the packed weights (``mlx_format``).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from hfkv.engines.tables import read_table

LISTED, DEPRECATED, OVERRIDE = "listed", "deprecated", "override:"
SUB_CONFIGS = ("text_config", "language_config", "llm_config")


@lru_cache(maxsize=None)
def table(path: Path) -> dict[str, str]:
    """method -> how the engine accepts it (``listed``, ``deprecated``, ``override:<method>``), in the
    engine's own order; ValueError on another cell."""
    header, rows = read_table(path)
    if header != ["method", "accepted"]:
        raise ValueError(f"{path.name}: columns {header} are not ['method', 'accepted']")
    for method, accepted in rows:
        if accepted not in (LISTED, DEPRECATED) and not (accepted.startswith(OVERRIDE) and len(accepted) > len(OVERRIDE)):
            raise ValueError(f"{path.name}: {method}: {accepted!r} is not listed, deprecated or override:<method>")
    return dict(rows)


def declared(config: dict, *, sub_configs: bool) -> dict | None:
    """The config's ``quantization_config`` (or compressed-tensors' ``compression_config``); with
    ``sub_configs``, a text sub-config's when the root has none (vLLM's ``get_quantization_config``)."""
    for where in (config, *((config.get(key) for key in SUB_CONFIGS) if sub_configs else ())):
        if isinstance(where, dict):
            found = where.get("quantization_config") or where.get("compression_config")
            if isinstance(found, dict):
                return found
    return None


def method(quant: dict) -> str:
    """The ``quant_method`` as the engines normalise it ("" when absent); ModelOpt's own layout
    (``producer.name`` modelopt, or a ``quant_algo``) counts as ``modelopt``."""
    found = quant.get("quant_method")
    if isinstance(found, str) and found:
        return found.lower().replace("compressed_tensors", "compressed-tensors")
    producer = quant.get("producer")
    if (isinstance(producer, dict) and producer.get("name") == "modelopt") or quant.get("quant_algo"):
        return "modelopt"
    return ""


def mlx_format(quant: dict) -> bool:
    """MLX's layout: integer ``bits`` and ``group_size`` and no ``quant_method``."""
    return "quant_method" not in quant and all(isinstance(quant.get(k), int) for k in ("bits", "group_size"))


def unknown_method(name: str, accepted: dict[str, str]) -> str | None:
    """The engines' own refusal of a method outside their list (None when it is accepted)."""
    if name in accepted:
        return None
    listed = [m for m, how in accepted.items() if not how.startswith(OVERRIDE)]
    return f"Unknown quantization method: {name}. Must be one of {listed}."


def describe(quant: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {quant[k]}" for k in ("group_size", "bits") if k in quant) + "}"
