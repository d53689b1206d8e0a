"""Per-layer cache specs: one small pydantic model per kind of storage.

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

The specs are pydantic models: frozen, no unknown field, every size an ``int`` within its
``Field(ge=…, le=…)`` bounds (pydantic's lax mode reads ``8.0`` and ``"128"`` as whole numbers), and
equal and hashable by value (two mappers' equal parts are one group). A bad value is a
``ShapeError`` (a ``ValueError``): one line naming the class, the field and the value, never
pydantic's multi-line dump. Start cost: each class's validator is built on its first use
(``defer_build``), not when this module is imported.
"""

from fractions import Fraction
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hfkv.model.dtypes import BYTES, Precision, block_scaled_bytes, ceil_div

# Exact byte counts: int, or Fraction where fp4 or a compression ratio makes them fractional
# (ints are kept as ints: Python's int arithmetic is ~10x cheaper than Fraction's).
Bytes = Union[int, Fraction]
Rule = tuple  # (div, cap): n(S) = min(S // div, cap); cap None = unbounded; div 0 = the constant cap

NO_ENTRIES: Rule = (0, 0)
EVERY_TOKEN: Rule = (1, None)

Size = Annotated[int, Field(ge=1)]  # a head count, a width, a window: at least 1
Count = Annotated[int, Field(ge=0)]  # a size that may be 0 (RoPE dims, ring slots, groups)


def count(rule: Rule, S: int) -> int:
    """n(S) for an entry rule ``(div, cap)``."""
    div, cap = rule
    if div == 0:
        return cap
    n = S if div == 1 else S // div
    return n if cap is None or n < cap else cap


class ShapeError(ValueError):
    """A part or layer built with a value no layer can have (a zero head count, a fractional size)."""


# pydantic's error types in the words of a spec message: ``{given}`` is the value's repr, ``{value}``
# the value, the other names pydantic's context (``ge``, ``le``, ``class_name``) or ``parts``.
_INT = "must be an integer, not {given}"
SHAPE_WORDS = {
    "greater_than_equal": "must be ≥ {ge}, not {given}", "less_than_equal": "must be ≤ {le}, not {given}",
    "int_type": _INT, "int_parsing": _INT, "int_from_float": _INT, "string_type": "must be a name, not {given}",
    "missing": "is missing", "extra_forbidden": "is not a field (given {given})",
    "model_type": "must be a {class_name}, not {given}",
    "union_tag_invalid": "must be a part ({parts}), not {given}",
    "union_tag_not_found": "must be a part ({parts}), not {given}",
    "model_attributes_type": "must be a part ({parts}), not {given}",
}


def first_problem(err: ValidationError, words: dict[str, str] = SHAPE_WORDS) -> tuple[tuple, str]:
    """(location, problem in ``words``) of the first error pydantic found, e.g.
    ``(("kv_heads",), "must be ≥ 1, not 0")``; an error type without words keeps pydantic's own."""
    first = err.errors(include_url=False)[0]
    ctx, value = first.get("ctx") or {}, first.get("input")
    given = repr(value)[:80]
    if isinstance(ctx.get("error"), ShapeError):  # a nested spec built from a dict said it already
        return tuple(first["loc"]), str(ctx["error"])
    fields = {**ctx, "given": given, "value": value, "parts": ", ".join(PART_KINDS)}
    own = f"{first['msg'][:1].lower()}{first['msg'][1:]}, not {given}"  # pydantic's words, in the sentence
    try:
        text = (words.get(first["type"]) or SHAPE_WORDS[first["type"]]).format(**fields)
    except (KeyError, ValueError):  # no words for this type, or a value they cannot show ("2e13" as text)
        text = own
    return tuple(first["loc"]), text[:200]


def shape_message(err: ValidationError) -> str:
    """One line for a bad spec: ``FullAttention.kv_heads must be ≥ 1, not 0``; a part given as a
    dict says where it sits: ``LayerSpec.parts[0] (FullAttention.kv_heads must be ≥ 1, not 0)``."""
    loc, what = first_problem(err)
    if isinstance((err.errors()[0].get("ctx") or {}).get("error"), ShapeError):  # said by the spec itself
        if not loc:  # ``model_validate``: the spec's own constructor
            return what
        what = f"({what})"
    where = err.title
    for step in loc:
        if step not in _CLASS_OF_KIND:  # the union's tag: the message names the class already
            where += f"[{step}]" if isinstance(step, int) else f".{step}"
    return f"{where} {what}"


