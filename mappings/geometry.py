"""Sliding/local hybrids whose layer types have their own geometry: MiMo-V2, Step-3.5/3.7, Llama 4, Dots3.

- MiMo-V2 (``mimo_v2_flash``, ``mimo_v2``): ``hybrid_layer_pattern`` (1 = SWA, 0 = full; 0-based), else
  ``layer_types``, else transformers' default (full iff i == 0 or (i + 1) % 6 == 0). Full layers use
  ``num_key_value_heads``, ``head_dim`` (K, 192) and ``v_head_dim`` (V, 128); SWA layers
  ``swa_num_key_value_heads``, ``swa_head_dim`` and ``swa_v_head_dim`` (each defaulting to the full
  layers' value). W = ``sliding_window_size`` (what the engines use); a config with only
  ``sliding_window`` is the transformers form, which stores size + 1 (default 129) and is used as is.
- Step-3.5 / Step-3.7 (``step3p5``, ``step3p7``): ``layer_types`` (with the MTP layers' entries
  appended: cut to ``num_hidden_layers``); KV heads ``num_attention_groups``. Layers of
  ``attention_other_setting.attention_type`` (default ``sliding_attention``) take that dict's
  ``num_attention_groups`` / ``head_dim``; ``num_sliding_attention_heads`` changes only query heads.
- Llama 4 (``llama4``, ``llama4_text``): chunked local attention on RoPE layers, a global NoPE layer
  where ``no_rope_layers[i] == 0`` (transformers' default: every ``no_rope_layer_interval`` = 4th layer,
  (i + 1) % 4 == 0). Chunked layers are ``ChunkedLocal(chunk=attention_chunk_size)`` (default 8192).
- Dots3 (``dots3_note``, ``dots3_note_text``): MLA everywhere; ``indexed_attention`` layers add DSA
  indexer keys; ``sliding_attention`` layers keep an MLA latent of ``swa_kv_lora_rank`` +
  ``swa_qk_rope_head_dim`` over a window. Default pattern: full iff i < 2 or i % 4 == 1.
"""

from __future__ import annotations

from hfkv.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.specs import ChunkedLocal, FullAttention, LayerSpec, Layout, MLALatent, SlidingWindow

from .common import (
    attention_shape,
    dsa_indexer,
    effective_window,
    is_sliding_type,
    layer_types,
    mla_latent,
    mtp_note,
    num_layers,
)
from .registry import register

Part = FullAttention | SlidingWindow | ChunkedLocal


def _heads_part(kv: int, key_dim: int, value_dim: int, *, window: int | None = None, chunk: int | None = None) -> Part:
    shape = dict(kv_heads=kv, head_dim=key_dim, v_head_dim=None if value_dim == key_dim else value_dim)
    if chunk is not None:
        return ChunkedLocal(chunk=chunk, **shape)
    if window is not None:
        return SlidingWindow(window=window, **shape)
    return FullAttention(**shape)


def _layers(flags: list[bool], local: Part, full: Part) -> list[LayerSpec]:
    """Layer i gets ``local`` when ``flags[i]``, else ``full``."""
    return [
        LayerSpec(index=i, kind=(local if is_local else full).kind, parts=(local if is_local else full,))
        for i, is_local in enumerate(flags)
    ]


def per_layer_override(cfg: ConfigView, i: int) -> dict:
    """Layer i's entry of ``per_layer_config`` (transformers 5.24's saved form of per-type geometry), or {}.

    transformers folds keys such as Gemma 4's ``global_head_dim`` or Dots3's ``swa_kv_lora_rank`` into
    ``{"<layer index>": {"head_dim": ..., "num_key_value_heads": ...}}`` when it saves a config.
    """
    table = cfg.value("per_layer_config")
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise ConfigError(cfg.path("per_layer_config"), f"expected an object, got {type(table).__name__}")
    entry = table.get(str(i), table.get(i))
    if entry is None:
        return {}
    if not isinstance(entry, dict):
        raise ConfigError(cfg.path(f"per_layer_config.{i}"), f"expected an object, got {type(entry).__name__}")
    for key, value in entry.items():
        if key in _OVERRIDE_SIZES and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ConfigError(
                cfg.path(f"per_layer_config.{i}.{key}"), f"expected a non-negative integer, got {value!r}"
            )
    return entry


