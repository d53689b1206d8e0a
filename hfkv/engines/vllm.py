"""vLLM 0.33.0 block arithmetic (engines.md §2, §3.2), over a report's layer specs.

Every attention-like layer gets a KV-cache spec (layers that share another layer's KV get none).
The hybrid manager groups the specs so that every group has the same number of layer slots (padding
layers fill the gaps) and every slot the same page size; all groups draw block IDs from one pool, so
``bytes_per_block`` is one group's pages and ``num_blocks = budget // bytes_per_block``. The logged
numbers then count, per request of ``max_model_len`` tokens, the blocks each group needs (full:
the whole length; sliding: the window plus the tokens in flight; Mamba: 1 or 2 state blocks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from hfkv import dtypes
from hfkv.dtypes import block_scaled_bytes, ceil_div
from hfkv.errors import UnsupportedModelError
from hfkv.specs import (
    ChunkedLocal,
    CompressedKV,
    FullAttention,
    IndexerKeys,
    LayerSpec,
    LinearAttentionState,
    MLALatent,
    SlidingWindow,
)

from . import context_length, number, printed

DEFAULT_BLOCK_SIZE = 16
MLA_BLOCK_SIZE = 64  # FlashMLA / FlashMLA-sparse kernels want multiples of 64
MLA_HYBRID_ALIGN = 128  # _align_hybrid_block_size: at least 128 for MLA + Mamba hybrids
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192  # get_batch_defaults: API server, >=70 GiB non-A100 GPU
GROUP_SIZE_SLACK = Fraction(3, 2)  # one group per type when the largest count is < 1.5 × the smallest

# Packed fp8 / fp4 latents of the FlashMLA-sparse backend (DSA), engines.md §2.2d.
FP8_DS_MLA = 656
NVFP4_DS_MLA = 352
# commandr.py, cohere2_moe.py: the window passed to the kernel is W + 1 (engines.md §2.4c).
WINDOW_PLUS_ONE_MODEL_TYPES = frozenset({"cohere2", "cohere2_moe"})
# State dtype rules of MambaStateDtypeCalculator (engines.md §2.8d).
SSM_FP32_ARCH_PREFIXES = ("NemotronH",)  # NemotronHForCausalLMConfig: fp32 or mamba_ssm_cache_dtype
SSM_FROM_CONFIG_MODEL_TYPE_PREFIXES = ("qwen3_5",)  # Qwen3_5ForConditionalGenerationConfig
FP32_STATE_VARIANTS = frozenset({"kda"})  # KDA recurrent state


class PagesDiffer(Exception):
    """The attention page sizes are not multiples of each other (e.g. MLA next to regular SWA)."""


@dataclass(frozen=True)
class Spec:
    """One KV-cache spec: an attention part (bytes per token) or a Mamba-like state (bytes per request)."""

    kind: str  # full | sliding | chunked | mamba
    token_bytes: Fraction = Fraction(0)
    state_bytes: Fraction = Fraction(0)
    window: int | None = None
    mla: bool = False

    @property
    def key(self) -> tuple:
        """Specs with equal keys share groups."""
        return (self.kind, self.window, self.token_bytes, self.state_bytes, self.mla)


@dataclass
class Group:
    """A KV-cache group of ``layers`` specs plus ``padding`` empty slots; one block ID costs ``block_bytes``."""

    spec: Spec
    layers: int
    padding: int
    block_size: int
    block_bytes: Fraction  # the pages of every slot of the group for one block ID

    def blocks_per_request(self, length: int, in_flight: int, state_blocks: int) -> int:
        """Blocks one request of ``length`` tokens holds in this group (admission bound)."""
        b, spec = self.block_size, self.spec
        if spec.kind == "mamba":
            return state_blocks
        if spec.kind == "sliding":
            return ceil_div(min(spec.window - 1 + in_flight, length), b) + 1
        if spec.kind == "chunked":
            return ceil_div(min(spec.window + in_flight, length), b)
        return ceil_div(length, b)


# -- specs --------------------------------------------------------------------------------------


def attention_bytes(part: Any, kv: str, tp: int) -> Fraction:
    """K + V bytes per token of a standard attention part; NVFP4 adds one scale byte per 16 values."""
    if kv != "fp4":
        return part.entry_bytes(dtypes.Precision(kv=kv), tp)
    heads = max(1, part.kv_heads // tp)
    v_dim = part.head_dim if part.v_head_dim is None else part.v_head_dim
    return heads * (Fraction(part.head_dim, 2) + Fraction(part.head_dim, 16) + Fraction(v_dim, 2) + Fraction(v_dim, 16))


def mla_bytes(part: MLALatent, kv: str, dsa: bool) -> Fraction:
    """MLAAttentionSpec head size: fp8_ds_mla 656 B / nvfp4_ds_mla 352 B for DSA, else D·e."""
    if dsa and kv == "fp8":
        return Fraction(FP8_DS_MLA)
    if dsa and kv == "fp4":
        return Fraction(NVFP4_DS_MLA)
    if kv == "fp4":
        raise UnsupportedModelError("vLLM fp4 KV for non-DSA MLA is not modelled")
    return (part.kv_lora_rank + part.rope_dim) * dtypes.BYTES[kv]


def state_precision(report: Any, part: Any, knobs: dict) -> dtypes.Precision:
    """vLLM state dtypes: the model dtype for conv and SSM, except the families that pin the SSM."""
    model = report.precision.conv  # the model's 16-bit dtype unless the report overrides it
    config = report.config or {}
    ssm = knobs["mamba_ssm_dtype"]
    if ssm is None:
        if any(a.startswith(SSM_FP32_ARCH_PREFIXES) for a in report.architectures or []):
            ssm = dtypes.canonical(config.get("mamba_ssm_cache_dtype")) or "fp32"
        elif (report.model_type or "").startswith(SSM_FROM_CONFIG_MODEL_TYPE_PREFIXES):
            ssm = dtypes.canonical(config.get("mamba_ssm_dtype")) or model
        elif isinstance(part, LinearAttentionState) and part.variant in FP32_STATE_VARIANTS:
            ssm = "fp32"
        else:
            ssm = model
    return dtypes.Precision(kv=report.precision.kv, state=dtypes.require(ssm, "--mamba-ssm-dtype"), conv=model)


def part_spec(part: Any, report: Any, knobs: dict, dsa: bool) -> Spec | None:
    """The spec vLLM builds for one part; None for a part that reads another layer's copy."""
    kv, tp = report.precision.kv, report.tensor_parallel_size
    if part.copies == 0:
        return None
    if isinstance(part, FullAttention):
        return Spec("full", token_bytes=attention_bytes(part, kv, tp))
    if isinstance(part, SlidingWindow):
        extra = 1 if report.model_type in WINDOW_PLUS_ONE_MODEL_TYPES else 0
        return Spec("sliding", token_bytes=attention_bytes(part, kv, tp), window=part.window + extra)
    if isinstance(part, ChunkedLocal):
        return Spec("chunked", token_bytes=attention_bytes(part, kv, tp), window=part.chunk)
    if isinstance(part, MLALatent):
        kind = "sliding" if part.window else "full"
        return Spec(kind, token_bytes=mla_bytes(part, kv, dsa), window=part.window, mla=True)
    if isinstance(part, IndexerKeys):  # ratio > 1: GLM's index_kpool pools the keys
        return Spec("full", token_bytes=Fraction(ceil_div(int(block_scaled_bytes(part.head_dim, "fp8")), part.ratio)),
                    mla=True)
    if part.recurrent:
        spec_rows = int(knobs["num_speculative_tokens"])
        shaped = part.model_copy(update={"conv_kernel": part.conv_kernel + spec_rows}) if spec_rows else part
        return Spec("mamba", state_bytes=shaped.state_bytes(state_precision(report, part, knobs), tp))
    return None


