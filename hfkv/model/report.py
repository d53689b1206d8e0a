"""From mapped layers to a report: resolve the precision, then ask the accounting core for every figure.

``Report`` is the stable result (its ``to_dict`` is the JSON contract of ``docs/json.md``): a plain
dataclass, as are its rows, because it is built from figures already checked, never from input, and
a report may hold 10⁴ context rows, where a validated model per row would cost more than the figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any

from hfkv.model import accounting as acc
from hfkv.model import dtypes
from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError, UsageError
from hfkv.model.options import DEFAULT_CONTEXTS, Options
from hfkv.model.serving import Serving
from hfkv.model.specs import LayerSpec, Layout
from hfkv.model.weights import estimate_weights

SCHEMA_VERSION = 3  # 1: the JSON before it carried a version; 2: stable nulls, bounded layer lists; 3: weights
# in every report (source metadata / headers / estimate / given, split by role)
MAX_LISTED_LAYERS = 1024  # layers[] and groups[].indices list at most this many (real models: < 200)
Number = int | float

@dataclass
class PartReport:
    kind: str
    copies: int
    entries: str
    entry_bytes: Number
    state_bytes: Number
    params: dict[str, Any]


@dataclass
class LayerReport:
    index: int
    kind: str
    copies: int
    entry_bytes: Number
    state_bytes: Number
    bytes_per_token: Number
    source_layer: int | None = None
    window: int | None = None
    compress_ratio: int | None = None
    parts: list[PartReport] = field(default_factory=list)


@dataclass
class GroupReport:
    kind: str
    layers: int
    indices: list[int]
    copies: int
    entries: str
    entry_bytes: Number
    state_bytes: Number
    equivalent_tokens: Number | None = None


@dataclass(slots=True)
class ContextReport:
    tokens: int
    kv_bytes_per_request: Number
    read_bytes_per_step: Number
    extra_state_bytes: Number | None = None
    max_concurrency: int | None = None


# Sections other steps may add to ``Report.extra``; the JSON carries each, null when absent.
EXTRA_SECTIONS = ("weights", "weights_bytes", "serving", "engine")


@dataclass(eq=False)
class Report:
    """Everything hfkv says about one model. ``to_dict()`` is the stable JSON form (docs/json.md)."""

    model: str
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
    layers: list[LayerReport]
    groups: list[GroupReport]
    contexts: list[ContextReport]
    transformers_defaults: list[str]
    notes: list[str]
    warnings: list[str]
    source: str | None = None
    commit: str | None = None
    num_layers: int | None = None
    budget_bytes: int | None = None
    batch: int | None = None
    max_context_for_batch: int | None = None
    attention_tensor_parallel_size: int | None = None  # the TP one GPU's figures are at (TP / DP under DP attention)
    pipeline_parallel_size: int = 1
    pipeline_stage: int | None = None  # the stage one GPU's figures are of, with PP
    extra: dict[str, Any] = field(default_factory=dict)  # sections added by other tools (weights, engine)

    # What planners (serving, engine modes, plots) need to recompute figures; not serialised.
    _layers: list[LayerSpec] | None = field(default=None, repr=False)
    _precision: dtypes.Precision | None = field(default=None, repr=False)
    _config: dict | None = field(default=None, repr=False)
    _options: Options | None = field(default=None, repr=False)
    _root_config: dict | None = field(default=None, repr=False)
    _weights_estimate: Any = field(default=None, repr=False)

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
    def options(self) -> Options | None:
        """The options the report was built with (``--kv-cache-dtype`` as typed: ``auto`` is not
        ``bf16`` for an engine that turns ``auto`` into fp8); None for a report built by hand."""
        return self._options

    @property
    def serving(self) -> Serving | None:
        """The serving plan (``hfkv.model.serving.Serving``), when the report was planned on GPUs."""
        plan = self.extra.get("serving")
        return Serving.of(plan) if plan else None

    @property
    def engine(self) -> dict | None:
        """The engine mode's own figures (``report.extra["engine"]``), when an engine was asked."""
        return self.extra.get("engine")

    @property
    def root_config(self) -> dict:
        """The whole config.json the report was built from (towers, quantisation; read-only by convention)."""
        return self._root_config if self._root_config is not None else self.config

    @property
    def weights_estimate(self) -> Any:
        """The weights estimated from the config and the mapped layers (``hfkv.model.weights.estimate_weights``:
        a ``WeightsEstimate`` or ``Unknown``), computed on first use."""
        if self._weights_estimate is None:
            self._weights_estimate = estimate_weights(self.root_config, self._layers or None)
        return self._weights_estimate

    @property
    def config(self) -> dict:
        """The text sub-config the report was built from (raw dict; read-only by convention)."""
        if self._config is None:
            self._config = {}
        return self._config

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract: every key always present (null when unknown), in a fixed order."""
        data: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        for name in _REPORT_KEYS:
            data[name] = getattr(self, name)
        data["architectures"] = list(self.architectures)
        data["layers"] = _layer_dicts(self.layers)
        data["groups"] = [_plain(g) for g in self.groups]
        data["contexts"] = [
            {"tokens": c.tokens, "kv_bytes_per_request": c.kv_bytes_per_request,
             "read_bytes_per_step": c.read_bytes_per_step, "extra_state_bytes": c.extra_state_bytes,
             "max_concurrency": c.max_concurrency}
            for c in self.contexts
        ]  # spelled out: a report may hold 10⁴ contexts, and this is ~5× faster than ``_plain``
        for name in ("transformers_defaults", "notes", "warnings"):
            data[name] = list(getattr(self, name))
        for name in EXTRA_SECTIONS:
            data[name] = None
        data.update(_jsonable(self.extra))
        return data


_REPORT_KEYS = (
    "model", "source", "commit", "model_type", "architectures", "mapper", "family", "kv_cache_dtype",
    "state_dtype", "conv_dtype", "indexer_dtype", "tensor_parallel_size", "alpha_bytes_per_token",
    "gamma_bytes_per_request", "crossover_tokens", "recurrent_state_bytes", "max_position_embeddings",
    "num_layers", "budget_bytes", "batch", "max_context_for_batch", "attention_tensor_parallel_size",
    "pipeline_parallel_size", "pipeline_stage",
)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}  # dataclass -> its field names (``fields()`` is slow)


def _plain(obj: Any) -> dict[str, Any]:
    """A flat dataclass as a dict, lists copied (``dataclasses.asdict`` deep-copies: slower)."""
    names = _FIELD_NAMES.get(type(obj))
    if names is None:
        names = _FIELD_NAMES[type(obj)] = tuple(f.name for f in fields(obj))
    return {name: (list(v) if isinstance(v := getattr(obj, name), list) else v) for name in names}


def _layer_dicts(layers: list[LayerReport]) -> list[dict[str, Any]]:
    """``layers[]`` of the JSON. A layer listed at many indices (``_at``: same parts, same figures)
    is converted once; each index gets its own copy of that dict, so no two entries share one."""
    converted: dict[tuple, dict[str, Any]] = {}
    out = []
    for layer in layers:
        data = _plain(layer)
        key = (id(layer.parts), *(v for k, v in data.items() if k not in ("index", "parts")))
        parts = converted.get(key)
        if parts is None:
            parts = converted[key] = [{**_plain(part), "params": dict(part.params)} for part in layer.parts]
        data["parts"] = [{**part, "params": dict(part["params"])} for part in parts]
        out.append(data)
    return out


def _jsonable(value: Any) -> Any:
    """What ``json`` can write, as the JSON had it: tuples as lists, keys as strings, inf/NaN as null."""
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Fraction):
        return acc.as_number(value)
    return value


# -- precision ----------------------------------------------------------------------------------


def model_dtype(view: ConfigView) -> str | None:
    """The checkpoint's dtype as written in the config (``torch_dtype`` or ``dtype``)."""
    for key in ("torch_dtype", "dtype"):
        raw = view.value(key)
        if isinstance(raw, str):
            return dtypes.canonical(raw)
    return None


