"""Hardening round 2, data and terminals: text a config or a user provides is data everywhere
(unencodable strings, rich markup, terminal escapes), budgets never answer silently with a
wrong reading, and bad input gets one line that names the problem."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from hfkv.commands.cli import main
from hfkv.errors import ConfigError, SourceError, shorten
from hfkv.sources import MAX_CONFIG_BYTES, load_local, parse_config_bytes
from hfkv.units import parse_size

# A small Llama: 2 layers × 2 (K, V) × 4 kv heads × 64 head_dim (512 / 8) × 2 bytes (bf16) = 2048 B per token.
LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_attention_heads": 8,
         "num_key_value_heads": 4, "num_hidden_layers": 2, "max_position_embeddings": 2048, "torch_dtype": "bfloat16",
         "intermediate_size": 1024, "vocab_size": 1000}
ALPHA = 2 * 2 * 4 * 64 * 2
assert ALPHA == 2048


def run(*args: str):
    """``hfkv ...`` in-process (stdout alone in ``stdout``)."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def write_config(folder: Path, name: str, data: dict | str | bytes) -> str:
    path = folder / name
    path.mkdir(parents=True, exist_ok=True)
    raw = data if isinstance(data, bytes) else (data if isinstance(data, str) else json.dumps(data)).encode()
    (path / "config.json").write_bytes(raw)
    return str(path)


# -- item 1: a lone surrogate is valid JSON but no UTF-8 output can hold it ---------------------------

SURROGATE = b'{"model_type": "llama\\ud800", "hidden_size": 512}'


def test_a_lone_surrogate_is_refused_where_the_file_is_decoded_naming_the_key():
    with pytest.raises(SourceError) as err:
        parse_config_bytes(SURROGATE, "org/m")
    assert err.value.kind == "invalid-json" and "'model_type'" in err.value.message
    # A proper pair (an emoji, escaped) is text and stays accepted.
    assert parse_config_bytes(b'{"a": "\\ud83d\\ude00"}', "org/m") == {"a": "\U0001F600"}


@pytest.mark.parametrize("fmt", ["csv", "markdown", "jsonl"])
def test_a_scan_keeps_every_row_when_one_config_holds_a_lone_surrogate(tmp_path, fmt):
    good = [write_config(tmp_path, f"good{i}", LLAMA) for i in range(3)]
    bad = write_config(tmp_path, "bad", SURROGATE)
    listing = tmp_path / "list.txt"
    listing.write_text("\n".join([good[0], bad, *good[1:]]) + "\n")
    out = tmp_path / f"rows.{fmt}"
    result = run("scan", str(listing), "--format", fmt, "--output", str(out))
    assert result.exit_code == 1  # one row failed, and says why
    text = out.read_text(encoding="utf-8")
    assert all(path in text for path in good) and "lone surrogate" in text
    again = run("scan", str(listing), "--format", fmt, "--output", str(out), "--resume")
    assert again.exit_code == 1 and out.read_text(encoding="utf-8").count(bad) == 1  # resume does not crash


def test_a_single_report_on_a_lone_surrogate_is_one_line(tmp_path):
    result = run(write_config(tmp_path, "bad", SURROGATE), "--format", "json")
    assert result.exit_code == 1 and "lone surrogate" in result.stderr and "Traceback" not in result.stderr


# -- items 2 and 7: rich markup and terminal escapes are data ----------------------------------------


@pytest.mark.parametrize("model_type", ["[/]", "[bold red]x[/bold red]", "[link=http://e.x]y[/link]"])
def test_rich_markup_in_a_config_does_not_abort_a_table_scan(tmp_path, model_type):
    folders = [write_config(tmp_path, f"m{i}", dict(LLAMA, model_type=model_type if i == 1 else "llama"))
               for i in range(3)]
    listing = tmp_path / "list.txt"
    listing.write_text("\n".join(folders) + "\n")
    result = run("scan", str(listing), "--format", "table")
    assert all(f in result.stdout for f in folders)
    if model_type == "[/]":
        assert "[/]" in result.stdout  # shown as the text it is


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


# -- item 14: budgets ----------------------------------------------------------------------------------


def test_a_budget_without_a_unit_is_refused_not_read_as_bytes():
    with pytest.raises(Exception) as err:
        parse_size("60")
    assert "no unit" in str(err.value) and "60GiB" in str(err.value)
    assert parse_size("60B") == 60 and parse_size("1073741824") == 2**30 and parse_size("1KiB") == 1024
    result = run(str(Path(__file__).resolve().parents[1] / "fixtures" / "meta-llama__Llama-2-7b-hf"), "--budget", "60")
    assert result.exit_code == 2 and "no unit" in result.stderr


