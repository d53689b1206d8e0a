"""Error lines (hfkv/errors.py): a long name cut with an ellipsis, a quoted value bounded (100 KB layer
type, 10 KB architectures list), ordinary messages left alone."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from hfkv.commands.cli import main
from hfkv.errors import SourceError, shorten

from _helpers import one_error_line, write_config_in as write_config


# -- item 15: messages -------------------------------------------------------------------------------


def test_long_names_are_cut_with_an_ellipsis_in_messages():
    name = "org/" + "n" * 300
    text = str(SourceError("not-found", "no such file", source=name))
    assert "…" in text and len(text) < 160 and text.startswith("org/nnn") and text.endswith("nnn: no such file")
    assert shorten("short") == "short"


# -- every error line is bounded ------------------------------------------------------------------------


ROOT = Path(__file__).resolve().parents[1]


LLAMA_FIXTURE = ROOT / "fixtures" / "meta-llama__Meta-Llama-3.1-8B" / "config.json"


def llama() -> dict:
    return json.loads(LLAMA_FIXTURE.read_text())


def test_a_100_kb_layer_type_is_quoted_not_echoed_whole(tmp_path):
    """Before: the error line held the whole 100,000-character layer type."""
    config = write_config(tmp_path / "m", {**llama(), "layer_types": ["x" * 100_000] * 32})
    result = CliRunner().invoke(main, [config, "--format", "json"])
    line = one_error_line(result, 2)
    assert len(line) < 400 and line.endswith("' (100,000 characters)")
    assert "key 'layer_types': unknown layer type 'xxxx" in line


def test_a_10_kb_architectures_list_is_summarised(tmp_path):
    """vLLM's refusal quotes the architectures (its own message); 1,500 of them were 17 KB of one line."""
    architectures = [f"Arch{i}" for i in range(1500)]
    config = write_config(tmp_path / "m", {**llama(), "architectures": architectures})
    assert len(json.dumps(architectures)) > 10_000
    result = CliRunner().invoke(main, [config, "--format", "json", "--engine", "vllm", "--gpu", "H200"],
                                env={"HF_HOME": str(tmp_path / "hf")})
    line = one_error_line(result, 2)
    assert "['Arch0', 'Arch1', 'Arch2', 'Arch3', 'Arch4', 'Arch5', 'Arch6', 'Arch7', … and 1,492 more]" in line
    assert len(line) < 400


def test_bounded_leaves_ordinary_messages_alone_and_cuts_the_rest():
    from hfkv.errors import bounded, quote, summarise

    ordinary = "key 'num_hidden_layers': expected an integer, got 'abc'"
    assert bounded(ordinary) == ordinary
    few = "layers [0, 1, 2] of " + "a " * 100
    assert bounded(few) == few  # short lists are kept whole
    assert summarise([str(i) for i in range(1234 + 3)], limit=3) == "0, 1, 2, … and 1,234 more"
    assert quote("q" * 1000).endswith("' (1,002 characters)") and len(quote("q" * 1000)) < 220
    assert len(bounded("word " * 10_000)) < 2100
