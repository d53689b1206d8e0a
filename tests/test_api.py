"""The Python API: ``hfkv.inspect(..., gpu=, engine=, tp=)`` with a typed ``report.serving``.

Hand bound (Meta-Llama-3.1-8B, bf16): a 32K request is 32 × 8 × 128 × 2 × 2 B × 32,768 = 4 GiB; one
H100 lets vLLM use ceil(85,029,158,912 × 0.92) = 78,226,826,200 B, of which the weights take
8,030,261,248 × 2 = 16,060,522,496 B: at most 14 requests even before the reserve.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hfkv
from hfkv.model.serving import Serving

from tests._helpers import FIXTURES

from _helpers import LLAMA_FOLDER as LLAMA


def test_inspect_with_a_gpu_and_an_engine_has_a_typed_plan():
    report = hfkv.inspect(LLAMA, gpu="H100", engine="vllm", max_model_len=32768, contexts=(32768,))
    serving = report.serving
    assert isinstance(serving, Serving)
    assert serving.engine == "vllm" and serving.gpu == "H100-SXM-80GB"
    assert serving.usable_bytes == 85_029_158_912  # vLLM 0.34 (the newest modelled) requests the whole total
    assert serving.weights_bytes == 16_060_522_496 and serving.weights_source == "estimate"
    detail = serving.verdict_detail
    assert serving.fits and detail["counted_by"] == "vLLM 0.34.0" and detail["tokens"] == 32768
    assert 1 <= serving.requests <= 14
    # The reserve is an estimate: the engine's own count at the band's two ends brackets it.
    assert detail["requests_low"] <= serving.requests <= detail["requests_high"]
    # vLLM's own figures: the count is its blocks over the blocks a request needs (32,768 / 64 = 512: 0.34's
    # default block size).
    assert report.engine["num_blocks"] // 512 == serving.requests


def test_tp_is_tensor_parallel_size_and_knobs_are_checked():
    report = hfkv.inspect(LLAMA, tp=8, contexts=(4096,))
    assert report.options.tensor_parallel_size == 8
    with pytest.raises(hfkv.UsageError, match="not both"):
        hfkv.inspect(LLAMA, tp=2, tensor_parallel_size=2)
    with pytest.raises(hfkv.UsageError, match="gpu_memory_utilisation"):
        hfkv.inspect(LLAMA, gpu="H100", gpu_memory_utilisation=0.8)


def test_without_a_gpu_there_is_no_plan():
    report = hfkv.inspect(LLAMA, contexts=(4096,))
    assert report.serving is None and report.engine is None


def test_inspect_config_takes_options_and_a_plan():
    data = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
            "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
            "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072,
            "torch_dtype": "bfloat16"}
    report = hfkv.inspect_config(data, model="llama-like", options=hfkv.Options(contexts=(32768,)), gpu="H100")
    assert report.alpha_bytes_per_token == 32 * 8 * 128 * 2 * 2  # 131,072
    assert report.serving is not None and report.serving.engine == "theory"
    assert report.serving.requests <= 14


# -- budget questions ------------------------------------------------------------------------------------


def test_inspect_reads_a_folder():
    rep = hfkv.inspect(str(FIXTURES / "meta-llama__Meta-Llama-3.1-8B"))
    assert rep.alpha_bytes_per_token == 131072 and rep.source == "file"


# -- every error line is bounded ------------------------------------------------------------------------


ROOT = Path(__file__).resolve().parents[1]


LLAMA_FIXTURE = ROOT / "fixtures" / "meta-llama__Meta-Llama-3.1-8B" / "config.json"


def llama() -> dict:
    return json.loads(LLAMA_FIXTURE.read_text())


def test_api_errors_are_bounded():
    with pytest.raises(hfkv.ConfigError) as raised:
        hfkv.inspect_config({**llama(), "layer_types": ["z" * 100_000] * 32})
    assert len(str(raised.value)) < 300 and len(raised.value.message) < 300
