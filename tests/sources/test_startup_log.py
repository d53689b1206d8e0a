"""Reading start-up logs (``hfkv.sources.startup_log.parse_log``) on real logs only.

Every log of ``../shared/engine-logs/`` parses to the figures its row of
``../shared/docs/engine-logs-3.tsv`` records (one test per log and column); every line quoted in the
rows of ``engine-logs.tsv`` and ``engine-logs-2.tsv`` that is a whole line parses to the figures
printed in it (fragments that are not lines are skipped with a message). Then hand-made variations of
real lines: colour remains, Windows line ends, interleaved ranks, two starts, a cut line, and texts
that are not start-up logs. Expected bytes are the printed GiB figure × 2³⁰, written out.
"""

from __future__ import annotations

import csv
import re
from decimal import Decimal
from pathlib import Path

import pytest

from hfkv.errors import HfkvError
from hfkv.sources.startup_log import NotAStartupLog, parse_log

from _helpers import HUB_CONFIGS

SHARED = HUB_CONFIGS.parent  # ../shared beside the checkout
LOGS = SHARED / "engine-logs"
DOCS = SHARED / "docs"
GIB = 1 << 30

needs_shared = pytest.mark.skipif(not LOGS.is_dir(), reason="../shared/engine-logs is absent (no team data here)")


def rows(name: str) -> list[dict[str, str]]:
    path = DOCS / name
    if not path.is_file():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def body(log_id: str) -> str:
    """A stored log without the curator's ``# `` header and annotation lines (not part of the log)."""
    text = (LOGS / f"{log_id}.log").read_text()
    return "\n".join(line for line in text.splitlines() if not line.startswith("# "))


def gib(text: str) -> int:
    """Bytes of a printed GiB figure: "11.15" → 11.15 × 2³⁰ = 11,972,221,337.6 → 11,972,221,338."""
    return int((Decimal(text) * GIB).to_integral_value())


# -- every stored log against its row -------------------------------------------------------------

# column of engine-logs-3.tsv -> (field read, kind of value)
COLUMNS = {
    "weights_gib_printed": ("weights_bytes", "gib"),
    "available_kv_gib_printed": ("available_kv_bytes", "gib"),
    "kv_tokens_printed": ("kv_cache_tokens", "int"),
    "max_concurrency_printed": ("max_concurrency", "float"),
    "max_model_len_or_context_length": ("max_model_len", "int"),
    "tp": ("tensor_parallel_size", "int"),
    "version": ("version", "version"),
}
# Figures a row records that its log holds only as prose or as an author's abridgement, not as a line.
NOT_LINES = {
    ("L024", "max_concurrency_printed"): "quoted abridged ('GPU KV cache size: 298,275 tokens ... concurrency: 1.14x')",
    ("L024", "max_model_len_or_context_length"): "the author's '262K' prose, not a log line",
    ("L025", "max_model_len_or_context_length"): "the author's prose ('max_model_len 8192' among the arguments)",
    ("L025", "available_kv_gib_printed"): "the author's prose summary of the serve log",
    ("L025", "kv_tokens_printed"): "the author's prose summary of the serve log",
    ("L025", "max_concurrency_printed"): "the author's prose summary of the serve log",
    ("L029", "weights_gib_printed"): "the author's prose ('权重 17.71 GB')",
    ("L029", "max_model_len_or_context_length"): "a command-line flag the author quotes, not a log line",
    ("L020", "tp"): "a command-line flag (--tensor-parallel-size 4), not a log line",
}
PROSE_ONLY = {"L035": "the PR's prose ('187,945 tokens, 1.68x concurrency'), no log line"}


def log_cases() -> list:
    cases = []
    for row in rows("engine-logs-3.tsv"):
        for column in COLUMNS:
            if row.get(column, "").strip():
                cases.append(pytest.param(row, column, id=f"{row['id']}-{column}"))
    return cases or [pytest.param(None, None, id="no-shared")]


def first_number(text: str) -> str | None:
    found = re.search(r"\d[\d,]*(?:\.\d+)?", text)
    return found.group(0) if found else None


