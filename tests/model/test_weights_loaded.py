"""Issue 30 item 2: weights as the engines hold them. A float32 checkpoint is loaded at 16 bits under
--dtype auto (vLLM's _resolve_auto_dtype downcasts float32 to its platform's first 16-bit dtype;
SGLang's _get_and_verify_dtype to float16/bfloat16): 2 bytes an element, from the estimate, the Hub's
metadata or the files' headers alike. Expected figures are published counts × 2 bytes."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

import hfkv
from hfkv.model.weights import estimate_weights
from hfkv.model.weights.loaded import downcast_checkpoint
from hfkv.sources.weights import weights_summary

SHARED = Path(__file__).resolve().parents[3] / "shared"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MISTRAL_FP32 = SHARED / "hub-configs" / "Hugofernandez__Mistral-7B-v0.1-colab-sharded.json"
MISTRAL_PARAMS = 7_241_732_096  # ../shared/weights-truth.tsv (the Hub's count)


@pytest.mark.skipif(not MISTRAL_FP32.exists(), reason="../shared/hub-configs absent")
def test_an_fp32_mistral_estimate_is_priced_as_vllm_holds_it():
    config = json.loads(MISTRAL_FP32.read_text())
    assert config["torch_dtype"] == "float32"
    got = estimate_weights(config, hfkv.inspect_config(config).layer_specs)
    assert got.total_parameters == MISTRAL_PARAMS
    # 7,241,732,096 × 2 B = 14,483,464,192 B = 13.49 GiB (issue 30: vLLM holds 13.5 GiB; the files 27.0 GiB)
    assert got.weights_bytes == 2 * MISTRAL_PARAMS == 14_483_464_192
    assert "loaded as 16-bit" in got.quantization


def test_the_hubs_fp32_count_is_priced_at_16_bits():
    section = weights_summary({"F32": MISTRAL_PARAMS}, None, source="metadata")
    assert section["weights_bytes"] == 4 * MISTRAL_PARAMS  # the files
    loaded = downcast_checkpoint(section, 4, True)
    assert loaded["weights_bytes"] == 2 * MISTRAL_PARAMS and "28,966,928,384 B" in loaded["note"]
    # unstated dtype, all F32 files: vLLM takes float32 from the files, then downcasts
    assert downcast_checkpoint(section, 2, False)["weights_bytes"] == 2 * MISTRAL_PARAMS


def test_fp32_tensors_of_a_16_bit_model_stay_fp32():
    # DeepSeek-V3's fp32 router biases and block scales: the model is bf16, the engine keeps them at 4 B.
    section = weights_summary({"BF16": 1000, "F32": 10}, None, source="metadata")
    assert downcast_checkpoint(section, 2, True) == section
    assert downcast_checkpoint(section, 2, False) == section  # mixed files, unstated dtype: not all F32


def test_a_local_fp32_folder_reports_16_bit_bytes(tmp_path):
    config = json.loads((FIXTURES / "meta-llama__Meta-Llama-3.1-8B" / "config.json").read_text())
    config["torch_dtype"] = "float32"
    (tmp_path / "config.json").write_text(json.dumps(config))
    header = json.dumps({"w": {"dtype": "F32", "shape": [64, 32], "data_offsets": [0, 64 * 32 * 4]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * (64 * 32 * 4))
    weights = hfkv.inspect(str(tmp_path)).to_dict()["weights"]
    assert weights["source"] == "headers"
    assert weights["weights_bytes"] == 64 * 32 * 2 == 4096  # the file holds 8,192 B


GPT_OSS = SHARED / "hub-configs" / "openai__gpt-oss-120b.json"


@pytest.mark.skipif(not GPT_OSS.exists(), reason="../shared/hub-configs absent")
def test_mxfp4_files_are_priced_as_vllm_pads_them():
    # the files' exact bytes (the headers' spans: 65,248,815,744 B, the published payload) plus what vLLM's
    # Marlin layout adds to the experts: 70,756,592,256 - 65,248,815,744 (test_weights.py, by hand)
    from hfkv.model.weights import attach

    report = hfkv.inspect_config(json.loads(GPT_OSS.read_text()))
    section = weights_summary({"BF16": 2_167_371_072, "U8": 60_914_073_600}, None, source="headers",
                              payload_bytes=65_248_815_744)
    weights = attach(report, section).extra["weights"]
    assert weights["weights_bytes"] == 65_248_815_744 + (70_756_592_256 - 65_248_815_744) == 70_756_592_256
    assert "Marlin" in weights["note"]


FALCON = FIXTURES / "tiiuae__falcon-180B-chat" / "config.json"


def test_falcons_stored_head_is_not_loaded():
    # tiiuae/falcon-180B: the files hold lm_head.weight beside the word embeddings (weights-truth.tsv: 179,522,565,120
    # parameters, 359,045,130,240 B); vLLM's falcon.py ties them (no tie_word_embeddings in the config: True by
    # default) and skips "lm_head." on load: 65,024 × 14,848 × 2 B = 1,930,952,704 B fewer held
    from hfkv.model.weights import attach

    report = hfkv.inspect_config(json.loads(FALCON.read_text()))
    estimate = report.weights_estimate
    assert estimate.total_parameters == 179_522_565_120  # the published count: the head is in the files
    assert estimate.stored_bytes == 2 * 179_522_565_120
    assert estimate.weights_bytes == 2 * 179_522_565_120 - 65024 * 14848 * 2 == 357_114_177_536
    section = weights_summary({"BF16": 179_522_565_120}, 179_522_565_120, source="metadata")
    assert attach(report, section).extra["weights"]["weights_bytes"] == 357_114_177_536


def test_a_hub_count_one_embedding_over_a_tied_estimate():
    # Llama-3.2-3B (tied): the estimate's 3,212,749,824 (weights-truth.tsv); a count exactly 128,256 × 3,072 more
    # is the files holding the head again, which the engines do not load: the bytes are the estimate's
    from hfkv.model.weights import attach

    report = hfkv.inspect_config(json.loads((FIXTURES / "meta-llama__Llama-3.2-3B-Instruct" / "config.json").read_text()))
    twice = 3_212_749_824 + 128256 * 3072
    section = weights_summary({"BF16": twice}, twice, source="metadata")
    assert attach(report, section).extra["weights"]["weights_bytes"] == 2 * 3_212_749_824
    other = weights_summary({"BF16": twice + 1}, twice + 1, source="metadata")  # not exactly one matrix: as counted
    assert attach(report, other).extra["weights"]["weights_bytes"] == 2 * (twice + 1)


def _folder(tmp_path, config: dict, tensors: dict[str, int]) -> Path:
    """A model folder: ``config`` and one model.safetensors holding bf16 tensors of ``tensors``' element counts."""
    (tmp_path / "config.json").write_text(json.dumps(config))
    header, offset = {}, 0
    for name, numel in tensors.items():
        header[name] = {"dtype": "BF16", "shape": [numel], "data_offsets": [offset, offset + 2 * numel]}
        offset += 2 * numel
    raw = json.dumps(header).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
    return tmp_path


