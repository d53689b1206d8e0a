"""Layouts that no generic reader gets right: each family here needs its own reading of config.json.

- MiniMax-M3 sparse attention (MSA): every layer keeps its main KV; sparse layers add an index cache.
- LongCat-Flash: two MLA sub-layers per decoder layer (optionally with a DSA indexer).
- Looped models (IQuest LoopCoder, Nanbeige): each loop pass keeps its own KV, so the layers repeat.
- Nemotron-NAS (DeciLM): per-layer GQA from ``block_configs`` and attention-free (no-op) layers.
- Llama 3.2 Vision (mllama): cross-attention layers inside ``num_hidden_layers``.

Every convention that is a choice (not a fact of the config) is stated in the mapper's docstring and
repeated in the report's notes.
"""

from __future__ import annotations

from typing import Callable

from hfkv.config import MAX_LAYERS, MAX_SIZE, ConfigView
from hfkv.errors import ConfigError
from hfkv.specs import CachePart, FullAttention, LayerSpec, Layout, SlidingWindow

from .common import (
    attention_part,
    dsa_indexer,
    head_dim,
    mla_latent,
    mtp_note,
    num_heads,
    num_layers,
    pattern_layout,
)
from .mla import dsa_skips_indexer
from .registry import register

# -- shared helpers ---------------------------------------------------------------------------


def _flag_list(cfg: ConfigView, key: str, n: int, default: bool) -> list[bool]:
    """A per-layer 0/1 (or true/false) list cut to n layers; a scalar applies to every layer.

    Values other than 0 count as set (MiniMax writes frequencies, where any nonzero entry means "on").
    """
    raw = cfg.value(key)
    if raw is None:
        return [default] * n
    if isinstance(raw, (bool, int)):
        if not isinstance(raw, bool) and raw < 0:
            raise ConfigError(cfg.path(key), f"expected 0/1 or a per-layer list, got {raw!r}")
        return [bool(raw)] * n
    if not isinstance(raw, list):
        raise ConfigError(cfg.path(key), f"expected a per-layer list, got {type(raw).__name__}")
    if len(raw) < n:
        raise ConfigError(cfg.path(key), f"has {len(raw)} entries but the model has {n} layers")
    flags = []
    for i, value in enumerate(raw[:n]):
        if isinstance(value, bool) or (isinstance(value, int) and value >= 0):
            flags.append(bool(value))
        else:
            raise ConfigError(cfg.path(f"{key}[{i}]"), f"expected 0/1 or true/false, got {value!r}"[:200])
    return flags


# -- MiniMax-M3 sparse attention ----------------------------------------------------------------

_MSA = "sparse_attention_config"


def _msa_sparse_layers(cfg: ConfigView, n: int) -> list[bool]:
    """Which layers are sparse: transformers' ``layer_types`` ("minimax_m3_sparse") when written,
    else the Hub form ``sparse_attention_config.sparse_attention_freq`` (0 = dense, else sparse)."""
    types = cfg.str_list("layer_types", length=n)
    if types is not None:
        unknown = sorted(set(types) - {"minimax_m3_sparse", "full_attention"})
        if unknown:
            raise ConfigError(cfg.path("layer_types"), f"unknown layer type {unknown[0]!r}")
        return [t == "minimax_m3_sparse" for t in types]
    msa = cfg.value(_MSA)
    if msa is None:
        return [False] * n
    if not isinstance(msa, dict):
        raise ConfigError(cfg.path(_MSA), f"expected an object, got {type(msa).__name__}")
    if not cfg.boolean(f"{_MSA}.use_sparse_attention", default=True):
        return [False] * n
    if cfg.value(f"{_MSA}.sparse_attention_freq") is None:
        raise ConfigError(cfg.path(f"{_MSA}.sparse_attention_freq"), "missing: cannot tell which layers are sparse")
    return _flag_list(cfg, f"{_MSA}.sparse_attention_freq", n, default=False)


def _msa_index_dim(cfg: ConfigView) -> int:
    found = cfg.optional_int(f"{_MSA}.sparse_index_dim", minimum=1)
    return found if found is not None else cfg.integer("index_head_dim", default=128, minimum=1)


