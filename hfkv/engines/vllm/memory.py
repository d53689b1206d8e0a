"""vLLM's memory budget on one GPU: what it keeps before the KV cache, term by term, under the rules of
the release asked for (``rules.RuleSet``: the default utilization, whether the graph estimate is
subtracted, the batch defaults, and 0.34's extensible sizing, ``_extensible``).

vLLM asks for ``requested = ceil(total × gpu_memory_utilization)`` of the total cudaMemGetInfo
reports (``v1/worker/utils.py`` ``request_memory``), then subtracts what its start-up measures
(``v1/worker/gpu_worker.py`` ``determine_available_memory``, ``utils/mem_utils.py``
``memory_profiling``): the weights ("Model loading took"), the persistent torch memory allocated after
its baseline snapshot (the sampler's penalty and grammar buffers, a MoE workspace), non-torch growth
(NCCL buffers that connect lazily, kernel modules), the transient peak of the profile run (a forward
pass of ``max_num_batched_tokens`` tokens, or the sampler warm-up on ``min(max_num_seqs, T)`` rows of
full-vocabulary logits, whichever is larger), and the CUDA-graph estimate it profiles before the KV
cache exists (0 with ``--enforce-eager``). What is left is "Available KV cache memory".

``requested``, the batch defaults, the capture sizes and the sampler buffers are vLLM's arithmetic;
the rest is measured on the GPU at start-up, so hfkv estimates it: the activation term from the
profile run's shapes (checked against 20 measured H100 runs: within 0.16 GiB), non-torch growth and
the graph pool from public start-up logs. Each term carries its band. Models whose profile run also
drives a vision encoder, a speculative drafter or recurrent mixers keep more than modelled (up to
~1.5 GiB in the logs checked): their band says so. docs/deployments.md has the log check.
"""

from __future__ import annotations

import math

from hfkv.engines.contract import Device, EngineInput, EngineKnobs, MemoryBudget, Term, weights_term
from hfkv.engines.layout import Layout, expert_count
from hfkv.engines.vllm.rules import RuleSet, rules

GIB = 1 << 30
MIB = 1 << 20
ACTIVATION_BYTES = 2  # the profile run's activations in the model's 16-bit dtype
NON_TORCH_TP1 = GIB // 4  # kernel modules and lazily connected buffers after the baseline (0.24–0.27 GiB measured)
NON_TORCH_NVSWITCH = {2: int(1.82 * GIB), 4: int(1.90 * GIB)}  # + NCCL NVLS and all-reduce fusion buffers, TP ≥ 2
NON_TORCH_PCIE = int(0.15 * GIB)
GRAPH_BASE = int(0.30 * GIB)  # CUDA-graph pool: a base and ~0.15 MiB per layer and captured graph
GRAPH_PER_LAYER_GRAPH = int(0.15 * MIB)
ALLOCATOR_SLACK = int(0.05 * GIB)  # reserved-but-free segments that survive empty_cache
EXTENSIBLE_MARGIN_FLOOR = GIB  # extensible_kv_cache.py KV_CACHE_MARGIN_FLOOR_BYTES (CUDA)
EXTENSIBLE_MARGIN_FLOOR_ROCM = 3 * GIB  # the same on ROCm
EXTENSIBLE_MARGIN_FRACTION = 0.75  # KV_CACHE_MARGIN_FRACTION of the transient peak
CUDA_CONTEXT = int(0.38 * GIB)  # free before the first snapshot: 79.19 − 78.81 GiB on an H100 (an SGLang log, R13)
CUDA_CONTEXT_BAND = int(0.2 * GIB)
UNMODELLED_BAND = int(1.5 * GIB)  # vision profile, drafter forward, mixer states: not in the estimate
UNSIZED_BAND = 4 * GIB  # the profile run of a config without its hidden or vocabulary size: 14·S·V alone is 4 GiB at
#                         S = 1024 and V = 256K


