"""vLLM 0.33.0's Transformers modeling backend: which models it serves, its refusals, and the KV-cache
specs its attention layers get.

Read from vLLM's ``model_executor/models/registry.py`` (``inspect_model_cls``, ``_try_resolve_transformers``)
and ``model_executor/models/transformers/base.py`` (``Base._create_attention_instances``). With the
default ``--model-impl auto`` vLLM serves an architecture through the backend when

- the registry names the backend for it (``_TRANSFORMERS_SUPPORTED_MODELS``: OLMo 1-3, Phi, GPT-NeoX, …), or
- no architecture of the config is registered at all, and transformers exports a class of the first
  one's name whose ``is_backend_compatible()`` or ``_can_set_attn_implementation()`` holds (this runs
  before the "supported until v…" refusal, so MiniMax-Text-01 and Bamba reach the backend).

The backend then builds one vLLM ``Attention`` per decoder layer, with the model's head size and KV
heads (``max(1, K // TP)``); a layer whose ``layer_types`` entry is ``sliding_attention`` gets the
config's ``sliding_window``; other layers get the model-wide window only when ``layer_types`` is absent
or all sliding (``EngineArgs.create_engine_config``). Anything else in a layer (convolution or recurrent
state) gets no cache; a layer that computes no attention makes vLLM refuse to start.

``served(report, native)``: the backend class vLLM picks, or None; ``refusal(report, config)``: vLLM's
(or hfkv's "not modelled") reason for a served model, or None; ``layer_windows(report, config)``: per
decoder layer, the attention part and the window of its vLLM ``Attention`` (``startup`` builds the specs).
``config`` is the text config as vLLM reads it (class defaults filled in, ``models.full_text_config``).
"""

from __future__ import annotations

from typing import Any, Collection

from hfkv.errors import UnsupportedModelError
from hfkv.model.specs import ChunkedLocal, FullAttention, SlidingWindow

from hfkv.engines.layout import expert_count
from hfkv.engines.contract import EngineInput
from hfkv.engines.vllm import facts as vllm_facts

ATTENTION_PARTS = (FullAttention, SlidingWindow, ChunkedLocal)  # what the backend's vLLM Attention replaces
# Base.__init__: the quantization methods the backend refuses.
REFUSED_QUANT = frozenset({"mxfp4", "gpt_oss_mxfp4"})
SLIDING = "sliding_attention"
UNMODELLED_ATTENTION = frozenset({"mla", "indexer", "cross"})  # attention the backend builds otherwise


def served(report: EngineInput, native: Collection[str], config: dict | None = None) -> str | None:
    """The backend class ``inspect_model_cls`` resolves (model_impl auto), or None when a vLLM class of
    its own serves the model (``native``: vLLM's registered architectures) or nothing does: the class
    registry.py names for an architecture, else, for a first architecture transformers' fallback takes
    (``OtherArchFacts.transformers_backend``), the backend class of its kind. ``config`` (default: the
    raw text config) only decides the class's MoE name."""
    archs = list(report.architectures or [])
    if not archs or any(a in native for a in archs):
        return None
    routes = {a: vllm_facts.other_facts(a) for a in archs}
    registered = next((f.backend_class for f in routes.values() if f is not None and f.backend_class), None)
    if registered:
        return registered
    first = routes[archs[0]]
    if first is not None and first.transformers_backend == "fallback":
        # _try_resolve_transformers(architectures[0]), then _get_transformers_backend_cls
        moe = "MoE" if expert_count(config if config is not None else report.config or {}) else ""
        return f"Transformers{'MultiModal' if multimodal(report) else ''}{moe}ForCausalLM"
    return None


def multimodal(report: EngineInput) -> bool:
    """``hf_config is not hf_text_config``: the report's text sub-config is not the config itself."""
    text_type = (report.config or {}).get("model_type")
    return bool(text_type) and text_type != report.model_type


def refusal(report: EngineInput, config: dict, backend_class: str) -> str | None:
    """For a model the backend serves (as ``backend_class``): vLLM's reason not to start (its message),
    or None; raises ``UnsupportedModelError`` for what hfkv does not replay (no figure rather than a guess)."""
    if multimodal(report) or "MultiModal" in backend_class:
        not_modelled(f"the multimodal backend ({backend_class}), its processors and towers")
    method = str((config.get("quantization_config") or {}).get("quant_method") or "").lower()
    if method in REFUSED_QUANT:
        return "Transformers modeling backend does not support MXFP4 quantization yet."
    return _layer_refusal(report, config) or _geometry_refusal(report)


