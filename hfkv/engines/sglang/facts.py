"""What SGLang 0.5.23 knows per architecture and per model type, as data: two tables beside this module.

``0.5.23.tsv``: one row per ``EntryClass`` of SGLang 0.5.23's ``sglang/srt/models/*.py`` (the names its
``ModelRegistry`` resolves), read into one ``ArchFacts`` per architecture (``facts(arch)``): the SGLang
module, ``tp_asserts``, then one column per rule SGLang keys by architecture (each field's docstring
below says where in SGLang's code), and ``supports_pp`` last. A name SGLang does not register gets no
architecture rule (its transformers fallback, ``fallback.py``, decides whether it serves at all):
every architecture SGLang 0.5.23's own lists name is registered, but for two names of
``multimodal_model_archs`` no model file defines (``Grok1VForCausalLM``, ``Grok1AForCausalLM``: the
``multimodal`` field).

``0.5.23-model-types.tsv``: the rules SGLang keys by ``hf_config.model_type`` (its config classes, and
the checks that compare ``model_type``), one ``ModelTypeFacts`` per model type they name
(``model_type_facts(model_type)``; a model type no rule names gets ``DEFAULT_MODEL_TYPE``).

Every cell holds a known value (``tests/engines/sglang/test_facts.py``); the parsers below refuse
anything else. Rows are sorted by their first column so that a new version's tables diff cleanly.

How the tables were made, and how to make them for another SGLang version (docs/sglang.md, "The
engine's tables"):

- ``architecture`` / ``sglang_module``: the ``EntryClass`` names of every ``sglang/srt/models/*.py`` of
  the released wheel (``pip download sglang==X --no-deps`` and unzip); ``python -m
  hfkv.engines.sglang.tablegen --sglang-src DIR --write`` rewrites the rows from them, carrying the
  cells of known names over and filling a new name's cells that SGLang's lists decide.
- ``tp_asserts``: ``tests/oracles/sglang-tp-asserts.py --write`` (it reads the installed SGLang's
  model sources with ``ast`` and rewrites only that column).
- ``tp_experts``: ``tests/oracles/tp-experts.py --write`` (the MoE blocks' expert-count checks, with ``ast``).
- ``supports_pp``: asked of SGLang in its oracle venv (``ModelRunner``'s test, docs/sglang.md).
- ``0.5.23-quantization.tsv``: the ``quant_method`` names SGLang's CUDA build loads (``hfkv.engines.quantization``).
- The other columns began (0.5.23) as hand lists in code; a script wrote them once from those lists
  and checked them equal to the old membership for every registered architecture (git history), so
  no figure changed; six ``hybrid_swa`` cells of draft classes were then set to SGLang's own set.
  ``multimodal`` and ``multimodal_prefill_graph`` were written by ``tablegen`` from
  ``configs/model_config.py``. ``tablegen`` (without ``--write``) lists the cells that differ from
  SGLang's own lists: none for 0.5.23 (``tests/engines/sglang/test_facts.py`` asserts it). A cell
  nobody has read cannot be written: no parser below accepts ``?`` (``tp_asserts``' own ``?`` means
  "not read" and makes no claim).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, NamedTuple

from packaging.version import Version

from hfkv.engines import experts
from hfkv.engines.experts import ExpertsCheck
from hfkv.engines.tables import choice, parse_rows, yes_no

VERSION = "0.5.23"
HERE = Path(__file__).resolve().parent
TABLE = HERE / f"{VERSION}.tsv"
MODEL_TYPES_TABLE = HERE / f"{VERSION}-model-types.tsv"
QUANTIZATION_TABLE = HERE / f"{VERSION}-quantization.tsv"  # hfkv.engines.quantization reads it
NONE = "none"  # the cell of a rule that does not apply to the row
DEFAULT = "default"  # the cell of a setting the row leaves at SGLang's general default

# hybrid_swa values
HYBRID_SWA = "yes"
NOT_HYBRID_SWA = "no"
HYBRID_SWA_IF_SLIDING = "if_sliding"
# pp_refusal value that hands the decision to the model type's own pp_refusal
PP_REFUSAL_BY_MODEL_TYPE = "model_type"
# context_length_keys value: the config class's attributes answer get_context_length's keys
CONTEXT_KEYS_OF_CLASS = "class"


class TpAssert(NamedTuple):
    """One attention class's TP assertions: ``kinds`` among heads / kv, ``tp`` the TP it divides by
    (``tp``, ``attn_tp``, or None when unknown), ``cls`` its SGLang class name."""

    kinds: frozenset[str]
    tp: str | None
    cls: str


class ConfigDefault(NamedTuple):
    """A key SGLang's own config class defaults when the config lacks it: ``config_class.key = value``."""

    config_class: str
    key: str
    value: int


