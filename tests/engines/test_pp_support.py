"""Pipeline parallelism per architecture: engine mode refuses --pp > 1 where the engine itself would.

Expected verdicts are read off the engines' own source (file and class cited beside each), never off
hfkv's output:

* vLLM 0.33.0: ``ModelConfig.verify_with_parallel_config`` (``vllm/config/model.py``) raises
  "Pipeline parallelism is not supported for this model. Supported models implement the `SupportsPP`
  interface." when ``registry.is_pp_supported_model`` is False, i.e. the class lacks ``SupportsPP``
  (``vllm/model_executor/models/interfaces.py: supports_pp``).
* SGLang 0.5.23: ``ModelRunner`` (``sglang/srt/model_executor/model_runner.py``) asserts
  ``"pp_proxy_tensors" in inspect.signature(self.model.forward).parameters`` when ``pp_size > 1``:
  "Pipeline Parallel is not compatible with this model."
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from hfkv.engines import check_layout, simulate
from hfkv.engines.sglang import facts as sglang_facts
from hfkv.engines.vllm import facts as vllm_facts
from hfkv.engines import layout as lay
from hfkv.engines.sglang.support import check_pipeline
from hfkv.errors import UnsupportedModelError
from hfkv.inspection import inspect_config
from hfkv.model.options import Options

VLLM_033 = "vllm==0.33.0"  # these figures follow vLLM 0.33.0's rules (block 16 by default), derived by hand or from its oracle rows

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(__file__).resolve().parents[3] / "shared"
VLLM_PP = ("Pipeline parallelism is not supported for this model. Supported models implement the `SupportsPP` "
           "interface.")
SGLANG_PP = "Pipeline Parallel is not compatible with this model."


def _fixture(folder: str, **options):
    data = json.loads((ROOT / "fixtures" / folder / "config.json").read_text())
    return inspect_config(data, model=folder, options=Options(**options))


def _hfkv(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from hfkv.commands.cli import entry; entry()", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


# -- the tables -------------------------------------------------------------------------------------

# vllm/model_executor/models/<module>.py, the class's bases:
VLLM_CLASSES = {
    "LlamaForCausalLM": True,  # llama.py: LlamaForCausalLM(LocalArgmaxMixin, nn.Module, SupportsLoRA, SupportsPP, ...)
    "Qwen3ForCausalLM": True,  # qwen3.py: Qwen3ForCausalLM(LocalArgmaxMixin, nn.Module, SupportsLoRA, SupportsPP, ...)
    # gemma3_mm.py: Gemma3ForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsPP, SupportsLoRA, ...)
    "Gemma3ForConditionalGeneration": True,
    # kanana_v.py: KananaVForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsPP); forward takes
    # intermediate_tensors (the one class the oracle venv cannot import: it needs timm)
    "KananaVForConditionalGeneration": True,
    "Zamba2ForCausalLM": False,  # zamba2.py: Zamba2ForCausalLM(nn.Module, HasInnerState, IsHybrid)
    "Mamba2ForCausalLM": False,  # mamba2.py: (nn.Module, HasInnerState, IsAttentionFree, SupportsMambaPrefixCaching)
    # gemma3n_mm.py: Gemma3nForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsTranscription)
    "Gemma3nForConditionalGeneration": False,
    # idefics3.py: Idefics3ForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsLoRA, ...)
    "Idefics3ForConditionalGeneration": False,
}

# sglang/srt/models/<module>.py, the class's forward:
SGLANG_CLASSES = {
    "LlamaForCausalLM": True,  # llama.py: forward(..., get_embedding, pp_proxy_tensors=None)
    "Qwen3ForCausalLM": True,  # qwen3.py: forward(..., get_embedding, pp_proxy_tensors=None)
    "TransformersForCausalLM": True,  # transformers.py: TransformersBase.forward(..., pp_proxy_tensors=None)
    "Olmo2ForCausalLM": False,  # olmo2.py: forward(input_ids, positions, forward_batch, input_embeds)
    # gemma3_mm.py: forward(input_ids, positions, forward_batch, input_embeds, **kwargs)
    "Gemma3ForConditionalGeneration": False,
    "MambaForCausalLM": False,  # mamba.py inherits falcon_mamba.py: forward(input_ids, positions, forward_batch)
    "MiniCPMV": False,  # minicpmv.py: delegates to MiniCPMBaseModel.forward(input_ids, positions, forward_batch, **kwargs)
}


@pytest.mark.parametrize("arch, expected", sorted(VLLM_CLASSES.items()))
def test_vllm_table_says_which_classes_implement_supports_pp(arch, expected):
    assert vllm_facts.pp_support()[arch] is expected


@pytest.mark.parametrize("arch, expected", sorted(SGLANG_CLASSES.items()))
def test_sglang_table_says_which_forwards_take_pp_proxy_tensors(arch, expected):
    assert sglang_facts.pp_support()[arch] is expected


@pytest.mark.parametrize("name, shared, width", [("vllm/0.33.0.tsv", "vllm-0.33.0.tsv", 3),
                                                 ("sglang/0.5.23.tsv", "sglang-0.5.23.tsv", 2)])
def test_every_architecture_keeps_its_row_and_has_a_pp_verdict(name, shared, width):
    lines = (ROOT / "hfkv" / "engines" / name).read_text(encoding="utf-8").splitlines()
    assert lines[0].split("\t")[-1] == "supports_pp"
    rows = [line.split("\t") for line in lines[1:] if line.strip()]
    # Every row has the header's columns (SGLang's also has tp_asserts before supports_pp).
    assert all(len(row) == len(lines[0].split("\t")) and row[-1] in ("yes", "no") for row in rows)
    source = SHARED / "engine-archs" / shared
    if not source.exists():
        pytest.skip(f"{source} not present (the shared engine-archs lists)")
    listed = [line.split("\t") for line in source.read_text(encoding="utf-8").splitlines()[1:] if line.strip()]
    assert sorted(row[:width] for row in rows) == sorted(listed)


# -- vLLM mode ------------------------------------------------------------------------------------


def test_vllm_refuses_pp_for_a_class_without_supports_pp_one_line_exit_2():
    done = _hfkv("fixtures/Zyphra__Zamba2-2.7B-transformers-defaults", "--engine", "vllm", "--pp", "2")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and VLLM_PP in lines[0] and "Zamba2ForCausalLM" in lines[0]
    assert "Traceback" not in done.stderr


def test_plot_refuses_the_deployment_panel_vllm_would_not_start(tmp_path):
    pytest.importorskip("matplotlib")
    done = _hfkv("plot", "fixtures/Zyphra__Zamba2-2.7B-transformers-defaults", "--gpu", "H200:2", "--engine", "vllm",
                 "--pp", "2", "-o", str(tmp_path / "p.png"))
    assert done.returncode == 2 and VLLM_PP in done.stderr and not (tmp_path / "p.png").exists()


def test_vllm_refuses_pp_for_a_multimodal_class_without_supports_pp():
    report = _fixture("google__gemma-3n-E4B-transformers-defaults")
    with pytest.raises(UnsupportedModelError, match=r"would refuse to start: Pipeline parallelism is not supported"):
        simulate(report, engine=VLLM_033, pipeline_parallel_size=2)
    assert simulate(report, engine=VLLM_033, pipeline_parallel_size=1)["bytes_per_token"] > 0  # PP 1 is served


def test_vllm_pp_figures_for_a_multimodal_class_with_supports_pp():
    # Gemma 3 4B: text_config.num_hidden_layers 34 → stages of 17 and 17 (get_pp_indices: 34 = 2 × 17).
    result = simulate(_fixture("google__gemma-3-4b-it"), engine=VLLM_033, pipeline_parallel_size=2)
    assert [stage["layers"] for stage in result["stages"]] == [17, 17]
    assert not any("not checked" in note for note in result["assumptions"])


# vLLM 0.33.0's own verdict at --pipeline-parallel-size 2: EngineArgs(model=folder, pipeline_parallel_size=2,
# load_format="dummy").create_engine_config() on the oracle's fake H200, for every ../shared/hub-configs file
# and every fixture (docs/vllm.md, "Verification"). Every hub config passed it except these five:
VLLM_PP2_HUB_REFUSED = {"LiquidAI__LFM2.5-Embedding-350M.json": "Pipeline parallelism is not supported"}
VLLM_PP2_HUB_OFFLINE = {  # the oracle cannot build their remote-code config classes offline: no verdict
    "MiniMaxAI__MiniMax-M1-80k.json", "nvidia__Llama-3_3-Nemotron-Super-49B-v1.json",
    "replit__replit-code-v1_5-3b.json", "tiiuae__falcon-40b.json"}
# Fixtures vLLM refused with the SupportsPP message (the other fixtures passed, or failed offline):
VLLM_PP2_FIXTURES_REFUSED = (
    "LiquidAI__LFM2.5-Embedding-350M", "Zyphra__Zamba2-2.7B-transformers-defaults", "distil-whisper__distil-large-v3",
    "google-bert__bert-base-uncased-transformers-defaults", "google__gemma-3n-E4B-transformers-defaults",
    "openai__whisper-large-v3", "state-spaces__mamba2-2.8b-transformers-defaults")
# Those hfkv refuses before any engine check, for a reason of its own: BERT is encoder-only (no KV cache), which
# hfkv's mapper refuses. (Whisper and LFM2.5-Embedding, once refused earlier too, now reach vLLM's own check:
# WhisperForConditionalGeneration and the pooling class Lfm2BidirectionalModel lack SupportsPP.)
REFUSED_EARLIER = ("bert-base",)


def _vllm_pp2_error(path: Path) -> str | None:
    """hfkv's refusal of ``path`` in vLLM mode at PP 2 (inspection included), or None when it sizes it."""
    try:
        report = inspect_config(json.loads(path.read_text()), model=path.parent.name, options=Options())
        simulate(report, engine=VLLM_033, pipeline_parallel_size=2)
    except UnsupportedModelError as err:
        return str(err)
    return None


