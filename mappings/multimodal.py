"""Multimodal wrappers: a vision or audio encoder in front of a decoder-only language model.

Only the language model keeps a KV cache (the engines run the encoders without one), so the
report is its language model's: the text sub-config the view picked (``text_config``,
``llm_config``, ``llm_cfg``, ``language_config``, ``thinker_config``) is mapped by its own
``model_type`` or ``architectures``, as vLLM builds the inner model from that sub-config. Wrappers
that are registered by name with a family module (Qwen2-VL, GLM-4.1V, MiniCPM-V, Molmo, ...) never
reach this mapper.

A wrapper whose language model cannot be identified (a flat config of an unknown family, or a
sub-config of a new model type) is read from the standard keys of that sub-config and labelled an
estimate.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import Layout

from hfkv.mappings.readers.layer_builders import pattern_layout
from hfkv.mappings.registry import register, resolve_language_model

WRAPPERS = (
    "AriaForConditionalGeneration", "AudioFlamingo3ForConditionalGeneration", "BagelForConditionalGeneration",
    "BailingMM2NativeForConditionalGeneration", "BailingMMNativeForConditionalGeneration",
    "BailingMoeV3VLForConditionalGeneration", "BeeForConditionalGeneration", "Blip2ForConditionalGeneration",
    "Cohere2VisionForConditionalGeneration", "CohereCompassForConditionalGeneration",
    "Cosmos3EdgeForConditionalGeneration", "DeepseekOCR2ForCausalLM", "DeepseekOCRForCausalLM",
    "DeepseekVL2ForCausalLM", "DeepseekVLV2ForCausalLM", "DotsOCRForCausalLM", "DotsVLMForCausalLM",
    "Eagle2_5_VLForConditionalGeneration", "Emu3ForConditionalGeneration", "Ernie4_5_VLMoeForConditionalGeneration",
    "FireRedASR2ForConditionalGeneration", "FunASRForConditionalGeneration", "FunAudioChatForConditionalGeneration",
    "GlmAsrForConditionalGeneration", "GlmImageForConditionalGeneration", "GlmOcrForConditionalGeneration",
    "Granite4VisionForConditionalGeneration", "GraniteSpeechForConditionalGeneration",
    "GraniteSpeechPlusForConditionalGeneration", "H2OVLChatModel", "HCXVisionV2ForCausalLM", "HfMoondream",
    "HunYuanVLForConditionalGeneration",
    "Idefics3ForConditionalGeneration", "InternS1ForConditionalGeneration", "InternS1ProForConditionalGeneration",
    "InternS2MobiusForConditionalGeneration", "InternVLChatModel", "InternVLForConditionalGeneration",
    "IsaacForConditionalGeneration", "JetVLMForConditionalGeneration", "KananaVForConditionalGeneration",
    "KeyeForConditionalGeneration", "KeyeVL1_5ForConditionalGeneration", "Llama_Nemotron_Nano_VL",
    "LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration", "LlavaNextVideoForConditionalGeneration",
    "LlavaOnevision2ForConditionalGeneration", "LlavaOnevisionForConditionalGeneration", "LlavaVidForCausalLM",
    "LightOnOCRForConditionalGeneration", "LocateAnythingForConditionalGeneration", "MiDashengLMModel",
    "MiMoV2OmniForCausalLM", "MiniCPMOcrForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration",
    "MiniCPMV4_7ForConditionalGeneration", "Mistral3ForConditionalGeneration",
    "Moondream3ForCausalLM", "MoonshotKimiaForCausalLM", "MossAudioModel",
    "MossTranscribeDiarizeForConditionalGeneration", "MultiModalityCausalLM", "NVILAForConditionalGeneration",
    "NVILALiteForConditionalGeneration", "NVLM_D", "NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Nano_VL_V2",
    "NemotronH_Omni_Reasoning_V3", "NemotronH_Super_Omni_Reasoning_V3", "OpenCUAForConditionalGeneration",
    "OpenPanguVLForConditionalGeneration", "OpenVLAForActionPrediction", "Ovis", "Ovis2_5", "Ovis2_6ForCausalLM",
    "Ovis2_6_MoeForCausalLM", "Phi4ForCausalLMV", "POINTSV15ChatModel", "PaddleOCRVLForConditionalGeneration",
    "PaliGemmaForConditionalGeneration", "PixtralForConditionalGeneration", "QianfanOCRForConditionalGeneration",
    "RForConditionalGeneration", "Sarashina2VisionForCausalLM", "SkyworkR1VChatModel",
    "SmolVLMForConditionalGeneration", "Step3VLForConditionalGeneration", "StepVLForConditionalGeneration",
    "UltravoxModel", "VibeVoiceAsrForConditionalGeneration", "VoxtralForConditionalGeneration",
    "VoxtralRealtimeGeneration",
)


@register(family="multimodal", architectures=WRAPPERS, reads=("model_type", "architectures"))
def language_model(cfg: ConfigView) -> Layout:
    """The language model's layout (its own mapper), with a note naming the wrapper."""
    wrapper = next((a for a in cfg.architectures if a in WRAPPERS), cfg.model_type or "wrapper")
    inner = resolve_language_model(cfg, skip="multimodal.language_model")
    where = cfg.text_key or "the root config"
    if inner is None:
        layout = pattern_layout(cfg, default_window=None, default_rule=None)
        layout.warnings.insert(0, f"estimate, not exact: the language model of {wrapper} ({where}, model type "
                                  f"{cfg.text_model_type!r}) is not a known family; figures come from its standard keys")
        return layout
    layout = inner(cfg)
    layout.notes.insert(0, f"{wrapper}: only its language model ({where}, mapped by {inner.name}) keeps a KV cache; "
                           "the vision/audio encoders keep none")
    return layout
