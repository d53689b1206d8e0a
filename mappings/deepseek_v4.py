"""DeepSeek V4 / V4.1 compressed attention (CSA, HCA) and V4.1's cross-layer sharing (CSA2).

Every layer keeps a raw sliding window of ``W`` latents (``sliding_window``, alias ``window_size``,
default 128): ``MLALatent(head_dim − qk_rope_head_dim, qk_rope_head_dim, window=W)``; K and V share one
512-wide entry. On top of that a layer with compress ratio m keeps one compressed entry per m tokens:

- m = 4, CSA (``compressed_sparse_attention``): ``CompressedKV`` read through the top-``index_topk``
  selection, plus indexer keys (``index_head_dim``) that every step scans. Its compressor overlaps
  blocks, so the ring is 2m slots × 4·d_kv state values, and 2m × 4·d_I for the indexer's compressor.
- m = 128, HCA (``heavily_compressed_attention``): ``CompressedKV`` read whole, no indexer; the ring
  does not overlap: m slots × 2·d_kv.
- m = 1 or 2 (V4.1 only): compressed storage and an index-key cache exist only on the layers listed
  in ``kv_source_layer_ids``; every other layer with that ratio reads the nearest earlier source
  with the same ratio (σ = 0) but keeps its own window. m = 1 has no ring; m = 2 a non-overlapping
  ring of m slots × 2·d_kv (the seed's CSA2 rule). ``index_source_layer_ids`` only says which layers
  *compute* top-k, so it changes no storage.
- m = 0: the window only.

The config gives the ratios as ``compress_ratios`` (0-based, one per layer, with the MTP layers'
entries appended: cut to ``num_hidden_layers``) or, in the transformers form, as ``layer_types`` plus
``compress_rates`` (legacy ``compress_rate_csa`` / ``compress_rate_hca``). Ratios other than
0, 1, 2, 4 and 128 are rejected: the ring and indexer rules are only known for those.
"""

from __future__ import annotations

from dataclasses import dataclass

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import CompressedKV, IndexerKeys, LayerSpec, Layout, MLALatent

from hfkv.mappings.readers.attention_keys import num_layers
from hfkv.mappings.registry import register

DEFAULT_WINDOW = 128
DEFAULT_ROPE_DIM = 64

# layer type (transformers form) -> (kind, default compress rate)
_TYPE_KINDS = {
    "sliding_attention": ("swa", 0),
    "compressed_sparse_attention": ("csa", 4),
    "heavily_compressed_attention": ("hca", 128),
}
_LEGACY_RATE_KEYS = {"csa": "compress_rate_csa", "hca": "compress_rate_hca"}
# compress ratio (hub form) -> kind
_RATIO_KINDS = {0: "swa", 1: "csa2", 2: "csa2", 4: "csa", 128: "hca"}


@dataclass(frozen=True)
class _Geometry:
    """Shapes shared by every layer of the model."""

    head_dim: int  # d_kv: one entry holds K and V
    rope_dim: int
    window: int
    index_head_dim: int
    index_topk: int | None


def _geometry(cfg: ConfigView, notes: list[str]) -> _Geometry:
    head_dim = cfg.integer("head_dim", minimum=1, defaults=True)
    rope = cfg.optional_int("qk_rope_head_dim")
    if rope is None:
        # The transformers form keeps only partial_rotary_factor (= qk_rope_head_dim / head_dim).
        factor = cfg.value("partial_rotary_factor")
        if isinstance(factor, (int, float)) and not isinstance(factor, bool) and 0 <= factor <= 1:
            rope = int(head_dim * factor)
        else:
            rope = DEFAULT_ROPE_DIM
            notes.append(f"no qk_rope_head_dim: the DeepSeek V4 default {DEFAULT_ROPE_DIM} applies")
    if rope >= head_dim:
        raise ConfigError(cfg.path("qk_rope_head_dim"), f"{rope} leaves no no-RoPE part of head_dim {head_dim}")
    window = cfg.integer("sliding_window", "window_size", default=DEFAULT_WINDOW, minimum=1)
    cfg.mark("num_key_value_heads", "q_lora_rank", "o_lora_rank", "o_groups", "index_n_heads",
             "compress_rope_theta", "hc_mult")
    return _Geometry(
        head_dim=head_dim,
        rope_dim=rope,
        window=window,
        index_head_dim=cfg.integer("index_head_dim", default=128, minimum=1),
        index_topk=cfg.optional_int("index_topk", minimum=1),
    )


