"""Whether SGLang 0.5.23 can serve a model at all, before any pool is sized.

``check(report, knobs)`` raises ``UnsupportedModelError`` with SGLang's own reason (one line) when SGLang
would refuse the model at start-up, and returns one-line warnings when it serves the model through a
path hfkv cannot fully check. The rules, read from SGLang's source:

- An architecture with no native ``EntryClass`` goes to the transformers fallback
  (``model_loader/utils.py:resolve_transformers_arch``): refused when transformers' class is not
  backend-compatible (Bloom, Falcon, MPT in transformers), or when transformers has no such class and
  the config's ``auto_map`` has no ``AutoModel`` ("Cannot find model module": falcon-40b's RW,
  replit's MPT, MiniMax-M1, the old ``LLaMAForCausalLM`` spelling). SGLang only takes this path when
  no architecture of the config is native (``get_model_architecture``).
- ``--pp-size`` > 1: two model overrides refuse it while the server arguments resolve (keyed by the
  config's first architecture after SGLang's renames): IQuest Q1 (``model_overrides/iquest_q1.py``) and
  DeepSeek-V4.1 (``deepseek_v4_hook.validate_deepseek_v41_features``). Every other native class must
  take ``pp_proxy_tensors`` in its ``forward`` (``ModelRunner``: ``assert self.support_pp``, "Pipeline
  Parallel is not compatible with this model."); the table's ``supports_pp`` column. The transformers
  fallback classes all take it.
- Nemotron-NAS (DeciLM) with per-block KV-head counts: ``ModelConfig.get_total_num_kv_heads`` raises
  "Variable GQA (VGQA) is not yet supported for nemotron-nas in sglang".
"""

from __future__ import annotations

from typing import Any

from hfkv.errors import UnsupportedModelError
from hfkv.specs import FullAttention

from .archs import sglang_architectures, sglang_pp_support
from .layout import size
from .sglang_fallback import BACKEND_COMPATIBLE, BACKEND_INCOMPATIBLE, COVERED_SUFFIXES, TRANSFORMERS_VERSION

PREFIX = "SGLang 0.5.23 cannot serve this model"
# SGLang's own config classes rename these architectures to a native one before the registry lookup.
ARCHITECTURE_ALIASES = {
    "DeepseekV41ForCausalLM": "DeepseekV4ForCausalLM",  # configs/deepseek_v41.py
    "Olmo3ForCausalLM": "Olmo2ForCausalLM",  # configs/olmo3.py
}
# model_runner.py: assert self.support_pp (the model's forward takes pp_proxy_tensors) when pp_size > 1.
PP_REFUSAL = "Pipeline Parallel is not compatible with this model."
# Model overrides that refuse --pp-size > 1 before the model is built, by the first architecture.
IQUEST_PP = "IQuest Q1 does not support pipeline parallelism."  # model_overrides/iquest_q1.py
PP_OVERRIDES = {"IQuestQ1ForCausalLM": IQUEST_PP, "IQuestQ1MTP": IQUEST_PP}
# deepseek_v4_hook.validate_deepseek_v41_features, for model_type deepseek_v41 only.
DSV41_PP = "DeepSeek-V4.1 does not support pipeline parallelism yet; disable it to serve this model."


def check(report: Any, knobs: dict | None = None) -> list[str]:
    """Warnings (one line each) for a model SGLang serves; UnsupportedModelError for one it refuses.
    ``knobs`` are the engine knobs (``pipeline_parallel_size``; absent means 1)."""
    check_pipeline(report, size((knobs or {}).get("pipeline_parallel_size"), "pipeline_parallel_size"))
    warnings = fallback_warnings(report)
    check_variable_gqa(report)
    return warnings


def native_architectures(report: Any) -> list[str]:
    """The config's architectures as SGLang's config classes rename them (``ARCHITECTURE_ALIASES``)."""
    return [ARCHITECTURE_ALIASES.get(a, a) for a in (report.architectures or [])]


def check_pipeline(report: Any, pp: int) -> None:
    """SGLang's refusals of ``--pp-size`` > 1 for this model (the module docstring)."""
    if pp <= 1:
        return
    archs = native_architectures(report)
    first = archs[0] if archs else None
    model_type = (report.config or {}).get("model_type") or report.model_type
    if first in PP_OVERRIDES:
        raise UnsupportedModelError(f"{PREFIX} at --pp-size {pp}: {PP_OVERRIDES[first]}")
    if first == "DeepseekV4ForCausalLM" and model_type == "deepseek_v41":
        raise UnsupportedModelError(f"{PREFIX} at --pp-size {pp}: {DSV41_PP}")
    support = sglang_pp_support()
    # ModelRegistry.resolve_model_cls: the first registered architecture; none means the transformers
    # fallback, whose classes all take pp_proxy_tensors.
    arch = next((a for a in archs if a in support), None)
    if arch is not None and not support[arch]:
        raise UnsupportedModelError(f"{PREFIX} at --pp-size {pp}: {PP_REFUSAL} ({arch}'s forward takes no "
                                    "pp_proxy_tensors)")


def fallback_warnings(report: Any) -> list[str]:
    """The transformers-fallback verdict for a config whose architectures SGLang has no class for."""
    archs = [a for a in native_architectures(report) if not a.startswith("Transformers")]
    native = sglang_architectures()
    if not archs or any(a in native for a in archs):
        return []
    auto_map = (report.config or {}).get("auto_map") or {}
    warnings = []
    for arch in archs:
        warning = fallback_verdict(arch, auto_map)
        if warning:
            warnings.append(warning)
    return warnings


def fallback_verdict(arch: str, auto_map: dict) -> str | None:
    """A warning for ``arch`` served by the fallback, or UnsupportedModelError when SGLang refuses it."""
    if arch in BACKEND_INCOMPATIBLE:
        raise UnsupportedModelError(
            f"{PREFIX}: {arch} has no SGLang class and its transformers {TRANSFORMERS_VERSION} implementation "
            "is not compatible with SGLang (_supports_attention_backend is False)")
    if arch in BACKEND_COMPATIBLE:
        return (f"SGLang has no native class for {arch}: it serves it through its transformers fallback "
                "(generic sizing; the figures are what that path allocates)")
    if isinstance(auto_map, dict) and "AutoModel" in auto_map:
        return (f"SGLang has no native class for {arch}: it would build the repo's own code (auto_map "
                "AutoModel), which hfkv does not run; the figures assume that code loads")
    if arch.endswith(COVERED_SUFFIXES):
        raise UnsupportedModelError(
            f"{PREFIX}: {arch} has no SGLang class, is not a transformers {TRANSFORMERS_VERSION} class, and "
            "the config's auto_map has no AutoModel (SGLang: 'Cannot find model module')")
    return (f"SGLang has no native class for {arch}; hfkv cannot tell whether SGLang's transformers "
            "fallback serves it")


def check_variable_gqa(report: Any) -> None:
    """Nemotron-NAS takes one KV-head count from its blocks; different counts are refused."""
    if report.model_type != "nemotron-nas":
        return
    heads = {part.kv_heads for layer in report.layer_specs for part in layer.parts
             if isinstance(part, FullAttention)}
    if len(heads) > 1:
        raise UnsupportedModelError(
            f"{PREFIX}: blocks with {sorted(heads)} KV heads; SGLang: 'Variable GQA (VGQA) is not yet "
            "supported for nemotron-nas in sglang'")
