"""GPT-2 (Conv1D blocks, learned positions), priced from its config alone."""

from __future__ import annotations

from hfkv.model.weights.builder import Builder, Cfg, dense_only, is_untied


def gpt2(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    """GPT-2: token and position embeddings, per block c_attn (3h) and c_proj, c_fc (4h or n_inner)
    and c_proj, all biased, two biased LayerNorms; the head is tied. The causal-mask buffers old
    checkpoints saved (``attn.bias``, n_positions² per layer) are not weights an engine loads."""
    dense_only(c, mt)
    hidden = c.req("n_embd", "hidden_size")
    layers = c.req("n_layer", "num_hidden_layers")
    vocab = c.req("vocab_size")
    positions = c.req("n_positions", "max_position_embeddings")
    inner = c.opt("n_inner", default=4 * hidden)
    b.add("transformer.wte", "embedding", "embedding", (vocab, hidden))
    b.add("transformer.wpe", "embedding", "embedding", (positions, hidden))
    b.norm("transformer.ln_f", hidden, bias=True)
    if is_untied(c, True, top):
        b.add("lm_head", "embedding", "lm_head", (vocab, hidden))
    p = "transformer.h"
    b.linear(f"{p}.attn.c_attn", 3 * hidden, hidden, "attention", bias=True, count=layers)
    b.linear(f"{p}.attn.c_proj", hidden, hidden, "attention", bias=True, count=layers)
    b.linear(f"{p}.mlp.c_fc", inner, hidden, "dense_mlp", bias=True, count=layers)
    b.linear(f"{p}.mlp.c_proj", hidden, inner, "dense_mlp", bias=True, count=layers)
    b.norm(f"{p}.ln_1", hidden, bias=True, count=2 * layers)