def kv_declaration(view: ConfigView) -> dtypes.KvDeclaration:
    """The KV-cache quantisation the config declares (``dtypes.kv_cache_declaration``): ``quantization_config``
    from the root, and a root ``kv_cache_dtype``."""
    return dtypes.kv_cache_declaration(view.value("quantization_config", root=True),
                                       view.value("kv_cache_dtype", root=True))


def declared_kv_dtype(view: ConfigView) -> str | None:
    """fp8 (or fp4) when ``quantization_config`` declares a quantised KV cache hfkv understands, else None."""
    return kv_declaration(view).dtype


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
        declaration = kv_declaration(view)
        if declaration.dtype:
            kv = declaration.dtype
            notes.append(f"quantization_config declares an {declaration.dtype} KV cache")
        else:
            kv = serving
        for unknown in declaration.unknown:
            warnings.append(f"estimate, not exact: {unknown} declares a KV-cache quantisation hfkv does not "
                            f"understand: the figures assume {kv} KV entries (--kv-cache-dtype chooses)")
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


def _at(rep: LayerReport, index: int) -> LayerReport:
    """``rep`` listed at another index: a shallow copy, as ``dataclasses.replace`` makes, without
    re-running ``__init__`` (a deep model lists thousands of copies of a few distinct layers)."""
    copy = object.__new__(LayerReport)
    copy.__dict__.update(rep.__dict__, index=index)
    return copy


