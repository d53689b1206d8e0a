"""Per-layer cache specs: one small class per kind of storage.

A layer is a ``LayerSpec``: an index, a label chosen by its mapper, and one or more *parts*. Each part
is one kind of storage and answers the same questions, for a ``Precision`` and a tensor-parallel size
``tp`` (all bytes are per GPU):

- ``copies``            σ: 1 when the layer owns this storage, 0 when it reads ``source_layer``'s copy;
- ``entries(S)``        n(S): entries kept along the sequence for a context of S tokens;
- ``entry_bytes(p, tp)``  E: bytes of one entry;
- ``state_bytes(p, tp)``  C: bytes per request that do not grow with S (recurrent state, rings);
- ``read_bytes(S, p, tp)`` r(S): bytes one decode step reads;
- ``slope`` / ``intercept``: this part's share of α and γ in M = α·S + γ for long contexts.

So a part's memory per request is ``copies · entries(S) · entry_bytes + state_bytes`` (the reference
model's M_l(S) = σ·n(S)·E + C). The classes hold shapes only; the formulas live here, the choice of
shapes lives in the mappers.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from .dtypes import BYTES, Precision, block_scaled_bytes, ceil_div

# Exact byte counts: int, or Fraction where fp4 or a compression ratio makes them fractional
# (ints are kept as ints: Python's int arithmetic is ~10x cheaper than Fraction's).
Bytes = Union[int, Fraction]


def latent_entry_bytes(nope_dim: int, rope_dim: int, kv_dtype: str) -> Bytes:
    """One MLA-style latent entry (no head axis).

    16-bit and wider: every value at the KV width. fp8 follows the reference layout: the no-RoPE part
    in fp8 with one fp32 scale per 128 values, the RoPE part kept in 16 bits (512 + 64 → 656 B).
    fp4: half a byte per value, no scales.
    """
    width = BYTES[kv_dtype]
    if kv_dtype == "fp8":
        return block_scaled_bytes(nope_dim, "fp8") + rope_dim * 2
    return (nope_dim + rope_dim) * width


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    recurrent: ClassVar[bool] = False  # state that exists only for an exact prefix length (linear, Mamba, conv)
    replicated: ClassVar[bool] = False  # every tensor-parallel rank holds the whole part

    def entries(self, S: int) -> int:
        return 0

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return 0

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return 0

    @property
    def copies(self) -> int:
        return 1

    def memory(self, S: int, p: Precision, tp: int = 1) -> Bytes:
        """M(S) = σ·n(S)·E + C for one request."""
        return self.copies * self.entries(S) * self.entry_bytes(p, tp) + self.state_bytes(p, tp)

    def read_bytes(self, S: int, p: Precision, tp: int = 1) -> Bytes:
        return self.entries(S) * self.entry_bytes(p, tp)

    def growth(self) -> tuple[Bytes, int]:
        """(rate, cap): for long contexts n(S) ≈ rate·S + cap."""
        return 0, 0

    def entries_rule(self) -> str:
        """n(S) in words for reports: ``S``, ``S/4``, ``min(S, 4096)``, ``0``."""
        rate, cap = self.growth()
        if rate == 0:
            return f"min(S, {cap})" if cap else "0"
        return "S" if rate == 1 else f"S/{rate.denominator}"

    def slope(self, p: Precision, tp: int = 1) -> Bytes:
        rate, _ = self.growth()
        return self.copies * rate * self.entry_bytes(p, tp)

    def intercept(self, p: Precision, tp: int = 1) -> Bytes:
        _, cap = self.growth()
        return self.copies * cap * self.entry_bytes(p, tp) + self.state_bytes(p, tp)

    def params(self) -> dict:
        """The part's own parameters, for reports."""
        return self.model_dump(exclude_defaults=True)


