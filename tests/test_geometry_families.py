"""Hybrids whose layer types have their own geometry: MiMo-V2, Step-3.5/3.7, Llama 4, Dots3.

Fixtures named ``-transformers-defaults`` hold the transformers 5.24 config-class defaults (no real
config of these families is in /work/shared/hub-configs). Inline configs marked "documented values"
are written from the keys published for the real checkpoints. Every expected figure is derived by
hand; bf16 KV (2 B per value) unless a test says otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hfkv import Options, inspect_config
from hfkv.errors import ConfigError

from _helpers import window_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name / "config.json").read_text())


def report(data: dict, **options):
    options.setdefault("kv_cache_dtype", "bf16")
    return inspect_config(data, model="test", options=Options(**options))


def indices(rep, kind: str) -> list[int]:
    return [layer.index for layer in rep.layers if layer.kind == kind]


# -- MiMo-V2 ----------------------------------------------------------------------------------------


def test_mimo_v2_flash_transformers_defaults():
    rep = report(load("XiaomiMiMo__MiMo-V2-Flash-transformers-defaults"))
    assert rep.mapper == "mimo.mimo_v2"
    # full iff i == 0 or (i + 1) % 6 == 0: 0, 5, 11, ..., 47 → 1 + 8 = 9 full, 39 SWA
    assert indices(rep, "full") == [0, 5, 11, 17, 23, 29, 35, 41, 47]
    # K 192 + V 128 per KV head: 4 × (192 + 128) × 2 = 2560 B for both types (no swa_* keys)
    # α = 9 × 2560 = 23040; W = sliding_window 129 (transformers' size + 1): γ = 39 × 129 × 2560 = 12879360
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (23040, 12879360)


MIMO_DOCUMENTED = {
    # documented values of XiaomiMiMo/MiMo-V2-Flash (hub form)
    "model_type": "mimo_v2_flash",
    "torch_dtype": "bfloat16",
    "num_hidden_layers": 48,
    "num_attention_heads": 64,
    "num_key_value_heads": 4,
    "head_dim": 192,
    "v_head_dim": 128,
    "swa_num_attention_heads": 64,
    "swa_num_key_value_heads": 8,
    "swa_head_dim": 192,
    "swa_v_head_dim": 128,
    "sliding_window": 128,
    "sliding_window_size": 128,
    "hybrid_layer_pattern": [0 if i == 0 or (i + 1) % 6 == 0 else 1 for i in range(48)],
}


def test_mimo_v2_swa_layers_have_their_own_kv_heads():
    rep = report(MIMO_DOCUMENTED)
    # full: 4 × (192 + 128) × 2 = 2560 B; SWA: 8 × (192 + 128) × 2 = 5120 B over W = 128
    assert rep.layers[0].entry_bytes == 2560 and rep.layers[1].entry_bytes == 5120
    # α = 9 × 2560 = 23040; γ = 39 × 128 × 5120 = 25559040
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (23040, 25559040)
    tp4 = report(MIMO_DOCUMENTED, tensor_parallel_size=4)
    # per GPU: full 4 // 4 = 1 head → 640 B; SWA 8 // 4 = 2 heads → 1280 B
    # α = 9 × 640 = 5760; γ = 39 × 128 × 1280 = 6389760
    assert (tp4.alpha_bytes_per_token, tp4.gamma_bytes_per_request) == (5760, 6389760)


def test_mimo_v2_pattern_with_mtp_entry_and_bad_value():
    pattern = MIMO_DOCUMENTED["hybrid_layer_pattern"] + [1]
    data = dict(MIMO_DOCUMENTED, model_type="mimo_v2", hybrid_layer_pattern=pattern)
    rep = report(data)
    assert rep.alpha_bytes_per_token == 23040  # the 49th entry (an MTP layer) is cut
    assert any("hybrid_layer_pattern lists 1 entry" in note for note in rep.notes)
    bad = dict(MIMO_DOCUMENTED, hybrid_layer_pattern=[2] + MIMO_DOCUMENTED["hybrid_layer_pattern"][1:])
    with pytest.raises(ConfigError, match=r"hybrid_layer_pattern\[0\].*got 2"):
        report(bad)


# -- Step-3.5 / 3.7 ---------------------------------------------------------------------------------


def test_step37_transformers_defaults_all_full():
    rep = report(load("stepfun-ai__Step-3.7-Flash-transformers-defaults"))
    assert rep.mapper == "step.step3p5"  # root step3p7, text_config step3p5
    # no layer_types → 45 full layers × 2 × 8 KV heads × 128 × 2 = 45 × 4096 = 184320
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (184320, 0)


def _step_config(other: dict) -> dict:
    # Step-3.5-Flash's documented geometry: 45 layers + 3 MTP entries in layer_types, 64 heads,
    # num_attention_groups 8, head_dim 128, sliding_window 512. The pattern (full iff i % 4 == 0) is made up.
    types = ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(45)]
    return {
        "model_type": "step3p7",
        "text_config": {
            "model_type": "step3p5",
            "torch_dtype": "bfloat16",
            "num_hidden_layers": 45,
            "num_nextn_predict_layers": 3,
            "num_attention_heads": 64,
            "num_attention_groups": 8,
            "head_dim": 128,
            "sliding_window": 512,
            "layer_types": types + ["sliding_attention"] * 3,
            "attention_other_setting": other,
        },
    }


def test_step35_documented_geometry_and_mtp_entries():
    rep = report(_step_config({"attention_type": "sliding_attention", "num_attention_heads": 96,
                               "num_attention_groups": 8, "head_dim": 128}))
    # full iff i % 4 == 0 for i < 45: 0, 4, ..., 44 → 12 full, 33 sliding (MTP entries cut)
    assert len(indices(rep, "full")) == 12 and len(indices(rep, "sliding")) == 33
    assert any("layer_types lists 3 entries" in note for note in rep.notes)
    # E = 2 × 8 × 128 × 2 = 4096 both types (96 sliding query heads do not change the cache)
    # α = 12 × 4096 = 49152; γ = 33 × 512 × 4096 = 69206016
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (49152, 69206016)


def test_step35_sliding_geometry_from_attention_other_setting():
    rep = report(_step_config({"attention_type": "sliding_attention", "num_attention_heads": 96,
                               "num_attention_groups": 2, "head_dim": 64}))
    # sliding: 2 × 2 groups × 64 × 2 = 512 B; full unchanged 4096
    assert rep.layers[1].entry_bytes == 512 and rep.layers[0].entry_bytes == 4096
    # γ = 33 × 512 × 512 = 8650752; α = 12 × 4096 = 49152
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (49152, 8650752)


def test_step35_sliding_layers_need_a_window():
    data = _step_config({})
    del data["text_config"]["sliding_window"]
    with pytest.raises(ConfigError, match=r"sliding_window.*missing"):
        report(data)


# -- Llama 4 ----------------------------------------------------------------------------------------


def test_llama4_scout_transformers_defaults():
    rep = report(load("meta-llama__Llama-4-Scout-17B-16E-transformers-defaults"), contexts=(10000,))
    assert rep.mapper == "llama.llama4"
    # NoPE global layer iff (i + 1) % 4 == 0: 3, 7, ..., 47 → 12 full, 36 chunked
    assert indices(rep, "full") == list(range(3, 48, 4))
    assert rep.layers[0].kind == "chunked" and rep.layers[0].window == 8192
    # E = 2 × 8 × 128 × 2 = 4096; α = 12 × 4096 = 49152; γ = 36 × 8192 × 4096 = 1207959552
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (49152, 1207959552)
    # S = 10000: 36 × min(10000, 8192) × 4096 + 12 × 10000 × 4096 = 1207959552 + 491520000
    assert rep.contexts[0].kv_bytes_per_request == 1699479552


def test_llama4_no_rope_layers_and_null_chunk():
    base = {"model_type": "llama4_text", "torch_dtype": "bfloat16", "num_hidden_layers": 4,
            "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
            "attention_chunk_size": 16, "no_rope_layers": [1, 0, 1, 1]}
    rep = report(base)
    # layer 1 global: α = 2 × 2 × 64 × 2 = 512; chunked 3 × 16 × 512 = 24576
    assert indices(rep, "full") == [1]
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (512, 24576)
    rep = report(dict(base, attention_chunk_size=None))
    assert indices(rep, "full") == [0, 1, 2, 3] and rep.alpha_bytes_per_token == 4 * 512
    # an empty no_rope_layers means the default: global iff (i + 1) % 4 == 0 → layer 3 only
    assert indices(report(dict(base, no_rope_layers=[])), "full") == [3]


# -- Dots3 ------------------------------------------------------------------------------------------


def test_dots3_transformers_defaults():
    rep = report(load("dots-studio__dots3-note-prev-transformers-defaults"))
    assert rep.mapper == "dots.dots3_note"
    # full (indexed, DSA) iff i < 2 or i % 4 == 1: 0, 1, 5, 9, ..., 45 → 2 + 11 = 13; 33 sliding
    assert indices(rep, "dsa") == [0, 1] + list(range(5, 46, 4))
    # DSA layer: (512 + 64) × 2 = 1152 + indexer 132 = 1284 B; α = 13 × 1284 = 16692
    assert rep.alpha_bytes_per_token == 16692
    # MLA-SWA: (swa_kv_lora_rank 1024 + 64) × 2 = 2176 B over W = 512; γ = 33 × 512 × 2176 = 36765696
    assert rep.gamma_bytes_per_request == 36765696


def test_dots3_swa_latent_from_per_layer_config():
    data = load("dots-studio__dots3-note-prev-transformers-defaults")
    types = ["indexed_attention" if i < 2 or i % 4 == 1 else "sliding_attention" for i in range(46)]
    data["text_config"]["layer_types"] = types
    data["text_config"]["per_layer_config"] = {
        str(i): {"kv_lora_rank": 256, "qk_rope_head_dim": 64} for i, t in enumerate(types) if t == "sliding_attention"
    }
    rep = report(data)
    # MLA-SWA: (256 + 64) × 2 = 640 B over W = 512: γ = 33 × 512 × 640 = 10813440; α unchanged 16692
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (16692, 10813440)


# -- windows that cover every position (FullAttention.declared_window) --------------------------------


def _text(data: dict) -> dict:
    return data.get("text_config", data)


def _with(data: dict, **keys) -> dict:
    """A copy of ``data`` with ``keys`` set where its attention keys live (text_config when present)."""
    data = json.loads(json.dumps(data))
    _text(data).update(keys)
    return data


def _nas_window(length: int) -> dict:
    data = load("nvidia__Llama-3_3-Nemotron-Super-49B-v1")
    for block in data["block_configs"][:4]:  # the first four attention blocks get a window
        block["attention"]["window_length"] = length
    return data


# (case, config with a window that bounds the context, the same with W ≥ max positions, that W)
COVERING = [
    ("gemma4", _with(load("google__gemma-4-E2B-it"), sliding_window=512),
     _with(load("google__gemma-4-E2B-it"), sliding_window=131072), 131072),
    ("gemma3n", load("google__gemma-3n-E4B-transformers-defaults"),
     _with(load("google__gemma-3n-E4B-transformers-defaults"), sliding_window=32768), 32768),
    ("mimo_v2", dict(MIMO_DOCUMENTED, max_position_embeddings=131072),
     dict(MIMO_DOCUMENTED, max_position_embeddings=131072, sliding_window_size=131072), 131072),
    ("step3p5", _with(_step_config({}), max_position_embeddings=128000),
     _with(_step_config({}), max_position_embeddings=128000, sliding_window=200000), 200000),
    ("recurrent_gemma", load("google__recurrentgemma-2b-transformers-defaults"),
     _with(load("google__recurrentgemma-2b-transformers-defaults"), attention_window_size=8192,
           max_position_embeddings=8192), 8192),
    ("inkling", load("thinkingmachines__Inkling-transformers-defaults"),
     _with(load("thinkingmachines__Inkling-transformers-defaults"), sliding_window_size=131072), 131072),
    ("nemotron_h", _with(load("nvidia__Nemotron-H-56B-Base-8K"), sliding_window=4096),
     _with(load("nvidia__Nemotron-H-56B-Base-8K"), sliding_window=8192), 8192),
    ("nemotron_nas", _nas_window(4096), _nas_window(131072), 131072),
    ("minimax", _with(load(MINIMAX := "MiniMaxAI__MiniMax-Text-01-hf-transformers-defaults"),
                      max_position_embeddings=131072, sliding_window=4096),
     _with(load(MINIMAX), max_position_embeddings=131072, sliding_window=131072), 131072),
    ("bamba", _with(load(BAMBA := "ibm-fms__Bamba-9.8b-2.2T-hf-transformers-defaults"),
                    attn_layer_indices=[9, 18, 27], max_position_embeddings=4096, sliding_window=1024),
     _with(load(BAMBA), attn_layer_indices=[9, 18, 27], max_position_embeddings=4096, sliding_window=4096), 4096),
    ("zaya", _with(load(ZAYA := "Zyphra__ZAYA1-8B-transformers-defaults"), sliding_window=4096,
                   layer_types=["hybrid", "hybrid_sliding"] * 20),
     _with(load(ZAYA), sliding_window=131072, layer_types=["hybrid", "hybrid_sliding"] * 20), 131072),
    ("domyn_edge", _with(load(DOMYN := "domyn__Domyn-Edge-Base-config-class-defaults")),
     _with(load(DOMYN), window_sizes=[[8191, 0] if w > 0 else [w, 0] for w, _ in load(DOMYN)["window_sizes"]]),
     8192),
]


def _parts(rep) -> list:
    return [part for layer in rep.layer_specs for part in layer.parts]


@pytest.mark.parametrize("case, bounded, covering, window", COVERING, ids=[c[0] for c in COVERING])
def test_a_window_covering_every_position_is_full_attention_that_keeps_it(case, bounded, covering, window):
    """The layers a bounded window makes sliding become full attention with ``declared_window`` W
    (what vLLM mode builds its sliding spec from); every other layer is unchanged, and the figures are
    those of full attention: α grows by each such layer's E, γ loses its W·E."""
    before, after = report(bounded), report(covering)
    sliding = {layer.index for layer in before.layer_specs if any(p.kind == "sliding" for p in layer.parts)}
    assert sliding, case
    assert not any(p.kind == "sliding" for p in _parts(after))
    for old, new in zip(before.layer_specs, after.layer_specs):
        declared = [getattr(p, "declared_window", None) for p in new.parts if p.kind == "full"]
        assert declared == ([window] if old.index in sliding else [None] * len(declared)), (case, old.index)
    entries = {layer.index: layer.entry_bytes for layer in before.layers}
    grown = sum(entries[i] for i in sliding if before.layers[i].copies)
    assert after.alpha_bytes_per_token == before.alpha_bytes_per_token + grown
    assert any("accounted as full attention" in note for note in after.notes)


