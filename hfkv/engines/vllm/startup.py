"""vLLM 0.33.0 block arithmetic (``v1/worker/gpu_worker.py``, ``v1/core/kv_cache_utils.py``), over a report's layer specs.

Every attention-like layer part gets a KV-cache spec of ``specs``' kinds (``part_spec``; parts that
read another layer's KV get none; an encoder-decoder's cross-attention a ``CrossAttentionSpec``; a pooling
class with encoder-only attention none at all, ``pooling``). The hybrid manager groups the specs so that every group has the
same number of layer slots (padding layers fill the gaps) and every slot the same page size
(``groups``); all groups draw block IDs from one pool, so ``bytes_per_block`` is one group's pages and
``num_blocks = budget // bytes_per_block``. The logged numbers then count, per request of
``max_model_len`` tokens, the blocks each group's spec holds (``KVCacheSpec.blocks_per_request`` under
one ``RequestPlan``). Before any of that, vLLM may refuse the model (``models``); the backend, and so
the block size, follows the GPU generation (``backends``); what vLLM does per class is ``facts``.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from typing import Any, Callable

from hfkv.model import dtypes
from hfkv.errors import UnsupportedModelError
from hfkv.model.specs import (
    ChunkedLocal,
    CompressedKV,
    CrossAttention,
    FullAttention,
    IndexerKeys,
    LayerSpec,
    LinearAttentionState,
    MambaState,
    MLALatent,
    SlidingWindow,
)

from hfkv.engines.vllm import backends
from hfkv.engines.vllm import dsv4 as vllm_dsv4
from hfkv.engines.vllm import facts as vllm_facts
from hfkv.engines.vllm import transformers as vllm_transformers
from hfkv.engines.vllm.backends import choose_backend, is_dsa, sparse_128
from hfkv.engines.vllm.facts import ArchFacts
from hfkv.engines.vllm.groups import DEFAULT_BLOCK, Group, block_size, make_groups
from hfkv.engines.vllm.rules import RuleSet, rules
from hfkv.engines.vllm.specs import (
    ChunkedLocalAttentionSpec,
    CrossAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    RequestPlan,
    SlidingWindowMLASpec,
    SlidingWindowSpec,
    attention_token_bytes,
    indexer_token_bytes,
    mla_token_bytes,
)
from hfkv.engines.vllm.models import (
    VllmRefusal,
    default_max_model_len,
    full_text_config,
    pooling_class,
    refusal,
    transformers_backend,
)
from hfkv.engines.contract import context_length, EngineInput, EngineKnobs, number, printed

__all__ = ["VllmRefusal", "simulate"]

DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192  # get_batch_defaults: API server, >=70 GiB non-A100 GPU
DEFAULT_MAX_NUM_SEQS = 1024  # the same tier's max_num_seqs
# MambaStateDtypeCalculator (layers/mamba/mamba_utils.py): the SSM state dtype a layer kind takes while
# mamba_ssm_cache_dtype stays "auto" (kda_state_dtype: fp32; every other calculator: the model dtype).
# A rule of the layer, not of the architecture: the architecture's hook (ArchFacts.ssm_dtype) runs first.
AUTO_SSM_DTYPE = {"kda": "fp32"}


# -- specs --------------------------------------------------------------------------------------


def class_facts(report: EngineInput) -> ArchFacts | None:
    """The facts of the class vLLM builds for this model (None: not one of its registered classes)."""
    return vllm_facts.model_facts(report.architectures)


def ssm_dtype(report: EngineInput, part: Any, knobs: EngineKnobs) -> str:
    """The SSM state dtype: ``--mamba-ssm-dtype``, else what the class's config hook sets
    (``ArchFacts.ssm_dtype``), else the layer's own default (``AUTO_SSM_DTYPE``, the model dtype)."""
    if knobs.mamba_ssm_dtype is not None:
        return knobs.mamba_ssm_dtype
    found = class_facts(report)
    ssm = found.ssm_dtype.resolve(report.config or {}) if found else "auto"
    if ssm != "auto":
        return ssm
    variant = part.variant if isinstance(part, LinearAttentionState) else None
    return AUTO_SSM_DTYPE.get(variant, report.precision.conv)


