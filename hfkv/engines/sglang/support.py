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
- TP the attention classes assert against (table column ``tp_asserts``, read from each class's
  ``__init__``): ``total_num_heads % tp_size == 0`` and, for KV heads, ``kv % tp == 0`` when
  ``kv >= tp`` else ``tp % kv == 0``, at the full TP or the attention TP (tp / dp under DP attention).
  SGLang raises them while building the model. Refused only when every class the table lists for the
  architecture fails (the table may list classes a subclass replaces); an unknown TP or table entry
  makes no claim. Query heads from the text config, KV heads from the layers SGLang sizes.
- A release asked for (``--engine sglang==X``) older than every class of the config's architectures
  (``first_release``, read in the wheels): a warning, as hfkv does not replay that release's fallback.
- Nemotron-NAS (DeciLM) with per-block KV-head counts: ``ModelConfig.get_total_num_kv_heads`` raises
  "Variable GQA (VGQA) is not yet supported for nemotron-nas in sglang".
"""

from __future__ import annotations


from packaging.version import Version

from hfkv.errors import UnsupportedModelError
from hfkv.model.specs import FullAttention

from hfkv.engines import experts, quantization
from hfkv.engines.sglang import registry
from hfkv.engines.sglang.config import raw_mamba_unread
from hfkv.engines.sglang.facts import (
    PP_REFUSAL_BY_MODEL_TYPE,
    QUANTIZATION_TABLE,
    TpAssert,
    model_type_facts,
    registered,
)
from hfkv.engines.layout import Layout, size
from hfkv.engines.sglang.config import sglang_layers
from hfkv.engines.sglang.fallback import BACKEND_COMPATIBLE, BACKEND_INCOMPATIBLE, COVERED_SUFFIXES, TRANSFORMERS_VERSION
from hfkv.engines.contract import EngineInput, EngineKnobs
from hfkv.engines.versions import newest

PREFIX = "SGLang cannot serve this model"
# model_runner.py: assert self.support_pp (the model's forward takes pp_proxy_tensors) when pp_size > 1.
PP_REFUSAL = "Pipeline Parallel is not compatible with this model."


def check(report: EngineInput, knobs: EngineKnobs | None = None) -> list[str]:
    """Warnings (one line each) for a model SGLang serves; UnsupportedModelError for one it refuses.
    ``knobs`` are the engine knobs (``pipeline_parallel_size``; absent means 1)."""
    check_config_class(report)
    check_quantization(report)
    check_pipeline(report, size((knobs or EngineKnobs()).pipeline_parallel_size, "pipeline_parallel_size"))
    warnings = release_registry_warnings(report, knobs or EngineKnobs()) + fallback_warnings(report)
    check_variable_gqa(report)
    check_tp_asserts(report, knobs or EngineKnobs())
    check_tp_experts(report, knobs or EngineKnobs())
    return warnings


def check_config_class(report: EngineInput) -> None:
    """How SGLang's config parser reads the config before anything else (``utils/hf_transformers/config.py``
    ``HfModelConfigParser.parse``): a strict config class refuses a null field (``strict_fields``); a config
    with no ``model_type`` nor ``architectures`` is mamba_ssm's raw format, which SGLang maps itself
    (``config.raw_mamba``) when it has ``d_model`` and ``ssm_cfg``, and transformers' AutoConfig refuses
    otherwise; the raw mapping reads only ``d_model``, ``n_layer`` and ``ssm_cfg.d_state``, so an ``ssm_cfg``
    whose other keys differ from the ``MambaConfig`` it builds cannot load the checkpoint."""
    strict = registry.model_type(report).strict_fields
    config = getattr(report, "root_config", None) or getattr(report, "config", None) or {}
    if strict is not None:
        for field, kind in strict.fields:
            if field in config and config[field] is None:
                raise UnsupportedModelError(
                    f"{PREFIX}: its {strict.config_class} is a strict dataclass: StrictDataclassFieldValidationError: "
                    f"Validation error for field '{field}': TypeError: Field '{field}' expected {kind}, got NoneType "
                    "(value: None)")
    if not config or config.get("model_type") or config.get("architectures") or getattr(report, "model_type", None) \
            or getattr(report, "architectures", None):
        return
    if not registry.raw_mamba(report):
        raise UnsupportedModelError(f"{PREFIX}: the config.json has no `model_type` (transformers' AutoConfig: "
                                    "'Unrecognized model ... Should have a `model_type` key in its config.json')")
    differ = raw_mamba_unread(report)
    if differ:
        raise UnsupportedModelError(
            f"{PREFIX}: it maps mamba_ssm's raw config to a MambaConfig from d_model, n_layer and ssm_cfg.d_state only "
            f"(_try_load_raw_mamba_config), so the model it builds has {differ}, and cannot load this checkpoint")


def check_quantization(report: EngineInput) -> None:
    """``ModelConfig._verify_quantization``: the checkpoint's ``quant_method`` must be one SGLang's CUDA build
    loads (``0.5.23-quantization.tsv``, ``hfkv.engines.quantization``); MLX's layout has none, which SGLang
    refuses as the empty name (its MLX methods are Apple-only)."""
    quant = quantization.declared(getattr(report, "root_config", None) or getattr(report, "config", None) or {},
                                  sub_configs=False)
    if quant is None:
        return
    name = quantization.method(quant)
    if not name and not quantization.mlx_format(quant):
        return
    reason = quantization.unknown_method(name, quantization.table(QUANTIZATION_TABLE))
    if reason:
        mlx = " (MLX's format: no quant_method)" if quantization.mlx_format(quant) else ""
        raise UnsupportedModelError(f"{PREFIX}: {reason}{mlx}")


def check_pipeline(report: EngineInput, pp: int) -> None:
    """SGLang's refusals of ``--pp-size`` > 1 for this model (the module docstring)."""
    if pp <= 1:
        return
    refusal = override_pp_refusal(report)
    if refusal:
        raise UnsupportedModelError(f"{PREFIX} at --pp-size {pp}: {refusal}")
    # No registered architecture means the transformers fallback, whose classes all take pp_proxy_tensors.
    found = registry.arch_facts(report)
    if found and not found[0].supports_pp:
        raise UnsupportedModelError(f"{PREFIX} at --pp-size {pp}: {PP_REFUSAL} ({found[0].architecture}'s forward "
                                    "takes no pp_proxy_tensors)")


