"""hfkv: exact KV-cache and state memory of Hugging Face models, from config.json alone.

    >>> import hfkv
    >>> report = hfkv.inspect("fixtures/deepseek-ai__DeepSeek-V3.2/config.json", kv_cache_dtype="fp8")
    >>> report.alpha_bytes_per_token
    39284

``inspect`` takes a local file or folder, or a Hub repo id (``org/name`` or ``org/name@revision``),
and the knobs of ``Options`` as keyword arguments. ``inspect_config`` takes a config dict.

Importing ``hfkv`` is cheap: ``Options``, ``Report`` and ``inspect_config`` load the report machinery
(and pydantic) on first use (PEP 562), so ``hfkv --help`` and the error classes cost no more than they
need. Imported as a library, hfkv leaves pydantic's plugins to the user; only the ``hfkv`` command
turns their discovery off (``hfkv.commands.cli.entry``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from hfkv.errors import ConfigError, HfkvError, SourceError, UnsupportedModelError, UsageError

if TYPE_CHECKING:
    from hfkv.model.report import Options, Report, inspect_config

__version__ = "0.1.0"
__all__ = [
    "inspect", "inspect_config", "Options", "Report",
    "HfkvError", "ConfigError", "SourceError", "UnsupportedModelError", "UsageError",
]
_LAZY = {"Options", "Report", "inspect_config"}  # from .report, loaded on first access


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from hfkv.model import report

        value = getattr(report, name)
        globals()[name] = value  # the next access is a plain attribute
        return value
    raise AttributeError(f"module 'hfkv' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)


def inspect(source: "str | os.PathLike[str]", *, hub: Any = None, revision: str | None = None, **options: Any) -> "Report":
    """Report on one model.

    ``source``: a ``config.json`` path, a model folder, or a Hub repo id. ``hub``: a
    ``hfkv.sources.hub.HubClient`` (endpoint, token, cache) for Hub sources; one with the environment's
    settings is made when omitted. ``options``: any field of ``Options``
    (``kv_cache_dtype="fp8"``, ``tensor_parallel_size=8``, ``contexts=(4096,)``, ``budget_bytes=...``).
    Raises ``SourceError`` when the config cannot be obtained and ``ConfigError`` when it cannot be
    understood; both name the source.
    """
    from hfkv.model.report import inspect_loaded, make_options
    from hfkv.sources.local import load_config

    settings = make_options(**options)  # bad options fail before anything is fetched
    return inspect_loaded(load_config(source, hub=hub, revision=revision), settings)
