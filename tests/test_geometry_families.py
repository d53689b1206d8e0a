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