def test_vllm_pp2_verdicts_match_vllms_own_on_every_stored_config():
    for folder in VLLM_PP2_FIXTURES_REFUSED:  # never a figure where vLLM says no
        error = _vllm_pp2_error(ROOT / "fixtures" / folder / "config.json")
        assert error is not None, folder
        assert VLLM_PP in error or any(word in folder for word in REFUSED_EARLIER), (folder, error)
    configs = SHARED / "hub-configs"
    if not configs.exists():
        pytest.skip(f"{configs} not present (the shared hub-configs)")
    for path in sorted(configs.glob("*.json")):
        if path.name in VLLM_PP2_HUB_OFFLINE or path.name in VLLM_PP2_HUB_REFUSED:
            continue
        error = _vllm_pp2_error(path) or ""
        assert "Pipeline parallelism" not in error, (path.name, error)  # vLLM started these at PP 2

# -- SGLang mode ----------------------------------------------------------------------------------


def test_sglang_refuses_pp_where_the_forward_takes_no_pp_proxy_tensors():
    # The same Gemma 3 that vLLM runs at PP 2 (above): SGLang's gemma3_mm forward has no pp_proxy_tensors.
    with pytest.raises(UnsupportedModelError, match=re.escape(SGLANG_PP)):
        simulate(_fixture("google__gemma-3-4b-it"), engine="sglang", pipeline_parallel_size=2)


