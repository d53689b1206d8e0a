"""Short-convolution hybrids: LFM2, LFM2-MoE, LFM2-VL (text model in ``text_config``).

A conv layer keeps the last w − 1 inputs of its ``hidden_size`` channels, w = ``conv_L_cache`` (the
kernel size, default 3): C = (w − 1)·hidden·e_conv (``ShortConvState``), split over TP. Attention
layers are GQA. The pattern is ``layer_types`` (conv / full_attention), else the legacy 0-based
``full_attn_idxs``, else (the transformers default) every layer is attention.

Bidirectional LFM2 encoders (``Lfm2BidirectionalModel``, the LFM2.5 embedding models) share the
config and generate nothing, but SGLang serves them as embedding models through the same pools: KV
for the attention layers and a conv state per request, over the prompt. They are mapped like the
causal model, with a note saying so. Other encoder heads (``...Encoder``, ``...ForSequenceClassification``,
``...ForTokenClassification``) and ``is_causal: false`` are rejected with ``UnsupportedModelError``.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import UnsupportedModelError
from hfkv.model.specs import Layout

from hfkv.mappings.readers.attention_keys import num_layers
from hfkv.mappings.readers.layer_builders import gqa_parts, hybrid_layout
from hfkv.mappings.readers.layer_patterns import ATTENTION, LINEAR, roles_from_indices, roles_from_list
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import short_conv_state


_ENCODER_MARKERS = ("Encoder", "ForSequenceClassification", "ForTokenClassification")
_EMBEDDING = "Lfm2BidirectionalModel"
EMBEDDING_NOTE = (
    f"{_EMBEDDING} is a bidirectional embedding model: it generates nothing; the figures are what an engine "
    "that serves it (SGLang) allocates for the prompt: KV of the attention layers plus the conv state"
)


def reject_encoder(cfg: ConfigView) -> list[str]:
    """Raise for an encoder-only architecture that no engine sizes; the note for the embedding model."""
    for arch in cfg.architectures:
        if any(marker in arch for marker in _ENCODER_MARKERS):
            raise UnsupportedModelError(f"encoder-only model ({arch}): no KV cache")
    if _EMBEDDING in cfg.architectures:
        return [EMBEDDING_NOTE]
    if cfg.value("is_causal") is False:
        raise UnsupportedModelError("encoder-only model (is_causal: false): no KV cache")
    return []


@register(
    family="conv",
    model_types=("lfm2", "lfm2_moe", "lfm2_vl"),
    architectures=(
        "Lfm2ForCausalLM", "Lfm2MoeForCausalLM", "Lfm2VlForConditionalGeneration", "Lfm2BidirectionalModel",
    ),
    reads=(
        "layer_types", "full_attn_idxs", "conv_L_cache", "conv_dim", "hidden_size", "num_hidden_layers",
        "num_attention_heads", "num_key_value_heads", "architectures",
    ),
    fixtures={"lfm2": "LiquidAI__LFM2-1.2B-transformers-defaults"},
)
def lfm2(cfg: ConfigView) -> Layout:
    """Conv layers (fixed state) and GQA layers per ``layer_types`` / ``full_attn_idxs``."""
    notes = reject_encoder(cfg)
    n = num_layers(cfg)
    warnings: list[str] = []
    roles = roles_from_list(cfg, "layer_types", n, (ATTENTION, LINEAR))
    if roles is None:
        roles = roles_from_indices(cfg, "full_attn_idxs", n, base=0, inside=ATTENTION, outside=LINEAR)
    if roles is None:
        roles = [ATTENTION] * n
        notes.append("no layer_types or full_attn_idxs: every layer is attention (transformers default)")
    cfg.mark("num_heads", "conv_bias")
    parts = {LINEAR: ("conv", lambda: (short_conv_state(cfg, warnings),)), ATTENTION: gqa_parts(cfg)}
    return hybrid_layout(cfg, roles, parts, notes, warnings)
