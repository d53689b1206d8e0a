"""What SGLang 0.5.23's transformers fallback does with an architecture it has no native class for.

``model_loader/utils.py:resolve_transformers_arch`` looks the architecture up as an attribute of the
``transformers`` package (5.19.0, the version SGLang 0.5.23 pins). Found and
``is_backend_compatible()`` (its ``_supports_attention_backend``): SGLang serves it through
``Transformers*ForCausalLM``. Found but not compatible: "has no SGlang implementation and the
Transformers implementation is not compatible with SGLang". Not found and no ``AutoModel`` in the
config's ``auto_map``: "Cannot find model module". The tables below list, for every class name of that
transformers release ending in ``ForCausalLM``, ``LMHeadModel`` or ``ForConditionalGeneration`` that is
not an SGLang ``EntryClass``, which side it falls on; they were read by importing each class in the
SGLang oracle's environment (``../shared/tools/sglang-oracle``) and calling
``is_backend_compatible()``. Regenerate them the same way when the pinned versions move.
"""

from __future__ import annotations

TRANSFORMERS_VERSION = "5.19.0"

# The names these tables cover; an architecture spelled otherwise is not classified (hfkv says so).
COVERED_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")

BACKEND_COMPATIBLE = frozenset({
    "AXK1ForCausalLM", "AXK2ForCausalLM", "AriaForConditionalGeneration", "AriaTextForCausalLM",
    "AudioFlamingo3ForConditionalGeneration", "AyaVisionForConditionalGeneration", "BertLMHeadModel",
    "BitNetForCausalLM", "Blip2ForConditionalGeneration", "CTRLLMHeadModel", "CamembertForCausalLM",
    "ChameleonForConditionalGeneration", "CohereCompassForCausalLM", "CohereCompassForConditionalGeneration",
    "Cosmos3OmniForConditionalGeneration", "CsmDepthDecoderForCausalLM", "CsmForConditionalGeneration",
    "CwmForCausalLM", "Data2VecTextForCausalLM", "DeepseekOcr2ForConditionalGeneration", "DiffLlamaForCausalLM",
    "DogeForCausalLM", "Dots1ForCausalLM", "ElectraForCausalLM", "Emu3ForCausalLM",
    "Emu3ForConditionalGeneration", "Ernie4_5ForCausalLM", "Ernie4_5_VL_MoeForConditionalGeneration",
    "ErnieForCausalLM", "Exaone4_5_ForConditionalGeneration", "FastVlmForConditionalGeneration",
    "FlexOlmoForCausalLM", "FunAsrNanoForConditionalGeneration", "FuyuForCausalLM", "GPTNeoXForCausalLM",
    "Gemma4UnifiedForCausalLM", "Glm46VForConditionalGeneration", "GlmForCausalLM",
    "GotOcr2ForConditionalGeneration", "Granite4VisionForConditionalGeneration",
    "GraniteSpeechForConditionalGeneration", "GraniteSpeechPlusForConditionalGeneration", "HeliumForCausalLM",
    "HiggsAudioV2ForConditionalGeneration", "HunYuanVLForConditionalGeneration", "HyperCLOVAXForCausalLM",
    "HyperCLOVAXVisionV2ForConditionalGeneration", "Idefics2ForConditionalGeneration",
    "Idefics3ForConditionalGeneration", "InstructBlipForConditionalGeneration",
    "InstructBlipVideoForConditionalGeneration", "InternVLForConditionalGeneration", "Jais2ForCausalLM",
    "JetMoeForCausalLM", "Kimi_K25ForConditionalGeneration", "Kosmos2ForConditionalGeneration",
    "Kosmos2_5ForConditionalGeneration", "KyutaiSpeechToTextForConditionalGeneration",
    "LightOnOcrForConditionalGeneration", "LlavaNextForConditionalGeneration",
    "LlavaNextVideoForConditionalGeneration", "LlavaOnevisionForConditionalGeneration", "MiniMaxForCausalLM",
    "MiniMaxM3VLForCausalLM", "MinistralForCausalLM", "Mistral4ForCausalLM", "MllamaForCausalLM",
    "ModernBertDecoderForCausalLM", "MoshiForCausalLM", "MoshiForConditionalGeneration",
    "MusicFlamingoForConditionalGeneration", "NanoChatForCausalLM", "NemotronForCausalLM", "Olmo3ForCausalLM",
    "Ovis2ForConditionalGeneration", "PI0ForConditionalGeneration", "PaliGemmaForConditionalGeneration",
    "PerceptionLMForConditionalGeneration", "Phi4MultimodalForCausalLM", "PhimoeForCausalLM",
    "QianfanOCRForConditionalGeneration", "Qwen2_5OmniForConditionalGeneration",
    "Qwen2_5OmniPreTrainedModelForConditionalGeneration", "Qwen2_5OmniTalkerForConditionalGeneration",
    "Qwen2_5OmniThinkerForConditionalGeneration", "Qwen3OmniMoePreTrainedModelForConditionalGeneration",
    "Qwen3OmniMoeTalkerCodePredictorModelForConditionalGeneration",
    "Qwen3OmniMoeTalkerForConditionalGeneration", "Qwen3OmniMoeThinkerForConditionalGeneration",
    "RecurrentGemmaForCausalLM", "RoCBertForCausalLM", "RobertaForCausalLM", "RobertaPreLayerNormForCausalLM",
    "SeedOssForCausalLM", "SmolLM3ForCausalLM", "SmolVLMForConditionalGeneration", "SolarOpenForCausalLM",
    "T5Gemma2ForConditionalGeneration", "T5GemmaForConditionalGeneration", "VaultGemmaForCausalLM",
    "VibeVoiceAsrForConditionalGeneration", "VibeVoiceForConditionalGeneration",
    "VideoLlama3ForConditionalGeneration", "VideoLlavaForConditionalGeneration",
    "VipLlavaForConditionalGeneration", "VoxtralRealtimeForConditionalGeneration", "XLMRobertaForCausalLM",
    "XLMRobertaXLForCausalLM", "XmodForCausalLM", "YoutuForCausalLM"
})

