"""Readers of multi-head latent attention (MLA) and DSA indexer keys.

An MLA layer caches one latent of ``kv_lora_rank`` + ``qk_rope_head_dim`` values per token (K and V
are rebuilt from it); a DSA layer adds indexer keys of ``index_head_dim`` unless it reuses the
previous layer's top-k. A DeepSeek-V2 config whose ``qk_nope_head_dim`` and ``qk_rope_head_dim`` are
both 0 has no latent at all: plain multi-head attention (``plain_mha``, ``mha_part``).
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import FullAttention, IndexerKeys, MLALatent

from hfkv.mappings.readers.attention_keys import attention_part, hidden_size, num_heads
from hfkv.mappings.readers.layer_builders import PartsFactory

# Keys an MLA mapper knows do not shape its latent (declared as ``ignores``: the registry's unread-key check).
MLA_IGNORES = {
    "num_attention_heads": "an MLA latent has no head axis (the plain-MHA path reads the heads)",
    "head_dim": "the queries' head size: the latent is kv_lora_rank + qk_rope_head_dim values",
    "v_head_dim": "values are projected out of the latent: not cached",
}


def mla_latent(cfg: ConfigView, *, topk: int | None = None) -> MLALatent:
    """The cached latent: ``kv_lora_rank`` + ``qk_rope_head_dim`` (qk_nope/v_head_dim are not cached).

    Never windowed: vLLM's DeepSeek-V2 MLA layers pass no sliding window to ``MLAAttention`` (which,
    unlike ``Attention``, has no cache-config fallback) and SGLang keeps them in its full pool; a
    family whose engines do window the latent (Dots3's MLA-SWA) builds its own ``MLALatent``.
    """
    cfg.mark("qk_nope_head_dim", "v_head_dim", "q_lora_rank", "num_key_value_heads")
    return MLALatent(
        kv_lora_rank=cfg.integer("kv_lora_rank", minimum=1, defaults=True),
        rope_dim=cfg.integer("qk_rope_head_dim", default=64, defaults=True),
        topk=topk,
    )


def plain_mha(cfg: ConfigView) -> bool:
    """True when ``qk_nope_head_dim`` and ``qk_rope_head_dim`` are both written as 0: vLLM's
    ``DeepseekV2DecoderLayer`` then builds the plain-MHA ``DeepseekAttention`` whatever ``use_mla`` or
    ``kv_lora_rank`` say, and SGLang's DeepSeek-OCR-style wrappers do too. Absent keys are not 0: the
    config classes default them to 128 and 64."""
    return all(cfg.present(key) and cfg.value(key) == 0 for key in ("qk_nope_head_dim", "qk_rope_head_dim"))


def mha_part(cfg: ConfigView) -> FullAttention:
    """``DeepseekAttention``'s cache: ``num_key_value_heads`` heads of hidden_size // heads for K and for V
    (both engines derive the head dim so; ``head_dim`` and ``v_head_dim`` keys are not read)."""
    cfg.mark("kv_lora_rank", "q_lora_rank", "v_head_dim", "head_dim", "use_mla", "qk_nope_head_dim",
             "qk_rope_head_dim")
    dim = hidden_size(cfg) // num_heads(cfg)
    return attention_part(cfg, key_dim=dim, value_dim=dim)


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
