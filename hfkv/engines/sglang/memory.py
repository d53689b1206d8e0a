"""SGLang 0.5.23's memory budget on one GPU: ``mem_fraction_static`` as its ``ServerArgs`` computes
it, and what the KV pools get from it.

**The default fraction** (``arg_groups/memory_hook.py`` ``handle_gpu_memory_settings``) is arithmetic on
the GPU's nvidia-smi total ``G`` (MiB, what ``get_device_memory_capacity`` reads): a reserve
``R = 512 + 1.5·max(chunk, 2048) + TP·PP/8·1024 + graphs`` MiB (at least 10,240 MiB above 60 GB),
``fraction = round((G − R) / G, 3)``, times a vision-tower factor for multimodal models. The chunk and
the decode-graph batch default by GPU tier; the graph term counts the decode graphs (2 MiB per batch
size, more under DP attention) and the prefill graph (8 MiB per captured shape, 1,536 for MLA models),
which PP, DeepSeek V4, KDA and most multimodal models do without (which ones is the release's:
``traits``, ``RuleSet``). This module reproduces the 1,078 rows SGLang 0.5.23's own ``ServerArgs``
resolved on H100, H200 and B200 (tests/engines/sglang/serverargs rows), and the 150 served rows of
0.5.12's oracle (tests/engines/sglang/test_oracle.py).

**The budget** (``mem_cache/kv_cache_configurator.py`` ``_profile_available_bytes``): SGLang measures
free memory after its communicators exist (``pre``) and again after the weights are loaded
(``available``), and gives the pools ``available − pre·(1 − fraction)``: that is
``pre·fraction − weights − what loading left``. ``pre`` and the load leftovers are measured on the GPU;
hfkv estimates them (the CUDA context and NCCL buffers below the device total; a small load overhead),
calibrated on start-up logs where SGLang printed both (Llama-3.1-8B on H100: 78.81 GiB free of 79.19,
15.09 GiB used by 14.96 GiB of weights). The Mamba state pool, when the model has one, is then carved
out of this budget by the engine mode itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from hfkv.engines.contract import Device, EngineInput, EngineKnobs, MemoryBudget, Term, weights_term
from hfkv.engines.layout import Layout
from hfkv.engines.sglang import registry
from hfkv.engines.sglang.rules import RuleSet, rules
from hfkv.model.specs import CompressedKV, IndexerKeys, LinearAttentionState, MLALatent

MIB = 1 << 20
GIB = 1 << 30
CONTEXT_TP1 = int(0.38 * GIB)  # CUDA context and handles before ``pre``: 79.19 − 78.81 GiB on an H100 (R13)
CONTEXT_PER_TP = int(0.6 * GIB)  # + NCCL, custom all-reduce and symmetric-memory buffers with TP ≥ 2 (estimate)
# On ROCm with TP ≥ 2, RCCL and aiter's all-reduce take more before the weights load: 3.0–7.1 GiB more than the
# NVIDIA figure on three 8 × MI355X logs (0.5.8.post1, 0.5.9; tests/planning/engine-log-budgets-sglang.tsv).
CONTEXT_PER_TP_ROCM = int(5.05 * GIB)
CONTEXT_PER_TP_ROCM_BAND = int(2.05 * GIB)
AITER_CONTEXT = 8192  # ROCm: the fraction × 0.85 when aiter attention serves a context above this
AITER_FACTOR = 0.85
LOAD_OVERHEAD = int(0.13 * GIB)  # what loading leaves besides the weights' bytes: 15.09 − 14.96 GiB (R13)


@dataclass(frozen=True)
class Traits:
    """What SGLang's fraction rule asks of the model: ``mla`` (its ``attention_arch`` is MLA: a larger
    prefill-graph reserve), ``prefill_graph`` (the default breakable prefill graph stays on: not
    DeepSeek V4, not KDA, not a multimodal model outside SGLang's allow-list), ``vision`` (multimodal:
    the ViT's ``(layers, hidden)``, scaling the fraction)."""

    mla: bool = False
    prefill_graph: bool = True
    vision: tuple[int, int] | None = None
    prefill_graph_cap: int | None = None  # 4096 when the model path names Llama 2 (SGLang's own rule)


def tier_defaults(smi_mib: float, tp: int, release: RuleSet | None = None) -> tuple[int, int]:
    """(chunked_prefill_size, decode CUDA-graph max batch) SGLang defaults for a GPU of ``smi_mib``
    (the 20–35 GB tier is the release's: ``RuleSet.tier_20_35``)."""
    if smi_mib < 20 * 1024:
        return 2048, 8
    if smi_mib < 35 * 1024:
        chunk, small_tp, large_tp = (release or rules(None)).tier_20_35
        return chunk, small_tp if tp < 4 else large_tp
    if smi_mib < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if smi_mib < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def prefill_graph_shapes(largest: int) -> int:
    """How many batch sizes the breakable prefill graph captures up to ``largest`` tokens: 4..32 by 4,
    48..256 by 16, 288..512 by 32, 576..1024 by 64, 1280..4096 by 256, then by 512."""
    steps = [(4, 32, 4), (48, 256, 16), (288, 512, 32), (576, 1024, 64), (1280, 4096, 256), (4608, 1 << 30, 512)]
    return sum(len(range(lo, min(hi, largest) + 1, step)) for lo, hi, step in steps if lo <= largest)


def mem_fraction_static(device: Device, layout: Layout, knobs: EngineKnobs, traits: Traits) -> tuple[float, str]:
    """(fraction, how it was reached): the given ``--mem-fraction-static``, else SGLang's default."""
    if knobs.mem_fraction_static is not None:
        return float(knobs.mem_fraction_static), "given"
    release = rules(knobs.engine_version)
    smi = device.smi_bytes / MIB
    if release.fraction_rule == "tp-table":
        return tp_table_fraction(release, layout, smi)
    if release.fraction_rule == "tiered":
        return tiered_fraction(release, layout, knobs, smi)
    default_chunk, default_bs = tier_defaults(smi, layout.tp, release)
    chunk = knobs.chunked_prefill_size or default_chunk
    decode_bs = knobs.cuda_graph_max_bs or default_bs
    if release.decode_graph_capped and knobs.cuda_graph_max_bs is None and knobs.max_running_requests is not None:
        decode_bs = min(decode_bs, int(knobs.max_running_requests))
    attn_dp = layout.dp if layout.dp_attention else 1
    graphs = 0.0
    if not knobs.disable_cuda_graph:
        graphs += 2 * decode_bs
        if layout.dp_attention:
            graphs += 3 * decode_bs * attn_dp + (1.5 * decode_bs * attn_dp if decode_bs > 300 else 0)
        if release.prefill_graph and traits.prefill_graph and layout.pp == 1 and device.vendor != "AMD":
            largest = min(chunk, traits.prefill_graph_cap or chunk)
            graphs += 1536 if traits.mla else 8 * prefill_graph_shapes(largest)
    reserve = 512 + 1.5 * max(chunk, 2048) + layout.tp * layout.pp / 8 * 1024 + graphs
    if smi > 60 * 1024:
        reserve = max(reserve, 10240)
    speculative = release.speculative_reserve_mib if knobs.speculative_draft_layers else 0
    reserve += speculative  # after the floor, as _handle_gpu_memory_settings adds it
    fraction = round((smi - reserve) / smi, 3)
    how = f"SGLang {release.label}'s rule: (G {smi:,.0f} MiB − reserve {reserve:,.0f} MiB) / G"
    if speculative:
        how += f" (the reserve includes {speculative:,} MiB for EAGLE drafting)"
    if traits.vision:
        layers, hidden = traits.vision
        scale = min(max(1 - 0.1 * (layers * hidden**2 / (24 * 1024**2) - 1), 0.8), 1.05)
        fraction *= 0.95 * scale
        how += f", × 0.95 × {scale:.3f} for the vision tower"
    return fraction, how


def tp_table_fraction(release: RuleSet, layout: Layout, smi: float) -> tuple[float, str]:
    """The ``tp-table`` default (``RuleSet.fraction_rule``): a fraction by TP × PP size on a GPU of at most
    81,920 MiB (0.88 above), raised above 96 GiB toward what 18 GiB of reserve leaves."""
    size = layout.tp * layout.pp
    fraction = next(value for least, value in release.tp_fractions if size >= least) if smi <= 81920 else 0.88
    how = f"SGLang {release.label}'s default for TP × PP {size}"
    if smi > 96 * 1024:
        fraction = min(fraction + 48 * 1024 * (1 - fraction) / smi, (smi - 18 * 1024) / smi)
        how += f", raised for a {smi:,.0f} MiB GPU"
    return fraction, how


def tiered_fraction(release: RuleSet, layout: Layout, knobs: EngineKnobs, smi: float) -> tuple[float, str]:
    """The ``tiered`` default (``RuleSet.fraction_rule``): ``round((G − R)/G, 3)`` with R by GPU tier."""
    size = layout.tp * layout.pp
    if smi < 35 * 1024:
        reserve = (2.8 + size / 10) * 1024
    elif smi < 90 * 1024:
        reserve = (9.5 + size / 2) * 1024
    elif smi < 160 * 1024:
        reserve = (12 + size / 2) * 1024
    else:
        reserve = 32 * 1024
    reserve += (release.speculative_reserve_mib if knobs.speculative_draft_layers else 0)
    reserve += 4 * 1024 if layout.dp_attention else 0
    return round((smi - reserve) / smi, 3), f"SGLang {release.label}'s rule: (G {smi:,.0f} MiB − reserve {reserve:,.0f} MiB) / G"


TEXT_SUB_CONFIGS = ("thinker_config", "llm_config", "language_config", "text_config")  # get_hf_text_config's keys


def is_multimodal(model: EngineInput) -> bool:
    """``ModelConfig.is_multimodal`` with SGLang's defaults (``facts.ArchFacts.multimodal``):
    ``enable_multimodal``, off when the first architecture is served text-only by default
    (``text_only``; ``needs_vision_and_audio`` without both towers), and not language-model-only (the
    config's ``language_model_only``), and any architecture in ``multimodal_model_archs``, or a text
    sub-config (``has_multimodal_subconfig``: one of ``TEXT_SUB_CONFIGS``, unless the first architecture
    is a ``Llava*ForCausalLM``), or, for a model type whose config class folds its towers into the root
    (``flat_multimodal``), that key above 0 (``has_dsv41_vision``). The config is read as written: a
    key SGLang's config class would add or drop (beyond ``flat_multimodal``) is not seen."""
    root = model.root_config or {}
    first = registry.first_arch_facts(model)
    if first and first.multimodal.text_only:
        return False
    if first and first.multimodal.needs_vision_and_audio and not ("vision_config" in root and "audio_config" in root):
        return False
    if root.get("language_model_only"):
        return False
    if any(found.multimodal.listed for found in registry.arch_facts(model)):
        return True
    flat = registry.model_type(model).flat_multimodal
    if flat:  # the config class's setdefault: the root's own key first, then the tower's layers, else 0
        tower = root.get("vision_config") or {}
        layers = root[flat] if flat in root else tower.get("num_hidden_layers", 0)
        return isinstance(layers, int) and layers > 0
    names = registry.native_architectures(model)
    llava = bool(names) and names[0].startswith("Llava") and names[0].endswith("ForCausalLM")
    return not llava and any(key in root for key in TEXT_SUB_CONFIGS)


def traits(model: EngineInput, release: RuleSet | None = None) -> Traits:
    """What the fraction rule of ``release`` (None: the newest modelled) asks of ``model``: MLA from its
    specs (SGLang's ``attention_arch``); whether the default prefill graph stays on (``prefill_graph``):
    off for DeepSeek V4 (compressed attention, in every release that has it), for an architecture the
    release turns off by name (``RuleSet.prefill_graph_off_archs``), for a DSA model where the release
    says so (``prefill_graph_dsa_off``), for KDA models from the release that says so
    (``prefill_graph_kda_off``; not for an architecture SGLang exempts, ``facts.ArchFacts.kda_prefill_graph``:
    GLM-5.3 Flash), and, for a model SGLang serves as multimodal (``is_multimodal``), unless the release
    lets it keep the graph (``prefill_graph_multimodal``: ``allow-list``, one of its architectures on
    SGLang's list, ``facts.ArchFacts.multimodal_prefill_graph``); and the vision tower
    (``vision_config``'s ``(num_hidden_layers, hidden_size)``, 24 and 1,024 when absent) that scales the
    fraction, when the config SGLang sees has one."""
    release = release or rules(None)
    parts = [part for layer in model.layer_specs for part in layer.parts]
    mla = any(isinstance(part, MLALatent) for part in parts)
    graph = not any(isinstance(part, CompressedKV) for part in parts)
    graph = graph and not set(release.prefill_graph_off_archs) & set(registry.native_architectures(model))
    dsa = any(isinstance(part, IndexerKeys) for part in parts)
    graph = graph and not (dsa and release.prefill_graph_dsa_off)
    kda = any(isinstance(part, LinearAttentionState) and part.variant == "kda" for part in parts)
    exempt = any(found.kda_prefill_graph for found in registry.arch_facts(model))
    graph = graph and not (kda and release.prefill_graph_kda_off and not exempt)
    vision = None
    if is_multimodal(model):
        allowed = any(found.multimodal_prefill_graph for found in registry.arch_facts(model))
        graph = graph and release.prefill_graph_multimodal == "allow-list" and allowed
        tower = (model.root_config or {}).get("vision_config")
        if isinstance(tower, dict) and not registry.model_type(model).flat_multimodal:
            layers, hidden = tower.get("num_hidden_layers", 24), tower.get("hidden_size", 1024)
            vision = (layers if isinstance(layers, int) else 24, hidden if isinstance(hidden, int) else 1024)
    cap = 4096 if "llama-2" in (model.model or "").lower() else None  # memory_hook: "llama-2" in the model path
    return Traits(mla=mla, prefill_graph=graph, vision=vision, prefill_graph_cap=cap)


def memory_budget(model: EngineInput, device: Device, weights_per_gpu: int | None, weights_source: str | None,
                  knobs: EngineKnobs, layout: Layout) -> MemoryBudget:
    """SGLang's budget for ``model`` (``budget`` with its ``traits``)."""
    return budget(device, weights_per_gpu, weights_source, knobs, layout, traits(model, rules(knobs.engine_version)),
                  model.max_position_embeddings)


def budget(device: Device, weights_per_gpu: int | None, weights_source: str | None, knobs: EngineKnobs,
           layout: Layout, traits: Traits, context: int | None = None) -> MemoryBudget:
    """SGLang's budget on one GPU of ``layout`` (the module docstring): ``pre × fraction`` minus the
    weights and what loading leaves; the Mamba split and the pools are the engine mode's. On ROCm the
    fraction (even a given one) is × 0.85 when aiter attention (the default for non-MLA models) serves a
    ``context`` above 8,192 (``_handle_attention_backend_compatibility``, ``arg_groups/attention_hook.py``)."""
    fraction, how = mem_fraction_static(device, layout, knobs, traits)
    if device.vendor == "AMD" and not traits.mla and context and context > AITER_CONTEXT:
        fraction *= AITER_FACTOR
        how += f", × {AITER_FACTOR} on ROCm (aiter attention, context {context:,} > {AITER_CONTEXT:,})"
    parallel = layout.tp * layout.pp > 1
    rocm = parallel and device.vendor == "AMD"
    overhead = CONTEXT_TP1 + (CONTEXT_PER_TP if parallel else 0) + (CONTEXT_PER_TP_ROCM if rocm else 0)
    pre = device.cuda_total_bytes - overhead
    usable = int(pre * fraction)
    terms = [weights_term(weights_per_gpu, weights_source)]
    terms.append(Term("load leftovers", LOAD_OVERHEAD, "estimate", error_bytes=LOAD_OVERHEAD,
                      note="memory loading keeps besides the weights (0.13 GiB for Llama-3.1-8B on H100)"))
    band = int(0.2 * GIB) + (int(0.4 * GIB) if parallel else 0) + (CONTEXT_PER_TP_ROCM_BAND if rocm else 0)
    notes = (f"mem_fraction_static {fraction:.3f} ({how})",
             f"free memory before loading ≈ {pre / GIB:.2f} GiB: the device's {device.cuda_total_bytes / GIB:.2f} GiB "
             f"less the CUDA context{' and communicators' if overhead > CONTEXT_TP1 else ''} (±{band / GIB:.1f} GiB, "
             f"× {fraction:.3f} = ±{band * fraction / GIB:.2f} GiB in the budget)")
    terms.append(Term("free-memory estimate", 0, "estimate", error_bytes=int(band * fraction),
                      note="SGLang measures free memory after its communicators; hfkv estimates it (measured on 5 "
                           "logs: within 0.21 GiB on NVIDIA GPUs at TP 1–2; 3.0–7.1 GiB less on 8 × MI355X, "
                           "ROCm's communicators, which this band does not cover)"))
    return MemoryBudget("sglang", fraction, "given" if knobs.mem_fraction_static is not None else "SGLang's default",
                        usable, tuple(terms), notes)
