"""Decoder families priced from their config shapes, added for issue 30: GPT-2 (Conv1D blocks, learned
positions), MiniMax-M2 (GQA with per-layer q/k norms, every layer routed experts with a biased sigmoid
router) and Llama 4's text model (MoE layers with a shared expert, interleaved with dense ones).
GLM-5 (``glm_moe_dsa``) is DeepSeek-V3.2's layout and is priced by ``decoders.deepseek``."""

from __future__ import annotations

from hfkv.model.weights.builder import Builder, Cfg, dense_only, embed_head, expert_count, head_counts, is_untied


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


def minimax_m2(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    """MiniMax-M2: GQA without biases, q_norm over all query heads and k_norm over all KV heads
    (``use_qk_norm``, per layer), routed experts in every layer (w1/w3/w2 of ``intermediate_size``),
    a router with an fp32 ``e_score_correction_bias``; no shared expert. The MTP modules the config
    names (``num_mtp_modules``) are not in the published checkpoint."""
    hidden = c.req("hidden_size")
    layers = c.req("num_hidden_layers")
    vocab = c.req("vocab_size")
    heads, kv, hd = head_counts(c, hidden)
    experts = expert_count(c)
    inter = c.req("intermediate_size", why="expert size")
    embed_head(b, c, vocab, hidden, is_untied(c, False, top))
    p = "model.layers"
    _attention(b, f"{p}.self_attn", hidden, heads, kv, hd, layers)
    if c.flag("use_qk_norm", True):
        b.norm(f"{p}.self_attn.q_norm", heads * hd, "attention", count=layers)
        b.norm(f"{p}.self_attn.k_norm", kv * hd, "attention", count=layers)
    b.add(f"{p}.block_sparse_moe.gate", "other", "router", (experts, hidden), count=layers)
    b.param(f"{p}.block_sparse_moe.e_score_correction_bias", (experts,), "other", count=layers, dtype_bytes=4)
    b.mlp(f"{p}.block_sparse_moe.experts", hidden, inter, "routed_experts", count=experts * layers,
          names=("w1", "w3", "w2"))
    b.norm(f"{p}.input_layernorm", hidden, count=2 * layers)


def llama4_text(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    """Llama 4's text model: GQA without biases (its QK norm has no weight), a MoE layer every
    ``interleave_moe_layer_step`` layers (or those ``moe_layers`` lists) with a router, routed
    experts of ``intermediate_size`` and one shared expert of the same size, dense layers of
    ``intermediate_size_mlp``; untied head."""
    hidden = c.req("hidden_size")
    layers = c.req("num_hidden_layers")
    vocab = c.req("vocab_size")
    heads, kv, hd = head_counts(c, hidden)
    experts = expert_count(c)
    inter = c.req("intermediate_size", why="expert size")
    listed = c.get("moe_layers")
    if isinstance(listed, list):
        moe = len({i for i in listed if isinstance(i, int) and 0 <= i < layers})
    else:
        step = c.opt("interleave_moe_layer_step", default=1)
        moe = sum(1 for i in range(layers) if (i + 1) % step == 0)
    dense = layers - moe
    embed_head(b, c, vocab, hidden, is_untied(c, False, top), prefix="language_model.model",
               head="language_model.lm_head")
    p = "language_model.model.layers"
    _attention(b, f"{p}.self_attn", hidden, heads, kv, hd, layers)
    b.norm(f"{p}.input_layernorm", hidden, count=2 * layers)
    b.add(f"{p}.feed_forward.router", "other", "router", (experts, hidden), count=moe)
    b.mlp(f"{p}.feed_forward.experts", hidden, inter, "routed_experts", count=experts * moe)
    b.mlp(f"{p}.feed_forward.shared_expert", hidden, inter, "shared_experts", count=moe)
    if dense:
        b.mlp(f"{p}.feed_forward", hidden, c.req("intermediate_size_mlp", why="dense layer size"), "dense_mlp",
              count=dense)


def _attention(b: Builder, p: str, hidden: int, heads: int, kv: int, hd: int, layers: int) -> None:
    """Unbiased q/k/v/o projections of ``layers`` identical layers, as one record each."""
    b.linear(f"{p}.q_proj", heads * hd, hidden, "attention", count=layers)
    b.linear(f"{p}.k_proj", kv * hd, hidden, "attention", count=layers)
    b.linear(f"{p}.v_proj", kv * hd, hidden, "attention", count=layers)
    b.linear(f"{p}.o_proj", hidden, heads * hd, "attention", count=layers)
