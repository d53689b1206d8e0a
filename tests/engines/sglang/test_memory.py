"""SGLang 0.5.23's default ``mem_fraction_static``, against SGLang's own ``ServerArgs``.

``serverargs-0.5.23.tsv`` holds what SGLang 0.5.23's ``ServerArgs`` resolved, run on the CPU with a faked
H100, H200 and B200 (``tests/oracles/sglang-serverargs.py``, the shared SGLang oracle's venv): 11 real
configs × TP 1/2/4/8 × DP attention off and on × PP 1/2 × chunked prefill default and 4,096, and
rows with a running-request cap, a decode-graph size, CUDA graphs off, an fp8 KV cache, EAGLE. hfkv's
``hfkv.engines.sglang.memory`` must give the same fraction on every row it models (PD disaggregation
is not: those rows are listed and skipped by name). Whether SGLang called each config multimodal (the
rows' ``is_vlm``) is checked too, and the multimodal rule's other branches on synthetic configs.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import hfkv
from hfkv.engines.contract import Device, EngineInput, EngineKnobs
from hfkv.engines.layout import Layout
from hfkv.engines.sglang import memory

HERE = Path(__file__).resolve().parent
HUB_CONFIGS = HERE.parents[2].parent / "shared" / "hub-configs"
ROWS = list(csv.DictReader((HERE / "serverargs-0.5.23.tsv").open(encoding="utf-8"), delimiter="\t"))
NOT_MODELLED = ("disaggregation_mode",)  # PD decode/prefill instances size the reserve from other settings
MIB = 1 << 20
_REPORTS: dict[str, object] = {}


def _model(config_file: str) -> EngineInput:
    if config_file not in _REPORTS:
        _REPORTS[config_file] = hfkv.inspect(str(HUB_CONFIGS / config_file), weights=False)
    return EngineInput.of(_REPORTS[config_file])


def _case(row: dict) -> str:
    extra = row["extra_args"] or "-"
    return (f"{row['gpu']}-{row['config_file'].removesuffix('.json')}-tp{row['tp']}-dpa{row['enable_dp_attention']}"
            f"-pp{row['pp']}-chunk{row['chunked_prefill_size_set']}-{extra}")


def _knobs(row: dict, extra: dict) -> EngineKnobs:
    given = {}
    if row["chunked_prefill_size_set"] != "default":
        given["chunked_prefill_size"] = int(row["chunked_prefill_size_set"])
    if "max_running_requests" in extra:
        given["max_running_requests"] = extra["max_running_requests"]
    if "cuda_graph_max_bs_decode" in extra:
        given["cuda_graph_max_bs"] = extra["cuda_graph_max_bs_decode"]
    if extra.get("disable_cuda_graph"):
        given["disable_cuda_graph"] = True
    return EngineKnobs.resolve(given)


@pytest.mark.parametrize("row", ROWS, ids=[_case(r) for r in ROWS])
def test_default_mem_fraction_static_is_sglangs(row):
    extra = json.loads(row["extra_args"] or "{}")
    if any(key in extra for key in NOT_MODELLED):
        pytest.skip("PD disaggregation: the reserve follows the decode instance's running requests (not modelled)")
    if not (HUB_CONFIGS / row["config_file"]).is_file():
        pytest.skip(f"{HUB_CONFIGS} not present (the shared hub configs)")
    device = Device(row["gpu"], smi_bytes=int(row["nvidia_smi_total_mib"]) * MIB,
                    cuda_total_bytes=int(row["torch_total_bytes"]))
    dp = int(row["dp"])
    layout = Layout(tp=int(row["tp"]), dp=dp, pp=int(row["pp"]), engine="sglang",
                    dp_attention=row["enable_dp_attention"] == "True" and dp > 1)
    model = _model(row["config_file"])
    fraction, how = memory.mem_fraction_static(device, layout, _knobs(row, extra), memory.traits(model))
    assert fraction == pytest.approx(float(row["mem_fraction_static"]), abs=1e-12), how


@pytest.mark.parametrize("config_file", sorted({row["config_file"] for row in ROWS}))
def test_multimodal_is_what_sglangs_model_config_said(config_file):
    # is_vlm: ModelConfig.is_multimodal (and neither --language-only nor a PD decode instance), as the
    # oracle recorded it per config: Gemma 4 and Qwen3.5 yes; Gemma 3 no (served text-only by default).
    said = {row["is_vlm"] for row in ROWS if row["config_file"] == config_file
            and "disaggregation_mode" not in (row["extra_args"] or "")}
    if not (HUB_CONFIGS / config_file).is_file():
        pytest.skip(f"{HUB_CONFIGS} not present (the shared hub configs)")
    assert said == {str(memory.is_multimodal(_model(config_file)))}


def _synthetic(architectures: list[str], model_type: str | None = None, **root) -> EngineInput:
    return EngineInput(layer_specs=[], precision=None, model_type=model_type, architectures=architectures,
                       root_config={"architectures": architectures, **root})


TOWER = {"num_hidden_layers": 27, "hidden_size": 1152}
TEXT = {"num_attention_heads": 8}


@pytest.mark.parametrize("model, multimodal, prefill_graph, vision", [
    # multimodal_model_archs, on the breakable allow-list: the graph stays, the tower scales the fraction
    (_synthetic(["Qwen3_5MoeForConditionalGeneration"], vision_config=TOWER), True, True, (27, 1152)),
    # listed, not allowed: the graph goes
    (_synthetic(["Gemma4ForConditionalGeneration"], vision_config=TOWER), True, False, (27, 1152)),
    # listed without a vision_config (an audio model): adjust_mem_fraction_for_vlm leaves the fraction
    (_synthetic(["WhisperForConditionalGeneration"]), True, False, None),
    # mm_disabled_models as the first architecture: text-only by default, whatever the config holds
    (_synthetic(["Gemma3ForConditionalGeneration"], vision_config=TOWER, text_config=TEXT), False, True, None),
    (_synthetic(["InklingForConditionalGeneration"], text_config=TEXT), False, True, None),
    # ... but only as the first: listed further on, Gemma 3 makes the config multimodal
    (_synthetic(["LlamaForCausalLM", "Gemma3ForConditionalGeneration"], vision_config=TOWER), True, False, (27, 1152)),
    # MIMO_V2_MULTIMODAL_ARCHS: multimodal only with both towers
    (_synthetic(["MiMoV2ForCausalLM"], vision_config=TOWER), False, True, None),
    (_synthetic(["MiMoV2ForCausalLM"], vision_config=TOWER, audio_config={}), True, False, (27, 1152)),
    # not listed, but a text sub-config (has_multimodal_subconfig): Kimi K3, allow-listed
    (_synthetic(["KimiK3ForConditionalGeneration"], vision_config=TOWER, text_config=TEXT), True, True, (27, 1152)),
    (_synthetic(["KimiK3ForConditionalGeneration"]), False, True, None),
    # ... whatever the architecture (an unregistered one too), but get_hf_text_config keeps a
    # Llava*ForCausalLM config whole: no sub-config; a vision_config without its sizes reads as ViT-L/14
    (_synthetic(["SomeVlmForConditionalGeneration"], text_config=TEXT, vision_config={}), True, False, (24, 1024)),
    (_synthetic(["LlavaSomeForCausalLM"], text_config=TEXT, vision_config={}), False, True, None),
    # the checkpoint's language_model_only
    (_synthetic(["Qwen3_5MoeForConditionalGeneration"], vision_config=TOWER, language_model_only=True), False, True, None),
    # DeepSeek-V4.1: its config class folds the towers into the root; multimodal when vision_n_layers > 0,
    # no vision_config left to scale by
    (_synthetic(["DeepseekV41ForCausalLM"], "deepseek_v41", text_config=TEXT, vision_config=TOWER), True, False, None),
    (_synthetic(["DeepseekV41ForCausalLM"], "deepseek_v41", text_config=TEXT), False, True, None),
    # ... the root's own vision_n_layers first (normalize_deepseek_v41_config's setdefault)
    (_synthetic(["DeepseekV41ForCausalLM"], "deepseek_v41", vision_n_layers=0, vision_config=TOWER), False, True, None),
    (_synthetic(["DeepseekV41ForCausalLM"], "deepseek_v41", vision_n_layers=24), True, False, None),
])
def test_multimodal_traits_follow_model_config(model, multimodal, prefill_graph, vision):
    traits = memory.traits(model)
    assert (memory.is_multimodal(model), traits.prefill_graph, traits.vision) == (multimodal, prefill_graph, vision)


def test_the_worked_examples_by_hand():
    # H200 (nvidia-smi 143,771 MiB), Qwen3-8B, TP 1: chunk 8,192, decode graphs up to 256, a breakable
    # prefill graph of 58 shapes: reserve 512 + 1.5 × 8,192 + 1 × 1 / 8 × 1,024 + 2 × 256 + 8 × 58 = 13,904 MiB;
    # (143,771 − 13,904) / 143,771 = 0.9033 → 0.903.
    qwen = _model("Qwen__Qwen3-8B.json") if (HUB_CONFIGS / "Qwen__Qwen3-8B.json").is_file() else None
    if qwen is None:
        pytest.skip("shared hub configs absent")
    h200 = Device("H200", smi_bytes=143_771 * MIB, cuda_total_bytes=150_754_820_096)
    fraction, _ = memory.mem_fraction_static(h200, Layout(tp=1, engine="sglang"), EngineKnobs.resolve({}),
                                             memory.traits(qwen))
    assert fraction == 0.903
    # --chunked-prefill-size 4096: 512 + 6,144 + 128 + 512 + 8 × 50 = 7,696 MiB, under the 10,240 MiB floor
    # of a > 60 GB card: (143,771 − 10,240) / 143,771 = 0.9288 → 0.929.
    fraction, _ = memory.mem_fraction_static(h200, Layout(tp=1, engine="sglang"),
                                             EngineKnobs.resolve({"chunked_prefill_size": 4096}), memory.traits(qwen))
    assert fraction == 0.929
    assert memory.prefill_graph_shapes(2048) == 8 + 14 + 8 + 8 + 4 == 42
    assert memory.prefill_graph_shapes(16384) == 8 + 14 + 8 + 8 + 12 + 24 == 74