@needs_shared
@pytest.mark.parametrize("row,column", log_cases())
def test_every_stored_log_parses_to_its_row(row, column):
    if row is None:
        pytest.skip("../shared/docs/engine-logs-3.tsv is absent")
    log_id, recorded = row["id"], row[column].strip()
    if log_id in PROSE_ONLY:
        with pytest.raises(NotAStartupLog):
            parse_log(body(log_id))
        pytest.skip(f"{log_id}: {PROSE_ONLY[log_id]}")
    if (log_id, column) in NOT_LINES:
        pytest.skip(f"{log_id} {column}: {NOT_LINES[(log_id, column)]}")
    parsed = parse_log(body(log_id))
    assert parsed.engine == row["engine"].lower()
    name, kind = COLUMNS[column]
    if kind == "version":
        expected = re.match(r"\d+\.\d+\.\d+\S*", recorded)
        if parsed.version is None:
            assert expected is None or expected.group(0) not in body(log_id), parsed.version_evidence
            pytest.skip(f"{log_id}: the log does not tell its version ({parsed.version_evidence}); the row's "
                        f"'{recorded}' comes from outside it")
        if expected is None:
            pytest.skip(f"{log_id}: the row's version '{recorded}' is a range; the log says {parsed.version} "
                        f"({parsed.version_evidence})")
        assert parsed.version == expected.group(0), parsed.version_evidence
        return
    if name in ("max_model_len", "tensor_parallel_size", "version"):
        value = getattr(parsed, name)
    elif name == "kv_cache_tokens" and parsed.engine == "sglang":
        value = parsed.value("kv_cache_tokens") or parsed.value("kv_pool_tokens")
    else:
        value = parsed.value(name)
    number = first_number(recorded)
    if value is None:
        if name != "tensor_parallel_size":  # a "2" is anywhere in a log; a figure such as "262,144" is not
            spelled = {number, f"{int(number.replace(',', '')):,}"} if kind == "int" else {number}
            assert not any(s in body(log_id) for s in spelled), f"{log_id}: {recorded} is in the log but not read"
        pytest.skip(f"{log_id}: the row's {column} ({recorded}) is not printed in the log")
    if kind == "gib":
        assert value == gib(number), (value, number)
        assert parsed.figure(name).printed.split()[0] == number
    elif kind == "float":
        assert value == float(number)
    else:
        assert value == int(number.replace(",", ""))


@needs_shared
def test_every_stored_log_is_read_or_refused_in_one_line():
    read = 0
    for path in sorted(LOGS.glob("*.log")):
        try:
            parsed = parse_log(body(path.stem))
        except NotAStartupLog as err:
            assert path.stem in PROSE_ONLY and "\n" not in str(err)
            continue
        read += 1
        assert all(f.text and f.line >= 1 for f in parsed.figures)
    assert read == len(list(LOGS.glob("*.log"))) - len(PROSE_ONLY)


# -- lines quoted in the rows of engine-logs.tsv and engine-logs-2.tsv ------------------------------

QUOTED = {"engine-logs.tsv": ("printed_numbers",),
          "engine-logs-2.tsv": ("version_evidence", "sglang_pool_sizes", "sglang_max_total_num_tokens_line",
                                "other_printed")}


def fragments(row: dict[str, str], columns: tuple[str, ...]) -> list[str]:
    out = []
    for column in columns:
        for part in (row.get(column) or "").split("; "):
            part = part.strip().strip("'").strip()
            if part:
                out.append(part)
    return out


def row_cases() -> list:
    cases = [pytest.param(name, row, id=f"{row['id']}") for name in QUOTED for row in rows(name)]
    return cases or [pytest.param(None, None, id="no-shared")]


@needs_shared
@pytest.mark.parametrize("name,row", row_cases())
def test_lines_quoted_in_the_rows_parse_to_their_figures(name, row):
    if row is None:
        pytest.skip("../shared/docs/engine-logs*.tsv are absent")
    read, skipped = [], []
    for text in fragments(row, QUOTED[name]):
        try:
            parsed = parse_log(text)
        except NotAStartupLog as err:
            assert "\n" not in str(err)
            skipped.append(text)
            continue
        read.append(text)
        if "llama.cpp" in row.get("model_repo_id", ""):
            pytest.fail("a llama.cpp line was read as an engine's")
        assert parsed.engine == row["engine"].lower(), text
        for figure in parsed.figures:
            if figure.field == "args" or figure.printed is None:
                continue
            assert figure.printed.split()[0] in text, (figure, text)  # the value comes from this line
            if figure.step is not None:
                assert figure.value == gib(figure.printed.split()[0])
        tokens = parsed.value("kv_cache_tokens") or parsed.value("kv_pool_tokens")
        if tokens is not None and (row.get("printed_tokens") or "").strip():
            assert tokens == int(row["printed_tokens"].replace(",", "")), text
        if parsed.version and "engine_version" in row and text == row.get("version_evidence"):
            assert row["engine_version"].startswith(parsed.version)
    if not read:
        pytest.skip(f"{row['id']}: no whole log line quoted (fragments: {skipped})")


