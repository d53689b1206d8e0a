"""DeepSeek V4 / V4.1 compressed attention (mappings/deepseek_v4.py).

Every expected figure is derived by hand from accounting.md (CSA/HCA/CSA2); the arithmetic is beside it.
Unless a test says otherwise: bf16 KV (2 B), fp8 indexer keys with one fp32 scale per 128 values
(128 + 4 = 132 B), fp32 compressor state (4 B).

DeepSeek V4 shapes: head_dim d_kv = 512, qk_rope_head_dim 64, so a latent (window entry or compressed
entry) is (448 + 64) × 2 = 1024 B in bf16; W = 128; index_head_dim 128; index_topk 512."""

from __future__ import annotations

import copy

import pytest

from hfkv.errors import ConfigError

from _helpers import kind_counts as kinds, load, report


# -- DeepSeek V4 ------------------------------------------------------------------------------------


V4 = "deepseek-ai__DeepSeek-V4-Flash"


def test_v4_flash_worked_check():
    rep = report(load(V4), kv_cache_dtype="bf16")
    assert rep.mapper == "deepseek_v4.deepseek_v4"
    # compress_ratios has 44 entries for 43 layers: the last (MTP, ratio 0) is cut.
    # Layers 0–1 window only, 2..41 alternate 4/128 (20 each), layer 42 is 4: 21 CSA, 20 HCA.
    assert kinds(rep) == {"swa": 2, "csa": 21, "hca": 20}
    # α = 21 × (1024 + 132)/4 + 20 × 1024/128 = 6069 + 160 = 6229 B/token
    assert rep.alpha_bytes_per_token == 6229
    # γ = 43 windows × 128 × 1024 + 21 CSA rings × (8 × 4 × 512 × 4 = 65536  +  8 × 4 × 128 × 4 = 16384)
    #     + 20 HCA rings × 128 × 2 × 512 × 4 = 524288
    #   = 5636096 + 1720320 + 10485760 = 17842176 B
    assert rep.gamma_bytes_per_request == 43 * 128 * 1024 + 21 * (65536 + 16384) + 20 * 524288 == 17842176
    assert any("MTP" in note and "compress_ratios" in note for note in rep.notes)


def test_v4_flash_layer_parts():
    rep = report(load(V4), kv_cache_dtype="bf16")
    csa, hca, swa = rep.layers[2], rep.layers[3], rep.layers[0]
    assert [p.kind for p in swa.parts] == ["mla"]
    assert [p.kind for p in csa.parts] == ["mla", "compressed", "indexer"]
    assert [p.kind for p in hca.parts] == ["mla", "compressed"]
    assert csa.compress_ratio == 4 and hca.compress_ratio == 128 and csa.window == 128
    # CSA layer: entries per token (1024 + 132)/4 = 289; rings 65536 + 16384 = 81920
    assert csa.bytes_per_token == 289 and csa.state_bytes == 81920
    # HCA layer: 1024/128 = 8 B/token; ring 128 × 2 × 512 × 4 = 524288
    assert hca.bytes_per_token == 8 and hca.state_bytes == 524288


def ctx(rep, tokens: int):
    return next(c for c in rep.contexts if c.tokens == tokens)


def test_v4_flash_exact_memory_and_reads():
    rep = report(load(V4), kv_cache_dtype="bf16", contexts=(1000, 65536))
    # S = 1000: windows 43 × 128 × 1024 = 5636096; CSA 21 × floor(1000/4) = 250 × 1156 = 6069000;
    # HCA 20 × floor(1000/128) = 7 × 1024 = 143360; rings 21 × 81920 + 20 × 524288 = 12206080
    assert ctx(rep, 1000).kv_bytes_per_request == 5636096 + 6069000 + 143360 + 12206080 == 24054536
    # Reads at S = 65536: windows 43 × 128 × 1024 = 5636096;
    # CSA per layer: min(16384, top-k 512) × 1024 = 524288 + a scan of 16384 keys × 132 = 2162688 → × 21
    # HCA per layer: 65536/128 = 512 entries × 1024 = 524288 → × 20; rings are not read
    assert ctx(rep, 65536).read_bytes_per_step == 5636096 + 21 * (524288 + 2162688) + 20 * 524288 == 72548352


def test_v4_transformers_form_matches_hub_form():
    hub = load(V4)
    names = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}
    tf = {k: v for k, v in hub.items() if k not in ("compress_ratios", "qk_rope_head_dim")}
    tf["layer_types"] = [names[m] for m in hub["compress_ratios"][:43]]
    tf["compress_rates"] = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
    tf["partial_rotary_factor"] = 0.125  # 64 / 512
    rep = report(tf, kv_cache_dtype="bf16")
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (6229, 17842176)  # as above


