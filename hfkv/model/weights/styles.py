"""What a family's checkpoint adds to the layout the layer specs and the config's shapes already give:
tensor names (quantisation ignore lists match them), biases and norms the config does not state, the
head's tying when the config is silent, where the experts sit, MTP layers that ship. Data only: the
spec-driven pricer (``stack``) reads a ``Style``; a model type without one gets ``GENERIC``, whose
every choice is the common decoder's (gated MLP, two norms a layer, biases as ``attention_bias`` says)
and whose figure says so (``Style.known`` False widens the estimate's stated error).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

Flag = tuple[tuple[str, ...], bool]  # (config keys read in order, value when none is written)


@dataclass(frozen=True)
class Style:
    known: bool = True  # False: the generic layout, not checked against this family's checkpoints
    # attention: biases (config keys and default), q/k norms ("head": one head wide; "full": all heads
    # wide; "none"; None: the config's use_qk_norm / qk_norm / qk_layernorm, one head wide), a gate as
    # wide as q (Qwen3-Next's attn_output_gate, read with this default)
    qkv_bias: Flag = (("attention_bias", "qkv_bias"), False)
    o_bias: Flag = (("attention_bias",), False)
    qk_norm: str | None = None
    qk_norm_width: str = "head"  # how wide the config's flag makes them: "head", or "full" (Cohere: heads × dim)
    q_gate: bool = False
    sinks: bool = False  # one learned attention sink per query head on every attention layer (GraniteSWA)
    # per layer: norms beside the q/k norms, and their name; the first layer's own norms (RWKV's pre_ln)
    norms: int | None = None  # None: two, or one in a stack of Mamba blocks alone
    # the family's Mamba layers carry a feed-forward too (Jamba, Bamba, GraniteMoeHybrid): a config whose every
    # layer is Mamba is not a pure state-space model then
    ssm_ffn: bool = False
    mamba_norms: bool = False  # Jamba's Mamba mixer normalises dt, B and C (dt_layernorm, b_ and c_layernorm)
    norm: str = "input_layernorm"
    norm_bias: bool = False
    # None: the config's tie_word_embeddings, else the rule in ``stack.untied``
    tie: bool | None = None
    # the family's layers carry routed experts: a config without the expert count lacks a shape
    sparse: bool = False
    # the family's layers never do: a config naming experts is not this family's checkpoint (fail closed)
    dense: bool = False
    # the keys of the routed experts' width, in order (Mixtral-like families: intermediate_size)
    expert_size: tuple[str, ...] = ("moe_intermediate_size", "expert_intermediate_size", "intermediate_size")
    prefix: str = "model"
    layers: str = "layers"
    embed: str = "embed_tokens"
    final_norm: str = "norm"
    head: str = "lm_head"
    attn: str = "self_attn"
    mixer: str | None = None  # the name of a linear-attention or SSM mixer; None: the kind's usual name
    # feed-forward: "auto" (every layer has one: dense, or routed experts where ``moe_flags`` says),
    # "nemotron" (the hybrid pattern's letters say which layers have a dense MLP or experts), "deci"
    # (Nemotron-NAS: each block's own FFN width, no-op or linear, from block_configs)
    ffn: str = "auto"
    gated: bool = True
    mlp: str = "mlp"
    moe: str = "mlp"
    mlp_names: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj")
    experts: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj")
    shared: str = "shared_experts"
    shared_names: tuple[str, str, str] | None = None  # None: ``experts``
    shared_gate: str | None = None  # a (1, hidden) gate on the shared expert (Qwen2-MoE, Qwen3-Next)
    shared_count: int = 0  # shared experts of the routed size when the config names none (Llama 4: one)
    router: str = "gate"
    router_bias: bool | None = None  # fp32 e_score_correction_bias; None: topk_method noaux_tc / use_routing_bias
    # Qwen3-Next's linear attention fuses q, k, v and z (and b, a) in one projection each
    gdn_fused: bool = False
    # Kimi Delta Attention with a full-rank decay (f_proj) and output gate (g_proj), not KDA's low-rank pairs
    kda_full_rank: bool = False
    mla_head_gate: bool = False  # MLA layers gate their output by head (g_proj: hidden → heads)
    # MTP layers that ship with the checkpoint: "deepseek" (a full MoE layer, eh_proj, its own embed and
    # head copies), "qwen3_next" (fc, three norms, full-attention layers); their count when unwritten
    mtp: str | None = None
    mtp_default: int = 0
    # a second attention cache on a layer: "msa_index" (MiniMax-M3's sparse index: q and k projections)
    extra_heads: str | None = None
    defaults: dict = field(default_factory=dict)  # config-class values real configs leave out
    # a layout the specs and keys cannot give (a module the config does not describe): the reason
    unpriced: str | None = None

    @property
    def shared_projections(self) -> tuple[str, str, str]:
        return self.shared_names or self.experts


GENERIC = Style(known=False)
_LLAMA = Style(tie=False, dense=True)
_QWEN2 = Style(qkv_bias=((), True), o_bias=((), False), tie=False, dense=True)
_QWEN3 = Style(qk_norm="head", tie=False, dense=True)
_GEMMA = Style(tie=True, dense=True)
_MOE_WIDTH = ("moe_intermediate_size",)  # the experts' own width key (intermediate_size is the dense MLP's)
_DEEPSEEK = Style(o_bias=((), False), mtp="deepseek", tie=False, sparse=True, expert_size=_MOE_WIDTH)
_DEEPSEEK_BIASED_ROUTER = replace(_DEEPSEEK, router_bias=True)
_QWEN_GDN = Style(o_bias=((), False), qk_norm="head", q_gate=True, mixer="linear_attn", shared="shared_expert",
                  shared_gate="shared_expert_gate", mtp="qwen3_next", tie=False, expert_size=_MOE_WIDTH)
_MINIMAX_MOE = dict(moe="block_sparse_moe", experts=("w1", "w3", "w2"), tie=False, sparse=True,
                    expert_size=("intermediate_size",))
_MAMBA = Style(prefix="backbone", embed="embeddings", final_norm="norm_f", norms=1, norm="norm", mixer="mixer",
               tie=True)

STYLES: dict[str, Style] = {
    **dict.fromkeys(("llama", "mistral", "ministral", "phi3", "minicpm"), _LLAMA),
    "mixtral": replace(_LLAMA, dense=False, sparse=True, expert_size=("intermediate_size",)),
    **dict.fromkeys(("qwen2", "qwen2_5_vl", "qwen2_5_vl_text", "qwen2_vl", "qwen2_vl_text"), _QWEN2),
    "qwen2_moe": replace(_QWEN2, shared="shared_expert", shared_gate="shared_expert_gate", dense=False, sparse=True,
                         expert_size=_MOE_WIDTH),
    **dict.fromkeys(("qwen3", "qwen3_vl", "qwen3_vl_text", "exaone4"), _QWEN3),
    **dict.fromkeys(("qwen3_moe", "qwen3_vl_moe", "qwen3_vl_moe_text"),
                    replace(_QWEN3, dense=False, sparse=True, expert_size=_MOE_WIDTH)),
    "gemma": _GEMMA, "gemma2": replace(_GEMMA, norms=4),
    # (google/gemma-3-4b-it's text_config names none of these; Gemma3TextConfig supplies them)
    "gemma3_text": replace(_GEMMA, norms=4, qk_norm="head", defaults={
        "vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256}),
    **dict.fromkeys(("smollm3", "granite"), _GEMMA),
    # GraniteSWA (transformers' GraniteSWAAttention): a learned sink per query head on every layer
    "granite_swa": replace(_GEMMA, sinks=True),
    # Cohere (Command R) and Cohere2: one LayerNorm (weight only) before the parallel attention and MLP; Cohere's
    # optional q/k norms (use_qk_norm) are LayerNorms over (heads, head_dim)
    **dict.fromkeys(("cohere", "cohere2"), Style(norms=1, qk_norm_width="full", tie=True, dense=True)),
    # GLM-4 (transformers' GlmAttention): q/k/v biased as attention_bias says, o_proj never
    "glm": Style(qkv_bias=(("attention_bias",), True), o_bias=((), False), tie=False, dense=True),
    # GLM-4.1V's text model (transformers' Glm4vTextDecoderLayer): q/k/v always biased, o_proj not, four norms
    **dict.fromkeys(("glm4v", "glm4v_text"), Style(qkv_bias=((), True), o_bias=((), False), norms=4, tie=False,
                                                   dense=True)),
    # Jais-2: a plain (ungated) MLP, LayerNorms with biases; biases as attention_bias and mlp_bias say
    "jais2": Style(gated=False, norm_bias=True, tie=False, dense=True),
    # PhiMoE: LayerNorms with biases (and the final norm), lm_head biased when lm_head_bias says so
    "phimoe": Style(norm_bias=True, tie=False, sparse=True, expert_size=("intermediate_size",)),
    # Kolibri-1 (transformers' Kolibri1DecoderLayer): q/k norms one head wide, four norms a layer (sandwich),
    # an fp32 e_score_correction_bias on its router
    "kolibri1": Style(qk_norm="head", norms=4, router_bias=True, tie=False, sparse=True),
    # AFMoE (Trinity): q/k norms one head wide, a sigmoid gate as wide as q (gate_proj), four norms a layer, the
    # first num_dense_layers dense, an expert_bias beside the router
    "afmoe": Style(qk_norm="head", q_gate=True, norms=4, router_bias=True, tie=False, sparse=True,
                   expert_size=_MOE_WIDTH),
    # Seed-OSS: q/k/v biased unless attention_bias says otherwise, o only with attention_out_bias
    "seed_oss": Style(qkv_bias=(("attention_bias",), True), o_bias=(("attention_out_bias",), False), tie=False,
                      dense=True),
    # OLMo 2/3: q_norm and k_norm over all heads, not one head
    **dict.fromkeys(("olmo2", "olmo3", "olmo_hybrid"), Style(qk_norm="full", tie=False, dense=True)),
    "flex_olmo": Style(qk_norm="full", tie=False, sparse=True),
    "deepseek_v2": _DEEPSEEK,
    # (GLM-5's router keeps an e_score_correction_bias whatever topk_method says: transformers' GlmMoeDsaTopkRouter)
    **dict.fromkeys(("deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe", "glm_moe_dsa"), _DEEPSEEK_BIASED_ROUTER),
    # MiniMax-M2: q_norm over all query heads, k_norm over all KV heads; fp32 router bias; no shared expert
    "minimax_m2": Style(qk_norm="full", router_bias=True, **_MINIMAX_MOE),
    # Llama 4: QK norm without weights; experts and one shared expert under feed_forward
    "llama4_text": Style(qk_norm="none", prefix="language_model.model", head="language_model.lm_head",
                         mlp="feed_forward", moe="feed_forward", router="router", shared="shared_expert",
                         shared_count=1, tie=False, sparse=True, expert_size=("intermediate_size",)),
    "qwen3_next": replace(_QWEN_GDN, gdn_fused=True, mtp_default=1, sparse=True),
    **dict.fromkeys(("qwen3_5", "qwen3_5_text"), _QWEN_GDN),
    **dict.fromkeys(("qwen3_5_moe", "qwen3_5_moe_text"), replace(_QWEN_GDN, sparse=True)),
    **dict.fromkeys(("minimax", "minimax_m1"), Style(shared_gate="shared_moe_gate", **_MINIMAX_MOE)),
    # MiniMax-M3 (transformers' MiniMaxM3VL): per-head q/k norms, dense layers under mlp, MoE layers under
    # block_sparse_moe with w1/w3/w2 experts and a gate_proj/up_proj/down_proj shared expert, a routing bias
    **dict.fromkeys(("minimax_m3_vl", "minimax_m3_vl_text", "minimax_m3"), Style(
        qk_norm="head", shared_names=("gate_proj", "up_proj", "down_proj"), extra_heads="msa_index",
        **_MINIMAX_MOE)),
    **dict.fromkeys(("mamba", "falcon_mamba", "mamba_ssm"), _MAMBA),
    # Mamba-attention hybrids whose Mamba layers keep a feed-forward: Jamba (experts every expert_layer_period
    # layers, dt/B/C norms in the mixer), Bamba (a dense MLP), GraniteMoeHybrid (experts and a shared MLP)
    "jamba": Style(mixer="mamba", mlp="feed_forward", moe="feed_forward", router="router", final_norm="final_layernorm",
                   ssm_ffn=True, mamba_norms=True, tie=False, expert_size=("intermediate_size",)),
    "bamba": Style(mixer="mamba", mlp="feed_forward", final_norm="final_layernorm", ssm_ffn=True, tie=False,
                   dense=True),
    "granitemoehybrid": Style(mixer="mamba", moe="block_sparse_moe", router="router", shared="shared_mlp",
                              ssm_ffn=True, expert_size=("intermediate_size",)),
    "nemotron_h": Style(prefix="model", embed="embeddings", final_norm="norm_f", norms=1, norm="norm", attn="mixer",
                        mixer="mixer", mlp="mixer", moe="mixer", ffn="nemotron", gated=False, router_bias=True,
                        tie=False, expert_size=_MOE_WIDTH),
    **dict.fromkeys(("kimi_linear", "kimi_k3"), Style(router_bias=True, tie=False, sparse=True, expert_size=_MOE_WIDTH)),
    # Ling 3 (transformers' BailingHybrid): KDA-like linear layers with full-rank f_proj and g_proj, MLA layers
    # with a per-head output gate, a routing bias (e_score_correction_bias)
    "bailing_hybrid": Style(router_bias=True, kda_full_rank=True, mla_head_gate=True, tie=False, sparse=True,
                            expert_size=_MOE_WIDTH),
    # Hunyuan-Large: cross-layer attention (a layer reading another's KV has no k/v projections), one
    # shared expert of intermediate_size (num_shared_expert)
    "hunyuan": Style(qk_norm="head"),
    # ChatGLM2/3 and GLM-4 (remote code): q/k/v biased as add_qkv_bias says, the dense MLP biased as
    # add_bias_linear says
    "chatglm": Style(qkv_bias=(("add_qkv_bias",), False), o_bias=(("add_bias_linear",), False), dense=True),
    # LFM2: out_proj, q/k layernorms one head wide, operator and FFN norms, w1/w3/w2 feed-forward
    "lfm2": Style(qk_norm="head", mlp="feed_forward", mlp_names=("w1", "w3", "w2"), final_norm="embedding_norm",
                  tie=True, dense=True),
    "rwkv": Style(prefix="rwkv", layers="blocks", embed="embeddings", final_norm="ln_out", head="head",
                  norm="ln1", norm_bias=True, mixer="attention", mlp="feed_forward", tie=False),
    # Nemotron-NAS (DeciLM, remote code): each block's attention and FFN from block_configs
    **dict.fromkeys(("nemotron-nas", "nemotron_nas", "deci"), Style(ffn="deci", tie=False, dense=True)),
    # Molmo (remote code): a fused ff_proj whose intermediate_size is twice the MLP's width, and a vision
    # backbone the config does not describe
    "molmo": Style(unpriced="molmo's vision backbone is fixed in its remote code, not described by the config"),
}


def style_for(*model_types: str | None) -> Style:
    """The first model type with a style, else ``GENERIC``."""
    for mt in model_types:
        if mt and mt in STYLES:
            return STYLES[mt]
    return GENERIC