def batch_defaults(device: Device, release: RuleSet | None = None) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM's API server picks for ``device``
    (``EngineArgs.get_batch_defaults``), from the memory NVML reports: 16384 / 1024 from 160 GiB (from
    0.28: ``RuleSet.batch_tier_160``), 8192 / 1024 from 70 GiB unless an A100 (or, from 0.33, a GB10:
    ``RuleSet.batch_gb10_excluded``), 2048 / 256 below."""
    release = release or rules(None)
    if release.batch_tier_160 and device.smi_bytes >= 160 * GIB:
        return 16384, 1024
    name = device.name.lower()
    if device.smi_bytes >= 70 * GIB and "a100" not in name and not (release.batch_gb10_excluded and "gb10" in name):
        return 8192, 1024
    return 2048, 256


def capture_sizes(max_num_seqs: int, batched: int, decode_tokens: int, major: int) -> tuple[int, int]:
    """(piecewise graphs, full graphs) vLLM captures (``VllmConfig._set_cudagraph_sizes``,
    ``CudaGraphManager._init_candidates``): sizes 1, 2, 4, then every 8 up to 248, every 16 from 256,
    up to ``min(2 × max_num_seqs × decode_tokens, 512)`` (1024 on SM100), capped at the batch; every size
    gets a piecewise graph, those up to ``max_num_seqs × decode_tokens`` a full one."""
    largest = min(2 * max_num_seqs * decode_tokens, 1024 if major == 10 else 512, batched)
    sizes = [s for s in [1, 2, 4, *range(8, 256, 8), *range(256, largest + 1, 16)] if s <= largest]
    if batched <= largest and batched not in sizes:
        sizes.append(batched)
    return len(sizes), sum(1 for s in sizes if s <= max_num_seqs * decode_tokens)


def _int(config: dict, *keys: str) -> int:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


def memory_budget(model: EngineInput, device: Device, weights_per_gpu: int | None, weights_source: str | None,
           knobs: EngineKnobs, layout: Layout) -> MemoryBudget:
    """vLLM's budget on one GPU of ``layout`` (the module docstring); ``weights_per_gpu`` None: the
    weights term is unknown and the budget says so (``kv_bytes`` then counts no weights)."""
    config = model.config or {}
    release = rules(knobs.engine_version)
    util = knobs.gpu_memory_utilization or release.default_gpu_memory_utilization
    requested = math.ceil(device.cuda_total_bytes * util)
    default_batched, default_seqs = batch_defaults(device, release)
    batched = knobs.max_num_batched_tokens or default_batched
    seqs = knobs.max_num_seqs or default_seqs
    decode = 1 + (knobs.num_speculative_tokens or 0)
    rows = min(seqs, batched)
    hidden, vocab = _int(config, "hidden_size", "d_model", "n_embd"), _int(config, "vocab_size", "padded_vocab_size")
    tp = layout.tp
    terms = [weights_term(weights_per_gpu, weights_source)]
    terms.append(Term("sampler buffers", seqs * vocab * 4 + (1 + decode) * seqs * -(-vocab // 32) * 4, "code",
                      note=f"penalty counts and grammar bitmask for {seqs} sequences × {vocab:,} tokens "
                           "(PenaltiesState, StructuredOutputsWorker)"))
    workspace = _moe_workspace(config, batched, hidden, tp)
    if workspace:
        terms.append(Term("MoE workspace", workspace, "estimate", error_bytes=workspace // 2,
                          note=f"the Triton fused-MoE workspace at {batched:,} tokens (other MoE kernels differ)"))
    if hidden and vocab:
        terms.append(_activation(config, rows, batched, hidden, vocab, tp, release.sampler_peak_bytes))
    else:
        terms.append(Term("peak activation", 0, "unknown", error_bytes=UNSIZED_BAND,
                          note="the config names no hidden_size or vocab_size: the profile run cannot be sized "
                               f"(±{UNSIZED_BAND / GIB:.0f} GiB)"))
    terms.append(_non_torch(device, tp))
    extensible = release.kv_sizing == "extensible"
    if not knobs.enforce_eager and (extensible or device.vendor in release.graph_profiling):
        terms.append(_graphs(model, seqs, batched, decode, knobs.capability_major))
    terms.append(Term("allocator slack", ALLOCATOR_SLACK, "estimate", error_bytes=ALLOCATOR_SLACK,
                      note="reserved but free blocks that survive empty_cache"))
    notes = [f"requested = ceil({device.cuda_total_bytes:,} B × {util:g}) = {requested:,} B "
             f"({device.cuda_total_source or 'the total CUDA reports'})",
             f"profile run: {batched:,} batched tokens, {seqs:,} sequences"
             + (" (vLLM's defaults for this GPU)" if not (knobs.max_num_batched_tokens or knobs.max_num_seqs) else "")]
    unmodelled = _unmodelled(model, knobs)
    if unmodelled:
        terms.append(Term("not modelled", 0, "estimate", error_bytes=UNMODELLED_BAND,
                          note=f"{unmodelled}: vLLM keeps up to ~1.5 GiB more than estimated"))
    if not knobs.enforce_eager and not extensible and device.vendor not in release.graph_profiling:
        notes.append(f"CUDA graphs: vLLM {release.label} on {device.vendor} captures them after sizing the KV cache, "
                     f"inside the {1 - util:.2f} it leaves unrequested, so nothing is subtracted for them")
    if extensible:
        terms, note = _extensible(terms, device, requested)
        notes.append(note)
    return MemoryBudget("vllm", util, "given" if knobs.gpu_memory_utilization else f"vLLM {release.label}'s default",
                        requested, tuple(terms), tuple(notes))


def _extensible(terms: list[Term], device: Device, requested: int) -> tuple[list[Term], str]:
    """vLLM 0.34's extensible KV cache (``v1/worker/extensible_kv_cache.py`` ``measure_kv_cache_bytes``),
    measured after warm-up and graph capture: ``min(requested − used, free + committed − margin) −
    max(transient peak, torch growth)``, where ``free + committed`` is the memory free at the worker's
    first snapshot (the device total less the CUDA context) less what was used since, and the margin
    ``max(1 GiB (3 GiB on ROCm), 0.75 × transient peak)``. The terms of the branch that binds are
    returned; ``requested`` binds only when ``--gpu-memory-utilization`` asks for less."""
    peak = next((term for term in terms if term.name == "peak activation"), None)
    floor = EXTENSIBLE_MARGIN_FLOOR_ROCM if device.vendor == "AMD" else EXTENSIBLE_MARGIN_FLOOR
    scaled = int((peak.bytes if peak else 0) * EXTENSIBLE_MARGIN_FRACTION)
    headroom = [Term("CUDA context", CUDA_CONTEXT, "estimate", error_bytes=CUDA_CONTEXT_BAND,
                     note="memory in use before vLLM's first snapshot (CUDA context and handles; 0.38 GiB on an H100)")]
    if scaled > floor:
        headroom.append(Term("KV margin", scaled, "estimate", error_bytes=(peak.error_bytes * 3) // 4,
                             note="0.75 × the transient peak (KV_CACHE_MARGIN_FRACTION), kept free for fragmentation"))
    else:
        headroom.append(Term("KV margin", floor, "code",
                             note=f"max({floor / GIB:.0f} GiB, 0.75 × transient peak): the floor binds "
                                  "(KV_CACHE_MARGIN_FLOOR_BYTES)"))
    if device.cuda_total_bytes - sum(term.bytes for term in headroom) < requested:
        return terms + headroom, ("extensible KV cache (vLLM 0.34): sized after warm-up and graph capture, from "
                                  "the memory free at the first snapshot less a margin (the whole GPU is requested)")
    return terms, ("extensible KV cache (vLLM 0.34): --gpu-memory-utilization's request binds before the margin "
                   "(min(requested − used, free − margin))")


def _activation(config: dict, rows: int, batched: int, hidden: int, vocab: int, tp: int,
                sampler_bytes: int) -> Term:
    """The profile run's transient peak: the sampler warm-up on ``rows`` full-vocabulary rows (beside the
    batch's hidden states), or one layer's forward intermediates at ``batched`` tokens (residual, the
    2I-wide gate/up output, its activation and a temporary: H + 4·I per token, fitted), the larger."""
    sampler = sampler_bytes * rows * vocab + batched * hidden * ACTIVATION_BYTES
    experts = expert_count(config)
    if experts:
        shared = _int(config, "shared_expert_intermediate_size") or (
            _int(config, "n_shared_experts") * _int(config, "moe_intermediate_size"))
        forward = batched * (hidden + 4 * shared // tp) * ACTIVATION_BYTES + batched * experts * 4
    else:
        forward = batched * (hidden + 4 * _int(config, "intermediate_size", "ffn_dim", "n_inner") // tp) * ACTIVATION_BYTES
    which = "sampler warm-up" if sampler >= forward else "forward pass"
    peak = max(sampler, forward)
    return Term("peak activation", peak, "estimate", error_bytes=peak // 10,
                note=f"the profile run's {which} ({rows:,} logits rows × {vocab:,} tokens; {batched:,} tokens "
                     "forward); checked within 0.16 GiB on 20 measured H100 runs")


def _moe_workspace(config: dict, batched: int, hidden: int, tp: int) -> int:
    """The fused-MoE kernel's workspace, kept after the profile run: T·k·(max(Ie/TP, H) + max(2·Ie/TP, H))·b."""
    if not expert_count(config):
        return 0
    top_k = _int(config, "num_experts_per_tok", "experts_per_token", "moe_topk", "num_selected_experts")
    size = _int(config, "moe_intermediate_size", "intermediate_size")
    return batched * top_k * (max(size // tp, hidden) + max(2 * size // tp, hidden)) * ACTIVATION_BYTES


def _non_torch(device: Device, tp: int) -> Term:
    if tp == 1:
        return Term("non-torch memory", NON_TORCH_TP1, "estimate", error_bytes=int(0.15 * GIB),
                    note="kernel modules and buffers created after vLLM's baseline (measured 0.24–0.27 GiB)")
    extra = (NON_TORCH_NVSWITCH[2] if tp == 2 else NON_TORCH_NVSWITCH[4]) if device.interconnect == "nvswitch" \
        else NON_TORCH_PCIE
    return Term("non-torch memory", NON_TORCH_TP1 + extra, "estimate", error_bytes=int(0.3 * GIB),
                note=f"TP {tp} on {device.interconnect}: NCCL and all-reduce buffers that connect on the first "
                     "large collective (measured 2.06–2.21 GiB on 8 × H100 SXM)")


def _graphs(model: EngineInput, seqs: int, batched: int, decode: int, major: int) -> Term:
    piecewise, full = capture_sizes(seqs, batched, decode, major)
    layers = len(model.layer_specs)
    graphs = GRAPH_BASE + GRAPH_PER_LAYER_GRAPH * layers * (piecewise + full)
    return Term("CUDA graphs", graphs, "estimate", error_bytes=graphs // 2,
                note=f"{piecewise} piecewise + {full} full graphs over {layers} layers, profiled by vLLM before "
                     "the KV cache (--enforce-eager: none); fitted to public estimates, ±50%")


def _unmodelled(model: EngineInput, knobs: EngineKnobs) -> str:
    """What the profile run also does that the estimate leaves out, named; "" when nothing."""
    parts = [part for layer in model.layer_specs for part in layer.parts]
    reasons = []
    if any(getattr(part, "recurrent", False) for part in parts):
        reasons.append("recurrent mixers")
    if knobs.num_speculative_tokens:
        reasons.append("the speculative drafter")
    if any(isinstance(value, dict) and value for key, value in (model.root_config or {}).items()
           if key in ("vision_config", "audio_config")):
        reasons.append("the vision/audio encoder's profile")
    return ", ".join(reasons)
