"""The terminal output (hfkv/render/terminal.py): text a config or a path holds is data (rich markup,
terminal escapes, newlines), a narrow terminal gets every figure whole, a piped header is one line
naming only the dtypes used."""

from __future__ import annotations

import os

from _helpers import run_cli as run, SMALL_LLAMA as LLAMA, write_named_config as write_config


# -- items 2 and 7: rich markup and terminal escapes are data ----------------------------------------


def test_a_local_path_holding_markup_is_printed_as_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, "d[/bold]", LLAMA)
    result = run("d[/bold]")
    assert result.exit_code == 0, result.stderr and "d[/bold]" in result.stdout
    assert "d[/bold]" in result.stdout


HOSTILE = "llama\x1b]0;retitled\x07\x1b[2J\nforged: line\u202e"


def test_terminal_escapes_and_newlines_never_reach_the_terminal_raw(tmp_path):
    folder = write_config(tmp_path, "m", dict(LLAMA, model_type=HOSTILE))
    single = run(folder)
    listing = tmp_path / "list.txt"
    listing.write_text(folder + "\n")
    table = run("scan", str(listing), "--format", "table")
    csv_rows = run("scan", str(listing), "--format", "csv")
    for out in (single.stdout, table.stdout, csv_rows.stdout):
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
        assert "\nforged: line" not in out
    assert "\\x1b]0;retitled" in single.stdout  # escaped, still readable


# -- item 6: narrow terminals and pipes --------------------------------------------------------------


ALPHA = 2 * 2 * 4 * 64 * 2
assert ALPHA == 2048


def test_a_narrow_terminal_gets_every_figure_whole(tmp_path):
    import hfkv
    from rich.console import Console

    from hfkv.render.terminal import render_table

    report = hfkv.inspect(write_config(tmp_path, "m", dict(LLAMA, num_hidden_layers=61_000)), budget_bytes=2**40)
    out = Console(width=30, record=True, highlight=False, file=open(os.devnull, "w"))
    render_table(report, out)
    text = out.export_text()
    assert "…" not in text
    # 61,000 layers × 2048 / 2 layers = 62,464,000 B per token: printed whole on one line.
    assert f"{61_000 * ALPHA // 2:,}" in text


def test_piped_header_is_not_wrapped_and_names_only_the_dtypes_used(tmp_path):
    long_name = "x" * 150
    result = run(write_config(tmp_path, long_name, LLAMA))
    first, second = result.stdout.splitlines()[:2]
    assert long_name in first and "mapper" in first  # one line however long: it is not a terminal
    assert second.startswith("KV bf16") and "state" not in second and "conv" not in second and "indexer" not in second
