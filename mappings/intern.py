"""InternS2-Preview and Mobius: Qwen3-Next-like GDN hybrids in ``text_config``, mapped exactly as
Qwen3-Next (``qwen.qwen_gdn``).
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import Layout

from hfkv.mappings.qwen import qwen_gdn
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import QWEN_LINEAR_READS


@register(
    family="linear",
    model_types=("interns2_preview", "mobius"),
    architectures=("InternS2PreviewForConditionalGeneration", "MobiusForConditionalGeneration"),
    reads=QWEN_LINEAR_READS + ("full_attention_interval", "num_key_value_heads", "head_dim"),
)
def qwen_next_like(cfg: ConfigView) -> Layout:
    """InternS2-Preview and Mobius: mapped as Qwen3-Next (GDN + GQA), from their ``text_config``."""
    layout = qwen_gdn(cfg)
    layout.warnings.append(
        f"{cfg.model_type}: no published config class; mapped as a Qwen3-Next GDN hybrid "
        "(linear_* keys, layer_types or full_attention_interval)"
    )
    return layout
