"""SGLang 0.5.23 pool arithmetic (engines.md §2, §3.1), over a report's layer specs.

SGLang sizes a token pool: one *cell* of bytes per token over every attention layer, so
``max_total_num_tokens = floor(rest / cell)`` floored to the page size. Before that, models with
linear or Mamba layers reserve a state pool (``r/(1+r)`` of the budget, r = 0.9), which also caps the
running requests. Hybrid sliding-window memory (a second, smaller pool for the sliding layers) is
given only to the architectures SGLang lists; every other windowed model gets full KV on every
layer. The parts live in their own modules: whether SGLang serves the model at all
(``sglang_support``), where its config classes read a config differently (``sglang_config``), the
backend and page size per GPU generation (``sglang_backend``), the budget arithmetic
(``sglang_pools``) and DeepSeek V4 (``sglang_dsv4``). Refusals are ``UnsupportedModelError`` with
SGLang's reason; warnings are one line each, in the result's ``warnings`` and first in its
``assumptions``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

from hfkv.model import dtypes
from hfkv.model.dtypes import block_scaled_bytes, ceil_div
from hfkv.errors import UnsupportedModelError
from hfkv.model.specs import ChunkedLocal, CompressedKV, FullAttention, IndexerKeys, LayerSpec, MLALatent, SlidingWindow

from hfkv.engines.sglang import backend as sglang_backend
from hfkv.engines.sglang import config as sglang_config
from hfkv.engines.sglang import registry
from hfkv.engines.sglang.facts import HYBRID_SWA, HYBRID_SWA_IF_SLIDING
from hfkv.engines.sglang import dsv4 as sglang_dsv4
from hfkv.engines.sglang import pools as sglang_pools
from hfkv.engines.sglang import support as sglang_support
from hfkv.engines.contract import EngineInput, EngineKnobs, number

# arg_groups/fields/schedule.py: swa_full_tokens_ratio; DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO (engines.md §2.4c, §2.6c).
DEFAULT_SWA_RATIO = Fraction(4, 5)
DSV4_SWA_RATIO = Fraction(1, 10)  # DSV4PoolConfigurator's own default, whatever the architecture
DEFAULT_SSM_DTYPE = "fp32"  # configs/mamba_utils.py:mamba2_state_dtype
DEFAULT_CONV_DTYPE = "bf16"  # SGLANG_MAMBA_CONV_DTYPE
DEFAULT_MEMORY_RATIO = 0.9  # mamba_full_memory_ratio
INDEX_MAP_BYTES = 8  # mem_cache/allocator/swa.py: int64 full→SWA index map per full token

# -- per-token bytes ---------------------------------------------------------------------------


def mla_bytes(part: MLALatent, kv: str, packed: bool) -> Fraction:
    """One latent entry: ``packed`` (DSA on FlashMLA sparse) 656 B fp8 = 512 fp8 + 4 scales + 64 bf16 rope;
    else raw D·e (trtllm's layout, plain MLA).

    kv_cache_configurator.py:calculate_mla_kv_cache_dim; MLA fp4 is D/2 + ⌊D/16⌋ scale bytes.
    """
    d = part.kv_lora_rank + part.rope_dim
    if kv == "fp8" and packed:
        return Fraction(part.kv_lora_rank + part.kv_lora_rank // 128 * 4 + part.rope_dim * 2)
    if kv == "fp4":
        return Fraction(d, 2) + d // 16
    return d * dtypes.BYTES[kv]


def part_token_bytes(part: Any, kv: str, tp: int, packed: bool) -> Fraction:
    """Bytes per token of one attention part. SGLang sizes shared (σ = 0) layers like owners."""
    if isinstance(part, (FullAttention, SlidingWindow, ChunkedLocal)):
        if kv == "fp4":
            raise UnsupportedModelError("SGLang's NVFP4 KV for MHA layers is not modelled (use fp8 or bf16)")
        return part.entry_bytes(dtypes.Precision(kv=kv), tp)
    if isinstance(part, MLALatent):
        return mla_bytes(part, kv, packed)
    if isinstance(part, IndexerKeys):  # _compute_dsa_indexer_cell_size: ceil(132 / index_kpool)
        return Fraction(ceil_div(int(block_scaled_bytes(part.head_dim, "fp8")), part.ratio))
    return Fraction(0)


def draft_bytes(layers: list[LayerSpec], kv: str, tp: int, packed: bool, knobs: EngineKnobs,
                assumptions: list[str]) -> Fraction:
    """The EAGLE/MTP draft pool's bytes per token: ``cell·draft/target``, the DSA indexer scaled by its
    own layer count (a draft layer always has one) (engines.md §3.1.4)."""
    draft = int(knobs.speculative_draft_layers or 0)
    if not draft:
        assumptions.append("no speculative draft pool (--speculative-draft-layers, e.g. the config's "
                           "num_nextn_predict_layers for MTP)")
        return Fraction(0)
    sums = {"kv": Fraction(0), "index": Fraction(0)}
    counts = {"kv": 0, "index": 0}
    for layer in layers:
        for key in ("kv", "index"):
            costs = [part_token_bytes(p, kv, tp, packed) for p in layer.parts
                     if isinstance(p, IndexerKeys) == (key == "index")]
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
    """Parts a hybrid-SWA pool holds in its sliding pool (Llama 4's chunks count as a window, and so
    does a declared window that covers every position: SGLang keeps its sliding pool for it)."""
    return (isinstance(part, (SlidingWindow, ChunkedLocal)) or (isinstance(part, MLALatent) and bool(part.window))
            or (isinstance(part, FullAttention) and part.declared_window is not None))


def local_window(part: Any) -> int | None:
    """The window a local part keeps (``declared_window`` for full attention that declares one)."""
    return getattr(part, "window", None) or getattr(part, "declared_window", None)


def is_hybrid_swa(report: EngineInput) -> bool:
    """SGLang's test for a separate sliding-window pool (``is_hybrid_swa_model``): a config opting in,
    any architecture it lists (``hybrid_swa``), or one it lists only when the config has sliding layers."""
    if (report.config or {}).get("is_hybrid_swa") is True:
        return True
    kinds = {f.hybrid_swa for f in registry.arch_facts(report)}
    has_local = any(is_local(part) for layer in report.layer_specs for part in layer.parts)
    return HYBRID_SWA in kinds or (HYBRID_SWA_IF_SLIDING in kinds and has_local)


def swa_ratio(report: EngineInput, knobs: EngineKnobs, assumptions: list[str],
              pool_default: Fraction | None = None) -> Fraction:
    """``--swa-full-tokens-ratio``, else the pool's own default, else the architecture's model override
    (``swa_full_tokens_ratio``), else 0.8."""
    if knobs.swa_full_tokens_ratio is not None:
        return Fraction(str(knobs.swa_full_tokens_ratio))
    own = [f.swa_full_tokens_ratio for f in registry.arch_facts(report) if f.swa_full_tokens_ratio is not None]
    ratio = pool_default or (own[0] if own else DEFAULT_SWA_RATIO)
    assumptions.append(f"swa_full_tokens_ratio = {float(ratio)} (SGLang default)")
    return ratio


def state_precision(report: EngineInput, knobs: EngineKnobs, assumptions: list[str]) -> dtypes.Precision:
    """SGLang's state dtypes: conv bf16; SSM from --mamba-ssm-dtype, the config, else fp32."""
    ssm = knobs.mamba_ssm_dtype
    if ssm is None:
        configured = (report.config or {}).get("mamba_ssm_dtype")
        if configured and registry.model_type(report).ssm_dtype_from_config and dtypes.canonical(configured):
            ssm = dtypes.canonical(configured)
            assumptions.append(f"Mamba SSM state {ssm} (config mamba_ssm_dtype), conv state {DEFAULT_CONV_DTYPE}")
        else:
            ssm = DEFAULT_SSM_DTYPE
            assumptions.append(f"Mamba SSM state {ssm}, conv state {DEFAULT_CONV_DTYPE} (SGLang defaults)")
    return dtypes.Precision(kv=report.precision.kv, state=dtypes.require(ssm, "--mamba-ssm-dtype"),
                            conv=DEFAULT_CONV_DTYPE)


def state_bytes_per_request(layers: list[LayerSpec], p: dtypes.Precision, tp: int,
                            whole: Callable[[Any], bool] = lambda part: False) -> Fraction:
    """``mamba_cache_per_req``: Σ recurrent state over the linear / Mamba / conv layers; parts ``whole``
    selects are kept unsplit on every TP rank."""
    return sum((Fraction(part.state_bytes(p, 1 if whole(part) else tp))
                for layer in layers for part in layer.parts if part.recurrent), Fraction(0))




def memory_ratio(report: EngineInput, knobs: EngineKnobs, assumptions: list[str]) -> float:
    """``mamba_full_memory_ratio``: the knob, except an architecture's own default (its model override's)
    while the knob is at SGLang's."""
    ratio = float(knobs.mamba_full_memory_ratio)
    own = [f for f in registry.arch_facts(report) if f.mamba_full_memory_ratio is not None]
    if ratio == DEFAULT_MEMORY_RATIO and own:
        assumptions.append(f"mamba_full_memory_ratio = {own[0].mamba_full_memory_ratio} (SGLang's default for "
                           f"{own[0].architecture}, set by its model override)")
        return own[0].mamba_full_memory_ratio
    return ratio


def split_cell(layers: list[LayerSpec], kv: str, tp: int, packed: bool) -> tuple[Fraction, Fraction]:
    """(bytes per token of the full-attention parts, of the windowed parts)."""
    full = swa = Fraction(0)
    for layer in layers:
        for part in layer.parts:
            cost = part_token_bytes(part, kv, tp, packed)
            if is_local(part):
                swa += cost
            else:
                full += cost
    return full, swa


def window_of(layers: list[LayerSpec]) -> int | None:
    """SGLang's ``sliding_window_size``: the (largest) window of the windowed parts."""
    windows = [local_window(p) for layer in layers for p in layer.parts if is_local(p)]
    windows = [w for w in windows if isinstance(w, int) and w > 0]
    return max(windows) if windows else None


def layout_notes(layers: list[LayerSpec], kv: str, plan: sglang_backend.Plan, assumptions: list[str]) -> None:
    """Say which latent layout and page size the backend implies."""
    dsa = any(isinstance(part, IndexerKeys) for layer in layers for part in layer.parts)
    if dsa:
        latent = "656 B packed fp8" if plan.dsa_packed_fp8 and kv == "fp8" else f"raw {kv}"
        assumptions.append(f"DSA: latent {latent}, indexer 132 B on layers that compute top-k")
    elif kv == "fp8" and any(isinstance(part, MLALatent) for layer in layers for part in layer.parts):
        assumptions.append("MLA fp8: raw 576 B latent (no scales)")


def token_cell(report: EngineInput, layers: list[LayerSpec], plan: sglang_backend.Plan, knobs: EngineKnobs,
               assumptions: list[str]) -> tuple[Fraction, Fraction, Fraction | None, Fraction]:
    """(full bytes per token incl. the draft pool, windowed bytes, SWA ratio or None, the cell)."""
    kv, tp = plan.kv, report.tensor_parallel_size
    full, swa = split_cell(layers, kv, tp, plan.dsa_packed_fp8)
    full += draft_bytes(layers, kv, tp, plan.dsa_packed_fp8, knobs, assumptions)
    if any(part.copies == 0 for layer in layers for part in layer.parts):
        assumptions.append("layers that share another layer's KV are still sized in the pool (no saving in SGLang)")
    if not (swa and is_hybrid_swa(report)):
        if swa:
            assumptions.append("not a hybrid-SWA architecture in SGLang: windowed layers get full KV")
        return full, swa, None, full + swa
    ratio = swa_ratio(report, knobs, assumptions)
    assumptions.append(f"SGLang's allocator also keeps an int64 full→SWA index map: {INDEX_MAP_BYTES} B per "
                       "full token more than this sizing figure")
    return full, swa, ratio, (full + ratio * swa if full else swa)


def simulate(report: EngineInput, *, budget_bytes: int | None, max_model_len: int | None, knobs: EngineKnobs) -> dict:
    """SGLang's cell and, with a budget, its pool sizes (see the module docstring)."""
    warnings = sglang_support.check(report, knobs)
    if any(isinstance(part, CompressedKV) for layer in report.layer_specs for part in layer.parts):
        ratio_notes: list[str] = []
        ratio = swa_ratio(report, knobs, ratio_notes, DSV4_SWA_RATIO)
        return sglang_dsv4.simulate(report, budget_bytes=budget_bytes, max_model_len=max_model_len, knobs=knobs,
                                    swa_ratio=ratio, warnings=warnings, notes=ratio_notes)
    layers, notes = sglang_config.sglang_layers(report)
    tp = report.tensor_parallel_size
    plan = sglang_backend.plan(report, layers, knobs, warnings)
    kv = plan.kv
    context_notes: list[str] = []
    context = sglang_config.context_length(report, max_model_len, context_notes, warnings)
    assumptions = [*warnings, f"KV dtype {kv} (SGLang 'auto' = model dtype or the checkpoint's declared fp8)",
                   *notes, *context_notes]
    radix = knobs.enable_prefix_caching is not False
    full, swa, ratio, cell = token_cell(report, layers, plan, knobs, assumptions)
    layout_notes(layers, kv, plan, assumptions)
    page = knobs.page_size or plan.page
    if not knobs.page_size:
        assumptions.append(f"page size {page} (SGLang default, {plan.backend} attention backend on "
                           f"SM{knobs.compute_capability})")
    has_state = any(layer.recurrent_state_bytes(report.precision, tp) for layer in layers)
    per_slot = (state_bytes_per_request(layers, state_precision(report, knobs, assumptions), tp,
                                        sglang_config.replicated_state(report)) if has_state else 0)
    result: dict[str, Any] = {
        "configurator": "HybridSWAPoolConfigurator" if ratio is not None else "DefaultPoolConfigurator",
        "bytes_per_token": number(cell), "page_size": page, "context_length": context,
    }
    if ratio is not None:
        result.update(full_bytes_per_token=number(full), swa_bytes_per_token=number(swa),
                      swa_full_tokens_ratio=float(ratio))
    mamba_ratio = sglang_pools.mamba_running_ratio(report, radix)
    if per_slot:
        result.update(mamba_bytes_per_request=number(per_slot), mamba_running_ratio=mamba_ratio)
    if budget_bytes is not None:
        shape = pool_shape(full, swa, cell, ratio, page, per_slot, window_of(layers))
        shape["chunked_prefill"] = chunked_prefill_size(knobs)
        result.update(sglang_pools.size_pools(budget_bytes, shape, context, knobs, radix,
                                              memory_ratio(report, knobs, assumptions), mamba_ratio, assumptions))
    result["warnings"] = warnings
    result["assumptions"] = assumptions
    return result


def chunked_prefill_size(knobs: EngineKnobs) -> int:
    """``memory_hook.handle_gpu_memory_settings``: 8192 below 160 GiB of GPU memory (H100/H200 class, SM90),
    16384 above (B200, SM100); under DP attention divided by the DP size (``_handle_data_parallelism``)."""
    size = 16384 if knobs.capability_major >= 10 else 8192
    return size // int(knobs.data_parallel_size or 1) if knobs.enable_dp_attention else size


def pool_shape(full: Fraction, swa: Fraction, cell: Fraction, ratio: Fraction | None, page: int,
               per_slot: Fraction | int, window: int | None) -> dict:
    """The figures ``sglang_pools.size_pools`` needs, as SGLang holds them (ints; the ratio a float)."""
    shape = {"cell": int(cell) if cell.denominator == 1 else float(cell), "page": page,
             "per_slot": int(per_slot)}
    if ratio is not None:
        shape.update(full=int(full), swa=int(swa), ratio=float(ratio), window=window)
    return shape