_OVERRIDE_SIZES = frozenset({"head_dim", "num_key_value_heads", "kv_lora_rank", "qk_rope_head_dim"})


def _cut_note(cfg: ConfigView, key: str, n: int) -> list[str]:
    """A note when a per-layer list carries entries past the target layers (MTP layers)."""
    raw = cfg.value(key)
    if isinstance(raw, list) and len(raw) > n:
        extra = len(raw) - n
        entries = "entry" if extra == 1 else "entries"
        return [f"{key} lists {extra} {entries} past num_hidden_layers {n} (MTP layers): left out"]
    return []


# -- MiMo-V2 ------------------------------------------------------------------------------------


def _mimo_flags(cfg: ConfigView, n: int, notes: list[str]) -> list[bool]:
    """Per layer, True when SWA."""
    pattern = cfg.int_list("hybrid_layer_pattern", length=n)
    if pattern is not None:
        notes.extend(_cut_note(cfg, "hybrid_layer_pattern", n))
        for i, value in enumerate(pattern):
            if value not in (0, 1):
                raise ConfigError(cfg.path(f"hybrid_layer_pattern[{i}]"), f"expected 0 (full) or 1 (SWA), got {value}")
        return [value == 1 for value in pattern]
    types = layer_types(cfg, n)
    if types is not None:
        return [is_sliding_type(name, cfg) for name in types]
    notes.append("no hybrid_layer_pattern or layer_types: full iff i == 0 or (i + 1) % 6 == 0 (transformers default)")
    return [not (i == 0 or (i + 1) % 6 == 0) for i in range(n)]


def _mimo_window(cfg: ConfigView, notes: list[str]) -> int | None:
    window = cfg.optional_int("sliding_window_size")
    if window is None:
        window = cfg.optional_int("sliding_window", defaults=True)
        if window is not None:
            notes.append(
                f"no sliding_window_size: sliding_window {window} used as W (transformers stores size + 1)"
            )
    return effective_window(cfg, window or None, notes)


@register(
    family="sliding-geometry",
    model_types=("mimo_v2_flash", "mimo_v2"),
    architectures=("MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM"),
    reads=("num_hidden_layers", "hybrid_layer_pattern", "layer_types", "num_key_value_heads", "head_dim",
           "v_head_dim", "swa_num_key_value_heads", "swa_head_dim", "swa_v_head_dim", "sliding_window_size",
           "sliding_window", "num_nextn_predict_layers"),
    fixtures={"mimo_v2_flash": "XiaomiMiMo__MiMo-V2-Flash-transformers-defaults"},
)
def mimo_v2(cfg: ConfigView) -> Layout:
    """Full layers (K, V heads of their own widths) and SWA layers with their own KV heads and dims."""
    notes: list[str] = []
    n = num_layers(cfg)
    heads, kv, key_dim = attention_shape(cfg, head_dim_defaults=True)
    value_dim = cfg.optional_int("v_head_dim", defaults=True) or key_dim
    swa_kv = cfg.optional_int("swa_num_key_value_heads", minimum=1) or kv
    swa_key = cfg.optional_int("swa_head_dim", minimum=1) or key_dim
    swa_value = cfg.optional_int("swa_v_head_dim", minimum=1) or value_dim
    cfg.mark("swa_num_attention_heads")
    flags = _mimo_flags(cfg, n, notes)
    window = _mimo_window(cfg, notes)
    full = _heads_part(kv, key_dim, value_dim)
    local = _heads_part(swa_kv, swa_key, swa_value, window=window) if window else full
    return Layout(layers=_layers(flags, local, full), notes=notes + mtp_note(cfg))


# -- Step-3.5 / 3.7 -----------------------------------------------------------------------------


def _step_other(cfg: ConfigView) -> tuple[str, dict]:
    other = cfg.value("attention_other_setting")
    if other is None:
        return "sliding_attention", {}
    if not isinstance(other, dict):
        raise ConfigError(cfg.path("attention_other_setting"), f"expected an object, got {type(other).__name__}")
    kind = other.get("attention_type", "sliding_attention")
    return kind, other


def _positive(cfg: ConfigView, key: str, raw, fallback: int) -> int:
    if raw is None:
        return fallback
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise ConfigError(cfg.path(key), f"expected a positive integer, got {raw!r}")
    return raw


