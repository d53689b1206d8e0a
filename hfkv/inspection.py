"""The pipeline: a config (or a source) → the family's mapper → per-layer specs → a report.

``inspect`` loads a config from a path, a folder or a Hub repo id; ``inspect_config`` takes a dict
already loaded. Both return a ``Report`` whose figures come from the accounting core; the mapper is
found by the registry from the config's model type and architectures.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import ValidationError

from hfkv.errors import ConfigError, HfkvError
from hfkv.mappings import resolve
from hfkv.mappings.readers.attention_keys import max_positions
from hfkv.model.config import ConfigView
from hfkv.model.options import Options, make_options
from hfkv.model.report import Report, build_report
from hfkv.model.specs import shape_message


def inspect(source: "str | os.PathLike[str]", *, hub: Any = None, revision: str | None = None, **options: Any) -> Report:
    """Report on one model.

    ``source``: a ``config.json`` path, a model folder, or a Hub repo id. ``hub``: a
    ``hfkv.sources.hub.HubClient`` (endpoint, token, cache) for Hub sources; one with the environment's
    settings is made when omitted. ``options``: any field of ``Options``
    (``kv_cache_dtype="fp8"``, ``tensor_parallel_size=8``, ``contexts=(4096,)``, ``budget_bytes=...``).
    Raises ``SourceError`` when the config cannot be obtained and ``ConfigError`` when it cannot be
    understood; both name the source.
    """
    from hfkv.sources import load_config  # huggingface_hub only for a Hub source, and only then

    settings = make_options(**options)  # bad options fail before anything is fetched
    return inspect_loaded(load_config(source, hub=hub, revision=revision), settings)


def inspect_config(
    data: Any, *, model: str = "config.json", options: Options | None = None,
    commit: str | None = None, source: str | None = None, **knobs: Any,
) -> Report:
    """Report on a config dict (already loaded). ``knobs``: any ``Options`` field, instead of ``options``.

    Raises ``HfkvError`` subclasses naming ``model`` (``UsageError`` for bad options).
    """
    options = make_options(options, **knobs)
    try:
        view = ConfigView(data, source=model)
        mapper = resolve(view)
        layout = mapper(view)
        warnings, notes = [], []
        if mapper.family == "generic":
            unread = view.unread_attention_keys()
            if unread:
                warnings.append("attention/cache keys not understood: " + ", ".join(unread))
        if view.value("auto_map", root=True) is not None:
            notes.append("config has auto_map (remote code): read as data only, no repo code was run")
        return build_report(
            view, layout, model=model, mapper=mapper.name, family=mapper.family, options=options,
            max_positions=max_positions(view), commit=commit, source=source, notes=notes, warnings=warnings,
        )
    except HfkvError as err:
        raise err.with_source(model)
    except ValidationError as err:  # a spec validated without its constructor (``model_validate``)
        raise ConfigError(None, f"invalid layer shape: {shape_message(err)}", source=model) from None
    except (ValueError, TypeError) as err:  # a part's shape check (ShapeError: e.g. zero heads)
        raise ConfigError(None, f"invalid layer shape: {_first_line(err)}", source=model) from None


def inspect_loaded(loaded: Any, options: Options, *, model: str | None = None) -> Report:
    """``inspect_config`` on a ``source.LoadedConfig``: its name (or ``model``), commit, source, and
    its warnings (a stale cached copy, an unwritable cache) at the head of the report's warnings."""
    report = inspect_config(loaded.data, model=model or loaded.name, options=options, commit=loaded.commit,
                            source=loaded.source)
    report.warnings[:0] = list(loaded.warnings)
    return report


def _first_line(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return " ".join(line.strip() for line in text[:3]) if text else type(err).__name__
