"""Unread keys are never silent (issue 22 part 1).

Every mapper declares, as data beside it, the keys it reads and those it knows do not change its cache
(``@register(reads=..., ignores=...)``); after the outermost mapper runs, the registry names every key of
the config that names a cache-shaping concept and that no reader looked up and no declaration covers,
and the figures are an estimate (``mappings/readers/unread_keys.py``). Known-harmless keys are listed
with their reason (``HARMLESS``, ``NOT_CACHE``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hfkv
from hfkv.errors import HfkvError
from hfkv.mappings import all_mappers, resolve
from hfkv.mappings.readers.unread_keys import (
    CACHE_CONCEPT, HARMLESS, READ_ELSEWHERE, expand_reads, is_cache_key, unread_cache_keys,
)
from hfkv.model.config import ConfigView

from _helpers import FIXTURES, HUB_CONFIGS, LLAMA_CONFIG as LLAMA, load, report  # noqa: E402


ESTIMATE = "estimate, not exact: "
LLAMA_ALPHA = 32 * 2 * 8 * 128 * 2  # 32 layers × K and V × 8 KV heads × 128 × bf16 = 131072


def unread_after_mapping(data: dict) -> tuple[list[str], str]:
    """(keys the registry finds unread, the mapper's name), as the pipeline maps ``data``."""
    view = ConfigView(json.loads(json.dumps(data)))
    mapper = resolve(view)
    mapper(view)
    return unread_cache_keys(view), mapper.name


def estimate_warnings(rep: hfkv.Report) -> list[str]:
    return [w for w in rep.warnings if w.startswith(ESTIMATE)]


# -- every real config and every fixture --------------------------------------------------------------


def _configs(folder: Path, pattern: str) -> list[Path]:
    return sorted(folder.glob(pattern)) if folder.is_dir() else []


FIXTURE_PATHS = _configs(FIXTURES, "*/config.json")
HUB_PATHS = _configs(HUB_CONFIGS, "*.json")


def _check_no_silent_unread(path: Path) -> list[str]:
    data = json.loads(path.read_text())
    try:
        rep = report(data)
    except HfkvError:  # refused or not understood: no figure is printed, so nothing can be silently wrong
        return []
    unread, mapper = unread_after_mapping(data)
    for key in unread:
        assert any(w.startswith(ESTIMATE) and key in w for w in rep.warnings), (path, mapper, key, rep.warnings)
    return unread


@pytest.mark.parametrize("path", FIXTURE_PATHS, ids=lambda p: p.parent.name)
def test_no_fixture_leaves_a_cache_key_unread_without_a_warning(path):
    _check_no_silent_unread(path)


def test_no_hub_config_leaves_a_cache_key_unread_without_a_warning():
    if not HUB_PATHS:
        pytest.skip(f"{HUB_CONFIGS} is absent: the shared real configs cannot be checked here")
    for path in HUB_PATHS:
        _check_no_silent_unread(path)


def test_real_configs_have_no_unexplained_cache_key():
    """False positives stay low: every key of every fixture and shared real config is read, declared by
    its mapper, or listed as harmless with its reason; none of them is an estimate for an unread key."""
    found = {}
    for path in FIXTURE_PATHS + HUB_PATHS:
        unread = _check_no_silent_unread(path)
        if unread:
            found[path.name if path.name != "config.json" else path.parent.name] = unread
    assert found == {}


# -- the check fires for every mapper, not only the generic one --------------------------------------------


def test_an_unread_sharing_key_on_a_known_family_is_an_estimate():
    rep = report(dict(LLAMA, kv_share_every_n_layers=2))
    assert rep.mapper == "dense.dense"
    assert rep.alpha_bytes_per_token == LLAMA_ALPHA  # the figure follows what was read...
    assert estimate_warnings(rep) and "kv_share_every_n_layers" in estimate_warnings(rep)[0]  # ...and says so
    assert "dense.dense" in estimate_warnings(rep)[0]


@pytest.mark.parametrize("key,value", [
    ("use_cla", True), ("num_kv_shared_layers", 8), ("attention_window", 512), ("local_chunk_size", 1024),
    ("kv_lora_rank_v2", 256), ("compress_ratio", 4), ("index_n_heads", 64), ("ssm_state_size", 64),
    ("conv_kernel_size", 4), ("mamba_expand", 2), ("linear_attention_layers", [0, 1]),
])
def test_each_cache_concept_is_caught(key, value):
    rep = report(dict(LLAMA, **{key: value}))
    assert any(key in w for w in estimate_warnings(rep)), (key, rep.warnings)


def test_false_is_not_empty():
    # ChatGLM's multi_query_attention: false changes the cache: a false flag is a value, not silence
    unread, _ = unread_after_mapping(dict(LLAMA, use_kv_sharing=False))
    assert unread == ["use_kv_sharing"]


def test_harmless_keys_are_not_warned():
    rep = report(dict(LLAMA, topk_method="noaux_tc", attention_dropout=0.0, chunk_size_feed_forward=0,
                      image_token_index=5, rope_scaling={"factor": 8.0}, use_mamba_kernels=True))
    assert estimate_warnings(rep) == []


def test_a_nested_object_is_walked_where_a_reader_reached_inside():
    # MPT: attn_config.kv_n_heads is read; its other keys are checked one by one
    data = load("replit__replit-code-v1_5-3b")
    data["attn_config"] = dict(data["attn_config"], sliding_window_size=512)
    rep = report(data)
    assert any("attn_config.sliding_window_size" in w for w in estimate_warnings(rep)), rep.warnings


def test_a_wrapper_names_the_key_in_its_text_config():
    # LLaVA: the text sub-config (model type llama) is mapped by its own mapper
    data = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
            "text_config": dict(LLAMA, kv_share_every_n_layers=2), "vision_config": {"num_attention_heads": 16}}
    rep = report(data)
    warnings = estimate_warnings(rep)
    assert len(warnings) == 1 and "text_config.kv_share_every_n_layers" in warnings[0]
    assert "vision_config" not in warnings[0]  # a tower keeps no cache


