"""Encoder-decoder families: T5 and BART."""

from __future__ import annotations

from hfkv.model.weights.builder import Cfg, Builder, dense_only, is_untied


def t5(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    dense_only(c, mt)
    d = c.req("d_model")
    layers = c.req("num_layers")
    dec_layers = c.opt("num_decoder_layers", default=layers)
    vocab = c.req("vocab_size")
    heads, dkv, dff = c.req("num_heads"), c.req("d_kv"), c.req("d_ff")
    buckets = c.opt("relative_attention_num_buckets", default=32)
    gated = str(c.get("feed_forward_proj") or "relu").startswith("gated")
    inner = heads * dkv
    b.add("shared", "embedding", "embedding", (vocab, d))
    if is_untied(c, True, top):
        b.add("lm_head", "embedding", "lm_head", (vocab, d))

    def attn(p):
        for n in ("q", "k", "v"):
            b.linear(f"{p}.{n}", inner, d, "attention")
        b.linear(f"{p}.o", d, inner, "attention")

    def ff(p):
        if gated:
            b.linear(f"{p}.wi_0", dff, d, "dense_mlp")
            b.linear(f"{p}.wi_1", dff, d, "dense_mlp")
        else:
            b.linear(f"{p}.wi", dff, d, "dense_mlp")
        b.linear(f"{p}.wo", d, dff, "dense_mlp")

    for stack, n, parts in (("encoder", layers, 2), ("decoder", dec_layers, 3)):
        # the first block alone holds the relative position bias
        b.add(f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias", "attention", "embedding",
              (buckets, heads))
        for block, _ in b.layers(f"{stack}.block", [0] * n):
            p = f"{block}.layer"
            attn(f"{p}.0.SelfAttention")
            if stack == "decoder":
                attn(f"{p}.1.EncDecAttention")
            ff(f"{p}.{parts - 1}.DenseReluDense")
            b.norm(f"{p}.0.layer_norm", d, count=parts)
        b.norm(f"{stack}.final_layer_norm", d)


def bart(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    dense_only(c, mt)
    d = c.req("d_model")
    vocab = c.req("vocab_size")
    positions = c.req("max_position_embeddings")
    b.add("model.shared", "embedding", "embedding", (vocab, d))
    if is_untied(c, True, top):
        b.add("lm_head", "embedding", "lm_head", (vocab, d))
    b.param("final_logits_bias", (vocab,))
    for stack in ("encoder", "decoder"):
        n = c.req(f"{stack}_layers")
        ffn = c.req(f"{stack}_ffn_dim")
        b.add(f"model.{stack}.embed_positions", "embedding", "embedding", (positions + 2, d))
        b.norm(f"model.{stack}.layernorm_embedding", d, bias=True)
        for p, _ in b.layers(f"model.{stack}.layers", [0] * n):
            blocks = ("self_attn", "encoder_attn") if stack == "decoder" else ("self_attn",)
            for a in blocks:
                for nm in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    b.linear(f"{p}.{a}.{nm}", d, d, "attention", bias=True)
            b.linear(f"{p}.fc1", ffn, d, "dense_mlp", bias=True)
            b.linear(f"{p}.fc2", d, ffn, "dense_mlp", bias=True)
            b.norm(f"{p}.self_attn_layer_norm", d, bias=True, count=len(blocks) + 1)
        if c.flag("add_final_layer_norm"):
            b.norm(f"model.{stack}.layer_norm", d, bias=True)


def whisper(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    """Whisper (transformers' WhisperForConditionalGeneration): an encoder of two biased 1-D convs over
    the mel bins, learned positions and pre-LN blocks (q, v and out biased, k not; fc1/fc2 biased; biased
    LayerNorms), a decoder of the same blocks with cross-attention, tied proj_out."""
    dense_only(c, mt)
    d = c.req("d_model")
    vocab = c.req("vocab_size")
    mels = c.req("num_mel_bins")
    b.add("model.encoder.conv1", "towers", "conv", (d, mels, 3))
    b.add("model.encoder.conv2", "towers", "conv", (d, d, 3))
    b.add("model.encoder.conv1.bias", "towers", "bias", (d,), count=2)
    b.add("model.encoder.embed_positions", "towers", "embedding", (c.req("max_source_positions"), d))
    b.add("model.decoder.embed_tokens", "embedding", "embedding", (vocab, d))
    b.add("model.decoder.embed_positions", "embedding", "embedding", (c.req("max_target_positions"), d))
    if is_untied(c, True, top):
        b.add("proj_out", "embedding", "lm_head", (vocab, d))
    for stack, role in (("encoder", "towers"), ("decoder", None)):
        n, ffn = c.req(f"{stack}_layers"), c.req(f"{stack}_ffn_dim")
        attentions = ("self_attn", "encoder_attn") if stack == "decoder" else ("self_attn",)
        for p, _ in b.layers(f"model.{stack}.layers", [0] * n):
            for a in attentions:
                for name in ("q_proj", "v_proj", "out_proj"):
                    b.linear(f"{p}.{a}.{name}", d, d, role or "attention", bias=True)
                b.linear(f"{p}.{a}.k_proj", d, d, role or "attention")
            b.linear(f"{p}.fc1", ffn, d, role or "dense_mlp", bias=True)
            b.linear(f"{p}.fc2", d, ffn, role or "dense_mlp", bias=True)
            b.norm(f"{p}.self_attn_layer_norm", d, role or "other", bias=True, count=len(attentions) + 1)
        b.norm(f"model.{stack}.layer_norm", d, role or "other", bias=True)
