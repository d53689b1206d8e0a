"""AliceAI (vLLM): a Qwen3-Next-shaped config (vLLM's AliceAIConfig extends Qwen3NextConfig). Pattern:
``layer_types``, else full iff (i+1) % ``full_attention_interval`` == 0. Linear layers are KDA with the
``linear_*`` geometry: recurrent N_v·H_k·H_v, conv over q, k and v ((w − 1)·(N_v·H_v + 2·N_qk·H_k));
full layers are gated GQA.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import Layout

from hfkv.mappings.readers.attention_keys import num_layers
from hfkv.mappings.readers.layer_builders import gqa_parts, hybrid_layout
from hfkv.mappings.readers.layer_patterns import ATTENTION, LINEAR
from hfkv.mappings.qwen import interval_roles
from hfkv.mappings.registry import register
from hfkv.mappings.readers.state_shapes import QWEN_LINEAR_READS, gdn_state


@register(
    family="linear",
    model_types=("alice_ai",),
    architectures=("AliceAIForCausalLM",),
    reads=QWEN_LINEAR_READS + (
        "full_attention_interval", "num_attention_heads", "num_key_value_heads", "head_dim", "mtp_num_hidden_layers",
    ),
)
def alice_ai(cfg: ConfigView) -> Layout:
    """KDA layers with Qwen3-Next's ``linear_*`` geometry, gated GQA full layers."""
    n = num_layers(cfg)
    roles, warnings = interval_roles(cfg, n)
    state = gdn_state(cfg, variant="kda")
    warnings.append(
        "AliceAI's KDA state is sized from the Qwen3-Next linear_* keys (vLLM's AliceAIConfig extends "
        "Qwen3NextConfig): recurrent N_v·H_k·H_v, conv (w − 1)·(N_v·H_v + 2·N_qk·H_k) over split q, k, v convs"
    )
    if state.num_qk_heads != state.num_v_heads:
        warnings.append(
            f"linear_num_key_heads {state.num_qk_heads} ≠ linear_num_value_heads {state.num_v_heads}: "
            "the KDA recurrent state is counted per value head"
        )
    parts = {LINEAR: ("kda", lambda: (state,)), ATTENTION: gqa_parts(cfg)}
    return hybrid_layout(cfg, roles, parts, warnings=warnings)