@register(
    family="sliding-geometry",
    model_types=("step3p5", "step3p7"),
    architectures=("Step3p5ForCausalLM", "Step3p7ForConditionalGeneration"),
    reads=("num_hidden_layers", "layer_types", "num_attention_heads", "num_attention_groups", "head_dim",
           "attention_other_setting", "num_sliding_attention_heads", "sliding_window", "num_nextn_predict_layers"),
    fixtures={"step3p7": "stepfun-ai__Step-3.7-Flash-transformers-defaults"},
)
def step3p5(cfg: ConfigView) -> Layout:
    """Full and sliding layers; the sliding type's KV heads and head dim come from ``attention_other_setting``."""
    notes: list[str] = []
    n = num_layers(cfg)
    heads, kv, key_dim = attention_shape(cfg)
    other_type, other = _step_other(cfg)
    types = layer_types(cfg, n)
    if types is None:
        notes.append("no layer_types: every layer is full attention (transformers default)")
        types = ["full_attention"] * n
    else:
        notes.extend(_cut_note(cfg, "layer_types", n))
    sliding = [is_sliding_type(name, cfg) for name in types]
    window = cfg.optional_int("sliding_window")
    if any(sliding) and not window:
        raise ConfigError(cfg.path("sliding_window"), "missing, but layer_types has sliding layers")
    window = effective_window(cfg, window, notes)
    cfg.mark("num_sliding_attention_heads")  # query heads only: no effect on the cache
    other_kv = _positive(cfg, "attention_other_setting.num_attention_groups", other.get("num_attention_groups"), kv)
    other_dim = _positive(cfg, "attention_other_setting.head_dim", other.get("head_dim"), key_dim)
    layers = []
    for i, name in enumerate(types):
        # attention_other_setting reshapes the layers of its attention_type; the type decides the window.
        layer_kv, layer_dim = (other_kv, other_dim) if name == other_type else (kv, key_dim)
        part = _heads_part(layer_kv, layer_dim, layer_dim, window=window if sliding[i] else None)
        layers.append(LayerSpec(index=i, kind=part.kind, parts=(part,)))
    return Layout(layers=layers, notes=notes + mtp_note(cfg))


# -- Llama 4 ------------------------------------------------------------------------------------


def _llama4_chunk(cfg: ConfigView) -> int | None:
    """``attention_chunk_size``; an explicit null turns chunking off, a missing key means 8192."""
    if "attention_chunk_size" in cfg.text and cfg.text["attention_chunk_size"] is None:
        cfg.mark("attention_chunk_size")
        return None
    return cfg.optional_int("attention_chunk_size", minimum=1, defaults=True) or None


def _llama4_flags(cfg: ConfigView, n: int, notes: list[str]) -> list[bool]:
    """Per layer, True when chunked (RoPE) and False when global (NoPE)."""
    types = cfg.str_list("layer_types", length=n)
    if types is not None:
        for i, name in enumerate(types):
            if name not in ("chunked_attention", "full_attention"):
                raise ConfigError(cfg.path(f"layer_types[{i}]"), f"unknown Llama 4 layer type {name!r}")
        return [name == "chunked_attention" for name in types]
    if cfg.value("no_rope_layers") != []:  # transformers treats an empty list as absent
        no_rope = cfg.int_list("no_rope_layers", length=n)
        if no_rope is not None:
            return [value != 0 for value in no_rope]
    interval = cfg.integer("no_rope_layer_interval", default=4, minimum=1)
    notes.append(f"no no_rope_layers: a global NoPE layer every {interval} layers, (i + 1) % {interval} == 0")
    return [(i + 1) % interval != 0 for i in range(n)]


@register(
    family="chunked",
    model_types=("llama4", "llama4_text"),
    architectures=("Llama4ForConditionalGeneration", "Llama4ForCausalLM"),
    reads=("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "attention_chunk_size",
           "no_rope_layers", "no_rope_layer_interval", "layer_types"),
    fixtures={"llama4": "meta-llama__Llama-4-Scout-17B-16E-transformers-defaults"},
)
def llama4(cfg: ConfigView) -> Layout:
    """Chunked local layers keep one chunk; global NoPE layers keep the whole context."""
    notes: list[str] = []
    n = num_layers(cfg)
    heads, kv, key_dim = attention_shape(cfg, head_dim_defaults=True)
    chunk = _llama4_chunk(cfg)
    flags = _llama4_flags(cfg, n, notes)
    full = _heads_part(kv, key_dim, key_dim)
    if chunk is None:
        notes.append("attention_chunk_size is null: every layer is global attention")
        flags = [False] * n
    local = _heads_part(kv, key_dim, key_dim, chunk=chunk) if chunk else full
    notes.append(
        "chunked layers are counted as one chunk per request (SGLang: a window of the chunk size); "
        "vLLM by default allocates them as full attention"
    )
    return Layout(layers=_layers(flags, local, full), notes=notes)


