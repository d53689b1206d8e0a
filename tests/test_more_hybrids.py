"""The last hybrids of engines.md §4 (one module per family under mappings/): hand-derived α, γ and per-layer C.

Conventions of the figures below: KV and conv state bf16 (2 B), recurrent state fp32 (4 B), indexer
keys fp8 with one fp32 scale per 128 values, TP 1, unless a test says otherwise.
GDN/KDA layer: C = N_v·H_k·H_v·4 + (w − 1)·(N_v·H_v + 2·N_qk·H_k)·2. GQA layer: E = K·(H + H)·2.
MLA layer: E = (d_c + d_r)·2. A window-W layer adds W·E to γ. Short conv: C = (w − 1)·dim·2.

Types without a transformers class and without a real config in /work/shared/hub-configs are tested
on small inline configs built from the keys engines.md names (marked "synthetic").
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from hfkv import ConfigError, Options, inspect_config
from hfkv.model.config import ConfigView
from hfkv.mappings import resolve

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
QWEN4 = "Qwen__Qwen4-Exp-transformers-defaults"
RGEMMA = "google__recurrentgemma-2b-transformers-defaults"
ZAYA = "Zyphra__ZAYA1-8B-transformers-defaults"
INKLING = "thinkingmachines__Inkling-transformers-defaults"

# Qwen3-Next-shaped GDN layer (N_qk 16, N_v 32, H_k = H_v = 128, w 4):
GDN_C = 32 * 128 * 128 * 4 + 3 * (32 * 128 + 2 * 16 * 128) * 2  # 2097152 + 49152 = 2146304


def load(name: str) -> dict:
    return json.loads((FIXTURES / name / "config.json").read_text())


def report(data: dict, **options):
    return inspect_config(copy.deepcopy(data), model="test", options=Options(**options))


def kinds(rep) -> list[str]:
    return [layer.kind for layer in rep.layers]


def state_of(rep, index: int) -> int:
    return rep.to_dict()["layers"][index]["state_bytes"]


def qwen_linear(**extra) -> dict:
    """Qwen3-Next's linear_* geometry (N_qk 16, N_v 32, 128 × 128, w 4) plus ``extra``."""
    return {"linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
            "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, **extra}


# -- registry ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("model_type, module", [
    ("alice_ai", "alice"), ("gigachat3_5", "gigachat"), ("interns2_preview", "intern"), ("mobius", "intern"),
    ("jet_nemotron", "nemotron"), ("minicpm_sala", "minicpm"), ("qwen4_exp", "qwen"), ("qwen4_exp_text", "qwen"),
    ("recurrent_gemma", "gemma"), ("zaya", "zyphra"), ("inkling_model", "inkling"), ("inkling_mm_model", "inkling"),
    ("moss_vl", "moss"),
])
def test_every_type_resolves_to_its_family_module(model_type, module):
    assert resolve(ConfigView({"model_type": model_type})).name.startswith(f"{module}.")


# -- Qwen4-Exp --------------------------------------------------------------------------------------


def test_qwen4_exp_defaults():
    rep = report(load(QWEN4))
    assert rep.mapper == "qwen.qwen4_exp"
    # layer_types: indexed_attention iff (i + 1) % 4 == 0 → 10 full GQA layers of 2 KV heads × 256 dims
    assert kinds(rep)[:4] == ["gdn", "gdn", "gdn", "full"]
    assert rep.alpha_bytes_per_token == 10 * 2 * (256 + 256) * 2 == 20480
    assert rep.gamma_bytes_per_request == 30 * GDN_C == 64389120


def qwen4_with_qsa_and_ple() -> dict:
    data = load(QWEN4)
    data["text_config"].update(indexer_n_heads=16, indexer_kv_heads=1, indexer_head_dim=128, indexer_budget=2048,
                               indexer_compress_ratio=4, ple_layer_ids=[1, 2])
    return data


def test_qwen4_exp_qsa_indexer_and_ple_state():
    rep = report(qwen4_with_qsa_and_ple())
    assert kinds(rep)[:4] == ["gdn+ple", "gdn+ple", "gdn", "qsa"]  # ple_layer_ids [1, 2] are 1-based
    # QSA: 128 fp8 values + one 4 B scale = 132 B per 4 tokens = 33 B/token per full layer
    assert rep.alpha_bytes_per_token == 20480 + 10 * 132 / 4 == 20810
    # PLE: (2048 hidden × 4 hc) × ((4 − 1) × 3 ngram) = 73728 values × 2 B = 147456 per PLE layer
    assert state_of(rep, 0) == GDN_C + 2048 * 4 * 3 * 3 * 2 == 2293760
    assert rep.gamma_bytes_per_request == 30 * GDN_C + 2 * 147456 == 64684032
    assert any("PLE" in w for w in rep.warnings) and any("QSA" in w for w in rep.warnings)


