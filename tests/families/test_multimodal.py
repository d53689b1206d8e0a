"""Multimodal wrappers (mappings/multimodal.py): Qwen2-VL, Qwen2.5-VL, Qwen3-VL (+MoE), Qwen2.5-Omni,
Qwen3-ASR, GLM-4.1V, MiniCPM4, MiniCPM-V, Molmo, Molmo2: the language model found by model type or
by its architectures, and the bytes per token the engines' own code gives.

Fixtures are transformers 5.24's config-class defaults (``-transformers-defaults``) or real config
facts. Every expected figure is derived by hand; the arithmetic is beside it. Only the language model keeps a
KV cache: the vision/audio towers' heads must
never be read."""

from __future__ import annotations

import pytest

from _helpers import load, report as inspect


# fixture -> (mapper, α by hand)
NAMED = {
    # text_config: 80 layers × 2 × 8 KV heads × (8192 / 64 = 128) × 2 B
    "Qwen__Qwen2-VL-transformers-defaults": ("qwen.qwen2", 80 * 2 * 8 * 128 * 2),  # 327680
    "Qwen__Qwen2.5-VL-transformers-defaults": ("qwen.qwen2", 80 * 2 * 8 * 128 * 2),  # 327680
    # text_config: 32 layers × 2 × 32 KV heads × head_dim 128 × 2 B
    "Qwen__Qwen3-VL-transformers-defaults": ("qwen.qwen2", 32 * 2 * 32 * 128 * 2),  # 524288
    # text_config: 24 layers × 2 × 16 KV heads × 128 × 2 B
    "Qwen__Qwen3-VL-MoE-transformers-defaults": ("qwen.qwen2", 24 * 2 * 16 * 128 * 2),  # 196608
    # thinker_config.text_config: 28 layers × 2 × 4 KV heads × (3584 / 28 = 128) × 2 B
    "Qwen__Qwen2.5-Omni-transformers-defaults": ("qwen.qwen2", 28 * 2 * 4 * 128 * 2),  # 57344
    # thinker_config.text_config: 28 layers × 2 × 8 KV heads × 128 × 2 B
    "Qwen__Qwen3-ASR-transformers-defaults": ("qwen.qwen2", 28 * 2 * 8 * 128 * 2),  # 114688
    # text_config: 40 layers × 2 × 2 KV heads × (4096 / 32 = 128) × 2 B
    "zai-org__GLM-4.1V-transformers-defaults": ("dense.dense", 40 * 2 * 2 * 128 * 2),  # 40960
    # text_config: 36 layers × 2 × 8 KV heads × 128 × 2 B
    "allenai__Molmo2-transformers-defaults": ("dense.dense", 36 * 2 * 8 * 128 * 2),  # 147456
    # 32 layers × 2 × 2 KV heads × (4096 / 32 = 128) × 2 B; sparse_config (InfLLM-v2) is not a window
    "openbmb__MiniCPM4-8B": ("dense.dense", 32 * 2 * 2 * 128 * 2),  # 32768
    # flat Qwen2 keys beside vision_config (27 layers, 16 heads: never read): 28 × 2 × 4 × 128 × 2
    "openbmb__MiniCPM-V-2_6": ("qwen.qwen2", 28 * 2 * 4 * 128 * 2),  # 57344
    # flat: 28 × 2 × 4 × (3584 / 28 = 128) × 2 B (fp32 checkpoint served in bf16)
    "allenai__Molmo-7B-D-0924": ("dense.dense", 28 * 2 * 4 * 128 * 2),  # 57344
}


@pytest.mark.parametrize("folder", sorted(NAMED))
def test_named_family_alpha(folder):
    mapper, alpha = NAMED[folder]
    rep = inspect(load(folder))
    assert rep.mapper == mapper
    assert rep.alpha_bytes_per_token == alpha and rep.gamma_bytes_per_request == 0
    assert not any("not known to hfkv" in w for w in rep.warnings)


def test_a_new_model_type_lands_by_architecture():
    data = load("Qwen__Qwen3-VL-transformers-defaults")
    data["model_type"] = "qwen3_vl_next"
    data["text_config"]["model_type"] = "qwen3_vl_next_text"
    rep = inspect(data)
    assert rep.mapper == "qwen.qwen2" and rep.alpha_bytes_per_token == 524288


def test_wrapper_maps_its_language_model_by_model_type():
    text = {"model_type": "mistral", "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
            "head_dim": 128, "hidden_size": 5120, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
            "sliding_window": None}  # written: MistralConfig's default is a 4,096 window
    data = {"model_type": "brand_new_vl", "architectures": ["LlavaForConditionalGeneration"], "text_config": text,
            "vision_config": {"num_hidden_layers": 24, "num_attention_heads": 16, "hidden_size": 1024}}
    rep = inspect(data)
    # resolved through the text model type (mistral → dense): 40 × 2 × 8 × 128 × 2
    assert rep.alpha_bytes_per_token == 40 * 2 * 8 * 128 * 2 == 163840


