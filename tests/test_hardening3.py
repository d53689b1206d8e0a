"""Hardening round 3 (issue 23), reliability and messages: a full disk, a read-only folder or a busy
file is one line with the right exit code (never "internal error, please report it"); --resume takes
no row without figures as done; nesting is bounded in the API and in config.json; every error line is
bounded (a value quoted at most ~200 characters, long lists summarised)."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import hfkv
from hfkv.commands import scan as scan_module
from hfkv.commands.cli import main

ROOT = Path(__file__).resolve().parents[1]
QWEN3 = "Qwen/Qwen3-8B"
LLAMA2 = "meta-llama/Llama-2-7b-hf"
DEEPSEEK = ROOT / "fixtures" / "deepseek-ai__DeepSeek-V3.2"
LLAMA_FIXTURE = ROOT / "fixtures" / "meta-llama__Meta-Llama-3.1-8B" / "config.json"


def scan(*args: str):
    return CliRunner().invoke(main, ["scan", *args], catch_exceptions=False)


def write_list(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "models.txt"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def one_error_line(result, code: int) -> str:
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hfkv: error: "), result.stderr
    assert "internal error" not in lines[0]
    return lines[0]


def hfkv_process(*args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(kwargs.pop("env", {}))
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "hfkv", *args], text=True, timeout=120, cwd=ROOT, env=env,
                          **kwargs)


# -- a full disk, a read-only folder, a busy file -------------------------------------------------------


def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_resume_on_a_full_disk_exits_1_and_leaves_the_file(fake_hub, tmp_path, monkeypatch):
    """--resume must rewrite a file ending in a cut row; on a full disk that is the system's refusal,
    exit 1 like a write that failed mid-scan (before: exit 2, as if the usage were bad)."""
    out = tmp_path / "rows.jsonl"
    assert scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out)).exit_code == 0
    out.write_text(out.read_text() + '{"model": "cut mid-wri')
    before = out.read_text()
    monkeypatch.setattr(scan_module, "write_atomic", full_disk)
    result = scan(write_list(tmp_path, QWEN3, LLAMA2), "--endpoint", fake_hub.url, "-o", str(out), "--resume")
    assert one_error_line(result, 1) == f"hfkv: error: cannot rewrite {out}: No space left on device"
    assert out.read_text() == before


def test_a_busy_file_on_resume_is_one_line_exit_1(fake_hub, tmp_path, monkeypatch):
    out = tmp_path / "rows.jsonl"
    assert scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out)).exit_code == 0
    out.write_text(out.read_text() + '{"model": "cut')

    def busy(src, dst):
        raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(dst))

    monkeypatch.setattr(os, "replace", busy)
    result = scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out), "--resume")
    assert one_error_line(result, 1) == f"hfkv: error: cannot rewrite {out}: {os.strerror(errno.EBUSY)}"


def test_a_full_disk_before_the_first_row_is_one_line_exit_1(fake_hub, tmp_path, monkeypatch):
    """The side file that records a scan's options is written first; on a full disk that write failed
    with "internal error (OSError ...); please report it"."""
    monkeypatch.setattr(os, "pwrite", full_disk)
    out = tmp_path / "rows.jsonl"
    result = scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out))
    line = one_error_line(result, 1)
    assert line == f"hfkv: error: cannot write {out.parent / '.rows.jsonl.hfkv-scan'}: No space left on device"
    assert fake_hub.log == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("fmt", ["json", "table", "markdown", "html"])
def test_a_report_to_a_full_disk_is_one_line_exit_1(fmt):
    """``hfkv MODEL > /dev/full`` (before: "internal error (OSError: [Errno 28] ...); please report it")."""
    with open("/dev/full", "w") as full:
        result = hfkv_process(str(DEEPSEEK), "--format", fmt, stdout=full, stderr=subprocess.PIPE)
    assert result.returncode == 1
    assert result.stderr == "hfkv: error: cannot write the output: No space left on device\n"


def test_the_last_guard_turns_a_system_refusal_into_one_line(monkeypatch, capsys):
    from hfkv.commands import cli

    def busy(**kwargs):
        raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), "/some/file")

    monkeypatch.setattr(cli, "main", busy)
    assert cli.run_guarded() == 1
    assert capsys.readouterr().err == f"hfkv: error: /some/file: {os.strerror(errno.EBUSY)}\n"


# -- --resume takes only finished rows as done ------------------------------------------------------------


@pytest.mark.parametrize("fmt, row", [
    ("jsonl", '{"model": "Qwen/Qwen3-8B"}'),
    ("jsonl", '{"model": "Qwen/Qwen3-8B", "alpha_bytes_per_token": "many"}'),
    ("csv", None),  # the model's name and nothing else, no error
    ("markdown", None),
])
def test_resume_refuses_a_row_without_figures(fake_hub, tmp_path, fmt, row):
    """A row naming a model with neither figures nor an error is not one a scan wrote; --resume took it
    as done and never fetched the model. Now the file is refused (exit 2) and left as it was."""
    suffix = {"jsonl": "jsonl", "csv": "csv", "markdown": "md"}[fmt]
    out = tmp_path / f"rows.{suffix}"
    assert scan(write_list(tmp_path, LLAMA2), "--endpoint", fake_hub.url, "-o", str(out)).exit_code == 0
    written = out.read_text()
    if row is None:
        width = len(scan_module.Columns.for_options(hfkv.Options()).names())
        row = (QWEN3 + "," * (width - 1)) if fmt == "csv" else "| " + " | ".join([QWEN3] + [""] * (width - 1)) + " |"
    out.write_text(written + row + "\n")
    fake_hub.reset()
    result = scan(write_list(tmp_path, LLAMA2, QWEN3), "--endpoint", fake_hub.url, "-o", str(out), "--resume")
    assert "is not a scan row of this format" in one_error_line(result, 2)
    assert out.read_text() == written + row + "\n" and fake_hub.log == []


def test_resume_still_takes_finished_rows_and_error_rows(fake_hub, tmp_path):
    out = tmp_path / "rows.jsonl"
    first = scan(write_list(tmp_path, QWEN3, "nobody/not-here"), "--endpoint", fake_hub.url, "-o", str(out))
    assert first.exit_code == 1
    fake_hub.reset()
    again = scan(write_list(tmp_path, QWEN3, "nobody/not-here"), "--endpoint", fake_hub.url, "-o", str(out),
                 "--resume")
    assert again.exit_code == 1 and fake_hub.log == []  # nothing fetched again


# -- nesting is bounded -----------------------------------------------------------------------------------


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


# -- every error line is bounded ------------------------------------------------------------------------


def write_config(folder: Path, data: dict) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(data))
    return str(folder)


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


def test_a_scan_row_error_is_bounded_too(tmp_path):
    config = write_config(tmp_path / "m", {**llama(), "layer_types": ["y" * 50_000] * 32})
    result = scan(write_list(tmp_path, config), "--format", "jsonl")
    assert result.exit_code == 1
    row = json.loads(result.stdout)
    assert row["error"].startswith("config: key 'layer_types': unknown layer type 'yyy")
    assert row["error"].endswith("' (50,000 characters)") and len(row["error"]) < 300


def test_api_errors_are_bounded():
    with pytest.raises(hfkv.ConfigError) as raised:
        hfkv.inspect_config({**llama(), "layer_types": ["z" * 100_000] * 32})
    assert len(str(raised.value)) < 300 and len(raised.value.message) < 300


def test_a_usage_error_is_one_bounded_line():
    """click's own four lines (usage, hint, blank, error) are one, and a 3,000-character value is cut."""
    result = hfkv_process(str(DEEPSEEK), "--kv-cache-dtype", "9" * 3000)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    line = result.stderr.rstrip("\n")
    assert line.startswith("hfkv: error: Invalid value for '--kv-cache-dtype': '9999")
    assert "' (3,000 characters) is not one of 'auto'" in line and line.endswith("report --help')")
    assert len(line) < 400
    missing = hfkv_process("scan")
    assert missing.returncode == 2
    assert re.fullmatch(r"hfkv: error: Missing argument 'FILE\|-'\. \(see '(python -m )?hfkv scan --help'\)\n", missing.stderr)


