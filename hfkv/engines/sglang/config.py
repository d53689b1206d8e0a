"""Where SGLang 0.5.23 reads a config differently from hfkv's mapper, as layer specs SGLang would size.

hfkv's specs describe the model; SGLang sizes what its own config classes and configurators see.
``sglang_layers(report)`` returns the layers SGLang's pool is built for, and notes saying why they
differ from the report's:

- ChatGLM (``configs/chatglm.py``): SGLang registers its own ``ChatGLMConfig`` whose
  ``multi_query_group_num`` defaults to 1, and ``get_total_num_kv_heads`` reads that key. A chatglm
  config without the key (chatglm-6b, v1) is sized with one KV head per layer.
- Nemotron-NAS / DeciLM: ``DefaultPoolConfigurator`` sizes ``layer_info.num_effective_layers``
  layers, the no-op (and linear-replaced) attention blocks included, each like an attention block.
- ZAYA1 (``configs/zaya.py``): ``ZayaConfig`` places attention (and its CCA state) by ``zaya_layers``
  only; without that key it is every even layer, whatever ``layer_types`` says (transformers' format
  lists every layer as ``hybrid``). The odd layers keep nothing in SGLang's pools. Its CCA state's
  (hidden_size, 1) tensor (``prev_hs``) feeds replicated projections, so ``mamba2_cache_params`` keeps it
  whole on every TP rank (``replicated_state``); only the (H + K)·hd conv tensor is split.

- Whisper (``ArchFacts.encoder_decoder_layers``): ``ModelConfig`` sizes ``encoder_layers + 2 ·
  decoder_layers`` layers, the encoder's and the decoder's self-attention and the decoder's
  cross-attention each one slot of the cell, with the heads the config class reads
  (``encoder_attention_heads`` through ``WhisperConfig.attribute_map``, head size ``d_model`` over them).

``context_length`` is SGLang's ``ModelConfig.context_len``: the given ``--context-length``, else
``utils/hf_transformers/common.py:get_context_length`` (the first of ``CONTEXT_LENGTH_KEYS``, times a
rope-scaling factor unless the scaling names ``original_max_position_embeddings`` or is llama3; 2048
when the config has none of the keys, nor its config class: ``ModelTypeFacts.context_length_keys``).
"""

from __future__ import annotations

import os

from typing import Any, Callable

from hfkv.errors import UnsupportedModelError, UsageError
from hfkv.model.specs import CrossAttention, FullAttention, LayerSpec, ShortConvState
from hfkv.engines.contract import EngineInput
from hfkv.engines.sglang import registry

CONTEXT_LENGTH_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                       "max_position_embeddings")
DEFAULT_CONTEXT_LENGTH = 2048
LONGER_CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"  # model_config.py: a longer context is refused without it


def allowed(name: str) -> bool:
    """An engine's opt-in environment variable, read as the engines read a boolean (1 or true)."""
    return os.environ.get(name, "").strip().lower() in ("1", "true")


def context_length(report: EngineInput, max_model_len: int | None, assumptions: list[str], warnings: list[str]) -> int:
    """SGLang's context length (module docstring); warnings where SGLang would object or hfkv guesses."""
    class_keys = registry.model_type(report).context_length_keys != "none"
    derived = derived_context_length(report.config or {},
                                     getattr(report, "max_position_embeddings", None) if class_keys else None)
    if max_model_len is not None:
        if max_model_len < 1:
            raise UsageError(f"--max-model-len must be positive, got {max_model_len}")
        if derived is not None and max_model_len > derived:
            message = (f"User-specified context_length ({max_model_len}) is greater than the derived context_length "
                       f"({derived}). This may lead to incorrect model outputs or CUDA errors.")
            if not allowed(LONGER_CONTEXT_ENV):
                raise UnsupportedModelError(f"SGLang would refuse to start: {message} To allow overriding this "
                                            f"maximum, set the env var {LONGER_CONTEXT_ENV}=1")
            warnings.append(f"{message} ({LONGER_CONTEXT_ENV} is set: SGLang only warns)")
        return max_model_len
    if derived is None:
        warnings.append(f"the config names no context length: SGLang takes its config class's default, or "
                        f"{DEFAULT_CONTEXT_LENGTH}; {DEFAULT_CONTEXT_LENGTH} is assumed (--max-model-len sets it)")
        return DEFAULT_CONTEXT_LENGTH
    assumptions.append(f"context length {derived} (SGLang's get_context_length of the config)")
    return derived


def derived_context_length(config: dict, max_positions: int | None) -> int | None:
    """``get_context_length``: the first context key, times the rope factor; None when no key is set."""
    scaling = config.get("rope_scaling")
    factor = 1
    if isinstance(scaling, dict) and scaling:
        factor = scaling.get("factor", 1)
        if "original_max_position_embeddings" in scaling or scaling.get("rope_type") == "llama3":
            factor = 1
    values = [config.get(key) for key in CONTEXT_LENGTH_KEYS] + [max_positions]
    value = next((v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)), None)
    return None if value is None else int(factor * value)


# _try_load_raw_mamba_config builds MambaConfig(hidden_size=d_model, num_hidden_layers=n_layer,
# state_size=ssm_cfg.d_state, ...): the other mamba_ssm keys keep MambaConfig's defaults, which are these.
RAW_MAMBA_UNREAD = {"layer": "Mamba1", "d_conv": 4, "expand": 2, "dt_rank": "auto"}