@register(
    family="sparse",
    model_types=("minimax_m3_vl", "minimax_m3_vl_text", "minimax_m3"),
    architectures=("MiniMaxM3SparseForConditionalGeneration", "MiniMaxM3SparseForCausalLM"),
    reads=(
        "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "layer_types",
        "sparse_attention_config.{use_sparse_attention, sparse_attention_freq, sparse_index_dim, "
        "sparse_disable_index_value, sparse_topk_blocks, sparse_block_size}", "index_head_dim", "num_mtp_modules",
    ),
    fixtures={"minimax_m3_vl": "nvidia__MiniMax-M3-NVFP4"},
)
def minimax_m3(cfg: ConfigView) -> Layout:
    """MiniMax-M3 (MSA): every layer keeps its main GQA KV; a sparse layer adds an index cache.

    Convention for the index cache (SGLang's pool: ``(2·n_sparse_kv + n_sparse_konly)·d_I·b`` per
    token): one part ``FullAttention(kv_heads=1, head_dim=d_I, v_head_dim=0)`` when the layer's
    ``sparse_disable_index_value`` is nonzero (the index stores K only: d_I·b), and ``v_head_dim=d_I``
    when it is 0 (K and V: 2·d_I·b). The index has one head (transformers' indexer projects K to a
    single ``index_head_dim`` vector; ``sparse_num_index_heads`` are query heads only), so it is
    replicated on every TP rank, and it is stored at the KV dtype (SGLang: the model dtype, fp8 on
    SM90 with an fp8 KV cache). A missing ``sparse_disable_index_value`` means K only, as in
    transformers, which has no index-value path.
    """
    n = num_layers(cfg)
    sparse = _msa_sparse_layers(cfg, n)
    k_only = _flag_list(cfg, f"{_MSA}.sparse_disable_index_value", n, default=True)
    index_dim = _msa_index_dim(cfg)
    cfg.mark(f"{_MSA}.sparse_num_index_heads", f"{_MSA}.sparse_score_type", f"{_MSA}.sparse_init_block",
             f"{_MSA}.sparse_local_block", "index_n_heads", "sparse_attention_config")
    main = attention_part(cfg)
    index_kv = FullAttention(kv_heads=1, head_dim=index_dim)
    index_k = FullAttention(kv_heads=1, head_dim=index_dim, v_head_dim=0)
    layers = []
    for i in range(n):
        if sparse[i]:
            layers.append(LayerSpec(index=i, kind="msa-sparse", parts=(main, index_k if k_only[i] else index_kv)))
        else:
            layers.append(LayerSpec(index=i, kind=main.kind, parts=(main,)))
    notes = []
    n_sparse = sum(sparse)
    if n_sparse:
        n_konly = sum(1 for s, k in zip(sparse, k_only) if s and k)
        notes.append(
            f"{n_sparse} sparse layer(s) add an index cache of one {index_dim}-wide head "
            f"({n_konly} store K only, {n_sparse - n_konly} K and V), at the KV dtype"
        )
        blocks = cfg.optional_int(f"{_MSA}.sparse_topk_blocks", "index_topk_blocks", minimum=1)
        size = cfg.optional_int(f"{_MSA}.sparse_block_size", "index_block_size", minimum=1)
        if blocks and size:
            notes.append(
                f"decode reads count the whole main KV of sparse layers; MSA reads only the top "
                f"{blocks} blocks of {size} tokens (plus local blocks) of it"
            )
    mtp = cfg.optional_int("num_mtp_modules")
    if mtp:
        notes.append(f"{mtp} MTP module(s) left out: they are not part of the target model")
    return Layout(layers=layers, notes=notes + mtp_note(cfg))


# -- LongCat-Flash ------------------------------------------------------------------------------


