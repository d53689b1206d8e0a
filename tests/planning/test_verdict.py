"""The verdict (hfkv/planning/verdict.py) when nothing fits: a budget too small for one token, weights
larger than the GPU, said in every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hfkv.commands.cli import main


# -- item 14: budgets ----------------------------------------------------------------------------------


# A small Llama: 2 layers × 2 (K, V) × 4 kv heads × 64 head_dim (512 / 8) × 2 bytes (bf16) = 2048 B per token.
LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_attention_heads": 8,
         "num_key_value_heads": 4, "num_hidden_layers": 2, "max_position_embeddings": 2048, "torch_dtype": "bfloat16",
         "intermediate_size": 1024, "vocab_size": 1000}


def run(*args: str):
    """``hfkv ...`` in-process (stdout alone in ``stdout``)."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def write_config(folder: Path, name: str, data: dict | str | bytes) -> str:
    path = folder / name
    path.mkdir(parents=True, exist_ok=True)
    raw = data if isinstance(data, bytes) else (data if isinstance(data, str) else json.dumps(data)).encode()
    (path / "config.json").write_bytes(raw)
    return str(path)


def test_a_budget_too_small_for_one_token_says_it_does_not_fit(tmp_path):
    # 1 KiB = 1024 B < 2048 B, one token of one request: not even one token fits.
    result = run(write_config(tmp_path, "m", LLAMA), "--budget", "1KiB", "--batch", "1")
    assert "does not fit" in result.stdout and ": 0 tokens" not in result.stdout


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_weights_that_do_not_fit_are_said_in_every_format(tmp_path, fmt):
    # An H100's CUDA total 85,029,158,912 B: vLLM may use ceil(× 0.92) = 78,226,826,200 < 200 × 10^9 B of weights.
    result = run(write_config(tmp_path, "m", LLAMA), "--gpu", "H100", "--weights-bytes", "200GB", "--format", fmt)
    assert "the weights do not fit" in result.stdout
    if fmt == "json":
        serving = json.loads(result.stdout)["serving"]
        assert serving["weights_fit"] is False and serving["usable_bytes"] == 78_226_826_200