class Multimodal(NamedTuple):
    """What ``configs/model_config.py`` ``ModelConfig.__init__`` knows of an architecture when it decides
    ``is_multimodal`` (the ``multimodal`` column, ``parse_multimodal``)."""

    listed: bool
    """In ``multimodal_model_archs``: ``is_multimodal_model`` holds when any of the config's
    architectures is."""
    text_only: bool
    """In ``mm_disabled_models``: as the config's first architecture, ``enable_multimodal`` defaults to
    False (multimodal only with ``--enable-multimodal`` or ``--model-impl transformers``)."""
    needs_vision_and_audio: bool
    """In ``MIMO_V2_MULTIMODAL_ARCHS``: as the config's first architecture, ``enable_multimodal``
    defaults to False unless the config has both ``vision_config`` and ``audio_config``."""


MULTIMODAL_FLAGS = ("listed", "text_only", "needs_vision_and_audio")
NOT_MULTIMODAL = Multimodal(False, False, False)


class StrictFields(NamedTuple):
    """A strict config class and its typed fields: ``config_class`` and (field, type as annotated)."""

    config_class: str
    fields: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, cell: str) -> StrictFields:
        """``Class:field=type+field=type+...``; ValueError on anything else."""
        owner, _, rest = cell.partition(":")
        pairs = tuple(tuple(item.split("=", 1)) for item in rest.split("+"))
        if not owner.isidentifier() or not pairs or any(len(p) != 2 or not p[0].isidentifier() or not p[1]
                                                        for p in pairs):
            raise ValueError(f"{cell!r} is not Class:field=type+...")
        return cls(owner, pairs)


class Rename(NamedTuple):
    """An architecture name SGLang's config class rewrites before the registry lookup."""

    old: str
    new: str


# -- cell parsers: each takes one cell and returns the typed value, or raises ValueError ----------


def parse_tp_asserts(value: str) -> tuple[TpAssert, ...] | None:
    """One ``tp_asserts`` cell: ``<kinds>@<tp>:<Class>`` joined by ``,``, kinds ``heads``, ``kv`` or
    ``heads+kv``, tp ``tp``, ``attn_tp`` or ``?``; ``none`` (empty: no class asserts) or ``?`` (None:
    the classes could not be read). ValueError on a malformed cell."""
    if value == "?":
        return None
    if value == NONE:
        return ()
    out = []
    for item in value.split(","):
        kinds, _, rest = item.partition("@")
        tp, _, cls = rest.partition(":")
        if not set(kinds.split("+")) <= {"heads", "kv"} or tp not in ("tp", "attn_tp", "?") or not cls:
            raise ValueError(f"malformed tp_asserts entry {item!r}")
        out.append(TpAssert(frozenset(kinds.split("+")), None if tp == "?" else tp, cls))
    return tuple(out)


def parse_multimodal(value: str) -> Multimodal:
    """One ``multimodal`` cell: ``no``, or the flags that hold joined by ``+`` in the order of
    ``MULTIMODAL_FLAGS`` (``listed``, ``listed+text_only``, ``text_only``,
    ``listed+needs_vision_and_audio``); ``text_only`` and ``needs_vision_and_audio`` exclude each other.
    ValueError on anything else."""
    if value == "no":
        return NOT_MULTIMODAL
    flags = value.split("+")
    if not set(flags) <= set(MULTIMODAL_FLAGS) or flags != sorted(set(flags), key=MULTIMODAL_FLAGS.index):
        raise ValueError(f"{value!r} is neither no nor flags among {'+'.join(MULTIMODAL_FLAGS)}")
    if {"text_only", "needs_vision_and_audio"} <= set(flags):
        raise ValueError(f"{value!r}: text_only and needs_vision_and_audio exclude each other")
    return Multimodal(*(flag in flags for flag in MULTIMODAL_FLAGS))


