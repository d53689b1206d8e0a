"""Issue 30 item 1: configs the weights estimate answered "unknown" for, now priced. Expected counts
are published figures or hand arithmetic from the config's shapes, written beside each; the configs
are the published config.json files' facts (repo named on each)."""

from __future__ import annotations

from hfkv.inspection import inspect_config
from hfkv.model.weights import Unknown, estimate_weights


def _priced(config: dict):
    got = estimate_weights(config, inspect_config(config).layer_specs)
    assert not isinstance(got, Unknown), got.reason
    return got


def test_gpt2_xl():
    # openai-community/gpt2-xl: n_embd 1600, 48 layers, 1024 positions, vocab 50257, tied head.
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 1600, "n_layer": 48, "n_head": 25,
              "n_positions": 1024, "n_ctx": 1024, "vocab_size": 50257}
    # wte 50257×1600 = 80,411,200; wpe 1024×1600 = 1,638,400; ln_f 3,200; per block: c_attn 1600×4800+4800,
    # c_proj 1600×1600+1600, c_fc 1600×6400+6400, c_proj 6400×1600+1600, two LayerNorms 4×1600 = 30,740,800.
    assert _priced(config).total_parameters == 80_411_200 + 1_638_400 + 3_200 + 48 * 30_740_800 == 1_557_611_200


def test_qwen2_5_vl_7b_matches_its_published_count():
    # Qwen/Qwen2.5-VL-7B-Instruct (text keys at the top level, as first published); the Hub's count 8,292,166,656.
    config = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl", "hidden_size": 3584,
              "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
              "vocab_size": 152064, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
              "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
                                "in_chans": 3, "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2,
                                "temporal_patch_size": 2, "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31]}}
    got = _priced(config)
    assert got.total_parameters == 8_292_166_656
    assert got.weights_bytes == 2 * 8_292_166_656


def test_minimax_m2():
    # MiniMaxAI/MiniMax-M2 (M2.5 the same shapes): published as 229B (230B in the model card's round figure).
    config = {"architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "hidden_size": 3072,
              "head_dim": 128, "num_attention_heads": 48, "num_key_value_heads": 8, "num_hidden_layers": 62,
              "intermediate_size": 1536, "num_local_experts": 256, "num_experts_per_tok": 8, "vocab_size": 200064,
              "use_qk_norm": True, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    # embeddings 2 × 200064×3072 = 1,229,193,216; final norm 3,072; per layer: q 6144×3072 + k, v 1024×3072 each
    # + o 3072×6144 = 44,040,192, q/k norms 6144 + 1024, experts 256 × 3 × 3072×1536 = 3,623,878,656,
    # router 256×3072 = 786,432 + bias 256, two norms 6,144.
    layer = 44_040_192 + 7_168 + 3_623_878_656 + 786_432 + 256 + 6_144
    assert _priced(config).total_parameters == 1_229_193_216 + 3_072 + 62 * layer == 228_689_764_864


def test_llama4_scout_text_and_its_tower():
    # meta-llama/Llama-4-Scout-17B-16E: text_config and vision_config facts; published "109B total".
    config = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4", "torch_dtype": "bfloat16",
              "text_config": {"model_type": "llama4_text", "hidden_size": 5120, "num_hidden_layers": 48,
                              "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
                              "intermediate_size": 8192, "intermediate_size_mlp": 16384, "num_local_experts": 16,
                              "num_experts_per_tok": 1, "interleave_moe_layer_step": 1, "vocab_size": 202048},
              "vision_config": {"model_type": "llama4_vision_model", "hidden_size": 1408, "intermediate_size": 5632,
                                "num_hidden_layers": 34, "patch_size": 14, "image_size": 336}}
    got = _priced(config)
    # text: embeddings 2 × 202048×5120 = 2,068,971,520, final norm 5,120; per layer attention 62,914,560, 16 experts
    # and one shared of 3 × 5120×8192 = 125,829,120 each, router 16×5120, two norms 10,240.
    text = 2_068_971_520 + 5_120 + 48 * (62_914_560 + 17 * 125_829_120 + 81_920 + 10_240)
    assert got.total_parameters - got.role("towers").parameters == text == 107_769_861_120
    assert abs(got.total_parameters - 109e9) / 109e9 < 0.01


def test_llama4_maverick_interleaves_dense_layers():
    # meta-llama/Llama-4-Maverick-17B-128E: 128 experts every second layer, dense layers of 16384.
    text = {"model_type": "llama4_text", "hidden_size": 5120, "num_hidden_layers": 48, "num_attention_heads": 40,
            "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
            "num_local_experts": 128, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "vocab_size": 202048}
    got = _priced({"model_type": "llama4", "text_config": text,
                   "vision_config": {"hidden_size": 1408, "intermediate_size": 5632, "num_hidden_layers": 34,
                                     "patch_size": 14}})
    # 24 MoE layers × 128 experts × 3 × 5120×8192; 24 dense layers × 3 × 5120×16384.
    assert got.role("routed_experts").parameters == 24 * 128 * 3 * 5120 * 8192 == 386_547_056_640
    assert got.role("dense_mlp").parameters == 24 * 3 * 5120 * 16384 == 6_039_797_760
    assert abs(got.total_parameters - 400e9) / 400e9 < 0.01  # "400B total" (model card)


def test_glm5_is_deepseek_v32_shaped():
    # zai-org/GLM-5: MLA with a DSA indexer, 256 experts after 3 dense layers, one MTP layer.
    config = {"architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa", "hidden_size": 6144,
              "intermediate_size": 12288, "moe_intermediate_size": 2048, "num_hidden_layers": 78,
              "num_attention_heads": 64, "num_key_value_heads": 64, "n_routed_experts": 256, "n_shared_experts": 1,
              "first_k_dense_replace": 3, "q_lora_rank": 2048, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
              "qk_nope_head_dim": 192, "v_head_dim": 256, "index_n_heads": 32, "index_head_dim": 128,
              "num_nextn_predict_layers": 1, "vocab_size": 154880, "tie_word_embeddings": False,
              "torch_dtype": "bfloat16"}
    got = _priced(config)
    # 75 MoE layers × 256 experts × 3 × 6144×2048 (the MTP layer's experts count under "mtp").
    assert got.role("routed_experts").parameters == 75 * 256 * 3 * 6144 * 2048 == 724_775_731_200
    assert got.role("dense_mlp").parameters == 3 * 3 * 6144 * 12288 == 679_477_248
    assert abs(got.total_parameters - 744e9) / 744e9 < 0.02  # "744B parameters" (model card)