@needs_shared
def test_a_llama_cpp_line_is_refused_by_name():
    line = next((r["printed_numbers"] for r in rows("engine-logs.tsv") if r["id"] == "R34"), None)
    if line is None:
        pytest.skip("row R34 is absent")
    with pytest.raises(NotAStartupLog, match="llama.cpp"):
        parse_log(line.split("; ")[0])


# -- hand-made variations of real lines --------------------------------------------------------------

# L011 (club-3090 #77), verbatim: vLLM 0.20.2rc1.dev9, 2 × RTX 3090, TP 2.
L011 = """- **vLLM:** `0.20.2rc1.dev9+g01d4d1ad3`
(Worker_TP0 pid=54) INFO 05-06 06:48:40 [gpu_worker.py:460] Available KV cache memory: 10.99 GiB
(EngineCore pid=45) INFO 05-06 06:48:40 [kv_cache_utils.py:1710] GPU KV cache size: 619,479 tokens
(EngineCore pid=45) INFO 05-06 06:48:40 [kv_cache_utils.py:1711] Maximum concurrency for 262,144 tokens per request: 2.36x"""
# L013 (club-3090 #142), verbatim, a later start on the same rig.
L013 = """(Worker_TP0 pid=119) INFO 05-15 16:03:37 [gpu_worker.py:460] Available KV cache memory: 11.08 GiB
(EngineCore pid=110) INFO 05-15 16:03:37 [kv_cache_utils.py:1710] GPU KV cache size: 623,873 tokens
(EngineCore pid=110) INFO 05-15 16:03:37 [kv_cache_utils.py:1711] Maximum concurrency for 262,144 tokens per request: 2.38x"""
# L001 (sglang#18263), two of its lines verbatim.
L001 = """[2026-07-15 13:14:53] Load weight end. elapsed=19.09 s, type=Qwen3MoeForCausalLM, avail mem=230.20 GB, mem usage=56.98 GB.
[2026-07-15 13:14:54] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1669816, K size: 76.44 GB, V size: 76.44 GB"""


def figures(parsed) -> list[tuple]:
    return [(f.field, f.value, f.rank) for f in parsed.figures]


def test_a_real_log_reads_its_figures_version_and_rank():
    parsed = parse_log(L011)
    assert parsed.engine == "vllm" and parsed.version == "0.20.2rc1.dev9+g01d4d1ad3"
    assert "pasted" in parsed.version_evidence
    available = parsed.figure("available_kv_bytes")
    assert available.value == 11_800_422_646  # 10.99 × 2³⁰ = 11,800,422,645.76
    assert available.step == 10_737_418 and available.rank == "TP0"  # 0.01 GiB = 10,737,418.24 B
    assert parsed.value("kv_cache_tokens") == 619_479 and parsed.value("max_concurrency") == 2.36
    assert parsed.max_model_len == 262_144  # the concurrency line's "for 262,144 tokens per request"
    assert "Available KV cache memory: 10.99 GiB" in available.text and available.line == 2


def test_logger_line_numbers_tell_the_version():
    # L017's three lines (gpu_worker.py:508, kv_cache_utils.py:2146/2147: vLLM 0.24.0 in the table).
    parsed = parse_log(body("L017")) if LOGS.is_dir() else None
    if parsed is None:
        pytest.skip("../shared/engine-logs is absent")
    assert parsed.version == "0.24.0" and "line numbers" in parsed.version_evidence


def test_without_a_version_the_result_says_unknown():
    # L004 (talos-argocd-proxmox#1995), verbatim: no prefix, no version line.
    parsed = parse_log("GPU KV cache size: 302,921 tokens\nMaximum concurrency for 131,072 tokens per request: 2.31x")
    assert parsed.version is None and parsed.version_evidence.startswith("unknown: ")
    assert "two lines" in parsed.version_evidence  # vLLM ≤ 0.29's format


