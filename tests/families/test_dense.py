"""Dense GQA/MQA/MHA families (mappings/dense.py): Llama, Gemma, Falcon, BLOOM, ChatGLM, GLM-4.5, Mistral,
Phi-3 on fixtures written from real configs, and the key aliases they use.

Every expected figure is derived by hand; the arithmetic is beside it."""

from __future__ import annotations

from _helpers import load, report


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


def test_mistral_window_on_every_layer():
    rep = report("Hugofernandez__Mistral-7B-v0.1-colab-sharded")
    assert rep.alpha_bytes_per_token == 0
    assert rep.gamma_bytes_per_request == 32 * 4096 * 2 * 8 * 128 * 2 == 536870912
    assert rep.kv_cache_dtype == "bf16"  # float32 checkpoint served in 16 bits
    assert any("float32" in n or "fp32" in n for n in rep.notes)


def test_mistral_window_zero_is_full_attention_and_said():
    data = dict(load("Hugofernandez__Mistral-7B-v0.1-colab-sharded"), sliding_window=0)
    rep = report(data)
    assert rep.alpha_bytes_per_token == 32 * 2 * 8 * 128 * 2 == 131072 and rep.gamma_bytes_per_request == 0
    assert any(n.startswith("sliding_window = 0 means no window") and "full attention" in n for n in rep.notes)


def test_model_type_that_disagrees_with_architectures_is_said():
    # a Mistral config labelled phi: transformers reads it through PhiConfig, vLLM builds MistralForCausalLM
    data = dict(load("Hugofernandez__Mistral-7B-v0.1-colab-sharded"), model_type="phi")
    rep = report(data)
    found = [n for n in rep.notes if n.startswith("model_type 'phi' and architectures MistralForCausalLM")]
    assert found and "(the architecture of model type 'mistral')" in found[0], rep.notes
    assert "hfkv follows the model_type (mapper dense.dense)" in found[0]
    assert "vLLM and SGLang the architectures (they build MistralForCausalLM)" in found[0]


def test_model_type_and_architectures_that_agree_or_name_their_own_code_say_nothing():
    assert not [n for n in report("Hugofernandez__Mistral-7B-v0.1-colab-sharded").notes if "disagree" in n]
    # Kimi K2: kimi_k2 on DeepseekV3ForCausalLM by design, its classes named in auto_map
    assert not [n for n in report("moonshotai__Kimi-K2-Instruct").notes if "disagree" in n]


def test_phi3_windows():
    mini = report("microsoft__Phi-3-mini-4k-instruct")  # window 2047 < 4096 positions, all layers, MHA 32 × 96
    assert mini.gamma_bytes_per_request == 32 * 2047 * 2 * 32 * 96 * 2 == 804913152
    long = report("microsoft__Phi-3.5-mini-instruct")  # window 262144 ≥ 131072 positions: bounds nothing
    assert long.alpha_bytes_per_token == 32 * 2 * 32 * 96 * 2 == 393216
    assert long.gamma_bytes_per_request == 0
    # ... but the declared window is kept on the full-attention parts, for engines that window the cache anyway
    assert {part.declared_window for layer in long.layer_specs for part in layer.parts} == {262144}
    assert {part.kind for layer in mini.layer_specs for part in layer.parts} == {"sliding"}
