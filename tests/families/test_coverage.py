"""Every architecture the pinned engines serve is known to hfkv by name, and
``python -m hfkv.mappings.coverage --architectures`` lists them.

The engines' lists come from ``hfkv.engines.{vllm,sglang}.facts`` (read from the released wheels; package data),
cross-checked against ../shared/engine-archs/ when it is beside the checkout.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hfkv.engines.sglang.facts import architectures as sglang_architectures
from hfkv.engines.vllm.facts import architectures as vllm_architectures
from hfkv.mappings.coverage import architecture_lines
from hfkv.mappings.registry import known_architectures

from _helpers import FIXTURES


def engine_architectures() -> set[str]:
    vllm = {arch for arch, (registry, _) in vllm_architectures().items() if registry in ("text_generation", "multimodal")}
    return vllm | set(sglang_architectures())


def test_every_engine_architecture_is_known_by_name():
    names = engine_architectures()
    assert len(names) > 380  # 124 + 127 vLLM, 290 SGLang, overlapping
    missing = sorted(names - set(known_architectures()))
    assert not missing, missing


SHARED = Path(__file__).resolve().parents[3] / "shared" / "engine-archs"


def test_package_lists_match_the_shared_engine_archs():
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is not beside the checkout")
    vllm_rows = [line.split("\t") for line in (SHARED / "vllm-0.33.0.tsv").read_text().splitlines()[1:] if line]
    sglang_rows = [line.split("\t") for line in (SHARED / "sglang-0.5.23.tsv").read_text().splitlines()[1:] if line]
    shared = {row[1] for row in vllm_rows if row[0] in ("text_generation", "multimodal")} | {row[0] for row in sglang_rows}
    assert shared == engine_architectures()


def test_every_transformers_backend_architecture_is_known_by_name():
    """vLLM's _TRANSFORMERS_SUPPORTED_MODELS (vllm.facts.transformers_registered()) sit outside the generation
    tables above; each still needs a mapper or a named refusal."""
    from hfkv.engines.vllm.facts import transformers_registered

    missing = sorted(set(transformers_registered()) - set(known_architectures()))
    assert not missing, missing


def test_architecture_lines_name_a_mapper_or_a_reason():
    lines = architecture_lines()
    assert len(lines) == len(known_architectures())
    table = dict(line.split("\t") for line in lines)
    assert table["Qwen2VLForConditionalGeneration"] == "qwen.qwen2"
    assert table["Glm4vForConditionalGeneration"] == "dense.dense"
    assert table["Lfm2BidirectionalModel"] == "lfm.lfm2"
    assert table["LlamaForCausalLMEagle3"].startswith("refused: a draft model")
    assert table["BertModel"] == "refused: encoder-only model: no KV cache"
    assert table["HrmTextForCausalLM"].startswith("refused: not modelled yet: hierarchical")
    # served by vLLM only through its Transformers backend (tests/families/test_transformers_backend.py)
    for arch in ("CwmForCausalLM", "Kolibri1ForCausalLM", "SmolLM3ForCausalLM", "VaultGemmaForCausalLM"):
        assert table[arch] == "sliding.sliding_hybrid"
    for arch in ("FlexOlmoForCausalLM", "GlmForCausalLM", "Jais2ForCausalLM", "SeedOssForCausalLM"):
        assert table[arch] == "dense.dense"
    for arch in ("Emu3ForConditionalGeneration", "HunYuanVLForConditionalGeneration",
                 "VibeVoiceAsrForConditionalGeneration"):
        assert table[arch] == "multimodal.language_model"
    assert all(value.startswith("refused: ") or "." in value for value in table.values())


def test_coverage_cli_prints_the_architectures():
    out = subprocess.run([sys.executable, "-m", "hfkv.mappings.coverage", "--architectures"], capture_output=True, text=True,
                         check=True).stdout
    assert "Qwen3VLForConditionalGeneration\tqwen.qwen2\n" in out
    assert out.splitlines() == architecture_lines()


def test_every_refusal_mapper_refuses_what_it_names():
    import hfkv

    for arch, mapper in known_architectures().items():
        if not mapper.refusal(arch) or mapper.family in ("encoder-decoder", "encoder-only"):
            continue
        data = {"model_type": "llama", "architectures": [arch], "num_hidden_layers": 2, "num_attention_heads": 8,
                "hidden_size": 512}
        if mapper.name == "refusals.engine_backend":
            data["model_type"] = "brand_new"  # a known model type decides before a backend class
        with pytest.raises(hfkv.UnsupportedModelError):
            hfkv.inspect_config(data, model=arch)


def test_family_index_matches_the_decorators():
    from hfkv.mappings.coverage import _index_path, index_source

    assert _index_path().read_text() == index_source(), "run: python -m hfkv.mappings.coverage --write"


def test_a_report_imports_only_the_family_module_it_needs():
    code = (
        "import json, sys, hfkv\n"
        "from pathlib import Path\n"
        "data = json.loads(Path(sys.argv[1]).read_text())\n"
        "hfkv.inspect_config(data)\n"
        "print(' '.join(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('hfkv.mappings.'))))\n"
    )
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "openbmb__MiniCPM-V-2_6" / "config.json"
    out = subprocess.run([sys.executable, "-c", code, str(fixture)], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert "qwen" in loaded and "generic" in loaded  # the config's family (minicpmv) and the fallback
    assert not loaded & {"gemma", "nemotron", "deepseek_v4", "minimax", "multimodal", "refusals"}, loaded


def test_vllm_draft_architectures_are_refused_by_name():
    drafts = {arch for arch, (registry, _) in vllm_architectures().items() if registry == "speculative_decoding"}
    known = known_architectures()
    assert drafts and not drafts - set(known), sorted(drafts - set(known))
    assert all(known[arch].refusal(arch) for arch in drafts)


# Configs whose model_type is new: the architecture alone picks the mapper. Expected bytes per token are
# SGLang 0.5.23's own (its oracle, bf16, on the same keys with the real model types), hand-checked beside.
BY_ARCHITECTURE = [
    # GPT-BigCode MQA: 12 layers × 2 × 1 KV head × (768 / 12 = 64) × 2 = 3072 (TP 8: the one head replicated)
    ("GPTBigCodeForCausalLM", {"n_layer": 12, "n_head": 12, "n_embd": 768, "multi_query": True, "n_positions": 1024},
     {1: 3072, 8: 3072}),
    # Qwen-1: kv_channels 128, MHA: 4 × 2 × 16 × 128 × 2 = 32768; TP 8: 2 heads per rank → 4096
    ("QWenLMHeadModel", {"num_hidden_layers": 4, "num_attention_heads": 16, "hidden_size": 2048, "kv_channels": 128,
                         "seq_length": 8192}, {1: 32768, 8: 4096}),
    # Grok-1: 4 × 2 × 4 KV heads × 128 × 2 = 8192; TP 8: 1 head per rank → 2048
    ("Grok1ForCausalLM", {"num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 4,
                          "hidden_size": 2048}, {1: 8192, 8: 2048}),
    # StarCoder2: 30 × 2 × 2 KV heads × (3072 / 24 = 128) × 2 = 30720; TP 8: 1 head per rank → 15360
    ("Starcoder2ForCausalLM", {"num_hidden_layers": 30, "num_attention_heads": 24, "num_key_value_heads": 2,
                               "hidden_size": 3072}, {1: 30720, 8: 15360}),
]


@pytest.mark.parametrize("arch, keys, expected", BY_ARCHITECTURE)
def test_a_new_model_type_lands_by_architecture(arch, keys, expected):
    import hfkv

    for tp, bytes_per_token in expected.items():
        data = dict(keys, model_type="brand_new", architectures=[arch], torch_dtype="bfloat16")
        rep = hfkv.inspect_config(data, options=hfkv.Options(tensor_parallel_size=tp))
        assert rep.mapper == "dense.dense" and not any("not known" in w for w in rep.warnings)
        assert rep.alpha_bytes_per_token == bytes_per_token


# -- budget questions ------------------------------------------------------------------------------------


def test_coverage_doc_matches_the_registry():
    from hfkv.mappings.coverage import END, START, coverage_markdown

    doc = (FIXTURES.parent / "docs" / "coverage.md").read_text()
    section = doc[doc.index(START) + len(START):doc.index(END)].strip()
    assert section == coverage_markdown().strip(), "run: python -m hfkv.mappings.coverage --write"