def collect_specs(report: Any, knobs: dict, assumptions: list[str]) -> list[Spec]:
    layers: list[LayerSpec] = list(report.layer_specs)
    if any(isinstance(p, CompressedKV) for layer in layers for p in layer.parts):
        raise UnsupportedModelError("vLLM's packed DeepSeek V4 cache layout is not modelled (use --engine sglang)")
    dsa = any(isinstance(p, IndexerKeys) for layer in layers for p in layer.parts)
    specs, shared = [], 0
    for layer in layers:
        for part in layer.parts:
            spec = part_spec(part, report, knobs, dsa)
            if spec is None:
                shared += part.copies == 0
                continue
            specs.append(spec)
    if shared:
        assumptions.append(f"{shared} part(s) read another layer's KV: no spec, no memory")
    if dsa:
        latent = "fp8_ds_mla 656 B" if report.precision.kv == "fp8" else report.precision.kv
        assumptions.append(f"DSA: FlashMLA-sparse latent ({latent}) plus a 132 B indexer spec on layers "
                           "that compute top-k (÷ index_kpool when pooled)")
    if any(s.kind == "mamba" for s in specs):
        assumptions.append("Mamba/linear state in the model dtype (vLLM 'auto'; Nemotron-H and KDA SSM fp32)")
    return promote_local(specs, knobs, assumptions)


