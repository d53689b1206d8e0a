"""``Serving``: a report's serving plan, typed (``report.serving``); its JSON form is the report's
``serving`` object, whose keys ``hfkv.planning.serving`` documents one by one."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class Serving:
    """The whole-GPU answer for one deployment: where, how, the budget term by term, the verdict."""

    gpu: str | None
    """The GPU preset's name; None when only an explicit KV budget was given."""
    gpu_count: int
    """GPUs of the deployment (at least what the layout needs)."""
    tensor_parallel_size: int
    layout: dict[str, Any]
    """TP, DP, PP, DP attention, EP, attention TP, GPUs needed, expert shards, a description."""
    engine: str
    """Whose budget and layout rules: "theory" (hfkv's count in vLLM's budget), "vllm" or "sglang"."""
    request_ranks: int
    """Groups of GPUs that each keep their own requests."""
    weights_bytes: int | None
    """The whole model's weights; None when unknown."""
    weights_source: str | None
    """given, metadata (the Hub's safetensors count), headers (the files'), or estimate (the config)."""
    weights_bytes_per_gpu: int | None
    usable_bytes: int | None
    """What the engine may use per GPU before the weights (vLLM's requested memory, SGLang's static share)."""
    kv_budget_bytes: int | None
    """KV memory per GPU after the weights and every term of the engine's reserve (≤ 0: nothing fits)."""
    memory: dict[str, Any] | None
    """The engine's budget term by term, each with its source and band (``MemoryBudget.to_dict``)."""
    verdict: str | None
    """The one line every output prints: "fits on 8 × H200-141GB: 40 requests at 128K (vLLM, TP 8)"."""
    verdict_detail: dict[str, Any] | None
    """status (fits, does-not-fit, refused, unknown), requests, tokens, the estimates' range, engines."""
    contexts: list[dict[str, Any]] = field(default_factory=list)
    """Per context: bytes per request, B_max per rank and in all, decode-step bounds."""
    estimates: list[str] = field(default_factory=list)
    """Every figure that is an estimate, and why."""
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, plan: dict[str, Any]) -> Serving:
        """The typed view of a plan dict (``report.extra["serving"]``)."""
        values = {}
        for f in fields(cls):
            value = plan.get(f.name)
            if value is None and f.default_factory is not MISSING:
                value = f.default_factory()
            values[f.name] = value
        return cls(**values)

    @property
    def fits(self) -> bool:
        return (self.verdict_detail or {}).get("status") == "fits"

    @property
    def requests(self) -> int | None:
        """Whole requests across the deployment at the verdict's context."""
        return (self.verdict_detail or {}).get("requests")
