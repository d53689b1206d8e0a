"""What vLLM 0.33.0 decides about a model before it sizes any cache: whether it serves it at all, and
its default ``max_model_len``.

``refusal(report, knobs)`` is vLLM's own reason for refusing to start (one line), or None;
``default_max_model_len(report, assumptions)`` replays ``_get_and_verify_max_len``
(``vllm/config/model.py``) and ``derive_max_model_len_and_key``
(``vllm/transformers_utils/model_arch_config_convertor.py``) over the config with transformers' class
defaults filled in (vLLM reads attributes of the transformers config object, defaults included).
"""

from __future__ import annotations

from hfkv.model import dtypes
from hfkv.model import defaults as tfdefaults
from hfkv.errors import UnsupportedModelError
from hfkv.model.specs import CompressedKV

from hfkv.engines import experts, quantization
from hfkv.engines.vllm import transformers as vllm_transformers
from hfkv.engines.vllm import facts as vllm_facts
from hfkv.engines.layout import Layout, size
from hfkv.engines.contract import EngineInput, EngineKnobs


class VllmRefusal(UnsupportedModelError):
    """vLLM would refuse to start; ``details`` holds the figures it computed first (or None)."""

    def __init__(self, reason: str, details: dict | None = None) -> None:
        super().__init__(f"vLLM would refuse to start: {reason}")
        self.details = details


# derive_max_model_len_and_key: the smallest of these text-config attributes is the model's length.
MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
NO_LENGTH_DEFAULT = 2048  # _get_and_verify_max_len when no key is found
# RoPE types whose max_position_embeddings is already the scaled length (factor not applied again).
SCALED_ROPE_TYPES = frozenset({"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"})
# The config's ``num_attention_heads`` as transformers' attribute_map resolves it; encoder-decoder config
# classes (WhisperConfig, BartConfig, ...) map it to ``encoder_attention_heads``.
HEAD_COUNT_KEYS = ("num_attention_heads", "n_head", "n_heads", "num_heads", "encoder_attention_heads")
# _get_and_verify_max_len skips the RoPE factor for every model type containing this (Gemma 3's
# max_position_embeddings is already scaled): vLLM's rule is a substring test, which no table of
# model types can list in full, so it stays a constant here.
PRESCALED_ROPE_MODEL_TYPE_PART = "gemma3"


# ModelConfig.verify_with_parallel_config (vllm/config/model.py) raises this NotImplementedError.
PP_REFUSAL = ("Pipeline parallelism is not supported for this model. Supported models implement the `SupportsPP` "
              "interface.")


def refusal(report: EngineInput, knobs: EngineKnobs | None = None) -> str | None:
    """vLLM 0.33.0's reason to refuse this model / TP / PP / KV dtype, or None when it starts.

    The checks run in vLLM's order: the registry lookup (ModelConfig), then
    ``verify_with_parallel_config`` (heads over TP, then PP), then the model's own code and backend.
    ``knobs`` are the engine knobs (``pipeline_parallel_size``; absent means 1).
    """
    pp = size((knobs or EngineKnobs()).pipeline_parallel_size, "pipeline_parallel_size")
    checks = (_config_class_refusal, _architecture_refusal, _quantization_refusal, _float_kv_refusal, _head_split_refusal, lambda r: pipeline_refusal(r, pp),
              _config_attribute_refusal, _experts_refusal, _deepseek_v4_refusal, _nope_only_mla_refusal,
              _transformers_backend_refusal)
    for check in checks:
        reason = check(report)
        if reason:
            return reason
    return None


