"""MiniMax-M3 MSA, LongCat-Flash, looped models, Nemotron-NAS, mllama, and the unsupported
encoder-decoder / encoder-only models.

Every expected figure is derived by hand from the reference formulas (accounting.md, engines.md);
the arithmetic is written beside it. bf16 = 2 B per element unless a test says otherwise.
"""

from __future__ import annotations

import copy
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from hfkv import ConfigError, HfkvError, Options, UnsupportedModelError, inspect_config
from hfkv.commands.cli import main
from hfkv.sources import load_local

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HUB_CONFIGS = Path(__file__).resolve().parents[2] / "shared" / "hub-configs"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name / "config.json").read_text())


def report(data: dict | str, **options):
    if isinstance(data, str):
        return inspect_config(load(data), model=data, options=Options(**options))
    return inspect_config(data, model="inline", options=Options(**options))


def kinds(rep) -> dict[str, int]:
    out: dict[str, int] = {}
    for layer in rep.layers:
        out[layer.kind] = out.get(layer.kind, 0) + 1
    return out


def indices(rep, kind: str) -> list[int]:
    return [layer.index for layer in rep.layers if layer.kind == kind]


# -- MiniMax-M3 sparse attention ----------------------------------------------------------------

M3 = "nvidia__MiniMax-M3-NVFP4"


def test_minimax_m3_fixture():
    rep = report(M3)
    assert rep.mapper == "minimax.minimax_m3"
    assert rep.kv_cache_dtype == "bf16"  # kv_cache_quant_algo is null: the config's bfloat16
    # sparse_attention_freq: three 0s (layers 0-2 dense), then 57 1s; sparse_disable_index_value the same (K only)
    assert kinds(rep) == {"full": 3, "msa-sparse": 57}
    assert indices(rep, "full") == [0, 1, 2]
    # main: 60 layers × 2 × 4 KV heads × 128 × 2 B = 60 × 2048 = 122880
    # index: 57 sparse K-only layers × 1 head × 128 × 2 B = 57 × 256 = 14592
    assert rep.alpha_bytes_per_token == 122880 + 14592 == 137472
    assert rep.gamma_bytes_per_request == 0
    sparse = next(layer for layer in rep.layers if layer.kind == "msa-sparse")
    assert sparse.entry_bytes == 2048 + 256
    assert any("1 MTP module" in note for note in rep.notes)  # num_mtp_modules: 1, left out


def test_minimax_m3_fp8_and_tp():
    # fp8: main 60 × 2 × 4 × 128 × 1 = 61440, index 57 × 128 × 1 = 7296
    assert report(M3, kv_cache_dtype="fp8").alpha_bytes_per_token == 61440 + 7296 == 68736
    # TP 2: 2 KV heads per GPU: 60 × 2 × 2 × 128 × 2 = 61440; the 1-head index is replicated: 14592
    assert report(M3, tensor_parallel_size=2).alpha_bytes_per_token == 61440 + 14592 == 76032
    # TP 8 > 4 KV heads: one (replicated) head per GPU: 60 × 2 × 1 × 128 × 2 = 30720, + 14592
    assert report(M3, tensor_parallel_size=8).alpha_bytes_per_token == 30720 + 14592 == 45312


def _m3_inline(**sparse) -> dict:
    data = copy.deepcopy(load(M3))
    data["text_config"]["sparse_attention_config"].update(sparse)
    return data


def test_minimax_m3_index_with_values():
    # every flag 0: the index keeps K and V: 57 × 2 × 128 × 2 = 29184
    rep = report(_m3_inline(sparse_disable_index_value=[0] * 60))
    assert rep.alpha_bytes_per_token == 122880 + 29184 == 152064
    # a scalar flag applies to every layer: 1 = K only again
    assert report(_m3_inline(sparse_disable_index_value=1)).alpha_bytes_per_token == 137472


def test_minimax_m3_dense_when_sparse_is_off():
    rep = report(_m3_inline(use_sparse_attention=False))
    assert kinds(rep) == {"full": 60}
    assert rep.alpha_bytes_per_token == 122880  # main KV only