def override_pp_refusal(report: EngineInput) -> str | None:
    """The message a model override or hook raises for PP, keyed by the first architecture (``pp_refusal``),
    which may hand over to the model type's check (the top-level config's ``model_type``)."""
    first = registry.first_arch_facts(report)
    refusal = first.pp_refusal if first else None
    if refusal == PP_REFUSAL_BY_MODEL_TYPE:
        return model_type_facts((report.config or {}).get("model_type") or report.model_type).pp_refusal
    return refusal


def release_registry_warnings(report: EngineInput, knobs: EngineKnobs) -> list[str]:
    """A warning when the release asked for (``--engine sglang==X``) predates every class of the config's
    architectures (``ArchFacts.first_release``): that release would take its transformers fallback or
    refuse the model, neither of which hfkv replays for it; the figures are the later class's."""
    release = Version(knobs.engine_version or newest("sglang"))
    found = registry.arch_facts(report)
    if not found or any(Version(f.first_release) <= release for f in found):
        return []
    first = min(found, key=lambda f: Version(f.first_release))
    return [f"SGLang {knobs.engine_version} registers no class for {first.architecture} (first in "
            f"{first.first_release}): it would serve the model through its transformers fallback or refuse it; "
            f"the figures are those of SGLang {first.first_release}'s class"]


def fallback_warnings(report: EngineInput) -> list[str]:
    """The transformers-fallback verdict for a config whose architectures SGLang has no class for."""
    archs = [a for a in registry.native_architectures(report) if not a.startswith("Transformers")]
    if not archs or any(registered(a) for a in archs):
        return []
    auto_map = (report.config or {}).get("auto_map") or {}
    # The fallback's generic sizing (ModelConfig) gives every layer full KV and reserves no state pool.
    keeps_state = any(part.recurrent for layer in report.layer_specs for part in layer.parts)
    warnings = []
    for arch in archs:
        warning = fallback_verdict(arch, auto_map, keeps_state)
        if warning:
            warnings.append(warning)
    return warnings


def fallback_verdict(arch: str, auto_map: dict, keeps_state: bool = False) -> str | None:
    """A warning for ``arch`` served by the fallback, or UnsupportedModelError when SGLang refuses it.
    ``keeps_state``: hfkv's layers hold recurrent state, which the fallback's generic sizing does not."""
    if arch in BACKEND_INCOMPATIBLE:
        raise UnsupportedModelError(
            f"{PREFIX}: {arch} has no SGLang class and its transformers {TRANSFORMERS_VERSION} implementation "
            "is not compatible with SGLang (_supports_attention_backend is False)")
    if arch in BACKEND_COMPATIBLE and keeps_state:
        return (f"SGLang has no native class for {arch}: its transformers fallback sizes every layer as full "
                "attention with no state pool; hfkv's figures keep the recurrent layers as state, not SGLang's")
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


