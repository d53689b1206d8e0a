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