def _layer_refusal(report: EngineInput, config: dict) -> str | None:
    """_create_attention_instances: every decoder layer must dispatch one attention module; MLA (an
    ``MLAAttention`` only when ``MLAFuser`` matches, else padded full attention) is not replayed."""
    types = layer_types(config)
    unmodelled: set[str] = set()
    for index, layer in enumerate(report.layer_specs):
        other_attention = {p.kind for p in layer.parts} & UNMODELLED_ATTENTION
        unmodelled |= other_attention
        count = sum(isinstance(p, ATTENTION_PARTS) for p in layer.parts)
        if count == 0 and not other_attention:
            named = f"{index} ({types[index]})" if types and index < len(types) else str(index)
            return (f"Layer {named} does not dispatch through the Transformers attention interface and vLLM has "
                    "no other way to handle it.")
        if count > 1:
            not_modelled(f"a layer with {count} attention parts (layer {index})")
    if unmodelled:
        not_modelled(f"{'/'.join(sorted(unmodelled))} layers")
    return None


def _geometry_refusal(report: EngineInput) -> None:
    """The backend gives every layer the model-wide head size and KV heads, and V heads as wide as K."""
    shapes = {(p.kv_heads, p.head_dim, p.v_head_dim in (None, p.head_dim)) for p in attention_parts(report)}
    if len(shapes) > 1 or any(not same_v for _, _, same_v in shapes):
        not_modelled("per-layer or K/V-asymmetric head geometry (it gives every layer one head size and KV "
                     "head count)")
    return None


def not_modelled(what: str) -> None:
    """hfkv's own refusal: vLLM may well start, but this path of its backend is not replayed."""
    raise UnsupportedModelError(f"vLLM serves this model through its Transformers modeling backend; "
                                f"hfkv's vLLM mode does not model {what} there: no figure")


def attention_parts(report: EngineInput) -> list[Any]:
    """The one attention part of each decoder layer (``refusal`` has checked there is exactly one)."""
    return [next(p for p in layer.parts if isinstance(p, ATTENTION_PARTS)) for layer in report.layer_specs]


def layer_types(config: dict) -> list[str] | None:
    """``text_config.layer_types`` as vLLM reads the transformers config object: the config's list, or
    (BambaConfig: ``attribute_map`` sends it to the ``layers_block_type`` property) the list that
    property computes from ``attn_layer_indices``."""
    types = config.get("layer_types")
    if isinstance(types, list):
        return [str(t) for t in types]
    if "attn_layer_indices" in config and isinstance(config.get("num_hidden_layers"), int):
        indices = set(config.get("attn_layer_indices") or [])
        return ["full_attention" if i in indices else "linear_attention" for i in range(config["num_hidden_layers"])]
    return None


def layer_windows(report: EngineInput, config: dict) -> list[tuple[Any, int | None]]:
    """Per decoder layer: its attention part and the window its vLLM ``Attention`` gets (None: full).

    ``per_layer_sliding_window`` = ``sliding_window`` on ``sliding_attention`` layers; otherwise the
    cache config's window, which is the model's only when ``layer_types`` is absent or all sliding.
    A window of 0 is no window (``ModelConfig``: ``disable_sliding_window``).
    """
    window = config.get("sliding_window") or None
    types = layer_types(config)
    model_wide = window if types is None or all(t == SLIDING for t in types) else None
    out = []
    for index, part in enumerate(attention_parts(report)):
        per_layer = window if types and index < len(types) and types[index] == SLIDING else None
        out.append((part, per_layer if per_layer is not None else model_wide))
    return out


def window_disagreements(report: EngineInput, config: dict) -> list[int]:
    """Layers where hfkv's mapping and vLLM's reading of the config disagree on a window (e.g. a config
    class that maps ``sliding_window`` to another key): vLLM's reading is used, and the caller warns."""
    def mapped_window(part: Any) -> bool:
        return isinstance(part, (SlidingWindow, ChunkedLocal)) or getattr(part, "declared_window", None) is not None

    return [index for index, (part, window) in enumerate(layer_windows(report, config))
            if mapped_window(part) != (window is not None)]


def ignored_parts(report: EngineInput) -> int:
    """Parts of attention layers the backend allocates nothing for (convolution / recurrent state)."""
    return sum(1 for layer in report.layer_specs for p in layer.parts if not isinstance(p, ATTENTION_PARTS))
