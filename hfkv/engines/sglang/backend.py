"""SGLang 0.5.23's attention backend per GPU generation, and what it fixes: page size and KV layout.

The backend is chosen in ``arg_groups`` (``model_override_base.get_default_attn_backend``, the model
overrides, ``overrides._mla_backend_page_constraints``); hfkv replays the outcome:

- SM90 (H200, the default; every stored H200 oracle row): fa3, page 1; DSA (FlashMLA sparse) page
  ``64·index_kpool`` with the packed 656 B fp8 latent; MiniMax-M3 page 128.
- SM100 (B200; the stored B200 oracle rows): MHA models trtllm_mha, page 64 (fa4, page 128, when K
  and V rows differ in width); MLA models that SGLang's DeepSeek / Kimi overrides send to trtllm_mla
  page 64, other MLA flashinfer page 1; the Qwen3-Next / Qwen3.5 family triton, page 1; DSA page
  ``64·index_kpool`` with the raw 576 B fp8 latent (trtllm kernels) and ``auto`` = fp8_e4m3 unless the
  config has a learnable sink (``overrides._dsa_kv_cache_dtype_default``); MiniMax-M3 page 128.
- An architecture ``get_default_attn_backend`` answers for itself (``ArchFacts.attention_backend``:
  Whisper's flashinfer, page 1) gets it on every generation.
- Other generations: the SM90 choices, with a warning that SGLang's backend choice there is not
  modelled.

``--kv-cache-dtype`` as typed matters twice (DSA ``auto`` on SM100, DeepSeek V4 with bf16), but the
report only keeps the resolved dtype; ``requested_kv_dtype`` reads the typed one when the report
carries it, else hfkv assumes ``auto`` and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hfkv.model.specs import ChunkedLocal, FullAttention, IndexerKeys, LayerSpec, MLALatent, SlidingWindow
from hfkv.engines.contract import EngineInput, EngineKnobs
from hfkv.engines.sglang import registry
from hfkv.engines.sglang.facts import ArchFacts


DSA_PAGE_TOKENS = 64  # arg_groups/model_overrides/deepseek_v2.py: page = 64·index_kpool
TRTLLM_PAGE = 64  # _mla_backend_page_constraints: trtllm_mha / trtllm_mla raise page 1 to 64
FA4_PAGE = 128  # FA4 backend: page 128 for non-MLA models
# ArchFacts.sm100_attention_backend values this module acts on (the rest only names the backend)
TRTLLM_MLA = "trtllm_mla"
TRITON = "triton"
SM90_BACKEND = "fa3"

SIXTEEN_BIT = ("bf16", "fp16")


@dataclass(frozen=True)
class Plan:
    """What the backend choice fixes: KV dtype, page size, DSA latent layout, and why."""

    kv: str
    page: int
    backend: str
    dsa_packed_fp8: bool  # FlashMLA-sparse 656 B fp8 latent; False: raw kv_lora_rank + rope bytes


def requested_kv_dtype(report: EngineInput) -> str | None:
    """``--kv-cache-dtype`` as given (``auto`` included), when the report keeps it; else None."""
    return report.requested_kv_cache_dtype


def plan(report: EngineInput, layers: list[LayerSpec], knobs: EngineKnobs, warnings: list[str]) -> Plan:
    """The backend SGLang picks for ``report`` on the knob's GPU generation (module docstring)."""
    sm = knobs.capability_major
    dsa = any(isinstance(p, IndexerKeys) for layer in layers for p in layer.parts)
    mla = any(isinstance(p, MLALatent) for layer in layers for p in layer.parts)
    kv = dsa_kv_dtype(report, sm, warnings) if dsa else report.precision.kv
    known = registry.arch_facts(report)
    if sm not in (9, 10):
        warnings.append(f"SGLang's attention backend on SM{sm}x is not modelled: page size and KV layout "
                        "are those of SM90 (H200)")
    forced = next((f for f in known if f.attention_backend), None)
    if forced is not None and not dsa and not mla:  # get_default_attn_backend's own answer (Whisper: flashinfer)
        return Plan(kv, 1, forced.attention_backend, False)
    pinned = next((f for f in known if f.page_size), None)
    if pinned is not None:  # a model override pins the page on every generation (MiniMax-M3)
        return Plan(kv, pinned.page_size, (pinned.sm100_attention_backend or "trtllm_mha") if sm == 10
                    else SM90_BACKEND, False)
    if dsa:
        kpool = max(p.ratio for layer in layers for p in layer.parts if isinstance(p, IndexerKeys))
        return Plan(kv, DSA_PAGE_TOKENS * kpool, "dsa (trtllm)" if sm == 10 else "dsa (FlashMLA sparse)",
                    sm != 10)
    if sm != 10:
        return Plan(kv, 1, SM90_BACKEND, False)
    return sm100_plan(known, layers, kv, mla, warnings)


def sm100_plan(known: list[ArchFacts], layers: list[LayerSpec], kv: str, mla: bool, warnings: list[str]) -> Plan:
    """Non-DSA models on SM100 (B200): a model override's backend (``sm100_attention_backend``, any of
    the config's architectures), else SGLang's default for the attention kind."""
    overrides = {f.sm100_attention_backend for f in known}
    if mla:
        if TRTLLM_MLA in overrides:
            if kv in SIXTEEN_BIT:
                warnings.append("SGLang's trtllm_mla backend (SM100) accepts --kv-cache-dtype bf16 or auto but "
                                "refuses the spelling 'bfloat16' at start-up")
            return Plan(kv, TRTLLM_PAGE, TRTLLM_MLA, False)
        return Plan(kv, 1, "flashinfer", False)
    if TRITON in overrides:
        return Plan(kv, 1, TRITON, False)
    if any(asymmetric(p) for layer in layers for p in layer.parts):
        return Plan(kv, FA4_PAGE, "fa4", False)
    return Plan(kv, TRTLLM_PAGE, "trtllm_mha", False)


def asymmetric(part: Any) -> bool:
    """K and V rows of different widths, full or windowed (``ModelConfig.has_asymmetric_kv``: trtllm_mha
    needs them equal, so SGLang picks fa4)."""
    return (isinstance(part, (FullAttention, SlidingWindow, ChunkedLocal)) and part.v_head_dim is not None
            and part.v_head_dim != part.head_dim)


def dsa_kv_dtype(report: EngineInput, sm: int, warnings: list[str]) -> str:
    """DSA ``auto``: fp8_e4m3 on SM100 and later (no learnable sink), else bf16; a given dtype stays."""
    kv = report.precision.kv
    if sm < 10 or kv not in SIXTEEN_BIT or (report.config or {}).get("learnable_sink"):
        return kv
    requested = requested_kv_dtype(report)
    if requested is None:
        warnings.append("DSA on SM100: sized with SGLang's auto KV dtype, fp8_e4m3; an explicit --kv-cache-dtype "
                        "bf16 keeps bf16 (the report does not say which was given)")
        return "fp8"
    return "fp8" if requested == "auto" else kv
