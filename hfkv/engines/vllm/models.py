"""What vLLM 0.33.0 decides about a model before it sizes any cache: whether it serves it at all, and
its default ``max_model_len``.

``refusal(report, knobs)`` is vLLM's own reason for refusing to start (one line), or None;
``default_max_model_len(report, assumptions)`` replays ``_get_and_verify_max_len``
(``vllm/config/model.py``) and ``derive_max_model_len_and_key``
(``vllm/transformers_utils/model_arch_config_convertor.py``) over the config with transformers' class
defaults filled in (vLLM reads attributes of the transformers config object, defaults included).
"""

from __future__ import annotations

from functools import lru_cache

from hfkv.model import dtypes
from hfkv.model import defaults as tfdefaults
from hfkv.errors import UnsupportedModelError
from hfkv.model.specs import CompressedKV

from hfkv.engines.vllm import transformers as vllm_transformers
from hfkv.engines.vllm.facts import architectures as vllm_architectures
from hfkv.engines.vllm.facts import pp_support as vllm_pp_support
from hfkv.engines.layout import Layout, size
from hfkv.engines.contract import VERSIONS, EngineInput, EngineKnobs


class VllmRefusal(UnsupportedModelError):
    """vLLM would refuse to start; ``details`` holds the figures it computed first (or None)."""

    def __init__(self, reason: str, details: dict | None = None) -> None:
        super().__init__(f"vLLM {VERSIONS['vllm']} would refuse to start: {reason}")
        self.details = details