def _architecture_refusal(report: EngineInput) -> str | None:
    """registry.py ``inspect_model_cls`` then ``_raise_for_unsupported``: a registered class, else the
    Transformers backend (``transformers``), else a dropped architecture, or none vLLM knows. A
    pooling-only name is served (as a pooling model: ``pooling_class``)."""
    archs = list(report.architectures or [])
    if not archs or vllm_facts.resolved_architecture(archs) or transformers_backend(report):
        return None
    others = [found for found in map(vllm_facts.other_facts, archs) if found is not None]
    dropped = next((found for found in others if found.supported_until), None)
    if dropped:
        return (f"Model architecture {dropped.architecture} was supported in vLLM until v{dropped.supported_until}, "
                "and is not supported anymore")
    if any(found.pooling_only for found in others):
        return None  # served as a pooling model: its cache is startup.pooling's
    if (report.config or {}).get("auto_map"):  # the class is the repo's code: loaded only with trust_remote_code
        return (f"Model architectures {archs!r} are the repository's own code (auto_map): vLLM loads it only with "
                "--trust-remote-code, and hfkv never runs repo code")
    return f"Model architectures {archs!r} are not supported for now."


def pooling_class(report: EngineInput) -> vllm_facts.OtherArchFacts | None:
    """The pooling-only name vLLM serves this config as (``OtherArchFacts.pooling_only``: no generation
    class nor Transformers backend takes any of its architectures), or None."""
    archs = list(report.architectures or [])
    if not archs or vllm_facts.resolved_architecture(archs) or transformers_backend(report):
        return None
    return next((found for found in map(vllm_facts.other_facts, archs) if found is not None and found.pooling_only),
                None)


def _config_class_refusal(report: EngineInput) -> str | None:
    """transformers' ``AutoConfig`` (vLLM's ``get_config``) needs the config's ``model_type``: mamba_ssm's own
    format (``d_model``, ``n_layer``, ``ssm_cfg``, the ``state-spaces/mamba-*`` repositories) has none and no
    ``architectures``. AutoConfig then raises, unless the model's name contains a model type, which it
    builds at that class's default size from none of these keys (``mamba`` in ``state-spaces/mamba-2.8b``:
    a 768-wide, 32-layer Mamba that cannot load the checkpoint). Either way vLLM does not serve it."""
    root = report.root_config or report.config or {}
    if root.get("model_type") or root.get("architectures") or report.model_type or report.architectures or not root:
        return None
    shape = ", ".join(key for key in ("d_model", "n_layer", "ssm_cfg") if key in root)
    how = f" (mamba_ssm's own format: {shape})" if shape else ""
    return (f"Unrecognized model in {report.model or 'the model folder'}. Should have a `model_type` key in its "
            f"config.json{how}; where the model's name contains a model type (mamba) transformers' AutoConfig "
            "builds that config class at its default size instead, which cannot load this checkpoint")


def _quantization_refusal(report: EngineInput) -> str | None:
    """``ModelConfig._verify_quantization``: a ``quant_method`` vLLM's list does not hold (or a deprecated
    one) is refused in vLLM's words; MLX's layout (no ``quant_method``) builds an unquantized model that
    cannot load the checkpoint (``hfkv.engines.quantization``, the table ``0.33.0-quantization.tsv``)."""
    quant = quantization.declared(report.root_config or report.config or {}, sub_configs=True)
    if quant is None:
        return None
    accepted = quantization.table(vllm_facts.QUANTIZATION_TABLE)
    if quantization.mlx_format(quant):
        return (f"the checkpoint is quantised in MLX's format (quantization_config {quantization.describe(quant)}, "
                "no quant_method): _verify_quantization finds no quant_method and builds an unquantized model, "
                "which cannot load the packed weights")
    name = quantization.method(quant)
    if not name:
        return None
    if accepted.get(name) == quantization.DEPRECATED:
        return (f"The quantization method {name} is deprecated and will be removed in future versions of vLLM. To "
                "bypass, set `--allow-deprecated-quantization`.")
    return quantization.unknown_method(name, accepted)


def transformers_backend(report: EngineInput) -> str | None:
    """The Transformers modeling backend class that serves this model in vLLM, or None (the fallback
    needs every architecture absent from vLLM's registry, its pooling tables included)."""
    return vllm_transformers.served(report, registry_names())


def registry_names() -> frozenset[str]:
    """Every architecture vLLM 0.33.0 registers a class of its own for (generation and pooling)."""
    return vllm_facts.registered_names()