def _group_key(rep: LayerReport) -> tuple:
    """Layers with the same label and the same storage figures are one group."""
    return (rep.kind, rep.copies, rep.entry_bytes, rep.state_bytes, " + ".join(pr.entries for pr in rep.parts))


def _layer_tables(layers: list[LayerSpec], p: dtypes.Precision, tp: int) -> tuple[list[LayerReport], list[GroupReport]]:
    """``layers[]`` (the first ``MAX_LISTED_LAYERS``) and ``groups[]``, in order of first appearance.

    Each distinct layer (label and part values) is reported once and copied per index, so the cost
    follows the distinct storages, and the listed output stays bounded whatever depth a config claims.
    """
    built: dict[tuple, tuple[LayerReport, tuple]] = {}  # (label, part ids) -> (report, group key)
    grouped: dict[tuple, tuple[LayerReport, list[int], list[int]]] = {}  # key -> (first, indices, count)
    listed: list[LayerReport] = []
    for layer in layers:
        key = (layer.kind, *map(id, layer.parts))  # the layers hold the parts: ids stay valid here
        found = built.get(key)
        if found is None:
            rep = _layer_report(layer, p, tp)
            found = built[key] = (rep, _group_key(rep))
        rep = found[0]
        first, indices, n = grouped.setdefault(found[1], (rep, [], [0]))
        n[0] += 1
        if len(indices) < MAX_LISTED_LAYERS:
            indices.append(layer.index)
        if len(listed) < MAX_LISTED_LAYERS:
            listed.append(rep if rep.index == layer.index else _at(rep, layer.index))
    full_entry = next((layer.slope(p, tp) for layer in layers if layer.slope(p, tp) and layer.copies), None)
    groups = []
    for first, indices, n in grouped.values():
        state = first.state_bytes
        eq = acc.equivalent_tokens(Fraction(state), full_entry) if state and full_entry else None
        groups.append(GroupReport(
            kind=first.kind, layers=n[0], indices=indices, copies=first.copies, entries=_group_key(first)[4],
            entry_bytes=first.entry_bytes, state_bytes=state, equivalent_tokens=acc.as_number(eq),
        ))
    return listed, groups


def _tp_warnings(layers: acc.Grouped, tp: int) -> list[str]:
    """Engines shard KV heads only when TP divides them or they divide TP; say so otherwise."""
    heads = sorted({p.kv_heads for layer, _ in layers for p in layer.parts if "kv_heads" in type(p).model_fields})
    odd = [k for k in heads if k % tp and tp % k]
    if not odd:
        return []
    listed = ", ".join(str(k) for k in odd)
    return [f"TP {tp} and {listed} KV heads do not divide one another: engines refuse this layout; "
            f"figures assume max(1, K // TP) heads per GPU"]


def _context_rows(costs: acc.Costs, asked: list[int], extra: Fraction, budget: int | None) -> list[ContextReport]:
    """One row per context: M(S), r(S), the extra state copies and B_max, from terms computed once."""
    shown_extra = acc.as_number(extra) if extra else None
    memory, read, number = costs.memory_at(asked), costs.read_at(asked), acc.as_number
    fits = [acc.max_concurrency(budget, m + extra) for m in memory] if budget else [None] * len(asked)
    return [ContextReport(S, number(m), number(r), shown_extra, b) for S, m, r, b in zip(asked, memory, read, fits)]


# Geometry far past any released model: a figure built on it is printed, but flagged, never silently
# exact. Widths: head, latent, RoPE, state and indexer dims (real: at most 512 for attention, 256 for
# states); counts: heads and channels (real: at most ~16K Mamba-1 channels); bytes per token per GPU.
PLAUSIBLE_WIDTH = 4096
PLAUSIBLE_COUNT = 1 << 17
PLAUSIBLE_BYTES_PER_TOKEN = 64 << 20
_WIDTH_FIELDS = ("head_dim", "v_head_dim", "kv_lora_rank", "rope_dim", "head_k_dim", "head_v_dim", "state_size")
_COUNT_FIELDS = ("kv_heads", "num_heads", "num_v_heads", "num_qk_heads", "n_groups", "dim")


