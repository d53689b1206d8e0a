"""NVIDIA Nemotron families: Nemotron-H (Mamba-2 hybrid), Nemotron-NAS (DeciLM) and Jet-Nemotron.

- Nemotron-H: ``layers_block_type`` or ``hybrid_override_pattern`` (M = Mamba, * = attention,
  - = MLP, E = MoE); the pattern's length is the layer count. MLP and MoE layers are kept as
  ``LayerSpec(kind="mlp")`` with no parts, so layer indices match the pattern.
- Nemotron-NAS: per-layer GQA from ``block_configs`` and attention-free (no-op) layers.
- Jet-Nemotron (SGLang): ``layer_types`` ∈ {attn, swa, jet}. ``swa`` keeps a window of
  ``efficient_attention_config.swa.window_size``. A JetBlock keeps a recurrent (H, d_k, d_v) state,
  d_v = d_k·``expand_v``, and a dynamic-conv state of ``conv_size`` rows over the H·d_v value
  channels, as SGLang sizes it (``LinearAttentionState`` with ``conv_kernel = conv_size + 1``).
"""

from __future__ import annotations

from hfkv.model.config import MAX_SIZE, ConfigView
from hfkv.errors import ConfigError
from hfkv.model.specs import LayerSpec, Layout, LinearAttentionState

from hfkv.mappings.readers.attention_keys import (
    attention_part,
    head_dim,
    layer_window,
    num_heads,
    num_layers,
    positive_number,
    window_of,
    windowed_attention,
)
from hfkv.mappings.readers.layer_builders import PartsFactory, hybrid_layout, ssm_layout
from hfkv.mappings.readers.layer_patterns import (
    ATTENTION,
    LINEAR,
    MLP,
    SLIDING,
    check_length,
    required_named_roles,
    roles_from_list,
    roles_from_pattern,
)
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import NEMOTRON_H, mamba2_state


_NEMOTRON_ROLES = (ATTENTION, LINEAR, MLP)


@register(
    family="ssm",
    model_types=("nemotron_h",),
    architectures=("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM"),
    reads=(
        "hybrid_override_pattern", "layers_block_type", "mamba_num_heads", "mamba_head_dim", "n_groups",
        "ssm_state_size", "conv_kernel", "num_key_value_heads", "head_dim|attention_head_dim", "sliding_window",
        "mamba_ssm_cache_dtype", "num_nextn_predict_layers", "mamba_expand|expand", "hidden_size",
    ),
    fixtures={"nemotron_h": "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"},
)
def nemotron_h(cfg: ConfigView) -> Layout:
    """Mamba-2, attention and MLP/MoE layers per the pattern, whose length is the layer count."""
    roles = roles_from_list(cfg, "layers_block_type", None, _NEMOTRON_ROLES)
    key = "layers_block_type"
    if roles is None:
        roles, key = roles_from_pattern(cfg, "hybrid_override_pattern"), "hybrid_override_pattern"
    if roles is None:
        raise ConfigError(
            cfg.path("hybrid_override_pattern"), "missing: neither it nor layers_block_type gives the layers"
        )
    warnings = check_length(cfg, key, roles)
    heads = num_heads(cfg)
    key_dim = cfg.optional_int("head_dim", minimum=1) or cfg.optional_int("attention_head_dim", minimum=1)
    attention = windowed_attention(cfg, key_dim or head_dim(cfg, heads)) if ATTENTION in roles else None
    notes = ["MLP/MoE layers are listed with no cache parts"] if MLP in roles else []
    return ssm_layout(cfg, roles, mamba2_state(cfg, NEMOTRON_H), attention, notes, warnings)


def _nas_blocks(cfg: ConfigView, n: int) -> list[dict]:
    blocks = cfg.value("block_configs")
    if blocks is None:
        raise ConfigError(cfg.path("block_configs"), "missing (needed for the per-layer attention)")
    if not isinstance(blocks, list):
        raise ConfigError(cfg.path("block_configs"), f"expected a list, got {type(blocks).__name__}")
    if len(blocks) < n:
        raise ConfigError(cfg.path("block_configs"), f"has {len(blocks)} entries but the model has {n} layers")
    attentions = []
    for i, block in enumerate(blocks[:n]):
        attention = block.get("attention") if isinstance(block, dict) else None
        if not isinstance(attention, dict):
            raise ConfigError(cfg.path(f"block_configs[{i}].attention"), "missing or not an object")
        attentions.append(attention)
    return attentions


def _nas_flag(cfg: ConfigView, attention: dict, i: int, key: str) -> bool:
    """A true/false switch of one attention block (absent or null: false)."""
    value = attention.get(key)
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ConfigError(cfg.path(f"block_configs[{i}].attention.{key}"), f"expected true or false, got {value!r}"[:200])


def _nas_kv_heads(cfg: ConfigView, attention: dict, i: int, heads: int) -> int:
    key = cfg.path(f"block_configs[{i}].attention.n_heads_in_group")
    group = attention.get("n_heads_in_group")
    if isinstance(group, bool) or not isinstance(group, int) or not 1 <= group <= MAX_SIZE:
        raise ConfigError(key, f"expected a positive integer, got {group!r}"[:200])
    if heads % group:
        raise ConfigError(key, f"{group} does not divide {heads} attention heads")
    return heads // group


def _nas_window(cfg: ConfigView, attention: dict, i: int) -> dict:
    """The part keywords of block i's ``window_length`` (see ``layer_window``)."""
    window = attention.get("window_length")
    if window is None:
        return {}
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= MAX_SIZE:
        raise ConfigError(
            cfg.path(f"block_configs[{i}].attention.window_length"), f"expected a positive integer, got {window!r}"[:200]
        )
    return layer_window(cfg, window).args()  # its note once, via cfg.note


