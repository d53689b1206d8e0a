"""From a config to a report: resolve the mapper and the precision, then ask the accounting core.

``Options`` are the knobs of one report; ``Report`` is the stable result (its ``to_dict`` is the JSON
contract documented in the README).
"""

from __future__ import annotations

from collections import OrderedDict
from fractions import Fraction
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from . import accounting as acc
from . import dtypes
from .config import ConfigView
from .errors import ConfigError, HfkvError, UsageError
from .specs import LayerSpec, Layout

DEFAULT_CONTEXTS = (4096, 32768, 131072)
Number = int | float


class Options(BaseModel):
    """Accounting knobs for one report (no Hub settings, no secrets)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kv_cache_dtype: str = Field("auto", description="auto | bf16 | fp16 | fp8 | fp4 | fp32")
    state_dtype: str = Field("fp32", description="recurrent (linear, Mamba) state dtype")
    conv_dtype: str = Field("auto", description="conv-state dtype; auto = the model's 16-bit dtype")
    indexer_dtype: str = Field("fp8", description="indexer keys; fp8/fp4 add an fp32 scale per 128 values")
    tensor_parallel_size: int = Field(1, ge=1)
    contexts: tuple[Annotated[int, Field(ge=1, le=acc.SEARCH_LIMIT)], ...] | None = Field(
        None, description="context lengths; default 4k, 32k, 128k and the max"
    )
    budget_bytes: int | None = Field(None, gt=0, description="KV budget per GPU")
    batch: int | None = Field(None, ge=1, description="concurrency for the longest-context question")
    prefix_cache_tokens: int | None = Field(None, ge=0)
    snapshot_interval: int | None = Field(None, ge=1)
    spec_tokens: int = Field(0, ge=0)


class PartReport(BaseModel):
    kind: str
    copies: int
    entries: str
    entry_bytes: Number
    state_bytes: Number
    params: dict[str, Any]


class LayerReport(BaseModel):
    index: int
    kind: str
    copies: int
    entry_bytes: Number
    state_bytes: Number
    bytes_per_token: Number
    source_layer: int | None = None
    window: int | None = None
    compress_ratio: int | None = None
    parts: list[PartReport]


class GroupReport(BaseModel):
    kind: str
    layers: int
    indices: list[int]
    copies: int
    entries: str
    entry_bytes: Number
    state_bytes: Number
    equivalent_tokens: Number | None = None


class ContextReport(BaseModel):
    tokens: int
    kv_bytes_per_request: Number
    read_bytes_per_step: Number
    extra_state_bytes: Number | None = None
    max_concurrency: int | None = None


class Report(BaseModel):
    """Everything hfkv says about one model. ``to_dict()`` is the stable JSON form."""

    model: str
    source: str | None = None
    commit: str | None = None
    model_type: str | None
    architectures: list[str]
    mapper: str
    family: str
    kv_cache_dtype: str
    state_dtype: str
    conv_dtype: str
    indexer_dtype: str
    tensor_parallel_size: int
    alpha_bytes_per_token: Number
    gamma_bytes_per_request: Number
    crossover_tokens: Number | None
    recurrent_state_bytes: Number
    max_position_embeddings: int | None
    budget_bytes: int | None = None
    batch: int | None = None
    max_context_for_batch: int | None = None
    layers: list[LayerReport]
    groups: list[GroupReport]
    contexts: list[ContextReport]
    transformers_defaults: list[str]
    notes: list[str]
    warnings: list[str]
    extra: dict[str, Any] = Field(default_factory=dict, description="sections added by other tools (weights, engine)")

    # What planners (serving, engine modes, plots) need to recompute figures; not serialised.
    # Plain None defaults: a default_factory makes pydantic inspect the factory's signature on
    # every instance (~1 ms per report here).
    _layers: list[LayerSpec] | None = PrivateAttr(default=None)
    _precision: dtypes.Precision | None = PrivateAttr(default=None)
    _config: dict | None = PrivateAttr(default=None)

    @property
    def layer_specs(self) -> list[LayerSpec]:
        """The mapped layers (per-layer specs) behind this report."""
        if self._layers is None:
            self._layers = []
        return self._layers

    @property
    def precision(self) -> dtypes.Precision:
        return self._precision or dtypes.Precision()

    @property
    def config(self) -> dict:
        """The text sub-config the report was built from (raw dict; read-only by convention)."""
        if self._config is None:
            self._config = {}
        return self._config

    def to_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        for ctx in data["contexts"]:
            for key in ("max_concurrency", "extra_state_bytes"):
                if ctx[key] is None:
                    del ctx[key]
        for layer in data["layers"]:
            for key in ("source_layer", "window", "compress_ratio"):
                if layer[key] is None:
                    del layer[key]
        extra = data.pop("extra")
        data.update(extra)
        return data


# -- precision ----------------------------------------------------------------------------------


def model_dtype(view: ConfigView) -> str | None:
    """The checkpoint's dtype as written in the config (``torch_dtype`` or ``dtype``)."""
    for key in ("torch_dtype", "dtype"):
        raw = view.value(key)
        if isinstance(raw, str):
            return dtypes.canonical(raw)
    return None


