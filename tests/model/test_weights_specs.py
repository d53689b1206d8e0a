"""Issue 30 item 1: the weights estimate driven by the mappers' layer specs. Families without a layout of
their own are priced from their layers' parts (attention, MLA, linear attention, Mamba, short conv,
RWKV) and the config's shapes; configs the old per-model-type list answered "unknown" for are priced.
Expected counts are hand arithmetic from the configs' shapes (written beside them) or published figures
(cited); the layer specs come from the mappers, as a report passes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hfkv.inspection import inspect_config
from hfkv.model.specs import FullAttention, LayerSpec, MambaState
from hfkv.model.weights import Unknown, WeightsEstimate, estimate_weights

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HUB = Path(__file__).resolve().parents[3] / "shared" / "hub-configs"
needs_hub = pytest.mark.skipif(not HUB.is_dir(), reason="../shared/hub-configs absent")


def _load(name: str) -> dict:
    path = FIXTURES / name / "config.json"
    return json.loads((path if path.is_file() else HUB / f"{name}.json").read_text())


def _priced(config: dict) -> WeightsEstimate:
    got = estimate_weights(config, inspect_config(config).layer_specs)
    assert isinstance(got, WeightsEstimate), got.reason
    return got


@needs_hub
def test_minimax_m3_nvfp4_by_role():
    """nvidia/MiniMax-M3-NVFP4 (transformers' MiniMaxM3VL layout): 60 layers, 3 dense then 57 MoE, 57 sparse
    (MSA) layers with an index, a CLIP-like tower and a patch-merging projector; modelopt MIXED_PRECISION."""
    got = _priced(json.loads((HUB / "nvidia__MiniMax-M3-NVFP4.json").read_text()))
    # attention per layer: q 6144→64×128, k and v 6144→4×128, o 8192→6144, q/k norms 128 each
    attention = 60 * (2 * 6144 * 8192 + 2 * 6144 * 512 + 2 * 128)
    # the MSA index of 57 sparse layers: q 6144→4 heads×128, k 6144→128, their norms 128 each
    index = 57 * (6144 * 512 + 6144 * 128 + 2 * 128)
    assert got.role("attention").parameters == attention + index == 6_641_448_192
    assert got.role("dense_mlp").parameters == 3 * 3 * 6144 * 12288 == 679_477_248  # dense_intermediate_size
    assert got.role("routed_experts").parameters == 57 * 128 * 3 * 6144 * 3072 == 413_122_166_784
    assert got.role("shared_experts").parameters == 57 * 3 * 6144 * 3072 == 3_227_516_928  # shared_intermediate_size
    assert got.role("embedding").parameters == 2 * 200064 * 6144  # untied head
    # tower: Conv3d 1280×3×2×14×14, pre-LN, 32 CLIP blocks, the projector (linear_1/2, merge_linear_1/2)
    block = 4 * (1280 * 1280 + 1280) + (1280 * 5120 + 5120) + (5120 * 1280 + 1280) + 4 * 1280
    projector = (1280 * 6144 + 6144) + 2 * (6144 * 6144 + 6144) + (6144 * 4 * 6144 + 6144)
    assert got.role("towers").parameters == 1280 * 3 * 2 * 14 * 14 + 2 * 1280 + 32 * block + projector == 865_567_232
    # routers 128×6144 with a 128 routing bias on 57 layers, two norms a layer, the final norm
    assert got.role("other").parameters == 57 * (128 * 6144 + 128) + 60 * 2 * 6144 + 6144
    # bytes: NVFP4 experts, 4 bits + an fp8 scale per 16 + two fp32 per-tensor scales a linear (the three
    # linears of an expert are 3072×6144 or 6144×3072 either way)
    nvfp4 = 6144 * 3072 // 2 + 6144 * 3072 // 16 + 8
    assert got.role("routed_experts").bytes == 57 * 128 * 3 * nvfp4 == 232_381_393_920
    # MXFP8 linears: 1 B a weight + an e8m0 byte per 32 inputs (out × in/32); the q/k norms stay bf16
    mx = lambda o, i: o * i + o * i // 32  # noqa: E731
    per_layer = mx(8192, 6144) + 2 * mx(512, 6144) + mx(6144, 8192) + 2 * 2 * 128  # q, k and v, o, norms
    sparse = mx(512, 6144) + mx(128, 6144) + 2 * 2 * 128
    assert got.role("attention").bytes == 60 * per_layer + 57 * sparse
    assert "mixed precision" in got.quantization and "MTP" in " ".join(got.notes)


@needs_hub
def test_chatglm2_by_hand():
    # THUDM/chatglm2-6b: 2 KV groups of 128 (multi_query_group_num, kv_channels), ffn 13696, padded vocab 65024,
    # an output layer of its own, q/k/v biases (add_qkv_bias), no other bias (add_bias_linear false)
    got = _priced(json.loads((HUB / "THUDM__chatglm2-6b.json").read_text()))
    layer = (4096 * 4096 + 4096) + 2 * (4096 * 256 + 256) + 4096 * 4096 + 3 * 4096 * 13696 + 2 * 4096
    assert layer == 203_960_832
    assert got.total_parameters == 2 * 65024 * 4096 + 4096 + 28 * layer == 6_243_584_000


def test_hunyuan_large_cross_layer_attention():
    # tencent/Tencent-Hunyuan-Large: 64 layers, 80 heads of 80, 8 KV heads; cla_share_factor 2: the 32 layers
    # that read their neighbour's KV have no k/v projection; 16 experts and one shared expert of 18304; tied
    got = _priced(_load("tencent__Tencent-Hunyuan-Large"))
    every = 2 * 6400 * 6400 + 80 + 17 * 3 * 6400 * 18304 + 16 * 6400 + 2 * 6400  # q, o, q_norm, MLPs, router, norms
    own_kv = 2 * 640 * 6400 + 80  # k, v and k_norm
    total = 129024 * 6400 + 6400 + 64 * every + 32 * own_kv
    assert got.total_parameters == total == 388_701_402_880
    assert abs(total - 389e9) / 389e9 < 0.001  # the model card's "389 billion total parameters"


def test_rwkv4_169m():
    # RWKV/rwkv-4-169m-pile: time mixing (key, value, receptance, output 768×768, time_decay/first, three mixes),
    # channel mixing (key 3072×768, receptance 768×768, value 768×3072, two mixes), ln1/ln2 with biases,
    # the first block's pre_ln, ln_out, an untied head
    got = _priced(_load("RWKV__rwkv-4-169m-pile"))
    block = 4 * 768 * 768 + 2 * 768 + 3 * 768 + 3072 * 768 + 768 * 768 + 768 * 3072 + 2 * 768 + 4 * 768
    assert block == 7_676_160
    assert got.total_parameters == 2 * 50277 * 768 + 2 * 768 + 2 * 768 + 12 * block == 169_342_464


@needs_hub
def test_lfm2_short_conv_layers():
    # LiquidAI/LFM2.5-Embedding-350M: 10 conv layers (in_proj 1024→3×1024, depthwise conv 1024×3, out_proj),
    # 6 attention layers (16 heads of 64, 8 KV heads, q/k layernorms 64), every layer a w1/w3/w2 MLP of
    # int(2 × 6656 / 3) = 4437 rounded up to block_multiple_of 256 = 4608 (block_ffn_dim_multiplier 1.0), two
    # norms; an embedding model (Lfm2BidirectionalModel): no head
    got = _priced(json.loads((HUB / "LiquidAI__LFM2.5-Embedding-350M.json").read_text()))
    conv = 3 * 1024 * 1024 + 1024 * 3 + 1024 * 1024
    attention = 1024 * 1024 + 2 * 512 * 1024 + 1024 * 1024 + 2 * 64
    total = 65536 * 1024 + 1024 + 10 * conv + 6 * attention + 16 * (3 * 1024 * 4608 + 2 * 1024)
    assert got.total_parameters == total == 354_483_968


def test_minicpm4_is_llama_shaped():
    # openbmb/MiniCPM4-8B: 32 heads of 128, 2 KV heads, MLP 16384, vocab 73448, untied (μP scales hold no weights)
    got = _priced(_load("openbmb__MiniCPM4-8B"))
    layer = 2 * 4096 * 4096 + 2 * 256 * 4096 + 3 * 4096 * 16384 + 2 * 4096
    assert got.total_parameters == 2 * 73448 * 4096 + 4096 + 32 * layer == 8_185_253_888


@needs_hub
def test_mamba_ssm_format_matches_its_hf_copy():
    # state-spaces/mamba-2.8b in mamba_ssm's own format (d_model, n_layer, tied, vocab 50277 padded to a
    # multiple of 8 = 50280) holds the checkpoint the -hf copy converts: 2,768,345,600 (weights-truth.tsv)
    assert _priced(_load("state-spaces__mamba-2.8b")).total_parameters == 2_768_345_600


def test_per_layer_head_dims_come_from_the_specs():
    # domyn/Domyn-Edge-Base: 32 query and 8 KV heads of head_sizes[i] per layer (256 or 64), MLP 9728, tied;
    # a model type with no layout of its own: the generic decoder layout, said in the error
    config = _load("domyn__Domyn-Edge-Base-config-class-defaults")
    got = _priced(config)
    attention = sum((32 + 8 + 8 + 32) * 2560 * d for d in config["head_sizes"])
    total = 115269 * 2560 + 2560 + attention + 36 * (3 * 2560 * 9728 + 2 * 2560)
    assert got.total_parameters == total
    assert "generic decoder layout" in got.error_note


# ----------------------------------------------------------------------------------------------- fail closed
def test_without_specs_a_spec_priced_family_is_unknown():
    config = _load("meta-llama__Meta-Llama-3.1-8B")
    got = estimate_weights(config)
    assert isinstance(got, Unknown) and got.missing_keys == ("model_type",)


def test_a_module_the_config_describes_and_nothing_prices():
    # Qwen2.5-Omni: the thinker's text model is priced, but talker_config describes a model of its own
    got = estimate_weights(config := _load("Qwen__Qwen2.5-Omni-transformers-defaults"),
                           inspect_config(config).layer_specs)
    assert isinstance(got, Unknown) and got.missing_keys == ("talker_config",)


def _generic(**over) -> dict:
    config = {"model_type": "mystery", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "intermediate_size": 128, "vocab_size": 1000, "tie_word_embeddings": False}
    config.update(over)
    return config


FULL = FullAttention(kv_heads=2, head_dim=16)


def test_generic_dense_by_hand():
    got = estimate_weights(_generic(), [LayerSpec(index=i, kind="full", parts=(FULL,)) for i in range(2)])
    # q and o 64×64, k and v 32×64, gated MLP 3×64×128, two norms; embeddings and head 1000×64, final norm
    assert got.total_parameters == 2 * 1000 * 64 + 64 + 2 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 64 * 128 + 2 * 64)


def test_generic_fails_closed_on_what_it_cannot_know():
    layers = [LayerSpec(index=0, kind="full", parts=(FULL,)), LayerSpec(index=1, kind="mlp", parts=())]
    got = estimate_weights(_generic(), layers)  # mixers and MLPs in layers of their own (Nemotron-H style)
    assert isinstance(got, Unknown) and got.missing_keys == ("model_type",)
    mamba = MambaState(version=2, num_heads=4, head_dim=16, state_size=8, n_groups=1, conv_kernel=4)
    got = estimate_weights(_generic(), [LayerSpec(index=0, kind="hybrid", parts=(FULL, mamba))])
    assert isinstance(got, Unknown) and "heads + mamba" in got.reason  # shared or not: Zamba vs Falcon-H1
    # a mixture-of-experts config without its expert count is never priced as dense
    got = estimate_weights(_generic(num_experts_per_tok=2), [LayerSpec(index=0, kind="full", parts=(FULL,))])
    assert isinstance(got, Unknown) and "num_local_experts" in " ".join(got.missing_keys)


def test_generic_head_when_tying_is_unstated():
    one = [LayerSpec(index=0, kind="full", parts=(FULL,))]
    bare = _generic()
    del bare["tie_word_embeddings"]
    counted = estimate_weights(bare, one)  # hand-written, no class named: the head counted, said
    assert counted.role("embedding").parameters == 2 * 1000 * 64 and any("tie_word_embeddings" in n for n in counted.notes)
    saved = estimate_weights({**bare, "transformers_version": "4.57.0"}, one)  # save_pretrained left it out: tied
    assert saved.role("embedding").parameters == 1000 * 64


def test_whisper_large_v3_by_hand():
    # openai/whisper-large-v3: d 1280, 32 + 32 layers, FFN 5120, 128 mel bins, 1500 / 448 positions, vocab 51866;
    # per attention q, v, out biased and k not (4 × 1280² + 3 × 1280), biased fc1/fc2 and LayerNorms; tied proj_out
    attention = 4 * 1280 * 1280 + 3 * 1280
    ffn = (5120 * 1280 + 5120) + (1280 * 5120 + 1280)
    encoder = (1280 * 128 * 3 + 1280) + (1280 * 1280 * 3 + 1280) + 1500 * 1280 + 32 * (attention + ffn + 2 * 2560) + 2560
    decoder = 51866 * 1280 + 448 * 1280 + 32 * (2 * attention + ffn + 3 * 2560) + 2560
    assert _priced(_load("openai__whisper-large-v3")).total_parameters == encoder + decoder == 1_543_490_560
    # distil-whisper/distil-large-v3: the same encoder, 2 decoder layers ("756M")
    distil = encoder + 51866 * 1280 + 448 * 1280 + 2 * (2 * attention + ffn + 3 * 2560) + 2560
    assert _priced(_load("distil-whisper__distil-large-v3")).total_parameters == distil == 756_405_760


@needs_hub
def test_nemotron_nas_blocks_by_hand():
    # nvidia/Llama-3_3-Nemotron-Super-49B-v1 (DeciLM): 49 attention blocks (64 heads of 128, 8 KV heads), 31 no-op;
    # every block's FFN width two thirds of ffn_mult × 8192 rounded up to 256: 5.25 -> 28672 (49 blocks),
    # 2.625 -> 14336 (6), 1.3125 -> 7168 (10), 1.0 -> 5461 -> 5632 (8), 0.5 -> 2730 -> 2816 (6), 3.28125 -> 17920 (1);
    # a norm before each attention and each FFN; untied 128,256 × 8,192 embeddings
    widths = 49 * 28672 + 6 * 14336 + 10 * 7168 + 8 * 5632 + 6 * 2816 + 17920
    attention = 49 * (2 * 8192 * 8192 + 2 * 1024 * 8192)
    total = 2 * 128256 * 8192 + 8192 + attention + 3 * 8192 * widths + (49 + 80) * 8192
    got = _priced(json.loads((HUB / "nvidia__Llama-3_3-Nemotron-Super-49B-v1.json").read_text()))
    assert got.total_parameters == total == 49_867_145_216  # "49B" (the model card)