DEEPSEEK_V3 = SHARED / "hub-configs" / "deepseek-ai__DeepSeek-V3.json"


@pytest.mark.skipif(not DEEPSEEK_V3.exists(), reason="../shared/hub-configs absent")
def test_a_folders_mtp_layer_is_in_the_files_but_not_loaded(tmp_path):
    # DeepSeek-V3: 61 layers, the MTP layer is model.layers.61 (num_nextn_predict_layers 1); vLLM's
    # load_weights skips it (get_spec_layer_idx_from_weight_name). The headers' own bytes decide:
    # 3 × 1,000 + 500 elements at 2 B = 7,000 B in the files, 1,000 of them layer 61's.
    config = json.loads(DEEPSEEK_V3.read_text())
    folder = _folder(tmp_path, config, {"model.layers.0.mlp.gate.weight": 1000, "model.layers.60.mlp.gate.weight": 1000,
                                        "model.layers.61.eh_proj.weight": 400, "model.layers.61.enorm.weight": 100,
                                        "model.norm.weight": 1000})
    weights = hfkv.inspect(str(folder)).to_dict()["weights"]
    assert weights["source"] == "headers"
    assert weights["mtp_bytes"] == 2 * 500 == 1000
    assert weights["weights_bytes"] == 2 * 3500 - 1000 == 6000
    assert "MTP layers: 1,000 B" in weights["note"]