def declared_kv_dtype(view: ConfigView) -> str | None:
    """fp8 (or fp4) when ``quantization_config`` declares a quantised KV cache, else None."""
    quant = view.value("quantization_config", root=True)
    if not isinstance(quant, dict):
        return None
    algo = quant.get("kv_cache_quant_algo")
    if isinstance(algo, str) and dtypes.canonical(algo) in ("fp8", "fp4"):
        return dtypes.canonical(algo)
    scheme = quant.get("kv_cache_scheme")
    if isinstance(scheme, dict):
        bits = scheme.get("num_bits")
        if bits == 8:
            return "fp8"
        if bits == 4:
            return "fp4"
    return None


def resolve_precision(view: ConfigView, options: Options, notes: list[str], warnings: list[str]) -> dtypes.Precision:
    """Turn the options' ``auto`` values into dtypes, saying where each came from."""
    base = model_dtype(view)
    serving = base
    needs_base = options.kv_cache_dtype == "auto" or options.conv_dtype == "auto"
    if base is None:
        serving = "bf16"
        written = view.value("torch_dtype") or view.value("dtype")
        if needs_base:
            what = f"config dtype {written!r} is not a storage dtype" if written else "config names no dtype"
            warnings.append(f"{what}: assuming bf16 for the model's 16-bit KV/conv storage")
    elif base not in ("bf16", "fp16"):
        serving = "bf16"
        if needs_base:
            notes.append(f"checkpoint dtype {base}: engines serve it in 16 bits, so bf16 is assumed")
    kv = options.kv_cache_dtype
    if kv == "auto":
        declared = declared_kv_dtype(view)
        if declared:
            kv = declared
            notes.append(f"quantization_config declares an {declared} KV cache")
        else:
            kv = serving
    kv = dtypes.require(kv, "--kv-cache-dtype")
    conv = serving if options.conv_dtype == "auto" else dtypes.require(options.conv_dtype, "--conv-dtype")
    return dtypes.Precision(
        kv=kv,
        state=dtypes.require(options.state_dtype, "--state-dtype"),
        conv=conv,
        indexer=dtypes.require(options.indexer_dtype, "--indexer-dtype"),
    )


# -- figures ------------------------------------------------------------------------------------


def _layer_report(layer: LayerSpec, p: dtypes.Precision, tp: int) -> LayerReport:
    parts = [
        PartReport(
            kind=part.kind,
            copies=part.copies,
            entries=part.entries_rule(),
            entry_bytes=acc.as_number(part.entry_bytes(p, tp)),
            state_bytes=acc.as_number(part.state_bytes(p, tp)),
            params={k: v for k, v in part.params().items() if k != "kind"},
        )
        for part in layer.parts
    ]
    windows = [getattr(part, "window", None) or getattr(part, "chunk", None) for part in layer.parts]
    ratios = [part.ratio for part in layer.parts if part.kind == "compressed"]
    return LayerReport(
        index=layer.index,
        kind=layer.kind,
        copies=layer.copies,
        entry_bytes=acc.as_number(layer.entry_bytes(p, tp)),
        state_bytes=acc.as_number(layer.state_bytes(p, tp)),
        bytes_per_token=acc.as_number(layer.slope(p, tp)),
        source_layer=layer.source_layer,
        window=next((w for w in windows if w), None),
        compress_ratio=ratios[0] if ratios else None,
        parts=parts,
    )


def _groups(layers: list[LayerSpec], reports: list[LayerReport], p: dtypes.Precision, tp: int) -> list[GroupReport]:
    """Layers with the same label and the same storage, in order of first appearance."""
    full_entry = next((layer.slope(p, tp) for layer in layers if layer.slope(p, tp) and layer.copies), None)
    grouped: OrderedDict[tuple, list[int]] = OrderedDict()
    for layer, rep in zip(layers, reports):
        key = (rep.kind, rep.copies, rep.entry_bytes, rep.state_bytes, " + ".join(pr.entries for pr in rep.parts))
        grouped.setdefault(key, []).append(layer.index)
    groups = []
    for (kind, copies, entry, state, rule), indices in grouped.items():
        eq = acc.equivalent_tokens(Fraction(state), full_entry) if state and full_entry else None
        groups.append(GroupReport(
            kind=kind, layers=len(indices), indices=indices, copies=copies, entries=rule,
            entry_bytes=entry, state_bytes=state, equivalent_tokens=acc.as_number(eq),
        ))
    return groups


def _tp_warnings(layers: list[LayerSpec], tp: int) -> list[str]:
    """Engines shard KV heads only when TP divides them or they divide TP; say so otherwise."""
    heads = sorted({p.kv_heads for layer in layers for p in layer.parts if hasattr(p, "kv_heads")})
    odd = [k for k in heads if k % tp and tp % k]
    if not odd:
        return []
    listed = ", ".join(str(k) for k in odd)
    return [f"TP {tp} and {listed} KV heads do not divide one another: engines refuse this layout; "
            f"figures assume max(1, K // TP) heads per GPU"]