def multimodal_cell(value: Multimodal) -> str:
    """The cell ``parse_multimodal`` reads back as ``value``."""
    return "+".join(flag for flag, on in zip(MULTIMODAL_FLAGS, value) if on) or "no"




def _or_default(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``default`` (None: SGLang's general default applies), else the cell through ``parse``."""
    def parse_cell(cell: str) -> Any:
        return None if cell == DEFAULT else parse(cell)
    return parse_cell


def _ratio(cell: str) -> Fraction:
    """A ratio in (0, 1] written as a decimal (``0.1``)."""
    try:
        value = Fraction(cell)
    except ValueError:
        raise ValueError(f"{cell!r} is not a decimal ratio") from None
    if not 0 < value <= 1:
        raise ValueError(f"{cell!r} is not in (0, 1]")
    return value


def _positive_int(cell: str) -> int:
    if not cell.isdigit() or int(cell) <= 0:
        raise ValueError(f"{cell!r} is not a positive integer")
    return int(cell)


def _message(cell: str) -> str | None:
    """``none`` (None), or a message as SGLang words it (a sentence ending in a full stop), or
    ``model_type`` (``PP_REFUSAL_BY_MODEL_TYPE``)."""
    if cell == NONE:
        return None
    if cell != PP_REFUSAL_BY_MODEL_TYPE and not cell.endswith("."):
        raise ValueError(f"{cell!r} is neither none, model_type nor a sentence")
    return cell


def _config_default(cell: str) -> ConfigDefault | None:
    """``none`` or ``ConfigClass.key=value``."""
    if cell == NONE:
        return None
    owner, _, rest = cell.partition(".")
    key, _, value = rest.partition("=")
    if not owner or not key or not value.isdigit():
        raise ValueError(f"{cell!r} is neither none nor ConfigClass.key=N")
    return ConfigDefault(owner, key, int(value))


def _rename(cell: str) -> Rename | None:
    """``none`` or ``Old>New``."""
    if cell == NONE:
        return None
    old, _, new = cell.partition(">")
    if not old or not new:
        raise ValueError(f"{cell!r} is neither none nor Old>New")
    return Rename(old, new)


def _release(cell: str) -> str:
    """A release number (``0.5.12``, ``0.4.6.post5``)."""
    Version(cell)  # InvalidVersion is a ValueError
    return cell


def _key(cell: str) -> str | None:
    """``none`` or a config key."""
    if cell == NONE:
        return None
    if not cell.isidentifier():
        raise ValueError(f"{cell!r} is neither none nor a config key")
    return cell


# -- the records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArchFacts:
    """What SGLang 0.5.23 does for one registered architecture, one field per column of ``0.5.23.tsv``."""

    architecture: str
    """The name a config's ``architectures`` carries: an ``EntryClass`` of ``sglang/srt/models``."""
    sglang_module: str
    """The module defining it (``sglang.srt.models.<module>``)."""
    tp_asserts: tuple[TpAssert, ...] | None
    """What the attention classes the model builds assert about TP in their ``__init__``
    (``parse_tp_asserts``; ``tests/oracles/sglang-tp-asserts.py`` reads them from the models' source):
    SGLang raises them while building the model. Empty: none asserts; None: unknown."""
    hybrid_swa: str
    """``configs/model_config.py:is_hybrid_swa_model``: ``yes`` when the name is in its set (sliding
    layers then get their own pool, ``HybridSWAPoolConfigurator``); ``if_sliding`` for the two names it
    admits only when the config has sliding layers (``LagunaForCausalLM``: a truthy ``sliding_window``;
    ``BeamForCausalLM``: a ``sliding_attention`` layer type); ``no``: full KV on every layer."""
    swa_full_tokens_ratio: Fraction | None
    """The hybrid-SWA pool's size relative to the full pool when ``--swa-full-tokens-ratio`` is not
    given, as a model override sets it: 0.1 for Inkling (``arg_groups/model_overrides/inkling.py``);
    None (``default``): ``arg_groups/fields/schedule.py``'s 0.8. (DeepSeek V4's 0.1 is its pool's own,
    ``DSV4PoolConfigurator``'s ``DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO``: ``dsv4.py``.)"""
    mamba_full_memory_ratio: float | None
    """The Mamba state pool's share r (``rest·r/(1+r)``) when ``--mamba-full-memory-ratio`` is at its
    default: 0.1 for Inkling (``model_overrides/inkling.py``); None (``default``): 0.9."""
    mamba_extra_buffer: bool
    """In ``arg_groups/overrides.py:_MAMBA_EXTRA_BUFFER_ARCHS``: with the radix cache on, its Mamba
    radix cache takes the extra-buffer strategy, 2 more state slots per running request
    (``_calculate_mamba_ratio``)."""
    sm100_attention_backend: str | None
    """The attention backend a model override picks on SM100 (B200): ``trtllm_mla`` for the MLA
    models of ``model_overrides/deepseek_v2.py:_deepseek_family_overrides`` and ``kimi_k3.py`` (page
    64), ``triton`` for ``model_overrides/qwen3_5.py:_qwen3_5_hybrid_overrides`` (page 1),
    ``fa4/trtllm_mha`` for MiniMax-M3 (``model_overrides/minimax_m3.py``); None (``default``):
    ``model_override_base.get_default_attn_backend``'s choice."""
    page_size: int | None
    """The page size a model override pins on every GPU generation: 128 for MiniMax-M3
    (``model_overrides/minimax_m3.py``); None (``default``): the backend's."""
    pp_refusal: str | None
    """The message a model override raises for ``--pp-size`` > 1 while the server arguments resolve,
    keyed by the config's first architecture: IQuest Q1 (``model_overrides/iquest_q1.py``);
    ``model_type`` (``PP_REFUSAL_BY_MODEL_TYPE``) for ``DeepseekV4ForCausalLM``, whose
    ``arg_groups/model_hook.py`` branch runs ``deepseek_v4_hook.validate_deepseek_v41_features``, a
    check keyed by the model type (``ModelTypeFacts.pp_refusal``); None (``none``)."""
    multimodal: Multimodal
    """How ``configs/model_config.py`` ``ModelConfig.__init__`` counts the architecture when it sets
    ``is_multimodal`` = ``enable_multimodal`` and not language-model-only (``--language-model-only`` or
    the config's ``language_model_only``) and (``is_multimodal_model(architectures)`` or
    ``has_multimodal_subconfig`` or ``has_dsv41_vision``). ``listed``: in ``multimodal_model_archs``
    (``is_multimodal_model``: any of the config's architectures); ``text_only``: in the
    ``mm_disabled_models`` of the ``enable_multimodal is None`` branch, checked against
    ``hf_config.architectures[0]`` only (Gemma3, Llama4 and Step3VL ``ForConditionalGeneration``, also
    listed; ``InklingForConditionalGeneration``, not listed): served text-only by default;
    ``needs_vision_and_audio``: the ``MIMO_V2_MULTIMODAL_ARCHS`` branch (``MiMoV2ForCausalLM``, listed),
    also on ``architectures[0]``: text-only unless the config has ``vision_config`` and ``audio_config``.
    What the rule reads besides the architecture: ``has_multimodal_subconfig`` (the config has a text
    sub-config ``get_hf_text_config`` returns: ``thinker_config``, ``llm_config``, ``language_config`` or
    ``text_config``, unless ``architectures[0]`` is a ``Llava*ForCausalLM``: a ``no`` architecture such
    as ``KimiK3ForConditionalGeneration`` is multimodal through it) and ``has_dsv41_vision``
    (``ModelTypeFacts.flat_multimodal``) are the config's. ``Grok1VForCausalLM`` and
    ``Grok1AForCausalLM`` are listed but not registered, so have no row. A multimodal model's default
    ``mem_fraction_static`` is scaled for its vision tower (``arg_groups/memory_hook.py``
    ``adjust_mem_fraction_for_vlm``), and its breakable prefill CUDA graph is off unless
    ``multimodal_prefill_graph``."""
    multimodal_prefill_graph: bool
    """In ``configs/model_config.py:multimodal_breakable_cuda_graph_supported_model_archs``
    (``is_multimodal_breakable_cuda_graph_supported``: any of the config's architectures, while
    ``enable_multimodal``): a multimodal model keeps the default breakable prefill CUDA graph;
    otherwise ``arg_groups/cuda_graph_hook.py:disable_breakable_cudagraph_if_incompatible`` turns it
    off for a multimodal model (its "multimodal model" rule)."""
    encoder_decoder_layers: bool
    """``configs/model_config.py`` ``ModelConfig`` sets ``num_attention_layers = encoder_layers + 2 ·
    decoder_layers`` when the architecture is among the config's (Whisper): the encoder's self-attention,
    the decoder's self-attention and its cross-attention layers each get one slot of the token pool's
    cell ("even though cross-attention doesn't save KV cache, attention backend needs buffer to exist"),
    sized as the decoder's self-attention (``DefaultPoolConfigurator``); the cell's KV heads and head
    size are the config's ``num_key_value_heads`` / ``num_attention_heads`` as the config class maps
    them (``WhisperConfig.attribute_map``: ``encoder_attention_heads``) over ``d_model``."""
    attention_backend: str | None
    """The attention backend ``arg_groups/model_override_base.get_default_attn_backend`` returns for the
    architecture on every GPU generation before its usual choice: ``flashinfer`` for Whisper ("Whisper
    requires flashinfer for cross-attention CUDA graph support"; page 1); None (``default``): the
    generation's rule (``backend.py``)."""
    radix_cache: str | None
    """``off``: ``arg_groups/attention_hook.py:handle_attention_backend_compatibility`` disables the radix
    cache for the architecture ("Radix cache is disabled for Whisper": its encoder token padding
    conflicts with prefix caching); None (``default``): on unless ``--disable-radix-cache``."""
    tp_experts: tuple[ExpertsCheck, ...] | None
    """The MoE blocks the class reaches that refuse a TP above the expert count while the model is built
    (``if self.tp_size > config.n_routed_experts: raise ValueError(...)``: ``deepseek_v2.py``,
    ``glm4_moe.py``, ``qwen2_moe.py``; ``qwen3_moe.py`` compares ``get_parallel().moe_tp_size``, TP over the
    expert-parallel size), as ``hfkv.engines.experts`` reads the cell (``tests/oracles/tp-experts.py``
    reads them from the source); empty: no block checks; None: not read."""
    kda_prefill_graph: bool
    """Exempt from the "KDA hybrid linear attention" rule of ``arg_groups/cuda_graph_hook.py``
    ``disable_breakable_cudagraph_if_incompatible`` (``uses_kda_attention(...) and "X" not in
    hf_config.architectures``: GLM-5.3 Flash is breakable-graph validated): a KDA model of this
    architecture keeps the default breakable prefill CUDA graph (and its memory reserve); every other
    KDA model has it turned off."""
    first_release: str
    """The oldest SGLang release whose ``sglang/srt/models/*.py`` register the name (``EntryClass``), among
    the wheels read (0.4.6.post5 to 0.5.23, every release from 0.5.10: docs/engine-versions-verified.md;
    ``tablegen --releases``): an older release has no class for it (``support.check_release_registry``).
    ``0.4.6.post5`` means at or before it."""
    supports_pp: bool
    """The model's ``forward`` takes ``pp_proxy_tensors`` (``model_runner.py``: ``assert
    self.support_pp``, "Pipeline Parallel is not compatible with this model." when ``pp_size`` > 1)."""


PARSERS: dict[str, Callable[[str], Any]] = {
    "architecture": str,
    "sglang_module": str,
    "tp_asserts": parse_tp_asserts,
    "hybrid_swa": choice(HYBRID_SWA, NOT_HYBRID_SWA, HYBRID_SWA_IF_SLIDING),
    "swa_full_tokens_ratio": _or_default(_ratio),
    "mamba_full_memory_ratio": _or_default(lambda cell: float(_ratio(cell))),
    "mamba_extra_buffer": yes_no,
    "sm100_attention_backend": _or_default(choice("trtllm_mla", "triton", "fa4/trtllm_mha")),
    "page_size": _or_default(_positive_int),
    "pp_refusal": _message,
    "multimodal": parse_multimodal,
    "multimodal_prefill_graph": yes_no,
    "encoder_decoder_layers": yes_no,
    "attention_backend": _or_default(choice("flashinfer")),
    "radix_cache": _or_default(choice("off")),
    "kda_prefill_graph": yes_no,
    "tp_experts": experts.parse,
    "first_release": _release,
    "supports_pp": yes_no,
}


@dataclass(frozen=True)
class ModelTypeFacts:
    """What SGLang 0.5.23 decides from ``hf_config.model_type``, one field per column of
    ``0.5.23-model-types.tsv``; ``DEFAULT_MODEL_TYPE`` for a model type no rule names."""

    model_type: str
    """``hf_config.model_type``: the config class SGLang registers for it (``sglang/srt/configs``)."""
    architecture_rename: Rename | None
    """The architecture its config class renames to a registered one before the registry lookup:
    ``configs/olmo3.py`` (``Olmo3ForCausalLM`` → ``Olmo2ForCausalLM``), ``configs/deepseek_v41.py``
    (``normalize_deepseek_v41_config``: ``DeepseekV41ForCausalLM`` → ``DeepseekV4ForCausalLM``)."""
    kv_heads_default: ConfigDefault | None
    """The KV-head key its config class defaults when the config lacks it, which
    ``ModelConfig.get_total_num_kv_heads`` then reads: ``configs/chatglm.py``
    (``ChatGLMConfig(multi_query_group_num=1)``)."""
    sizes_no_op_layers: bool
    """``DefaultPoolConfigurator`` sizes ``layer_info.num_effective_layers`` layers, the no-op attention
    blocks included, each like an attention block (Nemotron-NAS / DeciLM)."""
    refuses_variable_gqa: bool
    """``ModelConfig.get_total_num_kv_heads`` takes one KV-head count from the blocks and raises
    "Variable GQA (VGQA) is not yet supported for <model_type> in sglang" when they differ."""
    even_layers_unless: str | None
    """The only config key its config class places attention (and its state) by; without it, every
    even layer (``configs/zaya.py``: ``zaya_layers``)."""
    whole_hidden_conv: bool
    """Its ``mamba2_cache_params`` keeps a (hidden_size, 1) conv tensor whole on every TP rank
    (``configs/zaya.py``: the CCA state's ``prev_hs`` feeds replicated projections)."""
    ssm_dtype_from_config: bool
    """Its config class hands itself to ``configs/mamba_utils.py:mamba2_state_dtype``, so a config
    ``mamba_ssm_dtype`` sets the SSM state dtype; no for the classes that build their state shapes
    without the config (``KimiLinearCacheParams`` in ``kimi_linear.py``, ``glm5_next.py``,
    ``bailing_hybrid.py``; ``granitemoehybrid.py``'s ``Mamba2CacheParams`` default): fp32 unless the
    environment says."""
    swa_cap_mode: bool
    """``DSV4PoolConfigurator`` sizes its SWA pool in cap mode (``_resolve_swa_cap_tokens``: fixed bytes
    for the request cap plus radix headroom), as the DeepSeek-V4.1 oracle row shows; not replayed by
    hfkv, which warns."""
    pp_refusal: str | None
    """The message a model-type check raises for ``--pp-size`` > 1, where the architecture's
    ``pp_refusal`` hands over to it: ``deepseek_v4_hook.validate_deepseek_v41_features``."""
    flat_multimodal: str | None
    """The key that makes the model multimodal when its config class folds the sub-configs into the
    root: ``configs/deepseek_v41.py:normalize_deepseek_v41_config`` merges ``text_config`` into the root
    and copies ``vision_config``'s fields to ``vision_*`` keys (``num_hidden_layers`` to
    ``vision_n_layers``, class default 0), dropping both; ``configs/model_config.py``
    ``ModelConfig.__init__`` then finds no text sub-config (``has_multimodal_subconfig`` False) and
    calls the model multimodal when ``model_type == "deepseek_v41"`` and ``vision_n_layers > 0``
    (``has_dsv41_vision``), while ``adjust_mem_fraction_for_vlm`` finds no ``vision_config`` (the
    fraction is left as it is). None (``none``): the config as written."""
    context_length_keys: str
    """Where ``utils/hf_transformers/common.py:get_context_length`` finds a length when config.json holds
    none of its keys (``max_sequence_length``, ``seq_length``, ``max_seq_len``, ``model_max_length``,
    ``max_position_embeddings``, read with ``getattr`` on the config object): ``class``, the config
    class's attribute (its default or an ``attribute_map`` alias, for which hfkv's maximum position
    stands in); ``none``, the class has none of them, so 2048 whatever the config's own length keys say
    (``WhisperConfig``: ``max_target_positions`` is not one of them)."""
    strict_fields: StrictFields | None
    """The fields of SGLang's own config class for the model type when it is a typed dataclass that
    huggingface_hub's strict validation checks on construction (``configs/deepseek_v4.py``
    ``DeepSeekV4Config``, a ``@dataclass`` over transformers' strict ``PretrainedConfig``): a config that
    sets one of them to null is refused before anything is sized ("StrictDataclassFieldValidationError:
    Validation error for field 'kv_lora_rank': TypeError: Field 'kv_lora_rank' expected int, got NoneType
    (value: None)"). Written from the class's annotations (every field not typed ``Optional``); None
    (``none``): no such class."""


MODEL_TYPE_PARSERS: dict[str, Callable[[str], Any]] = {
    "model_type": str,
    "architecture_rename": _rename,
    "kv_heads_default": _config_default,
    "sizes_no_op_layers": yes_no,
    "refuses_variable_gqa": yes_no,
    "even_layers_unless": _key,
    "whole_hidden_conv": yes_no,
    "ssm_dtype_from_config": yes_no,
    "swa_cap_mode": yes_no,
    "pp_refusal": _message,
    "flat_multimodal": _key,
    "context_length_keys": choice(CONTEXT_KEYS_OF_CLASS, NONE),
    "strict_fields": lambda cell: None if cell == NONE else StrictFields.parse(cell),
}
DEFAULT_MODEL_TYPE = ModelTypeFacts(
    model_type="", architecture_rename=None, kv_heads_default=None, sizes_no_op_layers=False,
    refuses_variable_gqa=False, even_layers_unless=None, whole_hidden_conv=False, ssm_dtype_from_config=True,
    swa_cap_mode=False, pp_refusal=None, flat_multimodal=None, context_length_keys=CONTEXT_KEYS_OF_CLASS,
    strict_fields=None,
)


# -- loading ----------------------------------------------------------------------------------------



@lru_cache(maxsize=None)
def table() -> dict[str, ArchFacts]:
    """architecture -> its facts, for every row of ``0.5.23.tsv``."""
    return {f.architecture: f for f in parse_rows(TABLE, PARSERS, ArchFacts)}


def facts(arch: str) -> ArchFacts:
    """The facts of a registered architecture; KeyError for a name the table does not hold."""
    return table()[arch]


def registered(arch: str) -> bool:
    """Whether SGLang 0.5.23 has a native class for ``arch``."""
    return arch in table()


@lru_cache(maxsize=None)
def model_types() -> dict[str, ModelTypeFacts]:
    """model_type -> its facts, for every row of ``0.5.23-model-types.tsv``."""
    return {f.model_type: f for f in parse_rows(MODEL_TYPES_TABLE, MODEL_TYPE_PARSERS, ModelTypeFacts)}


def model_type_facts(model_type: str | None) -> ModelTypeFacts:
    """The facts of a model type (``DEFAULT_MODEL_TYPE`` for one no rule names)."""
    return model_types().get(model_type or "", DEFAULT_MODEL_TYPE)


# -- views the older callers read --------------------------------------------------------------------


@lru_cache(maxsize=None)
def architectures() -> dict[str, str]:
    """architecture -> module of its native model class."""
    return {arch: f.sglang_module for arch, f in table().items()}


@lru_cache(maxsize=None)
def pp_support() -> dict[str, bool]:
    """architecture -> whether its model's ``forward`` takes ``pp_proxy_tensors``."""
    return {arch: f.supports_pp for arch, f in table().items()}


@lru_cache(maxsize=None)
def tp_asserts() -> dict[str, tuple[TpAssert, ...] | None]:
    """architecture -> its attention classes' TP assertions (empty: none assert; None: unknown)."""
    return {arch: f.tp_asserts for arch, f in table().items()}
