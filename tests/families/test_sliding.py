"""Sliding-window hybrids (mappings/sliding.py): gpt-oss, Gemma 2/3, SmolLM3, EXAONE 4.5, the default
layer patterns of their config classes, and a window that covers every position.

Every expected figure is derived by hand; the arithmetic is beside it."""

from __future__ import annotations

import json

import pytest

from hfkv import inspect_config

from _helpers import FIXTURES, kind_counts as kinds, load, report, report as inspect


# -- sliding hybrids ---------------------------------------------------------------------------------------


def test_gpt_oss_120b():
    rep = report("openai__gpt-oss-120b")
    assert rep.alpha_bytes_per_token == 18 * 2 * 8 * 64 * 2 == 36864
    assert rep.gamma_bytes_per_request == 18 * 128 * 2048 == 4718592
    assert rep.crossover_tokens == 4718592 / 36864 == 128


def test_gemma2_default_pattern():
    rep = report("google__gemma-2-2b-it")  # no layer_types: even layers slide (W 4096)
    assert kinds(rep) == {"sliding": 13, "full": 13}
    assert rep.alpha_bytes_per_token == 13 * 2 * 4 * 256 * 2 == 53248
    assert rep.gamma_bytes_per_request == 13 * 4096 * 4096 == 218103808


def test_gemma3_sparse_text_config_uses_transformers_defaults():
    rep = report("google__gemma-3-4b-it")  # text_config omits heads, KV heads and head_dim
    assert set(rep.transformers_defaults) >= {"num_attention_heads", "num_key_value_heads", "head_dim"}
    # 34 layers, pattern 6: full at i = 5, 11, 17, 23, 29 → 5 full, 29 sliding (W 1024); E = 2 × 4 × 256 × 2
    assert kinds(rep) == {"sliding": 29, "full": 5}
    assert rep.alpha_bytes_per_token == 5 * 4096 == 20480
    assert rep.gamma_bytes_per_request == 29 * 1024 * 4096 == 121634816


@pytest.mark.parametrize(
    "fixture, full, sliding, window, entry",
    [
        # cohere2: 40 layers, pattern 4 → 10 full; MHA 64 × 128 → E = 2 × 64 × 128 × 2 = 32768; a sliding
        # layer attends to [pos − 4096, pos]: 4096 + 1 = 4097 keys (vLLM's commandr.py; its oracle row: 4097)
        ("CohereForAI__c4ai-command-r-v01-transformers-defaults", 10, 30, 4097, 32768),
        # exaone4: 32 layers, pattern 4 → 8 full; 32 heads × 128 (4096 / 32) → E = 16384
        ("LGAI-EXAONE__EXAONE-4.0-32B-transformers-defaults", 8, 24, 4096, 16384),
        # olmo3: (i + 1) % 4 → 8 full of 32; E = 2 × 32 × 128 × 2 = 16384
        ("allenai__Olmo-3-7B-Instruct-transformers-defaults", 8, 24, 4096, 16384),
        # afmoe: every 4th global → 8 full of 32, W 1024; E = 2 × 16 × 128 × 2 = 8192
        ("arcee-ai__Trinity-Mini-transformers-defaults", 8, 24, 1024, 8192),
        # granite_swa: layer 0 full, i % 4 == 0 → 6 full of 24, W 128; E = 2 × 4 × 128 × 2 = 2048
        ("ibm-granite__granite-swash-2b-transformers-defaults", 6, 18, 128, 2048),
    ],
)
def test_default_patterns(fixture, full, sliding, window, entry):
    rep = report(fixture)
    assert kinds(rep) == {"sliding": sliding, "full": full}
    assert rep.alpha_bytes_per_token == full * entry
    assert rep.gamma_bytes_per_request == sliding * window * entry


def test_default_patterns_agree_with_transformers():
    """Our default rules give the layer_types transformers derives for the same config."""
    pytest.importorskip("transformers")
    from transformers import CONFIG_MAPPING

    for fixture in ("CohereForAI__c4ai-command-r-v01-transformers-defaults", "LGAI-EXAONE__EXAONE-4.0-32B-transformers-defaults",
                    "allenai__Olmo-3-7B-Instruct-transformers-defaults", "arcee-ai__Trinity-Mini-transformers-defaults",
                    "ibm-granite__granite-swash-2b-transformers-defaults"):
        data = json.loads((FIXTURES / fixture / "config.json").read_text())
        expected = CONFIG_MAPPING[data["model_type"]](**{k: v for k, v in data.items() if k != "model_type"}).layer_types
        ours = ["sliding_attention" if layer.kind == "sliding" else "full_attention" for layer in report(fixture).layers]
        assert ours == expected, fixture