VLLM_FLOAT_NAMES = {"bf16": "bfloat16", "fp16": "float16"}


def _float_kv_refusal(report: EngineInput) -> str | None:
    """``VllmConfig._reject_mismatched_float_kv_cache`` (run before ``verify_with_parallel_config``): an
    explicit float16/bfloat16 ``--kv-cache-dtype`` must be the model's dtype. The model's dtype is
    vLLM's ``auto`` (``_resolve_auto_dtype``): the checkpoint's 16-bit dtype, bfloat16 for a float32 or
    unnamed one, and never float16 for a model type that forbids it (``ModelTypeFacts.float16``) — hfkv's 16-bit storage dtype
    (``Precision.conv`` while ``--conv-dtype`` is ``auto``) with that last rule applied."""
    typed = report.requested_kv_cache_dtype or "auto"  # None: a report built by hand, nothing typed
    cache = VLLM_FLOAT_NAMES.get(dtypes.canonical(typed))
    if cache is None or (report.requested_conv_dtype or "auto") != "auto":
        return None
    model = VLLM_FLOAT_NAMES.get(report.precision.conv, "bfloat16")
    if model == "float16" and not vllm_facts.model_type_facts(report.model_type).float16:
        model = "bfloat16"
    if model == cache:
        return None
    return (f'kv_cache_dtype="{cache}" is incompatible with dtype="{model}". Please set `--kv-cache-dtype` '
            f"to `auto` or `{model}`.")


def _nope_only_mla_refusal(report: EngineInput) -> str | None:
    """The model build's ``assert mla_use_nope`` (an AssertionError at start-up) for a class whose MLA
    layers are NoPE-only (``ArchFacts.nope_only_mla``) and a config that leaves the flag out or false."""
    found = vllm_facts.model_facts(report.architectures)
    if found is None or not found.nope_only_mla or (report.config or {}).get("mla_use_nope"):
        return None
    return ("Kimi-K3 MLA (MultiHeadLatentAttention) is NoPE-only (the model's AssertionError: the config does "
            "not set mla_use_nope)")


def _transformers_backend_refusal(report: EngineInput) -> str | None:
    """The backend's own refusals (its model build), for a model it serves."""
    backend_class = transformers_backend(report)
    return vllm_transformers.refusal(report, full_text_config(report), backend_class) if backend_class else None


def _head_split_refusal(report: EngineInput) -> str | None:
    """ModelConfig.verify_with_parallel_config: TP must divide the attention heads."""
    config, tp = report.config or {}, report.tensor_parallel_size
    heads = next((config[k] for k in HEAD_COUNT_KEYS if isinstance(config.get(k), int)), None)
    if heads and tp > 1 and heads % tp:
        return f"Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp})"
    return None


def pipeline_refusal(report: EngineInput, pp: int) -> str | None:
    """registry.is_pp_supported_model: the class vLLM resolves (the config's first registered
    architecture, as ``inspect_model_cls`` walks the list) must implement ``SupportsPP`` for PP > 1."""
    if pp <= 1:
        return None
    found = vllm_facts.model_facts(report.architectures)
    if found is None:
        pooled = pooling_class(report)  # a pooling-only class (OtherArchFacts.pooling_supports_pp)
        if pooled is not None and pooled.pooling_supports_pp is False:
            return f"{PP_REFUSAL} ({pooled.architecture} does not; --pipeline-parallel-size {pp})"
        return None
    if found.supports_pp:
        return None
    return f"{PP_REFUSAL} ({found.architecture} does not; --pipeline-parallel-size {pp})"


def _config_attribute_refusal(report: EngineInput) -> str | None:
    """The model reads an attribute off its config with no default (``ArchFacts.required_config_attr``:
    vLLM's ChatGLM model, ChatGLM2/3 layout, reads ``config.original_rope``); a config without it
    stops vLLM with an AttributeError."""
    found = vllm_facts.model_facts(report.architectures)
    needed = found.required_config_attr if found else None
    if needed is None or needed.attribute in (report.config or {}):
        return None
    return (f"vLLM's {found.vllm_module}.py reads config.{needed.attribute}, which this config lacks: "
            f"AttributeError: '{needed.config_class}' object has no attribute '{needed.attribute}'")


