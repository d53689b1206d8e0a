"""Llama 4 (chunked local attention) and Llama 3.2 Vision (cross-attention layers).

- Llama 4 (``llama4``, ``llama4_text``): chunked local attention on RoPE layers, a global NoPE layer
  where ``no_rope_layers[i] == 0`` (transformers' default: every ``no_rope_layer_interval`` = 4th layer,
  (i + 1) % 4 == 0). Chunked layers are ``ChunkedLocal(chunk=attention_chunk_size)`` (default 8192).
- Llama 3.2 Vision (``mllama``): the 0-based ``cross_attention_layers`` are among ``num_hidden_layers``.

Dense Llama models use ``dense.dense``.
"""

from __future__ import annotations

from hfkv.model.config import MAX_SIZE, ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import Layout

from hfkv.mappings.readers.attention_keys import attention_shape, heads_part, num_layers
from hfkv.mappings.readers.layer_builders import cross_attention_layers, cross_attention_note, layers_from_flags
from hfkv.mappings.registry import register


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
    full = heads_part(kv, key_dim, key_dim)
    if chunk is None:
        notes.append("attention_chunk_size is null: every layer is global attention")
        flags = [False] * n
    local = heads_part(kv, key_dim, key_dim, chunk=chunk) if chunk else full
    notes.append(
        "chunked layers are counted as one chunk per request (SGLang: a window of the chunk size); "
        "vLLM by default allocates them as full attention"
    )
    return Layout(layers=layers_from_flags(flags, local, full), notes=notes)


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
    cross = cfg.int_list("cross_attention_layers", defaults=True) or []
    layers = cross_attention_layers(cfg, num_layers(cfg), cross)
    notes = [cross_attention_note(cross)]
    tokens = _mllama_image_tokens(cfg)
    if tokens:
        notes.append(
            f"a cross-attention layer really caches the image tokens, {tokens} per image, not S"
        )
    return Layout(layers=layers, notes=notes)