def test_covering_window_figures_by_hand():
    # MiMo-V2 documented, W = 131072 ≥ 131072: 9 full × 4 × (192 + 128) × 2 = 9 × 2560 = 23040 plus
    # 39 SWA layers × 8 × (192 + 128) × 2 = 39 × 5120 = 199680 (their own heads): α = 222720, γ = 0
    rep = report(COVERING[2][2])
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (222720, 0)
    # Domyn-Edge, w = 8191 → 8192 keys ≥ 8192: 12 × 2 × 8 × 256 × 2 + 24 × 2 × 8 × 64 × 2 = 98304 + 49152
    rep = report(COVERING[-1][2])
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (147456, 0)


def test_loop_passes_with_a_window_covering_every_position():
    base = {"model_type": "iquest_loopcoder", "torch_dtype": "bfloat16", "num_hidden_layers": 2,
            "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64, "loop_num": 2,
            "max_position_embeddings": 4096}
    # E = 2 × 2 × 64 × 2 = 512; pass 0 full, pass 1 over W = 64: α = 2 × 512 = 1024, γ = 2 × 64 × 512 = 65536
    rep = report(dict(base, loop_window_size=64))
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (1024, 65536)
    # W = 4096 ≥ 4096 positions: both passes full, α = 4 × 512 = 2048; pass 1 keeps W for vLLM mode
    rep = report(dict(base, loop_window_size=4096))
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (2048, 0)
    assert [p.declared_window for p in _parts(rep)] == [None, None, 4096, 4096]