@pytest.mark.skipif(not DEEPSEEK_V3.exists(), reason="../shared/hub-configs absent")
def test_a_checkpoint_without_its_mtp_layer_loses_nothing(tmp_path):
    # a community checkpoint that dropped layer 61: nothing is taken off the headers' 4,000 B
    config = json.loads(DEEPSEEK_V3.read_text())
    folder = _folder(tmp_path, config, {"model.layers.0.mlp.gate.weight": 1000, "model.norm.weight": 1000})
    weights = hfkv.inspect(str(folder)).to_dict()["weights"]
    assert weights["weights_bytes"] == 4000 and weights["mtp_bytes"] is None


@pytest.mark.skipif(not DEEPSEEK_V3.exists(), reason="../shared/hub-configs absent")
def test_the_hubs_count_loses_the_estimated_mtp_layer_when_it_holds_one():
    # the Hub's dtype counts for DeepSeek-V3 (weights-truth.tsv): BF16 3,918,786,560 + F8_E4M3 680,571,043,840 +
    # F32 41,555,600 = 684,531,386,000 parameters, which include layer 61: its bytes (15,424,227,552, by hand in
    # test_weights.py) come off the files' 688,656,052,960 B.
    from hfkv.model.weights import attach

    report = hfkv.inspect_config(json.loads(DEEPSEEK_V3.read_text()))
    counts = {"BF16": 3_918_786_560, "F8_E4M3": 680_571_043_840, "F32": 41_555_600}
    files = 2 * 3_918_786_560 + 680_571_043_840 + 4 * 41_555_600
    weights = attach(report, weights_summary(counts, None, source="metadata")).extra["weights"]
    assert weights["weights_bytes"] == files - 15_424_227_552 and weights["mtp_bytes"] == 15_424_227_552
    # without layer 61 (its ~13.5B parameters gone) the count is nearer the estimate's without it: nothing off
    fewer = {**counts, "F8_E4M3": counts["F8_E4M3"] - 13_000_000_000}
    weights = attach(report, weights_summary(fewer, None, source="metadata")).extra["weights"]
    assert weights["mtp_bytes"] is None


def test_keys_taken_from_transformers_class_are_named():
    # a trimmed Qwen3-MoE config without moe_intermediate_size: the estimate takes Qwen3MoeConfig's own value
    # (transformers', asked here directly) and says so, where before it priced it silently
    transformers = pytest.importorskip("transformers")
    default = transformers.Qwen3MoeConfig().moe_intermediate_size
    config = json.loads((FIXTURES / "Qwen__Qwen3-235B-A22B-FP8-from-engine-log" / "config.json").read_text())
    assert "moe_intermediate_size" not in config
    note = hfkv.inspect_config(config).extra["weights"]["note"]
    assert f"moe_intermediate_size={default}" in note and "transformers' config class for 'qwen3_moe'" in note
    # a complete config says nothing of the kind
    full = json.loads((FIXTURES / "meta-llama__Meta-Llama-3.1-8B" / "config.json").read_text())
    assert "transformers' config class" not in (hfkv.inspect_config(full).extra["weights"]["note"] or "")
