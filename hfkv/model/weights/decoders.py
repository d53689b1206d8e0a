"""Decoder families whose checkpoint layout no layer spec gives, priced from the config alone: DeepSeek V4
(compressed attention, hyper-connections, hash-routed layers), gpt-oss (sinks, biased fused experts),
BLOOM, OPT, Falcon, MPT (fused or positional blocks) and Gemma 4 text (per-layer embeddings, MoE
blocks beside the MLP)."""

from __future__ import annotations

from hfkv.model.weights.builder import Cfg, Builder, Missing, head_counts, gqa, dense_only, require_present, expert_count, is_untied, embed_head


def deepseek_v4(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    hidden = c.req("hidden_size")
    layers = c.req("num_hidden_layers")
    vocab = c.req("vocab_size")
    heads = c.req("num_attention_heads")
    hd = c.req("head_dim")
    q_rank = c.req("q_lora_rank")
    o_groups, o_rank = c.req("o_groups"), c.req("o_lora_rank")
    experts, expert_i = expert_count(c), c.req("moe_intermediate_size")
    shared = c.opt("n_shared_experts", default=1)
    topk = c.req("num_experts_per_tok")
    hc = c.opt("hc_mult", default=1)
    ih, ihd = c.req("index_n_heads"), c.req("index_head_dim")
    nextn = c.opt("num_nextn_predict_layers")
    types = c.get("layer_types")
    ratios = c.get("compress_ratios")
    if isinstance(types, list) and len(types) >= layers:
        ratio_of = {"sliding_attention": 0, "compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
        ratios = [ratio_of.get(t, 0) for t in types]
    if not (isinstance(ratios, list) and len(ratios) >= layers):
        raise Missing("deepseek_v4 needs per-layer compress_ratios (or layer_types)", ["compress_ratios"])
    mlp_types = c.get("mlp_layer_types")
    n_hash = c.opt("num_hash_layers", default=3)
    hashed = ([t == "hash_moe" for t in mlp_types[:layers]] if isinstance(mlp_types, list)
              else [i < n_hash for i in range(layers)])
    f32 = 4
    embed_head(b, c, vocab, hidden, is_untied(c, False, top))
    b.param("model.hc_head.hc_fn", (hc, hc * hidden), dtype_bytes=f32)
    b.param("model.hc_head.hc_base", (hc,), dtype_bytes=f32)
    b.param("model.hc_head.hc_scale", (1,), dtype_bytes=f32)

    def block(p: str, ratio: int, is_hash: bool, role: str | None):
        ra = role or "attention"
        a = f"{p}.self_attn"
        b.linear(f"{a}.q_a_proj", q_rank, hidden, ra)
        b.norm(f"{a}.q_a_norm", q_rank, ra, dtype_bytes=f32)
        b.linear(f"{a}.q_b_proj", heads * hd, q_rank, ra)
        b.linear(f"{a}.kv_proj", hd, hidden, ra)
        b.norm(f"{a}.kv_norm", hd, ra, dtype_bytes=f32)
        b.linear(f"{a}.o_a_proj", o_groups * o_rank, heads * hd // o_groups, ra)
        b.linear(f"{a}.o_b_proj", hidden, o_groups * o_rank, ra)
        b.param(f"{a}.sinks", (heads,), ra, dtype_bytes=f32)
        if ratio == 4:  # compressed sparse attention: overlapping compressor + lightning indexer
            b.linear(f"{a}.compressor.kv_proj", 2 * hd, hidden, ra)
            b.linear(f"{a}.compressor.gate_proj", 2 * hd, hidden, ra)
            b.param(f"{a}.compressor.position_bias", (ratio, 2 * hd), ra, dtype_bytes=f32)
            b.norm(f"{a}.compressor.kv_norm", hd, ra, dtype_bytes=f32)
            x = f"{a}.compressor.indexer"
            b.linear(f"{x}.kv_proj", 2 * ihd, hidden, ra)
            b.linear(f"{x}.gate_proj", 2 * ihd, hidden, ra)
            b.param(f"{x}.position_bias", (ratio, 2 * ihd), ra, dtype_bytes=f32)
            b.norm(f"{x}.kv_norm", ihd, ra, dtype_bytes=f32)
            b.linear(f"{x}.q_b_proj", ih * ihd, q_rank, ra)
            b.linear(f"{x}.weights_proj", ih, hidden, ra)
        elif ratio > 0:  # heavily compressed attention
            b.linear(f"{a}.compressor.kv_proj", hd, hidden, ra)
            b.linear(f"{a}.compressor.gate_proj", hd, hidden, ra)
            b.param(f"{a}.compressor.position_bias", (ratio, hd), ra, dtype_bytes=f32)
            b.norm(f"{a}.compressor.kv_norm", hd, ra, dtype_bytes=f32)
        b.add(f"{p}.mlp.gate", role or "other", "router", (experts, hidden))
        if is_hash:
            b.add(f"{p}.mlp.gate.tid2eid", role or "other", "buffer", (vocab, topk), dtype_bytes=8)
        else:
            b.param(f"{p}.mlp.gate.e_score_correction_bias", (experts,), role or "other", dtype_bytes=f32)
        b.mlp(f"{p}.mlp.experts.0", hidden, expert_i, role or "routed_experts", count=experts)
        b.mlp(f"{p}.mlp.shared_experts", hidden, expert_i * shared, role or "shared_experts")
        b.norm(f"{p}.input_layernorm", hidden, role or "other", count=2, dtype_bytes=f32)
        mix = (2 + hc) * hc
        for h in ("attn_hc", "ffn_hc"):
            b.param(f"{p}.{h}.fn", (mix, hc * hidden), role or "other", dtype_bytes=f32)
            b.param(f"{p}.{h}.base", (mix,), role or "other", dtype_bytes=f32)
            b.param(f"{p}.{h}.scale", (3,), role or "other", dtype_bytes=f32)

    for p, (ratio, is_hash) in b.layers("model.layers", list(zip(ratios[:layers], hashed[:layers]))):
        block(p, ratio, is_hash, None)
    for j in range(nextn):
        # V4 MTP (inference code): a block + e_proj/h_proj + enorm/hnorm/norm + its own hc head;
        # embed and head are shared with the main model (the published count fits without copies).
        p = f"mtp.{j}"
        ratio = ratios[layers + j] if len(ratios) > layers + j else 0
        block(p, ratio, False, "mtp")
        b.linear(f"{p}.e_proj", hidden, hidden, "mtp")
        b.linear(f"{p}.h_proj", hidden, hidden, "mtp")
        b.norm(f"{p}.enorm", hidden, "mtp", count=3)
        b.param(f"{p}.hc_head_fn", (hc, hc * hidden), "mtp", dtype_bytes=f32)
        b.param(f"{p}.hc_head_base", (hc,), "mtp", dtype_bytes=f32)
        b.param(f"{p}.hc_head_scale", (1,), "mtp", dtype_bytes=f32)
    b.notes.append("DeepSeek-V4: compressed attention priced from the transformers DeepseekV4 layout; MTP from "
                   "the inference code's layout (no embed/head copies)")


def gpt_oss(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    hidden = c.req("hidden_size")
    layers = c.req("num_hidden_layers")
    vocab = c.req("vocab_size")
    heads, kv, hd = head_counts(c, hidden)
    experts = expert_count(c)
    inter = c.req("intermediate_size", why="expert size")
    bias = c.flag("attention_bias", True)
    embed_head(b, c, vocab, hidden, is_untied(c, False, top))
    # sliding and full layers hold the same weights: one kind of layer
    for p, _ in b.layers("model.layers", [0] * layers):
        gqa(b, f"{p}.self_attn", hidden, heads, kv, hd, qkv_bias=bias, o_bias=bias)
        b.param(f"{p}.self_attn.sinks", (heads,), "attention")
        b.add(f"{p}.mlp.router", "other", "router", (experts, hidden))
        b.add(f"{p}.mlp.router.bias", "other", "bias", (experts,))
        b.linear(f"{p}.mlp.experts.gate_up_proj", 2 * inter, hidden, "routed_experts", bias=True, count=experts)
        b.linear(f"{p}.mlp.experts.down_proj", hidden, inter, "routed_experts", bias=True, count=experts)
        b.norm(f"{p}.input_layernorm", hidden, count=2)


def bloom(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    dense_only(c, mt)
    hidden = c.req("hidden_size", "n_embed")
    layers = c.req("n_layer", "num_hidden_layers")
    vocab = c.req("vocab_size")
    b.add("transformer.word_embeddings", "embedding", "embedding", (vocab, hidden))
    b.norm("transformer.word_embeddings_layernorm", hidden, bias=True)
    b.norm("transformer.ln_f", hidden, bias=True)
    if is_untied(c, True, top):
        b.add("lm_head", "embedding", "lm_head", (vocab, hidden))
    for p, _ in b.layers("transformer.h", [0] * layers):
        b.linear(f"{p}.self_attention.query_key_value", 3 * hidden, hidden, "attention", bias=True)
        b.linear(f"{p}.self_attention.dense", hidden, hidden, "attention", bias=True)
        b.linear(f"{p}.mlp.dense_h_to_4h", 4 * hidden, hidden, "dense_mlp", bias=True)
        b.linear(f"{p}.mlp.dense_4h_to_h", hidden, 4 * hidden, "dense_mlp", bias=True)
        b.norm(f"{p}.input_layernorm", hidden, bias=True, count=2)


def opt(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    dense_only(c, mt)
    hidden = c.req("hidden_size")
    layers = c.req("num_hidden_layers")
    vocab = c.req("vocab_size")
    ffn = c.req("ffn_dim")
    proj = c.opt("word_embed_proj_dim", default=hidden)
    positions = c.req("max_position_embeddings")
    bias = c.flag("enable_bias", True)
    affine = c.flag("layer_norm_elementwise_affine", True)
    b.add("model.decoder.embed_tokens", "embedding", "embedding", (vocab, proj))
    b.add("model.decoder.embed_positions", "embedding", "embedding", (positions + 2, hidden))
    if proj != hidden:
        b.linear("model.decoder.project_in", hidden, proj, "embedding")
        b.linear("model.decoder.project_out", proj, hidden, "embedding")
    if c.flag("do_layer_norm_before", True) and not c.flag("_remove_final_layer_norm") and affine:
        b.norm("model.decoder.final_layer_norm", hidden, bias=True)
    if is_untied(c, True, top):
        b.add("lm_head", "embedding", "lm_head", (vocab, proj))
    for p, _ in b.layers("model.decoder.layers", [0] * layers):
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            b.linear(f"{p}.self_attn.{n}", hidden, hidden, "attention", bias)
        b.linear(f"{p}.fc1", ffn, hidden, "dense_mlp", bias)
        b.linear(f"{p}.fc2", hidden, ffn, "dense_mlp", bias)
        if affine:
            b.norm(f"{p}.self_attn_layer_norm", hidden, bias=True, count=2)


def falcon(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    dense_only(c, mt)
    hidden = c.req("hidden_size")
    layers = c.req("num_hidden_layers", "n_layer")
    vocab = c.req("vocab_size")
    heads = c.req("num_attention_heads", "n_head")
    hd = hidden // heads
    new_arch = c.flag("new_decoder_architecture", mt in ("RefinedWeb",))
    if new_arch:
        kv = c.req("num_kv_heads", "n_head_kv")
        qkv = (heads + 2 * kv) * hd
    elif c.flag("multi_query", mt == "RefinedWebModel"):
        qkv = (heads + 2) * hd
    else:
        qkv = 3 * hidden
    bias = c.flag("bias")
    ffn = c.opt("ffn_hidden_size", default=4 * hidden)
    b.add("transformer.word_embeddings", "embedding", "embedding", (vocab, hidden))
    b.norm("transformer.ln_f", hidden, bias=True)
    # Falcon checkpoints store lm_head.weight beside the word embeddings (the published falcon-180B
    # count and index total include both). vLLM ties them unless the config says otherwise (falcon.py:
    # "previous Falcon model doesn't have tie_word_embeddings config so we set tie_word_embeddings to True
    # by default") and its load_weights skips "lm_head." then: counted, not loaded.
    tied = c.get("tie_word_embeddings")
    tied = True if tied is None else bool(tied)
    b.add("lm_head", "embedding", "lm_head", (vocab, hidden), loaded=not tied)
    b.notes.append("Falcon: the checkpoint's separate lm_head copy is counted" +
                   (" in the parameters, not in the bytes: the engines tie it to the word embeddings" if tied else ""))
    n_ln = 2 if new_arch and c.opt("num_ln_in_parallel_attn", default=2) == 2 else (
        1 if c.flag("parallel_attn", True) else 2)
    for p, _ in b.layers("transformer.h", [0] * layers):
        b.linear(f"{p}.self_attention.query_key_value", qkv, hidden, "attention", bias)
        b.linear(f"{p}.self_attention.dense", hidden, hidden, "attention", bias)
        b.linear(f"{p}.mlp.dense_h_to_4h", ffn, hidden, "dense_mlp", bias)
        b.linear(f"{p}.mlp.dense_4h_to_h", hidden, ffn, "dense_mlp", bias)
        b.norm(f"{p}.ln_attn", hidden, bias=True, count=n_ln)


def mpt(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    dense_only(c, mt)
    hidden = c.req("d_model")
    layers = c.req("n_layers")
    vocab = c.req("vocab_size")
    heads = c.req("n_heads")
    attn = c.get("attn_config") or {}
    kv = attn.get("kv_n_heads") if attn.get("attn_type") == "grouped_query_attention" else (
        1 if attn.get("attn_type") == "multiquery_attention" else heads)
    hd = hidden // heads
    ratio = (c.get("expansion_ratio") or 4)
    bias = not c.flag("no_bias", True)
    b.add("transformer.wte", "embedding", "embedding", (vocab, hidden))
    if not attn.get("alibi", False):
        b.add("transformer.wpe", "embedding", "embedding", (c.req("max_seq_len"), hidden))
    b.norm("transformer.norm_f", hidden)
    for p, _ in b.layers("transformer.blocks", [0] * layers):
        b.linear(f"{p}.attn.Wqkv", (heads + 2 * kv) * hd, hidden, "attention", bias)
        b.linear(f"{p}.attn.out_proj", hidden, hidden, "attention", bias)
        b.linear(f"{p}.ffn.up_proj", int(ratio * hidden), hidden, "dense_mlp", bias)
        b.linear(f"{p}.ffn.down_proj", hidden, int(ratio * hidden), "dense_mlp", bias)
        b.norm(f"{p}.norm_1", hidden, count=2)
    b.notes.append("MPT: norms without bias (no_bias), tied head")




def gemma4_text(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    hidden = c.req("hidden_size")
    layers = c.req("num_hidden_layers")
    vocab = c.req("vocab_size")
    heads = c.req("num_attention_heads")
    kv = c.req("num_key_value_heads")
    hd = c.req("head_dim")
    types_ = c.get("layer_types") or []
    if "full_attention" in types_:
        ghd = c.req("global_head_dim", why="head dim of the full-attention layers")
    else:
        ghd = hd
    gkv = c.opt("num_global_key_value_heads", default=kv)
    k_eq_v = c.flag("attention_k_eq_v")
    inter = c.req("intermediate_size")
    shared_kv = c.opt("num_kv_shared_layers")
    double = c.flag("use_double_wide_mlp")
    types = c.get("layer_types")
    if not (isinstance(types, list) and len(types) >= layers):
        raise Missing("gemma4 needs layer_types (sliding vs full layers have different head dims)", ["layer_types"])
    require_present(c, "enable_moe_block", "dense or MoE layers")
    require_present(c, "hidden_size_per_layer_input", "per-layer embeddings or none")
    if shared_kv:
        require_present(c, "use_double_wide_mlp", "KV-shared layers may have double-width MLPs")
    moe = c.flag("enable_moe_block")
    if not moe:
        dense_only(c, mt)
    if moe:
        experts = expert_count(c)
        expert_i = c.req("moe_intermediate_size", "expert_intermediate_size", why="expert size")
    ple = c.opt("hidden_size_per_layer_input")
    bias = c.flag("attention_bias")
    embed_head(b, c, vocab, hidden, is_untied(c, True, top), prefix="model.language_model")
    if ple:
        b.add("model.language_model.embed_tokens_per_layer", "embedding", "embedding",
              (c.opt("vocab_size_per_layer_input", default=vocab), layers * ple))
        b.linear("model.language_model.per_layer_model_projection", layers * ple, hidden, "embedding")
        b.norm("model.language_model.per_layer_projection_norm", ple)
    # a layer's weights: full or sliding attention, and whether it reads shared KV (a wider MLP)
    kinds = [(types[i] == "full_attention", bool(shared_kv) and i >= layers - shared_kv) for i in range(layers)]
    for p, (full, reuse) in b.layers("model.language_model.layers", kinds):
        d = ghd if full else hd
        n_kv = gkv if full else kv
        # k/v projections of KV-shared layers are unused by transformers but present in the checkpoint
        gqa(b, f"{p}.self_attn", hidden, heads, n_kv, d, qkv_bias=bias, o_bias=bias, qk_norm=True,
             v=not (k_eq_v and full))
        b.mlp(f"{p}.mlp", hidden, inter * (2 if double and reuse else 1), "dense_mlp")
        b.norm(f"{p}.input_layernorm", hidden, count=4)
        b.add(f"{p}.layer_scalar", "other", "buffer", (1,))
        if ple:
            b.linear(f"{p}.per_layer_input_gate", ple, hidden, "embedding")
            b.linear(f"{p}.per_layer_projection", hidden, ple, "embedding")
            b.norm(f"{p}.post_per_layer_input_norm", hidden)
        if moe:
            b.add(f"{p}.router.proj", "other", "router", (experts, hidden))
            b.param(f"{p}.router.scale", (hidden,))
            b.param(f"{p}.router.per_expert_scale", (experts,))
            b.mlp(f"{p}.experts.0", hidden, expert_i, "routed_experts", count=experts)
            b.norm(f"{p}.post_feedforward_layernorm_1", hidden, count=3)