def state_precision(report: EngineInput, part: Any, knobs: EngineKnobs) -> dtypes.Precision:
    """vLLM state dtypes: the model dtype for conv (the model's 16-bit dtype unless the report
    overrides it), ``ssm_dtype`` for the SSM state."""
    ssm = dtypes.require(ssm_dtype(report, part, knobs), "--mamba-ssm-dtype")
    return dtypes.Precision(kv=report.precision.kv, state=ssm, conv=report.precision.conv)


def state_variant(part: Any, report: EngineInput) -> str:
    """The Mamba-like layer kind, which decides its prefill checkpoint (``backends``);
    "gdn-plain" for a GDN layer of a class whose GDN layers export none
    (``ArchFacts.gdn_prefill_checkpoint``)."""
    if isinstance(part, MambaState):
        return f"mamba{part.version}"
    if isinstance(part, LinearAttentionState):
        found = class_facts(report)
        if part.variant == "gdn" and found is not None and found.gdn_prefill_checkpoint is False:
            return "gdn-plain"
        return part.variant
    return "conv"


def part_spec(part: Any, report: EngineInput, kv: str, knobs: EngineKnobs, packed: bool) -> KVCacheSpec | None:
    """The spec vLLM builds for one part (each layer's ``get_kv_cache_spec``); None for a part that reads
    another layer's copy."""
    tp = report.tensor_parallel_size
    if part.copies == 0:
        return None
    if isinstance(part, FullAttention):
        if part.v_head_dim == 0 and sparse_128(report):  # MiniMax-M3's index keys (K only) stay in the model dtype
            kv = report.precision.conv
        bytes_ = attention_token_bytes(part, kv, tp)
        if part.declared_window is not None:  # a window covering every position is still a SlidingWindowSpec
            return SlidingWindowSpec(token_bytes=bytes_, window=part.declared_window, head_dim=part.head_dim)
        return FullAttentionSpec(token_bytes=bytes_, head_dim=part.head_dim)
    if isinstance(part, SlidingWindow):  # Cohere 2's W + 1 keys (commandr.py) are already the mapper's window
        return SlidingWindowSpec(token_bytes=attention_token_bytes(part, kv, tp), window=part.window,
                                 head_dim=part.head_dim)
    if isinstance(part, CrossAttention):  # an encoder-decoder's cross-attention (CrossAttention.get_kv_cache_spec)
        return CrossAttentionSpec(token_bytes=attention_token_bytes(part, kv, tp), head_dim=part.head_dim)
    if isinstance(part, ChunkedLocal):
        return ChunkedLocalAttentionSpec(token_bytes=attention_token_bytes(part, kv, tp), window=part.chunk,
                                         head_dim=part.head_dim)
    if isinstance(part, MLALatent):
        if part.window:
            return SlidingWindowMLASpec(token_bytes=mla_token_bytes(part, kv, packed), window=part.window)
        return MLAAttentionSpec(token_bytes=mla_token_bytes(part, kv, packed))
    if isinstance(part, IndexerKeys):
        return MLAAttentionSpec(token_bytes=indexer_token_bytes(part))
    if part.recurrent:
        return state_spec(part, report, knobs)
    return None


def state_spec(part: Any, report: EngineInput, knobs: EngineKnobs) -> MambaSpec:
    """A Mamba-like layer's spec: its state (conv rows grow with the speculative tokens) in vLLM's
    dtypes, and the prefill checkpoint its layer kind exports on this GPU generation."""
    spec_rows = int(knobs.num_speculative_tokens)
    shaped = part.model_copy(update={"conv_kernel": part.conv_kernel + spec_rows}) if spec_rows else part
    variant, head, major = state_variant(part, report), getattr(part, "head_k_dim", 0), knobs.capability_major
    return MambaSpec(state_bytes=Fraction(shaped.state_bytes(state_precision(report, part, knobs),
                                                             report.tensor_parallel_size)),
                     checkpoint_blocks=backends.checkpoint_blocks(variant, major, head),
                     checkpoint_alignment=backends.mamba_checkpoint_alignment(variant, major, head))