def _experts_refusal(report: EngineInput) -> str | None:
    """The model build's ValueError when the MoE blocks of the class (``ArchFacts.tp_experts``) take fewer
    routed experts than the TP group has ranks (``hfkv.engines.experts``); vLLM's EP does not change the
    TP these blocks compare."""
    found = vllm_facts.model_facts(report.architectures)
    if found is None:
        return None
    return experts.refusal(found.tp_experts, report.config or {}, {"tp": report.tensor_parallel_size})


def _deepseek_v4_refusal(report: EngineInput) -> str | None:
    """DeepSeek V4's fp8_ds_mla layout (FLASHMLA_SPARSE_DSV4) takes fp8 KV only."""
    compressed = any(isinstance(p, CompressedKV) for layer in report.layer_specs for p in layer.parts)
    kv = report.precision.kv
    if compressed and kv != "fp8":
        dtype = {"bf16": "bfloat16", "fp16": "float16"}.get(kv, kv)
        return (f"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got {dtype}. Please set "
                "`--kv-cache-dtype fp8`")
    return None


# -- max_model_len ------------------------------------------------------------------------------


def full_text_config(report: EngineInput) -> dict:
    """The text config as vLLM sees it: the raw keys over transformers' class defaults."""
    raw = dict(report.config or {})
    model_type = raw.get("model_type") or report.model_type
    defaults = tfdefaults.lookup([(model_type, False)], raw) if model_type else None
    return {**(defaults or {}), **{k: v for k, v in raw.items() if v is not None}}


def rope_parameters(config: dict) -> list[dict]:
    """iter_rope_parameters: one dict per layer type when nested, else the one dict."""
    params = config.get("rope_parameters") or config.get("rope_scaling")
    if not isinstance(params, dict) or not params:
        return []
    nested = [p for p in params.values() if isinstance(p, dict)]
    if nested and len(nested) == len(params):
        return [p for p in nested if p]
    return [params]


def default_max_model_len(report: EngineInput, assumptions: list[str]) -> int:
    """vLLM's max_model_len when none is given (no tokenizer_config.json is read here)."""
    config = full_text_config(report)
    found = {k: config[k] for k in MAX_LEN_KEYS if isinstance(config.get(k), (int, float))}
    derived = min(found.values()) if found else None
    if config.get("model_max_length"):
        derived = config["model_max_length"]
    if derived is None:
        assumptions.append(f"max model length {NO_LENGTH_DEFAULT}: the config has none of vLLM's length keys")
        return NO_LENGTH_DEFAULT
    ropes = rope_parameters(config)
    kinds = [p.get("rope_type") or p.get("type") or "default" for p in ropes]
    if "longrope" in kinds and config.get("original_max_position_embeddings"):
        length = int(config["original_max_position_embeddings"])
        assumptions.append(f"max model length {length} = original_max_position_embeddings (vLLM's LongRoPE default)")
        return length
    factor = 1.0
    if ropes and PRESCALED_ROPE_MODEL_TYPE_PART not in str(report.model_type or ""):
        for params, kind in zip(ropes, kinds):
            if kind not in SCALED_ROPE_TYPES:
                factor = params.get("factor", factor) or 1.0
    length = int(derived * factor)
    key = min(found, key=found.get) if found else "model_max_length"
    scaled = f" × RoPE factor {factor:g}" if factor != 1.0 else ""
    assumptions.append(f"max model length {length} = {key}{scaled} (vLLM's derivation; tokenizer_config not read)")
    return length


def check_layout(model: EngineInput, layout: Layout) -> None:
    """vLLM's refusal of ``layout`` for this model (PP on a class without ``SupportsPP``), raised as
    ``VllmRefusal``; a serving plan checked as vLLM asks this before it counts requests."""
    reason = pipeline_refusal(model, layout.pp)
    if reason:
        raise VllmRefusal(reason)
