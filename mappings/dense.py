"""Dense attention (MHA / GQA / MQA) for the many families with no layer pattern of their own:
every layer full, or windowed on every layer when the config sets ``sliding_window`` (Mistral,
Phi-3, PhiMoE: vLLM applies it to all layers), or as ``layer_types`` says.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import Layout

from hfkv.mappings.readers.attention_keys import GQA_READS, KV_HEAD_KEYS
from hfkv.mappings.readers.layer_builders import pattern_layout
from hfkv.mappings.registry import register


# Model types whose config class defaults the KV heads to fewer than the query heads (GlmConfig 2,
# SeedOssConfig 8, Emu3TextConfig 8): save_pretrained leaves out a count equal to that default.
CLASS_KV_DEFAULTS = frozenset({"glm", "seed_oss", "emu3_text_model"})


def class_kv_heads(cfg: ConfigView) -> None:
    """When the config writes no KV-head count, load the config class's defaults first, so that every
    attention layer reads the class's count rather than assuming MHA (a count equal to the class default
    is what ``save_pretrained`` leaves out; ``kv_heads`` reads class defaults once they are loaded)."""
    if not any(cfg.present(key) for key in KV_HEAD_KEYS):
        cfg.optional_int("num_key_value_heads", minimum=1, defaults=True)


@register(
    family="dense",
    model_types=(
        "llama", "mistral", "mixtral", "ministral", "ministral3", "gpt2", "gpt_bigcode", "opt", "bloom",
        "falcon", "RefinedWeb", "RefinedWebModel", "gemma", "phi", "phi3", "phimoe", "glm4_moe", "glm4",
        "glm", "minimax_m2", "chatglm", "mpt", "dbrx", "baichuan", "internlm2", "starcoder2", "gpt_neox",
        "gptj", "stablelm", "olmo", "olmo2", "olmoe", "granite", "granitemoe", "cohere", "deepseek", "qwen",
        "yi", "nemotron", "arcee", "seed_oss", "ernie4_5", "ernie4_5_moe", "bailing_moe", "exaone", "persimmon", "codegen", "gpt_neo", "xverse", "step3",
        "openelm", "granitemoeshared", "grok-1", "hyperclovax", "orion", "solar", "minicpm", "molmo",
        "glm4v", "glm4v_text", "glm4v_moe", "glm4v_moe_text", "phi3_v", "phi4mm", "internlm3", "molmo2",
        "molmo2_text", "aria_text", "cohere_compass_text", "cosmos3_edge_text", "ernie4_5_vl_moe_text",
        "glm_ocr_text", "granite4_vision_text", "paddleocr_vl_text", "flex_olmo", "jais2", "emu3_text_model",
    ),
    architectures=(
        "LLaMAForCausalLM", "RWForCausalLM", "ChatGLMModel", "MPTForCausalLM", "ArceeForCausalLM",
        "BaichuanForCausalLM", "BailingMoEForCausalLM", "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM",
        "BloomForCausalLM", "ChatGLMForConditionalGeneration", "CohereForCausalLM", "DbrxForCausalLM",
        "DeepseekForCausalLM", "Ernie4_5ForCausalLM", "Ernie4_5_ForCausalLM", "Ernie4_5_MoeForCausalLM",
        "ExaoneForCausalLM", "FalconForCausalLM", "GPT2LMHeadModel", "GPTBigCodeForCausalLM",
        "GPTJForCausalLM", "GPTNeoForCausalLM", "GPTNeoXForCausalLM", "GemmaForCausalLM", "Glm4ForCausalLM",
        "Glm4MoeForCausalLM", "GraniteForCausalLM", "GraniteMoeForCausalLM", "GraniteMoeSharedForCausalLM",
        "Grok1ForCausalLM", "Grok1ModelForCausalLM", "HYV3ForCausalLM", "HyperCLOVAXForCausalLM", "IQuestCoderForCausalLM", "InternLM2ForCausalLM",
        "InternLM3ForCausalLM", "LlamaForCausalLM", "MiniCPMForCausalLM", "MiniMaxM2ForCausalLM",
        "Ministral3ForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "NemotronForCausalLM",
        "OPTForCausalLM", "Olmo2ForCausalLM", "OlmoForCausalLM", "OlmoeForCausalLM", "OpenELMForCausalLM",
        "OrionForCausalLM", "Param2MoEForCausalLM", "PersimmonForCausalLM", "Phi3ForCausalLM",
        "PhiForCausalLM", "PhiMoEForCausalLM", "QWenLMHeadModel", "QuantMixtralForCausalLM",
        "SarvamMoEForCausalLM", "SolarForCausalLM", "StableLmForCausalLM", "Starcoder2ForCausalLM",
        "Step1ForCausalLM", "Step3TextForCausalLM", "TeleChat2ForCausalLM", "TeleChat3ForCausalLM",
        "TeleFLMForCausalLM", "TorchNativeLlamaForCausalLM", "TorchNativePhi3ForCausalLM",
        "XverseForCausalLM", "XverseMoeForCausalLM", "GLM4VForCausalLM", "Glm4vForConditionalGeneration",
        "Glm4vMoeForConditionalGeneration", "MolmoForCausalLM", "Phi3VForCausalLM", "Phi4MMForCausalLM",
        "LlavaLlamaForCausalLM", "LlavaMistralForCausalLM", "YiVLForCausalLM",
        "Molmo2ForConditionalGeneration",
        # vLLM serves these through its Transformers backend (one Attention per layer, no window).
        "FlexOlmoForCausalLM", "GlmForCausalLM", "Jais2ForCausalLM", "SeedOssForCausalLM",
    ),
    reads=GQA_READS,
    ignores={"sparse_config": ("MiniCPM4's InfLLM-v2: block-sparse reads over a full KV cache (vLLM and SGLang "
                               "allocate every token's KV)")},
    fixtures={
        "llama": "meta-llama__Meta-Llama-3.1-8B", "mistral": "Hugofernandez__Mistral-7B-v0.1-colab-sharded",
        "gemma": "google__gemma-2b-it", "falcon": "tiiuae__falcon-180B-chat",
        "RefinedWeb": "tiiuae__falcon-40b", "bloom": "bigscience__bloom", "opt": "facebook__opt-125m",
        "phi3": "microsoft__Phi-3-mini-4k-instruct", "phimoe": "microsoft__Phi-mini-MoE-instruct",
        "chatglm": "THUDM__chatglm2-6b", "mpt": "replit__replit-code-v1_5-3b",
        "glm4_moe": "zai-org__GLM-4.5", "mixtral": "mistralai__Mixtral-8x22B-v0.1",
        "gpt_neo": "EleutherAI__gpt-neo-125m", "openelm": "apple__OpenELM-270M",
        "glm4v": "zai-org__GLM-4.1V-transformers-defaults",
        "minicpm": "openbmb__MiniCPM4-8B",
        "molmo": "allenai__Molmo-7B-D-0924",
        "molmo2": "allenai__Molmo2-transformers-defaults",
        "flex_olmo": "allenai__FlexOlmo-7x7B-1T-transformers-defaults",
        "glm": "THUDM__glm-4-9b-chat-transformers-defaults",
        "jais2": "inceptionai__Jais-2-8B-Chat-transformers-defaults",
        "seed_oss": "ByteDance-Seed__Seed-OSS-36B-Instruct-transformers-defaults",
        "emu3_text_model": "Emu3-community__Emu3-Chat-hf-transformers-defaults",
    },
)
def dense(cfg: ConfigView) -> Layout:
    """Every layer full; a ``sliding_window`` (or ``layer_types``) windows the layers it names."""
    if CLASS_KV_DEFAULTS & {cfg.model_type, cfg.text_model_type}:
        class_kv_heads(cfg)
    return pattern_layout(cfg, default_window=None, default_rule=None)


@register(
    family="dense",
    model_types=("hunyuan_vl_text",),
    reads=GQA_READS + ("attention_head_dim",),
    fixtures={"hunyuan_vl_text": "tencent__HunyuanOCR-transformers-defaults"},
)
def hunyuan_vl_text(cfg: ConfigView) -> Layout:
    """HunYuanVL's text model: every layer full. Its checkpoints may spell ``head_dim`` as
    ``attention_head_dim`` (HunYuanVLTextConfig.attribute_map), which the config class resolves, so
    head_dim is asked of the class before falling back to hidden/heads."""
    class_kv_heads(cfg)  # HunYuanVLTextConfig: None → the query heads, but read the class consistently
    return pattern_layout(cfg, default_window=None, default_rule=None, head_dim_defaults=True)