def test_colour_codes_and_their_remains_are_removed():
    plain = figures(parse_log(L011))
    escaped = L011.replace("(Worker_TP0", "\x1b[1;36m(Worker_TP0").replace(" INFO", "\x1b[0m INFO")
    remains = L011.replace("(EngineCore", "[1;36m(EngineCore").replace(" INFO", "[0;0m [32mINFO[0m")
    assert figures(parse_log(escaped)) == plain
    assert figures(parse_log(remains)) == plain


def test_windows_line_ends():
    assert figures(parse_log(L011.replace("\n", "\r\n"))) == figures(parse_log(L011))
    assert figures(parse_log(L001.replace("\n", "\r\n")))[:4] == figures(parse_log(L001))[:4]


def test_interleaved_ranks_keep_each_rank_and_report_rank_0():
    # L011 with TP1's line (same format, another figure) printed before TP0's, as two workers interleave.
    tp1 = "(Worker_TP1 pid=55) INFO 05-06 06:48:40 [gpu_worker.py:460] Available KV cache memory: 10.95 GiB"
    lines = L011.splitlines()
    parsed = parse_log("\n".join([lines[0], tp1, *lines[1:]]))
    assert [f.rank for f in parsed.all("available_kv_bytes")] == ["TP1", "TP0"]
    assert parsed.value("available_kv_bytes") == gib("10.99") and parsed.starts == 1


def test_sglang_ranks_and_prefixes():
    ranked = L001.replace("13:14:53]", "13:14:53 DP0 TP3 EP3]").replace("13:14:54]", "13:14:54 TP0]")
    parsed = parse_log(ranked)
    assert parsed.engine == "sglang" and parsed.figure("weights_bytes").rank == "DP0 TP3 EP3"
    assert parsed.value("weights_bytes") == gib("56.98") and parsed.value("kv_pool_tokens") == 1_669_816
    assert parsed.value("k_pool_bytes") == gib("76.44")  # 76.44 × 2³⁰: SGLang's "GB" is GiB


def test_two_starts_read_the_last_and_say_so():
    parsed = parse_log(L011 + "\n" + L013)
    assert parsed.starts == 2 and "2 starts" in parsed.notes[0]
    assert parsed.value("available_kv_bytes") == gib("11.08") and parsed.value("kv_cache_tokens") == 623_873
    assert len(parsed.all("available_kv_bytes")) == 1


def test_a_line_cut_by_the_terminal_is_joined():
    cut_line = L011.replace("262,144 tokens per request", "262,1\n44 tokens per request")
    assert figures(parse_log(cut_line)) == figures(parse_log(L011))
    cut_figure = L011.replace("10.99 GiB", "10.9\n9 GiB")
    assert parse_log(cut_figure).value("available_kv_bytes") == gib("10.99")


@needs_shared
def test_a_wrapped_sglang_line_is_joined():
    # L027 (verbatim) wraps its Mamba line after "conv_state 0.12GB,".
    parsed = parse_log(body("L027"))
    assert parsed.value("mamba_ssm_state_bytes") == gib("3.09") and parsed.value("mamba_max_mamba_cache_size") == 43
    assert [f.value for f in parsed.all("kv_pool_tokens")] == [171_008, 171_008]  # target, then EAGLE draft


@needs_shared
def test_a_cut_argument_list_keeps_its_whole_arguments():
    # L007's non-default args line is cut mid-dict in the excerpt: the arguments before the cut are read.
    parsed = parse_log(body("L007"))
    assert parsed.args["max_model_len"] == 65536 and parsed.args["quantization"] == "fp8"
    assert any("cut" in note for note in parsed.notes)
    assert parsed.model == "~/.cache/huggingface/qwen3.8-27b-fp8"


def test_sglang_server_args_are_read_without_eval():
    # The ServerArgs repr as SGLang logs it (field names from sglang's server_args.py), with a value
    # that is not a literal: it is kept as its source, never evaluated.
    line = ("[2026-07-15 13:14:40] server_args=ServerArgs(model_path='Qwen/Qwen3-30B-A3B-Instruct-2507', tp_size=1, "
            "mem_fraction_static=0.911, page_size=1, dtype=torch.bfloat16, context_length=None)")
    parsed = parse_log(line + "\n" + L001)
    assert parsed.model == "Qwen/Qwen3-30B-A3B-Instruct-2507" and parsed.tensor_parallel_size == 1
    assert parsed.args["mem_fraction_static"] == 0.911 and parsed.args["dtype"] == "torch.bfloat16"