def default_contexts(max_positions: int | None) -> list[int]:
    values = {c for c in DEFAULT_CONTEXTS if max_positions is None or c <= max_positions}
    if max_positions:
        values.add(max_positions)
    return sorted(values) or [max_positions or DEFAULT_CONTEXTS[0]]


def build_report(
    view: ConfigView, layout: Layout, *, model: str, mapper: str, family: str, options: Options,
    max_positions: int | None, commit: str | None = None, source: str | None = None,
    notes: list[str] | None = None, warnings: list[str] | None = None,
) -> Report:
    """Compute every figure of a report from a mapped layout. Pure apart from ``view``'s key reads."""
    notes = list(layout.notes) + list(notes or [])
    warnings = list(layout.warnings) + list(warnings or [])
    p = resolve_precision(view, options, notes, warnings)
    tp = options.tensor_parallel_size
    layers = layout.layers
    if not layers:
        raise ConfigError(None, "the mapper found no decoder layers")

    warnings += _tp_warnings(layers, tp)
    stack = acc.group(layers)  # every figure below sums over the distinct storages, counted once
    a, g = acc.alpha(stack, p, tp), acc.gamma(stack, p, tp)
    state = acc.recurrent_state_bytes(stack, p, tp)
    extra = acc.speculative_extra(state, options.spec_tokens)
    if options.prefix_cache_tokens:
        if not options.snapshot_interval:
            raise UsageError("--prefix-cache needs --snapshot-interval")
        extra += acc.prefix_cache_extra(state, options.prefix_cache_tokens, options.snapshot_interval)

    asked = list(options.contexts or default_contexts(max_positions))
    beyond = [S for S in asked if max_positions and S > max_positions]
    if beyond:
        notes.append(f"context(s) {', '.join(map(str, beyond))} exceed max_position_embeddings {max_positions}: "
                     "figures extrapolate the layout")
    contexts = []
    for S in asked:
        per_request = acc.request_bytes(stack, S, p, tp)
        contexts.append(ContextReport(
            tokens=S,
            kv_bytes_per_request=acc.as_number(per_request),
            read_bytes_per_step=acc.as_number(acc.read_bytes(stack, S, p, tp)),
            extra_state_bytes=acc.as_number(extra) if extra else None,
            max_concurrency=acc.max_concurrency(options.budget_bytes, per_request + extra)
            if options.budget_bytes else None,
        ))
    longest = None
    if options.budget_bytes and options.batch:
        longest = acc.max_context(stack, options.budget_bytes, options.batch, p, tp, extra)

    built: dict[tuple, LayerReport] = {}  # identical layers differ only by index: build each once
    layer_reports = []
    for layer in layers:
        key = (layer.kind, tuple(map(id, layer.parts)))
        if key not in built:
            built[key] = _layer_report(layer, p, tp)
        layer_reports.append(built[key].model_copy(update={"index": layer.index}))
    report = Report(
        model=model, source=source, commit=commit,
        model_type=view.model_type, architectures=view.architectures, mapper=mapper, family=family,
        kv_cache_dtype=p.kv, state_dtype=p.state, conv_dtype=p.conv, indexer_dtype=p.indexer,
        tensor_parallel_size=tp,
        alpha_bytes_per_token=acc.as_number(a), gamma_bytes_per_request=acc.as_number(g),
        crossover_tokens=acc.as_number(acc.crossover(a, g)),
        recurrent_state_bytes=acc.as_number(state),
        max_position_embeddings=max_positions,
        budget_bytes=options.budget_bytes, batch=options.batch, max_context_for_batch=longest,
        layers=layer_reports, groups=_groups(layers, layer_reports, p, tp), contexts=contexts,
        transformers_defaults=list(view.defaults_used), notes=notes, warnings=warnings,
    )
    report._layers, report._precision, report._config = list(layers), p, view.text
    return report


def make_options(options: Options | None = None, **knobs: Any) -> Options:
    """``options``, or an ``Options`` built from keyword knobs; bad values are a ``UsageError``."""
    if options is not None and knobs:
        raise UsageError("give either options=Options(...) or keyword options, not both")
    if options is not None:
        return options
    try:
        return Options(**knobs)
    except ValueError as err:  # pydantic's ValidationError: name the field and the problem in one line
        raise UsageError(f"invalid option: {_first_line(err)}") from None


def inspect_config(
    data: Any, *, model: str = "config.json", options: Options | None = None,
    commit: str | None = None, source: str | None = None, **knobs: Any,
) -> Report:
    """Report on a config dict (already loaded). ``knobs``: any ``Options`` field, instead of ``options``.

    Raises ``HfkvError`` subclasses naming ``model`` (``UsageError`` for bad options).
    """
    from hfkv.mappings import resolve  # the mappers import the core, not the other way round
    from hfkv.mappings.common import max_positions

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
    except (ValueError, TypeError) as err:  # pydantic validation of absurd shapes (e.g. zero heads)
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
