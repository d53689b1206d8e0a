"""MLA and DSA families (mappings/deepseek.py): DeepSeek-V2/V3/V3.2, Kimi-K2/K2.5, MiniCPM3, GLM-5's
indexer, and configs that name an MLA model but keep plain attention.

Every expected figure is derived by hand; the arithmetic is beside it."""

from __future__ import annotations

import json

from hfkv import inspect_config

from _helpers import FIXTURES, load, report, report as inspect


# -- MLA / DSA --------------------------------------------------------------------------------------------


def test_deepseek_v3_mla():
    rep = report("deepseek-ai__DeepSeek-V3")
    assert rep.alpha_bytes_per_token == 61 * (512 + 64) * 2 == 70272
    fp8 = report("deepseek-ai__DeepSeek-V3", kv_cache_dtype="fp8")
    assert fp8.alpha_bytes_per_token == 61 * (512 * 1 + 64 * 2 + 512 // 128 * 4) == 61 * 656 == 40016


def test_mla_is_replicated_under_tp():
    assert report("deepseek-ai__DeepSeek-V3", tensor_parallel_size=8).alpha_bytes_per_token == 70272


def test_deepseek_v2_lite_and_kimi_k2():
    assert report("deepseek-ai__DeepSeek-V2-Lite").alpha_bytes_per_token == 27 * 576 * 2 == 31104
    rep = report("moonshotai__Kimi-K2-Instruct")
    assert rep.alpha_bytes_per_token == 70272 and rep.mapper == "deepseek.mla"
    assert any("auto_map" in n for n in rep.notes)  # remote code is read as data only


def test_kimi_k25_text_config():
    rep = report("moonshotai__Kimi-K2.5-transformers-defaults")
    assert rep.alpha_bytes_per_token == 61 * 576 * 2 == 70272


def test_minicpm3_dispatch_on_architectures():
    rep = report("openbmb__MiniCPM3-4B-transformers-defaults")  # no model_type in the config
    assert rep.mapper == "deepseek.mla"
    assert rep.alpha_bytes_per_token == 62 * (256 + 32) * 2 == 35712


def test_deepseek_v32_dsa():
    rep = report("deepseek-ai__DeepSeek-V3.2")
    assert rep.alpha_bytes_per_token == 61 * (1152 + 132) == 78324
    fp8 = report("deepseek-ai__DeepSeek-V3.2", kv_cache_dtype="fp8")
    assert fp8.alpha_bytes_per_token == 61 * (656 + 132) == 48068
    ctx = {c.tokens: c for c in rep.contexts}
    # reads at 32K: 61 × (min(32768, 2048) × 1152 + 32768 × 132) = 61 × (2359296 + 4325376)
    assert ctx[32768].read_bytes_per_step == 61 * 6684672 == 407764992


def test_glm5_dsa_every_layer_indexed_by_default():
    rep = report("zai-org__GLM-5-transformers-defaults")  # indexer_types all "full"
    assert rep.alpha_bytes_per_token == 78 * (576 * 2 + 132) == 100152


def test_dsa_shared_indexer_layers():
    data = json.loads((FIXTURES / "zai-org__GLM-5-transformers-defaults" / "config.json").read_text())
    data["indexer_types"] = ["full" if i % 4 == 0 else "shared" for i in range(78)]
    rep = inspect_config(data)
    # 20 layers (0, 4, ..., 76) keep indexer keys: 78 × 1152 + 20 × 132
    assert rep.alpha_bytes_per_token == 78 * 1152 + 20 * 132 == 92496
    del data["indexer_types"]
    data["index_topk_freq"] = 2  # rule max(i − 1, 0) % 2 != 0 skips: layers 0, 1, 3, 5, ... keep 0,1 + odd
    rep = inspect_config(data)
    keep = [i for i in range(78) if max(i - 1, 0) % 2 == 0]  # 0, 1, 3, 5, ..., 77 → 1 + 39 = 40 layers
    assert len(keep) == 40
    assert rep.alpha_bytes_per_token == 78 * 1152 + 40 * 132


def test_kv_lora_rank_null_is_standard_attention():
    data = load("deepseek-ai__DeepSeek-V2-Lite")
    data.update(kv_lora_rank=None, num_key_value_heads=16)
    rep = inspect(data)
    # 27 layers × 2 × 16 KV heads × (2048 / 16 = 128) × 2 B, as vLLM's use_mla = kv_lora_rank is not None
    assert rep.alpha_bytes_per_token == 27 * 2 * 16 * 128 * 2 == 221184
    assert rep.layers[0].kind == "full"


def test_unlimited_ocr_is_plain_mha_with_every_prompt_token_kept():
    """baidu/Unlimited-OCR (fixture README: the real config.json's facts): qk_nope = qk_rope = 0, so both
    engines build DeepseekAttention: 10 KV heads of hidden_size / heads = 1280 / 10 = 128 for K and V.
    R-SWA (window 128) masks attention over a prompt that stays cached: full attention, n(S) = S."""
    rep = inspect(load("baidu__Unlimited-OCR"))
    assert rep.mapper == "deepseek.mla"
    # per layer E = 10 KV heads × (128 + 128) × 2 B = 5120; 12 layers × 5120 = 61440 per token, no constant
    assert rep.layers[0].entry_bytes == 10 * (128 + 128) * 2 == 5120
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (12 * 5120, 0) == (61440, 0)
    assert [layer.kind for layer in rep.layers] == ["full"] * 12
    # 32768 tokens (max_position_embeddings) × 61440 = 2013265920 B, vLLM's request_bytes for this row
    at_max = next(c for c in rep.contexts if c.tokens == 32768)
    assert at_max.kv_bytes_per_request == 32768 * 61440 == 2013265920
    assert any("plain multi-head attention" in note for note in rep.notes)
    assert any("R-SWA" in w and "upper bound" in w for w in rep.warnings)
    # fp8: 1 B per value, 12 × 10 × 256 × 1 = 30720 (SGLang's fp8 row)
    assert inspect(load("baidu__Unlimited-OCR"), kv_cache_dtype="fp8").alpha_bytes_per_token == 30720
