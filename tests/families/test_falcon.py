"""Falcon-H1 (mappings/falcon.py): attention and Mamba-2 in every layer, figures by hand."""

from __future__ import annotations

from _helpers import load, report, state_of


# -- hybrids ----------------------------------------------------------------------------------------


def test_falcon_h1_both_parts_every_layer():
    rep = report(load("tiiuae__Falcon-H1-1.5B-Deep-Instruct-transformers-defaults"))
    layers = rep.to_dict()["layers"]
    assert len(layers) == 32 and all(len(layer["parts"]) == 2 for layer in layers)
    assert {part["kind"] for part in layers[0]["parts"]} == {"full", "mamba"}
    # attention: 8 KV heads × head_dim 4096/32 = 128 on every one of the 32 layers
    assert rep.alpha_bytes_per_token == 32 * 8 * 128 * 2 * 2 == 131072
    # Mamba-2: d_head "auto" = d_ssm 1024 / 128 heads = 8; 1 group, d_state 256
    c = 128 * 8 * 256 * 4 + 3 * (128 * 8 + 2 * 1 * 256) * 2  # 1048576 + 9216 = 1057792
    assert state_of(rep, 0) == c
    assert rep.gamma_bytes_per_request == 32 * c == 33849344
