"""The vLLM 0.33.0 tables (``hfkv/engines/vllm/facts.py``): every cell filled with a known value, the
architectures exactly vLLM's registry names, and each column checked on a few rows against vLLM 0.33.0's
own source (``pip download vllm==0.33.0 --no-deps``; file and line cited beside each row, paths under
``vllm/``). When the unpacked source is beside the checkout (``../research/vllm-reserve/src``, or
``$VLLM_SRC``), the columns ``tablegen`` derives are also regenerated from it and compared whole.
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path

import pytest

from hfkv.engines import tables
from hfkv.engines.experts import ExpertsCheck
from hfkv.engines.vllm import facts as vf
from hfkv.engines.vllm import tablegen

WORK = Path(__file__).resolve().parents[4]
SHARED_ARCHS = WORK / "shared" / "engine-archs" / "vllm-0.33.0.tsv"
VLLM_SRC = Path(os.environ.get("VLLM_SRC", WORK / "research" / "vllm-reserve" / "src"))
TABLES = [(vf.TABLE, vf.PARSERS, vf.ArchFacts, ("registry", "architecture")),
          (vf.MODEL_TYPES_TABLE, vf.MODEL_TYPE_PARSERS, vf.ModelTypeFacts, ("model_type",)),
          (vf.OTHER_TABLE, vf.OTHER_PARSERS, vf.OtherArchFacts, ("architecture",))]


# -- the tables as tables -----------------------------------------------------------------------------


@pytest.mark.parametrize("path, parsers, record, order", TABLES, ids=lambda v: getattr(v, "name", ""))
def test_every_cell_is_filled_with_a_value_its_column_knows(path, parsers, record, order):
    header, rows = tables.read_table(path)
    assert sorted(header) == sorted(f.name for f in fields(record)) == sorted(parsers)
    bad = []
    for row in rows:
        assert len(row) == len(header), row
        for column, cell in zip(header, row):
            try:
                if not cell or cell == tablegen.UNKNOWN:
                    raise ValueError("empty or unknown")
                parsers[column](cell)
            except ValueError as error:
                bad.append(f"{row[header.index(order[-1])]}.{column} = {cell!r}: {error}")
    assert not bad, bad


@pytest.mark.parametrize("path, parsers, record, order", TABLES, ids=lambda v: getattr(v, "name", ""))
def test_rows_are_sorted_and_unique(path, parsers, record, order):
    header, rows = tables.read_table(path)
    keys = [tuple(row[header.index(column)] for column in order) for row in rows]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_supports_pp_stays_the_last_column():
    header, _ = tables.read_table(vf.TABLE)
    assert header[:3] == ["registry", "architecture", "vllm_module"] and header[-1] == "supports_pp"


def test_the_architectures_are_vllms_registry_names():
    # registry.py: 124 _TEXT_GENERATION_MODELS, 127 _MULTIMODAL_MODELS, 68 _SPECULATIVE_DECODING_MODELS.
    registries = [f.registry for f in vf.table().values()]
    assert (registries.count("text_generation"), registries.count("multimodal"),
            registries.count("speculative_decoding")) == (124, 127, 68)
    if not SHARED_ARCHS.is_file():
        pytest.skip(f"{SHARED_ARCHS} not present")
    header, rows = tables.read_table(SHARED_ARCHS)
    assert {(row[0], row[1], row[2]) for row in rows} == {
        (f.registry, f.architecture, f.vllm_module) for f in vf.table().values()}


def test_the_other_names_lie_outside_the_generation_registries():
    others = vf.others()
    assert not set(others) & set(vf.table())
    # registry.py: 61 names only in the pooling tables, 23 _TRANSFORMERS_SUPPORTED_MODELS, 50
    # _PREVIOUSLY_SUPPORTED_MODELS; transformers 5.20.2: 133 fallback classes (tests/oracles/README.md).
    assert len(vf.pooling_only()) == 61 and len(vf.transformers_registered()) == 23
    assert len(vf.transformers_fallback()) == 133
    assert sum(f.supported_until is not None for f in others.values()) == 50


def test_a_bad_cell_is_named_with_its_table_line_and_column(tmp_path):
    header, rows = tables.read_table(vf.MODEL_TYPES_TABLE)
    broken = tmp_path / "model-types.tsv"
    broken.write_text("\t".join(header) + "\n" + "gemma2\tmaybe\tno\n")
    with pytest.raises(ValueError, match=r"model-types.tsv line 2, column float16: 'maybe' is not yes or no"):
        list(tables.parse_rows(broken, vf.MODEL_TYPE_PARSERS, vf.ModelTypeFacts))


@pytest.mark.skipif(not (VLLM_SRC / "vllm" / "model_executor" / "models" / "registry.py").is_file(),
                    reason="vLLM 0.33.0's unpacked source is not beside the checkout (set VLLM_SRC)")
def test_the_derived_columns_regenerate_from_vllms_source_unchanged():
    for path, text in tablegen.generate(VLLM_SRC, None).items():
        assert text == path.read_text(encoding="utf-8"), f"{path.name} differs from what vLLM's source gives"


# -- one test per column, a few rows each, as vLLM 0.33.0's source has them ----------------------------


def column(name: str, arch: str):
    return getattr(vf.facts(arch), name)


@pytest.mark.parametrize("arch, expected", [
    ("MambaForCausalLM", True),  # model_executor/models/mamba.py:173 (…, IsAttentionFree, SupportsPP, …)
    ("FalconMambaForCausalLM", True),  # registry.py:109 ("mamba", "MambaForCausalLM")
    ("Mamba2ForCausalLM", True),  # mamba2.py:167 (nn.Module, HasInnerState, IsAttentionFree, …)
    ("JambaForCausalLM", False),  # jamba.py:376: IsHybrid, not IsAttentionFree
    ("LlamaForCausalLM", False),
])
def test_attention_free(arch, expected):
    assert column("attention_free", arch) is expected


@pytest.mark.parametrize("arch, expected", [
    ("JambaForCausalLM", True),  # jamba.py:376 (…, SupportsPP, IsHybrid)
    ("Qwen3NextForCausalLM", True),  # qwen3_next.py:813 (…, QwenNextMixtureOfExperts, IsHybrid, …)
    ("Zamba2ForCausalLM", True),  # zamba2.py:833 Zamba2ForCausalLM(nn.Module, HasInnerState, IsHybrid)
    ("MambaForCausalLM", False),
    ("GptOssForCausalLM", False),
])
def test_is_hybrid(arch, expected):
    assert column("is_hybrid", arch) is expected


@pytest.mark.parametrize("arch, key, default", [
    # models/config.py MODELS_CONFIG_MAP: "NemotronHForCausalLM": NemotronHForCausalLMConfig, whose
    # update_mamba_ssm_cache_dtype takes getattr(hf_config, "mamba_ssm_cache_dtype", "float32")
    ("NemotronHForCausalLM", "mamba_ssm_cache_dtype", "fp32"),
    ("NemotronHPuzzleForCausalLM", "mamba_ssm_cache_dtype", "fp32"),
    # "Qwen3_5ForConditionalGeneration": Qwen3_5ForConditionalGenerationConfig: hf_text_config.mamba_ssm_dtype
    ("Qwen3_5ForConditionalGeneration", "mamba_ssm_dtype", "auto"),
    ("Qwen3_5MoeForCausalLM", "mamba_ssm_dtype", "auto"),
    ("Qwen3NextForCausalLM", None, "auto"),  # no MODELS_CONFIG_MAP entry
    ("JambaForCausalLM", None, "auto"),
    # "NemotronH_Nano_VL_V2": NemotronHNanoVLV2Config (the same rule on hf_config.text_config); the Omni V3
    # names map to that class (registry.py:551-553) but have no MODELS_CONFIG_MAP entry of their own, and
    # config/vllm.py:2754 looks up the config's architecture name: their SSM state stays auto
    ("NemotronH_Nano_VL_V2", "mamba_ssm_cache_dtype", "fp32"),
    ("NemotronH_Omni_Reasoning_V3", None, "auto"),
    # config.py:1010 Qwen4ExpForConditionalGenerationConfig(Qwen3_5ForConditionalGenerationConfig) runs the
    # Qwen3.5 hook first; the Qwen3.5 MTP drafts have no entry
    ("Qwen4ExpForConditionalGeneration", "mamba_ssm_dtype", "auto"),
    ("Qwen3_5MTP", None, "auto"),
])
def test_ssm_dtype(arch, key, default):
    assert column("ssm_dtype", arch) == vf.SsmDtypeRule(key, default)


def test_ssm_dtype_rule_reads_the_config_key_else_its_default():
    rule = vf.facts("NemotronHForCausalLM").ssm_dtype
    assert rule.resolve({}) == "fp32" and rule.resolve({"mamba_ssm_cache_dtype": "bfloat16"}) == "bf16"
    assert vf.facts("Qwen3_5ForCausalLM").ssm_dtype.resolve({}) == "auto"
    assert vf.facts("LlamaForCausalLM").ssm_dtype.resolve({"mamba_ssm_dtype": "float32"}) == "auto"


@pytest.mark.parametrize("arch, expected", [
    ("Qwen3NextForCausalLM", True),  # qwen3_next.py:501 QwenGatedDeltaNetAttention(…)
    ("Qwen3_5ForCausalLM", True),  # qwen3_5.py:51 imports QwenGatedDeltaNetAttention
    ("OlmoHybridForCausalLM", False),  # olmo_hybrid.py:236 OlmoHybridGatedDeltaNetAttention(…): no checkpoint
    ("LlamaForCausalLM", None),  # builds no GDN layer
    ("KimiLinearForCausalLM", None),  # its linear layers are KDA (kda_checkpoint.py), not GDN
])
def test_gdn_prefill_checkpoint(arch, expected):
    assert column("gdn_prefill_checkpoint", arch) is expected


@pytest.mark.parametrize("arch, expected", [
    ("FalconForCausalLM", "model"),  # falcon.py:173 and :189 build Attention(...) without cache_config
    ("LlamaForCausalLM", "cache"),
    ("BloomForCausalLM", "cache"),
])
def test_kv_dtype(arch, expected):
    assert column("kv_dtype", arch) == expected


@pytest.mark.parametrize("arch, expected", [
    ("GptOssForCausalLM", "all"),  # gpt_oss.py:186 Attention(…, sinks=self.sinks) on every layer
    ("GraniteForCausalLM", "config"),  # granite.py:109 has_sink = getattr(config, "attention_sinks", …)
    ("MiMoV2FlashForCausalLM", "config"),  # mimo_v2.py:418 add_swa_attention_sink_bias from the config
    ("FlintForCausalLM", "all"),  # models/flint/model.py:296 make_attention_sink(...) in every layer, :306 sinks=
    ("LlamaForCausalLM", "no"),
])
def test_attention_sinks(arch, expected):
    assert column("attention_sinks", arch) == expected


@pytest.mark.parametrize("arch, expected", [
    ("BloomForCausalLM", "always"),  # bloom.py:123 alibi_slopes = _get_alibi_slopes(...), :131 Attention(…)
    ("FalconForCausalLM", "config"),  # falcon.py:161 self.use_alibi = config.alibi
    ("Step1ForCausalLM", "sqrt"),  # step1.py:145 use_alibi_sqrt=True (only triton_attn.py:401 supports it)
    ("LlamaForCausalLM", "no"),
])
def test_alibi(arch, expected):
    assert column("alibi", arch) == expected


@pytest.mark.parametrize("arch, expected", [
    ("MiniMaxM3SparseForCausalLM", True),  # registry.py: ("vllm.models.minimax_m3", …): MSA, 128-token pages
    ("MiniMaxM3SparseForConditionalGeneration", True),
    ("MiniMaxM2ForCausalLM", False),
])
def test_sparse_128_blocks(arch, expected):
    assert column("sparse_128_blocks", arch) is expected


@pytest.mark.parametrize("arch, expected", [
    ("UnlimitedOCRForCausalLM", True),  # models/config.py MODELS_CONFIG_MAP: UnlimitedOCRForCausalLMConfig
    ("Gemma4ForConditionalGeneration", False),
    ("LlamaForCausalLM", False),
])
def test_forced_fa4(arch, expected):
    assert column("forced_fa4", arch) is expected


@pytest.mark.parametrize("arch, expected", [
    # models/config.py MODELS_CONFIG_MAP: "Gemma4ForCausalLM" / "Gemma4ForConditionalGeneration" /
    # "Gemma4UnifiedForConditionalGeneration": Gemma4Config (:301, heterogeneous head dimensions)
    ("Gemma4ForCausalLM", True),
    ("Gemma4ForConditionalGeneration", True),
    ("Gemma4UnifiedForConditionalGeneration", True),
    ("Gemma3ForConditionalGeneration", False),
])
def test_mixed_heads_fa4(arch, expected):
    assert column("mixed_heads_fa4", arch) is expected


@pytest.mark.parametrize("arch, expected", [
    # models/kimi_k3/nvidia/model.py:744 assert mla_use_nope; transformers_utils/configs/kimi_linear.py:47
    # defaults it to False
    ("KimiLinearForCausalLM", True),
    # models/kimi_k3: the same decoder layers on the KimiLinearConfig text config
    ("KimiK3ForConditionalGeneration", True),
    ("DeepseekV3ForCausalLM", False),
])
def test_nope_only_mla(arch, expected):
    assert column("nope_only_mla", arch) is expected


@pytest.mark.parametrize("arch, expected", [
    ("ChatGLMModel", vf.ConfigAttribute("ChatGLMConfig", "original_rope")),  # chatglm.py:107 config.original_rope
    ("ChatGLMForConditionalGeneration", vf.ConfigAttribute("ChatGLMConfig", "original_rope")),
    # glm4v.py:379 GLM4VModel(ChatGLMModel): chatglm.py's GLMTransformer, the same attribute
    ("GLM4VForCausalLM", vf.ConfigAttribute("ChatGLMConfig", "original_rope")),
    ("LlamaForCausalLM", None),
])
def test_required_config_attr(arch, expected):
    assert column("required_config_attr", arch) == expected


@pytest.mark.parametrize("arch, expected", [
    # qwen3_moe.py:146-158 Qwen3MoeSparseMoeBlock: self.tp_size = get_tensor_model_parallel_world_size();
    # `if self.tp_size > config.num_experts: raise ValueError("Tensor parallel size ... number of experts ...")`
    ("Qwen3MoeForCausalLM", (ExpertsCheck("num_experts", False, "tp", "Qwen3MoeSparseMoeBlock"),)),
    # minimax_m2.py:80 MiniMaxM2MoE: `if self.tp_size > config.num_local_experts`
    ("MiniMaxM2ForCausalLM", (ExpertsCheck("num_local_experts", False, "tp", "MiniMaxM2MoE"),)),
    # lfm2_moe.py:112: self.n_routed_experts = config.num_experts; `if self.tp_size > self.n_routed_experts`
    ("Lfm2MoeForCausalLM", (ExpertsCheck("num_experts", False, "tp", "Lfm2MoeSparseMoeBlock"),)),
    ("DeepseekV3ForCausalLM", ()),  # deepseek_v2.py's MoE block checks nothing of the kind
    ("MixtralForCausalLM", ()),
])
def test_tp_experts(arch, expected):
    assert column("tp_experts", arch) == expected


@pytest.mark.parametrize("arch, expected", [
    ("MambaForCausalLM", True),  # mamba.py:173 (…, SupportsPP, …), forward(…, intermediate_tensors, …)
    ("Mamba2ForCausalLM", False),  # mamba2.py:167: no SupportsPP
    ("Zamba2ForCausalLM", False),
])
def test_supports_pp(arch, expected):
    assert column("supports_pp", arch) is expected


@pytest.mark.parametrize("arch, expected", [
    ("Qwen2ForCausalLM", "text_generation"), ("Gemma3ForConditionalGeneration", "multimodal"),
    ("Qwen3_5MTP", "speculative_decoding"),
])
def test_registry(arch, expected):
    assert column("registry", arch) == expected


# -- the model-type table ---------------------------------------------------------------------------------


@pytest.mark.parametrize("model_type, expected", [
    # config/model.py:2398 _FLOAT16_NOT_SUPPORTED_MODELS: gemma2, gemma3, gemma3_text, glm4
    ("gemma2", False), ("gemma3", False), ("gemma3_text", False), ("glm4", False),
    ("gemma4", True), ("llama", True),  # llama: no row, the default
])
def test_float16(model_type, expected):
    assert vf.model_type_facts(model_type).float16 is expected


@pytest.mark.parametrize("model_type, config, expected", [
    # model_arch_config_convertor.py:357 MM_PREFIX_LM_MODELS = ("bagel", "gemma3", "molmo2", "moondream3", "paligemma")
    ("gemma3", {}, True), ("paligemma", {}, True), ("gemma3_text", {}, False),
    # :781 Gemma4ModelArchConfigConvertor: hf_text_config.use_bidirectional_attention == "vision"
    ("gemma4", {"use_bidirectional_attention": "vision"}, True), ("gemma4", {}, False),
    # :842 MODEL_ARCH_CONFIG_CONVERTORS "diffusion_gemma": Gemma4ModelArchConfigConvertor
    ("diffusion_gemma", {"use_bidirectional_attention": "vision"}, True),
    ("llama", {}, False),
])
def test_mm_prefix(model_type, config, expected):
    rule = vf.model_type_facts(model_type).mm_prefix
    assert (rule is not None and rule.applies(config)) is expected


# -- the other-architectures table ------------------------------------------------------------------------


@pytest.mark.parametrize("arch, pooling, route, until", [
    ("BertModel", True, None, None),  # registry.py _EMBEDDING_MODELS only
    ("Olmo3ForCausalLM", False, "registered:TransformersForCausalLM", None),  # _TRANSFORMERS_SUPPORTED_MODELS
    ("FlexOlmoForCausalLM", False, "registered:TransformersMoEForCausalLM", None),
    ("ZayaForCausalLM", False, "fallback", None),  # transformers 5.20.2 exports it; no vLLM class
    ("RWForCausalLM", False, None, "0.28.0"),  # _PREVIOUSLY_SUPPORTED_MODELS
    ("BambaForCausalLM", False, "fallback", "0.23.0"),  # dropped, but the backend's fallback runs first
])
def test_other_architectures(arch, pooling, route, until):
    found = vf.other_facts(arch)
    assert (found.pooling_only, found.transformers_backend, found.supported_until) == (pooling, route, until)


# interfaces_base.get_attn_type of each pooling-only class, asked in vLLM's venv: "encoder_only" for these seven
# (@attn_type("encoder_only"): bert.py, lfm2.py:500, modernbert.py, openai_privacy_filter.py, roberta.py)
ENCODER_ONLY_POOLING = {"BertForMaskedLM", "BertForTokenClassification", "Lfm2BidirectionalModel",
                        "ModernBertForTokenClassification", "OpenAIPrivacyFilterForTokenClassification",
                        "RobertaForTokenClassification", "XLMRobertaForTokenClassification"}


def test_pooling_kv_cache_is_none_exactly_for_the_encoder_only_pooling_classes():
    cells = {arch: (f.pooling_only, f.pooling_kv_cache) for arch, f in vf.others().items()}
    assert {arch for arch, (_, cache) in cells.items() if cache == "none"} == ENCODER_ONLY_POOLING
    assert all((cache is None) == (not pooling) for pooling, cache in cells.values())


def test_pooling_supports_pp():
    # interfaces.supports_pp of the loaded class: lfm2.py Lfm2BidirectionalModel(Lfm2Model) has no SupportsPP;
    # LlamaModel is registered as LlamaForCausalLM (SupportsPP)
    assert vf.other_facts("Lfm2BidirectionalModel").pooling_supports_pp is False
    assert vf.other_facts("LlamaModel").pooling_supports_pp is True
    assert vf.other_facts("Terratorch").pooling_supports_pp is None  # does not import in the venv: unknown
    assert vf.other_facts("Olmo3ForCausalLM").pooling_supports_pp is None  # not pooling-only


def test_resolved_architecture_is_the_first_the_registries_hold():
    # registry.py inspect_model_cls walks the config's list in order.
    assert vf.resolved_architecture(["NoSuchModel", "LlamaForCausalLM", "Qwen2ForCausalLM"]) == "LlamaForCausalLM"
    assert vf.model_facts(["ZayaForCausalLM"]) is None and vf.model_facts(None) is None
