"""Looped models (mappings/looped.py): IQuest-LoopCoder and Nanbeige, passes × layers, and the bound on both.

Every expected figure is derived by hand; the arithmetic is beside it. bf16 = 2 B unless a test says
otherwise."""

from __future__ import annotations

import pytest

from hfkv import ConfigError

from _helpers import kind_counts as kinds, load, report_inline as report


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


LONGCAT = "meituan-longcat__LongCat-Flash-Chat-transformers-defaults"


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