@register(
    family="nas",
    model_types=("nemotron-nas", "nemotron_nas", "deci"),
    architectures=("DeciLMForCausalLM",),
    reads=("num_hidden_layers", "num_attention_heads", "hidden_size", "head_dim",
           "block_configs[].attention.{no_op, replace_with_linear, n_heads_in_group, window_length}"),
    fixtures={"nemotron-nas": "nvidia__Llama-3_3-Nemotron-Super-49B-v1"},
)
def nemotron_nas(cfg: ConfigView) -> Layout:
    """Nemotron-NAS: layer i has ``num_attention_heads // block_configs[i].attention.n_heads_in_group``
    KV heads; ``no_op`` and ``replace_with_linear`` attention blocks hold no cache (a layer with no
    parts); a ``window_length`` makes the layer sliding."""
    n = num_layers(cfg)
    heads = num_heads(cfg)
    dim = head_dim(cfg, heads)
    cfg.mark("num_key_value_heads")  # null in these configs: the per-block group size decides
    layers, kv_counts, notes, warnings = [], set(), [], []
    skipped = {"no-op": 0, "linear": 0}
    for i, attention in enumerate(_nas_blocks(cfg, n)):
        if _nas_flag(cfg, attention, i, "no_op"):
            layers.append(LayerSpec(index=i, kind="no-op", parts=()))
            skipped["no-op"] += 1
            continue
        if _nas_flag(cfg, attention, i, "replace_with_linear"):
            layers.append(LayerSpec(index=i, kind="linear", parts=()))
            skipped["linear"] += 1
            continue
        kv = _nas_kv_heads(cfg, attention, i, heads)
        kv_counts.add(kv)
        part = attention_part(cfg, heads=heads, kv=kv, key_dim=dim, **_nas_window(cfg, attention, i))
        layers.append(LayerSpec(index=i, kind=part.kind, parts=(part,)))
        if attention.get("num_sink_tokens"):
            warnings.append(f"layer {i}: num_sink_tokens ignored (sink tokens are not counted)")
    if skipped["no-op"]:
        notes.append(f"{skipped['no-op']} layer(s) have a no-op attention block: no cache")
    if skipped["linear"]:
        notes.append(f"{skipped['linear']} layer(s) replace attention with a linear map: no cache")
    if len(kv_counts) > 1:
        notes.append(
            f"KV heads vary by layer ({', '.join(map(str, sorted(kv_counts)))}): SGLang refuses variable "
            "GQA, and vLLM's head count takes the first attention block"
        )
    return Layout(layers=layers, notes=notes, warnings=warnings)


_JET_ROLES = {"attn": ATTENTION, "swa": SLIDING, "jet": LINEAR}
_JET = "efficient_attention_config.jet"


def jetblock_state(cfg: ConfigView) -> LinearAttentionState:
    """JetBlock: recurrent (H, d_k, d_v) with d_v = d_k·expand_v; dynamic conv of conv_size rows × H·d_v."""
    heads = cfg.integer(f"{_JET}.num_heads", minimum=1)
    key_dim = cfg.integer(f"{_JET}.head_dim", minimum=1)
    expand = positive_number(cfg, f"{_JET}.expand_v", 1.0)
    value_dim = key_dim * expand
    if value_dim != int(value_dim) or value_dim < 1:
        raise ConfigError(cfg.path(f"{_JET}.expand_v"), f"head_dim {key_dim} × {expand} is not a whole dimension")
    conv_rows = cfg.integer(f"{_JET}.conv_size", minimum=1)
    # The spec stores (conv_kernel − 1) rows; SGLang keeps conv_size rows of the value channels only.
    return LinearAttentionState(
        variant="jetblock", num_qk_heads=0, num_v_heads=heads, head_k_dim=key_dim, head_v_dim=int(value_dim),
        conv_kernel=conv_rows + 1,
    )


@register(
    family="linear",
    model_types=("jet_nemotron",),
    architectures=("JetNemotronForCausalLM",),
    reads=(
        "layer_types", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size",
        "efficient_attention_config.jet.{num_heads, head_dim, expand_v, conv_size}",
        "efficient_attention_config.swa.window_size",
    ),
)
def jet_nemotron(cfg: ConfigView) -> Layout:
    """Full attention, sliding attention and JetBlock layers per ``layer_types``."""
    n = num_layers(cfg)
    roles = required_named_roles(cfg, "layer_types", n, _JET_ROLES, "tell attn, swa and jet layers apart")
    notes: list[str] = []
    parts: dict[str, tuple[str, PartsFactory]] = {
        ATTENTION: ("full", lambda: (attention_part(cfg),)),
        LINEAR: ("jetblock", lambda: (jetblock_state(cfg),)),
    }
    if SLIDING in roles:
        window = layer_window(cfg, window_of(cfg, "efficient_attention_config.swa.window_size"), notes)
        parts[SLIDING] = (window.kind, lambda: (attention_part(cfg, **window.args()),))
        notes.append("swa layers counted over their window; SGLang (no hybrid-SWA pool for this model) "
                     "allocates them as full attention")
    cfg.mark("efficient_attention_config")
    warnings = ["JetBlock conv state counted as conv_size rows × H·d_v (SGLang's shape; no q/k conv channels)"]
    return hybrid_layout(cfg, roles, parts, notes, warnings)