def raw_mamba_unread(report: EngineInput) -> str | None:
    """The ``ssm_cfg`` keys SGLang's raw mapping does not read whose values differ from what it builds,
    as ``key X (the checkpoint's Y)``; None when the model it builds is the checkpoint's."""
    ssm = (getattr(report, "root_config", None) or getattr(report, "config", None) or {}).get("ssm_cfg") or {}
    differ = [f"{key} {built} (the checkpoint's {ssm[key]})" for key, built in RAW_MAMBA_UNREAD.items()
              if isinstance(ssm, dict) and key in ssm and ssm[key] != built]
    return ", ".join(differ) or None


def sglang_layers(report: EngineInput) -> tuple[list[LayerSpec], list[str]]:
    """(the layers SGLang sizes, notes on how they differ from the report's)."""
    layers, notes = list(report.layer_specs), []
    layers = default_kv_heads(report, layers, notes)
    if registry.model_type(report).sizes_no_op_layers:
        layers, filled = fill_empty_layers(layers)
        if filled:
            notes.append(f"SGLang sizes all {len(layers)} layers (num_effective_layers), {filled} no-op "
                         "attention blocks included, each like an attention block")
    layers = even_layers_only(report, layers, notes)
    layers = encoder_decoder_layers(report, layers, notes)
    return layers, notes


def encoder_decoder_layers(report: EngineInput, layers: list[LayerSpec], notes: list[str]) -> list[LayerSpec]:
    """Whisper: ``encoder_layers + 2 · decoder_layers`` full-attention slots (module docstring), with the
    KV heads and head size SGLang's config class reads; the decoder's cross-attention parts themselves
    are not a separate pool."""
    found = [f for f in registry.arch_facts(report) if f.encoder_decoder_layers]  # any of the architectures
    decoder = [layer for layer in layers if any(isinstance(p, CrossAttention) for p in layer.parts)]
    if not found or not decoder:
        return layers
    config = report.config or {}
    template = next(p for p in decoder[0].parts if isinstance(p, FullAttention))
    heads, hidden = config.get("encoder_attention_heads"), config.get("d_model")
    if isinstance(heads, int) and heads > 0 and isinstance(hidden, int) and hidden % heads == 0:
        template = template.model_copy(update={"kv_heads": heads, "head_dim": hidden // heads, "v_head_dim": None})
    encoder = config.get("encoder_layers")
    encoder = encoder if isinstance(encoder, int) and encoder >= 0 else 0
    count = encoder + 2 * len(decoder)
    notes.append(f"{found[0].architecture}: SGLang's pool sizes encoder_layers + 2 · decoder_layers = {encoder} + "
                 f"2 × {len(decoder)} = {count} attention layers ({template.kv_heads} KV heads × {template.head_dim}, "
                 "the config class's num_key_value_heads), the encoder's and the cross-attention's included; a "
                 "request also holds its encoder output's tokens in the pool")
    return [LayerSpec(index=i, kind="decoder", parts=(template,)) for i in range(count)]


def default_kv_heads(report: EngineInput, layers: list[LayerSpec], notes: list[str]) -> list[LayerSpec]:
    """A KV-head key the config lacks takes its SGLang config class's default (``kv_heads_default``:
    ChatGLM v1's one KV head, module docstring)."""
    default = registry.model_type(report).kv_heads_default
    if default is None or default.key in (report.config or {}):
        return layers
    heads = "one KV head" if default.value == 1 else f"{default.value} KV heads"
    notes.append(f"SGLang's own {default.config_class} defaults {default.key} to {default.value} and sizes "
                 f"{heads} per layer (the config has no {default.key})")
    return [with_kv_heads(layer, default.value) for layer in layers]


def even_layers_only(report: EngineInput, layers: list[LayerSpec], notes: list[str]) -> list[LayerSpec]:
    """ZAYA1 without ``zaya_layers``: SGLang keeps the caches of the even layers only (module docstring;
    the model type's ``even_layers_unless``)."""
    key = registry.model_type(report).even_layers_unless
    if key is None or (report.config or {}).get(key) or not any(layer.parts for layer in layers[1::2]):
        return layers
    notes.append(f"SGLang's config class places attention on the even layers when the config has no {key} "
                 f"({len(layers[::2])} of {len(layers)}); the odd layers keep no KV or state there")
    template = next(layer.parts for layer in layers if layer.parts)
    return [layer.model_copy(update={"parts": (layer.parts or template) if i % 2 == 0 else ()})
            for i, layer in enumerate(layers)]


def replicated_state(report: EngineInput) -> Callable[[Any], bool]:
    """Which state parts SGLang keeps whole on every TP rank (module docstring: ZAYA1's ``prev_hs``, the
    model type's ``whole_hidden_conv``)."""
    hidden = (report.config or {}).get("hidden_size")
    if not registry.model_type(report).whole_hidden_conv or not isinstance(hidden, int):
        return lambda part: False
    return lambda part: isinstance(part, ShortConvState) and part.dim == hidden and part.conv_kernel == 2


def with_kv_heads(layer: LayerSpec, heads: int) -> LayerSpec:
    """``layer`` with every full-attention part holding ``heads`` KV heads."""
    parts = tuple(part.model_copy(update={"kv_heads": heads}) if isinstance(part, FullAttention) else part
                  for part in layer.parts)
    return layer.model_copy(update={"parts": parts})


def fill_empty_layers(layers: list[LayerSpec]) -> tuple[list[LayerSpec], int]:
    """Layers with no part given the first attention layer's parts; (layers, how many were filled)."""
    template = next((layer for layer in layers if layer.parts), None)
    if template is None:
        return layers, 0
    filled = [layer if layer.parts else layer.model_copy(update={"parts": tuple(template.parts)}) for layer in layers]
    return filled, sum(1 for layer in layers if not layer.parts)