def test_a_budget_as_vllm_prints_it_is_floored_to_bytes_and_said_once():
    # vLLM prints "Available KV cache memory: 6.51 GiB": 6.51 × 2^30 = 6,990,059,274.24 → 6,990,059,274 B.
    notes: list[str] = []
    assert parse_size("6.51GiB", notes) == 6_990_059_274
    assert notes == ["6.51GiB = 6,990,059,274.24 bytes, floored to 6,990,059,274"]
    assert parse_size("1.5KiB") == 1536  # whole: nothing to say
    with pytest.raises(Exception, match="whole number of bytes"):
        parse_size("0.3B")
    llama = str(Path(__file__).resolve().parents[1] / "fixtures" / "meta-llama__Meta-Llama-3.1-8B")
    result = run(llama, "--budget", "6.51GiB", "--context", "4k", "--format", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["budget_bytes"] == 6_990_059_274
    assert result.stderr.count("floored to 6,990,059,274") == 1


def test_a_budget_too_small_for_one_token_says_it_does_not_fit(tmp_path):
    # 1 KiB = 1024 B < 2048 B, one token of one request: not even one token fits.
    result = run(write_config(tmp_path, "m", LLAMA), "--budget", "1KiB", "--batch", "1")
    assert "does not fit" in result.stdout and ": 0 tokens" not in result.stdout


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_weights_that_do_not_fit_are_said_in_every_format(tmp_path, fmt):
    # An H100's CUDA total 85,029,158,912 B: vLLM may use ceil(× 0.92) = 78,226,826,200 < 200 × 10^9 B of weights.
    result = run(write_config(tmp_path, "m", LLAMA), "--gpu", "H100", "--weights-bytes", "200GB", "--format", fmt)
    assert "the weights do not fit" in result.stdout
    if fmt == "json":
        serving = json.loads(result.stdout)["serving"]
        assert serving["weights_fit"] is False and serving["usable_bytes"] == 78_226_826_200


# -- item 15: messages -------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding, named", [
    ("utf-16", "UTF-16 (little-endian) text with a byte-order mark"), ("utf-16-le", "UTF-16 (little-endian) text"),
    ("utf-16-be", "UTF-16 (big-endian) text"), ("utf-32", "UTF-32 (little-endian) text with a byte-order mark"),
    ("utf-32-be", "UTF-32 (big-endian) text"),
])
def test_utf16_and_utf32_are_named_not_reported_as_bad_json(encoding, named):
    with pytest.raises(SourceError) as err:
        parse_config_bytes(json.dumps(LLAMA).encode(encoding), "m")
    assert err.value.message == f"config.json is {named}, not UTF-8: save it as UTF-8"


def test_not_utf8_and_not_json_are_told_apart():
    with pytest.raises(SourceError, match="not UTF-8 text"):
        parse_config_bytes(b'{"a": "\xff"}', "m")
    with pytest.raises(SourceError, match="not valid JSON"):
        parse_config_bytes(b'{"a": }', "m")


@pytest.mark.parametrize("raw, named", [(b"null", "null"), (b"[1]", "an array"), (b'"x"', "a string"), (b"3", "a number")])
def test_a_config_that_is_not_an_object_names_its_json_type(raw, named):
    with pytest.raises(ConfigError) as err:
        parse_config_bytes(raw, "m")
    assert err.value.message == f"config.json holds {named}, not an object" and "NoneType" not in str(err.value)


def test_a_too_large_file_gives_its_real_size(tmp_path):
    path = tmp_path / "config.json"
    size = MAX_CONFIG_BYTES + 5 * 2**20  # 37 MiB = 38,797,312 bytes
    with open(path, "wb") as handle:
        handle.truncate(size)
    with pytest.raises(SourceError) as err:
        load_local(path)
    assert err.value.message == "config.json is 37.00 MiB (38,797,312 bytes), over the 32.00 MiB limit"


def test_long_names_are_cut_with_an_ellipsis_in_messages():
    name = "org/" + "n" * 300
    text = str(SourceError("not-found", "no such file", source=name))
    assert "…" in text and len(text) < 160 and text.startswith("org/nnn") and text.endswith("nnn: no such file")
    assert shorten("short") == "short"
