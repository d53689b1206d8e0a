"""What vLLM 0.33.0 knows per architecture and per model type, as data: three tables beside this module.

``0.33.0.tsv``: one row per key of vLLM 0.33.0's ``_TEXT_GENERATION_MODELS``, ``_MULTIMODAL_MODELS``
and ``_SPECULATIVE_DECODING_MODELS`` (``vllm/model_executor/models/registry.py``), read into one
``ArchFacts`` per architecture (``facts(arch)``): the registry it sits in, its vLLM module, then one
column per fact vLLM keeps about the class (each field's docstring below says where in vLLM's code).
``supports_pp`` stays the last column.

``0.33.0-model-types.tsv``: the rules vLLM keys by ``hf_config.model_type`` rather than by
architecture (``_FLOAT16_NOT_SUPPORTED_MODELS``, ``is_mm_prefix_lm``), one ``ModelTypeFacts`` per
model type they name (``model_type_facts(model_type)``; a model type no rule names gets the defaults).

``0.33.0-other-architectures.tsv``: the names a config may carry that vLLM resolves outside those
three generation registries (``other_facts(arch)``): registered only as pooling models, served by
its Transformers modeling backend (``_TRANSFORMERS_SUPPORTED_MODELS``, or transformers 5.20.2's
fallback classes), or dropped (``_PREVIOUSLY_SUPPORTED_MODELS``).

Every cell holds a known value (``tests/engines/vllm/test_facts.py``); the parsers below refuse
anything else. Rows are sorted (registry, architecture / model type / architecture) so that a new
version's tables diff cleanly against these.

How the tables were made, and how to make them for another vLLM version (docs/vllm.md, "The engine's
tables"): ``python -m hfkv.engines.vllm.tablegen --vllm-src DIR`` reads an unpacked wheel
(``pip download vllm==X --no-deps`` and unzip) without importing it: the registry tables, each
class's bases (``IsAttentionFree``, ``IsHybrid``, ``SupportsPP`` and a ``forward`` taking
``intermediate_tensors``; for 0.33.0 this static reading agrees with the ``supports_pp`` vLLM's own
registry reported in its oracle venv for all 319 rows), ``_PREVIOUSLY_SUPPORTED_MODELS``,
``_TRANSFORMERS_SUPPORTED_MODELS``, ``_FLOAT16_NOT_SUPPORTED_MODELS`` and the mm-prefix model types.
The other columns are carried over by name from the current tables and written ``?`` for a new
name, which the test refuses until someone reads that class in vLLM's source and fills the cell.
The columns that began as hand lists in code (0.33.0) were written once by a script from those
lists, checked equal to the old membership for every registered architecture, then corrected
where vLLM's source says otherwise (git history). Adding an engine version is adding a table and
its oracle rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

from hfkv.engines import experts
from hfkv.engines.experts import ExpertsCheck
from hfkv.engines.tables import choice, parse_rows, yes_no

from hfkv.model import dtypes

VERSION = "0.33.0"
HERE = Path(__file__).resolve().parent
TABLE = HERE / f"{VERSION}.tsv"
MODEL_TYPES_TABLE = HERE / f"{VERSION}-model-types.tsv"
OTHER_TABLE = HERE / f"{VERSION}-other-architectures.tsv"
QUANTIZATION_TABLE = HERE / f"{VERSION}-quantization.tsv"  # hfkv.engines.quantization reads it
NONE = "none"  # the cell of a fact that does not apply (no config hook, no backend, never dropped)


# -- cell parsers: each takes one cell and returns the typed value, or raises ValueError ----------




def _tri(cell: str) -> bool | None:
    """yes / no, or ``no_gdn`` (the fact is about a layer the class does not build)."""
    return None if cell == "no_gdn" else yes_no(cell)


@dataclass(frozen=True)
class SsmDtypeRule:
    """How the architecture's config hook sets ``cache_config.mamba_ssm_cache_dtype`` when the user
    leaves it ``auto`` (``VerifyAndUpdateConfig`` classes in ``MODELS_CONFIG_MAP``,
    ``vllm/model_executor/models/config.py``): from the config key ``config_key`` when the config has
    it, else ``default``. ``auto`` (no hook) leaves the choice to each layer's
    ``MambaStateDtypeCalculator`` (the model dtype; fp32 for KDA)."""

    config_key: str | None = None
    default: str = "auto"

    @classmethod
    def parse(cls, cell: str) -> SsmDtypeRule:
        """``auto`` or ``config:KEY|DEFAULT`` (DEFAULT ``auto`` or a dtype name such as ``fp32``)."""
        if cell == "auto":
            return cls()
        if not cell.startswith("config:") or "|" not in cell:
            raise ValueError(f"{cell!r} is neither auto nor config:KEY|DEFAULT")
        key, default = cell.removeprefix("config:").split("|", 1)
        if not key or (default != "auto" and dtypes.canonical(default) is None):
            raise ValueError(f"{cell!r}: empty key or unknown default dtype")
        return cls(key, default)

    def resolve(self, config: dict) -> str:
        """``auto`` or the dtype the hook sets for this (text) config."""
        if self.config_key is None:
            return "auto"
        given = dtypes.canonical(config.get(self.config_key))
        return given or self.default


@dataclass(frozen=True)
class ConfigAttribute:
    """An attribute a model class reads off its config class with no default (``config.X``), so a
    config without it stops vLLM with ``AttributeError: 'Class' object has no attribute 'X'``."""

    config_class: str
    attribute: str

    @classmethod
    def parse(cls, cell: str) -> ConfigAttribute | None:
        """``none`` or ``ConfigClass.attribute``."""
        if cell == NONE:
            return None
        owner, _, attribute = cell.partition(".")
        if not owner or not attribute:
            raise ValueError(f"{cell!r} is neither none nor ConfigClass.attribute")
        return cls(owner, attribute)


@dataclass(frozen=True)
class ArchFacts:
    """What vLLM 0.33.0 does for one registered architecture, one field per column of ``0.33.0.tsv``."""

    architecture: str
    """The name a config's ``architectures`` carries (a key of registry.py's tables)."""
    registry: str
    """``text_generation``, ``multimodal`` or ``speculative_decoding``: which registry.py table names it."""
    vllm_module: str
    """The module of the class registry.py maps it to (``vllm.model_executor.models.<module>``, or a
    full ``vllm.models.…`` path)."""
    attention_free: bool
    """The class implements ``IsAttentionFree`` (``interfaces.py``; Mamba-1/2): prefix caching is off
    by default and a Mamba block spans ``max_model_len``."""
    is_hybrid: bool
    """The class implements ``IsHybrid`` (``interfaces.py``): attention next to Mamba-like state, the
    hybrid block-size alignment (``HybridAttentionMambaModelConfig``)."""
    ssm_dtype: SsmDtypeRule
    """How its ``MODELS_CONFIG_MAP`` hook (``models/config.py``) sets the SSM state dtype:
    ``NemotronHForCausalLMConfig`` (``mamba_ssm_cache_dtype``, else fp32),
    ``Qwen3_5ForConditionalGenerationConfig`` (``mamba_ssm_dtype``), or none (``auto``)."""
    gdn_prefill_checkpoint: bool | None
    """Whether the GatedDeltaNet layers it builds export a prefill checkpoint in align mode:
    ``QwenGatedDeltaNetAttention`` (``layers/mamba/gdn/qwen_gdn_linear_attn.py``) does where FlashInfer's
    GDN prefill runs; ``OlmoHybridGatedDeltaNetAttention`` (``olmo_gdn_linear_attn.py``) declares none.
    None (``no_gdn``): the class builds no GDN layer (a GDN layer read anyway gets the first rule)."""
    kv_dtype: str
    """``cache``: its attention layers get the cache config, so ``--kv-cache-dtype`` applies;
    ``model``: the class builds its ``Attention`` without ``cache_config`` (``falcon.py``'s rotary and
    ALiBi paths), so the KV stays in the model dtype."""
    attention_sinks: str
    """``all``: every attention layer gets per-head sinks whatever the config (``gpt_oss.py``,
    ``models/flint``), which the backend choice reads (``has_sink``); ``config``: sinks on some
    layers or configs only (``granite.py``'s ``attention_sinks``, ``laguna.py``, ``mimo_v2.py``'s
    ``add_swa_attention_sink_bias``, ``qwen3_dflash.py``): not replayed, the backend is chosen as
    without sinks; ``no``."""
    alibi: str
    """ALiBi position bias, which FlashAttention runs on FA2 (no fp8 KV): ``always`` (``bloom.py``),
    ``config`` (``falcon.py``: when the config's ``alibi`` is true), ``sqrt`` (``step1.py``'s
    ``use_alibi_sqrt``, which only Triton attention takes: not replayed), ``no``."""
    sparse_128_blocks: bool
    """MiniMax-M3's sparse attention (``vllm/models/minimax_m3``): the MINIMAX_M3_SPARSE backend pages
    by 128 tokens, and its index keys (K only) stay in the model dtype."""
    forced_fa4: bool
    """Its ``MODELS_CONFIG_MAP`` hook forces FLASH_ATTN with FlashAttention 4 where FA4 runs
    (``UnlimitedOCRForCausalLMConfig``: R-SWA masks need FA4's mask_mod)."""
    mixed_heads_fa4: bool
    """Its hook (``Gemma4Config``) wants FA4 for every layer when the layers' head sizes differ, and
    Triton attention where FA4 does not run."""
    nope_only_mla: bool
    """The model build asserts the config's ``mla_use_nope`` (``vllm/models/kimi_k3/nvidia/model.py``,
    "Kimi-K3 MLA (MultiHeadLatentAttention) is NoPE-only"), which its config class defaults to False.
    ``KimiK3ForConditionalGeneration`` builds the same decoder layers on a ``KimiLinearConfig`` text
    config, so it asserts too (the Hub's config, and ``fixtures/moonshotai__Kimi-K3``, set it true)."""
    required_config_attr: ConfigAttribute | None
    """An attribute the model reads off its config with no default (``chatglm.py``:
    ``config.original_rope``); None (``none``) when there is none to check."""
    tp_experts: tuple[ExpertsCheck, ...] | None
    """The MoE blocks the class reaches that refuse a TP above the expert count while the model is built
    (``if self.tp_size > config.num_experts: raise ValueError(...)``: ``qwen3_moe.py``, ``qwen2_moe.py``,
    ``minimax_m2.py``, ``step3p5.py``, ...), as ``hfkv.engines.experts`` reads the cell
    (``<key>@tp:<Class>``; ``tests/oracles/tp-experts.py`` reads them from the source); empty: no block
    checks (DeepSeek V2/V3, Mixtral and the dense classes); None: not read."""
    supports_pp: bool
    """The class implements ``SupportsPP`` and its ``forward`` takes ``intermediate_tensors``
    (``registry.is_pp_supported_model``); PP > 1 is refused otherwise."""


PARSERS: dict[str, Callable[[str], Any]] = {
    "architecture": str,
    "registry": choice("text_generation", "multimodal", "speculative_decoding"),
    "vllm_module": str,
    "attention_free": yes_no,
    "is_hybrid": yes_no,
    "ssm_dtype": SsmDtypeRule.parse,
    "gdn_prefill_checkpoint": _tri,
    "kv_dtype": choice("cache", "model"),
    "attention_sinks": choice("all", "config", "no"),
    "alibi": choice("always", "config", "sqrt", "no"),
    "sparse_128_blocks": yes_no,
    "forced_fa4": yes_no,
    "mixed_heads_fa4": yes_no,
    "nope_only_mla": yes_no,
    "tp_experts": experts.parse,
    "required_config_attr": ConfigAttribute.parse,
    "supports_pp": yes_no,
}


@dataclass(frozen=True)
class MmPrefixRule:
    """``is_mm_prefix_lm`` for one model type (``transformers_utils/model_arch_config_convertor.py``):
    always (``MM_PREFIX_LM_MODELS``), or when the text config's ``key`` equals ``value``
    (``Gemma4ModelArchConfigConvertor``: ``use_bidirectional_attention == "vision"``)."""

    key: str | None = None
    value: str | None = None

    @classmethod
    def parse(cls, cell: str) -> MmPrefixRule | None:
        """``no`` (None), ``yes``, or ``text_config:KEY=VALUE``."""
        if cell == "no":
            return None
        if cell == "yes":
            return cls()
        key, _, value = cell.removeprefix("text_config:").partition("=")
        if not cell.startswith("text_config:") or not key or not value:
            raise ValueError(f"{cell!r} is not yes, no or text_config:KEY=VALUE")
        return cls(key, value)

    def applies(self, text_config: dict) -> bool:
        return self.key is None or text_config.get(self.key) == self.value


@dataclass(frozen=True)
class ModelTypeFacts:
    """What vLLM 0.33.0 decides from ``hf_config.model_type``, one field per column of
    ``0.33.0-model-types.tsv``; ``DEFAULT_MODEL_TYPE`` for a model type no rule names."""

    model_type: str
    """``hf_config.model_type`` (the top-level config's)."""
    float16: bool
    """``auto`` may resolve to float16: False for ``_FLOAT16_NOT_SUPPORTED_MODELS``
    (``config/model.py``: "Numerical instability"), where ``_resolve_auto_dtype`` takes bfloat16."""
    mm_prefix: MmPrefixRule | None
    """Bidirectional attention over multimodal positions (``is_mm_prefix_lm``), which sends the
    attention through a Triton composite backend; None: never."""


MODEL_TYPE_PARSERS: dict[str, Callable[[str], Any]] = {
    "model_type": str,
    "float16": yes_no,
    "mm_prefix": MmPrefixRule.parse,
}
DEFAULT_MODEL_TYPE = ModelTypeFacts(model_type="", float16=True, mm_prefix=None)


def _transformers_route(cell: str) -> str | None:
    """``none``, ``fallback`` or ``registered:<backend class>``."""
    if cell in (NONE, "fallback"):
        return None if cell == NONE else cell
    if cell.startswith("registered:Transformers") and cell.endswith("ForCausalLM"):
        return cell
    raise ValueError(f"{cell!r} is not none, fallback or registered:Transformers…ForCausalLM")


def _version(cell: str) -> str | None:
    if cell == NONE:
        return None
    if not all(part.isdigit() for part in cell.split(".")) or cell.count(".") != 2:
        raise ValueError(f"{cell!r} is neither none nor a version X.Y.Z")
    return cell


@dataclass(frozen=True)
class OtherArchFacts:
    """A name vLLM 0.33.0 resolves outside its generation registries, one field per column of
    ``0.33.0-other-architectures.tsv``."""

    architecture: str
    """The name as a config's ``architectures`` carries it."""
    pooling_only: bool
    """registry.py registers it only in its pooling tables (``_EMBEDDING_MODELS``,
    ``_LATE_INTERACTION_MODELS``, ``_REWARD_MODELS``, ``_*_CLASSIFICATION_MODELS``): vLLM serves it as a
    pooling model (``--runner pooling``), never as a generation model; whether it keeps a KV cache is
    ``pooling_kv_cache``."""
    transformers_backend: str | None
    """How ``inspect_model_cls`` reaches the Transformers modeling backend with ``--model-impl auto``:
    ``registered:<class>`` (``_TRANSFORMERS_SUPPORTED_MODELS`` names the backend class), ``fallback``
    (transformers 5.20.2, vLLM 0.33.0's, exports the class and it passes ``_try_resolve_transformers``'
    ``is_backend_compatible()`` / ``_can_set_attn_implementation()``; the class is picked at
    resolution), or None."""
    supported_until: str | None
    """``_PREVIOUSLY_SUPPORTED_MODELS``: the last vLLM version that served it (refused since), or None."""
    pooling_kv_cache: str | None
    """For a pooling-only name, whether vLLM allocates a KV cache for it: ``none`` when the class declares
    ``attn_type("encoder_only")`` (``interfaces_base.get_attn_type``, asked of each class in vLLM's venv):
    its attention is bidirectional, built as ``EncoderOnlyAttention``, whose ``get_kv_cache_spec`` is
    None, and it keeps no state, so vLLM starts with no KV cache groups (Lfm2BidirectionalModel: the
    oracle rows of LFM2.5-Embedding, 0 groups, 1 block); ``layers`` when the class declares causal
    (``decoder``) attention: its KV groups are those of the layers it builds (causal layers keep a KV
    cache; a config hook may make them bidirectional, ``is_causal``), not replayed by hfkv; None
    (``n/a``) for a name that is not pooling-only."""
    pooling_supports_pp: bool | None
    """For a pooling-only name, whether its class implements ``SupportsPP`` (``interfaces.supports_pp`` of
    the class the registry loads, asked in vLLM's venv with the oracle's fake platform; ``unknown`` for
    the four classes that do not import there: ClefFlash, ColQwen3.5, D3, Terratorch); None (``n/a``,
    ``unknown``) otherwise. ``no``: ``--pipeline-parallel-size`` > 1 is refused as for a generation class."""

    @property
    def backend_class(self) -> str | None:
        """The backend class a ``registered:`` row names (None for fallback rows and the rest)."""
        return self.transformers_backend.split(":", 1)[1] if self.transformers_backend and ":" in self.transformers_backend else None


OTHER_PARSERS: dict[str, Callable[[str], Any]] = {
    "architecture": str,
    "pooling_only": yes_no,
    "transformers_backend": _transformers_route,
    "supported_until": _version,
    "pooling_kv_cache": lambda cell: None if cell == "n/a" else choice("none", "layers")(cell),
    "pooling_supports_pp": lambda cell: None if cell in ("n/a", "unknown") else yes_no(cell),
}


# -- loading ----------------------------------------------------------------------------------------



@lru_cache(maxsize=None)
def table() -> dict[str, ArchFacts]:
    """architecture -> its facts, for every row of ``0.33.0.tsv``."""
    return {f.architecture: f for f in parse_rows(TABLE, PARSERS, ArchFacts)}


def facts(arch: str) -> ArchFacts:
    """The facts of a registered architecture; KeyError for a name the table does not hold."""
    return table()[arch]


def resolved_architecture(archs: Iterable[str] | None) -> str | None:
    """The architecture whose class vLLM builds: the first of the config's that the generation
    registries hold (``inspect_model_cls`` walks the list in order), or None."""
    known = table()
    return next((a for a in archs or [] if a in known), None)


def model_facts(archs: Iterable[str] | None) -> ArchFacts | None:
    """The facts of the class vLLM builds for a config's ``architectures`` (``resolved_architecture``);
    None when no generation registry holds any of them (its Transformers backend, or a refusal)."""
    arch = resolved_architecture(archs)
    return table()[arch] if arch else None


@lru_cache(maxsize=None)
def model_types() -> dict[str, ModelTypeFacts]:
    """model_type -> its facts, for every row of ``0.33.0-model-types.tsv``."""
    return {f.model_type: f for f in parse_rows(MODEL_TYPES_TABLE, MODEL_TYPE_PARSERS, ModelTypeFacts)}


def model_type_facts(model_type: str | None) -> ModelTypeFacts:
    """The facts of a model type (``DEFAULT_MODEL_TYPE`` for one no rule names)."""
    return model_types().get(model_type or "", DEFAULT_MODEL_TYPE)


@lru_cache(maxsize=None)
def others() -> dict[str, OtherArchFacts]:
    """architecture -> its facts, for every row of ``0.33.0-other-architectures.tsv``."""
    return {f.architecture: f for f in parse_rows(OTHER_TABLE, OTHER_PARSERS, OtherArchFacts)}


def other_facts(arch: str) -> OtherArchFacts | None:
    """The facts of a name outside the generation registries, or None."""
    return others().get(arch)


# -- views the older callers read --------------------------------------------------------------------


@lru_cache(maxsize=None)
def architectures() -> dict[str, tuple[str, str]]:
    """architecture -> (registry, module); registry is text_generation, multimodal or speculative_decoding."""
    return {arch: (f.registry, f.vllm_module) for arch, f in table().items()}


@lru_cache(maxsize=None)
def pp_support() -> dict[str, bool]:
    """architecture -> whether its model class implements ``SupportsPP``."""
    return {arch: f.supports_pp for arch, f in table().items()}


@lru_cache(maxsize=None)
def registered_names() -> frozenset[str]:
    """Every name vLLM 0.33.0 registers a class of its own for: the generation registries and the
    pooling-only names (what keeps the Transformers backend's fallback away)."""
    return frozenset(table()) | pooling_only()


@lru_cache(maxsize=None)
def pooling_only() -> frozenset[str]:
    """The names registry.py registers only as pooling models."""
    return frozenset(arch for arch, f in others().items() if f.pooling_only)


@lru_cache(maxsize=None)
def transformers_registered() -> dict[str, str]:
    """``_TRANSFORMERS_SUPPORTED_MODELS``: architecture -> the backend class registry.py names for it."""
    return {arch: f.backend_class for arch, f in others().items() if f.backend_class}


@lru_cache(maxsize=None)
def transformers_fallback() -> frozenset[str]:
    """transformers 5.20.2's generation classes that reach the backend by ``_try_resolve_transformers``."""
    return frozenset(arch for arch, f in others().items() if f.transformers_backend == "fallback")
