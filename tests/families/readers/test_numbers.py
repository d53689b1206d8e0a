"""Numbers that were silently assumed (issue 23 part 3): a KV-cache quantisation hfkv does not
understand, a head size written as 0, a sliding layer without a usable window, and keys that change
the KV-head count. Each is read, warned (the figures an estimate), or refused; never silent.
"""

from __future__ import annotations

import pytest

from _helpers import LLAMA_CONFIG as LLAMA, load, report  # noqa: E402


ESTIMATE = "estimate, not exact: "
BF16_ALPHA = 32 * 2 * 8 * 128 * 2  # 131072
FP8_ALPHA = 32 * 2 * 8 * 128 * 1  # 65536


def estimates(rep):
    return [w for w in rep.warnings if w.startswith(ESTIMATE)]


# -- KV-cache quantisation declarations -----------------------------------------------------------------


@pytest.mark.parametrize("quant,shown", [
    ({"quant_method": "modelopt", "kv_cache_quant_algo": "INT8"}, "kv_cache_quant_algo = 'INT8'"),
    ({"quant_method": "modelopt", "kv_cache_quant_algo": "FP8_PER_TENSOR"}, "kv_cache_quant_algo = 'FP8_PER_TENSOR'"),
    ({"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": "8", "type": "float"}}, "'num_bits': '8'"),
    ({"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 6, "type": "float"}}, "'num_bits': 6"),
    ({"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8, "type": "int"}}, "'type': 'int'"),
    ({"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8}}, "kv_cache_scheme"),
    ({"quant_method": "quark", "kv_cache_group": ["*k_proj", "*v_proj"]}, "kv_cache_group"),
    ({"quant_method": "fp8", "kv_cache_dtype": "fp8_e4m3"}, "quantization_config.kv_cache_dtype = 'fp8_e4m3'"),
    ({"quant_method": "modelopt", "quantization": {"kv_cache_quant_algo": "INT8"}}, "quantization.kv_cache_quant_algo"),
    ({"quant_method": "awq", "kv_cache_bits": 4}, "kv_cache_bits"),
])
def test_a_kv_quantisation_not_understood_is_an_estimate_naming_it(quant, shown):
    rep = report(dict(LLAMA, quantization_config=quant))
    assert rep.kv_cache_dtype == "bf16" and rep.alpha_bytes_per_token == BF16_ALPHA  # the model's dtype...
    assert any(shown in w for w in estimates(rep)), rep.warnings  # ...said to be a guess, naming the key


def test_a_root_kv_cache_dtype_is_an_estimate_naming_it():
    rep = report(dict(LLAMA, kv_cache_dtype="fp8_e4m3"))
    assert rep.alpha_bytes_per_token == BF16_ALPHA
    assert len(estimates(rep)) == 1 and "kv_cache_dtype = 'fp8_e4m3'" in estimates(rep)[0]


@pytest.mark.parametrize("quant", [
    {"quant_method": "modelopt", "kv_cache_quant_algo": "FP8"},
    {"quant_method": "modelopt", "kv_cache_quant_algo": "fp8"},
    {"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8, "type": "float", "dynamic": False}},
])
def test_an_understood_fp8_declaration_is_read(quant):
    rep = report(dict(LLAMA, quantization_config=quant))
    assert rep.kv_cache_dtype == "fp8" and rep.alpha_bytes_per_token == FP8_ALPHA
    assert estimates(rep) == []


@pytest.mark.parametrize("quant", [
    {"quant_method": "modelopt", "kv_cache_quant_algo": None},
    {"quant_method": "quark", "kv_cache_group": []},
    {"quant_method": "compressed-tensors", "kv_cache_scheme": None},
])
def test_an_empty_declaration_declares_nothing(quant):
    rep = report(dict(LLAMA, quantization_config=quant))
    assert rep.alpha_bytes_per_token == BF16_ALPHA and estimates(rep) == []


def test_an_explicit_kv_dtype_needs_no_declaration():
    rep = report(dict(LLAMA, quantization_config={"kv_cache_quant_algo": "INT8"}), kv_cache_dtype="fp8")
    assert rep.alpha_bytes_per_token == FP8_ALPHA and estimates(rep) == []


def test_the_real_nvfp4_gemma_scheme_is_still_fp8():
    rep = report(load("nvidia__Gemma-4-31B-IT-NVFP4"))
    assert rep.kv_cache_dtype == "fp8" and estimates(rep) == []


# -- head sizes written as 0 ------------------------------------------------------------------------


def test_head_dim_zero_is_warned_not_silently_replaced():
    rep = report(dict(LLAMA, head_dim=0))
    assert rep.alpha_bytes_per_token == 32 * 2 * 8 * (4096 // 32) * 2  # hidden ÷ heads = 128
    assert any(w.startswith("estimate, not exact: head_dim = 0") for w in rep.warnings)


def test_v_head_dim_zero_is_warned():
    rep = report(dict(LLAMA, v_head_dim=0))
    assert rep.alpha_bytes_per_token == BF16_ALPHA
    assert any(w.startswith("estimate, not exact: v_head_dim = 0") for w in rep.warnings)


def test_kv_channels_zero_is_warned():
    data = dict(load("THUDM__chatglm2-6b"), kv_channels=0)  # hidden 4096 ÷ 32 heads = 128 either way
    rep = report(data)
    assert any(w.startswith("estimate, not exact: kv_channels = 0") for w in rep.warnings)


# -- sliding layers without a usable window -------------------------------------------------------------

FOUR_LAYERS = dict(LLAMA, num_hidden_layers=4, layer_types=["sliding_attention", "full_attention"] * 2)


@pytest.mark.parametrize("window", [{}, {"sliding_window": None}, {"sliding_window": 0}])
def test_a_sliding_layer_without_a_window_is_warned(window):
    rep = report(dict(FOUR_LAYERS, **window))
    assert rep.alpha_bytes_per_token == 4 * 2 * 8 * 128 * 2  # counted full, as an engine builds it...
    assert any("layer_types names 2 sliding layer(s) but the config gives no usable window" in w
               for w in estimates(rep)), rep.warnings  # ...and said


def test_a_window_turned_off_is_a_note():
    rep = report(dict(FOUR_LAYERS, sliding_window=4096, use_sliding_window=False))
    assert rep.alpha_bytes_per_token == 4 * 2 * 8 * 128 * 2
    assert estimates(rep) == [] and any("use_sliding_window is false" in n for n in rep.notes)


def test_a_usable_window_slides():
    rep = report(dict(FOUR_LAYERS, sliding_window=4096))
    assert rep.alpha_bytes_per_token == 2 * 2 * 8 * 128 * 2  # the 2 full layers; the others are bounded
    assert estimates(rep) == []


# -- keys that change the KV-head count --------------------------------------------------------------------


def test_chatglm_multi_query_attention_false_is_mha():
    data = load("THUDM__chatglm2-6b")
    assert report(data).alpha_bytes_per_token == 28 * 2 * 2 * 128 * 2 == 28672  # multi_query_group_num 2
    rep = report(dict(data, multi_query_attention=False))
    assert rep.alpha_bytes_per_token == 28 * 2 * 32 * 128 * 2 == 458752  # vLLM/SGLang chatglm.py: MHA


def test_mpt_multiquery_without_kv_n_heads_is_an_estimate():
    data = load("replit__replit-code-v1_5-3b")
    attn = {k: v for k, v in data["attn_config"].items() if k != "kv_n_heads"}
    rep = report(dict(data, attn_config=dict(attn, attn_type="multiquery_attention")))
    assert any("attn_config.attn_type is multiquery_attention" in w for w in estimates(rep))


def test_openelm_kv_heads_from_num_gqa_groups():
    data = load("apple__OpenELM-270M")
    written = report(data).alpha_bytes_per_token
    derived = report({k: v for k, v in data.items() if k != "num_kv_heads"}).alpha_bytes_per_token
    assert derived == written  # OpenELMConfig writes num_kv_heads = num_query_heads // num_gqa_groups


def test_gpt_neo_attention_types_and_layers_that_disagree_are_warned():
    data = load("EleutherAI__gpt-neo-125m")
    data["attention_layers"] = ["global"] * len(data["attention_layers"])
    rep = report(data)
    assert any("attention_layers" in w and "attention_types" in w and "disagree" in w for w in rep.warnings)


def test_smollm3_derives_nope_layers_from_the_interval():
    data = {"model_type": "smollm3", "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 4,
            "hidden_size": 2048, "use_sliding_window": True, "sliding_window": 4096, "no_rope_layer_interval": 4,
            "max_position_embeddings": 65536, "torch_dtype": "bfloat16"}
    rep = report(data)
    # SmolLM3Config: layer i is NoPE (and slides) iff (i + 1) % 4 == 0: layers 3 and 7
    assert [layer["kind"] for layer in rep.to_dict()["layers"]] == ["full"] * 3 + ["sliding"] + ["full"] * 3 + ["sliding"]