def test_minimax_m3_transformers_form():
    # transformers' flat form: layer_types names the sparse layers, index_head_dim the index width
    data = {
        "model_type": "minimax_m3_vl_text", "torch_dtype": "bfloat16", "num_hidden_layers": 4,
        "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128, "index_head_dim": 64,
        "layer_types": ["full_attention", "minimax_m3_sparse", "minimax_m3_sparse", "full_attention"],
    }
    rep = report(data)
    assert indices(rep, "msa-sparse") == [1, 2]
    # main 4 × 2048 = 8192; index 2 layers × 64 × 2 B (K only: transformers has no index value) = 256
    assert rep.alpha_bytes_per_token == 8192 + 256 == 8448


def test_minimax_m3_bad_frequency_list():
    data = _m3_inline(sparse_attention_freq=[0, 1])
    with pytest.raises(ConfigError) as err:
        report(data)
    assert "text_config.sparse_attention_config.sparse_attention_freq" in str(err.value)
    assert "2 entries but the model has 60 layers" in str(err.value)
    data = _m3_inline()
    del data["text_config"]["sparse_attention_config"]["sparse_attention_freq"]
    with pytest.raises(ConfigError, match="sparse_attention_freq.*cannot tell which layers are sparse"):
        report(data)


# -- LongCat-Flash ----------------------------------------------------------------------------------

LONGCAT = "meituan-longcat__LongCat-Flash-Chat-transformers-defaults"


def test_longcat_flash_two_mla_per_decoder_layer():
    rep = report(LONGCAT)
    assert rep.mapper == "longcat.longcat_flash"
    assert kinds(rep) == {"mla": 56}  # num_layers 28 × 2 MLA sub-layers
    # 56 × (512 + 64) × 2 B = 56 × 1152 = 64512
    assert rep.alpha_bytes_per_token == 64512
    # fp8 latent: 512 × 1 + 512/128 × 4 scale + 64 × 2 RoPE = 656 B; 56 × 656 = 36736
    assert report(LONGCAT, kv_cache_dtype="fp8").alpha_bytes_per_token == 36736
    # MLA has no head axis: TP 8 does not divide it
    assert report(LONGCAT, tensor_parallel_size=8).alpha_bytes_per_token == 64512


def test_longcat_layer_count_conventions():
    data = load(LONGCAT)
    # transformers' convention (num_hidden_layers = 2·num_layers) and the Hub's (= num_layers) agree
    for hidden in (56, 28):
        assert report({**data, "num_hidden_layers": hidden}).alpha_bytes_per_token == 64512
    with pytest.raises(ConfigError, match="'num_hidden_layers': 30 is neither num_layers"):
        report({**data, "num_hidden_layers": 30})
    # only num_hidden_layers: read as decoder layers (SGLang: 2 × num_hidden_layers attention layers)
    only_hidden = {k: v for k, v in data.items() if k != "num_layers"} | {"num_hidden_layers": 28}
    rep = report(only_hidden)
    assert len(rep.layers) == 56 and rep.alpha_bytes_per_token == 64512
    assert any("no num_layers" in w for w in rep.warnings)


def test_longcat_with_indexer_and_cli_factor():
    data = load(LONGCAT) | {"num_layers": 2, "index_topk": 2048, "index_head_dim": 128, "cli_factor": 2}
    rep = report(data)
    # 4 sub-layers; cli_factor 2: sub-layers 0 and 2 compute top-k (i % 2 == 0) and keep indexer keys
    assert indices(rep, "dsa") == [0, 2] and indices(rep, "dsa-shared-topk") == [1, 3]
    # 4 × 1152 latent + 2 × 132 indexer (128 fp8 + one 4-byte scale) = 4608 + 264 = 4872
    assert rep.alpha_bytes_per_token == 4872
    ctx = report(data, contexts=(4096,)).contexts[0]
    # reads: latents min(4096, 2048) × 1152 × 4 = 9437184; indexer scans 4096 × 132 × 2 = 1081344
    assert ctx.read_bytes_per_step == 9437184 + 1081344 == 10518528


# -- looped models ------------------------------------------------------------------------------

