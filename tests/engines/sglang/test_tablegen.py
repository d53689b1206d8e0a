"""hfkv.engines.sglang.tablegen on a miniature SGLang source tree: the rows of a new SGLang version."""

from __future__ import annotations

from pathlib import Path

import pytest

from hfkv.engines import tables
from hfkv.engines.sglang import facts, tablegen

FILES = {
    "models/llama.py": "class LlamaForCausalLM:\n    pass\n\n\nEntryClass = LlamaForCausalLM\n",
    "models/newcomer.py": "EntryClass = [NewSwaForCausalLM, NewMambaForCausalLM]\n",
    "configs/model_config.py": (
        'SWA_SINK_ARCHS = frozenset({"NewSwaForCausalLM"})\n'
        "def is_hybrid_swa_model(model_architectures, hf_text_config=None):\n"
        '    hybrid_swa_archs = {"GptOssForCausalLM", *SWA_SINK_ARCHS, "LagunaForCausalLM"}\n'
        "    if any(arch in hybrid_swa_archs for arch in model_architectures):\n"
        '        if "LagunaForCausalLM" in model_architectures and not hf_text_config.sliding_window:\n'
        "            return False\n"
        "        return True\n"
        "    return False\n"
        'MIMO_V2_MULTIMODAL_ARCHS = ("NewMambaForCausalLM",)\n'
        'multimodal_model_archs = ["NewSwaForCausalLM", *MIMO_V2_MULTIMODAL_ARCHS]\n'
        'multimodal_breakable_cuda_graph_supported_model_archs = ["NewSwaForCausalLM"]\n'
        "class ModelConfig:\n"
        "    def _derive_model_shapes(self):\n"
        '        if "NewSwaForCausalLM" in self.hf_config.architectures:\n'
        '            encoder_layers = getattr(self.hf_text_config, "encoder_layers", 0)\n'
        "            self.num_attention_layers = encoder_layers + 2 * self.num_hidden_layers\n"
        "    def __init__(self, enable_multimodal=None):\n"
        "        if enable_multimodal is None:\n"
        '            mm_disabled_models = ["LlamaForCausalLM"]\n'
        "            if self.hf_config.architectures[0] in mm_disabled_models and self.model_impl != 1:\n"
        "                enable_multimodal = False\n"
        "            elif self.hf_config.architectures[0] in MIMO_V2_MULTIMODAL_ARCHS and not (\n"
        '                hasattr(self.hf_config, "vision_config") and hasattr(self.hf_config, "audio_config")):\n'
        "                enable_multimodal = False\n"
        "            else:\n"
        "                enable_multimodal = True\n"),
    "arg_groups/model_override_base.py": (
        "def get_default_attn_backend(server_args, model_config, use_mla_backend):\n"
        '    if "NewSwaForCausalLM" in (model_config.hf_config.architectures or []):\n'
        '        return "flashinfer"\n'
        '    return "fa3"\n'),
    "arg_groups/attention_hook.py": (
        "def handle_attention_backend_compatibility(server_args):\n"
        '    if model_config.is_encoder_decoder and "NewSwaForCausalLM" in (model_config.hf_config.architectures or []):\n'
        '        declare_resolution(server_args, "x", disable_radix_cache=True)\n'),
    "arg_groups/cuda_graph_hook.py": (
        "def disable_breakable_cudagraph_if_incompatible(server_args):\n"
        '    rules = [("KDA hybrid linear attention", lambda: (uses_kda_attention(cfg) and "NewMambaForCausalLM"\n'
        "                                                        not in cfg.architectures))]\n"),
    "arg_groups/overrides.py": '_MAMBA_EXTRA_BUFFER_ARCHS = frozenset({"NewMambaForCausalLM"})\n',
    "arg_groups/model_overrides/inkling.py": '@_register_for("NewMambaForCausalLM")\ndef _inkling_overrides(a, b):\n    return {}\n',
    "arg_groups/model_overrides/deepseek_v2.py": (
        '@_register_for("DeepseekV3ForCausalLM")\ndef _deepseek_family_overrides(a, b):\n    return {}\n\n\n'
        '@_register_for("NewSwaForCausalLM")\ndef _other(a, b):\n    return {}\n'),
    "arg_groups/model_overrides/kimi_k3.py": '@_register_for("KimiK3ForConditionalGeneration")\ndef _kimi_k3_overrides(a, b):\n    return {}\n',
    "arg_groups/model_overrides/qwen3_5.py": '@_register_for("NewMambaForCausalLM")\ndef _qwen(a, b):\n    return {}\n',
    "arg_groups/model_overrides/minimax_m3.py": '@_register_for("MiniMaxM3SparseForCausalLM")\ndef _m3(a, b):\n    return {}\n',
    "arg_groups/model_overrides/iquest_q1.py": '@_register_for("NewSwaForCausalLM")\ndef _iquest(a, b):\n    return {}\n',
}


