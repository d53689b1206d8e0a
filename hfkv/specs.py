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

Every n(S) is one *entry rule* ``(div, cap)``: n(S) = min(S // div, cap), with ``cap`` None for no
bound and ``div`` 0 for a constant ``cap`` (``count``). ``entry_rule`` gives the entries kept,
``read_rule`` the entries a decode step reads; the accounting core groups terms by these rules, so
a sweep over many contexts evaluates each distinct rule once per context, not each part.

Parts are frozen dataclasses, equal and hashable by value (two mappers' equal parts are one group),
and validate their shapes when built: every size is an integer within its bounds, else a
``ShapeError`` (a ``ValueError``) naming the class, the field and the value.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, field, fields, replace
from fractions import Fraction
from typing import Any, ClassVar, Union

from .dtypes import BYTES, Precision, block_scaled_bytes, ceil_div

# Exact byte counts: int, or Fraction where fp4 or a compression ratio makes them fractional
# (ints are kept as ints: Python's int arithmetic is ~10x cheaper than Fraction's).
Bytes = Union[int, Fraction]
Rule = tuple  # (div, cap): n(S) = min(S // div, cap); cap None = unbounded; div 0 = the constant cap

NO_ENTRIES: Rule = (0, 0)
EVERY_TOKEN: Rule = (1, None)


def count(rule: Rule, S: int) -> int:
    """n(S) for an entry rule ``(div, cap)``."""
    div, cap = rule
    if div == 0:
        return cap
    n = S if div == 1 else S // div
    return n if cap is None or n < cap else cap


class ShapeError(ValueError):
    """A part or layer built with a value no layer can have (a zero head count, a fractional size)."""


def size(ge: int = 1, default: Any = MISSING, le: int | None = None) -> Any:
    """A dataclass field holding an integer size with bounds (None allowed when the default is None)."""
    return field(default=default, metadata={"ge": ge, "le": le})


def _as_int(value: Any) -> int | None:
    """The integer ``value`` stands for (as pydantic's lax mode reads it), or None when there is none."""
    if isinstance(value, int):  # bool included: True is 1
        return int(value)
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else None
    if isinstance(value, (str, bytes)):
        try:
            return int(value)
        except ValueError:
            pass
        try:
            number = float(value)
        except ValueError:
            return None
        return int(number) if math.isfinite(number) and number.is_integer() else None
    return None


_CHECKS: dict[type, tuple] = {}


def _checks(cls: type) -> tuple:
    """(name, ge, le, optional) of every bounded size field of ``cls``, computed once per class."""
    found = _CHECKS.get(cls)
    if found is None:
        found = _CHECKS[cls] = tuple(
            (f.name, f.metadata["ge"], f.metadata["le"], f.default is None)
            for f in fields(cls) if "ge" in f.metadata
        )
    return found


def validate_sizes(obj: Any) -> None:
    """Check (and normalise to ``int``) every size field of a frozen dataclass; ``ShapeError`` if bad."""
    for name, ge, le, optional in _checks(type(obj)):
        value = getattr(obj, name)
        if value is None and optional:
            continue
        number = _as_int(value)
        if number is None:
            raise ShapeError(f"{type(obj).__name__}.{name} must be an integer, not {value!r}")
        if number < ge or (le is not None and number > le):
            bounds = f"≥ {ge}" if le is None else f"between {ge} and {le}"
            raise ShapeError(f"{type(obj).__name__}.{name} must be {bounds}, not {number}")
        if type(value) is not int:
            object.__setattr__(obj, name, number)


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


@dataclass(frozen=True, kw_only=True)
class _Part:
    kind: ClassVar[str] = "none"
    recurrent: ClassVar[bool] = False  # state that exists only for an exact prefix length (linear, Mamba, conv)
    replicated: ClassVar[bool] = False  # every tensor-parallel rank holds the whole part
    reads_state: ClassVar[bool] = False  # a decode step reads the whole state C (recurrent parts)

    def __post_init__(self) -> None:
        validate_sizes(self)

    def entry_rule(self) -> Rule:
        """n(S) as ``(div, cap)``; see the module docstring."""
        return NO_ENTRIES

    def read_rule(self) -> Rule:
        """The entries one decode step reads, as ``(div, cap)``: all kept entries unless a top-k bounds them."""
        return self.entry_rule()

    def entries(self, S: int) -> int:
        return count(self.entry_rule(), S)

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
        """r(S) = n_read(S)·E, plus C for a recurrent state (read whole each step)."""
        read = count(self.read_rule(), S) * self.entry_bytes(p, tp)
        return read + self.state_bytes(p, tp) if self.reads_state else read

    def growth(self) -> tuple[Bytes, int]:
        """(rate, cap): for long contexts n(S) ≈ rate·S + cap."""
        div, cap = self.entry_rule()
        if div == 0 or cap is not None:
            return 0, cap or 0
        return (1, 0) if div == 1 else (Fraction(1, div), 0)

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
        """The part's own parameters that differ from their defaults, in field order, for reports."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.default is MISSING or value != f.default:
                out[f.name] = value
        return out

    def model_copy(self, *, update: dict | None = None) -> "_Part":
        """A copy with some fields changed (validated again); the name callers already use."""
        return replace(self, **(update or {}))


@dataclass(frozen=True, kw_only=True)
class _TokenPart(_Part):
    """Storage that grows with the context; may be read from another layer's copy."""

    # When set, this layer owns no copy (σ = 0) and reads that layer's.
    source_layer: int | None = size(ge=0, default=None)

    @property
    def copies(self) -> int:
        return 0 if self.source_layer is not None else 1


@dataclass(frozen=True, kw_only=True)
class _HeadsPart(_TokenPart):
    """K and V heads of a standard attention layer; TP splits the KV heads."""

    kv_heads: int = size()
    head_dim: int = size()
    v_head_dim: int | None = size(ge=0, default=None)  # defaults to head_dim

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        # Past TP = K the heads are replicated: each rank still holds one.
        heads = max(1, self.kv_heads // tp)
        v_dim = self.head_dim if self.v_head_dim is None else self.v_head_dim
        return heads * (self.head_dim + v_dim) * p.kv_bytes


@dataclass(frozen=True, kw_only=True)
class FullAttention(_HeadsPart):
    """MHA / GQA / MQA over the whole context: n = S, E = K·(H_k + H_v)·e."""

    kind: ClassVar[str] = "full"

    def entry_rule(self) -> Rule:
        return EVERY_TOKEN


@dataclass(frozen=True, kw_only=True)
class _BoundedHeads(_HeadsPart):
    """Attention whose entries stop growing at ``bound`` tokens: n = min(S, bound)."""

    @property
    def bound(self) -> int:
        raise NotImplementedError

    def entry_rule(self) -> Rule:
        return (1, self.bound)


@dataclass(frozen=True, kw_only=True)
class SlidingWindow(_BoundedHeads):
    """Attention over the last W tokens: n = min(S, W)."""

    kind: ClassVar[str] = "sliding"
    window: int = size()

    @property
    def bound(self) -> int:
        return self.window


@dataclass(frozen=True, kw_only=True)
class ChunkedLocal(_BoundedHeads):
    """Chunked local attention, accounted as a window of the chunk size: n = min(S, chunk).

    At decode a chunked layer needs only the current chunk (S mod chunk entries); a serving engine
    reserves a whole chunk, so the reservation is what hfkv counts.
    """

    kind: ClassVar[str] = "chunked"
    chunk: int = size()

    @property
    def bound(self) -> int:
        return self.chunk


@dataclass(frozen=True, kw_only=True)
class CrossAttention(_HeadsPart):
    """Decoder cross-attention over an encoder output of fixed length T: n = T whatever S.

    K and V of every encoder position are computed once per request and read at every decode step,
    so the part is a per-request constant (in γ). Only for encoders whose length the config fixes
    (Whisper: 30 s of audio, 1500 positions); an input-length encoder has no such constant.
    """

    kind: ClassVar[str] = "cross"
    encoder_tokens: int = size()

    def entry_rule(self) -> Rule:
        return (0, self.encoder_tokens)

    def entries_rule(self) -> str:
        return f"{self.encoder_tokens} (encoder)"


def _top(rule: Rule, topk: int | None) -> Rule:
    """``rule`` further bounded by a top-k selection."""
    div, cap = rule
    if topk is None:
        return rule
    return (div, topk if cap is None else min(cap, topk))


@dataclass(frozen=True, kw_only=True)
class MLALatent(_TokenPart):
    """Multi-head latent attention: one latent of d_c + d_r values per token, no head axis.

    Replicated on every TP rank. ``window`` bounds it (MLA sliding layers, DeepSeek V4's raw window);
    ``topk`` makes decode read only that many entries (DSA sparse attention).
    """

    kind: ClassVar[str] = "mla"
    kv_lora_rank: int = size()
    rope_dim: int = size(ge=0)
    window: int | None = size(default=None)
    topk: int | None = size(default=None)

    replicated: ClassVar[bool] = True

    def entry_rule(self) -> Rule:
        return (1, self.window)

    def read_rule(self) -> Rule:
        return _top(self.entry_rule(), self.topk)

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return latent_entry_bytes(self.kv_lora_rank, self.rope_dim, p.kv)


@dataclass(frozen=True, kw_only=True)
class IndexerKeys(_TokenPart):
    """Lightning-indexer keys (DSA, CSA): one key of d_I values per (compressed) entry.

    Stored at the indexer dtype (fp8 with an fp32 scale per 128 values by default: 132 B for d_I = 128).
    Every decode step scans all keys. ``ring_slots`` × ``ring_factor`` × d_I values of recurrent-state
    dtype hold the compressor's unfinished block (CSA), per request.
    """

    kind: ClassVar[str] = "indexer"
    head_dim: int = size()
    ratio: int = size(default=1)
    ring_slots: int = size(ge=0, default=0)
    ring_factor: int = size(ge=0, default=4)

    replicated: ClassVar[bool] = True

    def entry_rule(self) -> Rule:
        return (self.ratio, None)

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return block_scaled_bytes(self.head_dim, p.indexer)

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        if self.copies == 0:
            return 0
        return self.ring_slots * self.ring_factor * self.head_dim * p.state_bytes


@dataclass(frozen=True, kw_only=True)
class CompressedKV(_TokenPart):
    """Compressed attention (CSA/HCA): one entry of d_kv values per m tokens, n = floor(S/m).

    K and V share the entry, laid out like an MLA latent (d_kv − d_r no-RoPE values, d_r RoPE values).
    ``topk`` bounds the entries a decode step reads (CSA). The ring holds the block being compressed:
    ``ring_slots`` × ``ring_factor`` × d_kv values of recurrent-state dtype, per request.
    """

    kind: ClassVar[str] = "compressed"
    head_dim: int = size()
    rope_dim: int = size(ge=0, default=0)
    ratio: int = size()
    topk: int | None = size(default=None)
    ring_slots: int = size(ge=0, default=0)
    ring_factor: int = size(ge=0, default=2)

    replicated: ClassVar[bool] = True

    def entry_rule(self) -> Rule:
        return (self.ratio, None)

    def read_rule(self) -> Rule:
        return _top(self.entry_rule(), self.topk)

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return latent_entry_bytes(self.head_dim - self.rope_dim, self.rope_dim, p.kv)

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        if self.copies == 0:
            return 0
        return self.ring_slots * self.ring_factor * self.head_dim * p.state_bytes


@dataclass(frozen=True, kw_only=True)
class _StatePart(_Part):
    """A fixed per-request state; n = 0, and each decode step reads the whole state (r = C)."""

    recurrent: ClassVar[bool] = True
    reads_state: ClassVar[bool] = True


@dataclass(frozen=True, kw_only=True)
class LinearAttentionState(_StatePart):
    """Linear attention (GDN, KDA, lightning): a recurrent matrix per value head plus a short conv.

    C = N_v·H_k·H_v·e_s + (w − 1)·(N_v·H_v + 2·N_qk·H_k)·e_conv; TP splits the heads.
    Lightning attention has no conv (``conv_kernel`` = 1).
    """

    kind: ClassVar[str] = "linear"
    variant: str  # gdn, kda or lightning
    num_qk_heads: int = size(ge=0)
    num_v_heads: int = size()
    head_k_dim: int = size()
    head_v_dim: int = size()
    conv_kernel: int = size(default=1)

    def __post_init__(self) -> None:
        if not isinstance(self.variant, str):
            raise ShapeError(f"LinearAttentionState.variant must be a name, not {self.variant!r}")
        validate_sizes(self)

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        nv = ceil_div(self.num_v_heads, tp)
        nqk = ceil_div(self.num_qk_heads, tp)
        recurrent = nv * self.head_k_dim * self.head_v_dim * p.state_bytes
        conv_channels = nv * self.head_v_dim + 2 * nqk * self.head_k_dim
        return recurrent + (self.conv_kernel - 1) * conv_channels * p.conv_bytes


@dataclass(frozen=True, kw_only=True)
class MambaState(_StatePart):
    """Mamba-1 / Mamba-2 state: SSM state plus the causal-conv tail.

    C = heads·head_dim·d_state·e_s + (w − 1)·(heads·head_dim + 2·groups·d_state)·e_conv.
    Mamba-1 is the case heads = intermediate size, head_dim = 1, groups = 0. TP shards the heads;
    groups that do not divide evenly are padded to the TP size (each rank keeps ceil(groups/TP)).
    """

    kind: ClassVar[str] = "mamba"
    version: int = size(le=2)
    num_heads: int = size()
    head_dim: int = size()
    state_size: int = size()
    n_groups: int = size(ge=0, default=0)
    conv_kernel: int = size()

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        heads = ceil_div(self.num_heads, tp)
        groups = ceil_div(self.n_groups, tp)
        ssm = heads * self.head_dim * self.state_size * p.state_bytes
        conv_channels = heads * self.head_dim + 2 * groups * self.state_size
        return ssm + (self.conv_kernel - 1) * conv_channels * p.conv_bytes


@dataclass(frozen=True, kw_only=True)
class ShortConvState(_StatePart):
    """Short-convolution state (LFM2): the last w − 1 inputs of ``dim`` channels, C = (w − 1)·dim·e_conv."""

    kind: ClassVar[str] = "conv"
    dim: int = size()
    conv_kernel: int = size()

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return (self.conv_kernel - 1) * ceil_div(self.dim, tp) * p.conv_bytes


PART_TYPES: dict[str, type] = {
    cls.kind: cls for cls in (
        FullAttention, SlidingWindow, ChunkedLocal, CrossAttention, MLALatent, IndexerKeys, CompressedKV,
        LinearAttentionState, MambaState, ShortConvState,
    )
}
CachePart = Union[
    FullAttention, SlidingWindow, ChunkedLocal, CrossAttention, MLALatent, IndexerKeys, CompressedKV,
    LinearAttentionState, MambaState, ShortConvState,
]


def _as_part(value: Any) -> _Part:
    """A part object, or one built from its dict form (``{"kind": "full", "kv_heads": 8, ...}``)."""
    if isinstance(value, _Part):
        return value
    if isinstance(value, dict) and value.get("kind") in PART_TYPES:
        return PART_TYPES[value["kind"]](**{k: v for k, v in value.items() if k != "kind"})
    raise ShapeError(f"a layer part must be one of {', '.join(PART_TYPES)}, not {value!r}"[:200])


@dataclass(frozen=True, kw_only=True)
class LayerSpec:
    """One decoder layer: a label and the storage parts it keeps per request.

    ``kind`` is the label chosen by the mapper (full, sliding, mla, dsa, csa, gdn, ...).
    """

    index: int = size(ge=0)
    kind: str
    parts: tuple = ()

    def __post_init__(self) -> None:
        if type(self.index) is not int or self.index < 0:  # checked inline: models may have 10⁵ layers
            validate_sizes(self)
        if not isinstance(self.kind, str):
            raise ShapeError(f"LayerSpec.kind must be a label, not {self.kind!r}")
        if type(self.parts) is not tuple or not all(isinstance(part, _Part) for part in self.parts):
            object.__setattr__(self, "parts", tuple(_as_part(part) for part in self.parts))

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

    def model_copy(self, *, update: dict | None = None) -> "LayerSpec":
        """A copy with some fields changed (validated again)."""
        return replace(self, **(update or {}))


@dataclass(kw_only=True)
class Layout:
    """What a mapper returns: the target model's layers plus what the reader should know.

    ``notes``: conventions applied, layers left out; ``warnings``: guesses and doubts.
    """

    layers: list
    notes: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.layers, self.notes, self.warnings = list(self.layers), list(self.notes), list(self.warnings)
