"""RWKV: transformers' ``rwkv`` (RWKV-4) as its reference implementation keeps the state; the later
RWKV generations refused by name.

- RWKV-4 (``RwkvConfig``, ``RwkvForCausalLM``): no KV cache; every layer keeps a fixed state,
  ``RwkvModel.forward``'s five tensors of (batch, ``hidden_size``, layers): the channel-mix and time-mix
  token-shift inputs (model dtype) and the WKV numerator, denominator and running maximum (float32):
  C = 3·H·e_s + 2·H·e_conv per layer (``RwkvState``). ``attention_hidden_size`` sizes the WKV vectors
  in the attention, but the reference allocates its state by ``hidden_size``: a different value is a
  warning.
- RWKV-5, -6 and -7 (remote code: ``rwkv5``, ``rwkv6``, ``rwkv7``) keep a matrix-valued state per head
  (``head_size`` × ``head_size``), not RWKV-4's vectors: refused, naming the family, until modelled.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import UnsupportedModelError
from hfkv.model.specs import LayerSpec, Layout, RwkvState

from hfkv.mappings.readers.attention_keys import hidden_size, num_layers
from hfkv.mappings.registry import register


@register(
    family="recurrent",
    model_types=("rwkv",),
    architectures=("RwkvForCausalLM",),
    reads=("num_hidden_layers", "hidden_size", "attention_hidden_size"),
    ignores={"context_length": "the longest context trained on (max_position_embeddings): the state is fixed"},
    fixtures={"rwkv": "RWKV__rwkv-4-169m-pile"},
)
def rwkv(cfg: ConfigView) -> Layout:
    """Every layer an RWKV-4 block: no entries per token, C = 3·H·e_s + 2·H·e_conv."""
    n = num_layers(cfg)
    hidden = hidden_size(cfg)
    attention = cfg.optional_int("attention_hidden_size", minimum=1)
    warnings = []
    if attention is not None and attention != hidden:
        warnings.append(f"estimate, not exact: {cfg.path('attention_hidden_size')} = {attention} differs from "
                        f"hidden_size = {hidden}: the reference allocates the WKV state by hidden_size (used here)")
    state = RwkvState(hidden=hidden)
    layers = [LayerSpec(index=i, kind="rwkv", parts=(state,)) for i in range(n)]
    notes = [f"{n} RWKV-4 layers: no KV cache; per layer 3 × {hidden} WKV values (state dtype) and 2 × {hidden} "
             "token-shift values (conv dtype), transformers' RwkvModel state"]
    return Layout(layers=layers, notes=notes, warnings=warnings)


LATER_RWKV = {
    "rwkv5": "Rwkv5ForCausalLM", "rwkv6": "Rwkv6ForCausalLM", "rwkv7": "Rwkv7ForCausalLM",
}
LATER_RWKV_REASON = ("RWKV-5/6/7 (Eagle, Finch, Goose): a matrix-valued WKV state per head, not RWKV-4's vectors; "
                     "not modelled yet (transformers' rwkv, RWKV-4, is)")


@register(
    family="refused",
    model_types=tuple(LATER_RWKV),
    architectures=tuple(LATER_RWKV.values()) + ("RWKV7ForCausalLM",),
    refuses=LATER_RWKV_REASON,
    first=True,
    reads=("model_type", "architectures"),
)
def later_rwkv(cfg: ConfigView) -> Layout:
    """Always raises, naming the RWKV generation."""
    name = cfg.model_type or next(iter(cfg.architectures), "RWKV")
    raise UnsupportedModelError(f"{name}: {LATER_RWKV_REASON}")
