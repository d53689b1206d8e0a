"""SGLang 0.5.23 pool arithmetic (engines.md §2, §3.1), over a report's layer specs.

SGLang sizes a token pool: one *cell* of bytes per token over every attention layer, so
``max_total_num_tokens = floor(rest / cell)`` floored to the page size. Before that, models with
linear or Mamba layers reserve a state pool (``r/(1+r)`` of the budget, r = 0.9), which also caps the
running requests. Hybrid sliding-window memory (a second, smaller pool for the sliding layers) is
given only to the architectures SGLang lists; every other windowed model gets full KV on every
layer. DeepSeek V4 has its own configurator with paged rows.
"""

from __future__ import annotations

import math
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
    MLALatent,
    SlidingWindow,
)

from . import context_length, number, printed

# configs/model_config.py:is_hybrid_swa_model (engines.md §2.4c): the architectures that get a
# separate sliding-window pool. Any other architecture allocates full KV on every layer.
HYBRID_SWA_ARCHITECTURES = frozenset({
    # SWA_SINK_ARCHS
    "Llama4ForConditionalGeneration", "DeepseekV4ForCausalLM", "GptOssForCausalLM",
    "GraniteSWAForCausalLM", "GraniteMoeSWAForCausalLM", "IQuestQ1ForCausalLM",
    # the rest of the list
    "MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM", "MiMoV2MTP", "Step3p5ForCausalLM", "Step3p5MTP",
    "Step3p7ForConditionalGeneration", "MellumForCausalLM", "MuseGlimmerForCausalLM",
    "MuseGlimmerForConditionalGeneration", "InklingForConditionalGeneration", "InklingForCausalLM",
    "UnlimitedOCRForCausalLM",
})
# Gemma 4 and its Unified / Embedding / Diffusion variants.
HYBRID_SWA_PREFIXES = ("Gemma4", "EmbeddingGemma2", "DiffusionGemma")
# Hybrid only when the config actually has sliding layers (Laguna: a truthy window; Beam: a sliding layer).
HYBRID_SWA_IF_SLIDING = frozenset({"LagunaForCausalLM", "BeamForCausalLM"})

# arg_groups/fields/schedule.py and DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO (engines.md §2.4c, §2.6c).
DEFAULT_SWA_RATIO = Fraction(4, 5)
SMALL_SWA_RATIO = Fraction(1, 10)
SMALL_SWA_RATIO_MODEL_TYPES = frozenset({"deepseek_v4"})
SMALL_SWA_RATIO_PREFIXES = ("Inkling",)

# configs/mamba_utils.py:mamba2_state_dtype (engines.md §2.8d): these families build their state
# shapes without the config, so a config ``mamba_ssm_dtype`` is not seen (fp32 unless the env says).
SSM_DTYPE_IGNORES_CONFIG = frozenset({
    "kimi_linear", "kimi_k3", "bailing_hybrid", "glm5_next", "glm5_next_text", "granitemoehybrid",
})
DEFAULT_SSM_DTYPE = "fp32"
DEFAULT_CONV_DTYPE = "bf16"  # SGLANG_MAMBA_CONV_DTYPE

MAMBA_RUNNING_RATIO = 3  # MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO (1 without radix cache)
DSA_PAGE_TOKENS = 64  # arg_groups/model_overrides/deepseek_v2.py: page = 64·index_kpool

# DeepSeek V4 (engines.md §2.6c): layout v4 rows, paged pools.
DSV4_PAGE = 256
DSV4_ROW = 584  # 448 fp8 nope + 64·2 bf16 rope + 7 scales + 1 pad
DSV4_ALIGN = 576
DSV4_LOW_RATIO_INDEXER = 68  # fp4 indexer of the ratio-1/2 pools
DSV4_C4_RING = 8
DSV4_STATE_BYTES = 4  # fp32 compressor state


# -- per-token bytes ---------------------------------------------------------------------------


