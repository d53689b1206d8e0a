"""GLM-5.3-Flash (``glm5_next``): KDA layers where the **0-based** ``linear_attn_config.kda_layers``
says, else ``layer_types``, else KDA iff i % 4 != 3; full layers are MLA, plus a DSA indexer when
``index_topk`` is set. (GLM-4.x dense models use ``dense.dense``; GLM-5 DSA uses ``deepseek.dsa``.)
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import IndexerKeys, Layout

from hfkv.mappings.readers.attention_keys import num_layers
from hfkv.mappings.kimi import kda_list_roles
from hfkv.mappings.readers.latent_keys import MLA_IGNORES, mla_latent, mla_parts
from hfkv.mappings.readers.layer_builders import PartsFactory, hybrid_layout
from hfkv.mappings.readers.layer_patterns import ATTENTION, ATTENTION_OR_LINEAR, LINEAR, roles_from_list, roles_from_rule
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import kda_from_linear_config


def dsa_full_parts(cfg: ConfigView, roles: list[str], notes: list[str]) -> dict[str, tuple[str, PartsFactory]]:
    """GLM-5.3's full layers: MLA, plus DSA indexer keys when ``index_topk`` is written.

    Only an explicit ``indexer_types`` list marks layers that reuse another layer's top-k (no keys);
    ``index_kpool`` = k keeps one indexer key per k tokens (SGLang divides the indexer cell by k).
    Shared layers get the role ``"attention-shared"`` (set in ``roles`` in place).
    """
    if not cfg.present("index_topk"):
        return {ATTENTION: mla_parts(cfg)}
    topk = cfg.integer("index_topk", minimum=1)
    kpool = cfg.integer("index_kpool", default=1, minimum=1)
    cfg.mark("index_n_heads", "index_kpool_always_select_tail")

    def latent() -> tuple:
        return (mla_latent(cfg, topk=topk),)

    def with_indexer() -> tuple:
        return latent() + (IndexerKeys(head_dim=cfg.integer("index_head_dim", default=128, minimum=1), ratio=kpool),)

    types = cfg.str_list("indexer_types")
    for i, role in enumerate(roles):
        if role == ATTENTION and types is not None and i < len(types) and types[i] == "shared":
            roles[i] = "attention-shared"
    if types is None:
        notes.append("no indexer_types: every DSA layer keeps its own indexer keys")
    if kpool > 1:
        notes.append(f"index_kpool = {kpool}: one indexer key per {kpool} tokens")
    return {ATTENTION: ("dsa", with_indexer), "attention-shared": ("dsa-shared-topk", latent)}


@register(
    family="linear",
    model_types=("glm5_next", "glm5_next_text"),
    architectures=("Glm5NextForConditionalGeneration", "Glm5NextForCausalLM"),
    reads=(
        "linear_attn_config.kda_layers", "layer_types", "linear_num_heads", "linear_head_dim",
        "linear_conv_kernel_dim", "kv_lora_rank", "qk_rope_head_dim", "index_topk", "index_head_dim",
        "index_kpool", "indexer_types", "num_hidden_layers", "num_nextn_predict_layers",
    ),
    ignores=MLA_IGNORES,
    fixtures={"glm5_next": "zai-org__GLM-5.3-Flash-transformers-defaults"},
)
def glm5_next(cfg: ConfigView) -> Layout:
    """KDA where the **0-based** ``kda_layers`` (or ``layer_types``) says, else i % 4 != 3; MLA(+DSA) elsewhere."""
    n = num_layers(cfg)
    notes: list[str] = []
    roles = kda_list_roles(cfg, n, base=0)
    if roles is not None:
        notes.append("linear_attn_config.kda_layers is 0-based here: layer i is KDA iff i is listed")
    else:
        roles = roles_from_list(cfg, "layer_types", n, ATTENTION_OR_LINEAR)
    if roles is None:
        roles = roles_from_rule(n, lambda i: i % 4 == 3)
        notes.append("no kda_layers or layer_types: the default pattern applies (KDA iff i % 4 != 3)")
    cfg.mark("linear_attn_config")
    parts = dsa_full_parts(cfg, roles, notes)
    parts[LINEAR] = ("kda", lambda: (kda_from_linear_config(cfg),))
    return hybrid_layout(cfg, roles, parts, notes)