@pytest.fixture()
def source(tmp_path: Path) -> Path:
    root = tmp_path / "sglang"
    for name, text in FILES.items():
        path = root / "srt" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_readers_find_the_names_in_sglangs_lists(source):
    assert tablegen.entry_classes(source) == {"LlamaForCausalLM": "llama", "NewSwaForCausalLM": "newcomer",
                                              "NewMambaForCausalLM": "newcomer"}
    listed, conditional = tablegen.hybrid_swa_lists(source)
    assert listed == {"GptOssForCausalLM", "NewSwaForCausalLM", "LagunaForCausalLM"}
    assert conditional == {"LagunaForCausalLM"}
    assert tablegen.registered_for(source, "deepseek_v2", "_deepseek_family_overrides") == {"DeepseekV3ForCausalLM"}
    assert tablegen.registered_for(source, "deepseek_v2") == {"DeepseekV3ForCausalLM", "NewSwaForCausalLM"}
    # multimodal_model_archs with its *MIMO_V2_MULTIMODAL_ARCHS spread; ModelConfig.__init__'s two
    # branches on architectures[0], told apart by the one that asks for the audio tower
    assert tablegen.multimodal_lists(source) == ({"NewSwaForCausalLM", "NewMambaForCausalLM"}, {"LlamaForCausalLM"},
                                                 {"NewMambaForCausalLM"})


def test_a_new_entry_class_gets_the_cells_sglangs_lists_decide_and_the_rest_unread(source):
    header, *rows = tablegen.rewritten(source)
    assert header == tables.read_table(facts.TABLE)[0]
    by_name = {row[0]: dict(zip(header, row)) for row in rows}
    assert list(by_name) == ["LlamaForCausalLM", "NewMambaForCausalLM", "NewSwaForCausalLM"]
    # A known name keeps its row as it is.
    assert rows[0] == next(row for row in tables.read_table(facts.TABLE)[1] if row[0] == "LlamaForCausalLM")
    swa, mamba = by_name["NewSwaForCausalLM"], by_name["NewMambaForCausalLM"]
    assert swa["sglang_module"] == "newcomer" and swa["hybrid_swa"] == "yes" and mamba["hybrid_swa"] == "no"
    assert swa["pp_refusal"] == "IQuest Q1 does not support pipeline parallelism." and mamba["pp_refusal"] == "none"
    assert mamba["mamba_extra_buffer"] == "yes" and mamba["mamba_full_memory_ratio"] == "0.1"
    assert mamba["sm100_attention_backend"] == "triton" and swa["sm100_attention_backend"] == "default"
    assert (swa["multimodal"], swa["multimodal_prefill_graph"]) == ("listed", "yes")
    assert (mamba["multimodal"], mamba["multimodal_prefill_graph"]) == ("listed+needs_vision_and_audio", "no")
    # Rules keyed by one name in a function's code (tablegen.architecture_rules): Whisper's layer count, its
    # default backend and radix cache; GLM-5.3 Flash's exemption from the KDA prefill-graph rule.
    assert (swa["encoder_decoder_layers"], swa["attention_backend"], swa["radix_cache"]) == ("yes", "flashinfer", "off")
    assert (mamba["encoder_decoder_layers"], mamba["attention_backend"], mamba["radix_cache"]) == ("no", "default",
                                                                                                   "default")
    assert (mamba["kda_prefill_graph"], swa["kda_prefill_graph"]) == ("yes", "no")
    # What no list decides is left for a person (tp_asserts, tp_experts: the scripts in tests/oracles;
    # supports_pp: SGLang's venv).
    assert swa["tp_asserts"] == swa["tp_experts"] == swa["supports_pp"] == tablegen.UNREAD


def test_a_table_with_an_unread_cell_does_not_load(source, tmp_path):
    path = tmp_path / "table.tsv"
    path.write_text("\n".join("\t".join(row) for row in tablegen.rewritten(source)) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="column first_release"):  # no releases given: the first unread cell
        list(tables.parse_rows(path, facts.PARSERS, facts.ArchFacts))


def releases(tmp_path: Path, registered: dict[str, list[str]]) -> Path:
    """A folder of unpacked wheels, ``sglang-<release>/src/sglang/srt/models/m.py`` registering the names."""
    for release, names in registered.items():
        models = tmp_path / "wheels" / f"sglang-{release}" / "src" / "sglang" / "srt" / "models"
        models.mkdir(parents=True)
        models.joinpath("m.py").write_text(f"EntryClass = [{', '.join(names)}]\n", encoding="utf-8")
    (tmp_path / "wheels" / "sglang-0.5.0").mkdir()  # no such release on PyPI: an empty folder, skipped
    return tmp_path / "wheels"


def test_first_release_is_the_oldest_wheel_registering_the_name(source, tmp_path):
    # Versions as versions: 0.5.9 before 0.5.10, the rc before its release.
    wheels = releases(tmp_path, {"0.5.10": ["LlamaForCausalLM", "NewSwaForCausalLM"], "0.5.9": ["LlamaForCausalLM"],
                                 "0.5.0rc2": ["OldForCausalLM"], "0.5.23": ["NewMambaForCausalLM"]})
    assert list(tablegen.unpacked_releases(wheels)) == ["0.5.0rc2", "0.5.9", "0.5.10", "0.5.23"]
    assert tablegen.first_releases(wheels) == {"OldForCausalLM": "0.5.0rc2", "LlamaForCausalLM": "0.5.9",
                                               "NewSwaForCausalLM": "0.5.10", "NewMambaForCausalLM": "0.5.23"}
    header, *rows = tablegen.rewritten(source, wheels)
    column = header.index("first_release")
    assert {row[0]: row[column] for row in rows} == {"LlamaForCausalLM": "0.5.9", "NewMambaForCausalLM": "0.5.23",
                                                     "NewSwaForCausalLM": "0.5.10"}
    path = tmp_path / "table.tsv"
    path.write_text("\n".join("\t".join(row) for row in [header, *rows]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="column supports_pp"):  # what no wheel says is still unread
        list(tables.parse_rows(path, facts.PARSERS, facts.ArchFacts))
