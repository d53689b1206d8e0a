"""The command line: JSON contract, formats, exit codes and one-line errors (run as a real process)."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _helpers import hfkv_process, LLAMA_FOLDER as LLAMA


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
V32 = str(FIXTURES / "deepseek-ai__DeepSeek-V3.2" / "config.json")


def hfkv(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from hfkv.commands.cli import entry; entry()", *args],
        capture_output=True, text=True, input=stdin, timeout=120,
    )


def test_json_contract_for_one_model():
    run = hfkv(V32, "--format", "json", "--context", "4k,32k", "--budget", "60GiB")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    for key in ("model", "model_type", "architectures", "kv_cache_dtype", "tensor_parallel_size",
                "alpha_bytes_per_token", "gamma_bytes_per_request", "crossover_tokens", "layers", "contexts", "warnings"):
        assert key in data, key
    assert data["alpha_bytes_per_token"] == 78324  # 61 × (1152 + 132)
    assert isinstance(data["alpha_bytes_per_token"], int)
    layer = data["layers"][0]
    assert {"index", "kind", "copies", "entry_bytes", "state_bytes"} <= set(layer)
    assert [c["tokens"] for c in data["contexts"]] == [4096, 32768]
    # 60 GiB / (4096 × 78324) = 64424509440 / 320815104 → 200
    assert data["contexts"][0]["max_concurrency"] == 200
    assert "\x1b[" not in run.stdout  # no colour when piped


def test_json_has_a_schema_version_and_stable_nulls():
    data = json.loads(hfkv(LLAMA, "--format", "json", "--context", "1k").stdout)
    assert data["schema_version"] == 3
    assert data["num_layers"] == 32 and len(data["layers"]) == 32
    for key in ("commit", "budget_bytes", "batch", "max_context_for_batch", "serving", "engine"):
        assert key in data and data[key] is None, key  # always present, null when unknown or not asked
    # A local config still carries its weights, estimated: Llama-3.1-8B's published count and checkpoint
    # size (../shared/weights-truth.tsv: 8,030,261,248 parameters, index total_size 16,060,522,496 B).
    assert data["weights"]["source"] == "estimate" and data["weights_bytes"] == 16_060_522_496
    assert data["weights"]["total_parameters"] == 8_030_261_248
    assert {"source_layer": None, "window": None, "compress_ratio": None}.items() <= data["layers"][0].items()


def test_an_absurd_context_is_one_line_naming_the_option():
    run = hfkv(LLAMA, "--context", "10000000000000")
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "--context" in run.stderr and "2^40" in run.stderr
    assert "validation error" not in run.stderr and "Options" not in run.stderr


def test_no_budget_max_concurrency_is_null():
    data = json.loads(hfkv(LLAMA, "--format", "json", "--context", "1k").stdout)
    assert data["contexts"][0]["max_concurrency"] is None  # stable nulls: the key is there, unknown
    assert data["contexts"][0]["kv_bytes_per_request"] == 1024 * 131072


def test_tp_option_before_or_after_the_model():
    a = json.loads(hfkv("--tp", "8", LLAMA, "--format", "json").stdout)
    b = json.loads(hfkv(LLAMA, "--tensor-parallel-size", "8", "--format", "json").stdout)
    assert a["alpha_bytes_per_token"] == b["alpha_bytes_per_token"] == 32 * 2 * 1 * 128 * 2  # 8 KV heads / TP 8


def test_several_models_make_a_list_and_keep_the_good_ones(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama", "num_hidden_layers": "many"}')
    run = hfkv(LLAMA, str(bad), V32, "--format", "json")
    assert run.returncode == 2
    rows = json.loads(run.stdout)
    assert [r.get("alpha_bytes_per_token") for r in rows] == [131072, None, 78324]  # input order
    assert rows[1]["model"] == str(bad) and rows[1]["error"].startswith("config:")
    assert run.stderr.count("\n") == 1 and "num_hidden_layers" in run.stderr and str(bad) in run.stderr


@pytest.mark.parametrize(
    "content, needle",
    [
        ("[1, 2]", "not an object"),
        ("{not json", "not valid JSON"),
        ('{"model_type": "brand_new", "num_hidden_layers": 4}', "num_attention_heads"),
        ('{"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 0, "hidden_size": 64}', "num_attention_heads"),
        ('{"model_type": "llama", "num_hidden_layers": NaN, "num_attention_heads": 4, "hidden_size": 64}', "num_hidden_layers"),
        ('{"model_type": "qwen2", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64, '
         '"layer_types": ["full_attention"]}', "layer_types"),
    ],
)
def test_bad_configs_give_one_line_and_a_nonzero_exit(tmp_path, content, needle):
    path = tmp_path / "config.json"
    path.write_text(content)
    run = hfkv(str(path))
    assert run.returncode in (1, 2)
    assert run.stderr.startswith("hfkv: error: ") and run.stderr.count("\n") == 1, run.stderr
    assert needle in run.stderr and "Traceback" not in run.stderr
    assert run.stdout == ""


def test_known_model_type_gets_transformers_defaults(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama", "num_hidden_layers": 4, "torch_dtype": "bfloat16"}')
    data = json.loads(hfkv(str(path), "--format", "json").stdout)
    # LlamaConfig defaults: 32 heads, KV heads = heads, hidden 4096 → head_dim 128: 4 × 2 × 32 × 128 × 2
    assert data["alpha_bytes_per_token"] == 65536
    assert "num_attention_heads" in data["transformers_defaults"]


def test_missing_file_and_bad_usage_exit_codes(tmp_path):
    assert hfkv(str(tmp_path / "nope.json")).returncode == 1
    assert hfkv(LLAMA, "--context", "abc").returncode == 2
    assert hfkv(LLAMA, "--budget", "lots").returncode == 2
    assert hfkv(LLAMA, "--prefix-cache", "8k").returncode == 2  # needs --snapshot-interval


def test_help_as_a_word_shows_the_help():
    # was taken for a model: "help: no such file, and not a Hub repo id"
    result = hfkv_process("help")
    assert result.returncode == 0 and not result.stderr
    assert result.stdout.startswith("Usage: python -m hfkv [OPTIONS] COMMAND [ARGS]")
    watch = hfkv_process("help", "watch")
    assert watch.returncode == 0 and watch.stdout.startswith("Usage: python -m hfkv watch [OPTIONS]")


def test_a_mistyped_local_path_is_said_at_once():
    for written in ("./fixtures/nope", "~/models/x", "../nope/x"):
        result = hfkv_process(written, env={"HF_ENDPOINT": "http://127.0.0.1:9"})  # no Hub could answer
        assert result.returncode == 1
        assert result.stderr == (f"hfkv: error: {written}: no such file or folder (written as a local path: the Hub "
                                 "was not asked)" + ("; a quoted ~ is not expanded (the shell expands it unquoted)"
                                                     if written.startswith("~") else "") + "\n")


def test_table_and_markdown_formats():
    table = hfkv(V32, "--budget", "80GiB", "--batch", "8")
    assert table.returncode == 0
    assert "α = 78,324 B" in table.stdout and "B_max" in table.stdout and "\x1b[" not in table.stdout
    md = hfkv(V32, "--format", "markdown")
    assert md.stdout.startswith("## ") and "| dsa | 61 | 1 |" in md.stdout


def test_prefix_cache_and_spec_tokens_extra_state():
    run = hfkv(LLAMA, "--format", "json", "--prefix-cache", "8k", "--snapshot-interval", "1k", "--spec-tokens", "2")
    data = json.loads(run.stdout)
    assert data["contexts"][0]["extra_state_bytes"] is None  # a pure-attention model has no recurrent state


def test_devices_fifos_and_empty_names_fail_fast(tmp_path):
    import os

    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)  # reading it would block forever
    for target, needle in ((str(fifo), "not a regular file"), ("/dev/zero", "not a regular file"), ("", "empty model name")):
        run = hfkv(target)
        assert run.returncode == 1 and needle in run.stderr and run.stderr.count("\n") == 1, run.stderr


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_engine_modes_with_a_budget_render(engine, fmt):
    run = hfkv(LLAMA, "--engine", engine, "--budget", "60GiB", "--format", fmt)
    assert run.returncode == 0, run.stderr
    # both engines charge Llama-3.1-8B 32 × 2 × 8 × 128 × 2 = 131,072 B per token
    assert "131,072 B per token per GPU" in run.stdout


def test_several_models_keep_the_input_order(tmp_path):
    run = hfkv(LLAMA, str(tmp_path / "missing.json"), V32, "--format", "json")
    rows = json.loads(run.stdout)
    assert [("error" in r) for r in rows] == [False, True, False]
    assert rows[1]["error"].startswith("not-found:")


def test_unsupported_is_said_once():
    run = hfkv(str(FIXTURES / "google-t5__t5-base"), LLAMA, "--format", "json")
    rows = json.loads(run.stdout)
    assert rows[0]["error"].startswith("unsupported: encoder-decoder") and "unsupported: unsupported" not in run.stderr


def test_contexts_past_the_maximum_are_noted_and_absurd_ones_refused():
    data = json.loads(hfkv(LLAMA, "--context", "1m", "--format", "json").stdout)
    assert any("exceed max_position_embeddings 131072" in n for n in data["notes"])
    assert hfkv(LLAMA, "--context", "99999999999999999999").returncode == 2


def test_python_api_arguments():
    import hfkv as api

    assert api.inspect(Path(LLAMA)).alpha_bytes_per_token == 131072  # a pathlib.Path is a path
    with pytest.raises(api.UsageError):
        api.inspect(LLAMA, contexts=(-4096,))
    with pytest.raises(api.UsageError):
        api.inspect(None)
    data = json.loads((Path(LLAMA) / "config.json").read_text())
    assert api.inspect_config(data, kv_cache_dtype="fp8").alpha_bytes_per_token == 65536  # keyword options


def test_error_lines_escape_control_characters():
    from hfkv.errors import SourceError

    err = SourceError("not-found", "missing", source="evil/x\nInjected: 1")
    assert "\n" not in str(err) and "\\n" in str(err)


# A fresh process that reports, when it exits, the modules it imported and whether anything read the
# installed distributions' entry points (pydantic's plugin discovery does, through importlib.metadata).
_WATCHED = ("import atexit, os, sys, importlib.metadata as md\n"
            "scans = []\n"
            "def watched(real):\n"
            "    return lambda *a, **k: scans.append(real.__name__) or real(*a, **k)\n"
            "md.distributions, md.entry_points = watched(md.distributions), watched(md.entry_points)\n"
            "atexit.register(lambda: sys.__stderr__.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n'"
            " + 'SCANS ' + ' '.join(scans) + '\\n' + 'PLUGINS ' + str(os.environ.get('PYDANTIC_DISABLE_PLUGINS'))))\n")


def _run_watched(code: str, *args: str) -> dict[str, list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    run = subprocess.run([sys.executable, "-c", _WATCHED + code, *args], capture_output=True, text=True,
                         timeout=120, env=env)
    lines = dict(line.split(" ", 1) for line in run.stderr.splitlines() if line.split(" ", 1)[0] in
                 ("MODULES", "SCANS", "PLUGINS") and " " in line)
    return {key: lines.get(key, "").split() for key in ("MODULES", "SCANS", "PLUGINS")}


def _cli_after(*args: str) -> dict[str, list[str]]:
    """What a fresh ``hfkv ARGS`` process imported (``MODULES``), the entry-point reads it made
    (``SCANS``) and its ``PYDANTIC_DISABLE_PLUGINS`` at exit (``PLUGINS``)."""
    return _run_watched("from hfkv.commands.cli import entry; entry()", *args)


def _pydantic(modules: list[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in ("pydantic", "pydantic_core")}


def test_help_imports_no_report_machinery_and_nothing_of_pydantic():
    loaded = set(_cli_after("--help")["MODULES"])
    assert not {"hfkv.model.report", "hfkv.model.specs", "hfkv.commands.scan", "hfkv.commands.watch", "hfkv.commands.compare", "hfkv.commands.plot"} & loaded
    assert not _pydantic(loaded), sorted(_pydantic(loaded))


@pytest.mark.parametrize("command", ["scan", "watch", "compare", "plot", "serve"])
def test_a_subcommands_help_imports_nothing_of_pydantic(command):
    loaded = set(_cli_after(command, "--help")["MODULES"])
    assert not _pydantic(loaded) and "hfkv.model.report" not in loaded, sorted(_pydantic(loaded))


def test_a_local_json_report_validates_with_pydantic_without_plugin_discovery(tmp_path):
    # A config as save_pretrained writes it (transformers_version at the top: every key of its class is
    # there), so transformers need not be asked for a default the config left out.
    written = json.loads((Path(LLAMA) / "config.json").read_text()) | {"transformers_version": "4.43.0.dev0"}
    (tmp_path / "config.json").write_text(json.dumps(written))
    seen = _cli_after(str(tmp_path), "--format", "json")
    loaded = set(seen["MODULES"])
    assert {"hfkv.model.report", "hfkv.model.specs", "pydantic"} <= loaded  # the specs are pydantic models
    assert not {"rich", "huggingface_hub", "transformers"} & loaded  # no renderer, no Hub client
    assert seen["SCANS"] == [] and seen["PLUGINS"] == ["__all__"]  # no entry-point scan: plugins off


def test_the_library_leaves_pydantic_plugins_alone():
    seen = _run_watched(f"import hfkv; hfkv.inspect({LLAMA!r})")  # a user's plugins are theirs
    assert seen["PLUGINS"] == ["None"] and "distributions" in seen["SCANS"]


def test_spec_and_option_models_are_built_on_first_use_not_at_import():
    code = ("import hfkv.model.report, hfkv.model.specs as s\n"
            "built = [c.__name__ for c in (s.FullAttention, s.MambaState, s.LayerSpec, s.Layout, hfkv.model.options.Options)"
            " if c.__pydantic_complete__]\n"
            "s.FullAttention(kv_heads=8, head_dim=128)\n"
            "print(built, s.FullAttention.__pydantic_complete__, s.MambaState.__pydantic_complete__)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.stdout.split() == ["[]", "True", "False"], run.stderr


def test_html_format_is_one_self_contained_page():
    one = hfkv(V32, "--format", "html")
    assert one.returncode == 0, one.stderr
    assert one.stdout.startswith("<!DOCTYPE html>") and one.stdout.count("<html") == 1
    assert "78,324" in one.stdout  # DeepSeek-V3.2 α: 61 × ((512 + 64) × 2 + 132) B
    urls = set(re.findall(r"https?://[^\"' <>]*", one.stdout))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls  # an XML namespace, never fetched: nothing to load
    two = hfkv(V32, LLAMA, "--format", "html")
    assert two.returncode == 0 and two.stdout.count("<html") == 1  # several models: sections of one page
    assert "78,324" in two.stdout and "131,072" in two.stdout  # Llama-3.1-8B: 32 × 8 × 128 × 2 × 2 B


def test_serve_is_listed_and_says_what_it_binds():
    listed = hfkv("--help")
    assert "serve" in listed.stdout and "hfkv[app]" in listed.stdout
    usage = hfkv("serve", "--help")
    assert usage.returncode == 0 and "127.0.0.1" in usage.stdout and "7860" in usage.stdout


def test_only_the_command_line_imports_the_http_stack_without_trio():
    pytest.importorskip("trio")
    code = ("import sys, hfkv.runtime.deadlines as d, hfkv.sources.hub as h\n"
            "{}h.HubClient(offline=True)\n"
            "import httpcore2._synchronization as s\n"
            "print(getattr(s, 'trio', 'absent') is None)")
    library = subprocess.run([sys.executable, "-c", code.format("")], capture_output=True, text=True, timeout=120)
    cli = subprocess.run([sys.executable, "-c", code.format("d.sync_http_only()\n")], capture_output=True, text=True,
                         timeout=120)
    assert (library.stdout.split(), cli.stdout.split()) == (["False"], ["True"]), (library.stderr, cli.stderr)


def test_parallel_layout_flags_are_spelled_like_the_engines():
    # DeepSeek-V3.2 fp8 on 8 × H200, TP 8 with SGLang's DP attention over 8 ranks, 689 GB of weights given
    # (the figures themselves are derived in test_deploy.py): --dp is vLLM's short -dp, the switches take no value.
    shared = Path(__file__).resolve().parents[3] / "shared" / "hub-configs" / "deepseek-ai__DeepSeek-V3.2.json"
    if not shared.is_file():
        pytest.skip(f"{shared} is absent")
    args = [str(shared), "--kv-cache-dtype", "fp8", "--gpu", "H200:8", "--tp", "8", "--engine", "sglang",
            "--weights-bytes", "689GB", "--context", "160k", "--format", "json"]
    long = json.loads(hfkv(*args, "--data-parallel-size", "8", "--enable-dp-attention").stdout)
    short = json.loads(hfkv(*args, "--dp", "8", "--enable-dp-attention").stdout)
    assert long["serving"]["layout"] == short["serving"]["layout"]
    assert short["serving"]["layout"]["attention_tensor_parallel_size"] == 1  # TP 8 / DP 8
    assert short["serving"]["verdict"].startswith("fits on 8 × H200-141GB")
    bad = hfkv(*args, "--pp", "0")
    assert bad.returncode == 2 and ("--pp" in bad.stderr or "--pipeline-parallel-size" in bad.stderr)


def test_weights_read_bytes_sets_the_decode_bound_input():
    out = hfkv(LLAMA, "--gpu", "H100", "--weights-bytes", "16GB", "--weights-read-bytes", "8GB", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["serving"]["weights_read_bytes"] == 8 * 10**9


@pytest.mark.parametrize("endpoint, why", [
    ("http://user:pa55w0rd@[bad", "Invalid IPv6 URL"),
    ("http://user:pa55w0rd@127.0.0.1:notaport", "Port could not be cast"),
    ("ftp://127.0.0.1:1", "needs http:// or https://"),
])
def test_a_malformed_endpoint_is_one_usage_line_without_its_credentials(endpoint, why):
    run = hfkv("org/model", "--endpoint", endpoint)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert "is not a Hub URL" in run.stderr and why in run.stderr and "internal error" not in run.stderr
    assert "pa55w0rd" not in run.stderr and "user" not in run.stderr


# -- a full disk, a read-only folder, a busy file -------------------------------------------------------


ROOT = Path(__file__).resolve().parents[2]


DEEPSEEK = ROOT / "fixtures" / "deepseek-ai__DeepSeek-V3.2"


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


# -- every error line is bounded ------------------------------------------------------------------------


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
    """A report with no deployment imported the planning stage and every engine to enrich nothing; it
    does not now. (pydantic's plugin loader imports importlib.metadata, with email, csv, zipfile and
    socket, before it reads PYDANTIC_DISABLE_PLUGINS: since pydantic 2.14 at its own import, which
    hfkv does not work around.)"""
    modules = imported_by(str(DEEPSEEK), "--format", "json")
    assert "pydantic" in modules and "hfkv.mappings.registry" in modules
    assert not {m for m in modules if m.startswith(("hfkv.planning", "hfkv.engines.vllm", "hfkv.engines.sglang"))}
    planned = imported_by(str(DEEPSEEK), "--format", "json", "--gpu", "H200")
    assert "hfkv.planning.enrich" in planned  # with a deployment, the planning stage is loaded as before



@pytest.mark.parametrize("fmt", ["table", "json", "markdown"])
def test_a_reader_that_leaves_ends_every_format_quietly(fmt):
    """``hfkv … | head``: the reader closes the pipe before hfkv writes; every format says nothing and
    exits 1, as click (for its own output) and rich (for the table) do (README's exit codes)."""
    proc = subprocess.Popen([sys.executable, "-m", "hfkv", str(DEEPSEEK), "--format", fmt], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (1, b"")