def test_declared_ignores_silence_a_key_with_a_reason():
    # DeepSeek-V3 writes num_attention_heads; the MLA mapper declares it irrelevant to the latent
    unread, mapper = unread_after_mapping(load("deepseek-ai__DeepSeek-V3"))
    assert mapper == "deepseek.mla" and unread == []
    # the same key on a mapper that does not declare it is caught
    unread, mapper = unread_after_mapping({"model_type": "mamba", "num_hidden_layers": 2, "hidden_size": 64,
                                           "num_attention_heads": 4})
    assert mapper == "mamba.mamba1" and unread == ["num_attention_heads"]


def test_the_generic_mapper_labels_any_unread_cache_key():
    rep = report({"model_type": "brand_new", "num_hidden_layers": 4, "num_attention_heads": 8,
                  "num_key_value_heads": 2, "hidden_size": 512, "torch_dtype": "bfloat16",
                  "recurrent_state_size": 64})
    assert rep.alpha_bytes_per_token == 4 * 2 * 2 * 64 * 2  # 2048, from what it read
    assert any("recurrent_state_size" in w and "generic.generic" in w for w in estimate_warnings(rep))


# -- the declarations are data, checked ---------------------------------------------------------------


def test_reads_syntax():
    assert expand_reads(["a.{b, c}|d", "e[].f"]) == {"a.b", "a.c", "d", "e.f"}
    with pytest.raises(ValueError, match="not a key path"):
        expand_reads(["text sub-config: model_type"])


def test_every_mapper_declares_well_formed_reads_and_reasoned_ignores():
    for mapper in all_mappers():
        assert mapper.understood is not None  # parsed (a malformed entry fails at import)
        for key, reason in mapper.ignores.items():
            assert isinstance(reason, str) and len(reason) > 10, (mapper.name, key)


def test_every_harmless_entry_names_a_concept_and_says_why():
    for key, reason in {**HARMLESS, **READ_ELSEWHERE}.items():
        assert CACHE_CONCEPT.search(key), key  # else the entry is dead
        assert len(reason) > 10, key
    assert not is_cache_key("topk_group") and is_cache_key("kv_share_every_n_layers")
