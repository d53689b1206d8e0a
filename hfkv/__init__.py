"""hfkv: exact KV-cache and state memory of Hugging Face models, from config.json alone.

    >>> import hfkv
    >>> report = hfkv.inspect("fixtures/deepseek-ai__DeepSeek-V3.2/config.json", kv_cache_dtype="fp8")
    >>> report.alpha_bytes_per_token
    48068

``inspect`` takes a local file or folder, or a Hub repo id (``org/name`` or ``org/name@revision``),
and the knobs of ``Options`` and of ``hfkv.engines.EngineKnobs`` as keyword arguments, with ``gpu=``
and ``engine=`` for a serving plan (``report.serving``); ``inspect_config`` takes a config dict;
``plan(model, requests=, context=, gpu=)`` finds the fewest GPUs and the layouts that hold them;
``explain_log(text, model=None)`` reads a vLLM or SGLang start-up log and checks its figures.
``accounting`` is the accounting core (pure functions over a report's ``layer_specs``).

Importing ``hfkv`` is cheap: the public names load the pipeline (and pydantic) on first use
(PEP 562), so ``hfkv --help`` and the error classes cost no more than they need. Imported as a
library, hfkv leaves pydantic's plugins to the user; only the ``hfkv`` command turns their discovery
off (``hfkv.commands.cli.entry``).

The package is laid out as the data flows: ``sources`` (a config from a file or the Hub) →
``mappings`` (a family's config → per-layer specs) → ``model`` (specs, the accounting core, the
report) → ``engines`` (vLLM's and SGLang's own arithmetic) → ``planning`` (GPUs, weights, the
serving plan and its verdict) → ``render`` → ``commands``; ``runtime`` holds deadlines, fetchers
and files. docs/architecture.md is the map.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from hfkv._version import __version__
from hfkv.errors import ConfigError, HfkvError, SourceError, UnsupportedModelError, UsageError

if TYPE_CHECKING:
    from hfkv.api import explain_log, inspect, inspect_config, plan
    from hfkv.model import accounting
    from hfkv.model.options import Options
    from hfkv.model.report import Report

__all__ = [
    "inspect", "inspect_config", "plan", "explain_log", "Options", "Report", "accounting",
    "HfkvError", "ConfigError", "SourceError", "UnsupportedModelError", "UsageError", "__version__",
]
# Public names loaded on first access: name -> (module, attribute; None for the module itself).
_LAZY = {
    "inspect": ("hfkv.api", "inspect"),
    "inspect_config": ("hfkv.api", "inspect_config"),
    "plan": ("hfkv.api", "plan"),
    "explain_log": ("hfkv.api", "explain_log"),
    "Options": ("hfkv.model.options", "Options"),
    "Report": ("hfkv.model.report", "Report"),
    "accounting": ("hfkv.model.accounting", None),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = importlib.import_module(module)
        if attribute is not None:
            value = getattr(value, attribute)
        globals()[name] = value  # the next access is a plain attribute
        return value
    raise AttributeError(f"module 'hfkv' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def _mappers_beside_the_sources() -> None:
    """Run from a source checkout whose ``hfkv/`` shadows an installed copy, ``hfkv.mappings`` is the
    checkout's top-level ``mappings/`` folder (where an install puts it under ``hfkv/``): a finder for
    that one name, used only when the folder is there and the package has no ``mappings`` of its own."""
    here = os.path.dirname(os.path.abspath(__file__))
    beside = os.path.join(os.path.dirname(here), "mappings")
    if os.path.isdir(os.path.join(here, "mappings")) or not os.path.isfile(os.path.join(beside, "__init__.py")):
        return

    import importlib.util

    # a meta path finder by its find_spec alone: importlib.abc (~5 ms) is left to what needs it (pydantic)
    class CheckoutMappings:
        def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
            if fullname != "hfkv.mappings":
                return None
            return importlib.util.spec_from_file_location(fullname, os.path.join(beside, "__init__.py"),
                                                          submodule_search_locations=[beside])

    sys.meta_path.append(CheckoutMappings())


_mappers_beside_the_sources()
