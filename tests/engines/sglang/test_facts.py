"""SGLang 0.5.23's facts tables (hfkv/engines/sglang/0.5.23.tsv, 0.5.23-model-types.tsv): every cell a
known value, the architectures SGLang's own ``EntryClass`` names, and each column checked against
SGLang 0.5.23's source.

Expected values are read off SGLang's code (the file and the name beside each), never off hfkv. Where
the SGLang sources are at hand (the oracle venv ``~/.cache/hfkv-sglang-oracle``, an unpacked wheel
named by ``HFKV_SGLANG_SRC``: ``pip download sglang==0.5.23 --no-deps`` and unzip), the whole columns
are also compared with the lists in that source, read with ``ast`` (nothing of SGLang is imported).
"""

from __future__ import annotations

import dataclasses
import glob
import os
from fractions import Fraction
from pathlib import Path

import pytest

from hfkv.engines import tables
from hfkv.engines.sglang import facts, tablegen
from hfkv.engines.experts import ExpertsCheck
from hfkv.engines.sglang.facts import ConfigDefault, Multimodal, Rename

ROOT = Path(__file__).resolve().parents[3]
SHARED_ARCHS = ROOT.parent / "shared" / "engine-archs" / "sglang-0.5.23.tsv"
IQUEST_PP = "IQuest Q1 does not support pipeline parallelism."  # arg_groups/model_overrides/iquest_q1.py
# deepseek_v4_hook.validate_deepseek_v41_features: f"DeepSeek-V4.1 does not support {feature} yet; disable
# it to serve this model." with feature "pipeline parallelism"
DSV41_PP = "DeepSeek-V4.1 does not support pipeline parallelism yet; disable it to serve this model."


def sglang_source() -> Path | None:
    """The ``sglang`` package folder of SGLang 0.5.23's sources, or None when none is at hand."""
    given = os.environ.get("HFKV_SGLANG_SRC")
    candidates = [Path(given)] if given else []
    candidates += [Path(p) for p in glob.glob(os.path.expanduser(
        "~/.cache/hfkv-sglang-oracle/lib/python3*/site-packages/sglang"))]
    for path in candidates:
        path = path / "sglang" if (path / "sglang" / "srt").is_dir() else path
        versions = glob.glob(str(path.parent / "sglang-*.dist-info"))
        if (path / "srt").is_dir() and (not versions or any("sglang-0.5.23.dist-info" in v for v in versions)):
            return path
    return None


SOURCE = sglang_source()
needs_source = pytest.mark.skipif(SOURCE is None, reason="SGLang 0.5.23's sources are not at hand "
                                  "(~/.cache/hfkv-sglang-oracle, or HFKV_SGLANG_SRC)")


# -- every cell a known value ------------------------------------------------------------------------


@pytest.mark.parametrize("path, record", [(facts.TABLE, facts.ArchFacts),
                                          (facts.MODEL_TYPES_TABLE, facts.ModelTypeFacts)])
def test_every_row_fills_every_column(path, record):
    header, rows = tables.read_table(path)
    assert header == [f.name for f in dataclasses.fields(record)]  # the records list the columns in order
    assert rows and all(len(row) == len(header) and all(cell.strip() == cell != "" for cell in row) for row in rows)
    assert [row[0] for row in rows] == sorted(row[0] for row in rows)


def test_every_cell_parses_to_a_known_value():
    # The parsers accept only each column's vocabulary; loading the tables parses every cell.
    assert len(facts.table()) == 290
    assert len(facts.model_types()) == 13  # deepseek_v4 (strict_fields) and whisper (context_length_keys) added


def test_the_scripts_find_their_columns_where_they_write_them():
    # tests/oracles/sglang-tp-asserts.py rewrites column 3; supports_pp stays last (test_pp_support.py).
    header, _ = tables.read_table(facts.TABLE)
    assert header[:3] == ["architecture", "sglang_module", "tp_asserts"] and header[-1] == "supports_pp"


