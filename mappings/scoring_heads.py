"""Reward, classification and embedding heads on a decoder language model.

These checkpoints share their base model's ``model_type`` (a Qwen2 reward model says ``qwen2``) but
score or embed a prompt instead of generating. The engines that serve them (SGLang's reward and
embedding models, vLLM's pooling runner) still run the decoder over the prompt with the base model's
attention, so the layout is the base model's, with a note: the cache lives for one prompt, there is
no decode phase. Registered with ``first=True``: the architecture decides before the model type.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import Layout

from hfkv.mappings.readers.layer_builders import pattern_layout
from hfkv.mappings.registry import register, resolve_language_model

HEADS = {
    "Gemma2ForSequenceClassification": "reward/classification",
    "InternLM2ForRewardModel": "reward",
    "LlamaForClassification": "classification",
    "LlamaForSequenceClassification": "reward/classification",
    "LlamaForSequenceClassificationWithNormal_Weights": "reward/classification",
    "NanbeigeForSequenceClassification": "reward/classification",
    "Qwen2ForRewardModel": "reward",
    "Qwen2ForSequenceClassification": "reward/classification",
    "Qwen3ForRewardModel": "reward",
    "Qwen3ForSequenceClassification": "reward/classification",
    "LlamaEmbeddingModel": "embedding",
    "MistralModel": "embedding",
    "Qwen3Model": "embedding",
    "EmbeddingGemmaModel": "embedding",
    "EmbeddingGemma2Model": "embedding",
}


@register(family="scoring-head", architectures=tuple(HEADS), first=True, reads=("architectures",))
def scoring_head(cfg: ConfigView) -> Layout:
    """The base decoder's layout (its own mapper, by model type) plus a note on what the head does."""
    arch = next(a for a in cfg.architectures if a in HEADS)
    base = resolve_language_model(cfg, skip="scoring_heads.scoring_head")
    layout = base(cfg) if base is not None else pattern_layout(cfg, default_window=None, default_rule=None)
    if base is None:
        layout.warnings.insert(0, f"estimate, not exact: the base model type {cfg.text_model_type!r} of {arch} "
                                  "is not a known family; figures come from its standard keys")
    layout.notes.insert(0, f"{arch} is a {HEADS[arch]} head: the engines run the decoder over the prompt and keep "
                           "its cache for that prompt only (no generation)")
    return layout
