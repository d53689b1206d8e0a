"""A decoder stack priced from the mappers' layer specs (``hfkv.model.specs``) and the config's shapes.

Each layer's parts say what its attention or mixer holds:

- ``FullAttention`` / ``SlidingWindow`` / ``ChunkedLocal``: q, k, v and o from the KV heads and head
  dims of the part and the config's query heads; a layer that reads another layer's KV
  (``source_layer``) has no k or v of its own (cross-layer attention);
- ``MLALatent``: MLA with the spec's KV LoRA rank and RoPE width and the config's q LoRA rank, no-RoPE
  and value widths; with ``IndexerKeys`` (one entry per token) DSA's lightning indexer;
- ``LinearAttentionState``: the mixer of its variant (Gated DeltaNet, KDA, lightning), heads, head dims
  and short-conv kernel from the spec;
- ``MambaState``: Mamba-1 or Mamba-2, heads, state, groups and conv kernel from the spec;
- ``ShortConvState``: a gated short convolution (in_proj to 3 × dim, depthwise conv, out_proj);
- ``RwkvState``: RWKV-4's time mixing (its channel mixing is the layer's feed-forward).

The config gives what no spec holds: the query heads, every layer's feed-forward (dense, or routed
experts where the MoE layer pattern says, with shared experts and the router), the embeddings and
head, MTP layers. The family's ``Style`` names the tensors and adds what no key states. Layers alike
are priced once with their count (``Builder.layers``). A shape the config lacks is ``Missing`` naming
the key; a layer whose parts combine in a way no style describes is ``Missing`` naming ``model_type``.
"""

from __future__ import annotations

import math
import re
from functools import partial
from operator import attrgetter
from typing import Any, Sequence

from hfkv.model.weights.builder import EXPERT_KEYS, Builder, Cfg, Missing, dense_only, embed_head, moe_flags
from hfkv.model.weights.styles import Style

_HEADS = ("full", "sliding", "chunked")
# keys only a mixture-of-experts config writes (with a value): without the expert count it lacks a shape
_MOE_SIGNS = ("moe_intermediate_size", "num_experts_per_tok", "num_experts_per_token", "moe_topk",
              "n_shared_experts", "num_shared_experts", "first_k_dense_replace", "shared_expert_intermediate_size")
MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules", "num_mtp_layers")


def mixer_key(parts: Sequence[Any]) -> tuple:
    """What of a layer's parts shapes its weights, as a plain tuple (a window or a top-k does not: a
    sliding and a full layer of the same heads are the same weights)."""
    key = []
    for part in parts:
        kind = part.kind
        if kind in _HEADS:
            v = part.head_dim if part.v_head_dim is None else part.v_head_dim
            key.append(("heads", part.kv_heads, part.head_dim, v, part.source_layer is not None))
        elif kind == "mla":
            key.append(("mla", part.kv_lora_rank, part.rope_dim))
        elif kind == "indexer":
            key.append(("indexer", part.head_dim, part.ratio))
        elif kind == "linear":
            key.append(("linear", part.variant, part.num_qk_heads, part.num_v_heads, part.head_k_dim,
                        part.head_v_dim, part.conv_kernel))
        elif kind == "mamba":
            key.append(("mamba", part.version, part.num_heads, part.head_dim, part.state_size, part.n_groups,
                        part.conv_kernel))
        elif kind == "conv":
            key.append(("conv", part.dim, part.conv_kernel))
        elif kind == "rwkv":
            key.append(("rwkv", part.hidden))
        else:
            key.append(("other", kind))
    return tuple(key)


class _once:
    """A value computed on first read and kept on the instance (functools.cached_property takes a lock
    on every first read in Python 3.11: a tenth of a small model's estimate)."""

    def __init__(self, fn):
        self.fn, self.name = fn, fn.__name__

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


