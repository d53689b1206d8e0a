"""Tencent HunYuan: Hunyuan-Large (``hunyuan``, remote code) and the HunYuan V1 dense / MoE families
(``hunyuan_v1_dense``, ``hunyuan_v1_moe``): standard GQA layers, with cross-layer attention (CLA).

CLA (``use_cla: true``, ``cla_share_factor`` F, default 1): layer i computes its own K and V only when
i % F == 0; layers with i % F != 0 attend over the K and V of layer i − (i % F), which owns the cache
(σ = 0 on the others, ``source_layer`` set). That is the reference modelling code's rule
(Hunyuan-Large's ``modeling_hunyuan.py``; SGLang's ``hunyuan.py`` ``HunYuanDecoderLayer``: attention_type
``"cross"`` iff ``layer_id % cla_factor != 0``, and a cross layer reuses the ``kv_states`` the previous
layer returns, itself the owner's). ``cla_share_factor`` without ``use_cla: true`` shares nothing
(Hy-MT2-7B writes ``use_cla: false, cla_share_factor: 2``).

What the engines do with the keys differs, and a note says so: SGLang 0.5.23 (``hunyuan.py``) shares K
and V but gives every layer, sharing or not, its own slot in the KV pool (``RadixAttention`` with its own
``layer_id``), so its pool is sized for every layer; transformers 5.24's ``HunYuanDenseV1Config`` /
``HunYuanMoEV1Config`` have no such keys and build K/V projections on every layer, and vLLM 0.33.0
serves the V1 classes through its Transformers backend, so it caches every layer too; vLLM 0.33.0
does not register ``HunYuanForCausalLM`` (Hunyuan-Large).

Head size: ``head_dim`` when written, else hidden ÷ heads (Hunyuan-Large: 6400 ÷ 80 = 80, its
modelling code's rule). ``attention_head_dim`` (the V1 checkpoints write it beside ``head_dim``) is
read too: alone and different from hidden ÷ heads, it is a warning (SGLang's ``get_head_dim`` falls
back to it, transformers does not).
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import LayerSpec, Layout

from hfkv.mappings.readers.attention_keys import GQA_READS, HEAD_DIM_KEYS, HIDDEN_KEYS, num_heads
from hfkv.mappings.readers.layer_builders import pattern_layout
from hfkv.mappings.registry import register


def cla_factor(cfg: ConfigView) -> int:
    """F of ``cla_share_factor`` when ``use_cla`` is true, else 1 (no sharing)."""
    factor = cfg.integer("cla_share_factor", default=1, minimum=1)
    return factor if cfg.boolean("use_cla") else 1


def share_layers(layout: Layout, factor: int) -> Layout:
    """Layers with i % ``factor`` != 0 read the K and V of layer i − (i % factor): σ = 0."""
    layers = []
    for layer in layout.layers:
        owner = layer.index - layer.index % factor
        if owner == layer.index:
            layers.append(layer)
            continue
        parts = tuple(part.model_copy(update={"source_layer": owner}) for part in layer.parts)
        layers.append(LayerSpec(index=layer.index, kind=layer.kind, parts=parts))
    return Layout(layers=layers, notes=layout.notes, warnings=layout.warnings)


def _check_attention_head_dim(cfg: ConfigView) -> None:
    """``attention_head_dim`` alone (no ``head_dim``) and not hidden ÷ heads: the engines disagree."""
    alias = cfg.optional_int("attention_head_dim", minimum=1)
    if alias is None or any(cfg.present(key) for key in HEAD_DIM_KEYS):
        return
    heads = num_heads(cfg)
    hidden = cfg.optional_int(*HIDDEN_KEYS, minimum=1)
    if hidden is None or hidden % heads or hidden // heads != alias:
        cfg.warn(f"estimate, not exact: {cfg.path('attention_head_dim')} = {alias} without head_dim: counted as "
                 "hidden ÷ heads, as transformers' HunYuan classes do (SGLang's get_head_dim takes attention_head_dim)")


@register(
    family="kv-sharing",
    model_types=("hunyuan", "hunyuan_v1_dense", "hunyuan_v1_moe"),
    architectures=("HunYuanForCausalLM", "HunYuanDenseV1ForCausalLM", "HunYuanMoEV1ForCausalLM"),
    reads=GQA_READS + ("use_cla", "cla_share_factor", "attention_head_dim"),
    fixtures={"hunyuan": "tencent__Tencent-Hunyuan-Large"},
)
def hunyuan(cfg: ConfigView) -> Layout:
    """GQA on every layer; with CLA, layers i % F != 0 own no K/V (σ = 0) and read layer i − (i % F)'s."""
    _check_attention_head_dim(cfg)
    layout = pattern_layout(cfg, default_window=None, default_rule=None)
    factor = cla_factor(cfg)
    if factor == 1:
        return layout
    layout = share_layers(layout, factor)
    owners = sum(1 for layer in layout.layers if layer.copies)
    layout.notes.append(
        f"cross-layer attention (use_cla, cla_share_factor {factor}): {owners} of {len(layout.layers)} layers "
        f"compute K and V; layer i with i % {factor} != 0 reads layer i − (i % {factor})'s (σ = 0)"
    )
    layout.notes.append(
        "engines: SGLang 0.5.23 shares the K and V but sizes its pool for every layer; vLLM 0.33.0 serves "
        "HunYuan V1 through its Transformers backend, whose HunYuan classes ignore use_cla (every layer caches)"
    )
    return layout
