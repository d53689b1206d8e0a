"""Dense, MLA, DSA and sliding-window families on fixtures written from real configs.

Every expected figure is derived by hand from the reference formulas; the arithmetic is beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hfkv
from hfkv import Options, inspect_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def report(name: str, **options):
    data = json.loads((FIXTURES / name / "config.json").read_text())
    return inspect_config(data, model=name, options=Options(**options))


def kinds(rep) -> dict[str, int]:
    out: dict[str, int] = {}
    for layer in rep.layers:
        out[layer.kind] = out.get(layer.kind, 0) + 1
    return out


# -- dense ------------------------------------------------------------------------------------------


def test_llama_31_8b():
    rep = report("meta-llama__Meta-Llama-3.1-8B")
    assert rep.alpha_bytes_per_token == 131072  # 32 layers × 2 × 8 KV heads × 128 × 2 B
    assert rep.gamma_bytes_per_request == 0
    assert rep.crossover_tokens == 0
    ctx = {c.tokens: c for c in rep.contexts}
    assert ctx[32768].kv_bytes_per_request == 32768 * 131072 == 4294967296  # 4 GiB
    assert ctx[32768].read_bytes_per_step == 4294967296  # dense: r = n
    assert sorted(ctx) == [4096, 32768, 131072]  # defaults, capped at max_position_embeddings 131072
    assert rep.mapper == "dense.dense" and rep.transformers_defaults == []


def test_llama_2_7b_mha_fp16():
    rep = report("meta-llama__Llama-2-7b-hf")
    assert rep.kv_cache_dtype == "fp16"  # the config's torch_dtype
    assert rep.alpha_bytes_per_token == 524288  # 32 × 2 × 32 × 128 × 2


def test_mqa_gemma_2b():
    rep = report("google__gemma-2b-it")
    assert rep.alpha_bytes_per_token == 18432  # 18 × 2 × 1 KV head × 256 (head_dim ≠ 2048/8) × 2


def test_tp8_on_four_kv_heads_replicates():
    rep = report("Qwen__Qwen2-7B-Instruct", tensor_parallel_size=8)
    # head_dim 3584 / 28 = 128; per GPU max(1, 4 // 8) = 1 head: 28 × 2 × 1 × 128 × 2
    assert rep.alpha_bytes_per_token == 14336
    assert report("Qwen__Qwen2-7B-Instruct", tensor_parallel_size=2).alpha_bytes_per_token == 28672  # 2 heads


def test_key_aliases():
    # Falcon-40B (RefinedWeb): n_head 128, n_head_kv 8, n_layer 60, hidden 8192 → head_dim 64
    assert report("tiiuae__falcon-40b").alpha_bytes_per_token == 60 * 2 * 8 * 64 * 2 == 122880
    # Falcon-180B: new_decoder_architecture with num_kv_heads 8 (multi_query does not mean 1 here)
    assert report("tiiuae__falcon-180B-chat").alpha_bytes_per_token == 80 * 2 * 8 * 64 * 2 == 163840
    # BLOOM: n_layer 70, 112 heads, n_embed 14336 → MHA head_dim 128
    assert report("bigscience__bloom").alpha_bytes_per_token == 70 * 2 * 112 * 128 * 2 == 4014080
    # ChatGLM2: num_layers 28, multi_query_group_num 2, kv_channels 128, fp16
    assert report("THUDM__chatglm2-6b").alpha_bytes_per_token == 28 * 2 * 2 * 128 * 2 == 28672
    # MPT (replit): n_layers 32, attn_config.kv_n_heads 8, d_model 3072 / 24 heads = 128
    assert report("replit__replit-code-v1_5-3b").alpha_bytes_per_token == 32 * 2 * 8 * 128 * 2 == 131072
    # OPT-125m: MHA 12 heads, hidden 768, fp16
    assert report("facebook__opt-125m").alpha_bytes_per_token == 12 * 2 * 12 * 64 * 2 == 36864


def test_legacy_llama_without_kv_key_is_mha_without_transformers():
    rep = report("decapoda-research__llama-7b-hf")
    assert rep.alpha_bytes_per_token == 32 * 2 * 32 * 128 * 2  # KV heads default to query heads
    assert rep.transformers_defaults == []  # the engines' own fallback: no transformers import needed


def test_glm45_mtp_left_out():
    rep = report("zai-org__GLM-4.5")
    assert rep.alpha_bytes_per_token == 92 * 2 * 8 * 128 * 2 == 376832
    assert any("MTP" in note for note in rep.notes)


# -- sliding windows on every layer / switched off -----------------------------------------------------


def test_qwen2_window_switched_off():
    rep = report("Qwen__Qwen2-7B-Instruct")  # sliding_window 131072 but use_sliding_window false
    assert rep.alpha_bytes_per_token == 28 * 2 * 4 * 128 * 2 == 57344
    assert rep.gamma_bytes_per_request == 0
    assert {layer.kind for layer in rep.layers} == {"full"}


def test_mistral_window_on_every_layer():
    rep = report("Hugofernandez__Mistral-7B-v0.1-colab-sharded")
    assert rep.alpha_bytes_per_token == 0
    assert rep.gamma_bytes_per_request == 32 * 4096 * 2 * 8 * 128 * 2 == 536870912
    assert rep.kv_cache_dtype == "bf16"  # float32 checkpoint served in 16 bits
    assert any("float32" in n or "fp32" in n for n in rep.notes)


def test_phi3_windows():
    mini = report("microsoft__Phi-3-mini-4k-instruct")  # window 2047 < 4096 positions, all layers, MHA 32 × 96
    assert mini.gamma_bytes_per_request == 32 * 2047 * 2 * 32 * 96 * 2 == 804913152
    long = report("microsoft__Phi-3.5-mini-instruct")  # window 262144 ≥ 131072 positions: bounds nothing
    assert long.alpha_bytes_per_token == 32 * 2 * 32 * 96 * 2 == 393216
    assert long.gamma_bytes_per_request == 0
    # ... but the declared window is kept on the full-attention parts, for engines that window the cache anyway
    assert {part.declared_window for layer in long.layer_specs for part in layer.parts} == {262144}
    assert {part.kind for layer in mini.layer_specs for part in layer.parts} == {"sliding"}


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


# -- sliding hybrids ---------------------------------------------------------------------------------------


def test_gpt_oss_120b():
    rep = report("openai__gpt-oss-120b")
    assert rep.alpha_bytes_per_token == 18 * 2 * 8 * 64 * 2 == 36864
    assert rep.gamma_bytes_per_request == 18 * 128 * 2048 == 4718592
    assert rep.crossover_tokens == 4718592 / 36864 == 128


def test_gemma2_default_pattern():
    rep = report("google__gemma-2-2b-it")  # no layer_types: even layers slide (W 4096)
    assert kinds(rep) == {"sliding": 13, "full": 13}
    assert rep.alpha_bytes_per_token == 13 * 2 * 4 * 256 * 2 == 53248
    assert rep.gamma_bytes_per_request == 13 * 4096 * 4096 == 218103808


def test_gemma3_sparse_text_config_uses_transformers_defaults():
    rep = report("google__gemma-3-4b-it")  # text_config omits heads, KV heads and head_dim
    assert set(rep.transformers_defaults) >= {"num_attention_heads", "num_key_value_heads", "head_dim"}
    # 34 layers, pattern 6: full at i = 5, 11, 17, 23, 29 → 5 full, 29 sliding (W 1024); E = 2 × 4 × 256 × 2
    assert kinds(rep) == {"sliding": 29, "full": 5}
    assert rep.alpha_bytes_per_token == 5 * 4096 == 20480
    assert rep.gamma_bytes_per_request == 29 * 1024 * 4096 == 121634816


@pytest.mark.parametrize(
    "fixture, full, sliding, window, entry",
    [
        # cohere2: 40 layers, pattern 4 → 10 full; MHA 64 × 128 → E = 2 × 64 × 128 × 2 = 32768; a sliding
        # layer attends to [pos − 4096, pos]: 4096 + 1 = 4097 keys (vLLM's commandr.py; its oracle row: 4097)
        ("CohereForAI__c4ai-command-r-v01-transformers-defaults", 10, 30, 4097, 32768),
        # exaone4: 32 layers, pattern 4 → 8 full; 32 heads × 128 (4096 / 32) → E = 16384
        ("LGAI-EXAONE__EXAONE-4.0-32B-transformers-defaults", 8, 24, 4096, 16384),
        # olmo3: (i + 1) % 4 → 8 full of 32; E = 2 × 32 × 128 × 2 = 16384
        ("allenai__Olmo-3-7B-Instruct-transformers-defaults", 8, 24, 4096, 16384),
        # afmoe: every 4th global → 8 full of 32, W 1024; E = 2 × 16 × 128 × 2 = 8192
        ("arcee-ai__Trinity-Mini-transformers-defaults", 8, 24, 1024, 8192),
        # granite_swa: layer 0 full, i % 4 == 0 → 6 full of 24, W 128; E = 2 × 4 × 128 × 2 = 2048
        ("ibm-granite__granite-swash-2b-transformers-defaults", 6, 18, 128, 2048),
    ],
)
def test_default_patterns(fixture, full, sliding, window, entry):
    rep = report(fixture)
    assert kinds(rep) == {"sliding": sliding, "full": full}
    assert rep.alpha_bytes_per_token == full * entry
    assert rep.gamma_bytes_per_request == sliding * window * entry


def test_default_patterns_agree_with_transformers():
    """Our default rules give the layer_types transformers derives for the same config."""
    pytest.importorskip("transformers")
    from transformers import CONFIG_MAPPING

    for fixture in ("CohereForAI__c4ai-command-r-v01-transformers-defaults", "LGAI-EXAONE__EXAONE-4.0-32B-transformers-defaults",
                    "allenai__Olmo-3-7B-Instruct-transformers-defaults", "arcee-ai__Trinity-Mini-transformers-defaults",
                    "ibm-granite__granite-swash-2b-transformers-defaults"):
        data = json.loads((FIXTURES / fixture / "config.json").read_text())
        expected = CONFIG_MAPPING[data["model_type"]](**{k: v for k, v in data.items() if k != "model_type"}).layer_types
        ours = ["sliding_attention" if layer.kind == "sliding" else "full_attention" for layer in report(fixture).layers]
        assert ours == expected, fixture


def test_window_covering_every_position_is_full_attention():
    data = json.loads((FIXTURES / "allenai__Olmo-3-7B-Instruct-transformers-defaults" / "config.json").read_text())
    data["max_position_embeddings"] = 2048  # the class default: shorter than the 4096 window
    rep = inspect_config(data)
    assert kinds(rep) == {"full": 32} and rep.gamma_bytes_per_request == 0
    assert any("≥ max_position_embeddings" in n for n in rep.notes)


def test_qwen2_moe_window_off_by_default():
    rep = report("Qwen__Qwen1.5-MoE-A2.7B-transformers-defaults")  # use_sliding_window false
    assert rep.alpha_bytes_per_token == 24 * 2 * 16 * 128 * 2 == 196608  # engine-logs R17: 197132 ≈ +0.3%


# -- precision ----------------------------------------------------------------------------------------------


def test_fp8_declared_by_kv_cache_scheme():
    rep = report("nvidia__Gemma-4-31B-IT-NVFP4")  # quantization_config.kv_cache_scheme.num_bits = 8
    assert rep.kv_cache_dtype == "fp8"
    assert any("fp8" in n for n in rep.notes)


def test_fp8_declared_by_kv_cache_quant_algo():
    data = json.loads((FIXTURES / "meta-llama__Meta-Llama-3.1-8B" / "config.json").read_text())
    data["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}
    rep = inspect_config(data)
    assert rep.kv_cache_dtype == "fp8" and rep.alpha_bytes_per_token == 131072 // 2
    forced = inspect_config(data, options=Options(kv_cache_dtype="bf16"))
    assert forced.kv_cache_dtype == "bf16" and forced.alpha_bytes_per_token == 131072


def test_weight_quantisation_alone_does_not_change_kv():
    rep = report("deepseek-ai__DeepSeek-V3")  # quant_method fp8 (weights), no KV declaration
    assert rep.kv_cache_dtype == "bf16"


def test_no_dtype_warns_bf16():
    rep = report("openai__gpt-oss-120b")
    assert any("no dtype" in w for w in rep.warnings)


def test_fp4_kv():
    rep = report("meta-llama__Meta-Llama-3.1-8B", kv_cache_dtype="fp4")
    assert rep.alpha_bytes_per_token == 32 * 2 * 8 * 128 // 2 == 32768


# -- budget questions ------------------------------------------------------------------------------------


def test_budget_and_batch():
    budget = 60 * 2**30
    rep = report("deepseek-ai__DeepSeek-V3.2", budget_bytes=budget, batch=32, contexts=(4096, 131072))
    ctx = {c.tokens: c for c in rep.contexts}
    # 4096 × 78324 = 320815104 B per request → floor(64424509440 / 320815104) = 200
    assert ctx[4096].kv_bytes_per_request == 320815104 and ctx[4096].max_concurrency == 200
    # 32 requests: S = floor(64424509440 / 32 / 78324) = floor(2013265920 / 78324) = 25704
    assert rep.max_context_for_batch == 25704


def test_generic_mapper_warns_about_unread_keys():
    data = {"model_type": "brand_new", "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
            "hidden_size": 512, "mystery_window_ratio": 3, "linear_conv_kernel_dim": 4, "torch_dtype": "bfloat16"}
    rep = inspect_config(data)
    assert rep.mapper == "generic.generic"
    assert rep.alpha_bytes_per_token == 4 * 2 * 2 * 64 * 2 == 2048
    text = " ".join(rep.warnings)
    assert "brand_new" in text and "mystery_window_ratio" in text and "linear_conv_kernel_dim" in text


def test_inspect_reads_a_folder():
    rep = hfkv.inspect(str(FIXTURES / "meta-llama__Meta-Llama-3.1-8B"))
    assert rep.alpha_bytes_per_token == 131072 and rep.source == "file"


def test_coverage_doc_matches_the_registry():
    from hfkv.mappings.coverage import END, START, coverage_markdown

    doc = (FIXTURES.parent / "docs" / "coverage.md").read_text()
    section = doc[doc.index(START) + len(START):doc.index(END)].strip()
    assert section == coverage_markdown().strip(), "run: python -m hfkv.mappings.coverage --write"


def test_every_registered_fixture_exists():
    from hfkv.mappings import all_mappers

    for mapper in all_mappers():
        for model_type, folder in mapper.fixtures.items():
            assert (FIXTURES / folder / "config.json").is_file(), (mapper.name, model_type, folder)


def test_smollm3_slides_only_nope_layers():
    data = {"model_type": "smollm3", "num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 4,
            "hidden_size": 2048, "use_sliding_window": True, "sliding_window": 4096, "no_rope_layers": [1, 1, 1, 0],
            "max_position_embeddings": 65536, "torch_dtype": "bfloat16"}
    rep = inspect_config(data)
    assert [layer.kind for layer in rep.layers] == ["full", "full", "full", "sliding"]
    assert rep.alpha_bytes_per_token == 3 * 2 * 4 * 128 * 2  # 3 full layers, head_dim 2048 / 16 = 128


def test_unknown_encoder_decoder_is_refused():
    data = {"model_type": "brand_new_seq2seq", "is_encoder_decoder": True, "num_hidden_layers": 6,
            "num_attention_heads": 8, "hidden_size": 512}
    with pytest.raises(hfkv.UnsupportedModelError, match="encoder-decoder"):
        inspect_config(data, model="x/seq2seq")


def test_every_model_type_of_the_engines_coverage_table_is_registered():
    import re

    from hfkv.mappings import all_mappers

    engines = FIXTURES.parents[1] / "shared" / "docs" / "engines.md"
    if not engines.is_file():
        pytest.skip(f"{engines} is not beside the checkout")
    text = engines.read_text()
    table = text[text.index("## 4. Coverage table"):text.index("## 5. Pitfalls")]
    wanted = set()
    for line in table.splitlines():
        if line.startswith("| ") and not line.startswith(("| model_type", "|---")):
            cell = re.sub(r"\(.*?\)", "", line.split("|")[1])
            wanted |= {t.strip() for t in re.split(r"[,/]| or ", cell) if t.strip()}
    registered = {mt for mapper in all_mappers() for mt in mapper.model_types}
    assert len(wanted) > 100 and not wanted - registered, sorted(wanted - registered)


def test_a_sub_config_without_its_kv_head_count_gets_the_class_default():
    """save_pretrained diffs a nested config against its own class (transformers' recursive_diff_dict),
    so gemma-3-4b-it's text_config leaves out num_key_value_heads = 4, Gemma3TextConfig's default, even
    where it writes the query heads (8): the cache has 4 KV heads, not 8."""
    data = json.loads((FIXTURES / "google__gemma-3-4b-it" / "config.json").read_text())
    data["text_config"]["num_attention_heads"] = 8
    rep = inspect_config(data, model="gemma-3-4b-it")
    kv = {part.params["kv_heads"] for layer in rep.layers for part in layer.parts}
    assert kv == {4}
    # 34 layers × 2 (K, V) × 4 KV heads × 256 (head_dim) × 2 B: 5 of every 6 layers slide (window 1024)
    assert 2 * 4 * 256 * 2 == 4096 and rep.layers[5].entry_bytes == 4096