def test_mla_window_covering_every_position_is_a_full_latent():
    # An MLA latent has no declared window to keep: vLLM's DeepSeek-V2 MLA reads no sliding_window at all
    # (a full latent either way); Dots3's MLA-SWA layers are full once the window covers every position.
    data = load("deepseek-ai__DeepSeek-V2-Lite")
    rep = report(dict(data, sliding_window=163840))  # = max_position_embeddings
    # the latent stays full: (512 + 64) × 2 = 1152 B × 27 layers = 31104
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (31104, 0)
    assert any("sliding window 163840 not applied" in note for note in rep.notes)
    dots = _with(load("dots-studio__dots3-note-prev-transformers-defaults"), sliding_window=524288)
    rep = report(dots)
    # 13 DSA layers × 1284 (test_dots3_transformers_defaults) + 33 full MLA-SWA latents × 2176 = 16692 + 71808
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (88500, 0)


def test_mla_latent_ignores_a_window_that_bounds_the_context():
    # vLLM's DeepseekV2MLAAttention passes no sliding_window to MLAAttention (whose spec is windowed only
    # when one is passed) and SGLang's DeepSeek-V2 is no hybrid-SWA architecture: the latent is full.
    data = load("deepseek-ai__DeepSeek-V2-Lite")
    rep = report(dict(data, sliding_window=4096))
    # (512 + 64) × 2 = 1152 B × 27 layers = 31104 per token, no windowed constant (not 27 × 1152 × 4096)
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (27 * 1152, 0) == (31104, 0)
    assert [layer.kind for layer in rep.layers] == ["mla"] * 27
    assert any("sliding window 4096 not applied" in note for note in rep.notes)


