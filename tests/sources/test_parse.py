"""Reading config.json's bytes (hfkv/sources/parse.py): UTF-8 only (a lone surrogate refused where the file
is decoded, naming the key; UTF-16/32 named), JSON of an object, a size limit, nesting bounded in a
file and in a dict given to the API; truncated or foreign bytes are one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hfkv
from hfkv import HfkvError
from hfkv.errors import ConfigError, SourceError
from hfkv.sources import MAX_CONFIG_BYTES, load_local, parse_config_bytes

from _helpers import (check_outcome, hfkv_process, run_cli as run, SMALL_LLAMA as LLAMA,
                      write_named_config as write_config)


# -- item 1: a lone surrogate is valid JSON but no UTF-8 output can hold it ---------------------------


SURROGATE = b'{"model_type": "llama\\ud800", "hidden_size": 512}'


def test_a_lone_surrogate_is_refused_where_the_file_is_decoded_naming_the_key():
    with pytest.raises(SourceError) as err:
        parse_config_bytes(SURROGATE, "org/m")
    assert err.value.kind == "invalid-json" and "'model_type'" in err.value.message
    # A proper pair (an emoji, escaped) is text and stays accepted.
    assert parse_config_bytes(b'{"a": "\\ud83d\\ude00"}', "org/m") == {"a": "\U0001F600"}


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


# -- item 1: a lone surrogate is valid JSON but no UTF-8 output can hold it ---------------------------


def test_a_single_report_on_a_lone_surrogate_is_one_line(tmp_path):
    result = run(write_config(tmp_path, "bad", SURROGATE), "--format", "json")
    assert result.exit_code == 1 and "lone surrogate" in result.stderr and "Traceback" not in result.stderr


# -- nesting is bounded -----------------------------------------------------------------------------------


ROOT = Path(__file__).resolve().parents[2]


LLAMA_FIXTURE = ROOT / "fixtures" / "meta-llama__Meta-Llama-3.1-8B" / "config.json"


def nested(levels: int) -> dict:
    """A dict ``levels`` deep, objects and arrays alternating: {"a": [{"a": [...]}]}."""
    top: dict = {}
    node: dict = top
    for _ in range((levels - 1) // 2):
        inner: dict = {}
        node["a"] = [inner]
        node = inner
    return top


def llama() -> dict:
    return json.loads(LLAMA_FIXTURE.read_text())


@pytest.mark.parametrize("engine", [{}, {"gpu": "H200", "engine": "vllm"}, {"gpu": "H200", "engine": "sglang"}])
@pytest.mark.parametrize("where", ["extra_key", "quantization_config", "rope_scaling"])
def test_inspect_config_of_a_dict_1000_levels_deep_is_one_config_error(where, engine):
    """Before: RecursionError in vLLM mode (its transformers lookup copies and encodes the dict), and
    a silent report in the others."""
    config = {**llama(), where: nested(1000)}
    with pytest.raises(hfkv.ConfigError) as raised:
        hfkv.inspect_config(config, model="deep", **engine)
    message = str(raised.value)
    assert message.startswith(f"deep: nested more than 100 levels deep (at '{where}.a[0].a[0]")
    assert message.endswith("); no model config is") and len(message) < 200


def test_inspect_config_of_a_dict_that_holds_itself_is_one_config_error():
    config = llama()
    config["text_config"] = config
    with pytest.raises(hfkv.ConfigError, match=r"nested more than 100 levels deep \(at 'text_config.text_config"):
        hfkv.inspect_config(config, gpu="H200", engine="vllm")


def test_nesting_up_to_the_bound_is_read():
    from hfkv.sources.parse import MAX_DEPTH, check_depth

    check_depth(nested(MAX_DEPTH), "x")  # 100 levels: fine
    with pytest.raises(hfkv.ConfigError):
        check_depth(nested(MAX_DEPTH + 2), "x")
    assert hfkv.inspect_config({**llama(), "extra": nested(MAX_DEPTH - 1)}).alpha_bytes_per_token > 0


@pytest.mark.parametrize("levels", [300, 1000, 5000])
def test_a_config_json_nested_too_deeply_is_one_line_exit_2(tmp_path, levels):
    """A file past the bound (300: json reads it, the vLLM lookup's copies did not; 5,000: json itself
    cannot) is a config hfkv cannot read: exit 2, one line (before: exit 1 as invalid JSON, or an
    internal error)."""
    text = json.dumps(llama())[:-1] + ', "deep": ' + "[" * levels + "]" * levels + "}"
    (tmp_path / "config.json").write_text(text)
    result = hfkv_process(str(tmp_path), "--format", "json", "--engine", "vllm", "--gpu", "H200",
                          env={"HF_HOME": str(tmp_path / "hf")})
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"hfkv: error: {tmp_path}: nested more than 100 levels deep")
    assert result.stderr.count("\n") == 1 and "internal error" not in result.stderr


@pytest.mark.parametrize("raw", [b"", b"null", b"42", b'"text"', b"[]", b"{", b'{"a": 1', b"\xff\xfe\x00",
                                  b"[" * 100000, b'{"num_hidden_layers": 1e400}'])
def test_truncated_or_foreign_json(raw):
    try:
        check_outcome(parse_config_bytes(raw, "config.json"), "config.json")
    except HfkvError as err:
        assert "\n" not in str(err)


def test_oversized_config_is_refused():
    from hfkv.sources import MAX_CONFIG_BYTES

    with pytest.raises(HfkvError, match="limit"):
        parse_config_bytes(b" " * (MAX_CONFIG_BYTES + 1), "config.json")
