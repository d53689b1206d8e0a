"""Meituan LongCat-Flash: two MLA sub-layers per decoder layer (optionally with a DSA indexer).
"""

from __future__ import annotations

from hfkv.model.config import MAX_LAYERS, ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import LayerSpec, Layout

from hfkv.mappings.readers.latent_keys import MLA_IGNORES, dsa_indexer, dsa_skips_indexer, mla_latent
from hfkv.mappings.readers.layer_builders import mtp_note
from hfkv.mappings.registry import register


def _longcat_decoder_layers(cfg: ConfigView, warnings: list[str]) -> int:
    """Decoder layers: ``num_layers`` (transformers and the Hub config both write it).

    transformers derives ``num_hidden_layers = 2·num_layers`` (attention sub-layers) while the Hub's
    remote config sets ``num_hidden_layers = num_layers``; either agrees with ``num_layers``. Without
    ``num_layers``, ``num_hidden_layers`` is read the Hub's way (as SGLang does), with a warning.
    """
    # two sub-layers each: half the layer bound
    decoder = cfg.optional_int("num_layers", minimum=1, maximum=MAX_LAYERS // 2)
    hidden = cfg.optional_int("num_hidden_layers", minimum=1, maximum=MAX_LAYERS)
    if decoder is not None:
        if hidden is not None and hidden not in (decoder, 2 * decoder):
            raise ConfigError(
                cfg.path("num_hidden_layers"), f"{hidden} is neither num_layers ({decoder}) nor twice it"
            )
        return decoder
    if hidden is not None:
        warnings.append(
            "no num_layers: num_hidden_layers read as decoder layers (Hub config convention), "
            "each with two MLA sub-layers"
        )
        if 2 * hidden > MAX_LAYERS:
            raise ConfigError(cfg.path("num_hidden_layers"), f"{hidden} decoder layers is beyond any real model")
        return hidden
    return cfg.integer("num_layers", minimum=1, maximum=MAX_LAYERS // 2, defaults=True)


@register(
    family="mla",
    model_types=("longcat_flash",),
    architectures=("LongcatFlashForCausalLM", "LongcatFlashNgramForCausalLM"),
    reads=(
        "num_layers", "num_hidden_layers", "kv_lora_rank", "qk_rope_head_dim", "index_topk", "index_head_dim",
        "cli_factor", "num_nextn_predict_layers",
    ),
    ignores=MLA_IGNORES,
    fixtures={"longcat_flash": "meituan-longcat__LongCat-Flash-Chat-transformers-defaults"},
)
def longcat_flash(cfg: ConfigView) -> Layout:
    """LongCat-Flash: 2·``num_layers`` MLA sub-layers, each caching one latent (d_c + d_r per token).

    With ``index_topk`` (a DSA indexer), a sub-layer keeps indexer keys unless it reuses the previous
    top-k (``cli_factor``: fresh every ``cli_factor`` layers, SGLang's rule). The rule is applied to
    the 0-based attention sub-layer index (0 … 2·num_layers − 1), the numbering of the engines' pools.
    """
    warnings: list[str] = []
    decoder = _longcat_decoder_layers(cfg, warnings)
    n = 2 * decoder
    topk = cfg.optional_int("index_topk", minimum=1)
    latent = mla_latent(cfg, topk=topk)
    notes = [f"{decoder} decoder layers × 2 MLA sub-layers = {n} attention layers"]
    if topk is None:
        layers = [LayerSpec(index=i, kind="mla", parts=(latent,)) for i in range(n)]
    else:
        indexer = dsa_indexer(cfg)
        cfg.mark("index_n_heads")
        layers = [
            LayerSpec(index=i, kind="dsa-shared-topk", parts=(latent,)) if dsa_skips_indexer(cfg, i)
            else LayerSpec(index=i, kind="dsa", parts=(latent, indexer))
            for i in range(n)
        ]
        shared = sum(1 for layer in layers if len(layer.parts) == 1)
        if shared:
            notes.append(f"{shared} sub-layer(s) reuse the previous top-k and keep no indexer keys")
    return Layout(layers=layers, notes=notes + mtp_note(cfg), warnings=warnings)