def mla_bytes(part: MLALatent, kv: str, dsa: bool) -> Fraction:
    """One latent entry: packed 656 B fp8 for DSA (512 fp8 + 4 scales + 64 bf16 rope), raw D·e otherwise.

    kv_cache_configurator.py:calculate_mla_kv_cache_dim; MLA fp4 is D/2 + ⌊D/16⌋ scale bytes.
    """
    d = part.kv_lora_rank + part.rope_dim
    if kv == "fp8" and dsa:
        return Fraction(part.kv_lora_rank + part.kv_lora_rank // 128 * 4 + part.rope_dim * 2)
    if kv == "fp4":
        return Fraction(d, 2) + d // 16
    return d * dtypes.BYTES[kv]


def part_token_bytes(part: Any, kv: str, tp: int, dsa: bool) -> Fraction:
    """Bytes per token of one attention part. SGLang sizes shared (σ = 0) layers like owners."""
    if isinstance(part, (FullAttention, SlidingWindow, ChunkedLocal)):
        if kv == "fp4":
            raise UnsupportedModelError("SGLang's NVFP4 KV for MHA layers is not modelled (use fp8 or bf16)")
        return part.entry_bytes(dtypes.Precision(kv=kv), tp)
    if isinstance(part, MLALatent):
        return mla_bytes(part, kv, dsa)
    if isinstance(part, IndexerKeys):  # _compute_dsa_indexer_cell_size: ceil(132 / index_kpool)
        return Fraction(ceil_div(int(block_scaled_bytes(part.head_dim, "fp8")), part.ratio))
    return Fraction(0)


def draft_bytes(layers: list[LayerSpec], kv: str, tp: int, dsa: bool, knobs: dict, assumptions: list[str]) -> Fraction:
    """The EAGLE/MTP draft pool's bytes per token: ``cell·draft/target``, the DSA indexer scaled by its
    own layer count (a draft layer always has one) (engines.md §3.1.4)."""
    draft = int(knobs["speculative_draft_layers"] or 0)
    if not draft:
        assumptions.append("no speculative draft pool (--speculative-draft-layers, e.g. the config's "
                           "num_nextn_predict_layers for MTP)")
        return Fraction(0)
    sums = {"kv": Fraction(0), "index": Fraction(0)}
    counts = {"kv": 0, "index": 0}
    for layer in layers:
        for key in ("kv", "index"):
            costs = [part_token_bytes(p, kv, tp, dsa) for p in layer.parts if isinstance(p, IndexerKeys) == (key == "index")]
            if any(costs):
                sums[key] += sum(costs)
                counts[key] += 1
    if any(is_local(p) for layer in layers for p in layer.parts):
        assumptions.append("draft layers priced as the target's average layer, windowed ones at full size")
    extra = sum((sums[k] * draft / counts[k] for k in sums if counts[k]), Fraction(0))
    assumptions.append(f"speculative draft pool: {draft} draft layer(s) sharing the token count, "
                       f"+{number(extra)} B per token (cell·draft/target layers)")
    return extra


def is_local(part: Any) -> bool:
    """Parts a hybrid-SWA pool holds in its sliding pool (Llama 4's chunks count as a window)."""
    return isinstance(part, (SlidingWindow, ChunkedLocal)) or (isinstance(part, MLALatent) and part.window)


def is_hybrid_swa(report: Any) -> bool:
    """SGLang's architecture test for a separate sliding-window pool."""
    archs = list(report.architectures or [])
    if (report.config or {}).get("is_hybrid_swa") is True:
        return True
    if any(a in HYBRID_SWA_ARCHITECTURES or a.startswith(HYBRID_SWA_PREFIXES) for a in archs):
        return True
    has_local = any(is_local(part) for layer in report.layer_specs for part in layer.parts)
    return has_local and any(a in HYBRID_SWA_IF_SLIDING for a in archs)


def swa_ratio(report: Any, knobs: dict, assumptions: list[str]) -> Fraction:
    if knobs["swa_full_tokens_ratio"] is not None:
        return Fraction(str(knobs["swa_full_tokens_ratio"]))
    small = report.model_type in SMALL_SWA_RATIO_MODEL_TYPES or any(
        a.startswith(SMALL_SWA_RATIO_PREFIXES) for a in report.architectures or []
    )
    ratio = SMALL_SWA_RATIO if small else DEFAULT_SWA_RATIO
    assumptions.append(f"swa_full_tokens_ratio = {float(ratio)} (SGLang default)")
    return ratio


def state_precision(report: Any, knobs: dict, assumptions: list[str]) -> dtypes.Precision:
    """SGLang's state dtypes: conv bf16; SSM from --mamba-ssm-dtype, the config, else fp32."""
    ssm = knobs["mamba_ssm_dtype"]
    if ssm is None:
        configured = (report.config or {}).get("mamba_ssm_dtype")
        if configured and report.model_type not in SSM_DTYPE_IGNORES_CONFIG and dtypes.canonical(configured):
            ssm = dtypes.canonical(configured)
            assumptions.append(f"Mamba SSM state {ssm} (config mamba_ssm_dtype), conv state {DEFAULT_CONV_DTYPE}")
        else:
            ssm = DEFAULT_SSM_DTYPE
            assumptions.append(f"Mamba SSM state {ssm}, conv state {DEFAULT_CONV_DTYPE} (SGLang defaults)")
    return dtypes.Precision(kv=report.precision.kv, state=dtypes.require(ssm, "--mamba-ssm-dtype"),
                            conv=DEFAULT_CONV_DTYPE)


def state_bytes_per_request(layers: list[LayerSpec], p: dtypes.Precision, tp: int) -> Fraction:
    """``mamba_cache_per_req``: Σ recurrent state over the linear / Mamba / conv layers."""
    return sum((layer.recurrent_state_bytes(p, tp) for layer in layers), Fraction(0))


# -- pool sizing --------------------------------------------------------------------------------


def floor_to_page(tokens: int, page: int) -> int:
    return tokens // page * page


def default_running_requests(tokens: int, context: int | None) -> int:
    """resolve_max_num_reqs: min(clamp(tokens/context·512, 2048, 4096), tokens//2)."""
    estimate = 4096 if not context else min(max(int(tokens / context * 512), 2048), 4096)
    return min(estimate, tokens // 2)


def reserve_mamba(rest: int, per_slot: Fraction, knobs: dict, radix: bool, assumptions: list[str]) -> tuple[int, int]:
    """_handle_max_mamba_cache: (max_mamba_cache_size, budget left for KV)."""
    given = knobs["max_running_requests"]
    if not radix and given is not None:
        size = int(given)
        assumptions.append("radix cache off: max_mamba_cache_size = max_running_requests")
    else:
        r = Fraction(str(knobs["mamba_full_memory_ratio"]))
        budget = rest * r / (1 + r)
        size = math.floor((budget - per_slot) / per_slot)
        assumptions.append(f"Mamba state pool reserved first: {float(r)}/{float(1 + r)} of the budget")
    if size < 1:
        raise UnsupportedModelError("the budget does not hold one SGLang Mamba state slot")
    return size, rest - math.ceil((size + 1) * per_slot)


def running_requests(tokens: int, context: int | None, knobs: dict, mamba_size: int | None, radix: bool,
                     assumptions: list[str]) -> int:
    given = knobs["max_running_requests"]
    running = min(int(given), tokens // 2) if given is not None else default_running_requests(tokens, context)
    if mamba_size is not None:
        ratio = MAMBA_RUNNING_RATIO if radix else 1
        running = min(running, mamba_size // ratio)
        assumptions.append(f"running requests capped at max_mamba_cache_size // {ratio}")
    return running


def simulate(report: Any, *, budget_bytes: int | None, max_model_len: int | None, knobs: dict) -> dict:
    """SGLang's cell and, with a budget, its pool sizes (see the module docstring)."""
    layers = list(report.layer_specs)
    if any(isinstance(part, CompressedKV) for layer in layers for part in layer.parts):
        return simulate_dsv4(report, budget_bytes=budget_bytes, max_model_len=max_model_len, knobs=knobs)
    tp, kv = report.tensor_parallel_size, report.precision.kv
    assumptions = [f"KV dtype {kv} (the report's; SGLang 'auto' = model dtype or the checkpoint's declared fp8)"]
    context = context_length(report, max_model_len, assumptions)
    radix = knobs["enable_prefix_caching"] is not False
    dsa = any(isinstance(part, IndexerKeys) for layer in layers for part in layer.parts)
    # GLM's index_kpool arrives as the indexer part's ratio; the page holds 64 pooled groups.
    index_kpool = max((p.ratio for layer in layers for p in layer.parts if isinstance(p, IndexerKeys)), default=1)
    full = swa = Fraction(0)
    for layer in layers:
        for part in layer.parts:
            cost = part_token_bytes(part, kv, tp, dsa)
            if is_local(part):
                swa += cost
            else:
                full += cost
    full += draft_bytes(layers, kv, tp, dsa, knobs, assumptions)
    if any(part.copies == 0 for layer in layers for part in layer.parts):
        assumptions.append("layers that share another layer's KV are still sized in the pool (no saving in SGLang)")
    hybrid = bool(swa) and is_hybrid_swa(report)
    ratio = None
    if hybrid:
        ratio = swa_ratio(report, knobs, assumptions)
        cell = full + ratio * swa if full else swa
    else:
        if swa:
            assumptions.append("not a hybrid-SWA architecture in SGLang: windowed layers get full KV")
        cell = full + swa
    if dsa:
        assumptions.append(f"DSA: latent {'656 B packed fp8' if kv == 'fp8' else kv}, "
                           "indexer 132 B on layers that compute top-k (FlashMLA-style backend)")
    elif any(isinstance(part, MLALatent) for layer in layers for part in layer.parts) and kv == "fp8":
        assumptions.append("MLA fp8: raw 576 B latent (no scales)")
    page = knobs["page_size"] or (DSA_PAGE_TOKENS * index_kpool if dsa else 1)
    if not knobs["page_size"]:
        backend = "FlashMLA-sparse style DSA backend" if dsa else "CUDA attention backend"
        assumptions.append(f"page size {page} (SGLang default, {backend})")

    sp = state_precision(report, knobs, assumptions) if any(layer.recurrent_state_bytes(report.precision, tp)
                                                            for layer in layers) else None
    per_slot = state_bytes_per_request(layers, sp, tp) if sp else Fraction(0)
    result: dict[str, Any] = {
        "bytes_per_token": number(cell),
        "page_size": page,
        "context_length": context,
    }
    if ratio is not None:
        result.update(full_bytes_per_token=number(full), swa_bytes_per_token=number(swa),
                      swa_full_tokens_ratio=float(ratio))
    if per_slot:
        result["mamba_bytes_per_request"] = number(per_slot)
    if budget_bytes is not None:
        result.update(size_pools(budget_bytes, cell, ratio, page, per_slot, context, knobs, radix, assumptions))
    result["assumptions"] = assumptions
    return result


def size_pools(budget: int, cell: Fraction, ratio: Fraction | None, page: int, per_slot: Fraction,
               context: int | None, knobs: dict, radix: bool, assumptions: list[str]) -> dict:
    """Mamba carve-out, then ``max_total_num_tokens = floor(rest/cell)`` page-aligned, then the caps."""
    rest, mamba_size = budget, None
    if per_slot:
        mamba_size, rest = reserve_mamba(budget, per_slot, knobs, radix, assumptions)
    out: dict[str, Any] = {"max_mamba_cache_size": mamba_size}
    if not cell:
        out.update(max_total_num_tokens=None, kv_cache_tokens=None)
        if mamba_size is not None:
            running = running_requests(mamba_size * MAMBA_RUNNING_RATIO, None, knobs, mamba_size, radix, assumptions)
            out.update(max_running_requests=running, max_concurrency=running)
        return out
    tokens = floor_to_page(math.floor(Fraction(max(rest, 0)) / cell), page)
    out.update(max_total_num_tokens=tokens, kv_cache_tokens=tokens)
    if ratio is not None:
        out["swa_tokens"] = floor_to_page(math.floor(tokens * ratio), page)
    running = running_requests(tokens, context, knobs, mamba_size, radix, assumptions)
    out["max_running_requests"] = running
    if context:
        out["max_concurrency"] = printed(min(tokens / context, running))
        assumptions.append("max_concurrency = max_total_num_tokens / context length, capped by "
                           "max_running_requests (SGLang admits by tokens and prints no such line)")
    return out


# -- DeepSeek V4 --------------------------------------------------------------------------------


def dsv4_paged(page_tokens: int) -> Fraction:
    """Bytes per entry of a pool paged ``page_tokens`` entries at a time (rows padded to 576 B)."""
    return Fraction(ceil_div(page_tokens * DSV4_ROW, DSV4_ALIGN) * DSV4_ALIGN, page_tokens)


def dsv4_layers(layers: list[LayerSpec]) -> tuple[int, dict[int, int], int, int]:
    """(layers with a raw window, owned compressed layers per ratio, c4 indexer head dim, latent dim)."""
    windowed = sum(1 for layer in layers if any(isinstance(p, MLALatent) for p in layer.parts))
    per_ratio: dict[int, int] = {}
    index_dim, latent_dim = 128, 512
    for layer in layers:
        for part in layer.parts:
            if isinstance(part, CompressedKV) and part.copies:
                per_ratio[part.ratio] = per_ratio.get(part.ratio, 0) + 1
                latent_dim = part.head_dim
            elif isinstance(part, IndexerKeys) and part.ratio > 1:
                index_dim = part.head_dim
    return windowed or len(layers), per_ratio, index_dim, latent_dim


def dsv4_bytes_per_full_token(layers: list[LayerSpec], page: int, ratio: Fraction) -> tuple[Fraction, Fraction, dict]:
    """DSV4PoolConfigurator: (bytes per full-pool token, bytes per SWA token, per-ratio coefficients)."""
    windowed, per_ratio, index_dim, latent_dim = dsv4_layers(layers)
    c4_state = Fraction(DSV4_C4_RING, page) * (2 * 2 * latent_dim + 2 * 2 * index_dim) * DSV4_STATE_BYTES
    per_swa = dsv4_paged(page) * windowed + c4_state * per_ratio.get(4, 0)
    indexer = block_scaled_bytes(index_dim, "fp8")
    coeff: dict[int, Fraction] = {}
    for r in per_ratio:
        paged = dsv4_paged(max(page // r, 1))
        if r == 4:
            coeff[r] = paged / 4 + indexer / 4
        elif r in (1, 2):
            coeff[r] = (paged + DSV4_LOW_RATIO_INDEXER) / r
        else:
            coeff[r] = paged / r
    total = ratio * per_swa + sum(coeff[r] * n for r, n in per_ratio.items())
    return total, per_swa, {r: (coeff[r], per_ratio[r]) for r in per_ratio}


def dsv4_fixed_bytes(per_ratio: dict, slots: int, latent_dim: int) -> int:
    """Per-request pools: c128 offline state and ratio-2 pair state, sized from the request slots."""
    fixed = 0
    if 128 in per_ratio:
        rows = ceil_div(slots * 128 + 129, 128) * 128
        fixed += rows * 2 * latent_dim * DSV4_STATE_BYTES * per_ratio[128][1]
    if 2 in per_ratio:
        rows = ceil_div(slots * 2 + 3, 2) * 2
        fixed += rows * 2 * latent_dim * DSV4_STATE_BYTES * per_ratio[2][1]
    return fixed


def simulate_dsv4(report: Any, *, budget_bytes: int | None, max_model_len: int | None, knobs: dict) -> dict:
    assumptions = [
        "DeepSeek V4 pool: fp8 rows in the v4 layout (584 B, pages padded to 576 B) whatever the report's KV dtype",
    ]
    layers = list(report.layer_specs)
    draft = int(knobs["speculative_draft_layers"] or 0)
    context = context_length(report, max_model_len, assumptions)
    page = knobs["page_size"] or DSV4_PAGE
    if not knobs["page_size"]:
        assumptions.append(f"page size {page} (SGLang default for DeepSeek V4)")
    ratio = swa_ratio(report, knobs, assumptions)
    per_token, per_swa, per_ratio = dsv4_bytes_per_full_token(layers, page, ratio)
    if draft:
        per_token = per_token * (len(layers) + draft) / len(layers)
        assumptions.append(f"speculative draft pool: {draft} MTP layer(s), bytes per token × (L + {draft})/L, L = {len(layers)}")
    else:
        assumptions.append("no speculative draft pool (--speculative-draft-layers: MTP multiplies by (L+1)/L)")
    latent_dim = dsv4_layers(layers)[3]
    result: dict[str, Any] = {
        "bytes_per_token": number(per_token),
        "bytes_per_swa_token": number(per_swa),
        "compressed_bytes_per_token": {str(r): number(c) for r, (c, _) in sorted(per_ratio.items())},
        "page_size": page,
        "swa_full_tokens_ratio": float(ratio),
        "context_length": context,
    }
    if budget_bytes is not None:
        given = knobs["max_running_requests"]
        first = floor_to_page(math.floor(budget_bytes / per_token), page)
        running = int(given) if given is not None else default_running_requests(first, context)
        fixed = dsv4_fixed_bytes(per_ratio, running + 1, latent_dim)
        full = floor_to_page(math.floor(Fraction(max(budget_bytes - fixed, 0)) / per_token), page)
        if given is None:
            assumptions.append("c128 state sized for max_running_requests estimated on the pool before it (one pass)")
            running = default_running_requests(full, context)
        swa = floor_to_page(math.floor(full * ratio), page)
        result.update(
            max_total_num_tokens=full, kv_cache_tokens=full, swa_tokens=swa,
            c4_tokens=full // 4, c128_tokens=full // 128, fixed_state_bytes=fixed,
            max_running_requests=running, max_mamba_cache_size=None,
        )
        if context:
            result["max_concurrency"] = printed(min(full / context, running))
    result["assumptions"] = assumptions
    return result