def promote_local(specs: list[Spec], knobs: dict, assumptions: list[str]) -> list[Spec]:
    """Sliding/chunked specs that vLLM allocates as full attention."""
    out = []
    for spec in specs:
        if spec.kind == "chunked" and not knobs["chunked_local_hybrid"]:
            out.append(replace(spec, kind="full", window=None))
        elif spec.kind in ("sliding", "chunked") and knobs["disable_hybrid_kv_cache_manager"]:
            out.append(replace(spec, kind="full", window=None))
        else:
            out.append(spec)
    if any(s.kind == "chunked" for s in specs) and not knobs["chunked_local_hybrid"]:
        assumptions.append("chunked local attention allocated as full attention (hybrid manager off for it by default)")
    if knobs["disable_hybrid_kv_cache_manager"] and any(s.kind in ("sliding", "chunked") for s in specs):
        assumptions.append("hybrid KV cache manager disabled: sliding layers get full KV")
    return out


# -- block size and groups ----------------------------------------------------------------------


def choose_block_size(specs: list[Spec], knobs: dict, assumptions: list[str]) -> int:
    """16 (64 for MLA), or raised so that one attention page holds the largest Mamba state."""
    attention = [s for s in specs if s.kind != "mamba"]
    mamba = [s for s in specs if s.kind == "mamba"]
    mla = any(s.mla for s in attention)
    given = knobs["block_size"]
    base = int(given) if given else (MLA_BLOCK_SIZE if mla else DEFAULT_BLOCK_SIZE)
    if not (attention and mamba):
        if not given and attention:
            backend = "FlashMLA backend" if mla else "FlashAttention backend"
            assumptions.append(f"block size {base} (vLLM default, {backend})")
        return base
    align = int(given) if given else (MLA_HYBRID_ALIGN if mla else DEFAULT_BLOCK_SIZE)
    per_token = max(s.token_bytes for s in attention)
    if len({s.token_bytes for s in attention}) > 1:
        assumptions.append("attention layers differ in size: the largest sets the Mamba alignment")
    state = max(s.state_bytes for s in mamba)
    block = align * math.ceil(state / (align * per_token))
    assumptions.append(f"block size {block} = {align} × ceil(Mamba state {number(state)} B / "
                       f"({align} × {number(per_token)} B per token)): an attention page holds one state")
    return block


def group_size(counts: list[int]) -> int:
    """_get_kv_cache_groups_uniform_page_size: the smallest count, or the largest if max < 1.5·min."""
    low, high = min(counts), max(counts)
    return high if high < GROUP_SIZE_SLACK * low else low


