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
from hfkv.model.weights import attach as attach_weights
from hfkv.sources import load_config, looks_like_repo_id
from hfkv.sources.checkpoint import folder_weights


def inspect(source: "str | os.PathLike[str]", *, hub: Any = None, revision: str | None = None, weights: bool = True,
            **options: Any) -> Report:
    """Report on one model.

    ``source``: a ``config.json`` path, a model folder, or a Hub repo id. ``hub``: a
    ``hfkv.sources.hub.HubClient`` (endpoint, token, cache) for Hub sources; one with the environment's
    settings is made when omitted. ``options``: any field of ``Options``
    (``kv_cache_dtype="fp8"``, ``tensor_parallel_size=8``, ``contexts=(4096,)``, ``budget_bytes=...``).
    The weights come with it (the Hub's safetensors metadata for a repo, the headers of a local
    folder's safetensors files, else an estimate from the config: ``report.extra["weights"]``);
    ``weights=False`` asks the Hub for the config alone (the estimate stays).
    Raises ``SourceError`` when the config cannot be obtained and ``ConfigError`` when it cannot be
    understood; both name the source.
    """
    settings = make_options(**options)  # bad options fail before anything is fetched
    if hub is None and isinstance(source, str) and looks_like_repo_id(source):
        from hfkv.sources.hub import HubClient  # deferred: huggingface_hub only for a Hub source

        hub = HubClient(prefetch_weights=weights)  # the weights' request goes out with the config's
    loaded = load_config(source, hub=hub, revision=revision)
    return inspect_loaded(loaded, settings, hub=hub if weights else None)


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
        warnings: list[str] = []  # unread cache keys: the mapper's own warning (the registry's check)
        notes: list[str] = []
        if view.value("auto_map", root=True) is not None:
            notes.append("config has auto_map (remote code): read as data only, no repo code was run")
        report = build_report(
            view, layout, model=model, mapper=mapper.name, family=mapper.family, options=options,
            max_positions=max_positions(view), commit=commit, source=source, notes=notes, warnings=warnings,
        )
        return attach_weights(report)
    except HfkvError as err:
        raise err.with_source(model)
    except ValidationError as err:  # a spec validated without its constructor (``model_validate``)
        raise ConfigError(None, f"invalid layer shape: {shape_message(err)}", source=model) from None
    except (ValueError, TypeError) as err:  # a part's shape check (ShapeError: e.g. zero heads)
        raise ConfigError(None, f"invalid layer shape: {_first_line(err)}", source=model) from None


def inspect_loaded(loaded: Any, options: Options, *, model: str | None = None, hub: Any = None) -> Report:
    """``inspect_config`` on a ``sources.LoadedConfig``: its name (or ``model``), commit, source, and
    its warnings (a stale cached copy, an unwritable cache) at the head of the report's warnings.

    The weights come from the checkpoint when it can be read without a tensor: for a Hub repo the
    Hub's safetensors metadata (else the files' headers) through ``hub``, for a local folder its
    safetensors headers (``sources.checkpoint``); else the estimate from the config's shapes."""
    report = inspect_config(loaded.data, model=model or loaded.name, options=options, commit=loaded.commit,
                            source=loaded.source)
    report.warnings[:0] = list(loaded.warnings)
    checkpoint = None
    if loaded.source == "hub" and hub is not None:
        checkpoint = hub.weights(loaded.name, loaded.revision)
    elif loaded.folder:
        checkpoint = folder_weights(loaded.folder)
    return attach_weights(report, checkpoint) if checkpoint else report


def _first_line(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return " ".join(line.strip() for line in text[:3]) if text else type(err).__name__