# IQuest-Coder-V1-40B-Loop-Instruct as published: 80 layers, 40 heads, 8 KV heads, head_dim 128,
# loop_num 2, loop_window_size 64 (model_type spelled "iquestloopcoder" on the Hub).
IQUEST = {
    "architectures": ["IQuestLoopCoderForCausalLM"], "model_type": "iquestloopcoder", "torch_dtype": "bfloat16",
    "hidden_size": 5120, "num_hidden_layers": 80, "num_attention_heads": 40, "num_key_value_heads": 8,
    "head_dim": 128, "max_position_embeddings": 131072, "loop_num": 2, "loop_window_size": 64,
}


def test_iquest_loopcoder_two_passes():
    rep = report(IQUEST, contexts=(32, 4096))
    assert rep.mapper == "looped.iquest_loopcoder"
    assert kinds(rep) == {"full": 80, "loop-sliding": 80}
    assert [layer.index for layer in rep.layers] == list(range(160))  # pass k, layer i -> k·80 + i
    # one layer: 2 × 8 × 128 × 2 = 4096 B per token
    assert rep.alpha_bytes_per_token == 80 * 4096 == 327680  # pass 0 grows with S
    assert rep.gamma_bytes_per_request == 80 * 64 * 4096 == 20971520  # pass 1 keeps 64 tokens
    short, long = rep.contexts
    assert short.kv_bytes_per_request == 80 * 32 * 4096 + 80 * 32 * 4096 == 20971520  # S = 32 < W
    assert long.kv_bytes_per_request == 4096 * 327680 + 20971520 == 1363148800


def test_iquest_more_loops_and_defaults():
    rep = report(IQUEST | {"loop_num": 3, "model_type": "iquest_loopcoder"})
    assert len(rep.layers) == 240
    assert rep.alpha_bytes_per_token == 327680
    assert rep.gamma_bytes_per_request == 2 * 80 * 64 * 4096 == 41943040
    bare = {k: v for k, v in IQUEST.items() if k not in ("loop_num", "loop_window_size")}
    rep = report(bare)  # vLLM's defaults: 2 passes, window 64
    assert len(rep.layers) == 160 and rep.gamma_bytes_per_request == 20971520
    assert any("defaults (2, 64)" in note for note in rep.notes)


def test_loop_and_layer_counts_are_bounded():
    # passes × layers past hfkv's layer bound (100000) is a corrupt config, not a model to enumerate
    with pytest.raises(ConfigError, match="'loop_num': 2000 passes over 80 layers is beyond any real model"):
        report(IQUEST | {"loop_num": 2000})
    with pytest.raises(ConfigError, match="'num_layers'"):
        report(load(LONGCAT) | {"num_layers": 2**31})


def test_nanbeige_loops_multiply_full_layers():
    data = {"model_type": "nanbeige", "torch_dtype": "bfloat16", "num_hidden_layers": 4, "num_attention_heads": 8,
            "num_key_value_heads": 2, "head_dim": 64, "num_loops": 3}
    rep = report(data)
    assert rep.mapper == "looped.nanbeige"
    assert len(rep.layers) == 12 and [layer.index for layer in rep.layers] == list(range(12))
    # 3 passes × 4 layers × 2 × 2 KV heads × 64 × 2 B = 12 × 512 = 6144
    assert rep.alpha_bytes_per_token == 6144 and rep.gamma_bytes_per_request == 0
    assert any("3 loop passes over 4 layers" in note for note in rep.notes)
    # no num_loops: one pass, 4 × 512
    assert report({k: v for k, v in data.items() if k != "num_loops"}).alpha_bytes_per_token == 2048


# -- Nemotron-NAS ---------------------------------------------------------------------------------

NAS = "nvidia__Llama-3_3-Nemotron-Super-49B-v1"
# Read from the fixture's block_configs by hand: attention.no_op is true at
# 6, 7, 11 (3), 42-51 (10) and 53-70 (18) = 31 layers; the other 49 have n_heads_in_group 8.
NAS_NO_OP = [6, 7, 11, *range(42, 52), *range(53, 71)]