def make_groups(specs: list[Spec], block: int, assumptions: list[str]) -> list[Group]:
    """One group for uniform types; otherwise unify page sizes and split types into equal groups."""
    attention = [s for s in specs if s.kind != "mamba"]
    types: dict[tuple, list[Spec]] = {}
    for spec in specs:
        types.setdefault(spec.key, []).append(spec)
    kinds = {(s.kind, s.window) for s in specs}
    if len(kinds) == 1:  # uniform spec or uniform type: every layer in one group
        spec = specs[0]
        if spec.kind == "mamba":
            page = sum((s.state_bytes for s in specs), Fraction(0))
        else:
            page = block * sum((s.token_bytes for s in specs), Fraction(0))
        return [Group(spec=spec, layers=len(specs), padding=0, block_size=block, block_bytes=page)]
    top = max(block * s.token_bytes for s in attention) if attention else max(s.state_bytes for s in specs)
    blocks: dict[tuple, int] = {}
    for key, members in types.items():
        spec = members[0]
        if spec.kind == "mamba":
            blocks[key] = block
            continue
        page = block * spec.token_bytes
        if top % page:
            raise PagesDiffer()
        blocks[key] = block * int(top // page)
    if any(s.kind == "mamba" and s.state_bytes < top for s in specs):
        waste = max((top - s.state_bytes) / s.state_bytes for s in specs if s.kind == "mamba")
        assumptions.append(f"Mamba pages padded to the attention page (+{float(waste) * 100:.2f}%)")
    size = group_size([len(m) for m in types.values()])
    groups: list[Group] = []
    padding = 0
    for key, members in types.items():
        count = ceil_div(len(members), size)
        padding += count * size - len(members)
        for g in range(count):
            real = len(members[g::count])
            groups.append(Group(spec=members[0], layers=real, padding=size - real, block_size=blocks[key],
                                block_bytes=size * top))
    if padding:
        assumptions.append(f"{len(groups)} KV cache groups of {size} layer slots: {padding} padding layer(s)")
    return groups


def full_allocation_fallback(specs: list[Spec], block: int, assumptions: list[str]) -> list[Group]:
    """_try_get_full_allocation_fallback_groups: promote sliding/chunked specs to full and regroup."""
    if not any(s.kind in ("sliding", "chunked") for s in specs):
        raise UnsupportedModelError(
            "vLLM page sizes of these layers are not multiples of each other (e.g. a DSA indexer next to "
            "Mamba state): not modelled"
        )
    assumptions.append("page sizes cannot be unified: sliding layers promoted to full allocation")
    promoted = [replace(s, kind="full", window=None) if s.kind in ("sliding", "chunked") else s for s in specs]
    try:
        return make_groups(promoted, block, assumptions)
    except PagesDiffer:
        raise UnsupportedModelError("vLLM cannot unify these page sizes") from None


# -- the logged numbers -------------------------------------------------------------------------


def block_settings(specs: list[Spec], knobs: dict, assumptions: list[str]) -> tuple[int, int]:
    """(tokens in flight for the sliding-window bound, Mamba blocks per request)."""
    batched = knobs["max_num_batched_tokens"]
    if batched is None:
        batched = DEFAULT_MAX_NUM_BATCHED_TOKENS
        if any(s.kind in ("sliding", "chunked") for s in specs):
            assumptions.append(f"max_num_batched_tokens {batched} (API server on a >=70 GiB non-A100 GPU)")
    batches = 2 if knobs["async_scheduling"] else 1
    if any(s.kind in ("sliding", "chunked") for s in specs):
        assumptions.append(f"sliding-window admission adds {batches} × {batched} tokens in flight "
                           f"({'async scheduling' if batches == 2 else 'no async scheduling'})")
    has_attention = any(s.kind != "mamba" for s in specs)
    caching = knobs["enable_prefix_caching"]
    if caching is None:
        caching = has_attention  # vLLM disables prefix caching for attention-free models
    spec_tokens = int(knobs["num_speculative_tokens"])
    state_blocks = (2 if caching else 1) + spec_tokens
    if any(s.kind == "mamba" for s in specs):
        mode = "align (prefix caching on)" if caching else "none (prefix caching off)"
        assumptions.append(f"mamba_cache_mode {mode}: {state_blocks} block(s) per request")
    return batches * int(batched), state_blocks


def blocks_per_request(groups: list[Group], length: int, in_flight: int, state_blocks: int) -> int:
    return sum(g.blocks_per_request(length, in_flight, state_blocks) for g in groups)


def fit_length(groups: list[Group], num_blocks: int, in_flight: int, state_blocks: int) -> int | None:
    """The longest max_model_len whose request fits the pool ("estimated maximum model length")."""
    if blocks_per_request(groups, 1, in_flight, state_blocks) > num_blocks:
        return 0
    low, high = 1, 1 << 40
    if blocks_per_request(groups, high, in_flight, state_blocks) <= num_blocks:
        return None  # no group grows with the length
    while high - low > 1:
        mid = (low + high) // 2
        if blocks_per_request(groups, mid, in_flight, state_blocks) <= num_blocks:
            low = mid
        else:
            high = mid
    return low


def simulate(report: Any, *, budget_bytes: int | None, max_model_len: int | None, knobs: dict) -> dict:
    """vLLM's groups, block size and, with a budget, its blocks and logged numbers."""
    kv = report.precision.kv
    assumptions = [f"KV dtype {kv} (the report's; vLLM 'auto' = model dtype or the checkpoint's declared fp8)"]
    if knobs["speculative_draft_layers"]:
        assumptions.append("--speculative-draft-layers is not modelled in vLLM mode (its draft layers join the KV "
                           "cache groups): figures are for the target model alone")
    length = context_length(report, max_model_len, assumptions)
    specs = collect_specs(report, knobs, assumptions)
    if not specs:
        raise UnsupportedModelError("no layer keeps a KV cache or state that vLLM would allocate")
    block = choose_block_size(specs, knobs, assumptions)
    try:
        groups = make_groups(specs, block, assumptions)
    except PagesDiffer:
        groups = full_allocation_fallback(specs, block, assumptions)
    bytes_per_block = max(g.block_bytes for g in groups)
    growing = [g for g in groups if g.spec.kind != "mamba"]
    per_token = sum((bytes_per_block / g.block_size for g in growing), Fraction(0))
    full_per_token = sum((bytes_per_block / g.block_size for g in growing if g.spec.kind == "full"), Fraction(0))
    in_flight, state_blocks = block_settings(specs, knobs, assumptions)
    result: dict[str, Any] = {
        "bytes_per_token": number(per_token),
        "full_attention_bytes_per_token": number(full_per_token),
        "block_size": block,
        "bytes_per_block": number(bytes_per_block),
        "kv_cache_groups": [
            {"kind": g.spec.kind, "window": g.spec.window, "layers": g.layers, "padding": g.padding,
             "block_size": g.block_size, "block_bytes": number(g.block_bytes)}
            for g in groups
        ],
        "max_model_len": length,
    }
    if length:
        needed = blocks_per_request(groups, length, in_flight, state_blocks)
        result.update(blocks_per_request=needed, request_bytes=number(needed * bytes_per_block))
    if budget_bytes is not None:
        num_blocks = int(budget_bytes // bytes_per_block)
        result["num_blocks"] = num_blocks
        result["max_model_len_fit"] = fit_length(groups, num_blocks, in_flight, state_blocks)
        if length:
            concurrency = num_blocks / result["blocks_per_request"]  # float, as vLLM computes it
            result["max_concurrency"] = printed(concurrency)
            result["kv_cache_tokens"] = int(concurrency * length)
            assumptions.append("GPU KV cache size = int(max_concurrency × max_model_len) (vLLM 0.33 formula)")
    result["assumptions"] = assumptions
    return result
