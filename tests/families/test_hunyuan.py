"""Cross-layer attention (CLA): HunYuan's ``use_cla`` / ``cla_share_factor`` (issue 22 part 2).

Layer i computes K and V only when i % F == 0; the others read layer i − (i % F)'s (σ = 0). Expected
figures by hand, 16-bit KV (2 B): E = 2 × K × H × 2 per owning layer.
"""

from __future__ import annotations

import pytest

from _helpers import load, report  # noqa: E402

LARGE = "tencent__Tencent-Hunyuan-Large"


def layers(rep):
    return rep.to_dict()["layers"]


def test_hunyuan_large_keeps_half_the_kv():
    rep = report(load(LARGE))
    assert rep.mapper == "hunyuan.hunyuan"
    # 64 layers, 8 KV heads, head 6400 ÷ 80 = 80; CLA every 2 layers: 32 own K and V
    assert rep.alpha_bytes_per_token == 32 * 2 * 8 * 80 * 2 == 81920  # not 64 × 2 × 8 × 80 × 2 = 163,840
    assert [layer["copies"] for layer in layers(rep)] == [1, 0] * 32
    assert [layer["source_layer"] for layer in layers(rep)][:6] == [None, 0, None, 2, None, 4]
    assert rep.gamma_bytes_per_request == 0
    assert not [w for w in rep.warnings if w.startswith("estimate")]


def test_hunyuan_large_without_cla_is_every_layer():
    data = dict(load(LARGE), use_cla=False)
    assert report(data).alpha_bytes_per_token == 64 * 2 * 8 * 80 * 2 == 163840


def test_hunyuan_large_per_gpu_at_tp8():
    # 8 KV heads ÷ 8 = 1 per GPU: 32 × 2 × 1 × 80 × 2
    assert report(load(LARGE), tensor_parallel_size=8).alpha_bytes_per_token == 10240


def test_a_share_factor_of_three_reads_the_group_owner():
    data = dict(load(LARGE), num_hidden_layers=7, cla_share_factor=3)
    rep = report(data)
    assert [layer["source_layer"] for layer in layers(rep)] == [None, 0, 0, None, 3, 3, None]
    assert rep.alpha_bytes_per_token == 3 * 2 * 8 * 80 * 2 == 7680  # layers 0, 3, 6 own


@pytest.mark.parametrize("model_type,arch", [
    ("hunyuan_v1_dense", "HunYuanDenseV1ForCausalLM"), ("hunyuan_v1_moe", "HunYuanMoEV1ForCausalLM"),
])
def test_hunyuan_v1_families_apply_cla(model_type, arch):
    # Hy-MT2-7B's geometry (32 layers, 8 KV heads × head_dim 128), with CLA switched on
    data = {"architectures": [arch], "model_type": model_type, "hidden_size": 4096, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "attention_head_dim": 128,
            "use_cla": True, "cla_share_factor": 2, "torch_dtype": "bfloat16"}
    rep = report(data)
    assert rep.mapper == "hunyuan.hunyuan"
    assert rep.alpha_bytes_per_token == 16 * 2 * 8 * 128 * 2 == 65536
    assert any("Transformers backend" in note for note in rep.notes)  # what the engines do instead is said


def test_hy_mt2_writes_a_factor_without_use_cla():
    data = {"architectures": ["HunYuanDenseV1ForCausalLM"], "model_type": "hunyuan_v1_dense", "hidden_size": 4096,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
            "attention_head_dim": 128, "use_cla": False, "cla_share_factor": 2, "torch_dtype": "bfloat16"}
    rep = report(data)
    assert rep.alpha_bytes_per_token == 32 * 2 * 8 * 128 * 2 == 131072
    assert rep.warnings == []


def test_attention_head_dim_alone_and_different_is_warned():
    data = dict(load(LARGE), attention_head_dim=128)  # 6400 / 80 = 80 is used
    rep = report(data)
    assert rep.alpha_bytes_per_token == 81920
    assert any(w.startswith("estimate, not exact: attention_head_dim = 128") for w in rep.warnings)


def test_cla_on_another_family_is_not_read_silently():
    data = dict(load("meta-llama__Meta-Llama-3.1-8B"), use_cla=True, cla_share_factor=2)
    rep = report(data)
    assert rep.alpha_bytes_per_token == 32 * 2 * 8 * 128 * 2  # the dense mapper does not share...
    assert any("cla_share_factor" in w and "use_cla" in w for w in rep.warnings
               if w.startswith("estimate"))  # ...and says it did not read them