def test_nemotron_super_no_op_layers_and_gqa():
    rep = report(NAS)
    assert rep.mapper == "nemotron.nemotron_nas"
    assert len(NAS_NO_OP) == 3 + 10 + 18 == 31
    assert indices(rep, "no-op") == NAS_NO_OP
    assert kinds(rep) == {"full": 49, "no-op": 31}  # 80 − 31 = 49 attention layers
    # K = 64 heads // 8 per group = 8; head_dim = 8192 / 64 = 128
    # α = 49 × 2 × 8 × 128 × 2 B = 49 × 4096 = 200704
    assert rep.alpha_bytes_per_token == 200704
    assert all(layer.bytes_per_token == 0 and layer.copies == 0 for layer in rep.layers if layer.kind == "no-op")
    # TP 16 > 8 KV heads: 1 head per GPU: 49 × 2 × 1 × 128 × 2 = 49 × 512 = 25088
    assert report(NAS, tensor_parallel_size=16).alpha_bytes_per_token == 25088


def _nas(blocks: list[dict]) -> dict:
    return {"model_type": "nemotron-nas", "architectures": ["DeciLMForCausalLM"], "torch_dtype": "bfloat16",
            "num_hidden_layers": len(blocks), "num_attention_heads": 8, "hidden_size": 512,
            "num_key_value_heads": None, "block_configs": [{"attention": b} for b in blocks]}


def test_nemotron_nas_variable_gqa_linear_and_window():
    rep = report(_nas([
        {"n_heads_in_group": 1, "no_op": False},                  # 8 KV heads
        {"n_heads_in_group": 4, "no_op": False},                  # 2 KV heads
        {"n_heads_in_group": None, "no_op": False, "replace_with_linear": True},
        {"n_heads_in_group": 8, "no_op": False, "window_length": 16},  # 1 KV head, window 16
    ]))
    assert [layer.kind for layer in rep.layers] == ["full", "full", "linear", "sliding"]
    # head_dim 512 / 8 = 64: 2 × 8 × 64 × 2 = 2048, 2 × 2 × 64 × 2 = 512
    assert rep.alpha_bytes_per_token == 2048 + 512 == 2560
    assert rep.gamma_bytes_per_request == 16 * (2 * 1 * 64 * 2) == 4096  # the windowed layer
    assert any("KV heads vary by layer (1, 2, 8)" in note for note in rep.notes)


def test_nemotron_nas_errors():
    with pytest.raises(ConfigError, match=r"block_configs\[0\].attention.n_heads_in_group': 3 does not divide 8"):
        report(_nas([{"n_heads_in_group": 3, "no_op": False}]))
    with pytest.raises(ConfigError, match=r"block_configs\[0\].attention.no_op': expected true or false, got 'x'"):
        report(_nas([{"n_heads_in_group": 1, "no_op": "x"}]))
    short = _nas([{"n_heads_in_group": 1, "no_op": False}]) | {"num_hidden_layers": 2}
    with pytest.raises(ConfigError, match="block_configs': has 1 entries but the model has 2 layers"):
        report(short)


# -- Llama 3.2 Vision ---------------------------------------------------------------------------

MLLAMA = "meta-llama__Llama-3.2-11B-Vision-transformers-defaults"


def test_mllama_counts_cross_attention_layers_as_full():
    rep = report(MLLAMA)
    assert rep.mapper == "llama.mllama"
    assert indices(rep, "cross-attention") == [3, 8, 13, 18, 23, 28, 33, 38]
    assert kinds(rep) == {"full": 32, "cross-attention": 8}
    # 40 layers × 2 × 8 KV heads × 128 (4096 / 32) × 2 B = 40 × 4096 = 163840
    assert rep.alpha_bytes_per_token == 163840
    # engine-logs.tsv R15 (SGLang, 11B-Vision): 163823 B/token derived from the log, within 0.02 %
    assert abs(rep.alpha_bytes_per_token - 163823) / 163823 < 2e-4
    # image tokens: 4 tiles × ((448 / 14)² + 1) = 4 × (1024 + 1) = 4100
    assert any("4100 per image" in note for note in rep.notes)


def test_mllama_cross_layer_out_of_range():
    data = load(MLLAMA)
    data["text_config"]["cross_attention_layers"] = [3, 45]
    with pytest.raises(ConfigError, match="text_config.cross_attention_layers': index 45 is past the 40 layers"):
        report(data)


# -- encoder-decoder and encoder-only --------------------------------------------------------------


