"""Engine modes: what SGLang 0.5.23 or vLLM 0.33.0 would allocate and print for a model.

hfkv's own figures are per request (M = α·S + γ). Serving engines instead size one pool from free
memory, with their own per-token cell, page rounding, window slack and state reservations
(``/work/shared/docs/engines.md`` §2–§3, read from the engines' sources). ``simulate`` replays those
rules over a report's layer specs, so the numbers match the engine's startup log.

    simulate(report, engine="sglang" | "vllm", budget_bytes=..., max_model_len=..., **knobs) -> dict

``report`` needs ``layer_specs``, ``precision``, ``tensor_parallel_size``, ``architectures``,
``model_type`` and ``config`` (the text sub-config, for the raw keys an engine rule reads). The budget
is the engine's KV budget per GPU: SGLang's ``rest`` after weights (before its Mamba carve-out),
vLLM's "Available KV cache memory". Without a budget only the per-token cost is returned.

Knobs (``ENGINE_KNOBS``; ``None`` means the engine's own default, which the result's ``assumptions``
name):

- ``page_size`` (None): SGLang page in tokens; default 1, ``64·index_kpool`` for DSA, 256 for
  DeepSeek V4 (engines.md §3.1.7).
- ``block_size`` (None): vLLM block in tokens; default the attention backend's for the GPU generation
  (16; MLA 16 / 32 / 64, Gemma 4 fp8 on SM90 64, DSA 64; ``vllm_backends``), raised for Mamba hybrids
  so one attention page holds a Mamba state (§3.2.3).
- ``swa_full_tokens_ratio`` (None): SGLang hybrid-SWA pool ratio; default 0.8, 0.1 for DeepSeek V4
  and Inkling (§2.4c).
- ``max_running_requests`` (None): SGLang running-request cap; default
  ``min(clamp(tokens/context·512, 2048, 4096), tokens//2)`` (§3.1.6).
- ``mamba_full_memory_ratio`` (0.9): SGLang's Mamba share r: the state pool takes r/(1+r) of the
  budget first (§3.1.2).
- ``enable_prefix_caching`` (None): SGLang radix cache (on; off makes the Mamba running-request ratio
  1) / vLLM prefix caching (on, off for attention-free models; on = Mamba "align" mode, 2 blocks per
  request plus a prefill-checkpoint block for layers that export one).
- ``max_num_batched_tokens`` (None): vLLM scheduler tokens per step; default 8192 (API server on a
  ≥70 GiB non-A100 GPU; 16384 on ≥160 GiB; 2048 on smaller GPUs and A100s, §3.2.7: ``enrich`` sets
  it from a ``--gpu`` preset).
- ``async_scheduling`` (True): vLLM async scheduling, two batches in flight (the sliding-window
  admission bound adds 2·max_num_batched_tokens).
- ``disable_hybrid_kv_cache_manager`` (False): vLLM; every sliding/chunked layer gets full KV.
- ``chunked_local_hybrid`` (True): vLLM ``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE``, which
  vLLM 0.33.0's ``envs.py`` defaults to 1 (engines.md §2.5 says off; the code wins): chunked-local layers
  (Llama 4) keep their window in the hybrid manager; off = allocated as full attention.
- ``num_speculative_tokens`` (0): vLLM speculative tokens: extra Mamba blocks and conv rows.
- ``mamba_ssm_dtype`` (None): recurrent-state dtype; default SGLang fp32 (or the config's
  ``mamba_ssm_dtype``), vLLM the model dtype (Nemotron-H and KDA fp32, Qwen3.5 the config's).
- ``speculative_draft_layers`` (0): SGLang's EAGLE/MTP draft pool shares the token count, so the cell
  grows by ``cell·draft_layers/target_layers`` (DSA: latent and indexer each by their own layer
  count; DeepSeek V4: ``×(L+d)/L``) (§3.1.4). For a built-in MTP/NextN head it is the config's
  ``num_nextn_predict_layers``; for a separate EAGLE draft model, that model's layer count.
  vLLM mode does not model draft layers (it says so).
- ``compute_capability`` (None = "9.0", an H200-class SM90): the GPU generation, ``MAJOR.MINOR``
  ("8.0", "9.0", "10.0"); both engines choose attention backends (and so block sizes) by it. The
  resolved knob is always a normalised string; ``enrich`` fills it from a ``--gpu`` preset.
- ``data_parallel_size`` (1), ``enable_dp_attention`` (False), ``enable_expert_parallel`` (False),
  ``pipeline_parallel_size`` (1): the parallel layout (``layout``). vLLM's DP ranks are engines of
  TP GPUs each; SGLang's DP attention runs attention at TP/DP inside the TP group; PP stages each
  size the pool of their own layers and the smallest stage's figures are returned (``stages`` lists
  every stage). The result's ``deployment`` holds the layout and totals across the ranks that keep
  their own requests; a layout the engine refuses raises ``layout.LayoutRefusal``.

Result keys (besides ``name``, ``version``, ``assumptions``):

- SGLang: ``configurator`` (the pool configurator SGLang picks), ``bytes_per_token`` = the cell
  (hybrid SWA: full + ratio·sliding; DeepSeek V4: bytes per full-pool token), ``page_size``,
  ``context_length`` (SGLang's own ``get_context_length``: the first context key of the config
  times its rope factor, not hfkv's ``max_position_embeddings``), ``warnings`` (paths SGLang takes
  that hfkv cannot fully check; also the first assumptions); hybrid SWA adds
  ``full_bytes_per_token``, ``swa_bytes_per_token``, ``swa_full_tokens_ratio``; Mamba-like models
  ``mamba_bytes_per_request`` and ``mamba_running_ratio`` (running requests per state slot).
  With a budget: ``max_total_num_tokens`` (= ``kv_cache_tokens``), ``swa_tokens``,
  ``max_mamba_cache_size`` (None without state layers), ``max_running_requests`` and
  ``max_concurrency`` = tokens / context, capped by the running requests (SGLang logs no such line).
- vLLM: ``bytes_per_token`` = pool bytes per token slot over the groups that grow with the context
  (padding slots included: gpt-oss-120b 2 × 18 × 2048), ``full_attention_bytes_per_token`` (the
  growth past every window), ``block_size``, ``bytes_per_block``, ``kv_cache_groups`` (kind, window,
  layers, padding, block_size, block_bytes), ``max_model_len``, ``blocks_per_request`` and
  ``request_bytes`` (the "KV cache is needed" figure), ``attention_backend``. With a budget:
  ``num_blocks``, ``max_concurrency`` (two decimals, as logged), ``kv_cache_tokens`` ("GPU KV cache
  size") and ``max_model_len_fit`` (the longest length that fits, one null block kept out; None when
  nothing grows). Where vLLM would not start (one request does not fit, a TP that does not divide
  the heads, a dropped architecture, ...) vLLM mode raises ``vllm.VllmRefusal`` (an
  UnsupportedModelError) with vLLM's reason; its ``details`` hold the figures computed first.
  docs/vllm.md lists every replayed rule.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from hfkv.errors import UnsupportedModelError, UsageError

ENGINES = ("sglang", "vllm")

ENGINE_KNOBS: dict[str, tuple[Any, str]] = {
    "page_size": (None, "SGLang page size in tokens (default 1; 64·index_kpool for DSA; 256 for DeepSeek V4)"),
    "block_size": (None, "vLLM block size in tokens (default: the attention backend's for the GPU; raised for "
                         "Mamba hybrids)"),
    "swa_full_tokens_ratio": (None, "SGLang hybrid-SWA pool size relative to the full pool (default 0.8; 0.1 DSV4)"),
    "max_running_requests": (None, "SGLang running-request cap (default: estimated from the pool)"),
    "mamba_full_memory_ratio": (0.9, "SGLang: the Mamba state pool takes r/(1+r) of the budget first"),
    "enable_prefix_caching": (None, "radix/prefix cache (default on; vLLM off for attention-free models)"),
    "max_num_batched_tokens": (None, "vLLM tokens per scheduler step (default 8192: API server, >=70 GiB non-A100; "
                                     "--gpu sets vLLM's default for it)"),
    "async_scheduling": (True, "vLLM async scheduling: two batches in flight"),
    "disable_hybrid_kv_cache_manager": (False, "vLLM: allocate full KV for sliding and chunked layers"),
    "chunked_local_hybrid": (True, "vLLM: chunked-local layers (Llama 4) keep their window in the hybrid manager "
                             "(vLLM's default; --no-chunked-local-hybrid = VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0)"),
    "num_speculative_tokens": (0, "vLLM speculative tokens (extra Mamba blocks and conv rows)"),
    "mamba_ssm_dtype": (None, "recurrent-state dtype (default: the engine's rule)"),
    "speculative_draft_layers": (0, "SGLang EAGLE/MTP draft layers sharing the token count (MTP: the config's "
                                    "num_nextn_predict_layers); each adds one target layer's bytes per token"),
    "compute_capability": (None, "GPU compute capability the engine picks attention backends for, e.g. 8.0, 9.0, "
                                 "10.0 (default 9.0, H200; --gpu sets it from the preset)"),
    "data_parallel_size": (1, "data-parallel ranks, each keeping its own requests (vLLM: one engine of TP GPUs "
                              "per rank; SGLang with --enable-dp-attention: attention ranks inside the TP group)"),
    "enable_dp_attention": (False, "SGLang DP attention: attention at TP/DP, each DP rank keeps the KV of its "
                                   "own requests (true/false)"),
    "enable_expert_parallel": (False, "shard routed experts over the EP group instead of slicing them by TP "
                                      "(true/false)"),
    "pipeline_parallel_size": (1, "pipeline stages, each holding and sizing the KV of its own layers"),
}

DEFAULT_COMPUTE_CAPABILITY = "9.0"

VERSIONS = {"sglang": "0.5.23", "vllm": "0.33.0"}


def resolve_knobs(knobs: dict[str, Any]) -> dict[str, Any]:
    """Every knob with its default filled in; an unknown name is a UsageError."""
    unknown = sorted(set(knobs) - set(ENGINE_KNOBS))
    if unknown:
        raise UsageError(f"unknown engine option(s): {', '.join(unknown)} (known: {', '.join(ENGINE_KNOBS)})")
    resolved = {name: default for name, (default, _) in ENGINE_KNOBS.items()}
    resolved.update({name: value for name, value in knobs.items() if value is not None})
    resolved["compute_capability"] = compute_capability(resolved["compute_capability"])
    return resolved


def compute_capability(value: Any) -> str:
    """``value`` as a ``MAJOR.MINOR`` string ("9" -> "9.0", 10.0 -> "10.0"); None is the default "9.0".

    Anything else (not two small whole numbers) is a UsageError naming the option.
    """
    if value is None:
        return DEFAULT_COMPUTE_CAPABILITY
    text = str(value).strip().lower().removeprefix("sm_").removeprefix("sm")
    match = re.fullmatch(r"([0-9]{1,2})(?:\.([0-9]))?", text)
    if not match:
        raise UsageError(f"--compute-capability must look like 8.0, 9.0 or 10.0, got {value!r}")
    return f"{int(match.group(1))}.{int(match.group(2) or 0)}"


def capability_major(knobs: dict[str, Any]) -> int:
    """The major SM version of the resolved ``compute_capability`` knob (9 for "9.0")."""
    return int(knobs["compute_capability"].split(".")[0])


def number(value: Fraction | int | float) -> int | float:
    """An exact figure for JSON: int when integral, else float."""
    value = Fraction(value)
    return int(value) if value.denominator == 1 else float(value)


def printed(value: float) -> float:
    """A ratio as the engines log it, with two decimals ("1.85x")."""
    return float(f"{value:.2f}")


def context_length(report: Any, max_model_len: int | None, assumptions: list[str]) -> int | None:
    """The engine's max model length: the given one, else the model's max_position_embeddings."""
    if max_model_len is not None:
        if max_model_len < 1:
            raise UsageError(f"--max-model-len must be positive, got {max_model_len}")
        return max_model_len
    fallback = getattr(report, "max_position_embeddings", None)
    if fallback:
        assumptions.append(f"max model length = max_position_embeddings = {fallback}")
    return fallback


def simulate(
    report: Any, *, engine: str, budget_bytes: int | None = None, max_model_len: int | None = None, **knobs: Any
) -> dict:
    """What ``engine`` would allocate for ``report``'s model; the JSON for ``report.extra["engine"]``.

    Always: ``name``, ``version``, ``bytes_per_token`` (the engine's per-token cost per GPU) and
    ``assumptions``. With a budget: ``kv_cache_tokens`` and ``max_concurrency`` as the engine would
    print them, plus the engine's own pool figures (vLLM ``block_size``, ``num_blocks``; SGLang
    ``max_total_num_tokens``, ``max_mamba_cache_size``). Raises UsageError for an unknown engine or knob.
    """
    name = (engine or "").lower()
    if name not in ENGINES:
        raise UsageError(f"--engine must be one of theory, {', '.join(ENGINES)}; got {engine!r}")
    if budget_bytes is not None and budget_bytes <= 0:
        raise UsageError(f"the KV budget must be positive, got {budget_bytes}")
    resolved = resolve_knobs(knobs)
    if any(part.kind == "cross" for layer in report.layer_specs for part in layer.parts):
        # SGLang reserves encoder + 2·decoder layer slots per token for Whisper, vLLM a cross-attention
        # spec per decoder layer (engines.md §2.12): neither is modelled here.
        raise UnsupportedModelError("engine modes do not model cross-attention pools (encoder-decoder models); "
                                    "the theory figures stand")
    if name == "sglang":
        from hfkv.engines.sglang import simulate as module
    else:
        from hfkv.engines.vllm import simulate as module
    from hfkv.engines import layout as lay

    shape = lay.resolve(resolved, report.tensor_parallel_size, name, len(report.layer_specs), report.config)
    resolved.update(data_parallel_size=shape.dp, pipeline_parallel_size=shape.pp,
                    enable_dp_attention=shape.dp_attention, enable_expert_parallel=shape.expert_parallel)
    if shape.pp == 1 and shape.attention_tp == report.tensor_parallel_size:
        result = module.simulate(report, budget_bytes=budget_bytes, max_model_len=max_model_len, knobs=resolved)
    else:
        result = lay.simulate_ranks(module.simulate, report, shape, budget_bytes, max_model_len,
                                    rank_knobs(resolved, shape, name))
    return {"name": name, "version": VERSIONS[name], **result, "deployment": lay.deployment(result, shape)}


def rank_knobs(knobs: dict[str, Any], shape: Any, engine: str) -> dict[str, Any]:
    """The knobs one DP-attention rank sees: SGLang divides an explicit --max-running-requests by the
    attention DP size (``resolve_max_num_reqs``: per worker)."""
    out = dict(knobs)
    if engine == "sglang" and shape.dp_attention and out.get("max_running_requests") is not None:
        out["max_running_requests"] = max(1, int(out["max_running_requests"]) // shape.dp)
    return out