class _TokenPart(_Part):
    """Storage that grows with the context; may be read from another layer's copy."""

    source_layer: int | None = Field(
        default=None, description="when set, this layer owns no copy (σ = 0) and reads that layer's"
    )

    @property
    def copies(self) -> int:
        return 0 if self.source_layer is not None else 1


class _HeadsPart(_TokenPart):
    """K and V heads of a standard attention layer; TP splits the KV heads."""

    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    v_head_dim: int | None = Field(default=None, ge=0, description="defaults to head_dim")

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        # Past TP = K the heads are replicated: each rank still holds one.
        heads = max(1, self.kv_heads // tp)
        v_dim = self.head_dim if self.v_head_dim is None else self.v_head_dim
        return heads * (self.head_dim + v_dim) * p.kv_bytes


class FullAttention(_HeadsPart):
    """MHA / GQA / MQA over the whole context: n = S, E = K·(H_k + H_v)·e."""

    kind: Literal["full"] = "full"

    def entries(self, S: int) -> int:
        return S

    def growth(self) -> tuple[Bytes, int]:
        return 1, 0


class _BoundedHeads(_HeadsPart):
    """Attention whose entries stop growing at ``bound`` tokens: n = min(S, bound)."""

    @property
    def bound(self) -> int:
        raise NotImplementedError

    def entries(self, S: int) -> int:
        return min(S, self.bound)

    def growth(self) -> tuple[Bytes, int]:
        return 0, self.bound


class SlidingWindow(_BoundedHeads):
    """Attention over the last W tokens: n = min(S, W)."""

    kind: Literal["sliding"] = "sliding"
    window: int = Field(ge=1)

    @property
    def bound(self) -> int:
        return self.window


class ChunkedLocal(_BoundedHeads):
    """Chunked local attention, accounted as a window of the chunk size: n = min(S, chunk).

    At decode a chunked layer needs only the current chunk (S mod chunk entries); a serving engine
    reserves a whole chunk, so the reservation is what hfkv counts.
    """

    kind: Literal["chunked"] = "chunked"
    chunk: int = Field(ge=1)

    @property
    def bound(self) -> int:
        return self.chunk


class CrossAttention(_HeadsPart):
    """Decoder cross-attention over an encoder output of fixed length T: n = T whatever S.

    K and V of every encoder position are computed once per request and read at every decode step,
    so the part is a per-request constant (in γ). Only for encoders whose length the config fixes
    (Whisper: 30 s of audio, 1500 positions); an input-length encoder has no such constant.
    """

    kind: Literal["cross"] = "cross"
    encoder_tokens: int = Field(ge=1)

    def entries(self, S: int) -> int:
        return self.encoder_tokens

    def growth(self) -> tuple[Bytes, int]:
        return 0, self.encoder_tokens

    def entries_rule(self) -> str:
        return f"{self.encoder_tokens} (encoder)"


class MLALatent(_TokenPart):
    """Multi-head latent attention: one latent of d_c + d_r values per token, no head axis.

    Replicated on every TP rank. ``window`` bounds it (MLA sliding layers, DeepSeek V4's raw window);
    ``topk`` makes decode read only that many entries (DSA sparse attention).
    """

    kind: Literal["mla"] = "mla"
    kv_lora_rank: int = Field(ge=1)
    rope_dim: int = Field(ge=0)
    window: int | None = Field(default=None, ge=1)
    topk: int | None = Field(default=None, ge=1)

    replicated: ClassVar[bool] = True

    def entries(self, S: int) -> int:
        return S if self.window is None else min(S, self.window)

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return latent_entry_bytes(self.kv_lora_rank, self.rope_dim, p.kv)

    def read_bytes(self, S: int, p: Precision, tp: int = 1) -> Bytes:
        n = self.entries(S)
        if self.topk is not None:
            n = min(n, self.topk)
        return n * self.entry_bytes(p, tp)

    def growth(self) -> tuple[Bytes, int]:
        return (1, 0) if self.window is None else (0, self.window)


class IndexerKeys(_TokenPart):
    """Lightning-indexer keys (DSA, CSA): one key of d_I values per (compressed) entry.

    Stored at the indexer dtype (fp8 with an fp32 scale per 128 values by default: 132 B for d_I = 128).
    Every decode step scans all keys. ``ring_slots`` × ``ring_factor`` × d_I values of recurrent-state
    dtype hold the compressor's unfinished block (CSA), per request.
    """

    kind: Literal["indexer"] = "indexer"
    head_dim: int = Field(ge=1)
    ratio: int = Field(default=1, ge=1)
    ring_slots: int = Field(default=0, ge=0)
    ring_factor: int = Field(default=4, ge=0)

    replicated: ClassVar[bool] = True

    def entries(self, S: int) -> int:
        return S // self.ratio

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return block_scaled_bytes(self.head_dim, p.indexer)

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        if self.copies == 0:
            return 0
        return self.ring_slots * self.ring_factor * self.head_dim * p.state_bytes

    def growth(self) -> tuple[Bytes, int]:
        return Fraction(1, self.ratio), 0


class CompressedKV(_TokenPart):
    """Compressed attention (CSA/HCA): one entry of d_kv values per m tokens, n = floor(S/m).

    K and V share the entry, laid out like an MLA latent (d_kv − d_r no-RoPE values, d_r RoPE values).
    ``topk`` bounds the entries a decode step reads (CSA). The ring holds the block being compressed:
    ``ring_slots`` × ``ring_factor`` × d_kv values of recurrent-state dtype, per request.
    """

    kind: Literal["compressed"] = "compressed"
    head_dim: int = Field(ge=1)
    rope_dim: int = Field(default=0, ge=0)
    ratio: int = Field(ge=1)
    topk: int | None = Field(default=None, ge=1)
    ring_slots: int = Field(default=0, ge=0)
    ring_factor: int = Field(default=2, ge=0)

    replicated: ClassVar[bool] = True

    def entries(self, S: int) -> int:
        return S // self.ratio

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return latent_entry_bytes(self.head_dim - self.rope_dim, self.rope_dim, p.kv)

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        if self.copies == 0:
            return 0
        return self.ring_slots * self.ring_factor * self.head_dim * p.state_bytes

    def read_bytes(self, S: int, p: Precision, tp: int = 1) -> Bytes:
        n = self.entries(S)
        if self.topk is not None:
            n = min(n, self.topk)
        return n * self.entry_bytes(p, tp)

    def growth(self) -> tuple[Bytes, int]:
        return Fraction(1, self.ratio), 0


class _StatePart(_Part):
    """A fixed per-request state; n = 0, and each decode step reads the whole state (r = C)."""

    recurrent: ClassVar[bool] = True

    def read_bytes(self, S: int, p: Precision, tp: int = 1) -> Bytes:
        return self.state_bytes(p, tp)


class LinearAttentionState(_StatePart):
    """Linear attention (GDN, KDA, lightning): a recurrent matrix per value head plus a short conv.

    C = N_v·H_k·H_v·e_s + (w − 1)·(N_v·H_v + 2·N_qk·H_k)·e_conv; TP splits the heads.
    Lightning attention has no conv (``conv_kernel`` = 1).
    """

    kind: Literal["linear"] = "linear"
    variant: str = Field(description="gdn, kda or lightning")
    num_qk_heads: int = Field(ge=0)
    num_v_heads: int = Field(ge=1)
    head_k_dim: int = Field(ge=1)
    head_v_dim: int = Field(ge=1)
    conv_kernel: int = Field(default=1, ge=1)

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        nv = ceil_div(self.num_v_heads, tp)
        nqk = ceil_div(self.num_qk_heads, tp)
        recurrent = nv * self.head_k_dim * self.head_v_dim * p.state_bytes
        conv_channels = nv * self.head_v_dim + 2 * nqk * self.head_k_dim
        return recurrent + (self.conv_kernel - 1) * conv_channels * p.conv_bytes


class MambaState(_StatePart):
    """Mamba-1 / Mamba-2 state: SSM state plus the causal-conv tail.

    C = heads·head_dim·d_state·e_s + (w − 1)·(heads·head_dim + 2·groups·d_state)·e_conv.
    Mamba-1 is the case heads = intermediate size, head_dim = 1, groups = 0. TP shards the heads;
    groups that do not divide evenly are padded to the TP size (each rank keeps ceil(groups/TP)).
    """

    kind: Literal["mamba"] = "mamba"
    version: int = Field(ge=1, le=2)
    num_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    state_size: int = Field(ge=1)
    n_groups: int = Field(default=0, ge=0)
    conv_kernel: int = Field(ge=1)

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        heads = ceil_div(self.num_heads, tp)
        groups = ceil_div(self.n_groups, tp)
        ssm = heads * self.head_dim * self.state_size * p.state_bytes
        conv_channels = heads * self.head_dim + 2 * groups * self.state_size
        return ssm + (self.conv_kernel - 1) * conv_channels * p.conv_bytes


class ShortConvState(_StatePart):
    """Short-convolution state (LFM2): the last w − 1 inputs of ``dim`` channels, C = (w − 1)·dim·e_conv."""

    kind: Literal["conv"] = "conv"
    dim: int = Field(ge=1)
    conv_kernel: int = Field(ge=1)

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return (self.conv_kernel - 1) * ceil_div(self.dim, tp) * p.conv_bytes


CachePart = Annotated[
    Union[
        FullAttention, SlidingWindow, ChunkedLocal, CrossAttention, MLALatent, IndexerKeys, CompressedKV,
        LinearAttentionState, MambaState, ShortConvState,
    ],
    Field(discriminator="kind"),
]


class LayerSpec(BaseModel):
    """One decoder layer: a label and the storage parts it keeps per request."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int = Field(ge=0)
    kind: str = Field(description="label chosen by the mapper: full, sliding, mla, dsa, csa, gdn, ...")
    parts: tuple[CachePart, ...] = ()

    @property
    def copies(self) -> int:
        """σ of the layer: 1 when it owns any storage, else 0."""
        return max((part.copies for part in self.parts), default=0)

    @property
    def source_layer(self) -> int | None:
        sources = {part.source_layer for part in self.parts if isinstance(part, _TokenPart)}
        sources.discard(None)
        return min(sources) if sources else None

    def memory(self, S: int, p: Precision, tp: int = 1) -> Bytes:
        return sum((part.memory(S, p, tp) for part in self.parts), 0)

    def read_bytes(self, S: int, p: Precision, tp: int = 1) -> Bytes:
        return sum((part.read_bytes(S, p, tp) for part in self.parts), 0)

    def slope(self, p: Precision, tp: int = 1) -> Bytes:
        return sum((part.slope(p, tp) for part in self.parts), 0)

    def intercept(self, p: Precision, tp: int = 1) -> Bytes:
        return sum((part.intercept(p, tp) for part in self.parts), 0)

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        """Σ over the token parts of one entry each (e.g. DSA: latent + indexer key)."""
        return sum((part.entry_bytes(p, tp) for part in self.parts), 0)

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return sum((part.state_bytes(p, tp) for part in self.parts), 0)

    def recurrent_state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        """State that a prefix cache or speculative decoding must copy (linear, Mamba, conv)."""
        return sum((part.state_bytes(p, tp) for part in self.parts if part.recurrent), 0)


class Layout(BaseModel):
    """What a mapper returns: the target model's layers plus what the reader should know."""

    model_config = ConfigDict(extra="forbid")

    layers: list[LayerSpec]
    notes: list[str] = Field(default_factory=list, description="conventions applied, layers left out")
    warnings: list[str] = Field(default_factory=list, description="guesses and doubts")