# vllm/model_executor/models/registry.py: _PREVIOUSLY_SUPPORTED_MODELS (architecture -> last version).
PREVIOUSLY_SUPPORTED = {
    "MotifForCausalLM": "0.10.2", "Phi3SmallForCausalLM": "0.9.2", "Phi4FlashForCausalLM": "0.10.2",
    "Phi4MultimodalForCausalLM": "0.12.0", "JAISLMHeadModel": "0.22.0", "ErnieModel": "0.23.0",
    "ErnieForSequenceClassification": "0.23.0", "ErnieForTokenClassification": "0.23.0",
    "InternLM2VEForCausalLM": "0.23.0", "QWenLMHeadModel": "0.23.0", "QwenVLForConditionalGeneration": "0.23.0",
    "InternLMForCausalLM": "0.23.0", "DonutForConditionalGeneration": "0.10.2",
    "MllamaForConditionalGeneration": "0.10.2", "XverseForCausalLM": "0.23.0", "Dots1ForCausalLM": "0.23.0",
    "BambaForCausalLM": "0.23.0", "MiniMaxForCausalLM": "0.23.0", "MiniMaxText01ForCausalLM": "0.23.0",
    "MiniMaxM1ForCausalLM": "0.23.0", "MiniMaxVL01ForConditionalGeneration": "0.23.0",
    "BaiChuanForCausalLM": "0.23.0", "BaichuanForCausalLM": "0.23.0", "AquilaModel": "0.24.0",
    "AquilaForCausalLM": "0.24.0", "Grok1ModelForCausalLM": "0.24.0", "Grok1ForCausalLM": "0.24.0",
    "TarsierForConditionalGeneration": "0.24.0", "Tarsier2ForConditionalGeneration": "0.23.0",
    "MantisForConditionalGeneration": "0.24.0", "MusicFlamingoForConditionalGeneration": "0.24.0",
    "AyaVisionForConditionalGeneration": "0.24.0", "TeleChatForCausalLM": "0.25.0",
    "PersimmonForCausalLM": "0.25.0", "FuyuForCausalLM": "0.25.0", "Plamo2ForCausalLM": "0.26.0",
    "OuroForCausalLM": "0.26.0", "ArcticForCausalLM": "0.28.0", "ChameleonForConditionalGeneration": "0.28.0",
    "Cheers": "0.28.0", "CheersForConditionalGeneration": "0.28.0", "Fairseq2LlamaForCausalLM": "0.28.0",
    "FireRedLIDForConditionalGeneration": "0.28.0", "GritLM": "0.28.0", "HCXVisionForCausalLM": "0.28.0",
    "MPTForCausalLM": "0.28.0", "MptForCausalLM": "0.28.0", "RWForCausalLM": "0.28.0",
    "StableLMEpochForCausalLM": "0.28.0", "PrithviGeoSpatialMAE": "0.28.0",
}
# registry.py: the names vLLM registers outside its generation tables (embedding, late-interaction, reward,
# token/sequence classification): such a model starts and allocates no KV cache. Read by
# tests/oracles/vllm-transformers-backend-tables.py.
POOLING_ARCHS = frozenset("""
    BertForMaskedLM BertForSequenceClassification BertForTokenClassification BertModel BertSpladeSparseEmbeddingModel
    BgeM3EmbeddingModel CLIPModel ClefFlashForJointSchema ClefOmniForJointSchema ColBERTJinaRobertaModel
    ColBERTLfm2Model ColBERTModernBertModel ColModernVBertForRetrieval ColPaliForRetrieval ColQwen3 ColQwen3_5
    ColUltraVBertForRetrieval D3ForSequenceClassification DeepseekV3BidirectionalModel EmbeddingGemma2Model
    GPT2ForSequenceClassification Gemma2Model Gemma3TextModel GteModel GteNewForSequenceClassification GteNewModel
    HF_ColBERT InternLM2ForRewardModel JambaForSequenceClassification JinaEmbeddingsV5Model JinaForRanking
    JinaVLForRanking Lfm2BidirectionalModel LlamaBidirectionalForSequenceClassification LlamaBidirectionalModel
    LlamaModel LlamaNemotronVLForSequenceClassification LlamaNemotronVLModel MistralModel
    ModernBertForSequenceClassification ModernBertForTokenClassification ModernBertModel ModernVBertModel
    NomicBertModel OpenAIPrivacyFilterForTokenClassification OpsColQwen3Model Qwen2ForProcessRewardModel
    Qwen2ForRewardModel Qwen2Model Qwen3ASRForcedAlignerForTokenClassification Qwen3VLNemotronEmbedModel
    RobertaForMaskedLM RobertaForSequenceClassification RobertaForTokenClassification RobertaModel SiglipModel
    Terratorch VoyageQwen3BidirectionalEmbedModel XLMRobertaForSequenceClassification
    XLMRobertaForTokenClassification XLMRobertaModel
""".split())
# derive_max_model_len_and_key: the smallest of these text-config attributes is the model's length.
MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
NO_LENGTH_DEFAULT = 2048  # _get_and_verify_max_len when no key is found
# RoPE types whose max_position_embeddings is already the scaled length (factor not applied again).
SCALED_ROPE_TYPES = frozenset({"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"})
HEAD_COUNT_KEYS = ("num_attention_heads", "n_head", "n_heads", "num_heads")  # transformers' attribute_map names
CHATGLM_ARCHS = frozenset({"ChatGLMModel", "ChatGLMForConditionalGeneration"})


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
    checks = (_architecture_refusal, _float_kv_refusal, _head_split_refusal, lambda r: pipeline_refusal(r, pp),
              _chatglm_refusal, _deepseek_v4_refusal, _nope_only_mla_refusal, _transformers_backend_refusal)
    for check in checks:
        reason = check(report)
        if reason:
            return reason
    return None


def _architecture_refusal(report: EngineInput) -> str | None:
    """registry.py ``inspect_model_cls`` then ``_raise_for_unsupported``: a registered class, else the
    Transformers backend (``vllm_transformers``), else a dropped architecture, a pooling-only one, or
    none vLLM knows."""
    archs = list(report.architectures or [])
    registered = vllm_architectures()
    if not archs or any(a in registered for a in archs) or transformers_backend(report):
        return None
    for arch in archs:
        if arch in PREVIOUSLY_SUPPORTED:
            return (f"Model architecture {arch} was supported in vLLM until v{PREVIOUSLY_SUPPORTED[arch]}, and is "
                    "not supported anymore")
    if any(a in POOLING_ARCHS for a in archs):
        return (f"vLLM 0.33.0 registers no {'/'.join(archs)} as a generation model (only as a pooling model): no KV "
                "cache groups")
    if (report.config or {}).get("auto_map"):  # the class is the repo's code: loaded only with trust_remote_code
        return (f"Model architectures {archs!r} are the repository's own code (auto_map): vLLM loads it only with "
                "--trust-remote-code, and hfkv never runs repo code")
    return f"Model architectures {archs!r} are not supported for now."


