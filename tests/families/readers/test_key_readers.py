"""The shared key readers (mappings/readers/attention_keys.py, layer_patterns.py, hfkv/model/config.py) on the
classes of configs that used to print a wrong number or be refused: GPT-Neo's ``attention_types``,
per-layer head lists (OpenELM), language models under ``llm_cfg``, alias keys, unread head keys in
the generic mapper, and per-layer lists longer than the layer count.

Every expected figure is derived by hand; the arithmetic is beside it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import hfkv

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


def load(folder: str) -> dict:
    return json.loads((FIXTURES / folder / "config.json").read_text())


def inspect(data: dict, **options) -> hfkv.Report:
    return hfkv.inspect_config(copy.deepcopy(data), model="test", options=hfkv.Options(**options))


LLAMA_1B = {  # Llama-3.2-1B's attention keys
    "model_type": "llama", "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
    "hidden_size": 2048, "head_dim": 64, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
}
LLAMA_1B_ALPHA = 16 * 2 * 8 * 64 * 2  # = 32768


# -- GPT-Neo attention_types --------------------------------------------------------------------------


def test_gpt_neo_compact_attention_types_make_every_other_layer_global():
    data = load("EleutherAI__gpt-neo-125m")
    del data["attention_layers"]  # only [[["global", "local"], 6]] left
    rep = inspect(data)
    assert [layer.kind for layer in rep.layers] == ["full", "sliding"] * 6
    # 6 global layers × 2 × 12 heads × (768 / 12 = 64) × 2 B (fp32 checkpoint served in bf16)
    assert rep.alpha_bytes_per_token == 6 * 2 * 12 * 64 * 2 == 18432
    # 6 local layers keep min(S, 256): γ = 6 × 2 × 12 × 64 × 2 × 256
    assert rep.gamma_bytes_per_request == 6 * 2 * 12 * 64 * 2 * 256 == 4718592


def test_gpt_neo_fixture_with_attention_layers():
    rep = inspect(load("EleutherAI__gpt-neo-125m"))
    assert rep.mapper == "dense.dense" and rep.alpha_bytes_per_token == 18432


def test_gpt_neo_bad_attention_types_is_one_line():
    data = load("EleutherAI__gpt-neo-125m")
    del data["attention_layers"]
    data["attention_types"] = [["global", 6]]
    with pytest.raises(hfkv.ConfigError, match=r"attention_types\[0\]"):
        inspect(data)


# -- per-layer head lists ------------------------------------------------------------------------------


def test_openelm_per_layer_kv_heads():
    rep = inspect(load("apple__OpenELM-270M"))
    assert rep.mapper == "dense.dense"
    assert len(rep.layers) == 16  # num_transformer_layers
    # KV heads 3×5 + 4×7 + 5×4 = 63 over the layers; × 2 (K, V) × head_dim 64 × 2 B
    assert rep.alpha_bytes_per_token == (3 * 5 + 4 * 7 + 5 * 4) * 2 * 64 * 2 == 16128
    assert [p.params["kv_heads"] for layer in rep.layers for p in layer.parts][:6] == [3, 3, 3, 3, 3, 4]


def test_openelm_tp8_replicates_each_layers_kv_heads():
    rep = inspect(load("apple__OpenELM-270M"), tensor_parallel_size=8)
    # fewer KV heads than ranks: one head per GPU per layer: 16 × 2 × 1 × 64 × 2
    assert rep.alpha_bytes_per_token == 16 * 2 * 1 * 64 * 2 == 4096


def test_a_short_per_layer_head_list_is_refused_by_name():
    data = load("apple__OpenELM-270M")
    data["num_kv_heads"] = data["num_kv_heads"][:4]
    with pytest.raises(hfkv.ConfigError, match="num_kv_heads.*4 entries.*16 layers"):
        inspect(data)


def test_per_layer_kv_heads_beyond_query_heads_is_refused():
    data = load("apple__OpenELM-270M")
    data["num_kv_heads"][2] = 13
    with pytest.raises(hfkv.ConfigError, match=r"num_kv_heads\[2\]"):
        inspect(data)


# -- language model sub-configs ------------------------------------------------------------------------


def test_llm_cfg_wrapper_reads_the_language_model():
    vision = {"model_type": "siglip_vision_model", "num_hidden_layers": 27, "num_attention_heads": 16,
              "hidden_size": 1152}
    data = {"model_type": "nvila", "architectures": ["NVILAForConditionalGeneration"],
            "llm_cfg": dict(LLAMA_1B, model_type="qwen2"), "vision_tower_cfg": vision}
    rep = inspect(data)
    assert rep.alpha_bytes_per_token == LLAMA_1B_ALPHA  # 16 × 2 × 8 × 64 × 2 = 32768, not the tower's


def test_text_config_wins_over_a_vision_tower_with_more_heads():
    data = {"model_type": "brand_new_vl", "text_config": dict(LLAMA_1B, model_type="llama"),
            "vision_config": {"num_hidden_layers": 32, "num_attention_heads": 16, "num_key_value_heads": 16,
                              "hidden_size": 1280}}
    assert inspect(data).alpha_bytes_per_token == LLAMA_1B_ALPHA


def test_flat_config_with_a_vision_config_beside_it():
    data = dict(LLAMA_1B, model_type="brand_new_vl",
                vision_config={"num_hidden_layers": 32, "num_attention_heads": 16, "hidden_size": 1280})
    assert inspect(data).alpha_bytes_per_token == LLAMA_1B_ALPHA


# -- alias keys ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kv_key", ["n_kv_heads", "num_multi_query_heads", "num_attention_groups", "num_kv_heads"])
def test_generic_mapper_reads_every_kv_head_alias(kv_key):
    data = {"model_type": "brand_new", "n_layers": 16, "n_heads": 32, kv_key: 8, "dim": 2048,
            "torch_dtype": "bfloat16"}
    rep = inspect(data)
    assert rep.alpha_bytes_per_token == 16 * 2 * 8 * (2048 // 32) * 2 == 32768  # 8 KV heads, not 32


def test_aliases_that_disagree_are_a_warning():
    data = dict(LLAMA_1B, n_kv_heads=4)
    rep = inspect(data)
    assert rep.alpha_bytes_per_token == LLAMA_1B_ALPHA  # num_key_value_heads comes first in vLLM's order
    assert any("num_key_value_heads = 8" in w and "n_kv_heads = 4" in w for w in rep.warnings)


def test_generic_mapper_labels_an_estimate_when_a_head_key_is_unread():
    data = {"model_type": "brand_new", "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
            "hidden_size": 512, "num_local_kv_heads": 1, "torch_dtype": "bfloat16"}
    rep = inspect(data)
    assert rep.alpha_bytes_per_token == 4 * 2 * 2 * 64 * 2  # 2048, from the keys it read
    assert any(w.startswith("estimate, not exact: num_local_kv_heads") for w in rep.warnings)


def test_generic_mapper_without_unread_head_keys_is_not_an_estimate():
    data = {"model_type": "brand_new", "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
            "hidden_size": 512, "torch_dtype": "bfloat16"}
    assert not any("estimate" in w for w in inspect(data).warnings)


# -- per-layer lists longer than the layer count -------------------------------------------------------


def test_longer_layer_types_with_mtp_layers_is_a_note():
    data = dict(LLAMA_1B, num_hidden_layers=4, sliding_window=128, num_nextn_predict_layers=1,
                layer_types=["sliding_attention", "full_attention"] * 2 + ["full_attention"])
    rep = inspect(data)
    assert len(rep.layers) == 4
    assert "layer_types lists 1 entry past num_hidden_layers 4 (MTP layers): left out" in rep.notes
    assert not any("layer_types" in w for w in rep.warnings)


def test_longer_layer_types_without_mtp_layers_is_a_warning():
    data = dict(LLAMA_1B, num_hidden_layers=4, sliding_window=128,
                layer_types=["sliding_attention", "full_attention"] * 3)
    rep = inspect(data)
    # the first 4 entries: 2 full layers × 2 × 8 × 64 × 2
    assert rep.alpha_bytes_per_token == 2 * 2 * 8 * 64 * 2 == 4096
    assert any("layer_types has 6 entries but the model has 4 layers" in w for w in rep.warnings)


# -- the text sub-config before the root -----------------------------------------------------------


def test_a_root_kv_alias_beside_text_config_is_not_the_decoders():
    # the tower's num_kv_heads (earlier in vLLM's alias order) sits at the root; the decoder's in text_config
    data = {"model_type": "brand_new_vl", "num_kv_heads": 16, "head_dim": 80,
            "text_config": dict(LLAMA_1B, model_type="llama")}
    rep = inspect(data)
    assert rep.alpha_bytes_per_token == LLAMA_1B_ALPHA  # 16 × 2 × 8 × 64 × 2, not 16 heads of 80


def test_text_config_without_head_dim_does_not_take_the_roots():
    text = {k: v for k, v in LLAMA_1B.items() if k != "head_dim"}  # 2048 / 32 = 64 either way
    data = {"model_type": "brand_new_vl", "head_dim": 128, "text_config": dict(text, model_type="llama")}
    assert inspect(data).alpha_bytes_per_token == LLAMA_1B_ALPHA


def test_hunyuan_cla_layers_read_the_owner():
    data = dict(LLAMA_1B, model_type="hunyuan_v1_dense", use_cla=True, cla_share_factor=2)
    rep = inspect(data)
    assert rep.alpha_bytes_per_token == 8 * 2 * 8 * 64 * 2 == 16384  # 8 of 16 layers own K and V
    assert [layer["copies"] for layer in rep.to_dict()["layers"]] == [1, 0] * 8
    assert [layer["source_layer"] for layer in rep.to_dict()["layers"]][:4] == [None, 0, None, 2]
    assert any(note.startswith("cross-layer attention (use_cla, cla_share_factor 2)") for note in rep.notes)


def test_hunyuan_cla_share_factor_without_use_cla_shares_nothing():
    # Hy-MT2-7B writes use_cla: false beside cla_share_factor: 2
    rep = inspect(dict(LLAMA_1B, model_type="hunyuan_v1_dense", use_cla=False, cla_share_factor=2))
    assert rep.alpha_bytes_per_token == LLAMA_1B_ALPHA
    assert not any("estimate" in w for w in rep.warnings)


def test_a_root_window_size_beside_text_config_is_not_the_decoders():
    # Granite Speech: the projector's window_size (15) sits at the root; the Granite decoder has no window.
    # vLLM's oracle on transformers' defaults: 32 full-attention layers, no sliding window.
    data = {"model_type": "granite_speech", "architectures": ["GraniteSpeechForConditionalGeneration"],
            "window_size": 15, "text_config": dict(LLAMA_1B, model_type="granite")}
    rep = inspect(data)
    assert [layer.kind for layer in rep.layers] == ["full"] * 16
    assert rep.alpha_bytes_per_token == LLAMA_1B_ALPHA and rep.gamma_bytes_per_request == 0