@pytest.mark.parametrize("text", ["", "hello\nworld", "Traceback (most recent call last):\n  File \"x.py\"",
                                  '{"model_type": "llama"}', "\x00\x01\x02" * 100],
                         ids=["empty", "prose", "traceback", "a-config", "binary"])
def test_a_text_that_is_not_a_start_up_log_is_one_line(text):
    with pytest.raises(NotAStartupLog) as caught:
        parse_log(text)
    assert isinstance(caught.value, HfkvError) and caught.value.exit_code == 2
    assert "\n" not in str(caught.value) and str(caught.value).startswith("not a vLLM or SGLang start-up log")


def test_json_of_a_figure_keeps_its_line():
    data = parse_log(L011).to_dict()
    first = next(f for f in data["figures"] if f["field"] == "available_kv_bytes")
    assert first == {"line": 2, "text": L011.splitlines()[1], "rank": "TP0", "field": "available_kv_bytes",
                     "value": 11_800_422_646, "printed": "10.99 GiB", "step_bytes": 10_737_418}


def test_stored_logs_are_there_when_shared_is(request):
    if not Path(SHARED).is_dir():
        pytest.skip("../shared is absent")
    assert list(LOGS.glob("*.log"))


# -- the memory vLLM saw at start-up, and the CUDA total ---------------------------------------------

# vLLM's post-capture summary (gpu_worker.py, INFO from 0.11) as a public vLLM 0.11 log printed it (2 × H200,
# TP 2), and the later form that folds weights and non-torch into "consumed memory" (a public log of a 6 GiB GPU).
SUMMARY = ("(Worker_TP0 pid=1806413) INFO 10-23 15:14:56 [gpu_worker.py:391] Free memory on device (139.21/139.81 GiB) "
           "on startup. Desired GPU memory utilization is (0.9, 125.83 GiB). Actual usage is 74.28 GiB for weight, 5.58 "
           "GiB for peak activation, 1.38 GiB for non-torch memory, and 2.37 GiB for CUDAGraph memory. Replace "
           "gpu_memory_utilization config with `--kv-cache-memory=45175492096` to fit into requested memory, or "
           "`--kv-cache-memory=59540753920` to fully utilize gpu memory. Current kv cache memory in use is "
           "47878721024 bytes.")
CONSUMED = ("(EngineCore pid=114) INFO 09-25 02:25:51 [gpu_worker.py:860] Free memory on device (4.95/6.0 GiB) on "
            "startup. Desired GPU memory utilization is (0.79, 4.74 GiB). Actual usage is 2.1 GiB for consumed memory "
            "(weights + non-torch), 0.22 GiB for peak activation, and 0.07 GiB for CUDAGraph memory.")
# vLLM's refusal when too little is free (request_memory), as a public log printed it (a 121.69 GiB GB10).
REFUSED = ("(EngineCore pid=253) ValueError: Free memory on device cuda:0 (85.92/121.69 GiB) on startup is less than "
           "desired GPU memory utilization (0.92, 111.95 GiB).")


def test_vllm_start_up_memory_summary():
    parsed = parse_log(SUMMARY)
    assert parsed.engine == "vllm" and parsed.figure("cuda_total_bytes").rank == "TP0"
    assert parsed.value("cuda_total_bytes") == gib("139.81") and parsed.value("startup_free_bytes") == gib("139.21")
    assert parsed.value("gpu_memory_utilization") == 0.9 and parsed.value("requested_bytes") == gib("125.83")
    assert parsed.value("profile_weights_bytes") == gib("74.28") and parsed.value("peak_activation_bytes") == gib("5.58")
    assert parsed.value("non_torch_bytes") == gib("1.38") and parsed.value("cudagraph_bytes") == gib("2.37")
    consumed = parse_log(CONSUMED)
    assert consumed.value("consumed_bytes") == gib("2.1") and consumed.value("cuda_total_bytes") == gib("6.0")
    assert consumed.figure("cuda_total_bytes").step == GIB // 10  # "6.0": one decimal printed


