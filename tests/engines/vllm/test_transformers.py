"""vLLM mode for models vLLM 0.33.0 serves through its Transformers modeling backend.

Two halves: every row of ``tests/oracles/transformers-backend-vllm-0.33.0.jsonl`` (vLLM's own start-up
code run by the oracle, tests/oracles/README.md) driven as a user would and compared figure by figure
(``mismatches`` of tests/engines/vllm/test_oracle.py); and the decision itself, with expected values read from vLLM's code
(file and function cited beside each) or derived by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from engines.vllm.test_oracle import capability, kv_arg, mismatches, vllm_reason

from hfkv.engines import simulate
from hfkv.engines.vllm import transformers as tfb
from hfkv.engines.vllm.facts import architectures as vllm_architectures
from hfkv.engines.vllm.models import VllmRefusal, registry_names
from hfkv.errors import HfkvError, UnsupportedModelError
from hfkv.inspection import inspect_config
from hfkv.model.options import Options
from hfkv.model.specs import FullAttention, LayerSpec, MambaState, ShortConvState, SlidingWindow

VLLM_033 = "vllm==0.33.0"  # these figures follow vLLM 0.33.0's rules (block 16 by default), derived by hand or from its oracle rows

TESTS = Path(__file__).resolve().parents[2]
ROWS = TESTS / "oracles" / "transformers-backend-vllm-0.33.0.jsonl"
CONFIGS = TESTS / "oracles" / "transformers-configs"  # configs no fixture holds
FIXTURES = TESTS.parent / "fixtures"
OLMO3 = FIXTURES / "allenai__Olmo-3-7B-Instruct-transformers-defaults" / "config.json"
GiB = 1 << 30

# Rows that say nothing about vLLM's arithmetic: the oracle could not build the model offline.
NOT_COMPARABLE = {
    "meta-llama__Llama-3.2-11B-Vision-transformers-defaults.json": "the multimodal backend loads the repo's image "
    "processor, which a config-only folder lacks (OSError); hfkv refuses the multimodal backend as not modelled",
}
# vLLM refuses an explicit bfloat16 KV on these float16 models (VllmConfig._reject_mismatched_float_kv_cache);
# hfkv's vLLM mode refuses them with vLLM's message (test_float16_models_refuse_an_explicit_bf16_kv).
FLOAT16_MODELS = ("EleutherAI__pythia-1.4b-transformers-defaults.json", "microsoft__phi-2-transformers-defaults.json")


def rows() -> list[dict]:
    return [json.loads(line) for line in ROWS.read_text().splitlines() if line.strip()]


def config_of(name: str) -> dict:
    """A row's config: this project's copy in transformers-configs/, else the fixture of that name."""
    path = CONFIGS / name
    if not path.is_file():
        path = FIXTURES / name.removesuffix(".json") / "config.json"
    return json.loads(path.read_text())


def run_hfkv(row: dict):
    """hfkv's vLLM mode for the row (config, TP, KV dtype, budget, GPU generation; vLLM's own max length)."""
    options = Options(kv_cache_dtype=kv_arg(row), tensor_parallel_size=row["tp"])
    try:
        report = inspect_config(config_of(row["config"]), model=row["config"], options=options)
        out = simulate(report, engine=VLLM_033, budget_bytes=row["budget_bytes"], max_model_len=None,
                       compute_capability=capability(row))
    except HfkvError as err:
        return None, err
    return out, None


def comparable(row: dict) -> bool:
    return row["config"] not in NOT_COMPARABLE


def test_every_transformers_backend_row_is_matched():
    """40 rows, 10 configs × TP 1/8 × bf16/fp8: 4 not buildable offline, 36 compared."""
    all_rows = rows()
    assert len(all_rows) == 40
    failures, compared = [], 0
    for row in filter(comparable, all_rows):
        compared += 1
        out, err = run_hfkv(row)
        name = f"{row['config']} TP{row['tp']} {row['kv_cache_dtype_arg']}"
        failures += [f"{name}: {diff}" for diff in mismatches(row, out, err)]
    assert compared == 36
    assert not failures, "\n".join(failures)


def test_rows_cover_served_and_refused_models():
    """The sweep is not vacuous: rows with vLLM's numbers (sliding, dense, MoE) and with its refusals."""
    served = {r["config"] for r in rows() if r.get("num_blocks") and comparable(r)}
    assert {"allenai__Olmo-3-7B-Instruct-transformers-defaults.json", "Zyphra__ZAYA1-8B-transformers-defaults.json",
            "microsoft__phi-2-transformers-defaults.json",
            "EleutherAI__pythia-1.4b-transformers-defaults.json"} <= served
    reasons = {vllm_reason(r["error"]) for r in rows() if r.get("error") and comparable(r)}
    assert any(r.startswith("Layer 0 (linear_attention) does not") for r in reasons)
    assert any(r.startswith("Model architectures ['GPTNeoForCaus") for r in reasons)