# -- Domyn-Edge: window_sizes and head_sizes per layer ----------------------------------------------


def test_domyn_edge_per_layer_windows_and_head_sizes():
    # Facts of domyn/Domyn-Edge-Base as its config class's defaults give them: 36 layers, 8 KV heads,
    # max_position_embeddings 8192; NoPE layers full with head size 256, RoPE layers window (1024, 0)
    # with head size 64 (pattern 2 × NoPE, 8 × (RoPE, RoPE, RoPE, NoPE), 2 × NoPE).
    rep = report(load(DOMYN))
    assert rep.mapper == "domyn.domyn_edge"
    sliding = [i for i in range(36) if 2 <= i < 34 and (i - 2) % 4 != 3]
    assert indices(rep, "sliding") == sliding and len(sliding) == 24
    # (w, 0) attends to [pos − 1024, pos]: 1025 keys, vLLM's window_size + 1
    assert {rep.layers[i].window for i in sliding} == {1025}
    # full: 2 × 8 × 256 × 2 = 8192 B; sliding: 2 × 8 × 64 × 2 = 2048 B
    assert (rep.layers[0].entry_bytes, rep.layers[2].entry_bytes) == (8192, 2048)
    # α = 12 × 8192 = 98304; γ = 24 × 1025 × 2048 = 50380800
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (98304, 50380800)
    # S = 8192: 98304 × 8192 + 50380800 = 805306368 + 50380800
    assert report(load(DOMYN), contexts=(8192,)).contexts[0].kv_bytes_per_request == 855687168
    # TP 8: one KV head per GPU → every figure / 8: α = 12288, γ = 6297600
    tp8 = report(load(DOMYN), tensor_parallel_size=8)
    assert (tp8.alpha_bytes_per_token, tp8.gamma_bytes_per_request) == (12288, 6297600)