def _longcat_decoder_layers(cfg: ConfigView, warnings: list[str]) -> int:
    """Decoder layers: ``num_layers`` (transformers and the Hub config both write it).

    transformers derives ``num_hidden_layers = 2·num_layers`` (attention sub-layers) while the Hub's
    remote config sets ``num_hidden_layers = num_layers``; either agrees with ``num_layers``. Without
    ``num_layers``, ``num_hidden_layers`` is read the Hub's way (as SGLang does), with a warning.
    """
    # two sub-layers each: half the layer bound
    decoder = cfg.optional_int("num_layers", minimum=1, maximum=MAX_LAYERS // 2)
    hidden = cfg.optional_int("num_hidden_layers", minimum=1, maximum=MAX_LAYERS)
    if decoder is not None:
        if hidden is not None and hidden not in (decoder, 2 * decoder):
            raise ConfigError(
                cfg.path("num_hidden_layers"), f"{hidden} is neither num_layers ({decoder}) nor twice it"
            )
        return decoder
    if hidden is not None:
        warnings.append(
            "no num_layers: num_hidden_layers read as decoder layers (Hub config convention), "
            "each with two MLA sub-layers"
        )
        if 2 * hidden > MAX_LAYERS:
            raise ConfigError(cfg.path("num_hidden_layers"), f"{hidden} decoder layers is beyond any real model")
        return hidden
    return cfg.integer("num_layers", minimum=1, maximum=MAX_LAYERS // 2, defaults=True)


@register(
    family="mla",
    model_types=("longcat_flash",),
    architectures=("LongcatFlashForCausalLM",),
    reads=(
        "num_layers", "num_hidden_layers", "kv_lora_rank", "qk_rope_head_dim", "index_topk", "index_head_dim",
        "cli_factor", "num_nextn_predict_layers",
    ),
    fixtures={"longcat_flash": "meituan-longcat__LongCat-Flash-Chat-transformers-defaults"},
)
def longcat_flash(cfg: ConfigView) -> Layout:
    """LongCat-Flash: 2·``num_layers`` MLA sub-layers, each caching one latent (d_c + d_r per token).

    With ``index_topk`` (a DSA indexer), a sub-layer keeps indexer keys unless it reuses the previous
    top-k (``cli_factor``: fresh every ``cli_factor`` layers, SGLang's rule). The rule is applied to
    the 0-based attention sub-layer index (0 … 2·num_layers − 1), the numbering of the engines' pools.
    """
    warnings: list[str] = []
    decoder = _longcat_decoder_layers(cfg, warnings)
    n = 2 * decoder
    topk = cfg.optional_int("index_topk", minimum=1)
    latent = mla_latent(cfg, topk=topk)
    notes = [f"{decoder} decoder layers × 2 MLA sub-layers = {n} attention layers"]
    if topk is None:
        layers = [LayerSpec(index=i, kind="mla", parts=(latent,)) for i in range(n)]
    else:
        indexer = dsa_indexer(cfg)
        cfg.mark("index_n_heads")
        layers = [
            LayerSpec(index=i, kind="dsa-shared-topk", parts=(latent,)) if dsa_skips_indexer(cfg, i)
            else LayerSpec(index=i, kind="dsa", parts=(latent, indexer))
            for i in range(n)
        ]
        shared = sum(1 for layer in layers if len(layer.parts) == 1)
        if shared:
            notes.append(f"{shared} sub-layer(s) reuse the previous top-k and keep no indexer keys")
    return Layout(layers=layers, notes=notes + mtp_note(cfg), warnings=warnings)


# -- looped models ------------------------------------------------------------------------------


PartRewrite = Callable[[CachePart], CachePart]


def _repeat_passes(base: list[LayerSpec], loops: int, later: PartRewrite | None = None) -> list[LayerSpec]:
    """``loops`` copies of ``base`` numbered loop·L + i; ``later(part)`` rewrites parts of passes ≥ 1."""
    n = len(base)
    layers = list(base)
    for loop in range(1, loops):
        for layer in base:
            parts = tuple(later(part) for part in layer.parts) if later else layer.parts
            kind = f"loop-{parts[0].kind}" if parts else f"loop-{layer.kind}"
            layers.append(LayerSpec(index=loop * n + layer.index, kind=kind, parts=parts))
    return layers


def _windowed(window: int) -> PartRewrite:
    """Turn a full-attention part into the same heads over a window (IQuest's later passes)."""

    def rewrite(part: CachePart) -> CachePart:
        if isinstance(part, FullAttention):
            return SlidingWindow(kv_heads=part.kv_heads, head_dim=part.head_dim, v_head_dim=part.v_head_dim,
                                 window=window, source_layer=part.source_layer)
        return part

    return rewrite


def _loop_count(cfg: ConfigView, key: str, default: int, n: int) -> int:
    """The number of loop passes, bounded so that passes × layers stays a real model's size."""
    loops = cfg.integer(key, default=default, minimum=1, maximum=MAX_LAYERS)
    if loops * n > MAX_LAYERS:
        raise ConfigError(cfg.path(key), f"{loops} passes over {n} layers is beyond any real model")
    return loops


def _loop_note(loops: int, n: int) -> str:
    return f"{loops} loop passes over {n} layers: each pass keeps its own KV ({loops * n} layer caches)"


@register(
    family="loop",
    model_types=("iquest_loopcoder", "iquestloopcoder"),
    architectures=("IQuestLoopCoderForCausalLM",),
    reads=("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "loop_num",
           "loop_window_size"),
)
def iquest_loopcoder(cfg: ConfigView) -> Layout:
    """IQuest LoopCoder: ``loop_num`` passes (default 2) over the same layers.

    Pass 0 keeps a full KV per layer; every later pass keeps its own KV over the last
    ``loop_window_size`` tokens (default 64), as vLLM's model builds it (a sliding-window attention per
    later pass, mixed with pass 0's global KV by a gate). Layer i of pass k is numbered k·L + i.
    """
    base = pattern_layout(cfg, default_window=None, default_rule=None)
    n = len(base.layers)
    loops = _loop_count(cfg, "loop_num", 2, n)
    window = cfg.integer("loop_window_size", default=64, minimum=1)
    layers = _repeat_passes(base.layers, loops, _windowed(window))
    notes = base.notes + [_loop_note(loops, n)]
    if loops > 1:
        notes.append(
            f"passes 1..{loops - 1} keep a {window}-token window (loop_window_size); a pool that "
            f"counts every pass as full needs {loops - 1}×{n} more full layers per token"
        )
    if not cfg.present("loop_num") or not cfg.present("loop_window_size"):
        notes.append("loop_num / loop_window_size missing: vLLM's defaults (2, 64) applied")
    return Layout(layers=layers, notes=notes, warnings=base.warnings)


@register(
    family="loop",
    model_types=("nanbeige",),
    architectures=("NanbeigeForCausalLM",),
    reads=("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "num_loops",
           "sliding_window", "layer_types"),
)
def nanbeige(cfg: ConfigView) -> Layout:
    """Nanbeige looped transformer: ``num_loops`` passes over the layers, each keeping its own full KV.

    A config without ``num_loops`` is not looped (one pass).
    """
    base = pattern_layout(cfg, default_window=None, default_rule=None)
    n = len(base.layers)
    loops = _loop_count(cfg, "num_loops", 1, n)
    layers = _repeat_passes(base.layers, loops)
    notes = base.notes + ([_loop_note(loops, n)] if loops > 1 else [])
    return Layout(layers=layers, notes=notes, warnings=base.warnings)


# -- Nemotron-NAS (DeciLM) ------------------------------------------------------------------------


def _nas_blocks(cfg: ConfigView, n: int) -> list[dict]:
    blocks = cfg.value("block_configs")
    if blocks is None:
        raise ConfigError(cfg.path("block_configs"), "missing (needed for the per-layer attention)")
    if not isinstance(blocks, list):
        raise ConfigError(cfg.path("block_configs"), f"expected a list, got {type(blocks).__name__}")
    if len(blocks) < n:
        raise ConfigError(cfg.path("block_configs"), f"has {len(blocks)} entries but the model has {n} layers")
    attentions = []
    for i, block in enumerate(blocks[:n]):
        attention = block.get("attention") if isinstance(block, dict) else None
        if not isinstance(attention, dict):
            raise ConfigError(cfg.path(f"block_configs[{i}].attention"), "missing or not an object")
        attentions.append(attention)
    return attentions


def _nas_flag(cfg: ConfigView, attention: dict, i: int, key: str) -> bool:
    """A true/false switch of one attention block (absent or null: false)."""
    value = attention.get(key)
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ConfigError(cfg.path(f"block_configs[{i}].attention.{key}"), f"expected true or false, got {value!r}"[:200])


def _nas_kv_heads(cfg: ConfigView, attention: dict, i: int, heads: int) -> int:
    key = cfg.path(f"block_configs[{i}].attention.n_heads_in_group")
    group = attention.get("n_heads_in_group")
    if isinstance(group, bool) or not isinstance(group, int) or not 1 <= group <= MAX_SIZE:
        raise ConfigError(key, f"expected a positive integer, got {group!r}"[:200])
    if heads % group:
        raise ConfigError(key, f"{group} does not divide {heads} attention heads")
    return heads // group


def _nas_window(cfg: ConfigView, attention: dict, i: int) -> int | None:
    window = attention.get("window_length")
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= MAX_SIZE:
        raise ConfigError(
            cfg.path(f"block_configs[{i}].attention.window_length"), f"expected a positive integer, got {window!r}"[:200]
        )
    return window


@register(
    family="nas",
    model_types=("nemotron-nas", "nemotron_nas", "deci"),
    architectures=("DeciLMForCausalLM",),
    reads=("num_hidden_layers", "num_attention_heads", "hidden_size", "head_dim",
           "block_configs[].attention.{no_op, replace_with_linear, n_heads_in_group, window_length}"),
    fixtures={"nemotron-nas": "nvidia__Llama-3_3-Nemotron-Super-49B-v1"},
)
def nemotron_nas(cfg: ConfigView) -> Layout:
    """Nemotron-NAS: layer i has ``num_attention_heads // block_configs[i].attention.n_heads_in_group``
    KV heads; ``no_op`` and ``replace_with_linear`` attention blocks hold no cache (a layer with no
    parts); a ``window_length`` makes the layer sliding."""
    n = num_layers(cfg)
    heads = num_heads(cfg)
    dim = head_dim(cfg, heads)
    cfg.mark("num_key_value_heads")  # null in these configs: the per-block group size decides
    layers, kv_counts, notes, warnings = [], set(), [], []
    skipped = {"no-op": 0, "linear": 0}
    for i, attention in enumerate(_nas_blocks(cfg, n)):
        if _nas_flag(cfg, attention, i, "no_op"):
            layers.append(LayerSpec(index=i, kind="no-op", parts=()))
            skipped["no-op"] += 1
            continue
        if _nas_flag(cfg, attention, i, "replace_with_linear"):
            layers.append(LayerSpec(index=i, kind="linear", parts=()))
            skipped["linear"] += 1
            continue
        kv = _nas_kv_heads(cfg, attention, i, heads)
        kv_counts.add(kv)
        part = attention_part(cfg, heads=heads, kv=kv, key_dim=dim, window=_nas_window(cfg, attention, i))
        layers.append(LayerSpec(index=i, kind=part.kind, parts=(part,)))
        if attention.get("num_sink_tokens"):
            warnings.append(f"layer {i}: num_sink_tokens ignored (sink tokens are not counted)")
    if skipped["no-op"]:
        notes.append(f"{skipped['no-op']} layer(s) have a no-op attention block: no cache")
    if skipped["linear"]:
        notes.append(f"{skipped['linear']} layer(s) replace attention with a linear map: no cache")
    if len(kv_counts) > 1:
        notes.append(
            f"KV heads vary by layer ({', '.join(map(str, sorted(kv_counts)))}): SGLang refuses variable "
            "GQA, and vLLM's head count takes the first attention block"
        )
    return Layout(layers=layers, notes=notes, warnings=warnings)


# -- Llama 3.2 Vision (mllama) --------------------------------------------------------------------


def _mllama_image_tokens(cfg: ConfigView) -> int | None:
    """Vision tokens of one image: ``max_num_tiles`` × ((image_size / patch_size)² + 1 class token)."""
    vision = cfg.value("vision_config", root=True)
    if not isinstance(vision, dict):
        return None
    size, patch, tiles = vision.get("image_size", 448), vision.get("patch_size", 14), vision.get("max_num_tiles", 4)
    if isinstance(size, list) and size:
        size = size[0]
    if isinstance(patch, list) and patch:
        patch = patch[0]
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_SIZE for v in (size, patch, tiles)):
        return None
    return tiles * ((size // patch) ** 2 + 1)


@register(
    family="cross-attention",
    model_types=("mllama", "mllama_text_model"),
    architectures=("MllamaForConditionalGeneration", "MllamaForCausalLM"),
    reads=("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size",
           "cross_attention_layers", "vision_config.{image_size, patch_size, max_num_tiles}"),
    fixtures={"mllama": "meta-llama__Llama-3.2-11B-Vision-transformers-defaults"},
)
def mllama(cfg: ConfigView) -> Layout:
    """Llama 3.2 Vision: ``cross_attention_layers`` (0-based) are among ``num_hidden_layers``.

    Convention: a cross-attention layer is counted as a full layer (n = S, same K and head dim), as
    SGLang's token pool sizes it (engine log R15: 40 layers per token for the 11B). Its real cache
    holds the image tokens, max_num_tiles·((image_size/patch_size)² + 1) per image, whatever S is;
    the note gives that count so a reader can redo the figure for text-only or many-image requests.
    """
    n = num_layers(cfg)
    cross = cfg.int_list("cross_attention_layers", defaults=True) or []
    bad = [i for i in cross if i >= n]
    if bad:
        raise ConfigError(cfg.path("cross_attention_layers"), f"index {bad[0]} is past the {n} layers")
    cross_set = set(cross)
    part = attention_part(cfg)
    layers = [
        LayerSpec(index=i, kind="cross-attention" if i in cross_set else part.kind, parts=(part,)) for i in range(n)
    ]
    notes = [
        f"{len(cross_set)} cross-attention layer(s) counted as full layers (n = S), as SGLang's pool does"
    ]
    tokens = _mllama_image_tokens(cfg)
    if tokens:
        notes.append(
            f"a cross-attention layer really caches the image tokens, {tokens} per image, not S"
        )
    return Layout(layers=layers, notes=notes)
