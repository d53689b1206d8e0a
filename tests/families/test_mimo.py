"""MiMo-V2 (mappings/mimo.py): full and SWA layers with their own geometry.

Fixtures named ``-transformers-defaults`` hold the config-class defaults; inline configs marked
"documented values" are written from the keys published for the real checkpoints. Every expected figure is
derived by hand; the arithmetic is beside it.
bf16 KV (2 B per value) unless a test says otherwise."""

from __future__ import annotations

import pytest

from hfkv.errors import ConfigError

from _helpers import MIMO_DOCUMENTED, indices, load, report_bf16 as report


# -- MiMo-V2 ----------------------------------------------------------------------------------------


def test_mimo_v2_flash_transformers_defaults():
    rep = report(load("XiaomiMiMo__MiMo-V2-Flash-transformers-defaults"))
    assert rep.mapper == "mimo.mimo_v2"
    # full iff i == 0 or (i + 1) % 6 == 0: 0, 5, 11, ..., 47 → 1 + 8 = 9 full, 39 SWA
    assert indices(rep, "full") == [0, 5, 11, 17, 23, 29, 35, 41, 47]
    # K 192 + V 128 per KV head: 4 × (192 + 128) × 2 = 2560 B for both types (no swa_* keys)
    # α = 9 × 2560 = 23040; W = sliding_window 129 (transformers' size + 1): γ = 39 × 129 × 2560 = 12879360
    assert (rep.alpha_bytes_per_token, rep.gamma_bytes_per_request) == (23040, 12879360)


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