def test_v4_transformers_default_pattern():
    # No compress_ratios and no layer_types: DeepseekV4Config's default, 2 HCA then
    # (i % 2 ? CSA : HCA) for i in 0..40 → HCA 2 + 21 = 23, CSA 20.
    rep = report({"model_type": "deepseek_v4", "num_hidden_layers": 43, "torch_dtype": "bfloat16"})
    assert kinds(rep) == {"hca": 23, "csa": 20}
    # α = 20 × 1156/4 + 23 × 1024/128 = 5780 + 184 = 5964
    assert rep.alpha_bytes_per_token == 5964
    # γ = 43 × 131072 + 20 × 81920 + 23 × 524288 = 5636096 + 1638400 + 12058624 = 19333120
    assert rep.gamma_bytes_per_request == 19333120
    assert "layer_types" in rep.transformers_defaults and "head_dim" in rep.transformers_defaults


def test_v4_window_size_alias():
    data = load(V4)
    del data["sliding_window"]
    data["window_size"] = 64
    rep = report(data, kv_cache_dtype="bf16")
    # γ = 43 × 64 × 1024 = 2818048 + rings 21 × 81920 + 20 × 524288 = 12206080 → 15024128; α unchanged
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (6229, 15024128)


def test_v4_unknown_ratio_is_one_clear_error():
    data = load(V4)
    data["compress_ratios"][2] = 3
    with pytest.raises(ConfigError, match=r"compress_ratios\[2\].*unknown compress ratio 3"):
        report(data)


# -- DeepSeek V4.1 (synthetic fixture written from the documented keys) -----------------------------
# 40 layers: ratios 0 (layers 0–1), 2 (layers 2–19), 1 (layers 20–39), plus 3 MTP entries;
# kv_source_layer_ids [2, 8, 14, 20]. The layer counts, ratios and sources follow descriptions of
# DeepSeek-V4.1-Flash; index_source_layer_ids is made up (it changes no storage).


V41 = "deepseek-ai__DeepSeek-V4.1-synthetic"


def test_v41_sources_own_storage():
    rep = report(load(V41), kv_cache_dtype="bf16")
    assert rep.mapper == "deepseek_v4.deepseek_v4"
    assert kinds(rep) == {"swa": 2, "csa2": 4, "csa2-shared": 34}
    owners = [layer.index for layer in rep.layers if layer.kind == "csa2"]
    assert owners == [2, 8, 14, 20]
    sources = {layer.index: layer.source_layer for layer in rep.layers if layer.source_layer is not None}
    assert sources[3] == 2 and sources[7] == 2 and sources[19] == 14 and sources[21] == 20 and sources[39] == 20
    assert all(layer.copies == 1 for layer in rep.layers)  # every layer still owns its window
    # α = 3 ratio-2 owners × (1024 + 132)/2 = 578  +  1 ratio-1 owner × (1024 + 132) = 1156 → 1734 + 1156
    assert rep.alpha_bytes_per_token == 3 * 578 + 1156 == 2890
    # γ = 40 windows × 128 × 1024 = 5242880 + 3 ratio-2 rings × 2 slots × 2 × 512 × 4 = 8192 (ratio 1: none)
    assert rep.gamma_bytes_per_request == 5242880 + 3 * 8192 == 5267456


def test_v41_exact_memory_and_reads():
    rep = report(load(V41), kv_cache_dtype="bf16", contexts=(1001, 4096))
    # S = 1001: windows 5242880; ratio-2 owners 3 × floor(1001/2) = 500 × 1156 = 1734000;
    # ratio-2 rings 24576; ratio-1 owner 1001 × 1156 = 1157156
    assert ctx(rep, 1001).kv_bytes_per_request == 5242880 + 1734000 + 24576 + 1157156 == 8158612
    # Reads at S = 4096: windows 40 × 128 × 1024 = 5242880;
    # 18 ratio-2 layers read min(2048, 512) × 1024 = 524288 each; the 3 owners scan 2048 × 132 = 270336;
    # 20 ratio-1 layers read min(4096, 512) × 1024 = 524288 each; owner 20 scans 4096 × 132 = 540672
    expected = 5242880 + 18 * 524288 + 3 * 270336 + 20 * 524288 + 540672
    assert ctx(rep, 4096).read_bytes_per_step == expected == 26517504


def test_v41_without_source_list_every_layer_owns():
    data = copy.deepcopy(load(V41))
    del data["text_config"]["kv_source_layer_ids"]
    rep = report(data, kv_cache_dtype="bf16")
    # α = 18 × 578 + 20 × 1156 = 10404 + 23120 = 33524; γ = 5242880 + 18 × 8192 = 5390336
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (33524, 5390336)


def test_v41_layer_without_an_earlier_source_is_an_error():
    data = copy.deepcopy(load(V41))
    data["text_config"]["kv_source_layer_ids"] = [8, 14, 20]
    with pytest.raises(ConfigError, match=r"kv_source_layer_ids.*layer 2 \(compress ratio 2\)"):
        report(data)