def test_qwen4_exp_qsa_in_bf16():
    rep = report(qwen4_with_qsa_and_ple(), indexer_dtype="bf16")
    assert rep.alpha_bytes_per_token == 20480 + 10 * 128 * 2 / 4 == 21120  # 256 B per 4 tokens


@pytest.mark.parametrize("ids, problem", [([0], "outside 1..40"), ([4], "not a linear_attention layer")])
def test_qwen4_exp_bad_ple_ids(ids, problem):
    data = load(QWEN4)
    data["text_config"]["ple_layer_ids"] = ids  # 1-based: 0 is invalid, 4 is layer index 3 (full)
    with pytest.raises(ConfigError, match=problem):
        report(data)


def test_qwen4_exp_unknown_layer_type():
    data = load(QWEN4)
    data["text_config"]["layer_types"][5] = "mamba"
    with pytest.raises(ConfigError, match=r"layer_types\[5\]"):
        report(data)


# -- RecurrentGemma ---------------------------------------------------------------------------------


def test_recurrent_gemma_defaults():
    rep = report(load(RGEMMA))
    # block_types (recurrent, recurrent, attention) over 26 layers: attention at i % 3 == 2 → 8 layers
    assert kinds(rep).count("sliding") == 8 and kinds(rep)[:3] == ["rglru", "rglru", "sliding"]
    assert rep.alpha_bytes_per_token == 0  # every attention layer is local
    # window 2048 × 10 KV heads × (256 + 256) × 2 B = 2048 × 10240; RG-LRU 2560 × 4 + 3 × 2560 × 2 = 25600
    assert state_of(rep, 0) == 2560 * 4 + 3 * 2560 * 2 == 25600
    assert rep.gamma_bytes_per_request == 8 * 2048 * 10240 + 18 * 25600 == 168232960


def test_recurrent_gemma_tp2():
    rep = report(load(RGEMMA), tensor_parallel_size=2)
    # 5 KV heads per GPU: 5 × 512 × 2 = 5120 B; RG-LRU 1280 channels: 1280 × 4 + 3 × 1280 × 2 = 12800
    assert rep.gamma_bytes_per_request == 8 * 2048 * 5120 + 18 * 12800 == 84116480


def test_recurrent_gemma_empty_block_types():
    data = load(RGEMMA)
    data["block_types"] = []
    with pytest.raises(ConfigError, match="block_types"):
        report(data)


# -- ZAYA1 ------------------------------------------------------------------------------------------

ZAYA_CCA = (8 + 2) * 128 * (2 + 2 - 2) * 2 + 2048 * 1 * 2  # 5120 conv + 4096 (hidden, 1) = 9216


def test_zaya_defaults():
    rep = report(load(ZAYA))
    # 40 hybrid layers, 2 KV heads × (128 + 128) × 2 B = 1024 B each
    assert set(kinds(rep)) == {"full+cca"}
    assert rep.alpha_bytes_per_token == 40 * 1024 == 40960
    assert state_of(rep, 0) == ZAYA_CCA == 9216
    assert rep.gamma_bytes_per_request == 40 * 9216 == 368640


def test_zaya_layers_a_marks_attention():
    data = load(ZAYA)
    data["zaya_layers"] = ["a", 16] * 20  # SGLang's list: 'a' = attention, numbers = MoE layers
    rep = report(data)
    assert kinds(rep)[:2] == ["full+cca", "mlp"]
    assert rep.alpha_bytes_per_token == 20 * 1024 == 20480
    assert rep.gamma_bytes_per_request == 20 * 9216 == 184320


def test_zaya_without_pattern_uses_even_layers():
    data = load(ZAYA)
    del data["layer_types"]
    rep = report(data)
    assert rep.alpha_bytes_per_token == 20 * 1024  # attention iff i is even
    assert any("i is even" in w for w in rep.warnings)


def test_zaya_sliding_layers():
    data = load(ZAYA)
    data["layer_types"] = ["hybrid_sliding", "hybrid"] * 20
    data["sliding_window"] = 4096
    rep = report(data)
    assert rep.alpha_bytes_per_token == 20 * 1024 == 20480
    assert rep.gamma_bytes_per_request == 20 * 4096 * 1024 + 40 * 9216 == 84254720
    del data["sliding_window"]
    with pytest.raises(ConfigError, match="sliding_window"):
        report(data)


# -- Inkling ----------------------------------------------------------------------------------------