def test_float16_models_refuse_an_explicit_bf16_kv():
    """The 4 rows vLLM refused (bf16 KV asked of a float16 model): hfkv refuses them with vLLM's words."""
    refused = [r for r in rows() if r["config"] in FLOAT16_MODELS and r["kv_cache_dtype_arg"] == "bf16"]
    assert len(refused) == 4
    for row in refused:
        assert 'kv_cache_dtype="bfloat16" is incompatible with dtype="float16"' in row["error"]
        out, err = run_hfkv(row)
        assert out is None and 'kv_cache_dtype="bfloat16" is incompatible with dtype="float16"' in str(err)
        assert not mismatches(row, out, err)


def test_not_comparable_rows_really_failed_offline():
    listed = [r for r in rows() if r["config"] in NOT_COMPARABLE]
    assert len(listed) == 4
    assert all("Can't load image processor" in r["error"] and r.get("num_blocks") is None for r in listed)


# -- the decision, from vLLM's code ----------------------------------------------------------------


def report_of(config: dict, **options):
    return inspect_config(config, model="test/model", options=Options(**options))


def vllm(config: dict, budget: int = 40 * GiB, **knobs) -> dict:
    return simulate(report_of(config), engine=VLLM_033, budget_bytes=budget, max_model_len=None, **knobs)


def fake(archs, layers, model_type="m", **config):
    """A report-like object for the decision functions (architectures, layer specs, text config)."""
    return SimpleNamespace(architectures=archs, layer_specs=layers, model_type=model_type,
                           config={"model_type": model_type, **config})


def attention(index=0, kv=8, dim=128):
    return LayerSpec(index=index, kind="full", parts=[FullAttention(kv_heads=kv, head_dim=dim)])


NATIVE = vllm_architectures()


def test_tables_do_not_overlap_vllms_own_classes():
    """FALLBACK holds names vLLM registers nowhere, REGISTERED and POOLING names outside the generation
    tables (vllm/0.33.0.tsv), as the table script selects them."""
    from hfkv.engines.vllm.facts import pooling_only, transformers_fallback, transformers_registered

    FALLBACK, REGISTERED, POOLING_ARCHS = transformers_fallback(), transformers_registered(), pooling_only()
    assert not (FALLBACK | set(REGISTERED) | POOLING_ARCHS) & set(NATIVE)
    assert not FALLBACK & (set(REGISTERED) | POOLING_ARCHS)
    assert len(FALLBACK) == 133 and len(REGISTERED) == 23