def test_bounded_leaves_ordinary_messages_alone_and_cuts_the_rest():
    from hfkv.errors import bounded, quote, summarise

    ordinary = "key 'num_hidden_layers': expected an integer, got 'abc'"
    assert bounded(ordinary) == ordinary
    few = "layers [0, 1, 2] of " + "a " * 100
    assert bounded(few) == few  # short lists are kept whole
    assert summarise([str(i) for i in range(1234 + 3)], limit=3) == "0, 1, 2, … and 1,234 more"
    assert quote("q" * 1000).endswith("' (1,002 characters)") and len(quote("q" * 1000)) < 220
    assert len(bounded("word " * 10_000)) < 2100


# -- a local JSON report imports what it uses --------------------------------------------------------------


def imported_by(*args: str) -> set[str]:
    """Modules a fresh ``hfkv ARGS`` process imports (``-X importtime``) beyond ``python -c pass``'s."""
    def modules(*command: str) -> set[str]:
        result = subprocess.run([sys.executable, "-X", "importtime", *command], capture_output=True, text=True,
                                cwd=ROOT, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert result.returncode in (0, 3), result.stderr[-2000:]  # 3: a verdict of "does NOT fit"
        return {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}

    return modules("-m", "hfkv", *args) - modules("-c", "pass")


def test_a_local_json_report_does_not_import_what_it_never_uses():
    """pydantic's plugin loader imported importlib.metadata (with email, csv, zipfile, socket: ~10 ms)
    before reading PYDANTIC_DISABLE_PLUGINS; a report with no deployment imported the planning stage
    and every engine to enrich nothing. Neither is imported now; everything else is as before."""
    modules = imported_by(str(DEEPSEEK), "--format", "json")
    assert "pydantic" in modules and "hfkv.mappings.registry" in modules
    assert not {"importlib.metadata", "importlib.metadata._adapters", "email", "email.message"} & modules
    assert not {m for m in modules if m.startswith("hfkv.planning")}
    planned = imported_by(str(DEEPSEEK), "--format", "json", "--gpu", "H200")
    assert "hfkv.planning.enrich" in planned  # with a deployment, the planning stage is loaded as before


def test_a_deferred_module_is_the_real_one_at_first_use():
    code = textwrap.dedent("""
        import sys, threading
        from hfkv.commands.cli import defer_imports
        defer_imports()
        import importlib.metadata as metadata
        assert type(metadata).__name__ == "Deferred"
        seen = []
        threads = [threading.Thread(target=lambda: seen.append(metadata.version("click"))) for _ in range(8)]
        [t.start() for t in threads]; [t.join() for t in threads]
        from importlib.metadata import version
        assert seen == [version("click")] * 8 and metadata.version is version
        assert type(sys.modules["importlib.metadata"]).__name__ == "module"
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.stdout == "ok\n", result.stderr