def test_wrapper_maps_its_language_model_by_text_architectures():
    text = {"model_type": "brand_new_text", "architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 24,
            "num_attention_heads": 14, "num_key_value_heads": 2, "hidden_size": 896, "use_sliding_window": False,
            "sliding_window": 32768, "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}
    data = {"model_type": "brand_new_chat", "architectures": ["InternVLChatModel"], "llm_config": text}
    rep = inspect(data)
    assert rep.mapper == "multimodal.language_model"
    assert any("mapped by qwen.qwen2" in note for note in rep.notes)  # through llm_config.architectures
    assert rep.alpha_bytes_per_token == 24 * 2 * 2 * 64 * 2 == 12288  # head_dim 896 / 14 = 64


def test_wrapper_with_an_unknown_flat_language_model_is_an_estimate():
    data = {"model_type": "brand_new_vl", "architectures": ["PaddleOCRVLForConditionalGeneration"],
            "num_hidden_layers": 18, "num_attention_heads": 16, "num_key_value_heads": 2, "hidden_size": 1024,
            "head_dim": 128, "torch_dtype": "bfloat16"}
    rep = inspect(data)
    assert rep.mapper == "multimodal.language_model"
    assert rep.alpha_bytes_per_token == 18 * 2 * 2 * 128 * 2 == 18432
    assert rep.warnings[0].startswith("estimate, not exact")


# Bytes per token each engine's own code computed for these fixtures (bf16, H200): vLLM 0.33.0's oracle
# (bytes_per_block ÷ block size 16 of its single full-attention group) and SGLang 0.5.23's oracle
# (bytes_per_token), run on the fixture files as they are. Where an oracle failed offline (remote code,
# a vision tower that TP 8 does not divide), the other engine's row stands.
ENGINE_BYTES_PER_TOKEN = {
    ("Qwen__Qwen2-VL-transformers-defaults", 1): 5242880 // 16,  # vLLM: 327680
    ("Qwen__Qwen2-VL-transformers-defaults", 8): 655360 // 16,  # vLLM: 40960
    ("Qwen__Qwen2.5-VL-transformers-defaults", 1): 327680,  # vLLM 5242880 / 16; SGLang 327680
    ("Qwen__Qwen2.5-VL-transformers-defaults", 8): 40960,  # SGLang
    ("Qwen__Qwen3-VL-transformers-defaults", 1): 8388608 // 16,  # vLLM: 524288
    ("Qwen__Qwen3-VL-transformers-defaults", 8): 1048576 // 16,  # vLLM: 65536
    ("Qwen__Qwen3-VL-MoE-transformers-defaults", 1): 196608,  # SGLang; vLLM 3145728 / 16 (norm_topk_prob added)
    ("Qwen__Qwen3-VL-MoE-transformers-defaults", 8): 24576,  # SGLang; vLLM 393216 / 16
    ("Qwen__Qwen2.5-Omni-transformers-defaults", 1): 917504 // 16,  # vLLM: 57344 (TP 8: 28 heads, vLLM refuses)
    ("Qwen__Qwen3-ASR-transformers-defaults", 1): 1835008 // 16,  # vLLM: 114688
    ("Qwen__Qwen3-ASR-transformers-defaults", 8): 229376 // 16,  # vLLM: 14336
    ("zai-org__GLM-4.1V-transformers-defaults", 1): 655360 // 16,  # vLLM: 40960; SGLang 40960
    ("zai-org__GLM-4.1V-transformers-defaults", 8): 20480,  # SGLang
    ("openbmb__MiniCPM4-8B", 1): 32768,  # SGLang
    ("openbmb__MiniCPM4-8B", 8): 16384,  # SGLang: 2 KV heads replicated to 1 per rank
    ("openbmb__MiniCPM-V-2_6", 1): 57344,  # SGLang
    ("openbmb__MiniCPM-V-2_6", 8): 14336,  # SGLang
    ("LiquidAI__LFM2.5-Embedding-350M", 1): 12288,  # SGLang (state 40960 per request)
    ("LiquidAI__LFM2.5-Embedding-350M", 8): 1536,  # SGLang (state 5120 per request)
    ("baidu__Unlimited-OCR", 1): 983040 // 16,  # vLLM: 61440 (RSWASpec, full attention); SGLang 61440
    ("baidu__Unlimited-OCR", 8): 6144,  # SGLang's sizing (10 KV heads → 1 per rank); vLLM refuses 10 heads on 8
}


@pytest.mark.parametrize("folder, tp", sorted(ENGINE_BYTES_PER_TOKEN))
def test_bytes_per_token_match_the_engines_own_code(folder, tp):
    rep = inspect(load(folder), tensor_parallel_size=tp)
    assert rep.alpha_bytes_per_token == ENGINE_BYTES_PER_TOKEN[folder, tp]


@pytest.mark.parametrize("model_type", [
    "aria", "cohere_compass", "cosmos3_edge", "ernie4_5_vl_moe", "glm_ocr", "granite4_vision", "paddleocr_vl",
])
def test_wrapper_text_models_are_named_dense_families(model_type):
    """transformers' defaults of each wrapper: the text model is plain GQA on every layer, so
    α = L × 2 × K × head_dim × 2 B from its text_config (head_dim = hidden / heads when absent)."""
    transformers = pytest.importorskip("transformers")
    data = transformers.CONFIG_MAPPING[model_type]().to_dict()
    text = data["text_config"]
    heads, kv = text["num_attention_heads"], text.get("num_key_value_heads") or text["num_attention_heads"]
    dim = text.get("head_dim") or text["hidden_size"] // heads
    rep = inspect(data)
    assert rep.mapper == "dense.dense"
    assert rep.alpha_bytes_per_token == text["num_hidden_layers"] * 2 * kv * dim * 2
    assert not any(w.startswith("estimate") for w in rep.warnings)
