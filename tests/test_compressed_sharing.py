"""DeepSeek V4 / V4.1 compressed attention and Gemma 3n / Gemma 4 cross-layer KV sharing.

Every expected figure is derived by hand from accounting.md (CSA/HCA/CSA2, σ = 0 sharing); the
arithmetic is beside it. Unless a test says otherwise: bf16 KV (2 B), fp8 indexer keys with one fp32
scale per 128 values (128 + 4 = 132 B), fp32 compressor state (4 B).

DeepSeek V4 shapes: head_dim d_kv = 512, qk_rope_head_dim 64, so a latent (window entry or compressed
entry) is (448 + 64) × 2 = 1024 B in bf16; W = 128; index_head_dim 128; index_topk 512.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from hfkv import Options, inspect_config
from hfkv.errors import ConfigError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HUB_CONFIGS = Path(__file__).resolve().parents[2] / "shared" / "hub-configs"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name / "config.json").read_text())


def report(data: dict, **options):
    return inspect_config(data, model="test", options=Options(**options))


def kinds(rep) -> dict[str, int]:
    out: dict[str, int] = {}
    for layer in rep.layers:
        out[layer.kind] = out.get(layer.kind, 0) + 1
    return out


def ctx(rep, tokens: int):
    return next(c for c in rep.contexts if c.tokens == tokens)


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


# -- Gemma 4 ----------------------------------------------------------------------------------------


def test_gemma4_e2b_shared_layers_own_nothing():
    rep = report(load("google__gemma-4-E2B-it"))
    assert rep.mapper == "gemma.gemma4" and rep.kv_cache_dtype == "bf16"
    # 35 layers, 20 shared → layers 15..34 read earlier caches (σ = 0)
    shared = [layer.index for layer in rep.layers if layer.copies == 0]
    assert shared == list(range(15, 35))
    # Owning layers 0..14: full at 4, 9, 14; the last non-shared sliding layer is 13
    assert rep.layers[15].source_layer == 13 and rep.layers[19].source_layer == 14
    assert rep.layers[34].source_layer == 14 and rep.layers[33].source_layer == 13
    # sliding: 2 × 1 KV head × 256 × 2 = 1024 B; full: global_head_dim 512, k_eq_v false → 1 KV head:
    # 2 × 1 × 512 × 2 = 2048 B
    assert rep.layers[0].entry_bytes == 1024 and rep.layers[4].entry_bytes == 2048
    # α = 3 owning full layers × 2048 = 6144; γ = 12 owning sliding layers × 512 × 1024 = 6291456
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (6144, 6291456)


def test_gemma4_26b_k_eq_v_uses_global_kv_heads():
    rep = report(load("google__gemma-4-26B-A4B"))
    # full layers 5, 11, 17, 23, 29: attention_k_eq_v → 2 global KV heads × 512, K and V both stored:
    # 2 × 2 × 512 × 2 = 4096 B; sliding: 2 × 8 × 256 × 2 = 8192 B over W = 1024
    assert rep.layers[5].entry_bytes == 4096 and rep.layers[0].entry_bytes == 8192
    # α = 5 × 4096 = 20480; γ = 25 × 1024 × 8192 = 209715200
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (20480, 209715200)
    assert any("attention_k_eq_v" in note for note in rep.notes)
    tp2 = report(load("google__gemma-4-26B-A4B"), tensor_parallel_size=2)
    # per GPU: full 2 // 2 = 1 head → 2048 B; sliding 8 // 2 = 4 heads → 4096 B
    # α = 5 × 2048 = 10240; γ = 25 × 1024 × 4096 = 104857600
    assert (tp2.alpha_bytes_per_token, tp2.gamma_bytes_per_request) == (10240, 104857600)


def test_gemma4_31b_nvfp4_declares_fp8_kv():
    rep = report(load("nvidia__Gemma-4-31B-IT-NVFP4"))
    assert rep.kv_cache_dtype == "fp8"  # quantization_config.kv_cache_scheme.num_bits 8
    # full (10 layers): 2 × 4 global KV heads × 512 × 1 = 4096; sliding (50): 2 × 16 × 256 × 1 = 8192
    # α = 10 × 4096 = 40960; γ = 50 × 1024 × 8192 = 419430400
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (40960, 419430400)


GEMMA4_SMALL = {
    "model_type": "gemma4_text",
    "dtype": "bfloat16",
    "num_hidden_layers": 8,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "num_global_key_value_heads": 1,
    "attention_k_eq_v": False,
    "head_dim": 256,
    "global_head_dim": 512,
    "sliding_window": 512,
}


def test_gemma4_default_pattern_forces_last_layer_full_and_bidirectional_halves_window():
    data = dict(GEMMA4_SMALL, use_bidirectional_attention="all")
    rep = report(data)
    # sliding iff (i + 1) % 6 != 0 → full at 5; the last layer (7) is forced full
    assert [layer.index for layer in rep.layers if layer.kind == "full"] == [5, 7]
    # k_eq_v false: full layers keep num_key_value_heads 2 → 2 × 2 × 512 × 2 = 4096; α = 2 × 4096 = 8192
    assert rep.alpha_bytes_per_token == 8192
    # W = 512 // 2 + 1 = 257; sliding 2 × 2 × 256 × 2 = 2048 B; γ = 6 × 257 × 2048 = 3158016
    assert rep.gamma_bytes_per_request == 3158016
    assert rep.layers[0].window == 257


def test_gemma4_consumer_without_an_owner_of_its_type_is_an_error():
    data = dict(GEMMA4_SMALL, num_hidden_layers=6, num_kv_shared_layers=1,
                layer_types=["sliding_attention"] * 5 + ["full_attention"])
    with pytest.raises(ConfigError, match=r"num_kv_shared_layers.*layer 5 is full"):
        report(data)


# -- Gemma 3n ---------------------------------------------------------------------------------------


def test_gemma3n_defaults_fixed_source_rule():
    rep = report(load("google__gemma-3n-E4B-transformers-defaults"), kv_cache_dtype="bf16")
    assert rep.mapper == "gemma.gemma3n"
    # 35 layers, 15 shared → first_shared = 20; full iff (i + 1) % 5 == 0.
    # Sliding consumers read 20 − 2 = 18, full consumers 20 − 1 = 19.
    assert rep.layers[20].source_layer == 18 and rep.layers[24].source_layer == 19
    assert [layer.index for layer in rep.layers if layer.copies == 0] == list(range(20, 35))
    # E = 2 × 2 KV heads × 256 × 2 = 2048 B for both types; owning layers 0..19: 4 full, 16 sliding
    # α = 4 × 2048 = 8192; γ = 16 × 512 × 2048 = 16777216
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (8192, 16777216)


# -- sweep of the real configs ----------------------------------------------------------------------


def test_sweep_hub_configs_of_these_families():
    if not HUB_CONFIGS.is_dir():
        pytest.skip(f"{HUB_CONFIGS} is absent")
    families = {"deepseek_v4", "deepseek_v41", "gemma3n", "gemma4", "gemma4_text", "gemma4_unified"}
    seen = 0
    for path in sorted(HUB_CONFIGS.glob("*.json")):
        data = json.loads(path.read_text())
        if data.get("model_type") not in families:
            continue
        rep = report(data)
        assert rep.family in ("compressed", "kv-sharing"), path.name
        assert rep.alpha_bytes_per_token > 0, path.name
        seen += 1
    assert seen >= 4  # V4-Flash and three Gemma 4 configs


def test_gemma4_saved_by_transformers_per_layer_config():
    # transformers 5.24 saves global_head_dim / num_global_key_value_heads as per_layer_config entries
    data = copy.deepcopy(load("google__gemma-4-26B-A4B"))
    text = data["text_config"]
    for key in ("global_head_dim", "num_global_key_value_heads", "attention_k_eq_v"):
        del text[key]
    text["per_layer_config"] = {str(i): {"head_dim": 512, "num_key_value_heads": 2} for i in (5, 11, 17, 23, 29)}
    rep = report(data)
    # the same figures as the hub form: α = 5 × 2 × 2 × 512 × 2 = 20480; γ = 25 × 1024 × 8192 = 209715200
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (20480, 209715200)
