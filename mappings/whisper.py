"""Whisper: decoder self-attention plus cross-attention over the encoder's fixed positions.

Its encoder always sees 30 s of audio, so the cross-attention cache of each decoder layer holds a
length the config fixes (``max_source_positions``, 1500), a per-request constant beside the decoder's
self-attention (``CrossAttention``).
"""

from __future__ import annotations

from hfkv.model.config import MAX_LAYERS, ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import CrossAttention, FullAttention, LayerSpec, Layout

from hfkv.mappings.registry import register


@register(
    family="encoder-decoder",
    model_types=("whisper",),
    architectures=("WhisperForConditionalGeneration",),
    reads=("decoder_layers", "decoder_attention_heads", "d_model", "max_source_positions", "max_target_positions"),
    ignores={"encoder_attention_heads": "the encoder keeps no cache; the decoder's cross-attention K/V over its "
                                        "output use the decoder's heads"},
    fixtures={"whisper": "openai__whisper-large-v3"},
)
def whisper(cfg: ConfigView) -> Layout:
    """Decoder layers, each with MHA self-attention (n = S) and cross-attention over the encoder's
    ``max_source_positions`` frames (n = 1500 whatever S). ``num_hidden_layers`` is the *encoder's*
    depth in these configs (distil-whisper: 32 encoder, 2 decoder layers), so it is not read."""
    layers = cfg.integer("decoder_layers", minimum=1, maximum=MAX_LAYERS, defaults=True)
    heads = cfg.integer("decoder_attention_heads", minimum=1, defaults=True)
    d_model = cfg.integer("d_model", minimum=1, defaults=True)
    if d_model % heads:
        raise ConfigError("d_model", f"{d_model} is not a multiple of decoder_attention_heads ({heads})")
    frames = cfg.integer("max_source_positions", minimum=1, defaults=True)
    self_attention = FullAttention(kv_heads=heads, head_dim=d_model // heads)
    cross = CrossAttention(kv_heads=heads, head_dim=d_model // heads, encoder_tokens=frames)
    return Layout(
        layers=[LayerSpec(index=i, kind="decoder", parts=(self_attention, cross)) for i in range(layers)],
        notes=[f"cross-attention: K and V of the encoder's {frames} positions (30 s of audio, fixed by the model) "
               "per decoder layer and request, in γ; the encoder keeps no cache"],
    )