INKLING_CONV_FULL = 3 * (2 * 8 * 128 + 2 * 6144) * 2  # (4 − 1) × 14336 × 2 = 86016
INKLING_CONV_SWA = 3 * (2 * 16 * 128 + 2 * 6144) * 2  # (4 − 1) × 16384 × 2 = 98304


def test_inkling_defaults():
    rep = report(load(INKLING))
    assert rep.mapper == "inkling.inkling"
    # 66 layers, full iff (i + 1) % 6 == 0 → 11 full (8 KV × 128), 55 sliding (16 KV × 128, W 512)
    assert kinds(rep).count("full") == 11 and kinds(rep)[5] == "full"
    assert rep.alpha_bytes_per_token == 11 * 8 * 256 * 2 == 45056
    expected = 55 * 512 * 16 * 256 * 2 + 11 * INKLING_CONV_FULL + 55 * INKLING_CONV_SWA
    assert expected == 230686720 + 946176 + 5406720 == 237039616
    assert rep.gamma_bytes_per_request == expected


def test_inkling_local_layer_ids_win():
    data = load(INKLING)
    data["text_config"]["local_layer_ids"] = list(range(0, 66, 2))  # 0-based: 33 sliding, 33 full
    rep = report(data)
    assert kinds(rep)[:2] == ["sliding", "full"]
    assert rep.alpha_bytes_per_token == 33 * 4096 == 135168
    expected = 33 * 512 * 8192 + 33 * INKLING_CONV_FULL + 33 * INKLING_CONV_SWA
    assert expected == 138412032 + 2838528 + 3244032 == 144494592
    assert rep.gamma_bytes_per_request == expected


def test_inkling_model_synthetic_without_conv():
    # synthetic: inkling_model has no transformers class, so nothing fills a missing kernel size
    data = {"model_type": "inkling_model", "num_hidden_layers": 2, "num_attention_heads": 64,
            "num_key_value_heads": 8, "head_dim": 128, "swa_num_key_value_heads": 16, "swa_head_dim": 128,
            "sliding_window_size": 512, "hidden_size": 6144, "layer_types": ["hybrid_sliding", "hybrid"]}
    rep = report(data)
    assert rep.alpha_bytes_per_token == 4096
    assert rep.gamma_bytes_per_request == 512 * 8192 == 4194304
    assert any("no short-conv state" in n for n in rep.notes)
    data["sconv_kernel_size"] = 4
    assert report(data).gamma_bytes_per_request == 4194304 + 86016 + 98304 == 4378624


# -- AliceAI, GigaChat-3.5, InternS2 / Mobius (synthetic) ---------------------------------------------


def test_alice_ai_kda_and_gqa():
    data = {"model_type": "alice_ai", "architectures": ["AliceAIForCausalLM"], "num_hidden_layers": 8,
            "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "hidden_size": 2048,
            "full_attention_interval": 4, **qwen_linear(linear_num_key_heads=32)}
    rep = report(data)
    assert kinds(rep)[:4] == ["kda", "kda", "kda", "full"]
    assert rep.alpha_bytes_per_token == 2 * 2 * 512 * 2 == 4096  # layers 3 and 7
    # KDA: 32 × 128 × 128 × 4 + 3 × (32 × 128 + 2 × 32 × 128) × 2 = 2097152 + 73728
    assert state_of(rep, 0) == 2170880
    assert rep.gamma_bytes_per_request == 6 * 2170880 == 13025280


def test_alice_ai_missing_linear_keys():
    data = {"model_type": "alice_ai", "num_hidden_layers": 4, "num_attention_heads": 16, "head_dim": 256}
    with pytest.raises(ConfigError, match="linear_num_key_heads"):
        report(data)


GIGA = {"model_type": "gigachat3_5", "num_hidden_layers": 6, "num_attention_heads": 16, "kv_lora_rank": 512,
        "qk_rope_head_dim": 64, "hidden_size": 2048, **qwen_linear()}


def test_gigachat35_full_attention_layers_zero_based():
    rep = report({**GIGA, "full_attention_layers": [2, 5]})
    assert kinds(rep) == ["gdn", "gdn", "mla", "gdn", "gdn", "mla"]
    assert rep.alpha_bytes_per_token == 2 * (512 + 64) * 2 == 2304
    assert rep.gamma_bytes_per_request == 4 * GDN_C == 8585216
    assert kinds(report({**GIGA, "full_attention_layers": [0]}))[0] == "mla"  # 0-based: 0 is valid