def test_registered_to_the_backend_or_resolved_through_it():
    # registry.py _TRANSFORMERS_SUPPORTED_MODELS: Olmo3ForCausalLM -> TransformersForCausalLM,
    # FlexOlmoForCausalLM -> TransformersMoEForCausalLM.
    assert tfb.served(fake(["Olmo3ForCausalLM"], []), NATIVE) == "TransformersForCausalLM"
    assert tfb.served(fake(["FlexOlmoForCausalLM"], []), NATIVE) == "TransformersMoEForCausalLM"
    # _try_resolve_transformers(architectures[0]): ZayaForCausalLM is transformers', backend compatible.
    assert tfb.served(fake(["ZayaForCausalLM"], []), NATIVE) == "TransformersForCausalLM"
    # _get_transformers_backend_cls: "MoE" when get_num_experts() > 0 (the oracle rows: ZAYA1 with 16 experts).
    assert tfb.served(fake(["ZayaForCausalLM"], [], num_experts=16), NATIVE) == "TransformersMoEForCausalLM"
    # inspect_model_cls: the fallback runs only when no architecture is registered; LlamaForCausalLM is.
    assert tfb.served(fake(["ZayaForCausalLM", "LlamaForCausalLM"], []), NATIVE) is None
    assert tfb.served(fake(["LlamaForCausalLM"], []), NATIVE) is None
    # ... and the pooling tables count as registered (registry.py _VLLM_MODELS holds them too).
    assert tfb.served(fake(["ZayaForCausalLM", "BertModel"], []), registry_names()) is None
    # Only the first architecture is resolved through transformers.
    assert tfb.served(fake(["NoSuchForCausalLM", "ZayaForCausalLM"], []), NATIVE) is None
    # GPTNeoForCausalLM: _supports_attention_backend False and no ALL_ATTENTION_FUNCTIONS.get_interface( in
    # modeling_gpt_neo.py, so _try_resolve_transformers returns None.
    assert tfb.served(fake(["GPTNeoForCausalLM"], []), NATIVE) is None


def test_refusal_texts_follow_the_registry():
    gpt_neo = {"architectures": ["GPTNeoForCausalLM"], "model_type": "gpt_neo", "hidden_size": 768,
               "num_layers": 12, "num_heads": 12, "max_position_embeddings": 2048}
    with pytest.raises(VllmRefusal, match=r"Model architectures \['GPTNeoForCausalLM'\] are not supported for now"):
        vllm(gpt_neo)
    # _try_resolve_transformers reads auto_map's AutoModel class only with trust_remote_code.
    with pytest.raises(VllmRefusal, match=r"\['OpenELMForCausalLM'\] are the repository's own code"):
        vllm(json.loads((FIXTURES / "apple__OpenELM-270M" / "config.json").read_text()))
    # _raise_for_unsupported, reached only after the fallback declined: RWForCausalLM is not transformers'.
    falcon = json.loads((FIXTURES / "tiiuae__falcon-40b" / "config.json").read_text())
    with pytest.raises(VllmRefusal, match="RWForCausalLM was supported in vLLM until v0.28.0"):
        vllm(falcon)


def test_a_layer_without_attention_is_refused_with_its_layer_type():
    # base.py _create_attention_instances: "Layer {i} ({layer_types[i]}) does not dispatch ...", or
    # "Layer {i} does not ..." when the config has no layer_types.
    layers = [attention(), LayerSpec(index=1, kind="mamba", parts=[MambaState(version=2, num_heads=8, head_dim=64,
                                                                                state_size=128, conv_kernel=4)])]
    typed = fake(["ZayaForCausalLM"], layers, layer_types=["full_attention", "linear_attention"])
    assert tfb.refusal(typed, typed.config, "TransformersForCausalLM").startswith(
        "Layer 1 (linear_attention) does not dispatch through the Transformers attention interface")
    untyped = fake(["ZayaForCausalLM"], layers)
    assert tfb.refusal(untyped, untyped.config, "TransformersForCausalLM").startswith("Layer 1 does not dispatch")
    # BambaConfig.attribute_map: layer_types -> layers_block_type, computed from attn_layer_indices.
    assert tfb.layer_types({"num_hidden_layers": 3, "attn_layer_indices": [1]}) == [
        "linear_attention", "full_attention", "linear_attention"]


def test_windows_per_layer_type():
    # base.py: per_layer_sliding_window = sliding_window on "sliding_attention" layers; arg_utils.py
    # create_engine_config: the model-wide window only when layer_types is absent or all sliding.
    layers = [attention(0), attention(1)]
    mixed = {"sliding_window": 4096, "layer_types": ["sliding_attention", "full_attention"]}
    assert [w for _, w in tfb.layer_windows(fake(["X"], layers), mixed)] == [4096, None]
    assert [w for _, w in tfb.layer_windows(fake(["X"], layers), {"sliding_window": 4096})] == [4096, 4096]
    # model.py: a window of 0 is disable_sliding_window.
    assert [w for _, w in tfb.layer_windows(fake(["X"], layers), {"sliding_window": 0})] == [None, None]


