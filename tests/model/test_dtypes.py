"""The KV cache's dtype (hfkv/model/dtypes.py): declared by a config's quantization (kv_cache_scheme,
kv_cache_quant_algo), not by weight quantisation alone, bf16 with a warning when nothing says, fp4."""

from __future__ import annotations

import json

from hfkv import Options, inspect_config

from _helpers import FIXTURES, report


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
