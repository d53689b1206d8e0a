"""Full/sliding-window hybrids. ``layer_types`` decides when present; otherwise each model type's
transformers default pattern (0-based layer index i, n layers) and default window apply.
"""

from __future__ import annotations

from typing import Callable

from hfkv.model.config import ConfigView
from hfkv.errors import UnsupportedModelError
from hfkv.model.specs import Layout

from hfkv.mappings.dense import class_kv_heads
from hfkv.mappings.readers.attention_keys import aliased
from hfkv.mappings.readers.layer_builders import pattern_layout
from hfkv.mappings.registry import register

Rule = Callable[[int, int], bool]


def _every(period: int) -> Rule:
    """Sliding unless (i + 1) is a multiple of ``period``: the last layer of each group is full."""
    return lambda i, n: (i + 1) % period != 0


def _first_of(period: int) -> Rule:
    """Sliding unless i is a multiple of ``period``: the first layer of each group is full (CwmConfig)."""
    return lambda i, n: i % period != 0


def _pattern_key(key: str, default: int) -> Callable[[ConfigView], Rule]:
    return lambda cfg: _every(_pattern(cfg, key, default))


def _pattern(cfg: ConfigView, key: str, default: int) -> int:
    """``key``, or transformers 5's private copy ``_<key>`` (written into every Gemma 3 config it saves:
    the same setting, read as an alias; the two disagreeing is a warning)."""
    aliased(cfg, (key, "_" + key))
    return cfg.integer(key, "_" + key, default=default, minimum=1)


def _exaone4(cfg: ConfigView) -> Rule:
    pattern = cfg.value("sliding_window_pattern", 4)
    if isinstance(pattern, str) and pattern:  # e.g. "LLLG": L = local (sliding), G = global
        return lambda i, n: pattern[i % len(pattern)] == "L"
    return _every(_pattern(cfg, "sliding_window_pattern", 4))


def _smollm3(cfg: ConfigView) -> Rule:
    """Sliding only on NoPE layers (``no_rope_layers[i] == 0``); the window itself needs use_sliding_window.
    Without ``no_rope_layers``, SmolLM3Config derives it: layer i is NoPE iff (i + 1) % ``no_rope_layer_interval``
    == 0 (default 4)."""
    flags = cfg.int_list("no_rope_layers")
    if flags is None:
        interval = cfg.integer("no_rope_layer_interval", default=4, minimum=1)  # SmolLM3Config's default
        return lambda i, n: (i + 1) % interval == 0
    return lambda i, n: i < len(flags) and flags[i] == 0


def _beam(cfg: ConfigView) -> Rule:
    return lambda i, n: i != n - 1  # the last layer is forced full


def _every_layer(cfg: ConfigView) -> Rule:
    """No documented default pattern: like vLLM without layer_types, the window applies to every layer."""
    return lambda i, n: True


# model type -> (default window, rule factory, head_dim differs from hidden/heads)
_TABLE: dict[str, tuple[int | None, Callable[[ConfigView], Rule], bool]] = {
    "gpt_oss": (128, lambda cfg: _every(2), False),
    "gemma2": (4096, lambda cfg: _every(2), True),
    "gemma3": (4096, _pattern_key("sliding_window_pattern", 6), True),
    "gemma3_text": (4096, _pattern_key("sliding_window_pattern", 6), True),
    "cohere2": (4096, _pattern_key("sliding_window_pattern", 4), False),
    "exaone4": (4096, _exaone4, False),
    "olmo3": (4096, lambda cfg: _every(4), False),
    "cwm": (8192, lambda cfg: _first_of(4), True),
    "kolibri1": (513, lambda cfg: _every(5), True),
    "vaultgemma": (4096, lambda cfg: _every(2), True),
    "afmoe": (1024, _pattern_key("global_attn_every_n_layers", 4), False),
    "granite_swa": (128, lambda cfg: (lambda i, n: i % 4 != 0), False),
    "granitemoe_swa": (128, lambda cfg: (lambda i, n: i % 4 != 0), False),
    "cohere2_moe": (4096, _pattern_key("sliding_window_pattern", 4), False),
    "smollm3": (None, _smollm3, False),
    "beam": (None, _beam, False),
    "plamo3": (None, _pattern_key("sliding_window_pattern", 1), False),
    "laguna": (None, _every_layer, False),
    "mellum": (None, _every_layer, False),
    "muse_glimmer": (2048, _every_layer, False),
    "exaone_moe": (None, _every_layer, False),
    "apertus": (None, _every_layer, False),
    "rnj1": (None, _every_layer, False),
    "dory": (None, _every_layer, False),
    "flint": (None, _every_layer, False),
    "iquest_q1": (None, _every_layer, False),
    "spark2_5": (None, _every_layer, False),
    "xllm": (None, _every_layer, False),
    "k2_horizon": (None, _every_layer, False),
}


