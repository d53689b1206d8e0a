"""RWKV-4 (mappings/rwkv.py): hand-derived state per layer; later RWKV generations refused by name."""

from __future__ import annotations

import pytest

import hfkv

from _helpers import load, report, state_of


# -- RWKV -----------------------------------------------------------------------------------------------


RWKV = "RWKV__rwkv-4-169m-pile"


RWKV_C = 3 * 768 * 4 + 2 * 768 * 2  # WKV numerator, denominator, max (fp32) + two token shifts: 12,288


def test_rwkv4_state_per_layer():
    rep = report(load(RWKV))
    assert rep.mapper == "rwkv.rwkv"
    assert rep.alpha_bytes_per_token == 0
    assert state_of(rep, 0) == RWKV_C == 12288
    assert rep.gamma_bytes_per_request == 12 * RWKV_C == 147456
    assert rep.recurrent_state_bytes == 147456


def test_rwkv4_tp2_and_state_dtype():
    rep = report(load(RWKV), tensor_parallel_size=2)
    assert rep.gamma_bytes_per_request == 12 * (3 * 384 * 4 + 2 * 384 * 2) == 73728
    rep = report(load(RWKV), state_dtype="bf16")
    assert rep.gamma_bytes_per_request == 12 * (3 * 768 * 2 + 2 * 768 * 2) == 92160


def test_rwkv4_attention_hidden_size_that_differs_is_warned():
    rep = report(dict(load(RWKV), attention_hidden_size=1024))
    assert rep.gamma_bytes_per_request == 147456  # the reference sizes its state by hidden_size
    assert any(w.startswith("estimate, not exact: attention_hidden_size = 1024") for w in rep.warnings)


@pytest.mark.parametrize("model_type,arch", [
    ("rwkv5", "Rwkv5ForCausalLM"), ("rwkv6", "Rwkv6ForCausalLM"), ("rwkv7", "Rwkv7ForCausalLM"),
    ("rwkv7", "RWKV7ForCausalLM"),
])
def test_later_rwkv_generations_are_refused_by_name(model_type, arch):
    data = {"architectures": [arch], "model_type": model_type, "hidden_size": 2048, "num_hidden_layers": 24,
            "head_size": 64}
    with pytest.raises(hfkv.UnsupportedModelError, match="RWKV-5/6/7"):
        report(data)