def kv_dtype(report: EngineInput, assumptions: list[str]) -> str:
    """The KV dtype vLLM's attention layers get: the report's, except for a class that builds them
    without the cache config (``ArchFacts.kv_dtype``)."""
    kv, found = report.precision.kv, class_facts(report)
    if found is not None and found.kv_dtype == "model" and kv != report.precision.conv:
        assumptions.append(f"{report.model_type}: vLLM builds this attention without the cache config, so its KV "
                           f"stays {report.precision.conv} whatever --kv-cache-dtype says")
        return report.precision.conv
    return kv


def collect_specs(report: EngineInput, kv: str, knobs: EngineKnobs, assumptions: list[str]) -> list[KVCacheSpec]:
    layers: list[LayerSpec] = list(report.layer_specs)
    dsa = is_dsa(report)
    packed = dsa and backends.packs_sparse_latent(knobs.capability_major, kv)
    specs, shared = [], 0
    for layer in layers:
        for part in layer.parts:
            spec = part_spec(part, report, kv, knobs, packed)
            if spec is None:
                shared += part.copies == 0
                continue
            specs.append(spec)
    if shared:
        assumptions.append(f"{shared} part(s) read another layer's KV: no spec, no memory")
    if dsa:
        latent = {"fp8": "fp8_ds_mla 656 B", "fp4": "nvfp4_ds_mla 352 B"}.get(kv, kv) if packed else kv
        assumptions.append(f"DSA: FlashMLA-sparse latent ({latent}) plus a 132 B indexer spec on layers "
                           "that compute top-k (÷ index_kpool when pooled)")
    if any(isinstance(s, MambaSpec) for s in specs):
        assumptions.append("Mamba/linear state in the model dtype (vLLM 'auto'; Nemotron-H and KDA SSM fp32)")
    return promote_local(specs, knobs, assumptions)


def transformers_specs(report: EngineInput, kv: str, knobs: EngineKnobs, backend_class: str,
                       assumptions: list[str]) -> list[KVCacheSpec]:
    """The Transformers backend's layers: one Attention each, its window from ``layer_types``."""
    tp, config = report.tensor_parallel_size, full_text_config(report)
    specs = [SlidingWindowSpec(token_bytes=attention_token_bytes(part, kv, tp), window=window, head_dim=part.head_dim)
             if window else FullAttentionSpec(token_bytes=attention_token_bytes(part, kv, tp), head_dim=part.head_dim)
             for part, window in vllm_transformers.layer_windows(report, config)]
    backend_class = vllm_transformers.served(report, {}, config) or backend_class  # MoE: class defaults count
    assumptions.append(f"served by vLLM's Transformers modeling backend ({backend_class}): one Attention per "
                       "decoder layer, sliding where layer_types says sliding_attention")
    if differ := vllm_transformers.window_disagreements(report, config):
        assumptions.insert(0, f"WARNING: unchecked: hfkv's mapping and vLLM's reading of sliding_window/layer_types "
                              f"disagree on {len(differ)} layer(s) (first: {differ[0]}); vLLM's reading is used")
    if vllm_transformers.ignored_parts(report):
        assumptions.append(f"{vllm_transformers.ignored_parts(report)} non-attention part(s) of attention layers "
                           "get no vLLM cache: the backend allocates only its Attention layers")
    return promote_local(specs, knobs, assumptions)


def promote_local(specs: list[KVCacheSpec], knobs: EngineKnobs, assumptions: list[str]) -> list[KVCacheSpec]:
    """Sliding/chunked specs that vLLM allocates as full attention: chunked ones without
    ``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE``, every local one without the hybrid manager."""
    chunked_to_full = not knobs.chunked_local_hybrid
    out = [s.as_full() if (isinstance(s, ChunkedLocalAttentionSpec) and chunked_to_full)
           or (s.local and knobs.disable_hybrid_kv_cache_manager) else s for s in specs]
    if chunked_to_full and any(isinstance(s, ChunkedLocalAttentionSpec) for s in specs):
        assumptions.append("chunked local attention allocated as full attention "
                           "(VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0)")
    if knobs.disable_hybrid_kv_cache_manager and any(s.local for s in specs):
        assumptions.append("hybrid KV cache manager disabled: sliding layers get full KV")
    return out


