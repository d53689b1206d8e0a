"""Bailing hybrids (mappings/bailing.py): KDA and lightning layers, hand-derived α and state."""

from __future__ import annotations

from _helpers import kinds, load, report, state_of


# -- Bailing hybrid (KDA or lightning, MLA full layers) ---------------------------------------------


def test_bailing_kda_defaults_fixture():
    rep = report(load("inclusionAI__Ling-3.0-Flash-transformers-defaults"))
    # layer_group_size 6: full iff (i + 1) % 6 == 0 → 7 MLA of 42; KDA: 32 heads × head_dim 128
    kda_c = 32 * 128 * 128 * 4 + 3 * (3 * 32 * 128) * 2  # 2097152 + 73728 = 2170880
    assert rep.alpha_bytes_per_token == 7 * (512 + 64) * 2 == 8064
    assert state_of(rep, 0) == kda_c
    assert rep.gamma_bytes_per_request == 35 * kda_c == 75980800
    assert any("MTP" in note for note in rep.notes)


def test_bailing_lightning_without_short_conv():
    data = load("inclusionAI__Ling-3.0-Flash-transformers-defaults")
    del data["short_conv_kernel_size"]
    rep = report(data)
    assert kinds(rep)[0] == "lightning"
    assert state_of(rep, 0) == 32 * 128 * 128 * 4  # no conv state
    assert rep.gamma_bytes_per_request == 35 * 2097152


def test_bailing_group_size_list_and_ragged_warning():
    data = load("inclusionAI__Ling-3.0-Flash-transformers-defaults")
    data["num_hidden_layers"] = 4
    data["layer_group_size"] = [1, 0, 1, 0]  # 1 = linear
    rep = report(data)
    assert kinds(rep) == ["kda", "mla", "kda", "mla"]
    data["layer_group_size"] = 3  # 4 layers: full at i = 2 only; vLLM would also make layer 3 full
    rep = report(data)
    assert kinds(rep) == ["kda", "kda", "mla", "kda"]
    assert any("layer_group_size" in w for w in rep.warnings)