@pytest.mark.parametrize("column, cell", [
    *(("hybrid_swa", cell) for cell in ["?", "", "maybe", "0.8 ", "yes?"]),
    # multimodal: no, or flags of facts.MULTIMODAL_FLAGS in their order, text_only and
    # needs_vision_and_audio never together
    *(("multimodal", cell) for cell in ["?", "yes", "", "text_only+listed", "listed+listed", "listed+vision",
                                        "listed+text_only+needs_vision_and_audio", "no+listed"]),
    *(("multimodal_prefill_graph", cell) for cell in ["?", "", "listed", "true"]),
])
def test_an_unread_cell_is_refused(column, cell, tmp_path):
    header, rows = tables.read_table(facts.TABLE)
    broken = [list(row) for row in rows[:2]]
    broken[1][header.index(column)] = cell
    path = tmp_path / "0.5.23.tsv"
    path.write_text("\n".join("\t".join(r) for r in [header, *broken]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"line 3, column {column}"):
        list(tables.parse_rows(path, facts.PARSERS, facts.ArchFacts))


@pytest.mark.parametrize("cell", ["no", "listed", "text_only", "listed+text_only", "listed+needs_vision_and_audio"])
def test_a_multimodal_cell_reads_back_as_written(cell):
    assert facts.multimodal_cell(facts.parse_multimodal(cell)) == cell


def test_a_model_type_no_rule_names_gets_sglangs_general_behaviour():
    assert facts.model_type_facts("llama") == facts.DEFAULT_MODEL_TYPE
    assert facts.model_type_facts(None).ssm_dtype_from_config is True


# -- the architectures are SGLang's EntryClass names ------------------------------------------------


@needs_source
def test_architectures_are_sglangs_entry_classes_with_their_modules():
    assert facts.architectures() == tablegen.entry_classes(SOURCE)


def test_architectures_are_the_shared_engine_archs_list():
    if not SHARED_ARCHS.exists():
        pytest.skip(f"{SHARED_ARCHS} not present (the shared engine-archs lists)")
    listed = [line.split("\t")[:2] for line in SHARED_ARCHS.read_text(encoding="utf-8").splitlines()[1:] if line]
    assert sorted(facts.architectures().items()) == sorted(map(tuple, listed))


# -- rows checked against SGLang's source -------------------------------------------------------------

ROWS = [
    # configs/model_config.py:is_hybrid_swa_model, its hybrid_swa_archs set (SWA_SINK_ARCHS included)
    ("GptOssForCausalLM", "hybrid_swa", "yes"),
    ("Llama4ForConditionalGeneration", "hybrid_swa", "yes"),
    ("Gemma4ForConditionalGeneration", "hybrid_swa", "yes"),
    ("EmbeddingGemma2Model", "hybrid_swa", "yes"),
    ("UnlimitedOCRForCausalLM", "hybrid_swa", "yes"),
    # ... "Only treat Laguna as hybrid SWA when it actually has a sliding window"; Beam: "sliding_attention"
    # in layer_types
    ("LagunaForCausalLM", "hybrid_swa", "if_sliding"),
    ("BeamForCausalLM", "hybrid_swa", "if_sliding"),
    ("Gemma3ForConditionalGeneration", "hybrid_swa", "no"),  # not in the set: full KV on every layer
    ("Qwen2ForCausalLM", "hybrid_swa", "no"),
    # ... the draft classes of that set: DeepSeek V4's NextN and DSpark drafts, Inkling's MTP head,
    # IQuestQ1MTP (SWA_SINK_ARCHS); Gemma 4's assistant drafts are not in it
    ("DeepseekV4ForCausalLMNextN", "hybrid_swa", "yes"),
    ("DeepseekV4ForCausalLMDSpark", "hybrid_swa", "yes"),
    ("InklingForConditionalGenerationMTP", "hybrid_swa", "yes"),
    ("IQuestQ1MTP", "hybrid_swa", "yes"),
    ("Gemma4AssistantForCausalLM", "hybrid_swa", "no"),
    ("Gemma4UnifiedAssistantForCausalLM", "hybrid_swa", "no"),
    # arg_groups/model_overrides/inkling.py: _register_for("InklingForConditionalGeneration",
    # "InklingForConditionalGenerationMTP"), swa_full_tokens_ratio and mamba_full_memory_ratio 0.1
    ("InklingForConditionalGeneration", "swa_full_tokens_ratio", Fraction(1, 10)),
    ("InklingForConditionalGenerationMTP", "swa_full_tokens_ratio", Fraction(1, 10)),
    ("InklingForConditionalGeneration", "mamba_full_memory_ratio", 0.1),
    ("GptOssForCausalLM", "swa_full_tokens_ratio", None),  # schedule.py's 0.8
    ("DeepseekV4ForCausalLM", "swa_full_tokens_ratio", None),  # DSV4PoolConfigurator's own 0.1 (dsv4.py)
    ("Qwen3NextForCausalLM", "mamba_full_memory_ratio", None),
    # arg_groups/overrides.py:_MAMBA_EXTRA_BUFFER_ARCHS
    ("Qwen3NextForCausalLM", "mamba_extra_buffer", True),
    ("GraniteMoeHybridForCausalLM", "mamba_extra_buffer", True),
    ("KimiK3ForConditionalGeneration", "mamba_extra_buffer", True),
    ("JetNemotronForCausalLM", "mamba_extra_buffer", False),  # _MAMBA_RADIX_CACHE_ARCHS only
    ("ZayaForCausalLM", "mamba_extra_buffer", False),
    # model_overrides/deepseek_v2.py:_deepseek_family_overrides and kimi_k3.py: trtllm_mla on SM100
    ("DeepseekV3ForCausalLM", "sm100_attention_backend", "trtllm_mla"),
    ("KimiK3ForConditionalGeneration", "sm100_attention_backend", "trtllm_mla"),
    ("DeepseekV2ForCausalLM", "sm100_attention_backend", None),  # not registered there: flashinfer
    # model_overrides/qwen3_5.py:_qwen3_5_hybrid_overrides: "triton" on SM100
    ("Qwen3NextForCausalLM", "sm100_attention_backend", "triton"),
    ("InternS2MobiusForConditionalGeneration", "sm100_attention_backend", "triton"),
    ("Qwen3_5MoeForCausalLM", "sm100_attention_backend", None),  # the text-only entry is not registered there
    # model_overrides/minimax_m3.py:_minimax_m3_overrides: page_size=128
    ("MiniMaxM3SparseForCausalLM", "page_size", 128),
    ("MiniMaxM3SparseForConditionalGeneration", "page_size", 128),
    ("MiniMaxM2ForCausalLM", "page_size", None),
    # model_overrides/iquest_q1.py: _register_for("IQuestQ1ForCausalLM", "IQuestQ1MTP")
    ("IQuestQ1ForCausalLM", "pp_refusal", IQUEST_PP),
    ("IQuestQ1MTP", "pp_refusal", IQUEST_PP),
    ("IQuestCoderForCausalLM", "pp_refusal", None),
    # arg_groups/model_hook.py: the "DeepseekV4ForCausalLM" branch runs validate_deepseek_v41_features
    ("DeepseekV4ForCausalLM", "pp_refusal", facts.PP_REFUSAL_BY_MODEL_TYPE),
    # configs/model_config.py: multimodal_model_archs (is_multimodal_model, any architecture)
    ("Qwen3_5MoeForConditionalGeneration", "multimodal", Multimodal(listed=True, text_only=False, needs_vision_and_audio=False)),
    ("Gemma4ForConditionalGeneration", "multimodal", Multimodal(True, False, False)),
    ("WhisperForConditionalGeneration", "multimodal", Multimodal(True, False, False)),
    # ... ModelConfig.__init__, enable_multimodal is None: mm_disabled_models = [Gemma3, Llama4, Step3VL,
    # Inkling ...ForConditionalGeneration], tested against hf_config.architectures[0]
    ("Gemma3ForConditionalGeneration", "multimodal", Multimodal(True, True, False)),
    ("Llama4ForConditionalGeneration", "multimodal", Multimodal(True, True, False)),
    ("Step3VLForConditionalGeneration", "multimodal", Multimodal(True, True, False)),
    ("InklingForConditionalGeneration", "multimodal", Multimodal(False, True, False)),  # not in the list
    # ... elif architectures[0] in MIMO_V2_MULTIMODAL_ARCHS and not (vision_config and audio_config)
    ("MiMoV2ForCausalLM", "multimodal", Multimodal(True, False, True)),
    # not in multimodal_model_archs ("structurally multimodal" through the text sub-config, per the
    # comment over the breakable allow-list); text-only classes
    ("KimiK3ForConditionalGeneration", "multimodal", facts.NOT_MULTIMODAL),
    ("Qwen3_5MoeForCausalLM", "multimodal", facts.NOT_MULTIMODAL),
    ("Gemma4ForCausalLM", "multimodal", facts.NOT_MULTIMODAL),
    # configs/model_config.py: multimodal_breakable_cuda_graph_supported_model_archs
    ("Qwen3_5MoeForConditionalGeneration", "multimodal_prefill_graph", True),
    ("KimiK3ForConditionalGeneration", "multimodal_prefill_graph", True),
    ("MiniMaxM3SparseForCausalLM", "multimodal_prefill_graph", True),
    ("PaddleOCRVLForConditionalGeneration", "multimodal_prefill_graph", True),
    ("Gemma4ForConditionalGeneration", "multimodal_prefill_graph", False),
    ("Qwen3VLForConditionalGeneration", "multimodal_prefill_graph", False),
    # models/llama.py: LlamaForCausalLM.forward(..., pp_proxy_tensors=None); models/olmo2.py: no such parameter
    ("LlamaForCausalLM", "supports_pp", True),
    ("Olmo2ForCausalLM", "supports_pp", False),
    # models/qwen2.py: Qwen2Attention.__init__ asserts total_num_heads % tp_size and the KV heads
    ("Qwen2ForCausalLM", "tp_asserts", (facts.TpAssert(frozenset({"heads", "kv"}), "tp", "Qwen2Attention"),)),
    ("Lfm2ForCausalLM", "tp_asserts", ()),
    # configs/model_config.py ModelConfig: `if "WhisperForConditionalGeneration" in self.hf_config.architectures:
    # self.num_attention_layers = encoder_layers + 2 * decoder_layers`; model_override_base.py
    # get_default_attn_backend returns "flashinfer" for it; attention_hook.py turns its radix cache off
    ("WhisperForConditionalGeneration", "encoder_decoder_layers", True),
    ("WhisperForConditionalGeneration", "attention_backend", "flashinfer"),
    ("WhisperForConditionalGeneration", "radix_cache", "off"),
    ("MllamaForConditionalGeneration", "encoder_decoder_layers", False),  # is_encoder_decoder, same layer count
    ("MllamaForConditionalGeneration", "radix_cache", None),  # "other encoder-decoder models (e.g., mllama) use radix cache"
    # arg_groups/cuda_graph_hook.py disable_breakable_cudagraph_if_incompatible: the KDA rule holds unless
    # "Glm5NextForConditionalGeneration" is among the architectures
    ("Glm5NextForConditionalGeneration", "kda_prefill_graph", True),
    ("KimiLinearForCausalLM", "kda_prefill_graph", False),
    ("KimiK3ForConditionalGeneration", "kda_prefill_graph", False),
    # models/qwen3_moe.py Qwen3MoeSparseMoeBlock: self.tp_size = get_parallel().moe_tp_size;
    # `if self.tp_size > config.num_experts: raise ValueError(...)`
    ("Qwen3MoeForCausalLM", "tp_experts", (ExpertsCheck("num_experts", False, "moe_tp", "Qwen3MoeSparseMoeBlock"),)),
    # models/deepseek_v2.py DeepseekV2MoE: self.tp_size = get_parallel().tp_size; `> config.n_routed_experts`
    ("DeepseekV3ForCausalLM", "tp_experts", (ExpertsCheck("n_routed_experts", False, "tp", "DeepseekV2MoE"),)),
    # models/ernie45_moe_vl.py: max_moe_num_experts = max(moe_num_experts), moe_num_experts = config.moe_num_experts
    ("Ernie4_5_VLMoeForConditionalGeneration", "tp_experts",
     (ExpertsCheck("moe_num_experts", True, "tp", "Ernie4_5_VLMoeMoE"),)),
    ("LlamaForCausalLM", "tp_experts", ()),
]


@pytest.mark.parametrize("arch, column, expected", ROWS)
def test_architecture_rows_say_what_sglangs_source_says(arch, column, expected):
    assert getattr(facts.facts(arch), column) == expected


MODEL_TYPE_ROWS = [
    # configs/chatglm.py: ChatGLMConfig.__init__(..., multi_query_group_num=1, ...)
    ("chatglm", "kv_heads_default", ConfigDefault("ChatGLMConfig", "multi_query_group_num", 1)),
    # configs/olmo3.py: Olmo3Config replaces Olmo3ForCausalLM by Olmo2ForCausalLM in architectures
    ("olmo3", "architecture_rename", Rename("Olmo3ForCausalLM", "Olmo2ForCausalLM")),
    # configs/deepseek_v41.py:normalize_deepseek_v41_config: ["DeepseekV41ForCausalLM"] -> ["DeepseekV4ForCausalLM"]
    ("deepseek_v41", "architecture_rename", Rename("DeepseekV41ForCausalLM", "DeepseekV4ForCausalLM")),
    ("deepseek_v41", "pp_refusal", DSV41_PP),
    # configs/model_config.py:get_total_num_kv_heads: `if self.hf_config.model_type in ["nemotron-nas"]`
    ("nemotron-nas", "refuses_variable_gqa", True),
    ("nemotron-nas", "sizes_no_op_layers", True),
    # configs/zaya.py: ZayaConfig places attention by zaya_layers; mamba2_cache_params keeps prev_hs whole
    ("zaya", "even_layers_unless", "zaya_layers"),
    ("zaya", "whole_hidden_conv", True),
    # configs/kimi_linear.py / glm5_next.py: KimiLinearCacheParams(shape=..., layers=...) (no dtype from the
    # config); configs/qwen3_next.py, nemotron_h.py: mamba2_state_dtype(self)
    ("kimi_linear", "ssm_dtype_from_config", False),
    ("glm5_next", "ssm_dtype_from_config", False),
    ("granitemoehybrid", "ssm_dtype_from_config", False),  # Mamba2CacheParams(shape, layers): the default dtype
    ("qwen3_next", "ssm_dtype_from_config", True),
    ("nemotron_h", "ssm_dtype_from_config", True),
    # configs/deepseek_v41.py:normalize_deepseek_v41_config folds text_config and vision_config into the
    # root (vision_n_layers, class default 0); model_config.py: has_dsv41_vision =
    # model_type == "deepseek_v41" and vision_n_layers > 0
    ("deepseek_v41", "flat_multimodal", "vision_n_layers"),
    ("qwen3_next", "flat_multimodal", None),
    # utils/hf_transformers/common.py get_context_length reads getattr(config, key) for its five keys; WhisperConfig
    # defines none of them (its lengths are max_source_positions / max_target_positions): 2048
    ("whisper", "context_length_keys", "none"),
    ("qwen3_next", "context_length_keys", "class"),
    ("deepseek_v4", "strict_fields", None),  # checked below (configs/deepseek_v4.py DeepSeekV4Config)
]


@pytest.mark.parametrize("model_type, column, expected", [row for row in MODEL_TYPE_ROWS if row[2] is not None
                                                            or row[1] != "strict_fields"])
def test_model_type_rows_say_what_sglangs_source_says(model_type, column, expected):
    assert getattr(facts.model_type_facts(model_type), column) == expected


def test_strict_fields_are_deepseek_v4s_typed_fields():
    # configs/deepseek_v4.py: @dataclass(kw_only=True) class DeepSeekV4Config(PretrainedConfig), a strict
    # dataclass: kv_lora_rank: int = 512, q_lora_rank: int = 1024, compress_ratios: List[int], ...
    strict = facts.model_type_facts("deepseek_v4").strict_fields
    assert strict.config_class == "DeepSeekV4Config"
    fields = dict(strict.fields)
    assert (fields["kv_lora_rank"], fields["q_lora_rank"], fields["compress_ratios"]) == ("int", "int", "List[int]")
    assert "quantization_config" not in fields and len(fields) == 75
    assert facts.model_type_facts("deepseek_v41").strict_fields is None  # DeepseekV41Config: a DeepseekV3Config


# -- whole columns against the lists in SGLang's source ----------------------------------------------

def with_value(column: str, value) -> set[str]:
    return {arch for arch, f in facts.table().items() if getattr(f, column) == value}


@needs_source
def test_hybrid_swa_is_is_hybrid_swa_models_set():
    listed, conditional = tablegen.hybrid_swa_lists(SOURCE)
    assert {arch for arch, f in facts.table().items() if f.hybrid_swa != "no"} == listed
    assert with_value("hybrid_swa", "if_sliding") == conditional == {"LagunaForCausalLM", "BeamForCausalLM"}


@needs_source
def test_multimodal_is_model_configs_lists():
    listed, text_only, vision_and_audio = tablegen.multimodal_lists(SOURCE)
    table = facts.table()
    assert {arch for arch, f in table.items() if f.multimodal.listed} == listed & set(table)
    assert {arch for arch, f in table.items() if f.multimodal.text_only} == text_only == {
        "Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration", "Step3VLForConditionalGeneration",
        "InklingForConditionalGeneration"}
    assert {arch for arch, f in table.items() if f.multimodal.needs_vision_and_audio} == vision_and_audio == {
        "MiMoV2ForCausalLM"}
    assert with_value("multimodal_prefill_graph", True) == tablegen.module_set(
        SOURCE, "multimodal_breakable_cuda_graph_supported_model_archs", "configs", "model_config.py")


@needs_source
def test_every_other_column_is_what_sglangs_lists_say():
    # tablegen.check compares each list-decided column (hybrid_swa, multimodal, multimodal_prefill_graph,
    # tablegen.LISTS: _MAMBA_EXTRA_BUFFER_ARCHS, the model overrides' _register_for lists) and the names
    # and modules with the EntryClass names.
    assert tablegen.check(SOURCE) == {}


@needs_source
def test_every_name_sglangs_lists_hold_is_registered():
    # Why a name SGLang does not register gets no architecture rule (facts.py).
    lists = tablegen.hybrid_swa_lists(SOURCE)[0] | tablegen.module_set(
        SOURCE, "_MAMBA_EXTRA_BUFFER_ARCHS", "arg_groups", "overrides.py")
    for module in ("inkling", "deepseek_v2", "kimi_k3", "qwen3_5", "minimax_m3", "iquest_q1"):
        lists |= tablegen.registered_for(SOURCE, module)
    multimodal = set().union(*tablegen.multimodal_lists(SOURCE), tablegen.module_set(
        SOURCE, "multimodal_breakable_cuda_graph_supported_model_archs", "configs", "model_config.py"))
    assert lists <= set(facts.table())
    # but two names of multimodal_model_archs no models/*.py defines (the multimodal field says so)
    assert multimodal - set(facts.table()) == {"Grok1VForCausalLM", "Grok1AForCausalLM"}


# -- first_release: the oldest release registering each name ---------------------------------------------

WHEELS = os.environ.get("HFKV_SGLANG_WHEELS")  # a folder of unpacked wheels, sglang-<release>/ each


@pytest.mark.parametrize("arch, first", [
    # Read in the wheels (the first release whose srt/models/*.py names it in an EntryClass): DeepSeek V4's
    # class arrives with its pool in 0.5.12; the models the 0.5.12 oracle rows name that 0.5.12 has no class for.
    ("DeepseekV4ForCausalLM", "0.5.12"), ("MambaForCausalLM", "0.5.20"), ("Lfm2BidirectionalModel", "0.5.17"),
    ("KimiK3ForConditionalGeneration", "0.5.17"), ("MiniMaxM3SparseForConditionalGeneration", "0.5.16"),
    ("Qwen3_5MoeForConditionalGeneration", "0.5.9"), ("LlamaForCausalLM", "0.4.6.post5"),
])
def test_first_release_is_where_the_class_arrives(arch, first):
    assert facts.facts(arch).first_release == first


@pytest.mark.skipif(not WHEELS, reason="no unpacked SGLang wheels at hand (HFKV_SGLANG_WHEELS)")
def test_first_release_is_the_oldest_wheel_registering_the_name():
    assert {arch: f.first_release for arch, f in facts.table().items()} == {
        arch: first for arch, first in tablegen.first_releases(Path(WHEELS)).items() if arch in facts.table()}
