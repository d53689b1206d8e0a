"""Architectures the engines register that hfkv refuses by name, each with its one-line reason.

- draft models (EAGLE heads, MTP/NextN layers, DFlash/DSpark drafters): they run only beside a
  target model, whose report (``--engine sglang --speculative-draft-layers N``) sizes their pool;
- diffusion language models: they denoise blocks of tokens instead of decoding one at a time, and
  their cache does not follow α·S + γ;
- vision or text encoders served alone: no generation, no KV cache;
- the engines' own backend classes (the transformers and MindSpore fallbacks): never a checkpoint's
  architecture, so the config's ``model_type`` must decide;
- layouts hfkv does not model yet (named per architecture below).

Each group is one mapper; ``first=True`` where the architecture must win over a ``model_type`` the
checkpoint shares with a servable model (a Llama EAGLE head says ``llama``).
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import UnsupportedModelError
from hfkv.model.specs import Layout

from hfkv.mappings.registry import register

DRAFTS = (
    "BailingMoeForCausalLMNextN", "DFlash2BeamDraftModel", "DFlash2DraftModel", "DFlashDraftModel",
    "DFlashLagunaForCausalLM", "DSparkDraftModel", "DSparkMiniMaxDraftModel", "DeepseekV3ForCausalLMNextN",
    "DeepseekV4ForCausalLMDSpark", "DeepseekV4ForCausalLMNextN", "Dots3NoteForCausalLMNextN",
    "Eagle3DeepseekV2ForCausalLM", "Ernie4_5_MoeForCausalLMMTP", "ExaoneMoEForCausalLMMTP",
    "Gemma4AssistantForCausalLM", "Gemma4UnifiedAssistantForCausalLM", "GigaChat35ForCausalLMNextN",
    "Glm4MoeForCausalLMNextN", "Glm4MoeLiteForCausalLMNextN", "Glm5NextForConditionalGenerationNextN",
    "GlmMoeDsaForCausalLMNextN", "GlmOcrForConditionalGenerationNextN", "HYV3ForCausalLMNextN",
    "HYV4ForCausalLMNextN", "IQuestQ1MTP", "InklingForConditionalGenerationMTP", "Lfm2DSparkDraftModel",
    "LiLiCorrDraftModel", "LingDSparkModel", "LlamaForCausalLMEagle", "LlamaForCausalLMEagle3",
    "LongcatFlashForCausalLMNextN", "MiMoMTP", "MiMoV2MTP", "MiniMaxDFlash2DraftModel", "MistralForCausalLMEagle",
    "MistralLarge3ForCausalLMEagle", "MuseGlimmerAssistantModel", "NemotronHForCausalLMMTP",
    "Qwen2ForCausalLMEagle", "Qwen3DSparkModel", "Qwen3MoeForCausalLMMTP", "Qwen3NextForCausalLMMTP",
    "Qwen3_5ForCausalLMMTP", "Qwen4ExpForCausalLMMTP", "Step3p5MTP",
    # vLLM 0.33.0's _SPECULATIVE_DECODING_MODELS
    "BailingMoeV25MTPModel", "BailingMoeV3MTPModel", "DFlashMuseGlimmerAssistantModel",
    "DFlashQwen3XPressModel", "DSparkV41DraftModel", "DeepSeekMTPModel", "DeepSeekV4MTPModel",
    "DeepseekV32MTPModel", "Dots3NoteMTPModel", "Eagle3DeepseekV3ForCausalLM", "Eagle3LlamaForCausalLM",
    "Eagle3MiniMaxM2ForCausalLM", "Eagle3Qwen2_5vlForCausalLM", "Eagle3Qwen3ForCausalLM",
    "Eagle3Qwen3vlForCausalLM", "EagleCohereForCausalLM", "EagleDeepSeekMTPModel", "EagleLlama4ForCausalLM",
    "EagleLlamaForCausalLM", "EagleMiniCPMForCausalLM", "EagleMistralForCausalLM",
    "EagleMistralLarge3ForCausalLM", "ErnieMTPModel", "Exaone4_5_MTP", "ExaoneMoeMTP", "Gemma4DSparkModel",
    "Gemma4MTPModel", "Glm4MoeLiteMTPModel", "Glm4MoeMTPModel", "Glm5NextMTPModel", "GlmOcrMTPModel",
    "HYV3MTPModel", "HYV4MTPModel", "InklingMTPModel", "InternS2MobiusMTP", "K3DSparkModel",
    "KimiK3MTPModel", "LongCatFlashMTPModel", "MiMoMTPModel", "MiMoV2MTPModel", "MiMoV2OmniMTPModel",
    "MiniMaxM3MTP", "MuseSparkDSparkModel", "NemotronHMTPModel", "OpenPanguMTPModel", "PEagleDraftModel",
    "ParseAuxMTPModel", "PeagleLlamaForCausalLM", "PeagleQwen3ForCausalLM", "Qwen3NextMTP",
    "Qwen3OmniDSparkModel", "Qwen3XPressModel", "Qwen3_5MTP", "Qwen3_5MoeMTP", "Qwen4ExpMTP", "Step5MTP",
)
DIFFUSION = ("LLaDA2MoeModelLM", "SDARForCausalLM", "SDARMoeForCausalLM", "DiffusionGemmaForBlockDiffusion")
ENCODERS = ("CLIPModel", "PixtralVisionModel")
BACKENDS = (
    "TransformersForCausalLM", "TransformersMoEForCausalLM", "TransformersMultiModalForCausalLM",
    "TransformersMultiModalMoEForCausalLM", "TransformersEmbeddingModel", "TransformersMoEEmbeddingModel",
    "TransformersMultiModalEmbeddingModel", "TransformersMultiModalMoEEmbeddingModel",
    "TransformersForSequenceClassification", "TransformersMoEForSequenceClassification",
    "TransformersMultiModalForSequenceClassification", "TransformersMultiModalMoEForSequenceClassification",
    "MindSporeForCausalLM", "ExtractHiddenStatesModel",
)
# Layouts read in the engines' model files but not modelled: architecture -> what is missing.
UNMODELLED = {
    "HrmTextForCausalLM": "hierarchical recurrent steps, each with its own prefix-LM attention cache",
    "PanguEmbeddedForCausalLM": "per-layer interleaved_sliding_window lists",
    "PanguProMoEV2ForCausalLM": "static sink attention",
    "Phi3SmallForCausalLM": "block-sparse attention on some layers",
    "Step5ForCausalLM": "Step-5 layer_types with MTP layers and per-type geometry",
    "Step5ForConditionalGeneration": "Step-5 layer_types with MTP layers and per-type geometry",
    "MuseSparkForConditionalGeneration": "Muse-Spark text layer_types and mlp_layer_types",
}

DRAFT_REASON = ("a draft model for speculative decoding: it runs only beside its target, whose report "
                "(--engine sglang --speculative-draft-layers N) sizes the draft pool")
DIFFUSION_REASON = "a diffusion language model: it denoises blocks of tokens, and its cache does not follow α·S + γ"
ENCODER_REASON = "a vision/text encoder: no generation, no KV cache"
BACKEND_REASON = ("an engine's own backend class, never a checkpoint's architecture: the config's model_type "
                  "must name the model")


def _architecture(cfg: ConfigView, names) -> str:
    return next((a for a in cfg.architectures if a in names), cfg.model_type or "unknown architecture")


@register(family="refused", architectures=DRAFTS, first=True, refuses=DRAFT_REASON, reads=("architectures",))
def draft_model(cfg: ConfigView) -> Layout:
    """Always raises: a draft model is sized with its target."""
    raise UnsupportedModelError(f"{_architecture(cfg, DRAFTS)} is {DRAFT_REASON}")


@register(family="refused", architectures=DIFFUSION, first=True, refuses=DIFFUSION_REASON, reads=("architectures",))
def diffusion_model(cfg: ConfigView) -> Layout:
    """Always raises: block diffusion does not decode token by token."""
    raise UnsupportedModelError(f"{_architecture(cfg, DIFFUSION)} is {DIFFUSION_REASON}")


@register(family="refused", architectures=ENCODERS, first=True, refuses=ENCODER_REASON, reads=("architectures",))
def encoder_tower(cfg: ConfigView) -> Layout:
    """Always raises: an encoder served alone keeps no KV cache."""
    raise UnsupportedModelError(f"{_architecture(cfg, ENCODERS)} is {ENCODER_REASON}")


@register(family="refused", architectures=BACKENDS, refuses=BACKEND_REASON, reads=("architectures",))
def engine_backend(cfg: ConfigView) -> Layout:
    """Always raises: reached only when the model type is unknown too."""
    raise UnsupportedModelError(f"{_architecture(cfg, BACKENDS)} is {BACKEND_REASON}")


@register(family="refused", architectures=tuple(UNMODELLED), first=True,
          refuses={arch: f"not modelled yet: {what}" for arch, what in UNMODELLED.items()}, reads=("architectures",))
def unmodelled(cfg: ConfigView) -> Layout:
    """Always raises, naming what the engine's model file does that hfkv does not model."""
    arch = _architecture(cfg, UNMODELLED)
    raise UnsupportedModelError(f"{arch}: not modelled yet: {UNMODELLED.get(arch, 'unknown layout')} "
                                "(hfkv would print a wrong figure)")