def check_variable_gqa(report: EngineInput) -> None:
    """Nemotron-NAS takes one KV-head count from its blocks (``refuses_variable_gqa``); different counts
    are refused."""
    if not registry.model_type(report).refuses_variable_gqa:
        return
    heads = {part.kv_heads for layer in report.layer_specs for part in layer.parts
             if isinstance(part, FullAttention)}
    if len(heads) > 1:
        raise UnsupportedModelError(
            f"{PREFIX}: blocks with {sorted(heads)} KV heads; SGLang: 'Variable GQA (VGQA) is not yet "
            f"supported for {report.model_type} in sglang'")


HEAD_KEYS = ("num_attention_heads", "n_head", "n_heads", "num_heads")


def check_tp_asserts(report: EngineInput, knobs: EngineKnobs) -> None:
    """Refuse a TP every attention class of the model asserts against (module docstring)."""
    attn_tp = report.tensor_parallel_size  # engine modes hand each DP-attention rank its attention TP
    dp = int(knobs.data_parallel_size or 1) if knobs.enable_dp_attention else 1
    reason = tp_refusal(report, attn_tp * dp, attn_tp)
    if reason:
        raise UnsupportedModelError(reason)


def check_tp_experts(report: EngineInput, knobs: EngineKnobs) -> None:
    """Refuse a TP above the expert count every MoE block of the model checks (``ArchFacts.tp_experts``,
    ``hfkv.engines.experts``): ``tp`` is the whole TP group (DP attention included), ``moe_tp`` SGLang's
    ``moe_tp_size``, TP over the expert-parallel size (1 with ``--enable-expert-parallel``)."""
    found = registry.arch_facts(report)
    if not found:
        return
    dp = int(knobs.data_parallel_size or 1) if knobs.enable_dp_attention else 1
    tp = report.tensor_parallel_size * dp
    reason = experts.refusal(found[0].tp_experts, report.config or {},
                             {"tp": tp, "moe_tp": 1 if knobs.enable_expert_parallel else tp})
    if reason:
        raise UnsupportedModelError(f"{PREFIX} at TP {tp}: {reason}")


def tp_refusal(report: EngineInput, tp: int, attn_tp: int) -> str | None:
    """SGLang's model-build refusal of TP ``tp`` (attention TP ``attn_tp``) for this model, or None."""
    found = registry.arch_facts(report)
    asserts = found[0].tp_asserts if found else None
    if not asserts or tp <= 1:
        return None
    sizes = {"tp": tp, "attn_tp": attn_tp}
    failures = [tp_failure(entry, query_heads(report), kv_heads(report), sizes) for entry in asserts]
    if not all(failures):
        return None
    where = f"{PREFIX} at TP {tp}" + (f" (attention TP {attn_tp})" if attn_tp != tp else "")
    if len(asserts) == 1:
        return f"{where}: its {asserts[0].cls} asserts {failures[0]}"
    # The table lists every class the entry class may build; each one fails, none is singled out.
    names = ", ".join(entry.cls for entry in asserts)
    return (f"{where}: every attention class it may build ({names}) fails its TP assertion, e.g. "
            f"{asserts[0].cls} asserts {failures[0]}")


def tp_failure(entry: TpAssert, heads: list[int], kv: list[int], sizes: dict) -> str | None:
    """The first assertion of ``entry`` that these head counts fail, as SGLang writes it; None if
    they all hold or the TP it divides by is unknown."""
    if entry.tp is None:
        return None
    tp, name = sizes[entry.tp], f"{entry.tp}_size"
    for h in heads if "heads" in entry.kinds else []:
        if h % tp:
            return f"total_num_heads ({h}) % {name} ({tp}) == 0"
    for k in kv if "kv" in entry.kinds else []:
        if k >= tp and k % tp:
            return f"total_num_kv_heads ({k}) % {name} ({tp}) == 0"
        if k < tp and tp % k:
            return f"{name} ({tp}) % total_num_kv_heads ({k}) == 0"
    return None


def query_heads(report: EngineInput) -> list[int]:
    """The text config's attention-head counts (a per-layer list gives each); [] when it names none."""
    config = report.config or {}
    value = next((config[k] for k in HEAD_KEYS if config.get(k) is not None), None)
    values = value if isinstance(value, list) else [value]
    return sorted({v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0})


def kv_heads(report: EngineInput) -> list[int]:
    """The KV-head counts of the attention layers SGLang sizes (its own config reading applied)."""
    layers, _ = sglang_layers(report)
    return sorted({part.kv_heads for layer in layers for part in layer.parts
                   if isinstance(getattr(part, "kv_heads", None), int) and part.kv_heads > 0})


def check_layout(model: EngineInput, layout: Layout) -> None:
    """SGLang's refusals of ``layout`` for this model: a TP its attention classes assert against when
    the model is built, and PP its model class cannot run; a serving plan checked as SGLang asks this
    before it counts requests."""
    reason = tp_refusal(model, layout.tp, layout.attention_tp)
    if reason:
        raise UnsupportedModelError(reason)
    check_pipeline(model, layout.pp)
