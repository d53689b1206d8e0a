"""Vision and audio encoders in front of a language model: SigLIP, Gemma 4's vision and audio towers,
the Qwen-VL towers (Qwen2-VL's, EXAONE 4.5's), GLM-4.1V's, Llama 4's, MoonViT, and a generic ViT formula (an
estimate, flagged) for the others."""

from __future__ import annotations

from hfkv.model.weights.builder import Cfg, Builder, gqa


def siglip_tower(b: Builder, v: Cfg, prefix: str):
    h, inter, layers = v.req("hidden_size"), v.req("intermediate_size"), v.req("num_hidden_layers")
    patch = v.req("patch_size")
    ch = v.opt("num_channels", default=3)
    size = v.req("image_size")
    b.add(f"{prefix}.embeddings.patch_embedding", "towers", "conv", (h, ch, patch, patch))
    b.add(f"{prefix}.embeddings.patch_embedding.bias", "towers", "bias", (h,))
    b.add(f"{prefix}.embeddings.position_embedding", "towers", "embedding", ((size // patch) ** 2, h))
    for p, _ in b.layers(f"{prefix}.encoder.layers", [0] * layers):
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            b.linear(f"{p}.self_attn.{n}", h, h, "towers", bias=True)
        b.linear(f"{p}.mlp.fc1", inter, h, "towers", bias=True)
        b.linear(f"{p}.mlp.fc2", h, inter, "towers", bias=True)
        b.norm(f"{p}.layer_norm1", h, "towers", bias=True, count=2)
    b.norm(f"{prefix}.post_layernorm", h, "towers", bias=True)
    if v.flag("vision_use_head", True):
        b.param(f"{prefix}.head.probe", (1, 1, h), "towers")
        b.linear(f"{prefix}.head.attention.in_proj", 3 * h, h, "towers", bias=True)
        b.linear(f"{prefix}.head.attention.out_proj", h, h, "towers", bias=True)
        b.norm(f"{prefix}.head.layernorm", h, "towers", bias=True)
        b.linear(f"{prefix}.head.mlp.fc1", inter, h, "towers", bias=True)
        b.linear(f"{prefix}.head.mlp.fc2", h, inter, "towers", bias=True)
    return h


def gemma4_vision(b: Builder, v: Cfg, text_hidden: int):
    h, inter, layers = v.req("hidden_size"), v.req("intermediate_size"), v.req("num_hidden_layers")
    heads = v.req("num_attention_heads")
    hd = v.opt("head_dim", default=h // heads)
    kv = v.opt("num_key_value_heads", default=heads)
    patch = v.req("patch_size")
    pos = v.req("position_embedding_size")
    pre = "model.vision_tower"
    b.add(f"{pre}.patch_embedder.input_proj", "towers", "linear", (h, 3 * patch * patch))
    b.add(f"{pre}.patch_embedder.position_embedding_table", "towers", "embedding", (2, pos, h))
    for p, _ in b.layers(f"{pre}.encoder.layers", [0] * layers):
        gqa(b, f"{p}.self_attn", h, heads, kv, hd, role="towers", qk_norm=True)
        b.mlp(f"{p}.mlp", h, inter, "towers")
        b.norm(f"{p}.input_layernorm", h, "towers", count=4)
    if v.flag("standardize"):
        b.add(f"{pre}.std_bias", "towers", "buffer", (h,))
        b.add(f"{pre}.std_scale", "towers", "buffer", (h,))
    b.linear("model.embed_vision.embedding_projection", text_hidden, h, "towers")


def gemma4_audio(b: Builder, a: Cfg, text_hidden: int):
    h, layers, heads = a.req("hidden_size"), a.req("num_hidden_layers"), a.req("num_attention_heads")
    chans = a.get("subsample_conv_channels") or [128, 32]
    feat = a.opt("input_feat_size", default=128)
    k = a.req("conv_kernel_size")
    out = a.opt("output_proj_dims", default=h)
    pre = "model.audio_tower"
    prev, freq = 1, feat
    for j, ch in enumerate(chans):
        b.add(f"{pre}.subsample_conv_projection.layer{j}.conv", "towers", "conv", (ch, prev, 3, 3))
        b.norm(f"{pre}.subsample_conv_projection.layer{j}.norm", ch, "towers")
        prev, freq = ch, (freq + 1) // 2
    b.linear(f"{pre}.subsample_conv_projection.input_proj_linear", h, prev * freq, "towers")
    for p, _ in b.layers(f"{pre}.layers", [0] * layers):
        for ff in ("feed_forward1", "feed_forward2"):
            b.linear(f"{p}.{ff}.ffw_layer_1", 4 * h, h, "towers")
            b.linear(f"{p}.{ff}.ffw_layer_2", h, 4 * h, "towers")
            b.norm(f"{p}.{ff}.pre_layer_norm", h, "towers", count=2)
        b.param(f"{p}.self_attn.per_dim_scale", (h // heads,), "towers")
        for n in ("q_proj", "k_proj", "v_proj", "post", "relative_k_proj"):
            b.linear(f"{p}.self_attn.{n}", h, h, "towers")
        b.linear(f"{p}.lconv1d.linear_start", 2 * h, h, "towers")
        b.linear(f"{p}.lconv1d.linear_end", h, h, "towers")
        b.add(f"{p}.lconv1d.depthwise_conv1d", "towers", "conv", (h, 1, k))
        b.norm(f"{p}.lconv1d.pre_layer_norm", h, "towers", count=2)
        b.norm(f"{p}.norm_pre_attn", h, "towers", count=3)
    b.linear(f"{pre}.output_proj", out, h, "towers", bias=True)
    b.linear("model.embed_audio.embedding_projection", text_hidden, out, "towers")


def _conv3d_patches(b: Builder, v: Cfg, h: int, patch: int, text_hidden: int) -> tuple[int, int, str]:
    """The Qwen-VL family's biased Conv3d patch embedding (temporal_patch_size frames of in_channels);
    returns (spatial_merge_size, out_hidden_size, the tower's prefix)."""
    tp = v.opt("temporal_patch_size", default=2)
    ch = v.opt("in_channels", default=3)
    pre = "model.visual"
    b.add(f"{pre}.patch_embed.proj", "towers", "conv", (h, ch, tp, patch, patch))
    b.add(f"{pre}.patch_embed.proj.bias", "towers", "bias", (h,))
    return v.opt("spatial_merge_size", default=2), v.opt("out_hidden_size", default=text_hidden), pre


def qwen_vl_tower(b: Builder, v: Cfg, text_hidden: int):
    h, inter, depth = v.req("hidden_size"), v.req("intermediate_size"), v.req("depth", "num_hidden_layers")
    patch = v.req("patch_size")
    merge, out, pre = _conv3d_patches(b, v, h, patch, text_hidden)
    if v.opt("num_position_embeddings"):
        b.add(f"{pre}.pos_embed", "towers", "embedding", (v.opt("num_position_embeddings"), h))
    for p, _ in b.layers(f"{pre}.blocks", [0] * depth):
        b.linear(f"{p}.attn.qkv", 3 * h, h, "towers", bias=True)
        b.linear(f"{p}.attn.proj", h, h, "towers", bias=True)
        b.linear(f"{p}.mlp.linear_fc1", inter, h, "towers", bias=True)
        b.linear(f"{p}.mlp.linear_fc2", h, inter, "towers", bias=True)
        b.norm(f"{p}.norm1", h, "towers", bias=True, count=2)
    wide = h * merge * merge
    for name, norm_dim in [("merger", h)] + [(f"deepstack_merger_list.{j}", wide)
                                             for j in range(len(v.get("deepstack_visual_indexes") or []))]:
        b.norm(f"{pre}.{name}.norm", norm_dim, "towers", bias=True)
        b.linear(f"{pre}.{name}.linear_fc1", wide, wide, "towers", bias=True)
        b.linear(f"{pre}.{name}.linear_fc2", out, wide, "towers", bias=True)


def qwen25_vl_tower(b: Builder, v: Cfg, text_hidden: int):
    """Qwen2.5-VL's vision tower: an unbiased Conv3d patch embedding, RMS-normed blocks (norm1/norm2
    without bias) with a biased fused qkv and proj and a biased gated MLP, and a merger (RMS ln_q,
    two biased linears over the 2×2-merged width). EXAONE 4.5's is the same with grouped KV heads
    (``num_key_value_heads`` of ``num_heads``): its qkv is q's width plus two of the KV heads'."""
    h, inter, depth = v.req("hidden_size"), v.req("intermediate_size"), v.req("depth", "num_hidden_layers")
    patch = v.req("patch_size")
    tp = v.opt("temporal_patch_size", default=2)
    ch = v.opt("in_channels", "in_chans", default=3)
    wide = h * v.opt("spatial_merge_size", default=2) ** 2
    heads = v.opt("num_heads", default=1)
    kv_width = h * v.opt("num_key_value_heads", default=heads) // heads
    pre = "visual"
    b.add(f"{pre}.patch_embed.proj", "towers", "conv", (h, ch, tp, patch, patch))
    b.linear(f"{pre}.blocks.attn.qkv", h + 2 * kv_width, h, "towers", bias=True, count=depth)
    b.linear(f"{pre}.blocks.attn.proj", h, h, "towers", bias=True, count=depth)
    b.mlp(f"{pre}.blocks.mlp", h, inter, "towers", bias=True, count=depth)
    b.norm(f"{pre}.blocks.norm1", h, "towers", count=2 * depth)
    b.norm(f"{pre}.merger.ln_q", h, "towers")
    b.linear(f"{pre}.merger.mlp.0", wide, wide, "towers", bias=True)
    b.linear(f"{pre}.merger.mlp.2", v.opt("out_hidden_size", default=text_hidden), wide, "towers", bias=True)


def qwen2_vl_tower(b: Builder, v: Cfg, text_hidden: int):
    """Qwen2-VL's vision tower (transformers' Qwen2VisionTransformerPretrainedModel): an unbiased Conv3d patch
    embedding to embed_dim, blocks of two biased LayerNorms, a biased fused qkv and proj and a biased
    fc1/fc2 MLP embed_dim × mlp_ratio wide, and the merger: a biased LayerNorm (ln_q) and two biased
    linears over the spatial_merge_size²-merged width, the second to the vision config's hidden_size."""
    h, depth = v.req("embed_dim"), v.req("depth")
    inter = int(h * v.req("mlp_ratio"))
    patch = v.req("patch_size")
    tp = v.opt("temporal_patch_size", default=2)
    wide = h * v.opt("spatial_merge_size", default=2) ** 2
    pre = "model.visual"
    b.add(f"{pre}.patch_embed.proj", "towers", "conv", (h, v.opt("in_channels", default=3), tp, patch, patch))
    b.linear(f"{pre}.blocks.attn.qkv", 3 * h, h, "towers", bias=True, count=depth)
    b.linear(f"{pre}.blocks.attn.proj", h, h, "towers", bias=True, count=depth)
    b.linear(f"{pre}.blocks.mlp.fc1", inter, h, "towers", bias=True, count=depth)
    b.linear(f"{pre}.blocks.mlp.fc2", h, inter, "towers", bias=True, count=depth)
    b.norm(f"{pre}.blocks.norm1", h, "towers", bias=True, count=2 * depth)
    b.norm(f"{pre}.merger.ln_q", h, "towers", bias=True)
    b.linear(f"{pre}.merger.mlp.0", wide, wide, "towers", bias=True)
    b.linear(f"{pre}.merger.mlp.2", v.opt("hidden_size", default=text_hidden), wide, "towers", bias=True)


def glm4v_tower(b: Builder, v: Cfg, text_hidden: int):
    """GLM-4.1V's vision tower (transformers' Glm4vVisionModel): a biased Conv3d patch embedding, learned
    positions ((image_size / patch)² of them), RMS-normed blocks (norm1/norm2) with a fused qkv (biased as
    attention_bias says), an unbiased proj and an unbiased gated MLP out_hidden_size wide, the post-conv and
    post RMSNorms, a biased Conv2d downsample (spatial_merge_size² patches to out_hidden_size), and a merger:
    an unbiased proj, a biased LayerNorm and an unbiased gated MLP of intermediate_size."""
    h, inter, depth = v.req("hidden_size"), v.req("intermediate_size"), v.req("depth", "num_hidden_layers")
    patch, size = v.req("patch_size"), v.req("image_size")
    merge, out, pre = _conv3d_patches(b, v, h, patch, text_hidden)
    b.add(f"{pre}.embeddings.position_embedding", "towers", "embedding", ((size // patch) ** 2, h))
    b.linear(f"{pre}.blocks.attn.qkv", 3 * h, h, "towers", bias=v.flag("attention_bias"), count=depth)
    b.linear(f"{pre}.blocks.attn.proj", h, h, "towers", count=depth)
    b.mlp(f"{pre}.blocks.mlp", h, out, "towers", count=depth)
    b.norm(f"{pre}.blocks.norm1", h, "towers", count=2 * depth)
    b.norm(f"{pre}.post_conv_layernorm", h, "towers", count=2)  # and post_layernorm
    b.add(f"{pre}.downsample", "towers", "conv", (out, h, merge, merge))
    b.add(f"{pre}.downsample.bias", "towers", "bias", (out,))
    b.linear(f"{pre}.merger.proj", out, out, "towers")
    b.norm(f"{pre}.merger.post_projection_norm", out, "towers", bias=True)
    b.mlp(f"{pre}.merger", out, inter, "towers")


def llama4_tower(b: Builder, v: Cfg, text_hidden: int):
    """Llama 4's vision model (transformers' Llama4VisionModel) and projector: an unbiased unfold-and-linear
    patch embedding, a class embedding and (image_size / patch)² + 1 learned positions, pre and post
    LayerNorms, encoder layers (biased q/k/v/o and fc1/fc2, two biased LayerNorms), the pixel-shuffle
    adapter (unbiased fc1 intermediate_size → projector_input_dim, fc2 projector_output_dim square) and
    the unbiased multi_modal_projector from vision_output_dim to the text width."""
    h, inter, layers = v.req("hidden_size"), v.req("intermediate_size"), v.req("num_hidden_layers")
    patch, size = v.req("patch_size"), v.req("image_size")
    ch = v.opt("num_channels", default=3)
    pre = "vision_model"
    b.linear(f"{pre}.patch_embedding.linear", h, ch * patch * patch, "towers")
    b.param(f"{pre}.class_embedding", (h,), "towers")
    b.param(f"{pre}.positional_embedding_vlm", ((size // patch) ** 2 + 1, h), "towers")
    b.norm(f"{pre}.layernorm_pre", h, "towers", bias=True, count=2)  # and layernorm_post
    for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
        b.linear(f"{pre}.model.layers.self_attn.{n}", h, h, "towers", bias=True, count=layers)
    b.linear(f"{pre}.model.layers.mlp.fc1", inter, h, "towers", bias=True, count=layers)
    b.linear(f"{pre}.model.layers.mlp.fc2", h, inter, "towers", bias=True, count=layers)
    b.norm(f"{pre}.model.layers.input_layernorm", h, "towers", bias=True, count=2 * layers)
    b.linear(f"{pre}.vision_adapter.mlp.fc1", v.req("projector_input_dim"), inter, "towers")
    b.linear(f"{pre}.vision_adapter.mlp.fc2", v.req("projector_output_dim"), v.req("projector_output_dim"), "towers")
    b.linear("multi_modal_projector.linear_1", text_hidden, v.req("vision_output_dim"), "towers")


def moonvit_tower(b: Builder, v: Cfg, text_hidden: int):
    h = v.req("vt_hidden_size", "hidden_size")
    inter = v.req("vt_intermediate_size", "intermediate_size")
    layers = v.req("vt_num_hidden_layers", "num_hidden_layers")
    qkv = v.opt("qkv_hidden_size", default=h)
    patch = v.req("patch_size")
    attn_bias, lin_bias = v.flag("attn_bias", True), v.flag("linear_bias", True)
    ln_bias = v.get("norm_type") != "rmsnorm"
    pre = "vision_tower"
    b.add(f"{pre}.patch_embed.proj", "towers", "conv", (h, 3, patch, patch))
    if v.flag("patch_embed_proj_bias", True):
        b.add(f"{pre}.patch_embed.proj.bias", "towers", "bias", (h,))
    if "fixed" not in str(v.get("pos_emb_type") or ""):
        b.add(f"{pre}.patch_embed.pos_emb", "towers", "embedding",
              (v.opt("init_pos_emb_height", default=64) * v.opt("init_pos_emb_width", default=64), h))
    for p, _ in b.layers(f"{pre}.encoder.blocks", [0] * layers):
        b.linear(f"{p}.wqkv", 3 * qkv, h, "towers", bias=attn_bias)
        b.linear(f"{p}.wo", h, qkv, "towers", bias=attn_bias)
        b.linear(f"{p}.mlp.fc0", inter, h, "towers", bias=lin_bias)
        b.linear(f"{p}.mlp.fc1", h, inter, "towers", bias=lin_bias)
        b.norm(f"{p}.norm0", h, "towers", bias=ln_bias, count=2)
    b.norm(f"{pre}.encoder.final_layernorm", h, "towers", bias=ln_bias)
    mk = v.get("merge_kernel_size") or [2, 2]
    mm = v.opt("mm_hidden_size", default=h)
    wide = mm * int(mk[0]) * int(mk[1])
    b.norm("mm_projector.pre_norm", mm, "towers", bias=True)
    b.linear("mm_projector.proj.0", wide, wide, "towers", bias=True)
    b.linear("mm_projector.proj.2", v.opt("text_hidden_size", default=text_hidden), wide, "towers", bias=True)


def generic_tower(b: Builder, v: Cfg, text_hidden: int, prefix: str):
    """A ViT from the common keys (pre-LN, biased q/k/v/o and 2-matrix MLP, conv patch embed, projector to the
    text width). Tower families not known in detail get this; it is off by the family's extras."""
    h, inter = v.req("hidden_size", "embed_dim", "width"), v.req("intermediate_size", "mlp_dim")
    layers = v.req("num_hidden_layers", "depth", "layers")
    patch = v.opt("patch_size", default=14)
    b.add(f"{prefix}.patch_embed", "towers", "conv", (h, v.opt("num_channels", "in_channels", default=3), patch, patch))
    for p, _ in b.layers(f"{prefix}.layers", [0] * layers):
        b.linear(f"{p}.qkv", 3 * h, h, "towers", bias=True)
        b.linear(f"{p}.proj", h, h, "towers", bias=True)
        b.linear(f"{p}.fc1", inter, h, "towers", bias=True)
        b.linear(f"{p}.fc2", h, inter, "towers", bias=True)
        b.norm(f"{p}.norm1", h, "towers", bias=True, count=2)
    b.linear(f"{prefix}.projector", text_hidden, h, "towers", bias=True)
    b.notes.append(f"{prefix}: priced by the generic ViT formula (tower ±15%)")


def minimax_m3_tower(b: Builder, v: Cfg, config: dict, text_hidden: int):
    """MiniMax-M3's vision tower and projector (transformers' MiniMaxM3VL): an unbiased Conv3d patch
    embedding (temporal × patch × patch), a biased pre-LayerNorm, CLIP blocks (biased q/k/v/out, fc1/fc2,
    two biased LayerNorms), then a projector of two biased GELU MLPs: each patch to
    ``projector_hidden_size`` and the text width, then the ``spatial_merge_size``² merged patches
    (text width × merge²) back to the text width. The merge and temporal sizes are the vision config's,
    else its ``img_token_compression_config``'s, else the class default 2."""
    h, inter, layers = v.req("hidden_size"), v.req("intermediate_size"), v.req("num_hidden_layers")
    patch = v.req("patch_size")
    compression = v.get("img_token_compression_config")
    compression = compression if isinstance(compression, dict) else {}
    tp = v.opt("temporal_patch_size", default=int(compression.get("temporal_patch_size") or 2))
    merge = v.opt("spatial_merge_size", default=int(compression.get("spatial_merge_size") or 2))
    proj = int(config.get("projector_hidden_size") or 6144)  # MiniMaxM3VLConfig's default
    pre = "vision_tower"
    b.add(f"{pre}.embeddings.proj", "towers", "conv", (h, v.opt("num_channels", default=3), tp, patch, patch))
    b.norm(f"{pre}.pre_layrnorm", h, "towers", bias=True)
    for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
        b.linear(f"{pre}.layers.self_attn.{n}", h, h, "towers", bias=True, count=layers)
    b.linear(f"{pre}.layers.mlp.fc1", inter, h, "towers", bias=True, count=layers)
    b.linear(f"{pre}.layers.mlp.fc2", h, inter, "towers", bias=True, count=layers)
    b.norm(f"{pre}.layers.layer_norm1", h, "towers", bias=True, count=2 * layers)
    m = "multi_modal_projector"
    b.linear(f"{m}.linear_1", proj, h, "towers", bias=True)
    b.linear(f"{m}.linear_2", text_hidden, proj, "towers", bias=True)
    b.linear(f"{m}.merge_linear_1", proj, text_hidden * merge * merge, "towers", bias=True)
    b.linear(f"{m}.merge_linear_2", text_hidden, proj, "towers", bias=True)