def test_vllm_refusal_for_free_memory_gives_the_total():
    parsed = parse_log(REFUSED)
    assert parsed.value("cuda_total_bytes") == gib("121.69") and parsed.value("startup_free_bytes") == gib("85.92")
    assert parsed.value("gpu_memory_utilization") == 0.92 and parsed.value("requested_bytes") == gib("111.95")


def test_pytorch_total_capacity_beside_an_engine_line_and_alone():
    # PyTorch's out-of-memory message, as the RTX 3090 preset's source printed its total (23.70 GiB).
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
           "23.70 GiB of which 3.06 MiB is free.")
    parsed = parse_log(L011 + "\n" + oom)
    assert parsed.value("cuda_total_bytes") == gib("23.70") and parsed.figure("cuda_total_bytes").printed == "23.70 GiB"
    with pytest.raises(NotAStartupLog, match="no line of either engine"):
        parse_log(oom)
    with pytest.raises(NotAStartupLog):
        parse_log("0 NVIDIA A100-SXM4-80GB")  # a GPU listing alone


# -- a pasted engine command -----------------------------------------------------------------------

VLLM_KV = ("INFO 09-01 13:05:04 [gpu_worker.py:298] Available KV cache memory: 10.5 GiB\n"
           "INFO 09-01 13:05:04 [kv_cache_utils.py:864] GPU KV cache size: 76,432 tokens\n")


def test_a_pasted_vllm_serve_command_gives_its_arguments():
    # the command as users paste it above the log: continued lines, vLLM's flag names, a bare flag, a
    # --no- flag and a JSON value
    log = ("$ vllm serve Qwen/Qwen3-8B \\\n"
           "    --tensor-parallel-size 2 --gpu-memory-utilization 0.85 \\\n"
           "    --max-model-len 32768 --enforce-eager --no-enable-prefix-caching \\\n"
           "    --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'\n" + VLLM_KV)
    got = parse_log(log)
    assert (got.engine, got.model, got.tensor_parallel_size, got.max_model_len) == ("vllm", "Qwen/Qwen3-8B", 2, 32768)
    assert got.args["gpu_memory_utilization"] == 0.85 and got.args["enforce_eager"] is True
    assert got.args["enable_prefix_caching"] is False
    assert got.args["speculative_config"] == {"method": "mtp", "num_speculative_tokens": 1}


def test_vllm_short_flags_and_the_module_form():
    got = parse_log("python3 -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B -tp 4 "
                    "--max-model-len=8192\n" + VLLM_KV)
    assert (got.model, got.tensor_parallel_size, got.max_model_len) == ("meta-llama/Llama-3.1-8B", 4, 8192)


def test_a_pasted_sglang_command_uses_its_server_args_names():
    log = ("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 "
           "--tp 8 --mem-fraction-static 0.85 --context-length 65536 --trust-remote-code\n"
           "[2025-08-01 10:00:00 TP0] KV Cache is allocated. #tokens: 524288, KV size: 17.16 GB\n")
    got = parse_log(log)
    assert (got.engine, got.model, got.tensor_parallel_size, got.max_model_len) == (
        "sglang", "deepseek-ai/DeepSeek-V3", 8, 65536)
    assert got.args["mem_fraction_static"] == 0.85 and got.args["tp_size"] == 8


def test_what_the_engine_printed_wins_over_the_pasted_command():
    # the command says TP 4; vLLM's own non-default args say 2 (the user changed it before this run)
    log = ("vllm serve Qwen/Qwen3-8B --tensor-parallel-size 4\n"
           "INFO 09-01 13:04:39 [utils.py:326] non-default args: {'model': 'Qwen/Qwen3-8B', 'tensor_parallel_size': 2}\n"
           + VLLM_KV)
    assert parse_log(log).tensor_parallel_size == 2


def test_a_command_that_does_not_split_is_said_and_skipped():
    got = parse_log("vllm serve Qwen/Qwen3-8B --served-model-name 'unclosed\n" + VLLM_KV)
    assert got.tensor_parallel_size is None
    assert any("not a shell line" in note for note in got.notes)


def test_prose_that_names_the_command_is_not_a_command():
    got = parse_log("vllm serve crashes when the cache is full\n" + VLLM_KV)
    assert got.model is None and "command" not in {f.field for f in got.figures}