def test_gigachat35_layer_types_and_missing_pattern():
    types = ["linear_attention", "full_attention"] * 3
    rep = report({**GIGA, "layer_types": types})
    assert rep.alpha_bytes_per_token == 3 * 1152 == 3456 and rep.gamma_bytes_per_request == 3 * GDN_C
    with pytest.raises(ConfigError, match="full_attention_layers"):
        report(GIGA)


@pytest.mark.parametrize("model_type", ["interns2_preview", "mobius"])
def test_qwen_next_like(model_type):
    text = {"num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
            "layer_types": ["linear_attention"] * 3 + ["full_attention"], **qwen_linear()}
    rep = report({"model_type": model_type, "text_config": text})
    assert rep.alpha_bytes_per_token == 2 * 512 * 2 == 2048
    assert rep.gamma_bytes_per_request == 3 * GDN_C == 6438912
    assert any("Qwen3-Next" in w for w in rep.warnings)


# -- Jet-Nemotron (synthetic) -----------------------------------------------------------------------

JET = {"model_type": "jet_nemotron", "num_hidden_layers": 6, "hidden_size": 1536, "num_attention_heads": 12,
       "num_key_value_heads": 2, "layer_types": ["jet", "jet", "attn", "jet", "swa", "jet"],
       "efficient_attention_config": {"jet": {"num_heads": 12, "head_dim": 96, "expand_v": 2.0, "conv_size": 4},
                                      "swa": {"window_size": 1024}}}


def test_jet_nemotron():
    rep = report(JET)
    assert kinds(rep) == ["jetblock", "jetblock", "full", "jetblock", "sliding", "jetblock"]
    # head_dim 1536 / 12 = 128: E = 2 × 256 × 2 = 1024 B
    assert rep.alpha_bytes_per_token == 1024
    # JetBlock: 12 × 96 × 192 × 4 + 4 rows × (12 × 192) × 2 = 884736 + 18432
    assert state_of(rep, 0) == 903168
    assert rep.gamma_bytes_per_request == 1024 * 1024 + 4 * 903168 == 4661248


def test_jet_nemotron_bad_input():
    data = copy.deepcopy(JET)
    data["efficient_attention_config"]["jet"]["expand_v"] = 0.3  # 96 × 0.3 = 28.8
    with pytest.raises(ConfigError, match="expand_v"):
        report(data)
    data = copy.deepcopy(JET)
    data["layer_types"][1] = "mamba"
    with pytest.raises(ConfigError, match=r"layer_types\[1\]"):
        report(data)


# -- MiniCPM-SALA (synthetic) -----------------------------------------------------------------------

SALA = {"model_type": "minicpm_sala", "num_hidden_layers": 4, "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 2, "head_dim": 128, "lightning_nh": 32, "lightning_nkv": 32, "lightning_head_dim": 128,
        "mixer_types": ["minicpm4", "lightning-attn", "lightning-attn", "lightning-attn"]}


def test_minicpm_sala():
    rep = report(SALA)
    assert kinds(rep) == ["full", "lightning", "lightning", "lightning"]
    assert rep.alpha_bytes_per_token == 2 * 256 * 2 == 1024
    assert rep.gamma_bytes_per_request == 3 * 32 * 128 * 128 * 4 == 6291456  # no conv
    assert any("InfLLM-v2" in w for w in rep.warnings)
    # the state has lightning_nkv heads (SGLang's shape): 16 × 128 × 128 × 4 = 1048576 per layer
    assert report({**SALA, "lightning_nkv": 16}).gamma_bytes_per_request == 3 * 1048576


def test_minicpm_sala_bad_mixer():
    with pytest.raises(ConfigError, match=r"mixer_types\[2\]"):
        report({**SALA, "mixer_types": ["minicpm4", "lightning", "swa", "lightning"]})
    with pytest.raises(ConfigError, match="mixer_types"):
        report({k: v for k, v in SALA.items() if k != "mixer_types"})


# -- MOSS-VL (synthetic) ----------------------------------------------------------------------------


def test_moss_vl_cross_attention_counted_like_mllama():
    text = {"num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
            "cross_attention_layers": list(range(2, 48, 4))}
    rep = report({"model_type": "moss_vl", "text_config": text})
    assert kinds(rep).count("cross-attention") == 12 and kinds(rep)[2] == "cross-attention"
    assert rep.alpha_bytes_per_token == 48 * 8 * 256 * 2 == 196608  # every layer n = S
    text["cross_attention_layers"] = [48]
    with pytest.raises(ConfigError, match="past the 48 layers"):
        report({"model_type": "moss_vl", "text_config": text})
    del text["cross_attention_layers"]
    with pytest.raises(ConfigError, match="cross_attention_layers"):
        report({"model_type": "moss_vl", "text_config": text})