def test_olmo3_by_hand():
    """OLMo 3 7B: 32 layers, 32 KV heads × 128, Olmo3Config's pattern (every 4th layer full: 8 full, 24
    sliding at 4096), bf16, TP 1, 40 GiB, H200 (FLASH_ATTN, block 16)."""
    out = vllm(json.loads(OLMO3.read_text()))
    page = 16 * 32 * (128 + 128) * 2  # block 16 × K+V of 32 heads × 128 × 2 B = 262144 B per layer
    # get_kv_cache_groups: 24 sliding / 8 full, 24 < 1.5 × 8 fails, so group size 8: 3 sliding + 1 full groups.
    assert len(out["kv_cache_groups"]) == 4
    assert out["bytes_per_block"] == 8 * page == 2097152
    assert out["num_blocks"] == 40 * GiB // 2097152 == 20480
    # full: 65536 / 16 = 4096 blocks; sliding: ceil((4096 − 1 + 2 × 8192) / 16) + 1 = 1281 blocks, × 3 groups.
    assert out["blocks_per_request"] == 4096 + 3 * 1281 == 7939
    assert out["max_concurrency"] == round(20480 / 7939, 2) == 2.58


def test_zaya_conv_state_gets_no_cache():
    """ZAYA1's CCA layers: the backend builds one Attention (2 KV heads × 128) and nothing for the conv
    states. fp8, TP 1: page 16 × 2 × 256 × 1 B = 8192 B per layer, 40 layers = 327680 B per block."""
    config = json.loads((FIXTURES / "Zyphra__ZAYA1-8B-transformers-defaults" / "config.json").read_text())
    report = report_of(config, kv_cache_dtype="fp8")
    assert any(isinstance(p, ShortConvState) for p in report.layer_specs[0].parts)
    out = simulate(report, engine=VLLM_033, budget_bytes=40 * GiB, max_model_len=None)
    assert out["bytes_per_block"] == 40 * 16 * 2 * (128 + 128) * 1 == 327680
    assert any("get no vLLM cache" in line for line in out["assumptions"])


def test_what_is_not_modelled_is_said_so():
    """hfkv's own refusal (no "vLLM would refuse"), for backend paths it does not replay."""
    layers = [attention(0), LayerSpec(index=1, kind="sliding", parts=[SlidingWindow(kv_heads=4, head_dim=256,
                                                                                     window=512)])]
    mixed = fake(["ZayaForCausalLM"], layers)
    with pytest.raises(UnsupportedModelError, match="does not model per-layer") as caught:
        tfb.refusal(mixed, mixed.config, "TransformersForCausalLM")
    assert not isinstance(caught.value, VllmRefusal)
    vision = fake(["MllamaForConditionalGeneration"], [attention()], model_type="mllama")
    vision.config["model_type"] = "mllama_text_model"
    with pytest.raises(UnsupportedModelError, match="multimodal backend"):
        tfb.refusal(vision, vision.config, "TransformersMultiModalForCausalLM")
    # base.py Base.__init__: MXFP4 weights are refused by the backend (vLLM's message).
    quant = fake(["ZayaForCausalLM"], [attention()], quantization_config={"quant_method": "mxfp4"})
    assert tfb.refusal(quant, quant.config, "TransformersForCausalLM") == (
        "Transformers modeling backend does not support MXFP4 quantization yet.")


def test_a_mapping_that_disagrees_with_vllms_window_reading_is_warned():
    """A sliding layer in hfkv's mapping that vLLM's config reading gives no window (a config class whose
    window key is another name) is flagged in the assumptions."""
    layers = [LayerSpec(index=0, kind="sliding", parts=[SlidingWindow(kv_heads=8, head_dim=128, window=2048)])]
    assert tfb.window_disagreements(fake(["X"], layers), {"attention_window_size": 2048}) == [0]
    assert tfb.window_disagreements(fake(["X"], layers), {"sliding_window": 2048}) == []
