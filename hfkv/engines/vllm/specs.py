"""vLLM 0.33.0's KV-cache spec kinds, one class per kind, as ``v1/kv_cache_interface.py`` keeps them: each
is the one home of its page bytes and of how many blocks one request holds (``max_memory_usage_bytes`` /
page size), so the groups (``groups``), DeepSeek V4's packed pages (``dsv4``) and the start-up replay
(``startup``) all ask the spec and never round on their own.

- ``FullAttentionSpec``: one page per ``block`` tokens of the whole request;
- ``SlidingWindowSpec``: the window's last ``W − 1`` tokens plus the tokens in flight, one block more
  for the block the window starts in;
- ``ChunkedLocalAttentionSpec``: the current chunk plus the tokens in flight;
- ``MLAAttentionSpec`` / ``SlidingWindowMLASpec``: the same rules over an MLA latent (its bytes per token
  from ``mla_token_bytes``); the MLA flag steers the backend and the hybrid block alignment;
- ``CrossAttentionSpec``: an encoder-decoder's cross-attention over the encoder output, sized at start-up
  for the scheduler's largest encoder input (``RequestPlan.encoder_tokens``) whatever the request's length;
- ``MambaSpec``: a fixed-size state per request: ``RequestPlan.state_blocks`` blocks, plus the layer's
  prefill-checkpoint blocks in align mode.

A spec knows no block size: the grouping decides it (``page_bytes(block)``, ``blocks_per_request(length,
block, plan)``). ``RequestPlan`` holds what the count depends on besides the length.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from hfkv.errors import UnsupportedModelError
from hfkv.model import dtypes
from hfkv.model.dtypes import block_scaled_bytes, ceil_div

# Packed fp8 / fp4 latents of the FlashMLA-sparse backend (DSA): ``v1/attention/backends/mla/flashmla_sparse.py``.
FP8_DS_MLA = 656
NVFP4_DS_MLA = 352


@dataclass(frozen=True)
class RequestPlan:
    """What one request's block count depends on besides its length and the block size."""

    in_flight: int
    """Tokens a window must hold past its last position: batches in flight × max_num_batched_tokens."""
    state_blocks: int
    """Mamba blocks per request: 2 in align mode, else 1, plus the speculative tokens."""
    align_mode: bool
    """mamba_cache_mode "align" (prefix caching on): the layers' prefill-checkpoint blocks count."""
    encoder_tokens: int = 0
    """``SchedulerConfig.max_num_encoder_input_tokens`` (= max_num_batched_tokens, ``config/scheduler.py``):
    the encoder length a cross-attention spec is sized for at start-up."""


class KVCacheSpec:
    """A spec kind: ``kind`` as vLLM's groups are reported, ``grows`` for the kinds that take more blocks
    as the request grows (attention), ``key`` what makes two specs the same type for grouping."""

    kind: ClassVar[str]
    grows: ClassVar[bool] = True
    mla: ClassVar[bool] = False
    local: ClassVar[bool] = False  # a window or chunk bounds what it keeps
    window = None  # the window or chunk of a local kind (an instance field there)

    def page_bytes(self, block: int) -> Fraction:
        raise NotImplementedError

    def blocks_per_request(self, length: int, block: int, plan: RequestPlan) -> int:
        raise NotImplementedError

    @property
    def key(self) -> tuple:
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class AttentionSpec(KVCacheSpec):
    """Attention pages: ``token_bytes`` per token (K + V, or the latent), ``block`` tokens a page."""

    token_bytes: Fraction
    head_dim: int = 0  # attention head size (the backend choice reads it)
    window: int | None = None  # the window or chunk of a local kind

    def page_bytes(self, block: int) -> Fraction:
        return block * Fraction(self.token_bytes)

    @property
    def key(self) -> tuple:
        return (self.kind, self.window, Fraction(self.token_bytes), self.mla)

    def as_full(self) -> AttentionSpec:
        """The full-attention spec of the same bytes (what vLLM allocates when a window is not kept)."""
        full = MLAAttentionSpec if self.mla else FullAttentionSpec
        return full(token_bytes=self.token_bytes, head_dim=self.head_dim)


@dataclass(frozen=True, kw_only=True)
class FullAttentionSpec(AttentionSpec):
    """Every token of the request: ``ceil(length / block)`` blocks."""

    kind: ClassVar[str] = "full"

    def blocks_per_request(self, length: int, block: int, plan: RequestPlan) -> int:
        return ceil_div(length, block)


