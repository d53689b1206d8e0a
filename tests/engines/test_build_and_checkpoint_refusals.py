"""Refusals that come from the engines' config classes, model builds and checkpoint loaders rather than from
their pools: a TP above a MoE's expert count, a strict config class given a null, mamba_ssm's raw format,
checkpoint quantisation methods an engine does not load; and GLM-5.3 Flash's prefill graph. Each verdict is
the engines' own (source cited; where the oracles ran them, their rows in tests/oracles/ agree).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hfkv.engines import experts, quantization, simulate
from hfkv.engines.contract import EngineInput
from hfkv.engines.sglang import facts as sglang_facts
from hfkv.engines.sglang import memory as sglang_memory
from hfkv.engines.vllm import facts as vllm_facts
from hfkv.engines.vllm import VllmRefusal
from hfkv.errors import UnsupportedModelError
from hfkv.inspection import inspect_config
from hfkv.model.options import Options

VLLM_033 = "vllm==0.33.0"  # these figures follow vLLM 0.33.0's rules (block 16 by default), derived by hand or from its oracle rows

ROOT = Path(__file__).resolve().parents[2]
ORACLES = ROOT / "tests" / "oracles"


def fixture(folder: str, **changes) -> dict:
    data = json.loads((ROOT / "fixtures" / folder / "config.json").read_text())
    data.update(changes)
    return data


def inspect(data: dict, model: str = "m", **options):
    return inspect_config(data, model=model, options=Options(**options))


def refusal(engine: str, report, **knobs) -> str:
    with pytest.raises(UnsupportedModelError) as err:
        simulate(report, engine=engine, **knobs)
    assert "\n" not in str(err.value)
    return str(err.value)


# -- a TP above the expert count -----------------------------------------------------------------------

QWEN3_MOE = "Qwen__Qwen3-30B-A3B"  # Qwen3MoeForCausalLM, num_experts 128


def test_both_engines_refuse_a_tp_above_the_expert_count():
    # vLLM qwen3_moe.py / SGLang models/qwen3_moe.py: `if self.tp_size > config.num_experts: raise
    # ValueError(f"Tensor parallel size {tp} is greater than the number of experts {n}.")`; 8 > 4
    four = fixture(QWEN3_MOE, num_experts=4, num_experts_per_tok=2)
    words = "Tensor parallel size 8 is greater than the number of experts 4."
    assert words in refusal("vllm", inspect(four, tensor_parallel_size=8))
    assert words in refusal("sglang", inspect(four, tensor_parallel_size=8))
    # TP 4 ≤ 4 experts, and 128 experts at TP 8: built
    simulate(inspect(four, tensor_parallel_size=4), engine=VLLM_033)
    simulate(inspect(fixture(QWEN3_MOE), tensor_parallel_size=8), engine="sglang")


def test_expert_parallelism_spares_sglangs_moe_tp_check_but_not_vllms():
    # SGLang's Qwen3MoeSparseMoeBlock compares get_parallel().moe_tp_size (TP over EP: 8 / 8 = 1); vLLM's compares
    # get_tensor_model_parallel_world_size() (8) whatever the EP group
    four = inspect(fixture(QWEN3_MOE, num_experts=4), tensor_parallel_size=8)
    simulate(four, engine="sglang", enable_expert_parallel=True)
    assert "greater than the number of experts 4" in refusal("vllm", four, enable_expert_parallel=True)


def test_a_tp_experts_cell_refuses_only_when_every_block_it_lists_fails():
    checks = experts.parse("num_experts@tp:A,num_experts@moe_tp:B")
    assert experts.refusal(checks, {"num_experts": 4}, {"tp": 8, "moe_tp": 8}).startswith(
        "Tensor parallel size 8 is greater than the number of experts 4.")
    assert experts.refusal(checks, {"num_experts": 4}, {"tp": 8, "moe_tp": 1}) is None  # B builds
    assert experts.refusal(checks, {}, {"tp": 8, "moe_tp": 8}) is None  # a dense config: no MoE block
    assert experts.refusal(experts.parse("n@?:C"), {"n": 1}, {"tp": 8}) is None  # unknown TP: no claim
    # Ernie 4.5 VL: max(config.moe_num_experts) over its text and vision experts; the message prints the list
    ernie = experts.parse("max:moe_num_experts@tp:Ernie4_5_VLMoeMoE")
    assert "number of experts [4, 2]." in experts.refusal(ernie, {"moe_num_experts": [4, 2]}, {"tp": 8})
    assert experts.parse("none") == () and experts.parse("?") is None
    with pytest.raises(ValueError):
        experts.parse("num_experts@pp:A")


# -- strict config classes -------------------------------------------------------------------------------


def test_sglang_refuses_a_null_in_deepseek_v4s_strict_config_class():
    # configs/deepseek_v4.py: DeepSeekV4Config declares kv_lora_rank: int = 512 on transformers' strict
    # PretrainedConfig; the oracle's row: "StrictDataclassFieldValidationError: Validation error for field
    # 'kv_lora_rank': TypeError: Field 'kv_lora_rank' expected int, got NoneType (value: None)". vLLM serves it.
    report = inspect(fixture("deepseek-ai__DeepSeek-V4-Flash", kv_lora_rank=None), kv_cache_dtype="fp8")
    message = refusal("sglang", report)
    assert "Field 'kv_lora_rank' expected int, got NoneType (value: None)" in message
    simulate(report, engine=VLLM_033)


# -- mamba_ssm's raw format ---------------------------------------------------------------------------------

RAW_MAMBA = json.loads((ORACLES / "configs" / "state-spaces__mamba-2.8b.json").read_text())


def test_vllm_refuses_a_config_without_model_type():
    # transformers' AutoConfig (vLLM's get_config): "Unrecognized model in <folder>. Should have a `model_type`
    # key in its config.json" (the oracle's rows)
    assert "Should have a `model_type` key in its config.json" in refusal("vllm", inspect(RAW_MAMBA))


def test_sglang_maps_mamba_ssms_raw_config_itself():
    # utils/hf_transformers/config.py _try_load_raw_mamba_config: MambaConfig(hidden_size=d_model 2560,
    # num_hidden_layers=n_layer 64, state_size=ssm_cfg.d_state or 16), MambaForCausalLM; expand 2 and conv 4
    # by MambaConfig's defaults: 64 × 5,120 × (16 × 4 B + 3 × 2 B) = 22,937,600 B per request (the oracle's row)
    out = simulate(inspect(RAW_MAMBA), engine="sglang")
    assert (out["bytes_per_token"], out["mamba_bytes_per_request"]) == (0, 22_937_600)
    # d_state is read (64: 64 × 5,120 × (64 × 4 + 3 × 2) = 85,852,160); expand is not: expand 4 cannot load
    wide = simulate(inspect({**RAW_MAMBA, "ssm_cfg": {"d_state": 64}}), engine="sglang")
    assert wide["mamba_bytes_per_request"] == 64 * 5_120 * (64 * 4 + 3 * 2)
    message = refusal("sglang", inspect({**RAW_MAMBA, "ssm_cfg": {"expand": 4}}))
    assert "expand 2 (the checkpoint's 4)" in message and "cannot load this checkpoint" in message


# -- checkpoint quantisation ---------------------------------------------------------------------------------

MLX = {"group_size": 64, "bits": 4}


def test_the_quantization_tables_are_the_engines_lists():
    # vLLM model_executor/layers/quantization/__init__.py QuantizationMethods (30 names, in order), the
    # deprecated two, and INC's override for auto-round checkpoints
    vllm = quantization.table(vllm_facts.QUANTIZATION_TABLE)
    assert list(vllm)[:3] == ["awq", "auto_awq", "fp8"] and len(vllm) == 31
    assert [m for m, how in vllm.items() if how == "deprecated"] == ["fbgemm_fp8", "fp_quant"]
    assert vllm["auto-round"] == "override:inc"
    # SGLang: the list its own error printed on the oracle's CUDA platform (tests/oracles/sglang-0.5.23-configs.jsonl)
    row = next(json.loads(line) for line in (ORACLES / "sglang-0.5.23-configs.jsonl").read_text().splitlines()
               if "mlx-4bit" in line)
    printed = row["error"].split("Must be one of ", 1)[1].rstrip(".")
    sglang = quantization.table(sglang_facts.QUANTIZATION_TABLE)
    assert str([m for m, how in sglang.items() if how == "listed"]) == printed
    assert sglang["gptq"] == "override:gptq_marlin"  # gptq/gptq.py GPTQMarlinConfig.override_quantization_method


def test_both_engines_refuse_mlx_checkpoints():
    report = inspect(fixture("Qwen__Qwen3-8B", quantization=MLX, quantization_config=MLX))
    # SGLang: no quant_method is the empty name (its mlx_q4 / mlx_q8 are registered on Apple's MPS only)
    assert "Unknown quantization method: . Must be one of ['fp8'," in refusal("sglang", report)
    # vLLM: no quant_method quantizes nothing; the bf16 model it builds cannot load MLX's packed weights
    message = refusal("vllm", report)
    assert "MLX's format" in message and "cannot load the packed weights" in message


def test_a_method_outside_an_engines_list_is_refused_in_its_words():
    report = inspect(fixture("Qwen__Qwen3-8B", quantization_config={"quant_method": "hqq"}))
    for engine in ("vllm", "sglang"):
        assert "Unknown quantization method: hqq. Must be one of [" in refusal(engine, report)
    # bitsandbytes: in SGLang's list, not in vLLM 0.33.0's
    bnb = inspect(fixture("Qwen__Qwen3-8B", quantization_config={"quant_method": "bitsandbytes"}))
    simulate(bnb, engine="sglang")
    assert "Unknown quantization method: bitsandbytes" in refusal("vllm", bnb)
    # vLLM's deprecated methods, in its words; fp8 (the DeepSeek checkpoints) loads in both
    old = inspect(fixture("Qwen__Qwen3-8B", quantization_config={"quant_method": "fbgemm_fp8"}))
    assert "fbgemm_fp8 is deprecated" in refusal("vllm", old)
    fp8 = inspect(fixture("Qwen__Qwen3-8B", quantization_config={"quant_method": "FP8"}))
    simulate(fp8, engine=VLLM_033)
    simulate(fp8, engine="sglang")


def test_a_checkpoint_method_is_read_as_the_engines_read_it():
    assert quantization.method({"quant_method": "Compressed_Tensors"}) == "compressed-tensors"
    assert quantization.method({"producer": {"name": "modelopt"}, "quant_algo": "NVFP4"}) == "modelopt"
    assert quantization.mlx_format(MLX) and not quantization.mlx_format({**MLX, "quant_method": "gptq"})
    # vLLM also reads a text sub-config's quantization_config; SGLang only the root's
    nested = {"text_config": {"quantization_config": {"quant_method": "fp8"}}}
    assert quantization.declared(nested, sub_configs=True) == {"quant_method": "fp8"}
    assert quantization.declared(nested, sub_configs=False) is None


# -- GLM-5.3 Flash's breakable prefill graph --------------------------------------------------------------


def test_glm53_flash_keeps_sglangs_prefill_graph():
    # arg_groups/cuda_graph_hook.py disable_breakable_cudagraph_if_incompatible: the KDA rule holds
    # `uses_kda_attention(...) and "Glm5NextForConditionalGeneration" not in architectures`, so GLM-5.3 Flash
    # keeps the prefill graph, and SGLang's default reserve keeps its 1,536 MiB (an MLA model's prefill graph,
    # memory_hook.py) where every other KDA model drops it
    glm = EngineInput.of(inspect(fixture("zai-org__GLM-5.3-Flash-transformers-defaults")))
    kimi = EngineInput.of(inspect(fixture("moonshotai__Kimi-Linear-48B-A3B-Instruct-transformers-defaults")))
    assert sglang_memory.traits(glm).prefill_graph is True
    assert sglang_memory.traits(kimi).prefill_graph is False
