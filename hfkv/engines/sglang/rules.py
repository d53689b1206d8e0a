"""What differs between SGLang releases in the start-up arithmetic, as data: ``releases.tsv`` beside
this module, one row per span of releases (``hfkv.engines.versions`` finds the row of a version).

Each column is a field of ``RuleSet``; its docstring names the release file and function the rule
lives in (read from the released wheels, docs/engine-versions.md). The code asks
``rules(version).<field>``, never a version number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hfkv.engines.tables import choice, yes_no
from hfkv.engines.versions import Span, rule_set


def _tier(cell: str) -> tuple[int, int, int]:
    chunk, small_tp, large_tp = (int(part) for part in cell.split("/"))
    return chunk, small_tp, large_tp


def _fractions(cell: str) -> tuple[tuple[int, float], ...]:
    """``16:0.79,8:0.81,4:0.85,2:0.87,1:0.88``: (minimum TP × PP, fraction), largest first."""
    pairs = tuple((int(size), float(value)) for size, value in (item.split(":") for item in cell.split(",")))
    if [size for size, _ in pairs] != sorted((size for size, _ in pairs), reverse=True) or pairs[-1][0] != 1:
        raise ValueError(f"{cell!r}: sizes must fall to 1")
    return pairs


def _names(cell: str) -> tuple[str, ...]:
    """``none`` or architecture names separated by commas."""
    if cell == "none":
        return ()
    names = tuple(cell.split(","))
    if not all(name.isidentifier() for name in names):
        raise ValueError(f"{cell!r} is not none or Name,Name,...")
    return names


@dataclass(frozen=True)
class RuleSet(Span):
    """The rules of one span of SGLang releases (the span's own fields: ``Span``)."""

    fraction_rule: str
    """How ``mem_fraction_static`` defaults (``server_args.py`` ``ServerArgs.__post_init__`` until 0.5.2,
    ``_handle_gpu_memory_settings`` from 0.5.3, ``arg_groups/memory_hook.py`` from 0.5.19): ``tp-table``
    (≤ 0.4.7: a fraction by TP × PP size, column ``tp_fractions``, raised on a GPU above 96 GiB by
    ``min(m + 48·1024·(1 − m)/G, (G − 18·1024)/G)``), ``tiered`` (0.4.8–0.5.2: ``round((G − R)/G, 3)``
    with R by GPU tier: (2.8 + p/10)·1024 below 35 GiB, (9.5 + p/2)·1024 below 90, (12 + p/2)·1024 below
    160, else 32·1024 MiB, p = TP × PP, + 4 GiB with DP attention) or ``reserve`` (0.5.3 on:
    ``round((G − R)/G, 3)``, R = 512 + 1.5·max(chunk, 2048) + graphs + TP·PP/8·1024 MiB, at least
    10,240 above 60 GiB)."""
    tp_fractions: tuple[tuple[int, float], ...]
    """The ``tp-table`` fractions by TP × PP size (unused otherwise)."""
    tier_20_35: tuple[int, int, int]
    """Chunked prefill size and decode CUDA-graph max batch (TP < 4, TP ≥ 4) on a 20–35 GiB GPU:
    2048 / 16 / 80 in 0.5.3–0.5.4, 2048 / 24 / 80 in 0.5.5–0.5.19, 4096 / 48 / 160 from 0.5.20."""
    speculative_reserve_mib: int
    """MiB the fraction's reserve adds for EAGLE-style speculative decoding: 2,048 until 0.5.9, 4,096 in
    0.5.10–0.5.13, none from 0.5.14 (the draft KV is sized in the pool)."""
    prefill_graph: bool
    """The breakable (piecewise) prefill graph is on by default and reserved for (8 MiB per captured
    size, 1,536 MiB for MLA models): from 0.5.10 (opt-in before); never on ROCm."""
    mamba_ssm_dtype: str
    """``--mamba-ssm-dtype``'s default: ``float32`` until 0.5.8.post1, ``config`` (the model config's
    ``mamba_ssm_dtype``, else float32: ``configs/mamba_utils.py``) from 0.5.9."""
    decode_graph_capped: bool
    """The default decode-graph batch of the reserve is capped at ``--max-running-requests`` (0.5.23)."""
    prefill_graph_off_archs: tuple[str, ...]
    """Architectures whose prefill (piecewise) graph the release turns off by name, so the fraction's
    reserve has no prefill-graph term for them: ``configs/model_config.py``
    ``piecewise_cuda_graph_disabled_model_archs`` (any of the config's architectures), read by
    ``server_args.py:_handle_piecewise_cuda_graph`` 0.5.10–0.5.13 (rule 1, "Disable Model Arch"), its
    "model-arch blacklist" rule 0.5.14–0.5.18 and ``arg_groups/cuda_graph_hook.py`` 0.5.19–0.5.21; the
    list is still defined but read by nothing from 0.5.22 (``none``; ``none`` before 0.5.10 too, where
    the graph was opt-in). 0.5.12's list: DeepSeek-V3.2, DeepSeek-V4 (and its NextN), Qwen3-Next,
    GLM-5 (``GlmMoeDsaForCausalLM``), Bailing-MoE-V2.5, LLaDA; 0.5.13 drops DeepSeek-V3.2 and GLM-5,
    0.5.15–0.5.16 add ``DeepseekV4ForCausalLMDSpark``, 0.5.20 ``Glm5NextForConditionalGeneration``."""
    prefill_graph_dsa_off: bool
    """The prefill graph is also off for DSA models (``configs/model_config.py`` ``ModelConfig.__init__``:
    ``is_piecewise_cuda_graph_disabled_model = ... or is_deepseek_nsa(hf_text_config)``, a listed
    DeepSeek / GLM / Mistral-Large-3 architecture with ``index_topk``): 0.5.10–0.5.12 (0.5.12
    ``model_config.py:330``); gone in 0.5.13. hfkv takes it as a model with DSA indexer keys."""
    prefill_graph_multimodal: str
    """Which multimodal models keep the prefill graph: ``off`` (none: 0.5.10–0.5.13,
    ``_handle_piecewise_cuda_graph`` rule 8, "Multimodal / VLM models", 0.5.12 ``server_args.py:1336``) or
    ``allow-list`` (from 0.5.14: those on SGLang's multimodal allow-list, the architecture table's
    ``multimodal_prefill_graph`` column, which is 0.5.23's list; 0.5.14's list held MiniMax-M3 only and
    0.5.16's added Qwen3.5 and Kimi-K2.5: the shorter lists of 0.5.14–0.5.22 are not modelled)."""
    prefill_graph_kda_off: bool
    """The prefill graph is off for KDA (Kimi-Linear-style) hybrids, but for the architectures the table
    exempts (``kda_prefill_graph``): ``arg_groups/cuda_graph_hook.py`` rule "KDA hybrid linear attention",
    from 0.5.20 (0.5.20–0.5.21 exempt none, but list GLM-5.3 Flash by name above)."""
    dsa_fp8_sizing: str
    """The per-token cell a DSA model's fp8 pool is *sized* with (the FlashMLA-sparse pool always
    *allocates* 656 B = 512 fp8 + 4 scales + 64 bf16 rope per layer, plus the 132 B indexer): ``latent``
    (until 0.5.16: ``(kv_lora_rank + qk_rope_head_dim) × 1 B`` = 576 B, so the pool takes 80 B per layer
    per token more than the budget it was sized for; 0.5.12 ``model_executor/pool_configurator.py:
    DefaultPoolConfigurator._compute_cell_size:134–162``) or ``packed`` (from 0.5.17: 656 B, the same
    as allocated; 0.5.17 ``_compute_cell_size`` calling ``calculate_mla_kv_cache_dim``)."""
    dsv4_pool: str
    """DeepSeek V4's ``DSV4PoolConfigurator`` (``model_executor/pool_configurator.py``): ``none`` (no such
    pool: DeepSeek V4 arrives in 0.5.12), ``ring`` (0.5.12–0.5.14, ``_get_bytes_per_full_token``: 584 B
    rows (nope + 2·rope + 8) unpadded over every entry of ``compress_ratios``, the MTP layer's included;
    the c4 and c128 compressor rings (8 and 128 rows, 16 and 256 when speculative) charged per SWA token
    over a window-sized page, no fixed bytes; 0.5.12 lines 365–403), ``request`` (0.5.15–0.5.19, as
    0.5.16 reads: the same rows, the c128 state moved out of the
    coefficient into fixed bytes for ``max_running_requests + 1`` request slots,
    ``_get_c128_state_fixed_bytes``) or ``paged`` (0.5.21 on, as hfkv models 0.5.23: rows padded per page,
    c128/c2 state fixed per request slot; ``dsv4.py``). 0.5.20's own (its ring and unified modes) is
    not modelled (``unmodelled``: refused with that reason)."""
    source: str
    """Where the span's rules were read."""


PARSERS: dict[str, Callable[[str], Any]] = {
    "fraction_rule": choice("tp-table", "tiered", "reserve"),
    "tp_fractions": _fractions,
    "tier_20_35": _tier,
    "speculative_reserve_mib": int,
    "prefill_graph": yes_no,
    "mamba_ssm_dtype": choice("float32", "config"),
    "decode_graph_capped": yes_no,
    "prefill_graph_off_archs": _names,
    "prefill_graph_dsa_off": yes_no,
    "prefill_graph_multimodal": choice("off", "allow-list"),
    "prefill_graph_kda_off": yes_no,
    "dsa_fp8_sizing": choice("latent", "packed"),
    "dsv4_pool": choice("none", "ring", "request", "paged", "unmodelled"),
    "source": str,
}


def rules(version: str | None) -> RuleSet:
    """The rule set of SGLang ``version`` (None: the newest modelled release)."""
    return rule_set("sglang", version)