def _kinds_from_ratios(cfg: ConfigView, n: int, notes: list[str]) -> list[tuple[str, int]]:
    raw = cfg.int_list("compress_ratios")
    assert raw is not None
    if len(raw) > n:
        extra = raw[n:]
        notes.append(
            f"compress_ratios lists {len(extra)} entr{'y' if len(extra) == 1 else 'ies'} past "
            f"num_hidden_layers {n} (MTP layers, ratio {'/'.join(map(str, sorted(set(extra))))}): left out"
        )
    ratios = cfg.int_list("compress_ratios", length=n)
    assert ratios is not None
    out = []
    for i, m in enumerate(ratios):
        if m not in _RATIO_KINDS:
            raise ConfigError(
                cfg.path(f"compress_ratios[{i}]"), f"unknown compress ratio {m} (known: 0, 1, 2, 4, 128)"
            )
        out.append((_RATIO_KINDS[m], m))
    return out


def _kinds_from_types(cfg: ConfigView, n: int) -> list[tuple[str, int]]:
    """The transformers form: ``layer_types`` + ``compress_rates`` (default: the class's pattern)."""
    types = cfg.str_list("layer_types", length=n, defaults=True)
    if types is None:
        raise ConfigError(cfg.path("compress_ratios"), "missing, and no layer_types either")
    rates = cfg.value("compress_rates")
    if rates is not None and not isinstance(rates, dict):
        raise ConfigError(cfg.path("compress_rates"), f"expected an object, got {type(rates).__name__}")
    out = []
    for i, name in enumerate(types):
        if name not in _TYPE_KINDS:
            raise ConfigError(cfg.path(f"layer_types[{i}]"), f"unknown DeepSeek V4 layer type {name!r}")
        kind, default = _TYPE_KINDS[name]
        if kind == "swa":
            out.append((kind, 0))
            continue
        rate = (rates or {}).get(name)
        if rate is None:
            rate = cfg.integer(_LEGACY_RATE_KEYS[kind], default=default, minimum=1)
        elif isinstance(rate, bool) or not isinstance(rate, int) or rate < 1:
            raise ConfigError(cfg.path(f"compress_rates.{name}"), f"expected a positive integer, got {rate!r}")
        out.append((kind, rate))
    return out


def _sources(cfg: ConfigView, kinds: list[tuple[str, int]]) -> dict[int, int | None]:
    """For every CSA2 (ratio 1/2) layer: None when it owns its compressed cache, else the layer it reads.

    Without ``kv_source_layer_ids`` every such layer owns its cache.
    """
    listed = cfg.int_list("kv_source_layer_ids")
    csa2 = [i for i, (kind, _) in enumerate(kinds) if kind == "csa2"]
    if listed is None:
        return {i: None for i in csa2}
    owners = set(listed)
    for s in owners:
        if s >= len(kinds):
            raise ConfigError(cfg.path("kv_source_layer_ids"), f"layer {s} is past num_hidden_layers {len(kinds)}")
    result: dict[int, int | None] = {}
    for i in csa2:
        if i in owners:
            result[i] = None
            continue
        ratio = kinds[i][1]
        earlier = [s for s in owners if s < i and kinds[s] == ("csa2", ratio)]
        if not earlier:
            raise ConfigError(
                cfg.path("kv_source_layer_ids"),
                f"layer {i} (compress ratio {ratio}) has no earlier source layer with the same ratio",
            )
        result[i] = max(earlier)
    return result