# -- the logged numbers -------------------------------------------------------------------------


def attention_free(report: EngineInput, specs: list[KVCacheSpec]) -> bool:
    """No attention spec and a class vLLM marks attention-free (``ArchFacts.attention_free``): prefix
    caching off by default and one Mamba block of max_model_len. A hybrid (``IsHybrid``) whose config
    happens to hold no attention layer (Granite-4.0-H without layer_types) is not one of them."""
    found = class_facts(report)
    return not any(s.grows for s in specs) and found is not None and found.attention_free


def request_plan(knobs: EngineKnobs, assumptions: list[str], *, windows: bool, states: bool,
                 free: bool = False, cross: bool = False) -> RequestPlan:
    """What a request's blocks depend on besides its length (``RequestPlan``): the tokens in flight for
    the sliding-window bound, the Mamba state blocks, align mode, the encoder length cross-attention is
    sized for. ``windows`` / ``states`` / ``cross``: the model has sliding or chunked specs / Mamba specs /
    cross-attention specs (their assumptions are said only then); ``free``: an attention-free model
    (``attention_free``), whose prefix caching is off by default."""
    batched = knobs.max_num_batched_tokens
    if batched is None:
        batched = DEFAULT_MAX_NUM_BATCHED_TOKENS
        if windows or cross:
            assumptions.append(f"max_num_batched_tokens {batched} (API server on a >=70 GiB non-A100 GPU)")
    if cross:
        assumptions.append(f"encoder-decoder: cross-attention sized for max_num_encoder_input_tokens = "
                           f"max_num_batched_tokens = {batched} encoder tokens per request (CrossAttentionSpec); "
                           "chunked prefill and prefix caching are off (SchedulerConfig), and the "
                           "encoder-decoder cache manager only counts encoder inputs for scheduling")
    batches = 2 if knobs.async_scheduling else 1
    if windows:
        assumptions.append(f"sliding-window admission adds {batches} × {batched} tokens in flight "
                           f"({'async scheduling' if batches == 2 else 'no async scheduling'})")
    caching = knobs.enable_prefix_caching
    if caching is None:
        caching = not free  # vLLM disables prefix caching for attention-free models
    state_blocks = (2 if caching else 1) + int(knobs.num_speculative_tokens)
    if states:
        checkpoint = " + 1 prefill-checkpoint block per layer that exports one" if caching else ""
        mode = "align (prefix caching on)" if caching else "none (prefix caching off)"
        assumptions.append(f"mamba_cache_mode {mode}: {state_blocks} block(s) per request{checkpoint}")
    return RequestPlan(in_flight=batches * int(batched), state_blocks=state_blocks, align_mode=bool(caching),
                       encoder_tokens=int(batched))


def check_encoder_budget(report: EngineInput, plan: RequestPlan, assumptions: list[str]) -> None:
    """``compute_mm_encoder_budget`` (``v1/core/encoder_cache_manager.py``): an encoder-decoder schedules
    its encoder input whole (chunked MM input is off for it), so the model's encoder length (Whisper:
    ``max_source_positions``, ``get_num_audio_tokens``) must fit max_num_batched_tokens; then say what a
    real request holds of the cross-attention pool."""
    encoder = max(p.encoder_tokens for layer in report.layer_specs for p in layer.parts if isinstance(p, CrossAttention))
    if encoder > plan.encoder_tokens:
        raise VllmRefusal(f"Chunked MM input disabled but max_tokens_per_mm_item ({encoder}) is larger than "
                          f"max_num_batched_tokens ({plan.encoder_tokens}). Please increase max_num_batched_tokens.")
    assumptions.append(f"a running request holds only its encoder output's cross-attention blocks ({encoder} "
                       "tokens); vLLM's start-up figures below count the max_num_encoder_input_tokens bound")


