"""Step-3.5 / Step-3.7 (mappings/step.py): sliding layers with their own geometry, MTP entries.

Every expected figure is derived by hand; the arithmetic is beside it. bf16 KV (2 B per value) unless a test
says otherwise."""

from __future__ import annotations

import pytest

from hfkv.errors import ConfigError

from _helpers import indices, load, report_bf16 as report, step_config as _step_config


# -- Step-3.5 / 3.7 ---------------------------------------------------------------------------------


def test_step37_transformers_defaults_all_full():
    rep = report(load("stepfun-ai__Step-3.7-Flash-transformers-defaults"))
    assert rep.mapper == "step.step3p5"  # root step3p7, text_config step3p5
    # no layer_types → 45 full layers × 2 × 8 KV heads × 128 × 2 = 45 × 4096 = 184320
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (184320, 0)


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
