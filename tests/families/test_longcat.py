"""LongCat-Flash (mappings/longcat.py): two MLA per decoder layer, the layer-count conventions, the indexer.

Every expected figure is derived by hand; the arithmetic is beside it. bf16 = 2 B unless a test says
otherwise."""

from __future__ import annotations

import pytest

from hfkv import ConfigError

from _helpers import indices, kind_counts as kinds, load, report_inline as report


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