class Shapes:
    """The config's sizes a stack needs, read once (``Cfg.req`` names a missing key)."""

    def __init__(self, c: Cfg, s: Style, mt: str, top: dict | None, architectures: Sequence[str]):
        self.c, self.s, self.mt, self.top = c, s, mt, top
        self.architectures = architectures
        self.hidden = c.req("hidden_size", "d_model", "n_embd")
        self.notes: list[str] = []
        self.norms = s.norms or 2  # per layer; a stack of Mamba blocks alone has one (``price``)
        self.first_kinds: set[str] = set()  # the first part's kind of each distinct layer ("" for none)

    @_once
    def heads(self) -> int:
        return self.c.req("num_attention_heads", "n_head", "num_heads", "n_heads")

    @_once
    def qkv_bias(self) -> bool:
        return _flag(self.c, self.s.qkv_bias)

    @_once
    def o_bias(self) -> bool:
        return _flag(self.c, self.s.o_bias)

    @_once
    def qk_norm(self) -> str:
        if self.s.qk_norm is not None:
            return self.s.qk_norm
        on = any(self.c.flag(k) for k in ("use_qk_norm", "qk_norm", "qk_layernorm"))
        return self.s.qk_norm_width if on else "none"

    @_once
    def experts(self) -> int:
        """The routed experts of a MoE layer; 0 for a dense model. A model the family, its names or its
        keys mark as mixture-of-experts without an expert count lacks a shape (never priced as dense)."""
        if self.s.dense:
            dense_only(self.c, self.mt)
            return 0
        count = self.c.opt(*EXPERT_KEYS)
        if count > 1 or any(self.c.has(k) for k in EXPERT_KEYS):  # a written 0 or 1: a dense model
            return count if count > 1 else 0
        named = "moe" in self.mt.lower() or any("moe" in a.lower() or "mixtral" in a.lower()
                                                for a in self.architectures)
        if self.s.sparse or named or any(self.c.opt(k) for k in _MOE_SIGNS):
            self.missing_experts()
        return 0

    def missing_experts(self) -> None:
        where = f"{self.c.where}." if self.c.where else ""
        raise Missing(f"config lacks {' / '.join(where + k for k in EXPERT_KEYS)} (routed expert count of a "
                      "mixture-of-experts model)", [where + k for k in EXPERT_KEYS])

    @_once
    def expert_size(self) -> int:
        return self.c.req(*self.s.expert_size, why="expert size")

    @_once
    def dense_size(self) -> int:
        size = self.c.req("dense_intermediate_size", "intermediate_size_mlp", "intermediate_size", "ffn_hidden_size",
                          "n_inner", why="MLP size")
        if self.c.flag("block_auto_adjust_ff_dim"):
            # LFM2 (transformers' Lfm2MLP): two thirds of the written size, then the multiplier and the
            # rounding to block_multiple_of when a multiplier is written
            size = int(2 * size / 3)
            multiplier = self.c.get("block_ffn_dim_multiplier")
            if multiplier is not None:
                of = self.c.opt("block_multiple_of", default=1)
                size = of * -(-int(multiplier * size) // of)
        return size

    @_once
    def router_bias(self) -> bool:
        if self.s.router_bias is not None:
            return self.s.router_bias
        return (self.c.get("topk_method") == "noaux_tc" or self.c.flag("use_routing_bias")
                or self.c.flag("moe_router_enable_expert_bias"))


def _flag(c: Cfg, flag: tuple[tuple[str, ...], bool]) -> bool:
    keys, default = flag
    for key in keys:
        if c.has(key):
            return c.flag(key)
    return default


def price(b: Builder, c: Cfg, s: Style, mt: str, top: dict | None, specs: Sequence[Any],
          architectures: Sequence[str] = ()) -> list[str]:
    """Add the stack's tensors to ``b``; returns notes on what was assumed."""
    if s.unpriced:
        raise Missing(s.unpriced, ["model_type"])
    sh = Shapes(c, s, mt, top, architectures)
    hidden = sh.hidden
    vocab = c.req("vocab_size", "padded_vocab_size")
    multiple = c.opt("pad_vocab_size_multiple")
    if multiple:  # mamba_ssm's embedding rows, padded to a multiple of pad_vocab_size_multiple
        vocab = -(-vocab // multiple) * multiple
    # a mapper builds a part once and puts it in many layers: each distinct set of parts is read once
    ids = list(map(tuple, map(partial(map, id), map(attrgetter("parts"), specs))))  # (C loops: 80 layers ~10 µs)
    keys = {i: mixer_key(spec.parts) for i, spec in dict(zip(ids, specs)).items()}
    mixers = [keys[i] for i in ids]
    # what the stack holds, from its distinct mixers: the first part's kind of each ("" for none)
    sh.first_kinds = {k[0][0] if k else "" for k in keys.values()}
    ffns = _feed_forwards(sh, mixers)
    head = untied(c, s, top, architectures, sh.notes)
    embed_head(b, c, vocab, hidden, head, prefix=s.prefix, embed=s.embed, norm=s.final_norm, head=s.head)
    if head and c.flag("lm_head_bias"):  # (PhiMoE)
        b.add(f"{s.head}.bias", "embedding", "bias", (vocab,))
    if s.norm_bias and s.final_norm:
        b.add(f"{s.prefix}.{s.final_norm}.bias", "other", "norm", (hidden,))
    if "rwkv" in sh.first_kinds:
        b.norm(f"{s.prefix}.{s.layers}.0.pre_ln", hidden, bias=True)  # RWKV: the first block's own LayerNorm
    if s.norms is None:
        sh.norms = 1 if sh.first_kinds == {"mamba"} and not s.ssm_ffn else 2  # (a feed-forward has its own norm)
    for p, (mixer, ffn) in b.layers(f"{s.prefix}.{s.layers}", list(zip(mixers, ffns))):
        layer(b, sh, p, mixer, ffn)
    _mtp(b, sh, mixers, len(specs), vocab)
    return sh.notes


def layer(b: Builder, sh: Shapes, p: str, mixer: tuple, ffn: str | tuple | None, role: str | None = None) -> None:
    """One layer: its mixer, its feed-forward and its norms."""
    s = sh.s
    _mixer(b, sh, p, mixer, role)
    if isinstance(ffn, tuple):
        _deci_block(b, sh, p, bool(mixer), ffn, role)
        return
    b.norm(f"{p}.{s.norm}", sh.hidden, role or "other", bias=s.norm_bias, count=sh.norms)
    if ffn == "dense":
        b.mlp(f"{p}.{s.mlp}", sh.hidden, sh.dense_size, role or "dense_mlp", gated=s.gated,
              bias=sh.c.flag("mlp_bias"), names=s.mlp_names)
    elif ffn == "moe":
        _experts(b, sh, f"{p}.{s.moe}", role)
    elif ffn == "rwkv":
        _channel_mix(b, sh, f"{p}.{s.mlp}", role)


def _mixer(b: Builder, sh: Shapes, p: str, key: tuple, role: str | None) -> None:
    kinds = [k[0] for k in key]
    s = sh.s
    if not key:
        return
    if set(kinds) == {"heads"} and (len(key) == 1 or (len(key) == 2 and s.extra_heads == "msa_index")):
        _gqa(b, sh, f"{p}.{s.attn}", key[0], role or "attention")
        if len(key) == 2:
            _msa_index(b, sh, f"{p}.{s.attn}", key[1], role or "attention")
        return
    if kinds == ["mla"] or kinds == ["mla", "indexer"] and key[1][2] == 1:
        q_rank = _mla(b, sh, f"{p}.{s.attn}", key[0], role or "attention")
        if len(key) == 2:
            _dsa_indexer(b, sh, f"{p}.{s.attn}", key[1], q_rank, role or "attention")
        return
    build = _MIXERS.get(key[0][:2] if key[0][0] in ("linear", "mamba") else key[0][:1]) if len(key) == 1 else None
    if build is not None:
        build(b, sh, p, key[0], role or "mixers")
        return
    parts = " + ".join(k[0] if k[0] != "other" else k[1] for k in key)
    raise Missing(f"a layer of {parts} parts: how model_type {sh.mt!r} lays out its weights is not known here",
                  ["model_type"])


def _gqa(b: Builder, sh: Shapes, a: str, key: tuple, role: str) -> None:
    _, kv, hd, vd, shared = key
    heads, hidden, s = sh.heads, sh.hidden, sh.s
    gate = s.q_gate and sh.c.flag("attn_output_gate", True)
    b.linear(f"{a}.q_proj", heads * hd * (2 if gate else 1), hidden, role, sh.qkv_bias)
    if not shared:
        b.linear(f"{a}.k_proj", kv * hd, hidden, role, sh.qkv_bias)
        if vd:
            b.linear(f"{a}.v_proj", kv * vd, hidden, role, sh.qkv_bias)
    b.linear(f"{a}.o_proj", hidden, heads * vd, role, sh.o_bias)
    if s.sinks:
        b.param(f"{a}.sinks", (heads,), role)
    if sh.qk_norm == "head":
        b.norm(f"{a}.q_norm", hd, role)
        if not shared:
            b.norm(f"{a}.k_norm", hd, role)
    elif sh.qk_norm == "full":
        b.norm(f"{a}.q_norm", heads * hd, role)
        if not shared:
            b.norm(f"{a}.k_norm", kv * hd, role)


def _msa_index(b: Builder, sh: Shapes, a: str, key: tuple, role: str) -> None:
    """MiniMax-M3's sparse-attention index (transformers' MiniMaxM3VLIndexer): q for each index head and
    one k, ``index_head_dim`` wide (the spec's second cache), each with its RMSNorm."""
    d = key[2]
    sub = sh.c.get("sparse_attention_config")
    n = Cfg(sub, where="sparse_attention_config").opt("sparse_num_index_heads") if isinstance(sub, dict) else 0
    n = n or sh.c.req("index_n_heads", why="index query heads (sparse_attention_config.sparse_num_index_heads)")
    b.linear(f"{a}.index_q_proj", n * d, sh.hidden, role)
    b.linear(f"{a}.index_k_proj", d, sh.hidden, role)
    b.norm(f"{a}.index_q_norm", d, role, count=2)


def _mla(b: Builder, sh: Shapes, a: str, key: tuple, role: str) -> int:
    _, rank, rope = key
    c, heads, hidden = sh.c, sh.heads, sh.hidden
    nope = c.req("qk_nope_head_dim")
    vdim = c.req("v_head_dim")
    q_rank = c.opt("q_lora_rank")
    bias = c.flag("attention_bias")
    if q_rank:
        b.linear(f"{a}.q_a_proj", q_rank, hidden, role, bias)
        b.norm(f"{a}.q_a_layernorm", q_rank, role)
        b.linear(f"{a}.q_b_proj", heads * (nope + rope), q_rank, role)
    else:
        b.linear(f"{a}.q_proj", heads * (nope + rope), hidden, role)
    b.linear(f"{a}.kv_a_proj_with_mqa", rank + rope, hidden, role, bias)
    b.norm(f"{a}.kv_a_layernorm", rank, role)
    b.linear(f"{a}.kv_b_proj", heads * (nope + vdim), rank, role)
    b.linear(f"{a}.o_proj", hidden, heads * vdim, role, bias)
    if c.flag("mla_use_output_gate"):  # Kimi-Linear's MLA layers gate their output per head
        b.linear(f"{a}.g_proj", heads * vdim, hidden, role)
    elif sh.s.mla_head_gate:  # one gate value a head (BailingHybrid)
        b.linear(f"{a}.g_proj", heads, hidden, role)
    return q_rank


def _dsa_indexer(b: Builder, sh: Shapes, a: str, key: tuple, q_rank: int, role: str) -> None:
    d = key[1]
    n = sh.c.req("index_n_heads")
    b.linear(f"{a}.indexer.wq_b", n * d, q_rank or sh.hidden, role)
    b.linear(f"{a}.indexer.wk", d, sh.hidden, role)
    b.norm(f"{a}.indexer.k_norm", d, role, bias=True)
    b.linear(f"{a}.indexer.weights_proj", n, sh.hidden, role)


def _gdn(b: Builder, sh: Shapes, p: str, key: tuple, role: str) -> None:
    """Gated DeltaNet (Qwen3-Next, Qwen3.5): q and k of the key heads, v and the output gate z of the
    value heads, b and a per value head, a short conv over q, k and v."""
    _, _, kh, vh, kd, vd, k = key
    m = f"{p}.{sh.s.mixer or 'linear_attn'}"
    hidden, kw, vw = sh.hidden, kh * kd, vh * vd
    if sh.s.gdn_fused:
        b.linear(f"{m}.in_proj_qkvz", 2 * kw + 2 * vw, hidden, role)
        b.linear(f"{m}.in_proj_ba", 2 * vh, hidden, role)
    else:
        b.linear(f"{m}.in_proj_qkv", 2 * kw + vw, hidden, role)
        b.linear(f"{m}.in_proj_z", vw, hidden, role)
        b.linear(f"{m}.in_proj_b", vh, hidden, role)
        b.linear(f"{m}.in_proj_a", vh, hidden, role)
    b.add(f"{m}.conv1d", role, "conv", (2 * kw + vw, 1, k))
    b.param(f"{m}.dt_bias", (vh,), role)
    b.param(f"{m}.A_log", (vh,), role)
    b.norm(f"{m}.norm", vd, role)
    b.linear(f"{m}.out_proj", hidden, vw, role)


def _kda(b: Builder, sh: Shapes, p: str, key: tuple, role: str) -> None:
    """Kimi Delta Attention (Kimi-Linear): q, k, v with a short conv each, the decay's low-rank f_a/f_b,
    fp32 dt_bias and A_log, a beta projection, the output gate (full rank when linear_attn_config says
    use_full_rank_gate, else low rank) and the output norm; a style's ``kda_full_rank`` makes the decay
    and the gate full rank (Ling 3)."""
    _, _, kh, vh, kd, vd, k = key
    m = f"{p}.{sh.s.mixer or 'self_attn'}"
    hidden, kw, vw = sh.hidden, kh * kd, vh * vd
    lin = sh.c.get("linear_attn_config")
    full_rank_gate = bool(lin.get("use_full_rank_gate")) if isinstance(lin, dict) else sh.c.flag("use_full_rank_gate")
    b.linear(f"{m}.q_proj", kw, hidden, role)
    b.linear(f"{m}.k_proj", kw, hidden, role)
    b.linear(f"{m}.v_proj", vw, hidden, role)
    b.add(f"{m}.conv1d", role, "conv", (2 * kw + vw, 1, k))
    if sh.s.kda_full_rank:
        b.linear(f"{m}.f_proj", kw, hidden, role)
    else:
        b.linear(f"{m}.f_a_proj", kd, hidden, role)
        b.linear(f"{m}.f_b_proj", kw, kd, role)
    b.param(f"{m}.dt_bias", (kw,), role, dtype_bytes=4)
    b.param(f"{m}.A_log", (kh,), role, dtype_bytes=4)
    b.linear(f"{m}.b_proj", kh, hidden, role)
    if full_rank_gate or sh.s.kda_full_rank:
        b.linear(f"{m}.g_proj", vw, hidden, role)
    else:
        b.linear(f"{m}.g_a_proj", vd, hidden, role)
        b.linear(f"{m}.g_b_proj", vw, vd, role)
    b.norm(f"{m}.o_norm", vd, role)
    b.linear(f"{m}.o_proj", hidden, vw, role)


def _lightning(b: Builder, sh: Shapes, p: str, key: tuple, role: str) -> None:
    """MiniMax's lightning attention: one q/k/v projection, an output gate, the output norm."""
    _, _, qk, vh, kd, vd, _ = key
    m = f"{p}.{sh.s.mixer or 'self_attn'}"
    hidden, vw = sh.hidden, vh * vd
    b.linear(f"{m}.qkv_proj", 2 * qk * kd + vw, hidden, role)
    b.linear(f"{m}.output_gate", vw, hidden, role)
    b.linear(f"{m}.out_proj", hidden, vw, role)
    b.norm(f"{m}.norm", vw, role)


def _mamba1(b: Builder, sh: Shapes, p: str, key: tuple, role: str) -> None:
    _, _, heads, hd, n, _, k = key
    c, hidden = sh.c, sh.hidden
    m = f"{p}.{sh.s.mixer or 'mixer'}"
    inner = heads * hd
    rank = c.get("time_step_rank", "dt_rank")
    rank = math.ceil(hidden / 16) if rank in (None, "auto") else int(rank)
    bias = c.flag("use_bias")
    b.linear(f"{m}.in_proj", 2 * inner, hidden, role, bias)
    b.add(f"{m}.conv1d", role, "conv", (inner, 1, k))
    if c.flag("use_conv_bias", True):
        b.add(f"{m}.conv1d.bias", role, "bias", (inner,))
    b.linear(f"{m}.x_proj", rank + 2 * n, inner, role)
    b.linear(f"{m}.dt_proj", inner, rank, role, bias=True)
    b.param(f"{m}.A_log", (inner, n), role)
    b.param(f"{m}.D", (inner,), role)
    b.linear(f"{m}.out_proj", hidden, inner, role, bias)
    if sh.s.mamba_norms:
        b.norm(f"{m}.dt_layernorm", rank, role)
        b.norm(f"{m}.b_layernorm", n, role, count=2)  # and c_layernorm


def _mamba2(b: Builder, sh: Shapes, p: str, key: tuple, role: str) -> None:
    _, _, heads, hd, n, groups, k = key
    c, hidden = sh.c, sh.hidden
    m = f"{p}.{sh.s.mixer or 'mixer'}"
    inner = heads * hd
    conv_dim = inner + 2 * groups * n
    bias = c.flag("mamba_proj_bias", c.flag("use_bias"))
    b.linear(f"{m}.in_proj", 2 * inner + 2 * groups * n + heads, hidden, role, bias)
    b.add(f"{m}.conv1d", role, "conv", (conv_dim, 1, k))
    if c.flag("use_conv_bias", c.flag("mamba_conv_bias", True)):
        b.add(f"{m}.conv1d.bias", role, "bias", (conv_dim,))
    b.param(f"{m}.dt_bias", (heads,), role)
    b.param(f"{m}.A_log", (heads,), role)
    b.param(f"{m}.D", (heads,), role)
    b.norm(f"{m}.norm", inner, role)
    b.linear(f"{m}.out_proj", hidden, inner, role, bias)


def _short_conv(b: Builder, sh: Shapes, p: str, key: tuple, role: str) -> None:
    """A gated short convolution (LFM2): in_proj to B, C and x (3 × dim), a depthwise conv of the
    spec's kernel, out_proj; biased when conv_bias says so."""
    _, dim, k = key
    m = f"{p}.{sh.s.mixer or 'conv'}"
    bias = sh.c.flag("conv_bias")
    b.linear(f"{m}.in_proj", 3 * dim, sh.hidden, role, bias)
    b.add(f"{m}.conv", role, "conv", (dim, 1, k))
    if bias:
        b.add(f"{m}.conv.bias", role, "bias", (dim,))
    b.linear(f"{m}.out_proj", sh.hidden, dim, role, bias)


def _time_mix(b: Builder, sh: Shapes, p: str, key: tuple, role: str) -> None:
    """RWKV-4's time mixing (transformers' RwkvSelfAttention): key, value and receptance to the
    attention width, output back, time_decay and time_first per channel, three token-shift mixes."""
    hidden = sh.hidden
    width = sh.c.opt("attention_hidden_size", default=hidden)
    m = f"{p}.{sh.s.mixer or 'attention'}"
    for name in ("key", "value", "receptance"):
        b.linear(f"{m}.{name}", width, hidden, role)
    b.linear(f"{m}.output", hidden, width, role)
    b.param(f"{m}.time_decay", (width,), role)
    b.param(f"{m}.time_first", (width,), role)
    b.param(f"{m}.time_mix_key", (hidden,), role, count=3)


def _channel_mix(b: Builder, sh: Shapes, m: str, role: str | None) -> None:
    """RWKV-4's channel mixing (transformers' RwkvFeedForward): key to intermediate_size (4 × hidden
    unwritten), receptance, value back, two token-shift mixes."""
    hidden = sh.hidden
    inner = sh.c.opt("intermediate_size", default=4 * hidden)
    r = role or "dense_mlp"
    b.linear(f"{m}.key", inner, hidden, r)
    b.linear(f"{m}.receptance", hidden, hidden, r)
    b.linear(f"{m}.value", hidden, inner, r)
    b.param(f"{m}.time_mix_key", (hidden,), r, count=2)


def _experts(b: Builder, sh: Shapes, m: str, role: str | None) -> None:
    """Routed experts (a router, its fp32 score bias when the family or config has one), optionally
    behind a latent projection (Kimi: routed_expert_hidden_size), and the shared experts."""
    c, s, hidden = sh.c, sh.s, sh.hidden
    experts = sh.experts
    if not experts:  # the layer pattern says experts here: a count the config does not give
        sh.missing_experts()
    size = sh.expert_size
    b.add(f"{m}.{s.router}", role or "other", "router", (experts, hidden))
    if sh.router_bias:
        b.param(f"{m}.{s.router}.e_score_correction_bias", (experts,), role or "other", dtype_bytes=4)
    width = c.opt("routed_expert_hidden_size", default=hidden)
    if width != hidden:
        # latent MoE: the experts work at routed_expert_hidden_size, the projections kept in 16 bits
        # (Kimi-K3's published dtype breakdown has only the routed experts in 4-bit tensors)
        b.linear(f"{m}.latent_down", width, hidden, role or "routed_experts", exempt=True)
        b.linear(f"{m}.latent_up", hidden, width, role or "routed_experts", exempt=True)
        if c.flag("latent_moe_use_norm"):
            b.norm(f"{m}.latent_norm", width, role or "routed_experts")
    b.mlp(f"{m}.experts.0", width, size, role or "routed_experts", gated=s.gated, count=experts, names=s.experts)
    shared = c.opt("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size", "shared_intermediate_size")
    if not shared:
        shared = size * (c.opt("n_shared_experts", "num_shared_experts", "num_shared_expert") or s.shared_count)
    if shared:
        b.mlp(f"{m}.{s.shared}", hidden, shared, role or "shared_experts", gated=s.gated, names=s.shared_projections)
        if s.shared_gate:
            b.add(f"{m}.{s.shared_gate}", role or "other", "router", (1, hidden))


# a single-part layer's mixer, by its kind (and variant or version)
_MIXERS = {("linear", "gdn"): _gdn, ("linear", "kda"): _kda, ("linear", "lightning"): _lightning,
           ("mamba", 1): _mamba1, ("mamba", 2): _mamba2, ("conv",): _short_conv, ("rwkv",): _time_mix}

def _deci_block(b: Builder, sh: Shapes, p: str, attends: bool, block: tuple, role: str | None) -> None:
    """The rest of a Nemotron-NAS (DeciLM) block: an attention replaced by one hidden × hidden linear,
    the FFN of its own width (none for a no-op, a hidden × hidden linear when replaced), a norm before
    each of the two that is there."""
    _, linear_attention, width = block
    hidden = sh.hidden
    if linear_attention:
        b.linear(f"{p}.{sh.s.attn}.linear_attn", hidden, hidden, role or "attention")
    if width > 0:
        b.mlp(f"{p}.{sh.s.mlp}", hidden, width, role or "dense_mlp", names=sh.s.mlp_names)
    elif width < 0:
        b.linear(f"{p}.{sh.s.mlp}.linear_mlp", hidden, hidden, role or "dense_mlp")
    norms = (attends or linear_attention) + bool(width)
    b.norm(f"{p}.{sh.s.norm}", hidden, role or "other", count=norms)


def _deci_blocks(c: Cfg, n: int, hidden: int) -> list[tuple]:
    """Per Nemotron-NAS block: ("deci", attention replaced by a linear, FFN width: 0 for a no-op, -1 for a
    linear), the width from ``ffn_mult`` as DeciLM's _ffn_mult_to_intermediate_size makes it: two thirds
    of ffn_mult × hidden, rounded up to a multiple of 256."""
    blocks = c.get("block_configs")
    if not isinstance(blocks, list) or len(blocks) < n:
        raise Missing(f"config lacks block_configs for its {n} layers (each block's FFN width)", ["block_configs"])
    out = []
    for i, block in enumerate(blocks[:n]):
        attention = block.get("attention") if isinstance(block, dict) else None
        ffn = block.get("ffn") if isinstance(block, dict) else None
        if not isinstance(attention, dict) or not isinstance(ffn, dict):
            raise Missing(f"block_configs[{i}] lacks its attention or ffn", [f"block_configs[{i}]"])
        if ffn.get("no_op"):
            width = 0
        elif ffn.get("replace_with_linear"):
            width = -1
        else:
            mult = ffn.get("ffn_mult")
            if isinstance(mult, bool) or not isinstance(mult, (int, float)) or mult <= 0:
                raise Missing(f"config lacks block_configs[{i}].ffn.ffn_mult", [f"block_configs[{i}].ffn.ffn_mult"])
            width = -(-int(2 * mult * hidden / 3) // 256) * 256
        out.append(("deci", bool(attention.get("replace_with_linear")), width))
    return out


_NEMOTRON_FFN = {"M": None, "*": None, "-": "dense", "E": "moe"}
# transformers >= 5 spells the block types linear_attention (Mamba-2) / full_attention
_NEMOTRON_TYPES = {"mamba": "M", "linear_attention": "M", "attention": "*", "full_attention": "*", "mlp": "-",
                   "moe": "E"}


def _feed_forwards(sh: Shapes, mixers: list[tuple]) -> list[str | tuple | None]:
    """Per layer: "dense", "moe", "rwkv" (channel mixing), None (a mixer-only layer) or a Nemotron-NAS
    block (``_deci_blocks``)."""
    n = len(mixers)
    if sh.s.ffn == "nemotron":
        return [_NEMOTRON_FFN[ch] for ch in _nemotron_pattern(sh.c, n)]
    if sh.s.ffn == "deci":
        return _deci_blocks(sh.c, n, sh.hidden)
    if not sh.s.known and "" in sh.first_kinds:
        # a mapper that gives a layer no cache splits mixers and feed-forwards into layers of their own
        # (Nemotron-H): which layer holds an MLP or experts is the family's pattern, not known here
        raise Missing(f"{sum(1 for k in mixers if not k)} of {n} layers keep no cache: which of model_type "
                      f"{sh.mt!r}'s layers hold an MLP or experts is not known here", ["model_type"])
    if sh.first_kinds == {"mamba"} and not sh.s.ssm_ffn:  # a pure state-space model: mixer blocks only
        return [None] * n
    if sh.first_kinds == {"rwkv"}:
        return ["rwkv"] * n
    if sh.experts:
        return ["moe" if sparse else "dense" for sparse in moe_flags(sh.c, n)]
    return ["dense"] * n


def _nemotron_pattern(c: Cfg, n: int) -> str:
    pattern = c.get("hybrid_override_pattern")
    types = c.get("layers_block_type", "layer_types")
    if isinstance(pattern, str) and pattern:
        unknown = sorted(set(pattern) - set(_NEMOTRON_FFN))
        if unknown:
            raise Missing(f"hybrid_override_pattern has letters {unknown} this estimator does not know",
                          ["hybrid_override_pattern"])
    elif isinstance(types, list) and types:
        unknown = sorted({str(t) for t in types} - set(_NEMOTRON_TYPES))
        if unknown:
            raise Missing(f"nemotron_h block types {unknown} are not known", ["layers_block_type"])
        pattern = "".join(_NEMOTRON_TYPES[str(t)] for t in types)
    else:
        raise Missing("nemotron_h needs hybrid_override_pattern (or layers_block_type)", ["hybrid_override_pattern"])
    if len(pattern) != n:
        raise Missing(f"hybrid_override_pattern has {len(pattern)} letters for {n} layers", ["hybrid_override_pattern"])
    return pattern


def _mtp(b: Builder, sh: Shapes, mixers: list[tuple], n: int, vocab: int) -> None:
    """MTP layers that ship with the checkpoint, in the family's convention; others are a note."""
    c, s, hidden = sh.c, sh.s, sh.hidden
    count = c.opt(*MTP_KEYS, default=s.mtp_default)
    if not count:
        return
    prefix = f"{s.prefix}.{s.layers}"
    if s.mtp == "deepseek":
        # DeepSeek-V3 / GLM-4.5: a MoE layer like the last one, enorm/hnorm, eh_proj kept in 16 bits under
        # block fp8, and its own embed_tokens and shared_head.head copies (the published counts include them)
        for j in range(count):
            p = f"{prefix}.{n + j}"
            layer(b, sh, p, mixers[-1], "moe" if sh.experts else "dense", role="mtp")
            b.norm(f"{p}.enorm", hidden, "mtp", count=2)
            b.linear(f"{p}.eh_proj", hidden, 2 * hidden, "mtp", exempt=True)
            b.norm(f"{p}.shared_head.norm", hidden, "mtp")
            b.add(f"{p}.embed_tokens", "mtp", "embedding", (vocab, hidden))
            b.add(f"{p}.shared_head.head", "mtp", "lm_head", (vocab, hidden))
    elif s.mtp == "qwen3_next":
        # Qwen3-Next / Qwen3.5: fc over [embedding; hidden], three norms, full-attention layers
        full = next((k for k in mixers if k and {part[0] for part in k} == {"heads"}), None)
        if full is None:
            raise Missing("MTP layers are full-attention layers but the model has none", ["mtp_num_hidden_layers"])
        b.linear("mtp.fc", hidden, 2 * hidden, "mtp")
        b.norm("mtp.pre_fc_norm_embedding", hidden, "mtp", count=3)
        if c.flag("mtp_use_dedicated_embeddings"):
            b.add("mtp.embed_tokens", "mtp", "embedding", (vocab, hidden))
        for j in range(count):
            layer(b, sh, f"mtp.layers.{j}", full, "moe" if sh.experts else "dense", role="mtp")
        if not c.has("mtp_num_hidden_layers") and not c.has("num_nextn_predict_layers"):
            sh.notes.append(f"{count} MTP layer(s) counted: the checkpoint ships mtp.*; the config has no key")
    else:
        sh.notes.append(f"{count} MTP layer(s) the config names are not counted (engines load them only for "
                        "speculative decoding)")


def untied(c: Cfg, s: Style, top: dict | None, architectures: Sequence[str], notes: list[str]) -> bool:
    """Whether the checkpoint holds a head apart from the embeddings: the config's tie_word_embeddings
    (or LFM2's tie_embedding, mamba_ssm's tie_embeddings; a wrapper's own before its text config's), else
    the config class's value where the config leaves it out, else the family's default; else, for a config save_pretrained wrote
    (transformers_version), tied (it leaves the key out only when it is true: PretrainedConfig's
    default); else no head for a bare model class (``…Model``, nothing ``For…`` in auto_map); else a head
    of its own is counted, the larger figure, and said."""
    # a wrapper's own key first: the model that holds the head reads it (transformers' get_expanded_tied_weights_keys
    # reads the ForConditionalGeneration's config), whatever its text_config says
    for source in (top or {}, c.data):
        for key in ("tie_word_embeddings", "tie_embedding", "tie_embeddings"):
            if source.get(key) is not None:
                return not bool(source[key])
    if top is not None and c.wrapper is not None and c.wrapper.missing("tie_word_embeddings") is not None:
        return not bool(c.wrapper.missing("tie_word_embeddings"))  # the wrapper's class, as above
    for key in ("tie_word_embeddings", "tie_embedding", "tie_embeddings"):
        if c.class_value(key) is not None:  # the config leaves it out: what transformers' class ties
            return not bool(c.class_value(key))
    if s.tie is not None:
        return not s.tie
    if "transformers_version" in c.data or "transformers_version" in (top or {}):
        return False
    auto = (top or c.data).get("auto_map")
    targets = [str(v) for v in auto.values()] if isinstance(auto, dict) else []
    if architectures and all(a.endswith("Model") and not a.endswith("LMHeadModel") for a in architectures) \
            and not any(re.search(r"\.\w*For\w+$", t) for t in targets):
        notes.append("no head counted: the architecture is a bare model class")
        return False
    notes.append("tie_word_embeddings not stated: the head counted as a tensor of its own (the larger figure)")
    return True


# Config keys that do not shape weights although their names look like sizes (token ids, context
# limits, windows, routing top-k, rotary settings, MTP counts the stack reports on its own).
_NOT_WEIGHTS = re.compile(
    r"token_id|_id$|^max_|position|context|seq_len|window|rope|rotary|top_?k|per_tok|_group$|topk_group|"
    r"n_group|chunk|block_size|initializer|epsilon|_eps|dropout|scale|^num_nextn|mtp|bucket|"
    r"max_window_layers|num_experts_per_token|sparse_step|first_k_dense|moe_layer_freq|full_attention_interval|"
    r"^layer_types|_layers$|num_labels|label|pad|dense_len|kernel_stride|init_blocks")
# keys the mappers read into the layer specs (KV heads and dims, latent ranks, linear-attention and
# state-space shapes, the layer count): the stack used them through the specs
_IN_SPECS = re.compile(r"key_value|kv_|head_dim|linear_|mamba|ssm|state_size|conv|expand|n_groups|time_step|dt_rank|"
                       r"d_state|index_|^n_layer|^num_layers|^num_hidden_layers")
_SIZE_LIKE = re.compile(r"size|dim|rank|^num_|^n_|heads|experts|ratio|mult|width|vocab|intermediate|hidden|groups|"
                        r"layers|expand|inner")


def unread_size_keys(c: Cfg) -> list[str]:
    """Keys of the config whose names and values look like sizes that the estimate did not read: a
    generic layout may miss the weights they shape."""
    found = []
    for key, value in c.data.items():
        if key in c.read or isinstance(value, bool) or not _SIZE_LIKE.search(key) or _NOT_WEIGHTS.search(key) \
                or _IN_SPECS.search(key):
            continue
        if isinstance(value, int) and value > 1 or (
                isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            found.append(key)
    return sorted(found)