@dataclass(frozen=True, kw_only=True)
class SlidingWindowSpec(AttentionSpec):
    """The last ``window − 1`` tokens plus those in flight (at most the request), and one more block for
    the block the window starts in: ``ceil(min(W − 1 + in_flight, length) / block) + 1``."""

    kind: ClassVar[str] = "sliding"
    local: ClassVar[bool] = True

    def blocks_per_request(self, length: int, block: int, plan: RequestPlan) -> int:
        return ceil_div(min(self.window - 1 + plan.in_flight, length), block) + 1


@dataclass(frozen=True, kw_only=True)
class ChunkedLocalAttentionSpec(AttentionSpec):
    """The current chunk of ``window`` tokens plus those in flight: ``ceil(min(C + in_flight, length) / block)``."""

    kind: ClassVar[str] = "chunked"
    local: ClassVar[bool] = True

    def blocks_per_request(self, length: int, block: int, plan: RequestPlan) -> int:
        return ceil_div(min(self.window + plan.in_flight, length), block)


@dataclass(frozen=True, kw_only=True)
class MLAAttentionSpec(FullAttentionSpec):
    """A full-attention MLA latent (or a DSA indexer's keys)."""

    mla: ClassVar[bool] = True


@dataclass(frozen=True, kw_only=True)
class SlidingWindowMLASpec(SlidingWindowSpec):
    """A sliding-window MLA latent."""

    mla: ClassVar[bool] = True


@dataclass(frozen=True, kw_only=True)
class CrossAttentionSpec(AttentionSpec):
    """Cross-attention K and V over the encoder's output (Whisper's decoder), one spec per decoder layer
    (``CrossAttention.get_kv_cache_spec``). ``max_memory_usage_bytes`` counts the scheduler's
    ``max_num_encoder_input_tokens`` (``max_num_batched_tokens``), not the request's length nor the
    model's encoder length: ``ceil(encoder_tokens / block)`` blocks, fixed per request. A real request
    then holds only its encoder output's blocks (``num_encoder_tokens``, Whisper 1500), but the start-up
    figures (the fit check, "Maximum concurrency") use this bound."""

    kind: ClassVar[str] = "cross"
    grows: ClassVar[bool] = False

    def blocks_per_request(self, length: int, block: int, plan: RequestPlan) -> int:
        return ceil_div(plan.encoder_tokens, block)


@dataclass(frozen=True, kw_only=True)
class MambaSpec(KVCacheSpec):
    """A fixed ``state_bytes`` per request (Mamba, linear attention, short convolutions): one page each
    (padded to the group's page by the grouping)."""

    kind: ClassVar[str] = "mamba"
    grows: ClassVar[bool] = False

    state_bytes: Fraction
    checkpoint_blocks: int = 0  # num_prefill_checkpoint_blocks: one more block per request in align mode
    checkpoint_alignment: int | None = None  # tokens between the prefill checkpoints it exports (None: none)

    def page_bytes(self, block: int) -> Fraction:
        return Fraction(self.state_bytes)

    def blocks_per_request(self, length: int, block: int, plan: RequestPlan) -> int:
        return plan.state_blocks + (self.checkpoint_blocks if plan.align_mode else 0)

    @property
    def key(self) -> tuple:
        return (self.kind, Fraction(self.state_bytes))


# -- bytes per token of the attention kinds ---------------------------------------------------------


def attention_token_bytes(part: Any, kv: str, tp: int) -> Fraction:
    """K + V bytes per token of a standard attention part; NVFP4 adds one scale byte per 16 values."""
    if kv != "fp4":
        return Fraction(part.entry_bytes(dtypes.Precision(kv=kv), tp))
    heads = max(1, part.kv_heads // tp)
    v_dim = part.head_dim if part.v_head_dim is None else part.v_head_dim
    return heads * (Fraction(part.head_dim, 2) + Fraction(part.head_dim, 16) + Fraction(v_dim, 2) + Fraction(v_dim, 16))


def mla_token_bytes(part: Any, kv: str, packed: bool) -> Fraction:
    """MLAAttentionSpec head size: FlashMLA-sparse's fp8_ds_mla 656 B / nvfp4_ds_mla 352 B, else D·e."""
    if packed and kv == "fp8":
        return Fraction(FP8_DS_MLA)
    if packed and kv == "fp4":
        return Fraction(NVFP4_DS_MLA)
    if kv == "fp4":
        raise UnsupportedModelError("vLLM fp4 KV for non-DSA MLA is not modelled")
    return Fraction((part.kv_lora_rank + part.rope_dim) * dtypes.BYTES[kv])


def indexer_token_bytes(part: Any) -> Fraction:
    """A DSA indexer key: 128 fp8 values and an fp32 scale (132 B), ÷ ``ratio`` where GLM's
    index_kpool pools the keys."""
    return Fraction(ceil_div(int(block_scaled_bytes(part.head_dim, "fp8")), part.ratio))