def blocks_per_request(groups: list[Group], length: int, plan: RequestPlan, release: RuleSet | None = None) -> int:
    """Blocks one request of ``length`` tokens holds over every group (each group's spec's rule), as the
    release counts them for its concurrency (``RuleSet.concurrency``): per group, or one ceiling over the
    groups' bytes in the first group's pages."""
    if release is not None and release.concurrency == "one-ceil" and len(groups) > 1:
        total = sum(g.blocks_per_request(length, plan) * Fraction(g.block_bytes) for g in groups)
        return math.ceil(total / Fraction(groups[0].block_bytes))
    return sum(g.blocks_per_request(length, plan) for g in groups)


def fit_length(blocks: Callable[[int], int], usable_blocks: int, limit: int) -> int:
    """The longest length up to ``limit`` whose request (``blocks(length)``) fits ``usable_blocks`` (0: none)."""
    if blocks(1) > usable_blocks:
        return 0
    low, high = 1, limit + 1
    while high - low > 1:
        mid = (low + high) // 2
        if blocks(mid) <= usable_blocks:
            low = mid
        else:
            high = mid
    return low


def gib(value: int | Fraction) -> str:
    """vLLM's format_gib: GiB rounded to two decimals, as Python prints the float."""
    return f"{round(float(value) / (1 << 30), 2)}"


def check_mamba_seqs(result: dict, num_blocks: int, release: RuleSet, assumptions: list[str]) -> None:
    """Full CUDA graphs need one Mamba cache block per decode sequence (``CompilationConfig``, issue 34094):
    from 0.20 vLLM refuses to start when ``max_num_seqs`` exceeds the blocks; before, it capped the
    capture sizes. ``result["mamba_max_num_seqs"]`` holds the sequences to check (None: no Mamba layer,
    or no full graphs)."""
    seqs = result.get("mamba_max_num_seqs")
    if seqs is None or seqs <= num_blocks:
        return
    if release.mamba_seqs == "cap":
        assumptions.append(f"max_num_seqs {seqs} > {num_blocks} Mamba cache blocks: vLLM {release.label} caps its "
                           "CUDA-graph capture sizes to the blocks")
        return
    result["assumptions"] = assumptions
    raise VllmRefusal(f"max_num_seqs ({seqs}) exceeds available Mamba cache blocks ({num_blocks}). Each decode "
                      "sequence requires one Mamba cache block, so CUDA graph capture cannot proceed. Please lower "
                      f"max_num_seqs to at most {num_blocks} or increase gpu_memory_utilization.", details=result)