def test_domyn_edge_per_layer_config_wins_over_head_sizes():
    # vLLM reads per_layer_config[i].head_dim (transformers' per-layer form: {"<i>": {...}})
    data = load(DOMYN)
    data["per_layer_config"] = {str(i): {"head_dim": 128} for i in range(36)}
    rep = report(data)
    # every layer 2 × 8 × 128 × 2 = 4096 B: α = 12 × 4096 = 49152; γ = 24 × 1025 × 4096 = 100761600
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (49152, 100761600)


def test_domyn_edge_without_head_sizes_warns():
    data = load(DOMYN)
    del data["head_sizes"]
    rep = report(data)
    # hidden 2560 / 32 heads = 80 for every layer: 2 × 8 × 80 × 2 = 2560 B; α = 12 × 2560 = 30720
    assert rep.alpha_bytes_per_token == 30720
    assert any("no per_layer_config / head_sizes" in w for w in rep.warnings)


@pytest.mark.parametrize("window_sizes, message", [
    (None, r"window_sizes.*missing"),
    ("full", r"window_sizes.*expected a list"),
    ([[1024]] * 36, r"window_sizes\[0\].*expected \[left, right\]"),
    ([[-1, 0]] * 35, r"window_sizes.*35 entries but the model has 36 layers"),
])
def test_domyn_edge_bad_window_sizes(window_sizes, message):
    data = load(DOMYN)
    data["window_sizes"] = window_sizes
    with pytest.raises(ConfigError, match=message):
        report(data)