def plausibility_warnings(layers: acc.Layers, view: ConfigView, alpha: Any) -> list[str]:
    """Warnings for geometry no real model has: absurd widths or counts, bytes per token past any
    model, and KV heads that cannot serve the config's query heads (GQA needs H_q = k·K).

    Family-blind: it reads only the parts' shape fields and the standard ``num_attention_heads``.
    """
    odd: dict[str, int] = {}
    kv_heads: set[int] = set()
    for layer, _ in acc.group(layers):
        for part in layer.parts:
            fields = type(part).model_fields  # asked first: a missing attribute is slow on a model
            for name in _WIDTH_FIELDS + _COUNT_FIELDS:
                value = getattr(part, name) if name in fields else None
                limit = PLAUSIBLE_WIDTH if name in _WIDTH_FIELDS else PLAUSIBLE_COUNT
                if isinstance(value, int) and value > limit and value > odd.get(name, 0):
                    odd[name] = value
            if "kv_heads" in fields and "encoder_tokens" not in fields:
                kv_heads.add(part.kv_heads)
    warnings = [f"implausible {name} = {value:,} (no released model exceeds "
                f"{PLAUSIBLE_WIDTH if name in _WIDTH_FIELDS else PLAUSIBLE_COUNT:,}): figures follow the config as written"
                for name, value in odd.items()]
    if alpha > PLAUSIBLE_BYTES_PER_TOKEN:
        warnings.append(f"implausible α = {acc.as_number(alpha):,} B per token (over "
                        f"{PLAUSIBLE_BYTES_PER_TOKEN >> 20} MiB): check the config's sizes")
    query = view.value("num_attention_heads")
    if isinstance(query, int) and not isinstance(query, bool) and query > 0:
        bad = sorted(k for k in kv_heads if k > query or query % k)
        if bad:
            warnings.append(f"{', '.join(map(str, bad))} KV heads do not divide num_attention_heads = {query}: "
                            "grouped-query attention needs query heads = k × KV heads; check the config")
    return warnings


def per_gpu_scope(options: Options, pp: int, stage: int, layers: int) -> str:
    """The sentence that says which GPU the figures are of, when the layout is more than TP."""
    parts = []
    if options.attention_tensor_parallel_size != options.tensor_parallel_size:
        parts.append(f"attention TP {options.attention_tensor_parallel_size} (TP {options.tensor_parallel_size} with "
                     f"DP attention {options.data_parallel_size}: each attention rank keeps its own requests' KV)")
    if pp > 1:
        parts.append(f"pipeline stage {stage} of {pp}, the fullest ({layers} layers)")
    return "bytes per GPU of one rank: " + ", ".join(parts)


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
    model_layers = layout.layers
    if not model_layers:
        raise ConfigError(None, "the mapper found no decoder layers")
    # Every figure is one GPU's: at attention TP, of the fullest pipeline stage (the whole model at TP
    # when the layout shards neither); the report keeps the whole model for the engine modes.
    tp = options.attention_tensor_parallel_size
    pp = min(options.pipeline_parallel_size, len(model_layers))
    stage, layers = acc.fullest_stage(model_layers, pp, p, tp) if pp > 1 else (0, list(model_layers))
    if pp > 1 or tp != options.tensor_parallel_size:
        notes.append(per_gpu_scope(options, pp, stage, len(layers)))

    stack = acc.group(layers)  # every figure below sums over the distinct storages, counted once
    warnings += _tp_warnings(stack, tp)
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
    contexts = _context_rows(acc.costs(stack, p, tp), asked, extra, options.budget_bytes)
    longest = None
    if options.budget_bytes and options.batch:
        longest = acc.max_context(stack, options.budget_bytes, options.batch, p, tp, extra)

    layer_reports, groups = _layer_tables(layers, p, tp)
    if len(layers) > MAX_LISTED_LAYERS:
        notes.append(f"{len(layers):,} layers: layers[] lists the first {MAX_LISTED_LAYERS:,} and each group's "
                     f"indices its first {MAX_LISTED_LAYERS:,}; the counts and every figure cover all layers")
    warnings += plausibility_warnings(stack, view, a)
    report = Report(
        model=model, source=source, commit=commit,
        model_type=view.model_type, architectures=view.architectures, mapper=mapper, family=family,
        kv_cache_dtype=p.kv, state_dtype=p.state, conv_dtype=p.conv, indexer_dtype=p.indexer,
        tensor_parallel_size=options.tensor_parallel_size, attention_tensor_parallel_size=tp,
        pipeline_parallel_size=pp, pipeline_stage=stage if pp > 1 else None,
        alpha_bytes_per_token=acc.as_number(a), gamma_bytes_per_request=acc.as_number(g),
        crossover_tokens=acc.as_number(acc.crossover(a, g)),
        recurrent_state_bytes=acc.as_number(state),
        max_position_embeddings=max_positions, num_layers=len(model_layers),
        budget_bytes=options.budget_bytes, batch=options.batch, max_context_for_batch=longest,
        layers=layer_reports, groups=groups, contexts=contexts,
        transformers_defaults=list(view.defaults_used), notes=notes, warnings=warnings,
    )
    report._layers, report._precision, report._config, report._options = list(model_layers), p, view.text, options
    report._root_config = view.root
    return report