def test_whisper_large_v3_self_and_cross_attention():
    rep = report("openai__whisper-large-v3")
    # decoder self-attention, MHA: 32 layers × 2 (K, V) × 20 heads × 64 (1280 / 20) × 2 B (float16) = 163840
    assert rep.alpha_bytes_per_token == 32 * 2 * 20 * 64 * 2 == 163840
    # cross-attention: 32 layers × 1500 encoder positions × 2 × 20 × 64 × 2 B = 245,760,000 per request
    assert rep.gamma_bytes_per_request == 32 * 1500 * 5120 == 245_760_000
    assert rep.crossover_tokens == 1500  # γ/α: the cross cache weighs as much as 1500 generated tokens
    assert rep.max_position_embeddings == 448  # max_target_positions
    [ctx] = rep.contexts  # every default context is past 448: only the model's maximum
    # r(448) = 32 × (448 + 1500) × 5120 = 319,160,320: a decode step reads all of the cross cache
    assert ctx.tokens == 448 and ctx.kv_bytes_per_request == ctx.read_bytes_per_step == 32 * 1948 * 5120 == 319_160_320
    cross = rep.to_dict()["layers"][0]["parts"][1]
    assert cross == {"kind": "cross", "copies": 1, "entries": "1500 (encoder)", "entry_bytes": 5120, "state_bytes": 0,
                     "params": {"kv_heads": 20, "head_dim": 64, "encoder_tokens": 1500}}


def test_distil_whisper_counts_decoder_layers_not_num_hidden_layers():
    rep = report("distil-whisper__distil-large-v3")  # num_hidden_layers 32 is the encoder's depth
    # 2 decoder layers × 2 × 20 × 64 × 2 B = 10240 per token; 2 × 1500 × 5120 = 15,360,000 per request
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (2 * 5120, 2 * 1500 * 5120) == (10240, 15_360_000)


def test_whisper_engine_mode_sizes_vllms_cross_attention_pool():
    # vLLM 0.33.0 (whisper.py, CrossAttentionSpec): fp16 pages of 16 × 20 × 128 × 2 B = 81,920 B, 32 layers a
    # group: 2,621,440 B a block; 28 self + ceil(8192 / 16) = 512 cross blocks a request; 8 GiB // 2,621,440 =
    # 3,276 blocks, 3,276 / 540 = 6.07 (tests/engines/test_encoder_decoder_and_pooling.py has the rest)
    result = CliRunner().invoke(main, [str(FIXTURES / "openai__whisper-large-v3"), "--engine", "vllm", "--budget", "8GiB"])
    assert result.exit_code == 0, result.stderr
    assert "num_blocks 3,276" in result.stdout and "max concurrency 6.07" in result.stdout


@pytest.mark.parametrize("name, arch", [
    ("google-t5__t5-base", "T5ForConditionalGeneration"),
    ("VietAI__envit5-translation", "T5ForConditionalGeneration"),
    ("facebook__bart-large-cnn", "BartForConditionalGeneration"),
])
def test_encoder_decoder_fixtures_are_refused(name, arch):
    with pytest.raises(UnsupportedModelError) as err:
        report(name)
    text = str(err.value)
    assert text.startswith(f"{name}: unsupported: encoder-decoder ({arch}): ")
    assert "\n" not in text and err.value.exit_code == 2


@pytest.mark.parametrize("model_type", [
    "t5", "mt5", "umt5", "bart", "mbart", "marian", "pegasus", "m2m_100", "nllb-moe", "nllb_moe",
    "blenderbot", "cohere_asr", "nemotron_parse", "t5gemma",
])
def test_encoder_decoder_model_types(model_type):
    with pytest.raises(UnsupportedModelError, match=rf"encoder-decoder \(X{model_type}\): .*not with the context S"):
        report({"model_type": model_type, "architectures": [f"X{model_type}"], "d_model": 512})


@pytest.mark.parametrize("model_type, arch", [
    ("bert", "BertModel"), ("roberta", "RobertaModel"), ("xlm-roberta", "XLMRobertaModel"),
    ("deberta", "DebertaModel"), ("deberta-v2", "DebertaV2Model"), ("distilbert", "DistilBertModel"),
    ("electra", "ElectraModel"), ("modernbert", "ModernBertModel"), ("nomic_bert", "NomicBertModel"),
    ("t5", "T5EncoderModel"),  # an encoder-decoder family saved as its encoder alone
])
def test_encoder_only_models(model_type, arch):
    with pytest.raises(UnsupportedModelError) as err:
        report({"model_type": model_type, "architectures": [arch]})
    assert str(err.value) == f"inline: unsupported: encoder-only model ({arch}): no KV cache"