def test_domyn_edge_window_zero_or_negative_is_full():
    data = load(DOMYN)
    data["window_sizes"] = [[0, 0]] * 18 + [[-1, 0]] * 18
    rep = report(data)
    # no window (vLLM: window_size ≤ 0 → None): α = 12 × 8192 + 24 × 2048 = 147456, γ = 0
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (147456, 0)
    assert not any(getattr(p, "declared_window", None) for p in _parts(rep))


WINDOW_ORACLES = Path(__file__).resolve().parent / "oracles"


def _sglang_window_rows() -> list[dict]:
    path = WINDOW_ORACLES / "sglang-0.5.23-windows.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _sglang_cell(row: dict) -> dict:
    from hfkv.engines import simulate

    data = window_config(row["config"])
    if data is None:
        pytest.skip(f"{row['config']} edits a hub config of ../shared, which is absent")
    rep = inspect_config(data, model=row["config"], options=Options(
        kv_cache_dtype=row["kv_cache_dtype_requested"], tensor_parallel_size=row["tp"]))
    return simulate(rep, engine="sglang", budget_bytes=None, max_model_len=None, compute_capability="9.0")


def test_sglang_rows_for_covering_windows_outside_its_swa_pool():
    """SGLang's own figures where it keeps the default pool (Mistral, Nemotron-H) and refuses Domyn-Edge."""
    rows = [row for row in _sglang_window_rows() if row.get("configurator") != "HybridSWAPoolConfigurator"]
    assert len(rows) == 16
    for row in rows:
        if row["status"] != "ok":
            with pytest.raises(Exception, match="SGLang 0.5.23 cannot serve"):
                _sglang_cell(row)
            continue
        out = _sglang_cell(row)
        assert (out["configurator"], out["bytes_per_token"]) == (row["configurator"], row["bytes_per_token"]), row
        assert out["page_size"] == row["page_size"]


def test_sglang_rows_for_covering_windows_in_its_swa_pool():
    """Gemma 4 and MiMo-V2 with W ≥ max positions: SGLang's HybridSWAPoolConfigurator, ratio 0.8."""
    rows = [row for row in _sglang_window_rows() if row.get("configurator") == "HybridSWAPoolConfigurator"]
    assert len(rows) == 12
    for row in rows:
        out = _sglang_cell(row)
        assert out["configurator"] == row["configurator"], row["config"]
        assert out["bytes_per_token"] == pytest.approx(row["bytes_per_token"], rel=1e-12)
        assert out["swa_bytes_per_token"] == row["swa"]["bytes_per_token"]