class _Spec(BaseModel):
    """Base of the specs: frozen (hashable, equal by value), no unknown fields, validator built on
    first use; a bad value raises ``ShapeError`` (``_invalid``) instead of pydantic's dump."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    def __init__(self, **data: Any) -> None:
        try:  # what ``BaseModel.__init__`` does, without its extra frame (models may have 10⁵ layers)
            self.__pydantic_validator__.validate_python(data, self_instance=self)
        except ValidationError as err:
            raise self._invalid(err) from None

    @classmethod
    def _invalid(cls, err: ValidationError) -> Exception:
        return ShapeError(shape_message(err))

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        """pydantic's ``model_copy``, but an ``update`` is validated like any new spec (pydantic's
        own trusts it: a ``list`` of parts would then break hashing, an ``8.0`` the exact ints)."""
        if not update:
            return super().model_copy(deep=deep)
        return type(self)(**{**self.__dict__, **update})


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


class _Part(_Spec):
    """One kind of storage; each concrete class has a ``kind`` literal (the union's discriminator)."""

    recurrent: ClassVar[bool] = False  # state that exists only for an exact prefix length (linear, Mamba, conv)
    replicated: ClassVar[bool] = False  # every tensor-parallel rank holds the whole part
    reads_state: ClassVar[bool] = False  # a decode step reads the whole state C (recurrent parts)

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
        """The part's own parameters that differ from their defaults, in field order, for reports
        (``kind`` is said apart)."""
        fields = type(self).model_fields
        return {name: value for name, value in self.__dict__.items()
                if name != "kind" and (fields[name].is_required() or value != fields[name].default)}


class _TokenPart(_Part):
    """Storage that grows with the context; may be read from another layer's copy."""

    # When set, this layer owns no copy (σ = 0) and reads that layer's.
    source_layer: Count | None = None

    @property
    def copies(self) -> int:
        return 0 if self.source_layer is not None else 1


class _HeadsPart(_TokenPart):
    """K and V heads of a standard attention layer; TP splits the KV heads."""

    kv_heads: Size
    head_dim: Size
    v_head_dim: Count | None = None  # defaults to head_dim

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        # Past TP = K the heads are replicated: each rank still holds one.
        heads = max(1, self.kv_heads // tp)
        v_dim = self.head_dim if self.v_head_dim is None else self.v_head_dim
        return heads * (self.head_dim + v_dim) * p.kv_bytes


class FullAttention(_HeadsPart):
    """MHA / GQA / MQA over the whole context: n = S, E = K·(H_k + H_v)·e.

    ``declared_window``: a sliding window the config declares that covers every position the model
    takes (W ≥ its maximum): it bounds nothing, so every token is kept, but an engine may still build
    a windowed cache for the layer (vLLM: one more block per request), so it is kept for engine modes.
    """

    kind: Literal["full"] = "full"
    declared_window: Size | None = None

    def entry_rule(self) -> Rule:
        return EVERY_TOKEN


class _BoundedHeads(_HeadsPart):
    """Attention whose entries stop growing at ``bound`` tokens: n = min(S, bound)."""

    @property
    def bound(self) -> int:
        raise NotImplementedError

    def entry_rule(self) -> Rule:
        return (1, self.bound)


class SlidingWindow(_BoundedHeads):
    """Attention over the last W tokens: n = min(S, W)."""

    kind: Literal["sliding"] = "sliding"
    window: Size

    @property
    def bound(self) -> int:
        return self.window


class ChunkedLocal(_BoundedHeads):
    """Chunked local attention, accounted as a window of the chunk size: n = min(S, chunk).

    At decode a chunked layer needs only the current chunk (S mod chunk entries); a serving engine
    reserves a whole chunk, so the reservation is what hfkv counts.
    """

    kind: Literal["chunked"] = "chunked"
    chunk: Size

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
    encoder_tokens: Size

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


class MLALatent(_TokenPart):
    """Multi-head latent attention: one latent of d_c + d_r values per token, no head axis.

    Replicated on every TP rank. ``window`` bounds it (MLA sliding layers, DeepSeek V4's raw window);
    ``topk`` makes decode read only that many entries (DSA sparse attention).
    """

    kind: Literal["mla"] = "mla"
    kv_lora_rank: Size
    rope_dim: Count
    window: Size | None = None
    topk: Size | None = None

    replicated: ClassVar[bool] = True

    def entry_rule(self) -> Rule:
        return (1, self.window)

    def read_rule(self) -> Rule:
        return _top(self.entry_rule(), self.topk)

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return latent_entry_bytes(self.kv_lora_rank, self.rope_dim, p.kv)


class _RingPart(_TokenPart):
    """Compressed entries (one per ``ratio`` tokens) of ``head_dim`` values, plus the compressor's
    unfinished block per request: ``ring_slots`` × ``ring_factor`` × ``head_dim`` values of
    recurrent-state dtype (none on a layer that reads another's copy). The subclasses declare
    ``head_dim``, ``ratio``, ``ring_slots`` and ``ring_factor``, each in the order its reports list them.
    """

    def entry_rule(self) -> Rule:
        return (self.ratio, None)

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        if self.copies == 0:
            return 0
        return self.ring_slots * self.ring_factor * self.head_dim * p.state_bytes


class IndexerKeys(_RingPart):
    """Lightning-indexer keys (DSA, CSA): one key of d_I values per (compressed) entry.

    Stored at the indexer dtype (fp8 with an fp32 scale per 128 values by default: 132 B for d_I = 128).
    Every decode step scans all keys. ``ring_slots`` × ``ring_factor`` × d_I values of recurrent-state
    dtype hold the compressor's unfinished block (CSA), per request.
    """

    kind: Literal["indexer"] = "indexer"
    head_dim: Size
    ratio: Size = 1
    ring_slots: Count = 0
    ring_factor: Count = 4

    replicated: ClassVar[bool] = True

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return block_scaled_bytes(self.head_dim, p.indexer)


class CompressedKV(_RingPart):
    """Compressed attention (CSA/HCA): one entry of d_kv values per m tokens, n = floor(S/m).

    K and V share the entry, laid out like an MLA latent (d_kv − d_r no-RoPE values, d_r RoPE values).
    ``topk`` bounds the entries a decode step reads (CSA). The ring holds the block being compressed:
    ``ring_slots`` × ``ring_factor`` × d_kv values of recurrent-state dtype, per request.
    """

    kind: Literal["compressed"] = "compressed"
    head_dim: Size
    rope_dim: Count = 0
    ratio: Size
    topk: Size | None = None
    ring_slots: Count = 0
    ring_factor: Count = 2

    replicated: ClassVar[bool] = True

    def read_rule(self) -> Rule:
        return _top(self.entry_rule(), self.topk)

    def entry_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return latent_entry_bytes(self.head_dim - self.rope_dim, self.rope_dim, p.kv)


class _StatePart(_Part):
    """A fixed per-request state; n = 0, and each decode step reads the whole state (r = C)."""

    recurrent: ClassVar[bool] = True
    reads_state: ClassVar[bool] = True


class LinearAttentionState(_StatePart):
    """Linear attention (GDN, KDA, lightning): a recurrent matrix per value head plus a short conv.

    C = N_v·H_k·H_v·e_s + (w − 1)·(N_v·H_v + 2·N_qk·H_k)·e_conv; TP splits the heads.
    Lightning attention has no conv (``conv_kernel`` = 1).
    """

    kind: Literal["linear"] = "linear"
    variant: str  # gdn, kda or lightning
    num_qk_heads: Count
    num_v_heads: Size
    head_k_dim: Size
    head_v_dim: Size
    conv_kernel: Size = 1

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
    num_heads: Size
    head_dim: Size
    state_size: Size
    n_groups: Count = 0
    conv_kernel: Size

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        heads = ceil_div(self.num_heads, tp)
        groups = ceil_div(self.n_groups, tp)
        ssm = heads * self.head_dim * self.state_size * p.state_bytes
        conv_channels = heads * self.head_dim + 2 * groups * self.state_size
        return ssm + (self.conv_kernel - 1) * conv_channels * p.conv_bytes


class ShortConvState(_StatePart):
    """Short-convolution state (LFM2): the last w − 1 inputs of ``dim`` channels, C = (w − 1)·dim·e_conv."""

    kind: Literal["conv"] = "conv"
    dim: Size
    conv_kernel: Size

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        return (self.conv_kernel - 1) * ceil_div(self.dim, tp) * p.conv_bytes


class RwkvState(_StatePart):
    """RWKV-4's recurrent state, as transformers' ``RwkvModel`` keeps it (``state``: five tensors of
    ``hidden_size`` values per layer): the WKV numerator, denominator and running maximum (float32 in
    the reference: the recurrent-state dtype here) and the time-mix and channel-mix token-shift inputs
    (the model's dtype: the conv dtype here, as a short conv's last input).

    C = 3·H·e_s + 2·H·e_conv; TP splits the channels.
    """

    kind: Literal["rwkv"] = "rwkv"
    hidden: Size

    def state_bytes(self, p: Precision, tp: int = 1) -> Bytes:
        channels = ceil_div(self.hidden, tp)
        return 3 * channels * p.state_bytes + 2 * channels * p.conv_bytes


_PARTS = (FullAttention, SlidingWindow, ChunkedLocal, CrossAttention, MLALatent, IndexerKeys, CompressedKV,
          LinearAttentionState, MambaState, ShortConvState, RwkvState)
_CLASS_OF_KIND = {cls.model_fields["kind"].default: cls.__name__ for cls in _PARTS}
PART_KINDS = tuple(_CLASS_OF_KIND)
CachePart = Annotated[Union[_PARTS], Field(discriminator="kind")]


class LayerSpec(_Spec):
    """One decoder layer: a label and the storage parts it keeps per request.

    ``kind`` is the label chosen by the mapper (full, sliding, mla, dsa, csa, gdn, ...); ``parts``
    are part objects, or their dict form (``{"kind": "full", "kv_heads": 8, ...}``).
    """

    index: Count
    kind: str
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


class Layout(_Spec):
    """What a mapper returns: the target model's layers plus what the reader should know.

    ``notes``: conventions applied, layers left out; ``warnings``: guesses and doubts (lists: a
    mapper may append to them after building the layout).
    """

    layers: list[LayerSpec]
    notes: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