def test_non_autoregressive_encoder_decoder():
    with pytest.raises(UnsupportedModelError, match=r"encoder-decoder \(DetrForObjectDetection\): not an autoregressive"):
        report({"model_type": "detr", "architectures": ["DetrForObjectDetection"]})


def test_declared_encoder_decoder_helper():
    from hfkv.model.config import ConfigView
    from hfkv.mappings.encoders import declared_encoder_decoder

    err = declared_encoder_decoder(ConfigView({"model_type": "new_s2s", "is_encoder_decoder": True,
                                               "architectures": ["NewS2SForConditionalGeneration"]}))
    assert str(err).startswith("unsupported: encoder-decoder (NewS2SForConditionalGeneration): ")
    assert declared_encoder_decoder(ConfigView({"model_type": "llama"})) is None
    assert declared_encoder_decoder(ConfigView({"is_encoder_decoder": "maybe"})) is None


def test_cli_exit_code_two_and_one_line():
    runner = CliRunner()
    for name, needle in [
        ("google-t5__t5-base", "encoder-decoder (T5ForConditionalGeneration)"),
        ("google-bert__bert-base-uncased-transformers-defaults", "encoder-only model (BertForMaskedLM): no KV cache"),
    ]:
        result = runner.invoke(main, [str(FIXTURES / name)])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("hfkv: error: ") and result.stderr.count("\n") == 1
        assert needle in result.stderr and "Traceback" not in result.stderr


@pytest.mark.skipif(shutil.which("hfkv") is None, reason="the hfkv script is not installed")
def test_script_exit_code_two():
    run = subprocess.run(["hfkv", str(FIXTURES / "facebook__bart-large-cnn")], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "encoder-decoder (BartForConditionalGeneration)" in run.stderr


# -- every real config: figures or one clean error -------------------------------------------------


def _hub_configs() -> list[Path]:
    if not HUB_CONFIGS.is_dir():
        return []
    return sorted(HUB_CONFIGS.glob("*.json"))


def _finite_non_negative(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0)


@pytest.mark.parametrize("path", _hub_configs() or [None], ids=lambda p: p.stem if p else "absent")
def test_hub_config_sweep(path):
    if path is None:
        pytest.skip(f"{HUB_CONFIGS} is absent: no real configs to sweep")
    try:
        loaded = load_local(path)
        rep = inspect_config(loaded.data, model=path.name)
    except HfkvError as err:
        text = str(err)
        assert text and "\n" not in text and "Traceback" not in text
        return
    data = rep.to_dict()
    for key in ("alpha_bytes_per_token", "gamma_bytes_per_request", "crossover_tokens", "recurrent_state_bytes"):
        assert _finite_non_negative(data[key]), (key, data[key])
    assert rep.layers
    for layer in data["layers"]:
        for key in ("entry_bytes", "state_bytes", "bytes_per_token"):
            assert _finite_non_negative(layer[key]), (layer["index"], key, layer[key])
    for ctx in data["contexts"]:
        assert _finite_non_negative(ctx["kv_bytes_per_request"]) and _finite_non_negative(ctx["read_bytes_per_step"])


def test_trimmed_fixtures_match_the_real_configs():
    """The full MiniMax-M3 (3 MB) and Nemotron-Super configs give the trimmed fixtures' figures."""
    if not HUB_CONFIGS.is_dir():
        pytest.skip(f"{HUB_CONFIGS} is absent")
    for name, alpha in ((M3, 137472), (NAS, 200704)):
        rep = inspect_config(load_local(HUB_CONFIGS / f"{name}.json").data, model=name)
        assert rep.alpha_bytes_per_token == alpha
    for name in ("google-t5__t5-base", "VietAI__envit5-translation", "facebook__bart-large-cnn"):
        with pytest.raises(UnsupportedModelError, match="encoder-decoder"):
            inspect_config(load_local(HUB_CONFIGS / f"{name}.json").data, model=name)
