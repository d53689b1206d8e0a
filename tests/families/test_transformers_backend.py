"""The 11 architectures vLLM 0.33.0 serves only through its Transformers modeling backend
(``vllm.facts.transformers_registered()``) that hfkv's mappers had not known by name, mapped by
mappings/dense.py, sliding.py, multimodal.py (the engine's side:
tests/engines/vllm/test_transformers_families.py).

Each fixture (``fixtures/*-transformers-defaults``, README in each) writes its config class's defaults
(transformers 5.20.2). Expected figures are derived by hand from those classes, arithmetic beside them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hfkv.inspection import inspect_config
from hfkv.mappings.registry import known_architectures
from hfkv.model.options import Options


TESTS = Path(__file__).resolve().parents[1]

FIXTURES = TESTS.parent / "fixtures"


# fixture -> (architecture, mapper, bytes per token at TP 1 bf16, at TP 8 bf16). K + V = 2, bf16 = 2 B;
# at TP 8 each rank keeps max(1, KV heads // 8) heads. Only the full layers count per token.
FAMILIES = {
    # CwmConfig: 64 layers, i % 4 == 0 full → 16 full; 8 KV heads × head_dim 128
    "facebook__cwm": ("CwmForCausalLM", "sliding.sliding_hybrid",
                      16 * 2 * 8 * 128 * 2,  # = 65536
                      16 * 2 * 1 * 128 * 2),  # = 8192
    # FlexOlmoConfig: 32 layers, KV heads None → 32 query heads, head_dim 4096 / 32 = 128
    "allenai__FlexOlmo-7x7B-1T": ("FlexOlmoForCausalLM", "dense.dense",
                                  32 * 2 * 32 * 128 * 2,  # = 524288
                                  32 * 2 * 4 * 128 * 2),  # = 65536
    # GlmConfig: 40 layers, 2 KV heads × head_dim 128
    "THUDM__glm-4-9b-chat": ("GlmForCausalLM", "dense.dense",
                             40 * 2 * 2 * 128 * 2,  # = 40960
                             40 * 2 * 1 * 128 * 2),  # = 20480
    # Jais2Config: 32 layers, KV heads None → 26, head_dim 3328 / 26 = 128
    "inceptionai__Jais-2-8B-Chat": ("Jais2ForCausalLM", "dense.dense",
                                    32 * 2 * 26 * 128 * 2,  # = 425984
                                    32 * 2 * 3 * 128 * 2),  # = 49152 (26 // 8 = 3)
    # Kolibri1Config: 50 layers, (i + 1) % 5 == 0 full → 10 full; 4 KV heads × head_dim 128 (not 2560 / 48)
    "Aleph-Alpha__Kolibri-1": ("Kolibri1ForCausalLM", "sliding.sliding_hybrid",
                               10 * 2 * 4 * 128 * 2,  # = 20480
                               10 * 2 * 1 * 128 * 2),  # = 5120
    # SeedOssConfig: 64 layers, 8 KV heads × head_dim 128
    "ByteDance-Seed__Seed-OSS-36B-Instruct": ("SeedOssForCausalLM", "dense.dense",
                                              64 * 2 * 8 * 128 * 2,  # = 262144
                                              64 * 2 * 1 * 128 * 2),  # = 32768
    # SmolLM3Config: 36 layers, all full (use_sliding_window false); 4 KV heads × 2048 / 16 = 128
    "HuggingFaceTB__SmolLM3-3B": ("SmolLM3ForCausalLM", "sliding.sliding_hybrid",
                                  36 * 2 * 4 * 128 * 2,  # = 73728
                                  36 * 2 * 1 * 128 * 2),  # = 18432
    # VaultGemmaConfig: 26 layers alternating, 13 full; 4 KV heads × head_dim 256 (not 2304 / 8)
    "google__vaultgemma-1b": ("VaultGemmaForCausalLM", "sliding.sliding_hybrid",
                              13 * 2 * 4 * 256 * 2,  # = 53248
                              13 * 2 * 1 * 256 * 2),  # = 13312
    # Emu3TextConfig: 32 layers, 8 KV heads × 4096 / 32 = 128
    "Emu3-community__Emu3-Chat-hf": ("Emu3ForConditionalGeneration", "dense.dense",
                                     32 * 2 * 8 * 128 * 2,  # = 131072
                                     32 * 2 * 1 * 128 * 2),  # = 16384
    # HunYuanVLTextConfig: 32 layers, KV heads None → 32, head_dim None → 4096 / 32 = 128
    "tencent__HunyuanOCR": ("HunYuanVLForConditionalGeneration", "dense.hunyuan_vl_text",
                            32 * 2 * 32 * 128 * 2,  # = 524288
                            32 * 2 * 4 * 128 * 2),  # = 65536
    # VibeVoiceAsrConfig's text_config is a Qwen2Config: 32 layers, 32 KV heads × 128, no window
    "microsoft__VibeVoice-ASR-HF": ("VibeVoiceAsrForConditionalGeneration", "qwen.qwen2",
                                    32 * 2 * 32 * 128 * 2,  # = 524288
                                    32 * 2 * 4 * 128 * 2),  # = 65536
}

MULTIMODAL = ("Emu3-community__Emu3-Chat-hf", "tencent__HunyuanOCR", "microsoft__VibeVoice-ASR-HF")


def config(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}-transformers-defaults" / "config.json").read_text())


def report(name: str, **options):
    return inspect_config(config(name), model=name, options=Options(**options))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_bytes_per_token_by_hand(name):
    arch, mapper, tp1, tp8 = FAMILIES[name]
    assert known_architectures()[arch].name == ("multimodal.language_model" if name in MULTIMODAL else mapper)
    one, eight = report(name, kv_cache_dtype="bf16"), report(name, kv_cache_dtype="bf16", tensor_parallel_size=8)
    assert one.mapper == mapper and eight.mapper == mapper
    assert not [w for w in one.warnings if "not known" in w or "estimate" in w], one.warnings
    assert one.alpha_bytes_per_token == tp1
    assert eight.alpha_bytes_per_token == tp8


def test_a_new_model_type_lands_by_architecture():
    """A config whose model_type hfkv does not know still reaches the mapper by its architecture."""
    for name in ("facebook__cwm", "Aleph-Alpha__Kolibri-1", "google__vaultgemma-1b", "THUDM__glm-4-9b-chat"):
        data = dict(config(name), model_type="brand_new")
        rep = inspect_config(data, model=name, options=Options(kv_cache_dtype="bf16"))
        assert rep.alpha_bytes_per_token == FAMILIES[name][2]


# save_pretrained leaves out what equals the class default: fixtures with those keys dropped.
SPARSE = {
    "facebook__cwm": ("num_key_value_heads", "head_dim", "sliding_window"),  # CwmConfig: 8, 128, 8192
    "Aleph-Alpha__Kolibri-1": ("num_key_value_heads", "head_dim", "sliding_window"),  # 4, 128, 513
    "google__vaultgemma-1b": ("num_key_value_heads", "head_dim"),  # 4, 256
    "HuggingFaceTB__SmolLM3-3B": ("num_key_value_heads",),  # 4
    "ByteDance-Seed__Seed-OSS-36B-Instruct": ("num_key_value_heads", "head_dim"),  # 8, 128
    "THUDM__glm-4-9b-chat": ("num_key_value_heads", "head_dim"),  # 2, 128
    "Emu3-community__Emu3-Chat-hf": ("text_config.num_key_value_heads",),  # 8
}


@pytest.mark.parametrize("name", sorted(SPARSE))
def test_keys_left_at_the_class_default_are_read_from_the_class(name):
    """A KV-head count left out is the class's (CwmConfig's 8 of 48 heads), on every layer, not MHA:
    the same bytes per token and per request as the full fixture."""
    data = config(name)
    for key in SPARSE[name]:
        scope, _, leaf = key.rpartition(".")
        (data[scope] if scope else data).pop(leaf)
    sparse = inspect_config(data, model=name, options=Options(kv_cache_dtype="bf16"))
    full = report(name, kv_cache_dtype="bf16")
    assert sparse.alpha_bytes_per_token == FAMILIES[name][2]
    assert sparse.gamma_bytes_per_request == full.gamma_bytes_per_request
    assert "num_key_value_heads" in sparse.transformers_defaults


def kinds(name: str) -> list[tuple[str, int | None]]:
    return [(layer.kind, getattr(layer.parts[0], "window", None)) for layer in report(name)._layers]


def test_window_patterns_follow_the_config_classes():
    # CwmConfig.__post_init__: "full_attention" if i % 4 == 0 else "sliding_attention"; window 8192.
    assert kinds("facebook__cwm") == [("full", None) if i % 4 == 0 else ("sliding", 8192) for i in range(64)]
    # Kolibri1Config: "full_attention" if (i + 1) % 5 == 0; window 513.
    assert kinds("Aleph-Alpha__Kolibri-1") == [("full", None) if (i + 1) % 5 == 0 else ("sliding", 513)
                                               for i in range(50)]
    # VaultGemmaConfig: "sliding_attention" if (i + 1) % 2 else "full_attention"; window 4096.
    assert kinds("google__vaultgemma-1b") == [("sliding", 4096) if (i + 1) % 2 else ("full", None)
                                              for i in range(26)]
    # SmolLM3Config: sliding only with use_sliding_window (false here).
    assert kinds("HuggingFaceTB__SmolLM3-3B") == [("full", None)] * 36


def test_sliding_layers_are_a_constant_per_request():
    """γ: each sliding layer keeps its window W of K + V (bf16)."""
    assert report("facebook__cwm").gamma_bytes_per_request == 48 * 8192 * 2 * 8 * 128 * 2 == 1610612736
    assert report("Aleph-Alpha__Kolibri-1").gamma_bytes_per_request == 40 * 513 * 2 * 4 * 128 * 2 == 42024960
    assert report("google__vaultgemma-1b").gamma_bytes_per_request == 13 * 4096 * 2 * 4 * 256 * 2 == 218103808


def test_layer_types_in_the_config_win():
    """A config that writes layer_types (VaultGemma's released model: full attention everywhere)."""
    data = dict(config("google__vaultgemma-1b"), layer_types=["full_attention"] * 26)
    rep = inspect_config(data, model="vaultgemma", options=Options(kv_cache_dtype="bf16"))
    assert rep.alpha_bytes_per_token == 26 * 2 * 4 * 256 * 2 == 106496 and rep.gamma_bytes_per_request == 0


def test_hunyuan_vl_head_dim_alias():
    """HunYuanVLTextConfig.attribute_map: ``attention_head_dim`` is ``head_dim`` (its checkpoints write the
    alias); 24 layers × 2 × 8 KV heads × 128 × 2 B = 98304, not hidden/heads = 1024 / 16 = 64 (49152)."""
    data = {"architectures": ["HunYuanVLForConditionalGeneration"], "model_type": "hunyuan_vl",
            "text_config": {"model_type": "hunyuan_vl_text", "hidden_size": 1024, "num_hidden_layers": 24,
                            "num_attention_heads": 16, "num_key_value_heads": 8, "attention_head_dim": 128}}
    rep = inspect_config(data, model="hunyuan-ocr", options=Options(kv_cache_dtype="bf16"))
    assert rep.alpha_bytes_per_token == 24 * 2 * 8 * 128 * 2 == 98304