def test_sglang_olmo3_is_its_olmo2_class_and_refuses_pp_on_the_command_line():
    # configs/olmo3.py renames Olmo3ForCausalLM to Olmo2ForCausalLM (olmo2.py: no pp_proxy_tensors).
    done = _hfkv("fixtures/allenai__Olmo-3-7B-Instruct-transformers-defaults", "--engine", "sglang", "--pp", "2")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and SGLANG_PP in lines[0] and "Olmo2ForCausalLM" in lines[0]


def test_sglang_model_overrides_refuse_pp_with_their_own_message():
    # deepseek_v4_hook.validate_deepseek_v41_features: ("pipeline parallelism", cfg.pp_size > 1) for
    # model_type deepseek_v41 → "DeepSeek-V4.1 does not support pipeline parallelism yet; ...".
    report = _fixture("deepseek-ai__DeepSeek-V4.1-synthetic", kv_cache_dtype="fp8")
    with pytest.raises(UnsupportedModelError, match="DeepSeek-V4.1 does not support pipeline parallelism yet"):
        simulate(report, engine="sglang", pipeline_parallel_size=2)
    # model_overrides/iquest_q1.py: if cfg.pp_size > 1: raise ValueError("IQuest Q1 does not support ...")
    iquest = SimpleNamespace(architectures=["IQuestQ1ForCausalLM"], config={}, model_type="iquest_q1")
    with pytest.raises(UnsupportedModelError, match=r"IQuest Q1 does not support pipeline parallelism\."):
        check_pipeline(iquest, 2)
    check_pipeline(iquest, 1)  # PP 1: nothing to refuse


def test_sglang_transformers_fallback_runs_pp():
    # MiniMaxForCausalLM has no SGLang class: the fallback's TransformersForCausalLM takes pp_proxy_tensors,
    # so PP 2 is sized (stages of 16 and 16: the config's num_hidden_layers 32 = 2 × 16), not refused.
    result = simulate(_fixture("MiniMaxAI__MiniMax-Text-01-hf-transformers-defaults"), engine="sglang",
                      pipeline_parallel_size=2)
    assert [stage["layers"] for stage in result["stages"]] == [16, 16]
    assert not any("not checked" in note for note in result["assumptions"])


# -- a serving plan checked as an engine ----------------------------------------------------------


def test_check_model_refuses_the_layout_as_each_engine_would():
    report = _fixture("google__gemma-3-4b-it")
    check_layout(report, lay.Layout(pp=2, engine="vllm"))  # gemma3_mm.py: SupportsPP
    check_layout(report, lay.Layout(pp=2, engine="theory"))  # theory asks no engine
    with pytest.raises(UnsupportedModelError, match=re.escape(SGLANG_PP)):
        check_layout(report, lay.Layout(pp=2, engine="sglang"))
    zamba = _fixture("Zyphra__Zamba2-2.7B-transformers-defaults")
    with pytest.raises(UnsupportedModelError, match="Supported models implement the `SupportsPP` interface"):
        check_layout(zamba, lay.Layout(pp=2, engine="vllm"))
    check_layout(zamba, lay.Layout(pp=1, engine="vllm"))
