"""Dots3 (``dots3_note``, ``dots3_note_text``): MLA everywhere; ``indexed_attention`` layers add DSA
indexer keys; ``sliding_attention`` layers keep an MLA latent of ``swa_kv_lora_rank`` +
``swa_qk_rope_head_dim`` over a window. Default pattern: full iff i < 2 or i % 4 == 1.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import LayerSpec, Layout, MLALatent

from hfkv.mappings.readers.attention_keys import effective_window, num_layers, per_layer_override
from hfkv.mappings.readers.latent_keys import MLA_IGNORES, dsa_indexer, mla_latent
from hfkv.mappings.readers.layer_builders import mtp_note
from hfkv.mappings.readers.layer_patterns import layer_types
from hfkv.mappings.registry import register


_DOTS3_TYPES = ("full_attention", "indexed_attention", "sliding_attention")


def _dots3_types(cfg: ConfigView, n: int, notes: list[str]) -> list[str]:
    types = layer_types(cfg, n)
    if types is None:
        full = "full_attention" if cfg.value("use_dsa") is False else "indexed_attention"
        slide = cfg.boolean("use_sliding_window", default=True)
        notes.append("no layer_types: full iff i < 2 or i % 4 == 1, sliding otherwise (transformers default)")
        return [full if not slide or i < 2 or i % 4 == 1 else "sliding_attention" for i in range(n)]
    for i, name in enumerate(types):
        if name not in _DOTS3_TYPES:
            raise ConfigError(cfg.path(f"layer_types[{i}]"), f"unknown Dots3 layer type {name!r}")
    return types


@register(
    family="mla-sliding",
    model_types=("dots3_note", "dots3_note_text"),
    architectures=("Dots3NoteForCausalLM",),
    reads=("num_hidden_layers", "layer_types", "kv_lora_rank", "qk_rope_head_dim", "swa_kv_lora_rank",
           "swa_qk_rope_head_dim", "swa_head_dim", "swa_qk_nope_head_dim", "sliding_window", "sliding_window_size",
           "index_head_dim", "index_topk", "use_dsa", "use_sliding_window", "per_layer_config",
           "num_nextn_predict_layers"),
    ignores=MLA_IGNORES,
    fixtures={"dots3_note": "dots-studio__dots3-note-prev-transformers-defaults"},
)
def dots3_note(cfg: ConfigView) -> Layout:
    """MLA full/indexed layers (indexed ones add indexer keys) and MLA-SWA layers with their own latent."""
    notes: list[str] = []
    n = num_layers(cfg)
    types = _dots3_types(cfg, n, notes)
    topk = cfg.optional_int("index_topk", minimum=1, defaults=True)
    plain = mla_latent(cfg)
    indexed = (mla_latent(cfg, topk=topk), dsa_indexer(cfg))
    window = cfg.optional_int("sliding_window", "sliding_window_size") or 512  # transformers default
    window = effective_window(cfg, window, notes)
    # transformers' SWA defaults: kv_lora_rank 1024, head_dim 256 − qk_nope_head_dim 192 = 64 RoPE dims.
    swa_rank = cfg.integer("swa_kv_lora_rank", default=1024, minimum=1)
    swa_rope = cfg.optional_int("swa_qk_rope_head_dim")
    if swa_rope is None:
        swa_rope = cfg.integer("swa_head_dim", default=256) - cfg.integer("swa_qk_nope_head_dim", default=192)
    local = MLALatent(kv_lora_rank=swa_rank, rope_dim=swa_rope, window=window)
    first_swa = next((i for i, name in enumerate(types) if name == "sliding_attention"), None)
    override = per_layer_override(cfg, first_swa) if first_swa is not None else {}
    if override:  # a config saved by transformers: the SWA geometry lives in per_layer_config
        local = MLALatent(
            kv_lora_rank=override.get("kv_lora_rank", swa_rank),
            rope_dim=override.get("qk_rope_head_dim", swa_rope),
            window=window,
        )
    cfg.mark("swa_num_attention_heads", "swa_num_key_value_heads", "swa_q_lora_rank", "swa_v_head_dim",
             "index_n_heads", "is_hybrid_swa")
    layers = []
    for i, name in enumerate(types):
        if name == "sliding_attention":
            layers.append(LayerSpec(index=i, kind="mla-swa", parts=(local,)))
        elif name == "indexed_attention":
            layers.append(LayerSpec(index=i, kind="dsa", parts=indexed))
        else:
            layers.append(LayerSpec(index=i, kind="mla", parts=(plain,)))
    return Layout(layers=layers, notes=notes + mtp_note(cfg))
