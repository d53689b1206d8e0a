"""``hfkv scan`` against the fake Hub: good and bad rows, exit codes, request counts, formats, resume."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import hfkv
from fakehub import Fault
from hfkv.commands import scan as scan_module
from hfkv.commands.cli import main
from hfkv.commands.scan import read_entries

from _helpers import run_cli as run, SMALL_LLAMA as LLAMA, write_list, write_named_config as write_config


ROOT = Path(__file__).resolve().parents[2]
QWEN3 = "Qwen/Qwen3-8B"
LLAMA2 = "meta-llama/Llama-2-7b-hf"
GPT_OSS = "openai/gpt-oss-120b"
DEEPSEEK = "deepseek-ai/DeepSeek-V3"
GOOD = (QWEN3, LLAMA2, GPT_OSS)

# Hand-derived figures (bf16/fp16 KV, 2 bytes per value).
# Qwen3-8B: 36 layers × 2 (K, V) × 8 kv heads × 128 head_dim × 2 bytes = 147456 per token.
QWEN3_ALPHA = 36 * 2 * 8 * 128 * 2
assert QWEN3_ALPHA == 147456
# Llama-2-7b: 32 layers × 2 × 32 kv heads × 128 (4096 / 32) × 2 bytes (float16) = 524288.
LLAMA2_ALPHA = 32 * 2 * 32 * 128 * 2
assert LLAMA2_ALPHA == 524288
# gpt-oss-120b: 36 layers alternating sliding (window 128) and full, entry 2 × 8 × 64 × 2 = 2048 bytes:
# α = 18 full layers × 2048 = 36864; γ = 18 sliding layers × 128 × 2048 = 4718592.
GPT_OSS_ALPHA, GPT_OSS_GAMMA = 18 * 2048, 18 * 128 * 2048
assert (GPT_OSS_ALPHA, GPT_OSS_GAMMA) == (36864, 4718592)


def config_path(repo: str) -> str:
    return f"/{repo}/resolve/main/config.json"


def scan(*args: str, stdin: str | None = None):
    """``hfkv scan ...`` in-process; returns the click Result (``stdout`` is stdout alone)."""
    return CliRunner().invoke(main, ["scan", *args], input=stdin, catch_exceptions=False)


def jsonl(text: str) -> dict[str, dict]:
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    by_model = {row["model"]: row for row in rows}
    assert len(by_model) == len(rows), "a model appears twice"
    return by_model


def without_origin(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in ("model", "source", "commit")}


def local_report(repo: str, **options) -> dict:
    return hfkv.inspect(str(ROOT / "fixtures" / repo.replace("/", "__") / "config.json"), **options).to_dict()


@pytest.fixture
def bad_repos(fake_hub):
    """A gated repo (no token is sent) and a repo whose config.json is not JSON."""
    fake_hub.add_fixture("acme/gated-llama", folder="meta-llama__Llama-2-7b-hf", gated="manual")
    fake_hub.add_model("acme/broken", {"config.json": b'{"model_type": "llama", '})
    return fake_hub


# -- the list ---------------------------------------------------------------------------------------


def test_read_entries_skips_blanks_comments_and_repeats():
    lines = ["# models\n", "\n", "org/a\n", "  org/b@v1   # pinned\n", "org/a\n", "/tmp/x#1/config.json\n", "   \n"]
    assert read_entries(lines) == ["org/a", "org/b@v1", "/tmp/x#1/config.json"]


# -- a mixed list ---------------------------------------------------------------------------------------


def test_mixed_list_keeps_good_rows_marks_bad_ones_and_exits_1(fake_hub, bad_repos, tmp_path):
    listing = write_list(
        tmp_path, "# a comment", QWEN3, "", LLAMA2, "nobody/not-here", "acme/gated-llama",
        f"{QWEN3}@no-such-branch", "acme/broken", GPT_OSS, QWEN3,  # Qwen3 listed twice
    )
    result = scan(listing, "--endpoint", fake_hub.url)
    assert result.exit_code == 1, result.output
    rows = jsonl(result.stdout)
    assert set(rows) == {QWEN3, LLAMA2, GPT_OSS, "nobody/not-here", "acme/gated-llama",
                         f"{QWEN3}@no-such-branch", "acme/broken"}

    for repo in GOOD:  # the same figures as the report of the local file
        assert "error" not in rows[repo]
        assert without_origin(rows[repo]) == without_origin(local_report(repo))
        assert rows[repo]["source"] == "hub" and rows[repo]["commit"] == fake_hub.commit(repo)
    assert rows[QWEN3]["alpha_bytes_per_token"] == QWEN3_ALPHA
    assert rows[LLAMA2]["alpha_bytes_per_token"] == LLAMA2_ALPHA
    assert (rows[GPT_OSS]["alpha_bytes_per_token"], rows[GPT_OSS]["gamma_bytes_per_request"]) == (GPT_OSS_ALPHA, GPT_OSS_GAMMA)
    # Qwen3-8B at its maximum, 40960 tokens: 147456 × 40960 = 6039797760
    assert rows[QWEN3]["contexts"][-1] == {"tokens": 40960, "kv_bytes_per_request": 6039797760,
                                           "read_bytes_per_step": 6039797760, "extra_state_bytes": None,
                                           "max_concurrency": None}  # stable nulls (schema 2)

    assert rows["nobody/not-here"]["error"].startswith("not-found: ")
    assert rows["acme/gated-llama"]["error"].startswith("gated: ")
    assert rows[f"{QWEN3}@no-such-branch"]["error"].startswith("bad-revision: ")
    assert rows["acme/broken"]["error"].startswith("invalid-json: ")
    for repo in ("nobody/not-here", "acme/gated-llama", f"{QWEN3}@no-such-branch", "acme/broken"):
        assert set(rows[repo]) == {"model", "error"}
    assert "5 of" not in result.stderr and "4 of 7 models failed" in result.stderr

    # One GET of the config per repo, nothing else; the repo listed twice only once.
    for repo in (LLAMA2, GPT_OSS, "acme/broken"):
        assert fake_hub.calls(repo) == [("GET", config_path(repo))], repo
    qwen = fake_hub.calls(QWEN3)  # and one GET that found no such branch
    assert sorted(qwen) == sorted([("GET", config_path(QWEN3)), ("GET", f"/{QWEN3}/resolve/no-such-branch/config.json")])
    assert not [e for e in fake_hub.requests() if e["path"].startswith("/api/")]


def test_all_good_exits_0_and_stdin_works(fake_hub):
    result = scan("-", "--endpoint", fake_hub.url, stdin=f"{LLAMA2}\n{GPT_OSS}\n")
    assert result.exit_code == 0, result.output
    assert set(jsonl(result.stdout)) == {LLAMA2, GPT_OSS}
    assert result.stderr == ""  # no bar (stderr is not a terminal), no summary


def test_local_paths_need_no_hub(fake_hub, tmp_path):
    folder = ROOT / "fixtures" / "Qwen__Qwen3-8B"
    result = scan(write_list(tmp_path, str(folder)), "--endpoint", fake_hub.url)
    assert result.exit_code == 0, result.output
    assert jsonl(result.stdout)[str(folder)]["alpha_bytes_per_token"] == QWEN3_ALPHA
    assert fake_hub.log == []


def test_accounting_options_apply_to_every_row(fake_hub, tmp_path):
    result = scan(write_list(tmp_path, LLAMA2, QWEN3), "--endpoint", fake_hub.url,
                  "--kv-cache-dtype", "fp8", "--tp", "4", "--context", "8k")
    assert result.exit_code == 0, result.output
    rows = jsonl(result.stdout)
    # fp8, TP 4: Llama-2 32 × 2 × (32 / 4) × 128 × 1 = 65536; Qwen3 36 × 2 × (8 / 4) × 128 × 1 = 18432
    assert rows[LLAMA2]["alpha_bytes_per_token"] == 32 * 2 * 8 * 128 == 65536
    assert rows[QWEN3]["alpha_bytes_per_token"] == 36 * 2 * 2 * 128 == 18432
    assert [c["tokens"] for c in rows[QWEN3]["contexts"]] == [8192]
    assert without_origin(rows[QWEN3]) == without_origin(
        local_report(QWEN3, kv_cache_dtype="fp8", tensor_parallel_size=4, contexts=(8192,)))


def test_an_unexpected_exception_becomes_an_internal_row(fake_hub, tmp_path, monkeypatch):
    import hfkv.inspection

    real = hfkv.inspection.inspect_config

    def flaky(data, *, model, **kwargs):
        if model == GPT_OSS:
            raise ZeroDivisionError("boom")
        return real(data, model=model, **kwargs)

    monkeypatch.setattr(hfkv.inspection, "inspect_config", flaky)
    result = scan(write_list(tmp_path, LLAMA2, GPT_OSS, QWEN3), "--endpoint", fake_hub.url)
    assert result.exit_code == 1
    rows = jsonl(result.stdout)
    assert rows[GPT_OSS] == {"model": GPT_OSS, "error": "internal: ZeroDivisionError: boom"}
    assert rows[LLAMA2]["alpha_bytes_per_token"] == LLAMA2_ALPHA
    assert rows[QWEN3]["alpha_bytes_per_token"] == QWEN3_ALPHA


def test_a_dropped_connection_is_retried(fake_hub, tmp_path, no_sleep):
    fake_hub.faults[LLAMA2] = Fault(kind="reset", methods=("GET",), times=1)
    result = scan(write_list(tmp_path, LLAMA2, QWEN3), "--endpoint", fake_hub.url)
    assert result.exit_code == 0, result.output
    assert jsonl(result.stdout)[LLAMA2]["alpha_bytes_per_token"] == LLAMA2_ALPHA
    get = ("GET", config_path(LLAMA2))
    assert fake_hub.calls(LLAMA2) == [get, get] and no_sleep == [1]  # the dropped GET, then the library's retry


def test_a_repo_that_always_drops_fails_alone(fake_hub, tmp_path, no_sleep):
    fake_hub.faults[LLAMA2] = Fault(kind="reset")
    result = scan(write_list(tmp_path, LLAMA2, QWEN3, GPT_OSS), "--endpoint", fake_hub.url, "--jobs", "3")
    assert result.exit_code == 1
    rows = jsonl(result.stdout)
    assert rows[LLAMA2]["error"].startswith("network: ")
    # the GET and the library's 5 retries (1 + 2 + 4 + 8 + 8 s apart), no more: ours are for cut bodies only
    assert fake_hub.calls(LLAMA2) == [("GET", config_path(LLAMA2))] * 6 and no_sleep == [1, 2, 4, 8, 8]
    assert rows[QWEN3]["alpha_bytes_per_token"] == QWEN3_ALPHA
    assert rows[GPT_OSS]["alpha_bytes_per_token"] == GPT_OSS_ALPHA


def test_weights_adds_parameter_counts_with_one_api_request(fake_hub, tmp_path):
    # 4096 × 4096 + 32000 × 4096 = 16777216 + 131072000 = 147849216 BF16 parameters, 2 bytes each
    fake_hub.add_fixture("acme/llama-w", folder="meta-llama__Llama-2-7b-hf",
                         safetensors={"model.safetensors": {"a": ("BF16", [4096, 4096]), "b": ("BF16", [32000, 4096])}})
    listing = write_list(tmp_path, "acme/llama-w")
    result = scan(listing, "--endpoint", fake_hub.url, "--weights", "--format", "csv")
    assert result.exit_code == 0, result.output
    row = next(csv.DictReader(io.StringIO(result.stdout)))
    assert row["total_parameters"] == "147849216"
    assert row["weights_bytes"] == str(2 * 147849216) == "295698432"
    api = [e for e in fake_hub.requests("acme/llama-w") if e["path"].startswith("/api/")]
    assert len(api) == 1 and len(fake_hub.requests("acme/llama-w")) == 2  # GET config, 1 API call


# -- formats --------------------------------------------------------------------------------------------


def test_csv_shape(fake_hub, tmp_path):
    result = scan(write_list(tmp_path, QWEN3, GPT_OSS, "nobody/not-here"), "--endpoint", fake_hub.url, "--format", "csv")
    assert result.exit_code == 1
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["model", "model_type", "mapper", "kv_dtype", "alpha_bytes_per_token", "gamma_bytes_per_request",
                       "crossover_tokens", "bytes@4K", "bytes@32K", "bytes@128K", "max_context", "bytes@max", "error"]
    by_model = {r[0]: dict(zip(rows[0], r)) for r in rows[1:]}
    assert len(rows) == 4 and len(by_model) == 3
    qwen = by_model[QWEN3]
    assert (qwen["model_type"], qwen["kv_dtype"], qwen["error"]) == ("qwen3", "bf16", "")
    assert qwen["alpha_bytes_per_token"] == "147456"
    assert qwen["bytes@4K"] == str(147456 * 4096) == "603979776"
    assert qwen["bytes@128K"] == ""  # past the model's maximum (40960)
    assert (qwen["max_context"], qwen["bytes@max"]) == ("40960", str(147456 * 40960))
    oss = by_model[GPT_OSS]
    # 131072 tokens: 36864 × 131072 + 4718592 = 4831838208 + 4718592 = 4836556800; S* = 4718592 / 36864 = 128
    assert (oss["bytes@128K"], oss["bytes@max"], oss["crossover_tokens"]) == ("4836556800", "4836556800", "128")
    missing = by_model["nobody/not-here"]
    assert missing["error"].startswith("not-found: ") and missing["alpha_bytes_per_token"] == ""


def test_markdown_shape_and_escaping(fake_hub, tmp_path):
    weird = tmp_path / "we|ird <b>" / "config.json"
    weird.parent.mkdir()
    shutil.copy(ROOT / "fixtures" / "meta-llama__Llama-2-7b-hf" / "config.json", weird)
    result = scan(write_list(tmp_path, str(weird), QWEN3), "--endpoint", fake_hub.url, "--format", "markdown")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("| model | model_type | mapper | KV dtype | α (B/token) |")
    assert re.fullmatch(r"\|(-{3}:?\|)+", lines[1])
    assert len(lines) == 4
    cells = [len(re.split(r"(?<!\\)\|", line)) for line in lines]
    assert len(set(cells)) == 1  # every row has the header's cell count: the pipe in the path is escaped
    row = next(line for line in lines if "ird" in line)
    assert "we\\|ird &lt;b&gt;" in row and "<b>" not in row
    assert "| 524,288 B |" in row  # Llama-2 α
    assert "| 2.00 GiB |" in row  # 524288 × 4096 = 2147483648 = 2 GiB at its maximum, 4096


def test_table_format_prints_every_row(fake_hub, tmp_path):
    result = scan(write_list(tmp_path, QWEN3, "nobody/not-here"), "--endpoint", fake_hub.url, "--format", "table")
    assert result.exit_code == 1
    assert QWEN3 in result.stdout and "not-found" in result.stdout and "147,456 B" in result.stdout


# -- --output and --resume ---------------------------------------------------------------------------------


def test_output_then_resume_completes_a_truncated_jsonl(fake_hub, tmp_path):
    out = tmp_path / "rows.jsonl"
    first = scan(write_list(tmp_path, QWEN3, "nobody/not-here"), "--endpoint", fake_hub.url, "--output", str(out))
    assert first.exit_code == 1 and first.stdout == ""  # rows went to the file
    before = out.read_text()
    assert len(before.splitlines()) == 2
    # Interrupted while writing the third row: a line without its end.
    partial = json.dumps(local_report(LLAMA2) | {"model": LLAMA2})[:120]
    out.write_text(before + partial)

    fake_hub.reset()
    listing = write_list(tmp_path, QWEN3, "nobody/not-here", LLAMA2, GPT_OSS)
    result = scan(listing, "--endpoint", fake_hub.url, "--output", str(out), "--resume")
    assert result.exit_code == 1  # the earlier failed row still counts
    text = out.read_text()
    assert text.startswith(before) and text.endswith("\n")
    rows = jsonl(text)  # every line parses; no model twice
    assert set(rows) == {QWEN3, "nobody/not-here", LLAMA2, GPT_OSS}
    assert rows[LLAMA2]["alpha_bytes_per_token"] == LLAMA2_ALPHA
    # Only the repos not yet in the file were fetched.
    assert fake_hub.calls(QWEN3) == [] and fake_hub.calls("nobody/not-here") == []
    assert len(fake_hub.calls(LLAMA2)) == 1 and len(fake_hub.calls(GPT_OSS)) == 1

    fake_hub.reset()
    again = scan(listing, "--endpoint", fake_hub.url, "--output", str(out), "--resume")
    assert again.exit_code == 1 and out.read_text() == text and fake_hub.log == []


def test_resume_csv_keeps_one_header(fake_hub, tmp_path):
    out = tmp_path / "rows.csv"
    assert scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out)).exit_code == 0
    out.write_text(out.read_text() + f"{LLAMA2},llama,dense")  # truncated row
    result = scan(write_list(tmp_path, QWEN3, LLAMA2), "--endpoint", fake_hub.url, "-o", str(out), "--resume")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(out.read_text())))
    assert rows[0][0] == "model" and [r[0] for r in rows].count("model") == 1
    assert sorted(r[0] for r in rows[1:]) == sorted([QWEN3, LLAMA2])
    assert dict(zip(rows[0], rows[-1]))["alpha_bytes_per_token"] == str(LLAMA2_ALPHA)


def test_resume_markdown_appends_rows_under_the_header(fake_hub, tmp_path):
    out = tmp_path / "rows.md"
    assert scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out)).exit_code == 0
    fake_hub.reset()
    result = scan(write_list(tmp_path, QWEN3, GPT_OSS), "--endpoint", fake_hub.url, "-o", str(out), "--resume")
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert len(lines) == 4 and lines[1].startswith("|---")
    assert fake_hub.calls(QWEN3) == []


# -- usage -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["missing-list.txt"],
    ["{list}", "--resume"],
    ["{list}", "--format", "table", "--output", "{tmp}/x.txt"],
    ["{list}", "--jobs", "0"],
    ["{list}", "--format", "yaml"],
    ["{list}", "--output", "{tmp}/no/such/folder/rows.jsonl"],
])
def test_bad_usage_exits_2(fake_hub, tmp_path, args):
    listing = write_list(tmp_path, QWEN3)
    result = scan(*[a.format(list=listing, tmp=tmp_path) for a in args], "--endpoint", fake_hub.url)
    assert result.exit_code == 2
    assert fake_hub.log == []


def test_resume_into_a_file_with_other_columns_exits_2(fake_hub, tmp_path):
    out = tmp_path / "rows.csv"
    out.write_text("model,alpha\nx,1\n")
    result = scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(out), "--resume")
    assert result.exit_code == 2
    assert out.read_text() == "model,alpha\nx,1\n"


# -- progress bar -------------------------------------------------------------------------------------


def test_progress_bar_only_when_stderr_is_a_terminal(tmp_path):
    """stderr on a pseudo-terminal gets a bar; stdout (a pipe) gets the rows and nothing else."""
    pty = pytest.importorskip("pty")
    import fcntl
    import struct
    import termios

    folder = ROOT / "fixtures" / "Qwen__Qwen3-8B"
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a 0-column pty shows no bar
    proc = subprocess.Popen([sys.executable, "-m", "hfkv", "scan", write_list(tmp_path, str(folder))],
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    err = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            err += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    out = proc.stdout.read().decode()
    assert proc.wait(timeout=60) == 0
    # a bar was drawn (tqdm may clear it before redrawing 1/1 when the scan finishes quickly)
    assert re.search(r"\b[01]/1\b", err.decode(errors="replace")), err
    assert jsonl(out)[str(folder)]["alpha_bytes_per_token"] == QWEN3_ALPHA


# -- threads and transformers defaults ----------------------------------------------------------------


def test_concurrent_first_reports_needing_transformers_defaults_all_succeed(tmp_path):
    """A fresh process, 24 copies of a sparse config whose geometry comes from transformers defaults.

    Reports built in 16 threads at once used to import transformers concurrently and 1-2 rows lost
    their defaults ("missing key"). A regression shows up in most runs of this test, never falsely.
    """
    source = ROOT / "fixtures" / "google__gemma-3-4b-it" / "config.json"
    paths = []
    for i in range(24):
        folder = tmp_path / f"copy{i:02d}"
        folder.mkdir()
        shutil.copy(source, folder / "config.json")
        paths.append(str(folder))
    run = subprocess.run([sys.executable, "-m", "hfkv", "scan", write_list(tmp_path, *paths), "--jobs", "16"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
    rows = jsonl(run.stdout)
    # Gemma 3 text defaults: 4 kv heads × 256 head_dim, every 6th of 34 layers full (5 layers), window 1024:
    # α = 5 × 2 × 4 × 256 × 2 = 20480
    assert {r["alpha_bytes_per_token"] for r in rows.values()} == {5 * 2 * 4 * 256 * 2} and len(rows) == 24


# -- files that are not ours, lists that are not lists, outputs that fail ------------------------------


def one_error_line(result, code: int) -> str:
    """The single stderr line of a failed scan, after checking the exit code and that nothing else was said."""
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hfkv: error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("fmt, text", [
    ("jsonl", "important\n"),
    ("jsonl", '{"model": "a/b", "alpha_bytes_per_token": 1}\nimportant\n{"model": "c/d"'),  # one foreign line
    ("csv", "important\n"),
    ("markdown", "# My notes\n\nimportant\n"),
])
def test_resume_refuses_a_file_a_scan_did_not_write(fake_hub, tmp_path, fmt, text):
    notes = tmp_path / "notes.txt"
    notes.write_text(text)
    result = scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(notes), "--resume",
                  "--format", fmt)
    one_error_line(result, 2)
    assert notes.read_text() == text  # untouched, not even the truncated last line dropped
    assert fake_hub.log == []


@pytest.mark.parametrize("resume", [False, True])
@pytest.mark.parametrize("link", [False, True])
def test_output_that_is_the_list_itself_exits_2(fake_hub, tmp_path, resume, link):
    listing = write_list(tmp_path, QWEN3)
    target = listing
    if link:  # another name for the same file
        target = str(tmp_path / "alias.txt")
        os.symlink(listing, target)
    before = Path(listing).read_text()
    result = scan(listing, "--endpoint", fake_hub.url, "-o", target, *(["--resume"] if resume else []))
    assert "is the list being scanned" in one_error_line(result, 2)
    assert Path(listing).read_text() == before
    assert fake_hub.log == []


def test_list_that_is_not_utf8_text_exits_2(fake_hub, tmp_path):
    binary = tmp_path / "binary.bin"
    binary.write_bytes(b"org/a\n\xff\xfe\x00\x01\n")
    line = one_error_line(scan(str(binary), "--endpoint", fake_hub.url), 2)
    assert line == f"hfkv: error: cannot read the list {binary}: not UTF-8 text (byte 6)"  # b"org/a\n" is 6 bytes
    stdin = scan("-", "--endpoint", fake_hub.url, stdin="org/a\n\udcff\n".encode("utf-8", "surrogateescape"))
    assert one_error_line(stdin, 2) == "hfkv: error: cannot read the list from stdin: not UTF-8 text (line 2)"
    assert fake_hub.log == []


def test_list_that_is_a_device_or_fifo_is_refused_at_once(fake_hub, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes
    for name in ("/dev/zero", str(fifo)):
        if not os.path.exists(name):
            continue
        line = one_error_line(scan(name, "--endpoint", fake_hub.url), 2)
        assert line == f"hfkv: error: cannot read the list {name}: not a regular file"


def test_list_over_the_size_cap_exits_2(fake_hub, tmp_path, monkeypatch):
    assert scan_module.LIST_LIMIT == 64 * 1024 * 1024
    monkeypatch.setattr(scan_module, "LIST_LIMIT", 10)
    listing = write_list(tmp_path, "org/a", "org/b")  # 12 bytes: "org/a\norg/b\n"
    assert "larger than 10 B" in one_error_line(scan(listing, "--endpoint", fake_hub.url), 2)
    monkeypatch.setattr(scan_module, "LIST_LIMIT", 12)  # exactly at the cap: read
    ok = scan(listing, "--endpoint", fake_hub.url)
    assert ok.exit_code == 1 and set(jsonl(ok.stdout)) == {"org/a", "org/b"}  # not on the fake Hub


def test_missing_list_is_one_line(fake_hub, tmp_path):
    line = one_error_line(scan(str(tmp_path / "nope.txt"), "--endpoint", fake_hub.url), 2)
    assert line == f"hfkv: error: cannot read the list {tmp_path / 'nope.txt'}: No such file or directory"


def test_output_that_cannot_be_opened_exits_2(fake_hub, tmp_path):
    target = tmp_path / "no" / "rows.jsonl"
    line = one_error_line(scan(write_list(tmp_path, QWEN3), "--endpoint", fake_hub.url, "-o", str(target)), 2)
    assert line == f"hfkv: error: cannot write {target}: No such file or directory"


LOCAL = [str(ROOT / "fixtures" / name) for name in ("Qwen__Qwen3-8B", "meta-llama__Llama-2-7b-hf", "openai__gpt-oss-120b")]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_output_to_a_full_device_exits_1_naming_the_lost_rows(tmp_path):
    result = scan(write_list(tmp_path, *LOCAL[:2]), "-o", "/dev/full", "--format", "jsonl")
    assert one_error_line(result, 1) == (
        "hfkv: error: cannot write /dev/full: No space left on device (2 of 2 rows not written: lost)")


def test_a_write_failing_mid_scan_keeps_earlier_rows_and_counts_the_rest(tmp_path, monkeypatch):
    out = tmp_path / "rows.jsonl"

    class FillsUp(io.StringIO):
        """Accepts one row, then the disk is full."""

        def write(self, text: str) -> int:
            if self.getvalue():
                raise OSError(28, "No space left on device")
            return super().write(text)

        def close(self) -> None:
            out.write_text(self.getvalue())
            super().close()

    monkeypatch.setattr(scan_module, "open_output", lambda path, append: FillsUp())
    result = scan(write_list(tmp_path, *LOCAL), "-o", str(out), "--jobs", "1")
    assert one_error_line(result, 1) == (
        f"hfkv: error: cannot write {out}: No space left on device (2 of 3 rows not written: lost)")
    assert len(jsonl(out.read_text())) == 1


def test_ctrl_c_stops_a_scan_stuck_on_the_hub_and_keeps_written_rows(fake_hub, tmp_path):
    """SIGINT while a worker waits 20 s on the Hub: exit 130 within seconds, the local row kept."""
    import signal
    import time

    stuck = "acme/stuck"
    fake_hub.add_fixture(stuck, folder="Qwen__Qwen3-8B")
    fake_hub.faults[stuck] = Fault(kind="slow", delay=20)
    out = tmp_path / "rows.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "hfkv", "scan", write_list(tmp_path, stuck, LOCAL[0]),
                             "--endpoint", fake_hub.url, "-o", str(out), "--jobs", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (fake_hub.requests(stuck) and out.exists() and out.read_text()):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert fake_hub.requests(stuck), "the stuck request never arrived"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
        assert time.monotonic() - sent < 5  # not the 20 s the worker is blocked for
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip() == "hfkv: interrupted"
    rows = jsonl(out.read_text())
    assert out.read_text().endswith("\n") and list(rows) == [LOCAL[0]]
    assert rows[LOCAL[0]]["alpha_bytes_per_token"] == QWEN3_ALPHA


def test_a_line_too_long_for_a_file_name_is_a_not_found_row(fake_hub, tmp_path):
    """100,000 characters: Path.exists() raises "File name too long"; the row must still be clean."""
    long_name, long_path, long_id = "a" * 100_000, "x/" * 50_000, "org/" + "b" * 100_000
    result = scan(write_list(tmp_path, long_name, long_path, long_id, QWEN3), "--endpoint", fake_hub.url)
    assert result.exit_code == 1, result.output
    rows = jsonl(result.stdout)
    for entry in (long_name, long_path, long_id):
        assert rows[entry]["error"].startswith("not-found: "), rows[entry]["error"][:200]
    assert rows[QWEN3]["alpha_bytes_per_token"] == QWEN3_ALPHA
    assert {e["repo"] for e in fake_hub.requests()} == {QWEN3}  # the long id never reached the Hub


# -- item 1: a lone surrogate is valid JSON but no UTF-8 output can hold it ---------------------------


SURROGATE = b'{"model_type": "llama\\ud800", "hidden_size": 512}'


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