def test_window_covering_every_position_is_full_attention():
    data = json.loads((FIXTURES / "allenai__Olmo-3-7B-Instruct-transformers-defaults" / "config.json").read_text())
    data["max_position_embeddings"] = 2048  # the class default: shorter than the 4096 window
    rep = inspect_config(data)
    assert kinds(rep) == {"full": 32} and rep.gamma_bytes_per_request == 0
    assert any("≥ max_position_embeddings" in n for n in rep.notes)


# -- budget questions ------------------------------------------------------------------------------------


def test_smollm3_slides_only_nope_layers():
    data = {"model_type": "smollm3", "num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 4,
            "hidden_size": 2048, "use_sliding_window": True, "sliding_window": 4096, "no_rope_layers": [1, 1, 1, 0],
            "max_position_embeddings": 65536, "torch_dtype": "bfloat16"}
    rep = inspect_config(data)
    assert [layer.kind for layer in rep.layers] == ["full", "full", "full", "sliding"]
    assert rep.alpha_bytes_per_token == 3 * 2 * 4 * 128 * 2  # 3 full layers, head_dim 2048 / 16 = 128


def test_a_sub_config_without_its_kv_head_count_gets_the_class_default():
    """save_pretrained diffs a nested config against its own class (transformers' recursive_diff_dict),
    so gemma-3-4b-it's text_config leaves out num_key_value_heads = 4, Gemma3TextConfig's default, even
    where it writes the query heads (8): the cache has 4 KV heads, not 8."""
    data = json.loads((FIXTURES / "google__gemma-3-4b-it" / "config.json").read_text())
    data["text_config"]["num_attention_heads"] = 8
    rep = inspect_config(data, model="gemma-3-4b-it")
    kv = {part.params["kv_heads"] for layer in rep.layers for part in layer.parts}
    assert kv == {4}
    # 34 layers × 2 (K, V) × 4 KV heads × 256 (head_dim) × 2 B: 5 of every 6 layers slide (window 1024)
    assert 2 * 4 * 256 * 2 == 4096 and rep.layers[5].entry_bytes == 4096


def test_exaone_4_null_window_is_no_window():
    # sliding_window null: Exaone4Config keeps None (its default pattern becomes 0) and vLLM builds no
    # window; the 4,096 of hfkv's table is for a key left out. 32 full layers × 2 × 32 heads × 128 × 2 B
    data = dict(load("LGAI-EXAONE__EXAONE-4.0-32B-transformers-defaults"), sliding_window=None)
    rep = report(data)
    assert kinds(rep) == {"full": 32}
    assert rep.alpha_bytes_per_token == 32 * 2 * 32 * 128 * 2 == 524288 and rep.gamma_bytes_per_request == 0
    assert not [n for n in rep.notes if "4096" in n or "4,096" in n or "default sliding pattern" in n], rep.notes


def test_exaone_4_null_window_with_sliding_layer_types_says_null():
    data = dict(load("LGAI-EXAONE__EXAONE-4.0-32B-transformers-defaults"), sliding_window=None,
                layer_types=["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"] * 8)
    rep = report(data)
    assert rep.alpha_bytes_per_token == 524288  # counted full, as vLLM builds a layer with no window
    assert any("(sliding_window = null)" in w for w in rep.warnings), rep.warnings


def test_exaone_4_5_windows_its_local_layers():
    data = load("LGAI-EXAONE__EXAONE-4.5-transformers-defaults")
    assert inspect(data).alpha_bytes_per_token == 32 * 2 * 32 * 128 * 2  # window 4096 ≥ 2048 positions: all full
    data["text_config"]["max_position_embeddings"] = 131072
    rep = inspect(data)
    # layer_types: 8 full of 32 (every 4th); 24 sliding layers keep min(S, 4096)
    assert rep.alpha_bytes_per_token == 8 * 2 * 32 * 128 * 2 == 131072
    assert rep.gamma_bytes_per_request == 24 * 4096 * 2 * 32 * 128 * 2 == 1610612736


# -- keys that repeat a setting are no unread key (issue 31.3) ------------------------------------------


def test_transformers_5s_private_pattern_copy_is_no_estimate():
    data = load("google__gemma-3-4b-it")
    data["text_config"]["_sliding_window_pattern"] = 6  # what transformers 5 writes beside layer_types
    rep = report(data)
    assert not [w for w in rep.warnings if w.startswith("estimate")]
    assert rep.alpha_bytes_per_token == report(load("google__gemma-3-4b-it")).alpha_bytes_per_token


def test_a_window_size_copy_that_agrees_is_no_estimate_and_one_that_disagrees_is_a_warning():
    data = load("google__gemma-2-2b-it")
    same = report({**data, "sliding_window_size": data["sliding_window"]})
    assert not [w for w in same.warnings if w.startswith("estimate")]
    other = report({**data, "sliding_window_size": 1024})
    assert any("sliding_window_size = 1024 disagree" in w for w in other.warnings)
