"""What differs between vLLM releases in the start-up arithmetic, as data: ``releases.tsv`` beside this
module, one row per span of releases (``hfkv.engines.versions`` finds the row of a version).

Each column is a field of ``RuleSet``; its docstring names the release file and function the rule
lives in (read from the released wheels and sdists, docs/engine-versions.md). The code asks
``rules(knobs).<field>``, never a version number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hfkv.engines.tables import choice, yes_no
from hfkv.engines.versions import Span, rule_set


def _ratio(cell: str) -> float:
    value = float(cell)
    if not 0 < value <= 1:
        raise ValueError(f"{cell!r} is not in (0, 1]")
    return value


def _vendors(cell: str) -> frozenset[str]:
    if cell == "none":
        return frozenset()
    vendors = frozenset(cell.split(","))
    if not vendors <= {"NVIDIA", "AMD"}:
        raise ValueError(f"{cell!r} names a platform other than NVIDIA, AMD")
    return vendors


@dataclass(frozen=True)
class RuleSet(Span):
    """The rules of one span of vLLM releases (the span's own fields: ``Span``)."""

    default_gpu_memory_utilization: float
    """``CacheConfig.gpu_memory_utilization``'s default (``config/cache.py``): 0.9 until 0.19, 0.92 from
    0.20.0; 0.34.0's extensible KV cache resolves an unset value to 1.0
    (``resolved_gpu_memory_utilization``)."""
    kv_sizing: str
    """How the KV cache is sized: ``requested`` (``gpu_worker.py`` ``determine_available_memory``:
    ``requested − non-KV memory`` measured by the profile run) or ``extensible`` (0.34.0
    ``v1/worker/extensible_kv_cache.py`` ``measure_kv_cache_bytes``: measured after warm-up and graph
    capture, less a margin; on by default on CUDA and ROCm, ``VllmConfig._resolve_extensible_kv_cache``;
    ``--gpu-memory-utilization`` then only lowers the request, it does not switch the rule off)."""
    graph_profiling: frozenset[str]
    """Vendors on which the CUDA-graph estimate is subtracted before the KV cache
    (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``, ``v1/worker/gpu_worker.py``
    ``Worker.determine_available_memory``): none until 0.19.1 (the variable defaulted to 0; graphs are
    captured after the KV cache, inside the 1 − utilization headroom), NVIDIA from 0.20.0 (0.20.x: not
    ROCm; 0.21–0.25: ``is_cuda()``), AMD too from 0.26.0 (``is_cuda_alike()``)."""
    default_block_size: int
    """``CacheConfig.DEFAULT_BLOCK_SIZE``: what a backend that takes any multiple of its kernel size gets
    (16; 64 from 0.34.0, ``platforms/interface.py`` ``update_block_size_for_backend``)."""
    concurrency: str
    """``get_max_concurrency_for_kv_cache_config`` (``v1/core/kv_cache_utils.py``): ``one-ceil`` until
    0.26 (``cdiv(Σ_g bytes_g, page_0)`` blocks per request), ``per-group`` from 0.27
    (``Σ_g cdiv(bytes_g, page_g)``)."""
    kv_tokens: str
    """The "GPU KV cache size: N tokens" figure (``v1/core/kv_cache_utils.py`` ``_report_kv_cache_config``,
    ``get_kv_cache_capacity`` from 0.24): ``blocks`` until 0.20.0 (``num_blocks // groups × block_size``),
    ``concurrency`` from 0.20.1 (``int(max_concurrency × max_model_len)``)."""
    batch_tier_160: bool
    """``EngineArgs.get_batch_defaults`` (``engine/arg_utils.py``) has the ≥160 GiB tier (16,384 tokens /
    1,024 sequences): from 0.28.0."""
    batch_gb10_excluded: bool
    """GB10 (compute capability 12.1, unified memory) is kept out of the ≥70 GiB tier: from 0.33.0."""
    sampler_peak_bytes: int
    """Bytes per full-vocabulary logits element at the sampler warm-up's peak (the profile run's
    ``_dummy_sampler_run``): 14 from 0.17.0 (bf16 logits, an fp32 copy, the masked and softmax copies;
    top-k/top-p by the Triton kernel, ``v1/sample/ops/topk_topp_triton.py``, for 8 rows or more), 28
    before (top-k/top-p sort the logits in PyTorch, ``topk_topp_sampler.py``
    ``apply_top_k_top_p_pytorch``: sorted values and int64 indices besides; measured on two real logs,
    0.9.2 and 0.13.0, tests/planning/engine-log-budgets.tsv)."""
    mamba_seqs: str
    """When ``max_num_seqs`` exceeds the Mamba cache blocks under full CUDA graphs: ``cap`` until 0.19 (the
    capture sizes are capped, with a warning: ``CompilationConfig`` "Cap cudagraph capture sizes to available
    Mamba cache blocks"), ``refuse`` from 0.20.0 (``config/compilation.py``: "max_num_seqs (N) exceeds available
    Mamba cache blocks (M) …")."""
    source: str
    """Where the span's rules were read."""


PARSERS: dict[str, Callable[[str], Any]] = {
    "default_gpu_memory_utilization": _ratio,
    "kv_sizing": choice("requested", "extensible"),
    "graph_profiling": _vendors,
    "default_block_size": int,
    "concurrency": choice("one-ceil", "per-group"),
    "kv_tokens": choice("blocks", "concurrency"),
    "batch_tier_160": yes_no,
    "batch_gb10_excluded": yes_no,
    "sampler_peak_bytes": int,
    "mamba_seqs": choice("cap", "refuse"),
    "source": str,
}


def rules(version: str | None) -> RuleSet:
    """The rule set of vLLM ``version`` (None: the newest modelled release)."""
    return rule_set("vllm", version)