# -- Dots3 --------------------------------------------------------------------------------------

_DOTS3_TYPES = ("full_attention", "indexed_attention", "sliding_attention")


def _dots3_types(cfg: ConfigView, n: int, notes: list[str]) -> list[str]:
    types = layer_types(cfg, n)
    if types is None:
        full = "full_attention" if cfg.value("use_dsa") is False else "indexed_attention"
        slide = cfg.boolean("use_sliding_window", default=True)
        notes.append("no layer_types: full iff i < 2 or i % 4 == 1, sliding otherwise (transformers default)")
        return [full if not slide or i < 2 or i % 4 == 1 else "sliding_attention" for i in range(n)]
    for i, name in enumerate(types):
        if name not in _DOTS3_TYPES:
            raise ConfigError(cfg.path(f"layer_types[{i}]"), f"unknown Dots3 layer type {name!r}")
    return types


@register(
    family="mla-sliding",
    model_types=("dots3_note", "dots3_note_text"),
    architectures=("Dots3NoteForCausalLM",),
    reads=("num_hidden_layers", "layer_types", "kv_lora_rank", "qk_rope_head_dim", "swa_kv_lora_rank",
           "swa_qk_rope_head_dim", "swa_head_dim", "swa_qk_nope_head_dim", "sliding_window", "sliding_window_size",
           "index_head_dim", "index_topk", "use_dsa", "use_sliding_window", "per_layer_config",
           "num_nextn_predict_layers"),
    fixtures={"dots3_note": "dots-studio__dots3-note-prev-transformers-defaults"},
)
def dots3_note(cfg: ConfigView) -> Layout:
    """MLA full/indexed layers (indexed ones add indexer keys) and MLA-SWA layers with their own latent."""
    notes: list[str] = []
    n = num_layers(cfg)
    types = _dots3_types(cfg, n, notes)
    topk = cfg.optional_int("index_topk", minimum=1, defaults=True)
    plain = mla_latent(cfg)
    indexed = (mla_latent(cfg, topk=topk), dsa_indexer(cfg))
    window = cfg.optional_int("sliding_window", "sliding_window_size") or 512  # transformers default
    window = effective_window(cfg, window, notes)
    # transformers' SWA defaults: kv_lora_rank 1024, head_dim 256 − qk_nope_head_dim 192 = 64 RoPE dims.
    swa_rank = cfg.integer("swa_kv_lora_rank", default=1024, minimum=1)
    swa_rope = cfg.optional_int("swa_qk_rope_head_dim")
    if swa_rope is None:
        swa_rope = cfg.integer("swa_head_dim", default=256) - cfg.integer("swa_qk_nope_head_dim", default=192)
    local = MLALatent(kv_lora_rank=swa_rank, rope_dim=swa_rope, window=window)
    first_swa = next((i for i, name in enumerate(types) if name == "sliding_attention"), None)
    override = per_layer_override(cfg, first_swa) if first_swa is not None else {}
    if override:  # a config saved by transformers: the SWA geometry lives in per_layer_config
        local = MLALatent(
            kv_lora_rank=override.get("kv_lora_rank", swa_rank),
            rope_dim=override.get("qk_rope_head_dim", swa_rope),
            window=window,
        )
    cfg.mark("swa_num_attention_heads", "swa_num_key_value_heads", "swa_q_lora_rank", "swa_v_head_dim",
             "index_n_heads", "is_hybrid_swa")
    layers = []
    for i, name in enumerate(types):
        if name == "sliding_attention":
            layers.append(LayerSpec(index=i, kind="mla-swa", parts=(local,)))
        elif name == "indexed_attention":
            layers.append(LayerSpec(index=i, kind="dsa", parts=indexed))
        else:
            layers.append(LayerSpec(index=i, kind="mla", parts=(plain,)))
    return Layout(layers=layers, notes=notes + mtp_note(cfg))
