"""Readers of multi-head latent attention (MLA) and DSA indexer keys.

An MLA layer caches one latent of ``kv_lora_rank`` + ``qk_rope_head_dim`` values per token (K and V
are rebuilt from it); a DSA layer adds indexer keys of ``index_head_dim`` unless it reuses the
previous layer's top-k.
"""

from __future__ import annotations

from hfkv.config import ConfigView
from hfkv.specs import IndexerKeys, MLALatent

from .layer_builders import PartsFactory


def mla_latent(cfg: ConfigView, *, topk: int | None = None, window: int | None = None) -> MLALatent:
    """The cached latent: ``kv_lora_rank`` + ``qk_rope_head_dim`` (qk_nope/v_head_dim are not cached)."""
    cfg.mark("qk_nope_head_dim", "v_head_dim", "q_lora_rank", "num_key_value_heads")
    return MLALatent(
        kv_lora_rank=cfg.integer("kv_lora_rank", minimum=1, defaults=True),
        rope_dim=cfg.integer("qk_rope_head_dim", default=64, defaults=True),
        topk=topk,
        window=window,
    )


def dsa_indexer(cfg: ConfigView) -> IndexerKeys:
    return IndexerKeys(head_dim=cfg.integer("index_head_dim", default=128, minimum=1))


def dsa_skips_indexer(cfg: ConfigView, i: int) -> bool:
    """True when layer i reuses the previous layer's top-k and so keeps no indexer keys (0-based i).

    SGLang's order: ``indexer_types[i] == "shared"``, ``cli_factor``, ``index_topk_pattern[i] == 'S'``,
    then ``index_topk_freq`` counted from ``index_skip_topk_offset`` (default: from layer 1).
    """
    types = cfg.value("indexer_types")
    if isinstance(types, list) and i < len(types):
        return types[i] == "shared"
    cli_factor = cfg.integer("cli_factor", default=1, minimum=1)
    if cli_factor > 1:
        return i % cli_factor != 0
    pattern = cfg.value("index_topk_pattern")
    if isinstance(pattern, str) and i < len(pattern):
        return pattern[i] == "S"
    freq = cfg.integer("index_topk_freq", default=1, minimum=1)
    offset = cfg.optional_int("index_skip_topk_offset")
    if offset is not None:
        return max(i - offset + 1, 0) % freq != 0
    return max(i - 1, 0) % freq != 0


def mla_parts(cfg: ConfigView) -> tuple[str, PartsFactory]:
    return ("mla", lambda: (mla_latent(cfg),))