# Architecture -> the model type whose row applies (a config whose model_type is new still lands right).
_ARCHITECTURES = {
    "AfmoeForCausalLM": "afmoe", "ApertusForCausalLM": "apertus", "BeamForCausalLM": "beam",
    "Cohere2ForCausalLM": "cohere2", "Cohere2MoeForCausalLM": "cohere2_moe", "CwmForCausalLM": "cwm",
    "DoryForCausalLM": "dory", "Exaone4ForCausalLM": "exaone4", "Exaone4_5_ForConditionalGeneration": "exaone4",
    "ExaoneMoEForCausalLM": "exaone_moe", "ExaoneMoeForCausalLM": "exaone_moe", "FlintForCausalLM": "flint",
    "Gemma2ForCausalLM": "gemma2", "Gemma3ForCausalLM": "gemma3_text", "Gemma3ForConditionalGeneration": "gemma3",
    "GptOssForCausalLM": "gpt_oss", "GraniteSWAForCausalLM": "granite_swa", "GraniteMoeSWAForCausalLM": "granitemoe_swa",
    "IQuestQ1ForCausalLM": "iquest_q1", "K2HorizonForCausalLM": "k2_horizon", "Kolibri1ForCausalLM": "kolibri1",
    "LagunaForCausalLM": "laguna",
    "MellumForCausalLM": "mellum", "MuseGlimmerForCausalLM": "muse_glimmer",
    "MuseGlimmerForConditionalGeneration": "muse_glimmer", "Olmo3ForCausalLM": "olmo3", "Plamo3ForCausalLM": "plamo3",
    "Rnj1ForCausalLM": "rnj1", "SmolLM3ForCausalLM": "smollm3", "Spark2_5ForCausalLM": "spark2_5",
    "VaultGemmaForCausalLM": "vaultgemma", "XllmForCausalLM": "xllm",
}
# Wrappers whose text model is one of the rows (EXAONE 4.5: an exaone4 text_config; EmbeddingGemma 2's
# text model is Gemma 3's).
_WRAPPER_TYPES = {"exaone4_5": "exaone4", "embedding_gemma2_text": "gemma3_text"}


# Rows whose config class defaults the KV heads to fewer than the query heads (CwmConfig 8 of 48,
# Kolibri1Config 4 of 48, VaultGemmaConfig 4 of 8, SmolLM3Config 4 of 16): read them from the class.
_CLASS_KV_DEFAULTS = frozenset({"cwm", "kolibri1", "vaultgemma", "smollm3"})

# Rows whose window W means W + 1 keys ([pos − W, pos]): vLLM's commandr.py and cohere2_moe.py.
_INCLUSIVE = frozenset({"cohere2", "cohere2_moe"})


def _row(cfg: ConfigView) -> str:
    """The table row: the text model type, the root one, then the architecture's."""
    for model_type in (cfg.text_model_type, cfg.model_type):
        model_type = _WRAPPER_TYPES.get(model_type or "", model_type)
        if model_type in _TABLE:
            return model_type
    for arch in cfg.architectures:
        if arch in _ARCHITECTURES:
            return _ARCHITECTURES[arch]
    raise UnsupportedModelError(f"no sliding-window pattern known for model type {cfg.model_type!r}")


@register(
    family="sliding",
    model_types=tuple(_TABLE) + tuple(_WRAPPER_TYPES),
    architectures=tuple(_ARCHITECTURES),
    reads=(
        "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "sliding_window",
        "layer_types", "sliding_window_pattern|_sliding_window_pattern", "global_attn_every_n_layers", "no_rope_layers",
        "no_rope_layer_interval", "use_sliding_window",
    ),
    fixtures={
        "gpt_oss": "openai__gpt-oss-120b", "gemma2": "google__gemma-2-2b-it", "gemma3": "google__gemma-3-4b-it",
        "exaone4_5": "LGAI-EXAONE__EXAONE-4.5-transformers-defaults",
        "cwm": "facebook__cwm-transformers-defaults", "kolibri1": "Aleph-Alpha__Kolibri-1-transformers-defaults",
        "smollm3": "HuggingFaceTB__SmolLM3-3B-transformers-defaults",
        "vaultgemma": "google__vaultgemma-1b-transformers-defaults",
    },
)
def sliding_hybrid(cfg: ConfigView) -> Layout:
    """Sliding layers keep min(S, W) entries, full layers S; the pattern comes from ``layer_types`` or the default."""
    row = _row(cfg)
    window, rule_for, head_dim_defaults = _TABLE[row]
    if row in _CLASS_KV_DEFAULTS:
        class_kv_heads(cfg)
    return pattern_layout(
        cfg, default_window=window, default_rule=rule_for(cfg), head_dim_defaults=head_dim_defaults,
        inclusive_window=row in _INCLUSIVE,
    )
