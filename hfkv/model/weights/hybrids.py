"""Families whose layers are not (only) softmax attention: Mamba-1/2, Nemotron-H's pattern of Mamba,
attention, MLP and MoE layers, Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5), MiniMax's lightning
attention and Kimi-Linear's KDA."""

from __future__ import annotations

import math

from hfkv.model.weights.builder import Cfg, Builder, Missing, head_counts, gqa, mla, moe_flags, dense_only, expert_count, is_untied, embed_head


def mamba1(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    dense_only(c, mt)
    hidden = c.req("hidden_size", "d_model")
    layers = c.req("num_hidden_layers", "n_layer")
    vocab = c.req("vocab_size")
    inner = c.opt("intermediate_size", default=c.opt("expand", default=2) * hidden)
    n = c.req("state_size", "d_state")
    k = c.opt("conv_kernel", "d_conv", default=4)
    rank = c.get("time_step_rank", "dt_rank")
    rank = math.ceil(hidden / 16) if rank in (None, "auto") else int(rank)
    bias, conv_bias = c.flag("use_bias"), c.flag("use_conv_bias", True)
    b.add("backbone.embeddings", "embedding", "embedding", (vocab, hidden))
    b.norm("backbone.norm_f", hidden)
    if is_untied(c, True, top):
        b.add("lm_head", "embedding", "lm_head", (vocab, hidden))
    for i in range(layers):
        p = f"backbone.layers.{i}.mixer"
        b.linear(f"{p}.in_proj", 2 * inner, hidden, "mixers", bias)
        b.add(f"{p}.conv1d", "mixers", "conv", (inner, 1, k))
        if conv_bias:
            b.add(f"{p}.conv1d.bias", "mixers", "bias", (inner,))
        b.linear(f"{p}.x_proj", rank + 2 * n, inner, "mixers")
        b.linear(f"{p}.dt_proj", inner, rank, "mixers", bias=True)
        b.param(f"{p}.A_log", (inner, n), "mixers")
        b.param(f"{p}.D", (inner,), "mixers")
        b.linear(f"{p}.out_proj", hidden, inner, "mixers", bias)
        b.norm(f"backbone.layers.{i}.norm", hidden)


def mamba2_mixer(b: Builder, p: str, c: Cfg, hidden: int, nheads: int, head_dim: int):
    groups = c.opt("n_groups", "mamba_n_groups", default=1)
    n = c.req("ssm_state_size", "state_size", "mamba_d_state")
    k = c.opt("conv_kernel", "mamba_d_conv", default=4)
    inner = nheads * head_dim
    conv_dim = inner + 2 * groups * n
    bias = c.flag("mamba_proj_bias", c.flag("use_bias"))
    b.linear(f"{p}.in_proj", 2 * inner + 2 * groups * n + nheads, hidden, "mixers", bias)
    b.add(f"{p}.conv1d", "mixers", "conv", (conv_dim, 1, k))
    if c.flag("use_conv_bias", c.flag("mamba_conv_bias", True)):
        b.add(f"{p}.conv1d.bias", "mixers", "bias", (conv_dim,))
    b.param(f"{p}.dt_bias", (nheads,), "mixers")
    b.param(f"{p}.A_log", (nheads,), "mixers")
    b.param(f"{p}.D", (nheads,), "mixers")
    b.norm(f"{p}.norm", inner, "mixers")
    b.linear(f"{p}.out_proj", hidden, inner, "mixers", bias)


_NEMOTRON_LETTERS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
# transformers >= 5 spells the block types linear_attention (Mamba-2) / full_attention
_NEMOTRON_TYPES = {"mamba": "mamba", "linear_attention": "mamba", "attention": "attention",
                   "full_attention": "attention", "mlp": "mlp", "moe": "moe"}


def nemotron_h(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    hidden = c.req("hidden_size")
    vocab = c.req("vocab_size")
    pattern = c.get("hybrid_override_pattern")
    block_types = c.get("layers_block_type", "layer_types")
    if isinstance(pattern, str) and pattern:
        unknown = sorted(set(pattern) - set(_NEMOTRON_LETTERS))
        if unknown:
            raise Missing(f"hybrid_override_pattern has letters {unknown} this estimator does not know",
                           ["hybrid_override_pattern"])
        kinds = [_NEMOTRON_LETTERS[ch] for ch in pattern]
    elif isinstance(block_types, list) and block_types:
        unknown = sorted({str(t) for t in block_types} - set(_NEMOTRON_TYPES))
        if unknown:
            raise Missing(f"nemotron_h block types {unknown} are not known", ["layers_block_type"])
        kinds = [_NEMOTRON_TYPES[str(t)] for t in block_types]
    else:
        raise Missing("nemotron_h needs hybrid_override_pattern (or layers_block_type)", ["hybrid_override_pattern"])
    layers = c.opt("num_hidden_layers", default=len(kinds))
    if layers != len(kinds):
        raise Missing(f"hybrid_override_pattern has {len(kinds)} letters for {layers} layers",
                       ["hybrid_override_pattern"])
    heads = c.opt("num_attention_heads")
    kv = c.opt("num_key_value_heads", default=heads)
    hd = c.opt("head_dim", "attention_head_dim", default=(hidden // heads if heads else 0))
    embed_head(b, c, vocab, hidden, is_untied(c, False, top), embed="embeddings", norm="norm_f")
    for i, kind in enumerate(kinds):
        p = f"model.layers.{i}.mixer"
        b.norm(f"model.layers.{i}.norm", hidden)
        if kind == "mamba":
            nheads = c.req("mamba_num_heads")
            mamba2_mixer(b, p, c, hidden, nheads, c.req("mamba_head_dim"))
        elif kind == "attention":
            if not heads:
                raise Missing("attention layers need num_attention_heads", ["num_attention_heads"])
            gqa(b, p, hidden, heads, kv, hd, qkv_bias=c.flag("attention_bias"), o_bias=c.flag("attention_bias"))
        elif kind == "mlp":
            b.mlp(p, hidden, c.req("intermediate_size"), "dense_mlp", gated=False, bias=c.flag("mlp_bias"))
        elif kind == "moe":
            experts = expert_count(c)
            expert_i = c.req("moe_intermediate_size", why="expert size")
            b.add(f"{p}.gate", "other", "router", (experts, hidden))
            b.param(f"{p}.gate.e_score_correction_bias", (experts,), dtype_bytes=4)
            b.mlp(f"{p}.experts.0", hidden, expert_i, "routed_experts", gated=False, count=experts)
            shared_i = c.opt("moe_shared_expert_intermediate_size")
            if shared_i:
                b.mlp(f"{p}.shared_experts", hidden, shared_i, "shared_experts", gated=False)
        else:
            raise Missing(f"nemotron_h block type {kind!r} is not known", ["layers_block_type"])
    if c.opt("num_nextn_predict_layers"):
        raise Missing("nemotron_h MTP layers are not priced by this estimator", ["mtp_hybrid_override_pattern"])


def gdn(b: Builder, p: str, c: Cfg, hidden: int, split_qkvz: bool):
    kh, kd = c.req("linear_num_key_heads"), c.req("linear_key_head_dim")
    vh, vd = c.req("linear_num_value_heads"), c.req("linear_value_head_dim")
    k = c.opt("linear_conv_kernel_dim", default=4)
    key, value = kh * kd, vh * vd
    if split_qkvz:
        b.linear(f"{p}.in_proj_qkvz", 2 * key + 2 * value, hidden, "mixers")
        b.linear(f"{p}.in_proj_ba", 2 * vh, hidden, "mixers")
    else:
        b.linear(f"{p}.in_proj_qkv", 2 * key + value, hidden, "mixers")
        b.linear(f"{p}.in_proj_z", value, hidden, "mixers")
        b.linear(f"{p}.in_proj_b", vh, hidden, "mixers")
        b.linear(f"{p}.in_proj_a", vh, hidden, "mixers")
    b.add(f"{p}.conv1d", "mixers", "conv", (2 * key + value, 1, k))
    b.param(f"{p}.dt_bias", (vh,), "mixers")
    b.param(f"{p}.A_log", (vh,), "mixers")
    b.norm(f"{p}.norm", vd, "mixers")
    b.linear(f"{p}.out_proj", hidden, value, "mixers")


def qwen3_next(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    hidden = c.req("hidden_size")
    layers = c.req("num_hidden_layers")
    vocab = c.req("vocab_size")
    heads, kv, hd = head_counts(c, hidden)
    gate = c.flag("attn_output_gate", True)
    types = c.get("layer_types")
    if not (isinstance(types, list) and len(types) >= layers):
        interval = c.req("full_attention_interval", why="which layers are full attention")
        types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(layers)]
    moe = mt in ("qwen3_next", "qwen3_5_moe", "qwen3_5_moe_text")
    if moe:
        experts = expert_count(c)
        expert_i = c.req("moe_intermediate_size", why="expert size")
        flags = moe_flags(c, layers)
    else:
        flags = [False] * layers
    split = mt == "qwen3_next"
    embed_head(b, c, vocab, hidden, is_untied(c, False, top))

    def layer(p: str, full: bool, sparse: bool, role: str | None):
        if full:
            gqa(b, f"{p}.self_attn", hidden, heads, kv, hd, role=role or "attention", qk_norm=True, q_gate=gate,
                 qkv_bias=c.flag("attention_bias"))
        else:
            gdn(b, f"{p}.linear_attn", c, hidden, split)
        b.norm(f"{p}.input_layernorm", hidden, role or "other", count=2)
        if sparse:
            b.add(f"{p}.mlp.gate", role or "other", "router", (experts, hidden))
            b.mlp(f"{p}.mlp.experts.0", hidden, expert_i, role or "routed_experts", count=experts)
            shared_i = c.opt("shared_expert_intermediate_size")
            if shared_i:
                b.mlp(f"{p}.mlp.shared_expert", hidden, shared_i, role or "shared_experts")
                b.add(f"{p}.mlp.shared_expert_gate", role or "other", "router", (1, hidden))
        else:
            b.mlp(f"{p}.mlp", hidden, c.req("intermediate_size"), role or "dense_mlp")

    for i in range(layers):
        layer(f"model.layers.{i}", types[i] == "full_attention", flags[i], None)
    # Qwen3-Next ships one MTP layer ("mtp.*") although its config has no key for it; Qwen3.5 says
    # mtp_num_hidden_layers. MTP layers are full-attention MoE (or dense) layers + fc + 3 norms.
    mtp = c.opt("mtp_num_hidden_layers", "num_nextn_predict_layers", default=1 if mt == "qwen3_next" else 0)
    if mtp:
        b.linear("mtp.fc", hidden, 2 * hidden, "mtp")
        b.norm("mtp.pre_fc_norm_embedding", hidden, "mtp", count=3)
        if c.flag("mtp_use_dedicated_embeddings"):
            b.add("mtp.embed_tokens", "mtp", "embedding", (vocab, hidden))
        for j in range(mtp):
            layer(f"mtp.layers.{j}", True, moe, "mtp")
        if mt == "qwen3_next":
            b.notes.append("Qwen3-Next: one MTP layer counted (the checkpoint ships mtp.*; the config has no key)")


def minimax(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    hidden = c.req("hidden_size")
    layers = c.req("num_hidden_layers")
    vocab = c.req("vocab_size")
    heads, kv, hd = head_counts(c, hidden)
    experts = expert_count(c)
    expert_i = c.req("intermediate_size", why="expert size")
    types = c.get("layer_types")
    attn_list = c.get("attn_type_list")
    if isinstance(types, list) and len(types) >= layers:
        full = [t == "full_attention" for t in types]
    elif isinstance(attn_list, list) and len(attn_list) >= layers:
        full = [int(t) == 1 for t in attn_list]
    else:
        raise Missing("MiniMax hybrid needs attn_type_list or layer_types", ["attn_type_list", "layer_types"])
    embed_head(b, c, vocab, hidden, is_untied(c, False, top))
    for i in range(layers):
        p = f"model.layers.{i}"
        if full[i]:
            gqa(b, f"{p}.self_attn", hidden, heads, kv, hd)
        else:  # lightning (linear) attention
            b.linear(f"{p}.self_attn.qkv_proj", 3 * heads * hd, hidden, "mixers")
            b.linear(f"{p}.self_attn.output_gate", heads * hd, hidden, "mixers")
            b.linear(f"{p}.self_attn.out_proj", hidden, heads * hd, "mixers")
            b.norm(f"{p}.self_attn.norm", heads * hd, "mixers")
        b.norm(f"{p}.input_layernorm", hidden, count=2)
        b.add(f"{p}.block_sparse_moe.gate", "other", "router", (experts, hidden))
        b.mlp(f"{p}.block_sparse_moe.experts.0", hidden, expert_i, "routed_experts", count=experts,
              names=("w1", "w3", "w2"))
        shared_i = c.opt("shared_intermediate_size")
        if shared_i:
            b.mlp(f"{p}.block_sparse_moe.shared_experts", hidden, shared_i, "shared_experts", names=("w1", "w3", "w2"))
            b.add(f"{p}.block_sparse_moe.shared_moe_gate", "other", "router", (1, hidden))


def kimi_linear(b: Builder, c: Cfg, mt: str, top: dict | None) -> None:
    hidden = c.req("hidden_size")
    layers = c.req("num_hidden_layers")
    vocab = c.req("vocab_size")
    lin = c.get("linear_attn_config") or {}
    full_1b = lin.get("full_attn_layers")
    types = c.get("layer_types")
    if isinstance(full_1b, list):
        full = {int(x) - 1 for x in full_1b}  # 1-based in the remote-code config
        kh = lin.get("num_heads") or c.req("num_attention_heads")
        kd = lin.get("head_dim") or c.req("head_dim")
        kernel = lin.get("short_conv_kernel_size") or 4
    elif isinstance(types, list) and len(types) >= layers:  # transformers' KimiLinearConfig spelling
        full = {i for i, t in enumerate(types[:layers]) if t == "full_attention"}
        kh, kd = c.req("linear_num_heads"), c.req("linear_head_dim")
        kernel = c.opt("linear_conv_kernel_dim", default=4)
    else:
        raise Missing("kimi_linear needs linear_attn_config.full_attn_layers (or layer_types)",
                       ["linear_attn_config"])
    qkv = kh * kd
    full_rank_gate = bool(lin.get("use_full_rank_gate"))
    experts = expert_count(c)
    expert_i = c.req("moe_intermediate_size", why="expert size")
    latent = c.opt("routed_expert_hidden_size", default=hidden)
    shared = c.opt("num_shared_experts", "n_shared_experts")
    flags = moe_flags(c, layers)
    embed_head(b, c, vocab, hidden, is_untied(c, False, top))
    heads = c.req("num_attention_heads")
    vdim = c.req("v_head_dim")
    for i in range(layers):
        p = f"model.layers.{i}"
        if i in full:
            mla(b, f"{p}.self_attn", c, hidden)
            if c.flag("mla_use_output_gate"):
                b.linear(f"{p}.self_attn.g_proj", heads * vdim, hidden, "attention")
        else:
            a = f"{p}.self_attn"
            for n in ("q_proj", "k_proj", "v_proj"):
                b.linear(f"{a}.{n}", qkv, hidden, "mixers")
            b.add(f"{a}.conv1d", "mixers", "conv", (3 * qkv, 1, kernel))
            b.linear(f"{a}.f_a_proj", kd, hidden, "mixers")
            b.linear(f"{a}.f_b_proj", qkv, kd, "mixers")
            b.param(f"{a}.dt_bias", (qkv,), "mixers", dtype_bytes=4)
            b.param(f"{a}.A_log", (kh,), "mixers", dtype_bytes=4)
            b.linear(f"{a}.b_proj", kh, hidden, "mixers")
            if full_rank_gate:
                b.linear(f"{a}.g_proj", qkv, hidden, "mixers")
            else:
                b.linear(f"{a}.g_a_proj", kd, hidden, "mixers")
                b.linear(f"{a}.g_b_proj", qkv, kd, "mixers")
            b.norm(f"{a}.o_norm", kd, "mixers")
            b.linear(f"{a}.o_proj", hidden, qkv, "mixers")
        b.norm(f"{p}.input_layernorm", hidden, count=2)
        if flags[i]:
            b.add(f"{p}.mlp.gate", "other", "router", (experts, hidden))
            b.param(f"{p}.mlp.gate.e_score_correction_bias", (experts,), dtype_bytes=4)
            if latent != hidden:
                # latent MoE: experts work at routed_expert_hidden_size; kept bf16 (the published dtype
                # breakdown has the routed experts alone in the 4-bit tensors)
                b.linear(f"{p}.mlp.latent_down", latent, hidden, "routed_experts", exempt=True)
                b.linear(f"{p}.mlp.latent_up", hidden, latent, "routed_experts", exempt=True)
                if c.flag("latent_moe_use_norm"):
                    b.norm(f"{p}.mlp.latent_norm", latent, "routed_experts")
            b.mlp(f"{p}.mlp.experts.0", latent, expert_i, "routed_experts", count=experts)
            if shared:
                b.mlp(f"{p}.mlp.shared_experts", hidden, expert_i * shared, "shared_experts")
        else:
            b.mlp(f"{p}.mlp", hidden, c.req("intermediate_size"), "dense_mlp")
    if c.opt("num_nextn_predict_layers"):
        raise Missing("kimi_linear MTP layers are not priced by this estimator", ["num_nextn_predict_layers"])