def capacity(result: dict, blocks: Callable[[int], int], grows: bool, budget: int, length: int,
             assumptions: list[str], release: RuleSet) -> None:
    """With a budget: blocks and the two logged numbers, or vLLM's refusal when one request does not fit.

    ``get_kv_cache_configs`` keeps the null block out of the fit check (``budget − one block``), but
    not out of ``num_blocks``, which the concurrency divides.
    """
    per_block = Fraction(result["bytes_per_block"])
    num_blocks = int(budget // per_block)
    result["num_blocks"] = num_blocks
    needed = result["blocks_per_request"] * per_block
    usable = budget - per_block
    if needed > usable:
        estimate = fit_length(blocks, num_blocks - 1, length)
        result["max_model_len_fit"] = estimate
        result["assumptions"] = assumptions
        hint = f"Based on the available memory, the estimated maximum model length is {estimate}." if estimate else ""
        raise VllmRefusal(f"To serve at least one request with the model's max seq len ({length}), ({gib(needed)} "
                          f"GiB KV cache is needed, which is larger than the available KV cache memory "
                          f"({gib(usable)} GiB). {hint}".rstrip(), details=result)
    result["max_model_len_fit"] = fit_length(blocks, num_blocks - 1, 1 << 40) if grows else None
    check_mamba_seqs(result, num_blocks, release, assumptions)
    concurrency = num_blocks / result["blocks_per_request"]  # float, as vLLM computes it
    result["max_concurrency"] = printed(concurrency)
    if release.kv_tokens == "blocks":
        groups = result.get("kv_cache_groups") or [{"block_size": result["block_size"]}]
        result["kv_cache_tokens"] = num_blocks // len(groups) * min(g["block_size"] for g in groups)
        formula = "num_blocks // groups × block_size"
    else:
        result["kv_cache_tokens"] = int(concurrency * length)
        formula = "int(max_concurrency × max_model_len)"
    assumptions.append(f"GPU KV cache size = {formula} (vLLM {release.label}); one null block is kept out of the "
                       "fit check")


LONGER_LENGTH_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"  # config/model.py _get_and_verify_max_len: refused without it


def check_max_model_len(report: EngineInput, length: int, assumptions: list[str]) -> None:
    """``_get_and_verify_max_len``: a --max-model-len above the length vLLM derives from the config is refused,
    unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (then vLLM warns and serves it)."""
    derived = default_max_model_len(report, [])
    if length <= derived:
        return
    message = f"User-specified max_model_len ({length}) is greater than the derived max_model_len ({derived})."
    if os.environ.get(LONGER_LENGTH_ENV, "").strip().lower() not in ("1", "true"):
        raise VllmRefusal(f"{message} To allow overriding this maximum, set the env var {LONGER_LENGTH_ENV}=1.")
    assumptions.append(f"{message} {LONGER_LENGTH_ENV} is set: vLLM serves it (positions past the model's own "
                       "maximum may give nan or wrong outputs)")


def simulate(report: EngineInput, *, budget_bytes: int | None, max_model_len: int | None, knobs: EngineKnobs) -> dict:
    """vLLM's groups, block size and, with a budget, its blocks and logged numbers; ``VllmRefusal`` where
    vLLM would not start (its reason, one line)."""
    reason = refusal(report, knobs)
    if reason:
        raise VllmRefusal(reason)
    release = rules(knobs.engine_version)
    assumptions = [f"GPU compute capability {knobs.compute_capability} (--compute-capability or the --gpu preset; default 9.0, an H200)"]
    if knobs.speculative_draft_layers:
        assumptions.append("--speculative-draft-layers is not modelled in vLLM mode (its draft layers join the KV "
                           "cache groups): figures are for the target model alone")
    if max_model_len is not None:
        length = context_length(report, max_model_len, assumptions)  # checks it is positive
        check_max_model_len(report, length, assumptions)
    else:
        length = default_max_model_len(report, assumptions)
    kv = kv_dtype(report, assumptions)
    assumptions.append(f"KV dtype {kv} (vLLM 'auto' = model dtype or the checkpoint's declared fp8)")
    pooled = pooling_class(report)
    if pooled is not None:
        return pooling(pooled.architecture, pooled.pooling_kv_cache, budget_bytes, length, assumptions,
                       release.default_block_size)
    if any(isinstance(p, CompressedKV) for layer in report.layer_specs for p in layer.parts):
        return deepseek_v4(report, budget_bytes, length, knobs, assumptions)
    backend_class = transformers_backend(report)
    if backend_class:
        specs = transformers_specs(report, kv, knobs, backend_class, assumptions)
    else:
        specs = collect_specs(report, kv, knobs, assumptions)
    if not specs:
        raise UnsupportedModelError("no layer keeps a KV cache or state that vLLM would allocate")
    free = attention_free(report, specs)
    cross = any(isinstance(s, CrossAttentionSpec) for s in specs)
    plan = request_plan(knobs, assumptions, windows=any(s.local for s in specs),
                        states=any(isinstance(s, MambaSpec) for s in specs), free=free, cross=cross)
    if cross:
        check_encoder_budget(report, plan, assumptions)
    backend = choose_backend(report, specs, kv, knobs)
    block = block_size(specs, backend, knobs, plan.align_mode, length, assumptions, free, release.default_block_size)
    groups = make_groups(specs, block, assumptions)
    bytes_per_block = max(g.block_bytes for g in groups)
    growing = [g for g in groups if g.spec.grows]
    result: dict[str, Any] = {
        "bytes_per_token": number(sum((bytes_per_block / g.block_size for g in growing), Fraction(0))),
        "full_attention_bytes_per_token": number(
            sum((bytes_per_block / g.block_size for g in growing if isinstance(g.spec, FullAttentionSpec)),
                Fraction(0))),
        "block_size": block,
        "bytes_per_block": number(bytes_per_block),
        "kv_cache_groups": [
            {"kind": g.spec.kind, "window": g.spec.window, "layers": g.layers, "padding": g.padding,
             "block_size": g.block_size, "block_bytes": number(g.block_bytes)}
            for g in groups
        ],
        "max_model_len": length,
        "attention_backend": backend.name if backend else None,
        "mamba_max_num_seqs": (knobs.max_num_seqs or DEFAULT_MAX_NUM_SEQS)
        if any(isinstance(s, MambaSpec) for s in specs) and not knobs.enforce_eager else None,
    }
    return finish(result, lambda n: blocks_per_request(groups, n, plan, release),
                  any(isinstance(g.spec, FullAttentionSpec) for g in groups),
                  budget_bytes, length, assumptions, release)


def pooling(arch: str, cache: str | None, budget_bytes: int | None, length: int, assumptions: list[str],
            block: int = DEFAULT_BLOCK) -> dict:
    """A pooling-only class (``OtherArchFacts.pooling_kv_cache``): with encoder-only attention vLLM builds no
    KV-cache spec at all and starts with no groups (``get_kv_cache_configs`` then keeps one block; no "GPU
    KV cache size" is logged, so no token count or concurrency); a class with causal layers is not replayed."""
    if cache != "none":
        raise UnsupportedModelError(f"vLLM serves {arch} only as a pooling model, with the KV cache of the "
                                    "causal layers it builds: not replayed by hfkv's vLLM mode")
    assumptions.append(f"vLLM serves {arch} as a pooling model with encoder-only attention (EncoderOnlyAttention "
                       "keeps no KV cache, and no layer keeps state): no KV cache groups; requests are bounded by "
                       "max_num_seqs and max_num_batched_tokens, not by KV memory")
    result: dict[str, Any] = {"bytes_per_token": 0, "full_attention_bytes_per_token": 0, "block_size": block,
                              "bytes_per_block": 0, "kv_cache_groups": [], "max_model_len": length,
                              "attention_backend": None, "blocks_per_request": 0, "request_bytes": 0}
    if budget_bytes is not None:
        result.update(num_blocks=1, max_model_len_fit=None, max_concurrency=None, kv_cache_tokens=None)
    result["assumptions"] = assumptions
    return result


def finish(result: dict, blocks: Callable[[int], int], grows: bool, budget_bytes: int | None, length: int,
           assumptions: list[str], release: RuleSet | None = None) -> dict:
    """The per-request figures, then (with a budget) the pool's, or vLLM's refusal."""
    needed = blocks(length)
    result.update(blocks_per_request=needed, request_bytes=number(needed * Fraction(result["bytes_per_block"])))
    if budget_bytes is not None:
        capacity(result, blocks, grows, budget_bytes, length, assumptions, release or rules(None))
    result["assumptions"] = assumptions
    return result


def deepseek_v4(report: EngineInput, budget_bytes: int | None, length: int, knobs: EngineKnobs, assumptions: list[str]) -> dict:
    """DeepSeek V4 (fp8 KV; bf16 is refused earlier): vLLM's packed per-layer pages (``dsv4``)."""
    figures, groups = vllm_dsv4.plan(report)
    plan = request_plan(knobs, assumptions, windows=True, states=False)  # sliding latents and rings, no Mamba
    assumptions.append("DeepSeek V4: FLASHMLA_SPARSE_DSV4 fp8_ds_mla pages (584 B states, 576 B alignment), "
                       f"{len(groups)} packed groups (_get_packed_kv_cache_groups)")
    result = {**figures, "bytes_per_token": number(figures["bytes_per_token"]),
              "full_attention_bytes_per_token": number(figures["full_attention_bytes_per_token"]),
              "max_model_len": length, "attention_backend": "FLASHMLA_SPARSE_DSV4"}
    return finish(result, lambda n: vllm_dsv4.blocks_per_request(groups, n, plan), True, budget_bytes, length,
                  assumptions, rules(knobs.engine_version))