BACKEND_INCOMPATIBLE = frozenset({
    "BambaForCausalLM", "BartForCausalLM", "BartForConditionalGeneration", "BigBirdForCausalLM",
    "BigBirdPegasusForCausalLM", "BigBirdPegasusForConditionalGeneration", "BioGptForCausalLM",
    "BlenderbotForCausalLM", "BlenderbotForConditionalGeneration", "BlenderbotSmallForCausalLM",
    "BlenderbotSmallForConditionalGeneration", "BlipForConditionalGeneration", "BlipTextLMHeadModel",
    "BloomForCausalLM", "BltForCausalLM", "CanaryForConditionalGeneration", "ClvpForCausalLM",
    "ClvpModelForConditionalGeneration", "CodeGenForCausalLM", "CohereAsrForConditionalGeneration",
    "CpmAntForCausalLM", "DeepseekVLForConditionalGeneration", "DeepseekVLHybridForConditionalGeneration",
    "DiaForConditionalGeneration", "FSMTForConditionalGeneration", "FalconForCausalLM",
    "FlaubertWithLMHeadModel", "Florence2ForConditionalGeneration", "GPTNeoForCausalLM",
    "GPTNeoXJapaneseForCausalLM", "GitForCausalLM", "InklingForCausalLM", "JambaForCausalLM",
    "JanusForConditionalGeneration", "LEDForConditionalGeneration", "LongT5ForConditionalGeneration",
    "M2M100ForConditionalGeneration", "MBartForCausalLM", "MBartForConditionalGeneration",
    "MT5ForConditionalGeneration", "MarianForCausalLM", "MegatronBertForCausalLM",
    "MoonshineForConditionalGeneration", "MoonshineStreamingForConditionalGeneration", "MptForCausalLM",
    "MusicgenForCausalLM", "MusicgenForConditionalGeneration", "MusicgenMelodyForCausalLM",
    "MusicgenMelodyForConditionalGeneration", "MvpForCausalLM", "MvpForConditionalGeneration",
    "NllbMoeForConditionalGeneration", "OlmoHybridForCausalLM", "OpenAIGPTLMHeadModel", "PLBartForCausalLM",
    "PLBartForConditionalGeneration", "PPFormulaNetForConditionalGeneration", "PegasusForCausalLM",
    "PegasusForConditionalGeneration", "PegasusXForConditionalGeneration", "Pix2StructForConditionalGeneration",
    "Pop2PianoForConditionalGeneration", "ProphetNetForCausalLM", "ProphetNetForConditionalGeneration",
    "Qwen4ExpForCausalLM", "RemBertForCausalLM", "RoFormerForCausalLM", "RwkvForCausalLM",
    "SeamlessM4TTextToUnitForConditionalGeneration", "Speech2TextForConditionalGeneration",
    "SwitchTransformersForConditionalGeneration", "T5ForConditionalGeneration", "TrOCRForCausalLM",
    "UMT5ForConditionalGeneration", "UdopForConditionalGeneration", "WhisperForCausalLM", "XGLMForCausalLM",
    "XLMWithLMHeadModel", "XLNetLMHeadModel", "Zamba2ForCausalLM", "ZambaForCausalLM"
})