def _layer(i: int, kind: str, m: int, g: _Geometry, source: int | None) -> LayerSpec:
    window = MLALatent(kv_lora_rank=g.head_dim - g.rope_dim, rope_dim=g.rope_dim, window=g.window)
    if kind == "swa":
        return LayerSpec(index=i, kind="swa", parts=(window,))
    shape = dict(head_dim=g.head_dim, rope_dim=g.rope_dim, ratio=m)
    if kind == "csa":
        main = CompressedKV(**shape, topk=g.index_topk, ring_slots=2 * m, ring_factor=4)
        keys = IndexerKeys(head_dim=g.index_head_dim, ratio=m, ring_slots=2 * m, ring_factor=4)
        return LayerSpec(index=i, kind="csa", parts=(window, main, keys))
    if kind == "hca":
        return LayerSpec(index=i, kind="hca", parts=(window, CompressedKV(**shape, ring_slots=m, ring_factor=2)))
    # CSA2, ratio 1 or 2: one non-overlapping ring of m slots when m > 1.
    ring = m if m > 1 else 0
    main = CompressedKV(**shape, topk=g.index_topk, ring_slots=ring, ring_factor=2, source_layer=source)
    if source is not None:
        # A reusing layer reads the source's top-k entries; it scans no index keys of its own.
        return LayerSpec(index=i, kind="csa2-shared", parts=(window, main))
    keys = IndexerKeys(head_dim=g.index_head_dim, ratio=m, ring_slots=0)
    return LayerSpec(index=i, kind="csa2", parts=(window, main, keys))


@register(
    family="compressed",
    model_types=("deepseek_v4", "deepseek_v41"),
    architectures=("DeepseekV4ForCausalLM", "DeepseekV41ForCausalLM", "DeepseekV4ForConditionalGeneration"),
    reads=(
        "num_hidden_layers", "compress_ratios", "layer_types", "compress_rates", "compress_rate_csa",
        "compress_rate_hca", "sliding_window", "window_size", "head_dim", "qk_rope_head_dim",
        "partial_rotary_factor", "index_head_dim", "index_topk", "kv_source_layer_ids",
        "index_source_layer_ids", "num_nextn_predict_layers",
    ),
    ignores={"num_attention_heads": "one head_dim-wide KV entry per token is shared by every query head"},
    fixtures={
        "deepseek_v4": "deepseek-ai__DeepSeek-V4-Flash",
        "deepseek_v41": "deepseek-ai__DeepSeek-V4.1-synthetic",
    },
)
def deepseek_v4(cfg: ConfigView) -> Layout:
    """Per layer: a window of W latents, plus compressed entries (and indexer keys, rings) by ratio."""
    notes: list[str] = []
    n = num_layers(cfg)
    g = _geometry(cfg, notes)
    if cfg.present("compress_ratios"):
        kinds = _kinds_from_ratios(cfg, n, notes)
    else:
        kinds = _kinds_from_types(cfg, n)
    sources = _sources(cfg, kinds)
    layers = [_layer(i, kind, m, g, sources.get(i)) for i, (kind, m) in enumerate(kinds)]

    nextn = cfg.optional_int("num_nextn_predict_layers")
    if nextn:
        notes.append(f"{nextn} MTP draft layer(s) left out: they are not part of the target model")
    counts: dict[str, int] = {}
    for layer in layers:
        counts[layer.kind] = counts.get(layer.kind, 0) + 1
    notes.append(
        f"every layer keeps a raw window of {g.window} latents; layer kinds: "
        + ", ".join(f"{k} {v}" for k, v in counts.items())
    )
    shared = [layer.index for layer in layers if layer.kind == "csa2-shared"]
    if shared:
        notes.append(
            f"{len(shared)} ratio-1/2 layer(s) read the compressed cache and index keys of the nearest "
            "earlier kv_source layer (σ = 0); only their windows are their own"
        )
        notes.append(
            "SGLang stores ratio-1/2 index keys in fp4 (68 B per 128 values); hfkv uses --indexer-dtype"
        )
    index_sources = cfg.int_list("index_source_layer_ids")
    if index_sources is not None:
        notes.append(
            f"index_source_layer_ids ({len(index_sources)} layers) only decide which layers compute top-k; "
            "layers that rescore a candidate pool are not counted in the read figures"
        )
    cfg.mark("candidate_source_layer_id", "candidate_topk_blocks", "candidate_block_size")
    notes.append("SGLang serves DeepSeek V4 with an fp8 KV cache by default (pass --kv-cache-dtype fp8 to match)")
    return Layout(layers=layers, notes=notes)
