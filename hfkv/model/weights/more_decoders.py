"""GPT-2 (Conv1D blocks, learned positions), GPT-Neo (learned positions) and RecurrentGemma (RG-LRU blocks),
priced from their configs alone."""

from __future__ import annotations

from hfkv.model.weights.builder import Builder, Cfg, Missing, dense_only, is_untied


def _learned_positions(b: Builder, c: Cfg, top: dict | None, vocab: int, hidden: int, positions: int) -> None:
    """GPT-2's and GPT-Neo's ends: token and learned position tables, the final biased LayerNorm, and a
    head of its own only where the config unties it."""
    b.add("transformer.wte", "embedding", "embedding", (vocab, hidden))
    b.add("transformer.wpe", "embedding", "embedding", (positions, hidden))
    b.norm("transformer.ln_f", hidden, bias=True)
    if is_untied(c, True, top):
        b.add("lm_head", "embedding", "lm_head", (vocab, hidden))


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
    _learned_positions(b, c, top, vocab, hidden, positions)
    p = "transformer.h"
    b.linear(f"{p}.attn.c_attn", 3 * hidden, hidden, "attention", bias=True, count=layers)
    b.linear(f"{p}.attn.c_proj", hidden, hidden, "attention", bias=True, count=layers)
    b.linear(f"{p}.mlp.c_fc", inner, hidden, "dense_mlp", bias=True, count=layers)
    b.linear(f"{p}.mlp.c_proj", hidden, inner, "dense_mlp", bias=True, count=layers)
    b.norm(f"{p}.ln_1", hidden, bias=True, count=2 * layers)


def gpt_neo(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    """GPT-Neo (transformers' GPTNeoBlock): token and position embeddings, per block unbiased q/k/v and a
    biased out_proj, a biased c_fc / c_proj MLP of intermediate_size (4 × hidden when null, as the block
    reads it), two biased LayerNorms; ln_f; the head tied. Local and global layers hold the same weights."""
    dense_only(c, mt)
    hidden = c.req("hidden_size")
    layers = c.req("num_layers")
    vocab = c.req("vocab_size")
    positions = c.req("max_position_embeddings")
    inner = c.opt("intermediate_size", default=4 * hidden)
    _learned_positions(b, c, top, vocab, hidden, positions)
    p = "transformer.h"
    for n in ("q_proj", "k_proj", "v_proj"):
        b.linear(f"{p}.attn.attention.{n}", hidden, hidden, "attention", count=layers)
    b.linear(f"{p}.attn.attention.out_proj", hidden, hidden, "attention", bias=True, count=layers)
    b.linear(f"{p}.mlp.c_fc", inner, hidden, "dense_mlp", bias=True, count=layers)
    b.linear(f"{p}.mlp.c_proj", hidden, inner, "dense_mlp", bias=True, count=layers)
    b.norm(f"{p}.ln_1", hidden, bias=True, count=2 * layers)


def recurrent_gemma(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    """RecurrentGemma (transformers' RecurrentGemmaDecoderLayer): each layer a temporal block, the pattern
    ``block_types`` repeated over the layers, and a gated MLP of intermediate_size / 2 with biases, behind
    two RMSNorms (temporal_pre_norm, channel_pre_norm). A recurrent block: linear_x and linear_y to
    lru_width, a depthwise conv1d_width conv, the RG-LRU (input and recurrent gates block-diagonal over the
    heads, lru_width / heads wide, each with a bias, and recurrent_param), linear_out back, all biased. An
    attention block: q, k, v (biased as attention_bias says) and a biased o_proj, head_dim = hidden / heads
    (the config class derives it so). The head is tied to the embeddings."""
    dense_only(c, mt)
    hidden = c.req("hidden_size")
    layers = c.req("num_hidden_layers")
    vocab = c.req("vocab_size")
    heads = c.req("num_attention_heads")
    kv = c.opt("num_key_value_heads", default=heads)
    width = c.opt("lru_width", default=hidden)
    kernel = c.req("conv1d_width")
    inner = c.req("intermediate_size") // 2
    pattern = c.get("block_types")
    if not isinstance(pattern, list) or not pattern or any(t not in ("recurrent", "attention") for t in pattern):
        raise Missing("recurrent_gemma needs block_types (recurrent / attention)", ["block_types"])
    kinds = (pattern * (layers // len(pattern) + 1))[:layers]
    hd = hidden // heads
    bias = c.flag("attention_bias")
    b.add("model.embed_tokens", "embedding", "embedding", (vocab, hidden))
    b.norm("model.final_norm", hidden)
    if is_untied(c, True, top):
        b.add("lm_head", "embedding", "lm_head", (vocab, hidden))
    for p, kind in b.layers("model.layers", kinds):
        t = f"{p}.temporal_block"
        if kind == "recurrent":
            b.linear(f"{t}.linear_x", width, hidden, "mixers", bias=True)
            b.linear(f"{t}.linear_y", width, hidden, "mixers", bias=True)
            b.add(f"{t}.conv_1d", "mixers", "conv", (width, 1, kernel))
            b.add(f"{t}.conv_1d.bias", "mixers", "bias", (width,))
            block = width // heads
            for gate in ("input_gate", "recurrent_gate"):
                b.param(f"{t}.rg_lru.{gate}_weight", (heads, block, block), "mixers")
                b.param(f"{t}.rg_lru.{gate}_bias", (heads, block), "mixers")
            b.param(f"{t}.rg_lru.recurrent_param", (width,), "mixers")
            b.linear(f"{t}.linear_out", hidden, width, "mixers", bias=True)
        else:
            b.linear(f"{t}.q_proj", heads * hd, hidden, "attention", bias)
            b.linear(f"{t}.k_proj", kv * hd, hidden, "attention", bias)
            b.linear(f"{t}.v_proj", kv * hd, hidden, "attention", bias)
            b.linear(f"{t}.o_proj", hidden, heads * hd, "attention", bias=True)
        b.mlp(f"{p}.mlp_block", hidden, inner, "dense_mlp", bias=True)
        b.norm(f"{p}.temporal_pre_norm", hidden, count=2)  # and channel_pre_norm
