"""Windows the shared readers decide (mappings/readers/attention_keys.py): a window covering every
position is full attention that keeps its declared window, in every family that has one (Gemma 4,
Gemma 3n, MiMo-V2, Step-3.5, RecurrentGemma, Inkling, Nemotron-H, …, a looped model); an MLA latent
ignores a window.

Every expected figure is derived by hand; the arithmetic is beside it. bf16 KV (2 B per value) unless a test
says otherwise."""

from __future__ import annotations

import json

import pytest

from _helpers import MIMO_DOCUMENTED, load, report_bf16 as report, step_config as _step_config


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
