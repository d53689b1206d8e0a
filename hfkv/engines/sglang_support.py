"""Whether SGLang 0.5.23 can serve a model at all, before any pool is sized.

``check(report)`` raises ``UnsupportedModelError`` with SGLang's own reason (one line) when SGLang
would refuse the model at start-up, and returns one-line warnings when it serves the model through a
path hfkv cannot fully check. The rules, read from SGLang's source:

- An architecture with no native ``EntryClass`` goes to the transformers fallback
  (``model_loader/utils.py:resolve_transformers_arch``): refused when transformers' class is not
  backend-compatible (Bloom, Falcon, MPT in transformers), or when transformers has no such class and
  the config's ``auto_map`` has no ``AutoModel`` ("Cannot find model module": falcon-40b's RW,
  replit's MPT, MiniMax-M1, the old ``LLaMAForCausalLM`` spelling). SGLang only takes this path when
  no architecture of the config is native (``get_model_architecture``).
- Nemotron-NAS (DeciLM) with per-block KV-head counts: ``ModelConfig.get_total_num_kv_heads`` raises
  "Variable GQA (VGQA) is not yet supported for nemotron-nas in sglang".
"""

from __future__ import annotations

from typing import Any

from hfkv.errors import UnsupportedModelError
from hfkv.specs import FullAttention

from .archs import sglang_architectures
from .sglang_fallback import BACKEND_COMPATIBLE, BACKEND_INCOMPATIBLE, COVERED_SUFFIXES, TRANSFORMERS_VERSION

PREFIX = "SGLang 0.5.23 cannot serve this model"
# SGLang's own config classes rename these architectures to a native one before the registry lookup.
ARCHITECTURE_ALIASES = {
    "DeepseekV41ForCausalLM": "DeepseekV4ForCausalLM",  # configs/deepseek_v41.py
    "Olmo3ForCausalLM": "Olmo2ForCausalLM",  # configs/olmo3.py
}


def check(report: Any) -> list[str]:
    """Warnings (one line each) for a model SGLang serves; UnsupportedModelError for one it refuses."""
    warnings = fallback_warnings(report)
    check_variable_gqa(report)
    return warnings


def fallback_warnings(report: Any) -> list[str]:
    """The transformers-fallback verdict for a config whose architectures SGLang has no class for."""
    archs = [ARCHITECTURE_ALIASES.get(a, a) for a in (report.architectures or []) if not a.startswith("Transformers")]
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