def transformers_backend(report: EngineInput) -> str | None:
    """The Transformers modeling backend class that serves this model in vLLM, or None (the fallback
    needs every architecture absent from vLLM's registry, its pooling tables included)."""
    return vllm_transformers.served(report, registry_names())


@lru_cache(maxsize=1)
def registry_names() -> frozenset[str]:
    """Every architecture vLLM 0.33.0 registers a class of its own for (generation and pooling)."""
    return frozenset(vllm_architectures()) | POOLING_ARCHS


# config/model.py _FLOAT16_NOT_SUPPORTED_MODELS: 'auto' never resolves to float16 for these.
FLOAT16_NOT_SUPPORTED = frozenset({"gemma2", "gemma3", "gemma3_text", "glm4"})
VLLM_FLOAT_NAMES = {"bf16": "bfloat16", "fp16": "float16"}


def _float_kv_refusal(report: EngineInput) -> str | None:
    """``VllmConfig._reject_mismatched_float_kv_cache`` (run before ``verify_with_parallel_config``): an
    explicit float16/bfloat16 ``--kv-cache-dtype`` must be the model's dtype. The model's dtype is
    vLLM's ``auto`` (``_resolve_auto_dtype``): the checkpoint's 16-bit dtype, bfloat16 for a float32 or
    unnamed one, and never float16 for ``FLOAT16_NOT_SUPPORTED`` — hfkv's 16-bit storage dtype
    (``Precision.conv`` while ``--conv-dtype`` is ``auto``) with that last rule applied."""
    typed = report.requested_kv_cache_dtype or "auto"  # None: a report built by hand, nothing typed
    cache = VLLM_FLOAT_NAMES.get(dtypes.canonical(typed))
    if cache is None or (report.requested_conv_dtype or "auto") != "auto":
        return None
    model = VLLM_FLOAT_NAMES.get(report.precision.conv, "bfloat16")
    if model == "float16" and report.model_type in FLOAT16_NOT_SUPPORTED:
        model = "bfloat16"
    if model == cache:
        return None
    return (f'kv_cache_dtype="{cache}" is incompatible with dtype="{model}". Please set `--kv-cache-dtype` '
            f"to `auto` or `{model}`.")


# vllm/models/kimi_k3/nvidia/model.py builds Kimi-Linear's latent layers NoPE-only and asserts the config's
# mla_use_nope, which vLLM's KimiLinearConfig defaults to False: a config that leaves it out does not start.
NOPE_ONLY_MLA_ARCHS = frozenset({"KimiLinearForCausalLM"})


def _nope_only_mla_refusal(report: EngineInput) -> str | None:
    """The model build's ``assert mla_use_nope`` (an AssertionError at start-up)."""
    if not NOPE_ONLY_MLA_ARCHS.intersection(report.architectures or []) or (report.config or {}).get("mla_use_nope"):
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
    support = vllm_pp_support()
    arch = next((a for a in report.architectures or [] if a in support), None)
    if arch is None or support[arch]:
        return None
    return f"{PP_REFUSAL} ({arch} does not; --pipeline-parallel-size {pp})"


def _chatglm_refusal(report: EngineInput) -> str | None:
    """vLLM's ChatGLM model (ChatGLM2/3 layout) reads ``config.original_rope`` with no default."""
    if set(report.architectures or []) & CHATGLM_ARCHS and "original_rope" not in (report.config or {}):
        return ("vLLM's ChatGLM model reads config.original_rope, which this (ChatGLM-6B v1) config lacks: "
                "AttributeError: 'ChatGLMConfig' object has no attribute 'original_rope'")
    return None


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
    if ropes and "gemma3" not in str(report.model_type or ""):
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
