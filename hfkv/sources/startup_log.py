"""A vLLM or SGLang start-up log, as a user pastes it, read into typed figures (``parse_log``).

This module reads text only: it knows each engine's log lines (``../shared/docs/engine-versions.md``,
"Start-up log lines, per version", checked against the real logs in ``../shared/engine-logs/``), not
what the figures mean for a model. Each figure keeps the line it came from, so that a reader can check
it, and the precision it was printed with: the engines print GiB with two decimals ("GB" in SGLang
means GiB too), so a printed "6.51 GiB" is 6.51 × 2³⁰ bytes ± half a step of 0.01 GiB.

What users paste is tolerated: ANSI colour codes and their remains once copied (``[1;36m`` without
the escape), process prefixes (``(EngineCore_DP0 pid=…)``, ``(Worker_TP0 pid=…)``), SGLang's
``[2026-… TP0]`` prefixes, several ranks interleaved (every figure keeps its rank; ``StartupLog.figure``
picks rank 0's, the one the engines print), lines a terminal cut in two (joined back), Windows line
ends, lines quoted in backticks in a Markdown table, and a log holding several starts (the last is
read; ``notes`` says so).
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Iterator

from hfkv.errors import HfkvError, cut

GIB = 1 << 30
MAX_LOG_CHARS = 20_000_000  # a pasted log larger than this is refused, not read for minutes


class NotAStartupLog(HfkvError):
    """The text holds no vLLM or SGLang start-up line hfkv recognises (or is another engine's log).
    Bad input, like an unreadable config: exit code 2."""

    exit_code = 2
    kind = "log"


@dataclass(frozen=True)
class Figure:
    """One value read from one line: ``field`` (a name listed in ``FIELDS``), ``value`` (bytes as an int
    for a memory figure; int, float, str, bool or a dict of plain values otherwise), the ``text`` of the
    line it came from (colour codes removed) and its 1-based ``line`` number in the input, the ``rank``
    that printed it (``"TP0"``, ``"rank 0"``, ``"DP0 TP3 EP3"``; None without a prefix), ``printed``
    (the figure as the line wrote it, e.g. ``"6.51 GiB"``) and ``step`` (for a rounded figure: the
    bytes one unit of its last printed digit stands for; the true value is within ± step / 2)."""

    field: str
    value: Any
    text: str
    line: int
    rank: str | None = None
    printed: str | None = None
    step: int | None = None

    def bounds(self) -> tuple[int, int] | None:
        """(lowest, highest) bytes a rounded memory figure may stand for; None when it is not one."""
        if self.step is None or not isinstance(self.value, int):
            return None
        return self.value - self.step // 2, self.value + self.step // 2

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "text": self.text, "rank": self.rank, "field": self.field,
                "value": self.value, "printed": self.printed, "step_bytes": self.step}


@dataclass(frozen=True)
class StartupLog:
    """What a start-up log says. ``engine`` is ``"vllm"`` or ``"sglang"``; ``version`` the engine's
    version when the log tells it (None otherwise) and ``version_evidence`` how it was told (or
    ``"unknown: …"``, with what the line formats say); ``model`` the model id or path the engine
    loaded; ``gpu`` and ``gpu_count`` when a GPU listing was pasted; ``tensor_parallel_size``,
    ``pipeline_parallel_size``, ``data_parallel_size``, ``max_model_len`` when printed; ``args`` every
    argument the log lists (vLLM's ``non-default args``, SGLang's ``ServerArgs``); ``figures`` every
    value read, in line order, of the last start only; ``notes`` what the reader had to decide (two
    starts, a cut line, an unknown line number); ``lines`` how many lines the input had."""

    engine: str
    version: str | None
    version_evidence: str
    model: str | None = None
    gpu: str | None = None
    gpu_count: int | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    data_parallel_size: int | None = None
    max_model_len: int | None = None
    args: dict[str, Any] = field(default_factory=dict)
    figures: tuple[Figure, ...] = ()
    notes: tuple[str, ...] = ()
    lines: int = 0
    starts: int = 1

    def all(self, name: str) -> list[Figure]:
        """Every figure named ``name``, in line order (several ranks, several pools)."""
        return [f for f in self.figures if f.field == name]

    def figure(self, name: str) -> Figure | None:
        """The figure named ``name`` as the engine reports it: rank 0's (or a line without a rank),
        else the first printed."""
        found = self.all(name)
        first = [f for f in found if first_rank(f.rank)]
        return (first or found or [None])[0]

    def value(self, name: str) -> Any:
        """The value of ``figure(name)``; None when the log does not print it."""
        found = self.figure(name)
        return None if found is None else found.value

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "version": self.version, "version_evidence": self.version_evidence,
                "model": self.model, "gpu": self.gpu, "gpu_count": self.gpu_count,
                "tensor_parallel_size": self.tensor_parallel_size,
                "pipeline_parallel_size": self.pipeline_parallel_size,
                "data_parallel_size": self.data_parallel_size, "max_model_len": self.max_model_len,
                "args": self.args, "starts": self.starts, "lines": self.lines, "notes": list(self.notes),
                "figures": [f.to_dict() for f in self.figures]}


def first_rank(rank: str | None) -> bool:
    """True for no rank or a rank whose every number is 0 (``TP0``, ``DP0 TP0 EP0``, ``rank 0``)."""
    return rank is None or all(int(n) == 0 for n in re.findall(r"\d+", rank))


# -- cleaning a line -------------------------------------------------------------------------------

# Colour codes, with their escape or as the remains a copy leaves ("[1;36m", "[0m").
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b|\[\d{1,3}(?:;\d{1,3})*m|\[m")
_DOCKER = re.compile(r"^[\w.-]+\s+\|\s")  # "vllm-1  | ..." from docker compose logs
_VLLM = re.compile(
    r"^(?:\((?P<proc>[^)]*)\)\s+)?(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+(?P<date>\d\d-\d\d)\s+"
    r"(?P<time>[\d:.]+)\s+\[?(?P<file>[\w./-]+\.py):(?P<lineno>\d+)\]\s*(?P<msg>.*)$")
_SGLANG = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\d[ T][\d:.,]+)(?P<rank>(?: [A-Z]+\d+)*)\]\s*(?P<msg>.*)$")
_BACKTICKS = re.compile(r"`([^`]+)`")
_LLAMA_CPP = re.compile(r"\bllama_(?:kv_cache|model_load|context|memory_recurrent|new_context)\w*\b|\bllama\.cpp\b")


@dataclass
class _Line:
    """One logical line: its number, the text without colour codes, the message after any prefix, and
    what the prefix said (engine, rank, logger file and line, timestamp)."""

    number: int
    text: str
    msg: str
    prefix: str | None = None  # "vllm" or "sglang"
    rank: str | None = None
    file: str | None = None
    lineno: int | None = None
    when: tuple[int, ...] | None = None


def _clean(raw: str) -> str:
    return _ANSI.sub("", raw).replace("\ufeff", "").rstrip()


def _vllm_rank(proc: str | None) -> str | None:
    """The rank of a vLLM process prefix: ``Worker_TP0`` → TP0, ``VllmWorker rank=0`` → rank 0,
    ``EngineCore_DP0`` → DP0; the API server and a bare engine core have none."""
    if not proc:
        return None
    name = proc.split()[0]
    found = re.findall(r"((?:DP|TP|PP|EP)\d+)", name)
    if found:
        return " ".join(found)
    rank = re.search(r"\brank=(\d+)", proc)
    return f"rank {rank.group(1)}" if rank else None


def _split(number: int, text: str) -> _Line:
    """A cleaned line read into its prefix and message (a line without a known prefix is all message)."""
    body = _DOCKER.sub("", text, count=1).strip()
    match = _VLLM.match(body)
    if match:
        month, day = (int(x) for x in match["date"].split("-"))
        clock = tuple(int(float(x)) for x in match["time"].split(":"))
        return _Line(number, text, match["msg"].strip(), "vllm", _vllm_rank(match["proc"]), match["file"].split("/")[-1],
                     int(match["lineno"]), (month, day, *clock))
    match = _SGLANG.match(body)
    if match:
        stamp = tuple(int(float(x)) for x in re.findall(r"\d+(?:\.\d+)?", match["ts"].replace(",", ".")))
        return _Line(number, text, match["msg"].strip(), "sglang", match["rank"].strip() or None, when=stamp[:6])
    return _Line(number, text, body)


def _unquoted(text: str) -> Iterator[tuple[int, str, int]]:
    """(position, character, bracket depth after it) of each character of ``text`` outside quotes."""
    depth, quote, escaped = 0, None, False
    for i, ch in enumerate(text):
        if quote:
            escaped = not escaped and ch == "\\"
            if ch == quote and not escaped:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        yield i, ch, depth


def _unbalanced(text: str) -> bool:
    """True when ``text`` opens more brackets than it closes, outside quotes (a dict a terminal cut)."""
    last = 0
    for _, _, last in _unquoted(text):
        pass
    return last > 0


def _logical_lines(text: str) -> Iterator[_Line]:
    """The input's lines, cleaned and split, with a line a terminal cut joined back to the line it
    continues: a line with no prefix of its own, after a prefixed line left open (an unclosed bracket,
    or ending in a comma or colon)."""
    pending: _Line | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        cleaned = _clean(raw)
        line = _split(number, cleaned)
        if pending is not None and line.prefix is None and cleaned.strip() and _continued(pending):
            # a shell command's next line (the previous ended in a backslash): joined without the backslash
            pending = _Line(pending.number, pending.text[:-1].rstrip() + " " + cleaned.strip(),
                            pending.msg[:-1].rstrip() + " " + cleaned.strip())
            continue
        if pending is not None and line.prefix is None and cleaned.strip() and _open(pending) \
                and not _recognised(line):
            glue = " " if raw[:1].isspace() or pending.msg.endswith(",") else ""
            pending = _Line(pending.number, pending.text + glue + cleaned.strip(),
                            pending.msg + glue + cleaned.strip(), pending.prefix, pending.rank, pending.file,
                            pending.lineno, pending.when)
            continue
        if pending is not None:
            yield pending
        pending = line
    if pending is not None:
        yield pending


def _continued(line: _Line) -> bool:
    """True when ``line`` is a pasted engine command that goes on on the next line (a trailing backslash)."""
    return line.prefix is None and line.msg.endswith("\\") and _COMMAND.match(line.msg) is not None


def _open(line: _Line) -> bool:
    """True when ``line`` may continue on the next: a prefixed line (or a known message start) left
    open (an unclosed bracket, a trailing comma or colon) or not recognised as it stands (a figure cut
    in the middle: "Available KV cache memory: 10.9")."""
    msg = line.msg
    known = line.prefix is not None or _MESSAGE_HEAD.match(msg) is not None
    return known and (_unbalanced(msg) or msg.endswith((",", ":")) or not _recognised(line))


def _recognised(line: _Line) -> bool:
    return _read_line(line, _Start(), [])[0]


# -- values ----------------------------------------------------------------------------------------

def _gib(text: str) -> tuple[int, int]:
    """(bytes, step) of a GiB figure as printed ("6.51" → 6.51 × 2³⁰ and a step of 0.01 GiB)."""
    number = Decimal(text)
    exponent = number.as_tuple().exponent
    step = Decimal(1).scaleb(exponent if isinstance(exponent, int) and exponent < 0 else 0)
    return int((number * GIB).to_integral_value()), int(step * GIB)


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _plain(value: Any) -> Any:
    """A literal's value in JSON's terms: tuples and sets become lists, other objects their repr."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=repr)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _top_level_commas(text: str) -> list[int]:
    """Positions of the commas of ``text`` outside quotes and at bracket depth 1 (between the items of
    a dict or a call), for cutting a truncated literal back to its last whole item."""
    return [i for i, ch, depth in _unquoted(text) if ch == "," and depth == 1]


def _salvaged(text: str, closing: str, read: Callable[[str], Any]) -> tuple[Any, bool]:
    """``read(text)``; when the text was cut (a terminal, an excerpt), ``read`` of its longest prefix
    ending at a whole item, closed with ``closing``. (value, whether it was cut); (None, True) when
    nothing whole is left."""
    try:
        return read(text), False
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    for comma in reversed(_top_level_commas(text)):
        try:
            return read(text[:comma] + closing), True
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None, True


def _dict_literal(text: str) -> dict[str, Any]:
    value = ast.literal_eval(text)  # a Python literal only: never eval
    if not isinstance(value, dict):
        raise ValueError("not a dict")
    return _plain(value)


def _call_arguments(text: str) -> dict[str, Any]:
    """The keyword arguments of ``ServerArgs(...)`` as plain values: literals read with
    ``ast.literal_eval``, anything else (``torch.bfloat16``, a nested config object) as its source."""
    tree = ast.parse(text, mode="eval")
    if not isinstance(tree.body, ast.Call):
        raise ValueError("not a call")
    out: dict[str, Any] = {}
    for keyword in tree.body.keywords:
        if keyword.arg is None:
            continue
        try:
            out[keyword.arg] = _plain(ast.literal_eval(keyword.value))
        except (ValueError, TypeError, SyntaxError, RecursionError):
            out[keyword.arg] = ast.unparse(keyword.value)
    return out


# -- the lines of each engine ----------------------------------------------------------------------

@dataclass(frozen=True)
class _Rule:
    """One kind of line: its engine (None: either), the pattern searched in the message, and what it
    yields: ``(field, group, kind)`` with kind ``gib``, ``int``, ``float``, ``str`` or ``bool``."""

    engine: str | None
    pattern: re.Pattern
    fields: tuple[tuple[str, str, str], ...]
    start: bool = False  # a line printed once at the start of a run


def _rule(engine: str | None, pattern: str, *fields: tuple[str, str, str], start: bool = False) -> _Rule:
    return _Rule(engine, re.compile(pattern), fields, start)


_V = r"(?P<version>\d+\.\d+(?:\.\d+)?[\w.+-]*)"
_N = r"[\d,]+"
_F = r"\d+(?:\.\d+)?"
RULES: tuple[_Rule, ...] = (
    # vLLM (format strings of the release sources; versions in engine-versions.md)
    _rule("vllm", r"Initializing a (?:V1 )?LLM engine \(v" + _V + r"\)", ("engine_version", "version", "str"), start=True),
    _rule("vllm", r"vLLM API server version " + _V, ("engine_version", "version", "str"), start=True),
    _rule("vllm", r"Model loading took (?P<gib>" + _F + r") ?GiB(?: memory)?(?: and (?P<s>" + _F + r") ?s(?:econds)?)?",
          ("weights_bytes", "gib", "gib"), ("load_seconds", "s", "float")),
    _rule("vllm", r"Setting kv cache block size to (?P<block>\d+) for (?P<backends>.+?) backend",
          ("block_size", "block", "int"), ("attention_backends", "backends", "str")),
    _rule("vllm", r"Setting attention block size to (?P<block>\d+) tokens", ("block_size", "block", "int")),
    _rule("vllm", r"Estimated CUDA graph memory: (?P<gib>" + _F + r") ?GiB", ("cudagraph_estimate_bytes", "gib", "gib")),
    _rule("vllm", r"current --gpu-memory-utilization=(?P<util>" + _F + r") is equivalent to "
          r"--gpu-memory-utilization=(?P<equiv>" + _F + r")",
          ("gpu_memory_utilization", "util", "float"), ("equivalent_utilization", "equiv", "float")),
    _rule("vllm", r"CUDA graph memory profiling is (?P<off>disabled)", ("cudagraph_profiling_disabled", "off", "bool")),
    _rule("vllm", r"Available KV cache memory: (?P<gib>" + _F + r") ?GiB", ("available_kv_bytes", "gib", "gib")),
    _rule("vllm", r"Initial free memory (?P<free>" + _F + r") ?GiB, reserved (?P<kv>" + _F + r") ?GiB memory for KV Cache",
          ("initial_free_bytes", "free", "gib"), ("available_kv_bytes", "kv", "gib")),
    # The memory vLLM saw at start-up, with the CUDA total: the refusal when too little is free
    # (``request_memory``: "Free memory on device cuda:0 (F/T GiB) on startup is less than desired GPU memory
    # utilization (U, R GiB)") and, after graph capture, the summary of what each term took ("Free memory on
    # device (F/T GiB) on startup. Desired GPU memory utilization is (U, R GiB). Actual usage is …"), whose
    # usage part has two forms (weight and non-torch apart, or "consumed memory (weights + non-torch)").
    _rule("vllm", r"Free memory on device(?: [\w:]+)? \((?P<free>" + _F + r")/(?P<total>" + _F + r") ?GiB\) on startup",
          ("startup_free_bytes", "free", "gib"), ("cuda_total_bytes", "total", "gib")),
    _rule("vllm", r"(?:less than desired GPU memory utilization|Desired GPU memory utilization is) \((?P<util>" + _F +
          r"), (?P<req>" + _F + r") ?GiB\)", ("gpu_memory_utilization", "util", "float"), ("requested_bytes", "req", "gib")),
    _rule("vllm", r"Actual usage is (?P<w>" + _F + r") GiB for weight, (?P<peak>" + _F + r") GiB for peak activation, "
          r"(?P<nt>" + _F + r") GiB for non-torch memory, and (?P<graph>" + _F + r") GiB for CUDAGraph memory",
          ("profile_weights_bytes", "w", "gib"), ("peak_activation_bytes", "peak", "gib"),
          ("non_torch_bytes", "nt", "gib"), ("cudagraph_bytes", "graph", "gib")),
    _rule("vllm", r"Actual usage is (?P<used>" + _F + r") GiB for consumed memory \(weights \+ non-torch\), (?P<peak>" +
          _F + r") GiB for peak activation, and (?P<graph>" + _F + r") GiB for CUDAGraph memory",
          ("consumed_bytes", "used", "gib"), ("peak_activation_bytes", "peak", "gib"), ("cudagraph_bytes", "graph", "gib")),
    _rule("vllm", r"Initial free memory: (?P<free>" + _F + r") GiB; Requested memory: (?P<util>" + _F + r") \(util\), "
          r"(?P<req>" + _F + r") GiB", ("startup_free_bytes", "free", "gib"), ("gpu_memory_utilization", "util", "float"),
          ("requested_bytes", "req", "gib")),
    _rule("vllm", r"(?P<pool>GPU(?: \+ host)?|[A-Z]+) KV cache size: (?P<tokens>" + _N + r") tokens",
          ("kv_cache_tokens", "tokens", "int"), ("kv_cache_pool", "pool", "str")),
    _rule("vllm", r"Maximum concurrency for (?P<len>" + _N + r") tokens per request: (?P<conc>" + _F + r")x",
          ("concurrency_max_model_len", "len", "int"), ("max_concurrency", "conc", "float")),
    _rule("vllm", r"To serve at least one request with the model's max seq len \((?P<mml>\d+)\), \((?P<need>" + _F +
          r") ?GiB KV cache is needed, which is larger than the available KV cache memory \((?P<avail>" + _F +
          r") ?GiB\)(?:\. Based on the available memory, the estimated maximum model length is (?P<est>\d+))?",
          ("refusal_max_model_len", "mml", "int"), ("refusal_needed_bytes", "need", "gib"),
          ("refusal_available_bytes", "avail", "gib"), ("refusal_estimated_max_model_len", "est", "int")),
    _rule("vllm", r"Graph capturing finished in (?P<s>" + _F + r") secs?, took (?P<gib>-?" + _F + r") ?GiB",
          ("cudagraph_seconds", "s", "float"), ("cudagraph_bytes", "gib", "gib")),
    _rule("vllm", r"Memory after warmup: (?P<free>" + _F + r") GiB free, (?P<committed>" + _F + r") GiB committed to the "
          r"KV cache, (?P<kept>" + _F + r") GiB kept for transient activations \((?P<peak>" + _F + r") GiB allocated at "
          r"peak, (?P<growth>" + _F + r") GiB of torch reservation growth\); (?P<blocks>\d+) KV cache blocks \((?P<kvgib>" +
          _F + r") GiB\) fit within the requested (?P<req>" + _F + r") GiB",
          ("warmup_free_bytes", "free", "gib"), ("warmup_committed_bytes", "committed", "gib"),
          ("transient_kept_bytes", "kept", "gib"), ("transient_peak_bytes", "peak", "gib"),
          ("torch_growth_bytes", "growth", "gib"), ("num_gpu_blocks", "blocks", "int"),
          ("kv_cache_bytes", "kvgib", "gib"), ("requested_bytes", "req", "gib")),
    _rule("vllm", r"# GPU blocks: (?P<gpu>\d+), # CPU blocks: (?P<cpu>\d+)",
          ("num_gpu_blocks", "gpu", "int"), ("num_cpu_blocks", "cpu", "int")),
    _rule("vllm", r"num_gpu_blocks is: (?P<gpu>\d+)", ("num_gpu_blocks", "gpu", "int")),
    # SGLang
    _rule("sglang", r"Init torch distributed ends\. (?:elapsed=" + _F + r" s, )?mem usage=(?P<gb>" + _F + r") ?GB",
          ("distributed_init_bytes", "gb", "gib")),
    _rule("sglang", r"Load weight begin\. avail mem=(?P<gb>" + _F + r") ?GB", ("free_before_load_bytes", "gb", "gib")),
    _rule("sglang", r"Load weight end\. (?:elapsed=(?P<s>" + _F + r") s, )?type=(?P<cls>\w+)(?P<rest>.*?)"
          r"avail mem=(?P<avail>" + _F + r") ?GB, mem usage=(?P<usage>" + _F + r") ?GB",
          ("load_seconds", "s", "float"), ("model_class", "cls", "str"),
          ("free_after_load_bytes", "avail", "gib"), ("weights_bytes", "usage", "gib")),
    _rule("sglang", r"(?P<name>[\w ]*?Cache) (?:is allocated|VA upper bound)\. (?:dtype: (?P<dtype>[\w.]+), )?"
          r"(?:#tokens: (?P<tokens>\d+), )?(?:K(?: size:)? (?P<k>" + _F + r") ?GB, V(?: size:)? (?P<v>" + _F + r") ?GB"
          r"|KV(?: size:)? (?P<kv>" + _F + r") ?GB)",
          ("kv_pool_name", "name", "str"), ("kv_pool_dtype", "dtype", "str"), ("kv_pool_tokens", "tokens", "int"),
          ("k_pool_bytes", "k", "gib"), ("v_pool_bytes", "v", "gib"), ("kv_pool_bytes", "kv", "gib")),
    _rule("sglang", r"Use sliding window memory pool(?: \(all SWA\))?\. full_layer_tokens=(?P<full>\d+), "
          r"swa_layer_tokens=(?P<swa>\d+)", ("full_layer_tokens", "full", "int"), ("swa_layer_tokens", "swa", "int")),
    _rule("sglang", r"Post-capture KV sizing: KV cache allocated\. dtype: \S+, #tokens: (?P<tokens>\d+), KV size: "
          r"(?P<kv>" + _F + r") ?GB, avail mem=(?P<avail>" + _F + r") ?GB",
          ("post_capture_tokens", "tokens", "int"), ("post_capture_kv_bytes", "kv", "gib"),
          ("post_capture_free_bytes", "avail", "gib")),
    _rule("sglang", r"Memory pool end\. avail mem=(?P<gb>" + _F + r") ?GB", ("free_after_pool_bytes", "gb", "gib")),
    _rule("sglang", r"Capture .*?graph end\..*?mem usage=(?P<gb>" + _F + r") ?GB.*?avail mem=(?P<avail>" + _F + r") ?GB",
          ("cudagraph_bytes", "gb", "gib"), ("free_after_graphs_bytes", "avail", "gib")),
    # PyTorch's out-of-memory message, which either engine may print: the CUDA total of the GPU. Not an
    # engine's line (engine None): alone it does not make a text a start-up log.
    _rule(None, r"GPU \d+ has a total capacity of (?P<total>" + _F + r") ?GiB", ("cuda_total_bytes", "total", "gib")),
)

# SGLang's summary line and Mamba line list key=value pairs whose set changed across versions (and
# that authors abridge): read as pairs, the known keys named below.
_SUMMARY = re.compile(r"^max_total_num_tokens=\d+")
_SUMMARY_FIELDS = {"max_total_num_tokens": "kv_cache_tokens", "chunked_prefill_size": "chunked_prefill_size",
                   "max_prefill_tokens": "max_prefill_tokens", "max_running_requests": "max_running_requests",
                   "context_len": "context_len", "available_gpu_mem": "free_after_graphs_bytes"}
_MAMBA = re.compile(r"Mamba Cache is allocated\.\s*(?P<rest>.*)$")
_PAIR = re.compile(r"(?P<key>[a-z_]+)(?: size)?\s*[:=]\s*(?P<value>-?" + _F + r")\s*(?P<unit>GB)?|"
                   r"(?P<key2>[a-z_]+)\s+(?P<value2>" + _F + r")\s*(?P<unit2>GB)")
_NON_DEFAULT = re.compile(r"non-default args: (?P<args>\{.*)$")
_SERVER_ARGS = re.compile(r"server_args=(?P<call>ServerArgs\(.*)$")
_ENGINE_CONFIG = re.compile(r"Initializing a (?:V1 )?LLM engine \(v[^)]*\) with config: (?P<cfg>.*)$")
_CONFIG_KEYS = (("model", r"model='(?P<v>[^']*)'", "str"), ("max_model_len", r"max_seq_len=(?P<v>\d+)", "int"),
                ("tensor_parallel_size", r"tensor_parallel_size=(?P<v>\d+)", "int"),
                ("pipeline_parallel_size", r"pipeline_parallel_size=(?P<v>\d+)", "int"),
                ("data_parallel_size", r"data_parallel_size=(?P<v>\d+)", "int"),
                ("dtype", r"dtype=torch\.(?P<v>\w+)", "str"), ("quantization", r"quantization=(?P<v>\w+)", "str"),
                ("enforce_eager", r"enforce_eager=(?P<v>True|False)", "bool"),
                ("kv_cache_dtype", r"kv_cache_dtype=(?P<v>\w+)", "str"),
                ("enable_prefix_caching", r"enable_prefix_caching=(?P<v>True|False)", "bool"))
# A version the user pasted beside the log ("- **vLLM:** `0.24.0`", "vllm: 0.22.0", "vllm version 0.28.0").
_PASTED_VERSION = re.compile(r"^[\W_]*(?P<engine>vllm|sglang)[\W_]*?(?:\s+version)?[*`\s]*[:=]?[*`\s]*v?" + _V,
                             re.IGNORECASE)
# A GPU listing ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: …)", nvidia-smi's "0 NVIDIA A100-SXM4-80GB").
_GPU = re.compile(r"^(?:GPU )?(?P<index>\d+)[:,]?\s+(?P<name>(?:NVIDIA|AMD|Tesla|Quadro)\b[^(]*?)\s*(?:\(UUID.*)?$")
_MESSAGE_HEAD = re.compile(r"^(?:Mamba Cache is allocated|KV Cache is allocated|non-default args|server_args=|"
                           r"max_total_num_tokens=|Initializing a)")
# The command that started the engine, pasted above its log: ``vllm serve MODEL --flag ...``,
# ``python -m vllm.entrypoints.openai.api_server``, ``python -m sglang.launch_server``, ``sglang serve``.
_COMMAND = re.compile(r"^(?:[$#>]\s*)?(?:\S*=\S*\s+)*(?:(?:\S*/)?python3?(?:\.\d+)?\s+-m\s+)?"
                      r"(?P<prog>vllm serve|vllm\.entrypoints\.openai\.api_server|sglang\.launch_server|sglang serve)"
                      r"(?P<rest>(?:\s.*)?)$")
# SGLang's short and alternative spellings, as its ServerArgs.add_cli_args names them (dest on the right)
_SGLANG_FLAGS = {"tp": "tp_size", "tensor_parallel_size": "tp_size", "dp": "dp_size", "data_parallel_size": "dp_size",
                 "pp": "pp_size", "pipeline_parallel_size": "pp_size", "ep": "ep_size", "model": "model_path"}
_VLLM_FLAGS = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "dp": "data_parallel_size",
               "O": "compilation_config", "q": "quantization"}

_SERVER_KEYS = (("model", "model_path"), ("tensor_parallel_size", "tp_size"),
                ("pipeline_parallel_size", "pp_size"), ("data_parallel_size", "dp_size"),
                ("max_model_len", "context_length"))
_VLLM_KEYS = (("model", "model"), ("tensor_parallel_size", "tensor_parallel_size"),
              ("pipeline_parallel_size", "pipeline_parallel_size"), ("data_parallel_size", "data_parallel_size"),
              ("max_model_len", "max_model_len"))


def _value(kind: str, text: str) -> tuple[Any, int | None]:
    if kind == "gib":
        return _gib(text)
    if kind == "int":
        return _int(text), None
    if kind == "float":
        return float(text), None
    if kind == "bool":
        return True, None
    return text.strip(), None


def _figures_of(rule: _Rule, match: re.Match, line: _Line) -> list[Figure]:
    out = []
    for name, group, kind in rule.fields:
        text = match.group(group)
        if text is None:
            continue
        try:
            value, step = _value(kind, text)
        except (InvalidOperation, ValueError):
            continue
        printed = f"{text} GB" if kind == "gib" and rule.engine == "sglang" else (  # SGLang's "GB" are GiB
            f"{text} GiB" if kind == "gib" else text)
        out.append(Figure(name, value, line.text, line.number, line.rank, printed, step))
    return out


def _pairs(rest: str, line: _Line, names: dict[str, str] | None, prefix: str = "") -> list[Figure]:
    """key=value (or "key: value", "key value GB") pairs of SGLang's summary and Mamba lines; a GB
    value in bytes. ``names`` maps the keys kept to field names (None: every key, ``prefix`` added)."""
    out = []
    for match in _PAIR.finditer(rest):
        key = match["key"] or match["key2"]
        text = match["value"] if match["key"] else match["value2"]
        unit = match["unit"] if match["key"] else match["unit2"]
        name = (names or {}).get(key) if names is not None else prefix + key + ("_bytes" if unit else "")
        if not name:
            continue
        if unit:
            value, step = _gib(text)
            out.append(Figure(name, value, line.text, line.number, line.rank, f"{text} GB", step))
        else:
            value = float(text) if "." in text else int(text)
            out.append(Figure(name, value, line.text, line.number, line.rank, text, None))
    return out


@dataclass
class _Start:
    """What one start of the engine printed, gathered line by line."""

    figures: list[Figure] = field(default_factory=list)
    args: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    engines: set[str] = field(default_factory=set)
    fingerprints: list[tuple[str, int]] = field(default_factory=list)
    markers: set[str] = field(default_factory=set)
    last_when: tuple[int, ...] | None = None
    pasted_versions: list[tuple[str, str, str]] = field(default_factory=list)  # (engine, version, text)
    gpus: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    sizing: bool = False  # a KV figure is in: a later start marker begins another start
    seen: set[tuple[str, str | None]] = field(default_factory=set)  # (field, rank) of the _REPEAT figures read

    def empty(self) -> bool:
        return not (self.figures or self.args or self.config or self.pasted_versions)


def _read_line(line: _Line, start: _Start, notes: list[str]) -> tuple[bool, str | None]:
    """Read one logical line into ``start``. (whether anything was recognised, the start marker it is:
    a line printed once per run, or None)."""
    msg = line.msg
    if line.prefix:
        start.engines.add(line.prefix)
    found, marker = False, None
    for rule in RULES:
        match = rule.pattern.search(msg)
        if not match:
            continue
        figures = _figures_of(rule, match, line)
        start.figures.extend(figures)
        if rule.engine:
            start.engines.add(rule.engine)
        found = True
        if rule.start:
            marker = "version"
        if line.prefix == "vllm" and line.file and rule.engine == "vllm":
            start.fingerprints.append((line.file, int(line.lineno or 0)))
        if any(f.field in _SIZING for f in figures):
            start.sizing = True
    config = _ENGINE_CONFIG.search(msg)
    if config:
        for name, pattern, kind in _CONFIG_KEYS:
            hit = re.search(pattern, config["cfg"])
            if hit:
                start.config[name] = (hit["v"] == "True") if kind == "bool" else (
                    int(hit["v"]) if kind == "int" else hit["v"])
    special = _read_special(line, start, notes)
    if special:
        found = True
        marker = marker or ("args" if special == "args" else None)
    return found, marker


# Figures an engine prints once per start and rank: seen again, they begin another start. (SGLang's KV
# pool line is not one: a speculative draft model prints its own after the target's.)
_REPEAT = frozenset({"available_kv_bytes", "kv_cache_tokens", "max_concurrency", "weights_bytes",
                     "cudagraph_estimate_bytes", "free_before_load_bytes"})
_SIZING = frozenset({"available_kv_bytes", "kv_cache_tokens", "max_concurrency", "kv_pool_tokens", "k_pool_bytes",
                     "kv_pool_bytes", "refusal_needed_bytes"})


def _read_special(line: _Line, start: _Start, notes: list[str]) -> str | None:
    """The lines that are not one pattern: argument lists, SGLang's key=value lines, a pasted version
    or GPU listing. Returns ``"args"`` for an argument list (a start marker), ``"line"`` for another
    line recognised, None otherwise."""
    msg = line.msg
    non_default = _NON_DEFAULT.search(msg)
    if non_default:
        args, was_cut = _salvaged(non_default["args"], "}", _dict_literal)
        _take_args(start, args, was_cut, line, "vllm", "non-default args", notes)
        return "args"
    server = _SERVER_ARGS.search(msg)
    if server:
        args, was_cut = _salvaged(server["call"], ")", _call_arguments)
        _take_args(start, args, was_cut, line, "sglang", "ServerArgs", notes)
        return "args"
    command = _COMMAND.match(msg) if line.prefix is None else None
    if command and _commandlike(command["rest"]):
        engine = "sglang" if command["prog"].startswith("sglang") else "vllm"
        args = _command_args(command["rest"], engine, command["prog"] == "vllm serve")
        if args is None:
            notes.append(f"line {line.number}: the {command['prog']} command is not a shell line hfkv can split; "
                         "not read")
            return "line"
        start.engines.add(engine)
        for key, value in args.items():  # what the engine printed itself (non-default args) wins
            start.args.setdefault(key, value)
        start.figures.append(Figure("command", args, line.text, line.number, None, None, None))
        return "line"
    if _SUMMARY.match(msg):
        start.engines.add("sglang")
        start.figures.extend(_pairs(msg, line, _SUMMARY_FIELDS))
        start.sizing = True
        return "line"
    mamba = _MAMBA.search(msg)
    if mamba:
        start.engines.add("sglang")
        start.figures.extend(_pairs(mamba["rest"], line, None, "mamba_"))
        return "line"
    pasted = _PASTED_VERSION.match(msg) if line.prefix is None else None
    if pasted:
        start.pasted_versions.append((pasted["engine"].lower(), pasted["version"], msg.strip()))
        return "line"
    gpu = _GPU.match(msg) if line.prefix is None else None
    if gpu:
        start.gpus[int(gpu["index"])] = " ".join(gpu["name"].split())
        return "line"
    return None


def _take_args(start: _Start, args: dict[str, Any] | None, was_cut: bool, line: _Line, engine: str, what: str,
               notes: list[str]) -> None:
    start.engines.add(engine)
    if args is None:
        notes.append(f"line {line.number}: the {what} line is cut before its first whole argument; not read")
        return
    if was_cut:
        notes.append(f"line {line.number}: the {what} line is cut; its first {len(args)} arguments were read")
    start.args.update(args)
    start.figures.append(Figure("args", args, line.text, line.number, line.rank, None, None))


def _command_args(rest: str, engine: str, positional_model: bool) -> dict[str, Any] | None:
    """The arguments of a pasted engine command, under the names the engine's own argument list uses
    (``--tensor-parallel-size 2`` and vLLM's ``-tp 2`` → ``tensor_parallel_size``; SGLang's ``--tp 2`` →
    ``tp_size``); a bare flag is True, ``--no-X`` sets X False, a JSON value is read as JSON. None when
    the line does not split as a shell line would."""
    try:
        words = shlex.split(rest, comments=True)
    except ValueError:
        return None
    aliases = _SGLANG_FLAGS if engine == "sglang" else _VLLM_FLAGS
    args: dict[str, Any] = {}
    i = 0
    if positional_model and words and not words[0].startswith("-"):
        args["model"] = words[0]
        i = 1
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-") or word in ("-", "--"):
            continue
        name, eq, value = word.lstrip("-").partition("=")
        name = name.replace("-", "_")
        name = aliases.get(name, name)
        if not eq:
            if i < len(words) and not (words[i].startswith("-") and not _looks_numeric(words[i])):
                value = words[i]
                i += 1
            elif name.startswith("no_"):
                args[name[3:]] = False
                continue
            else:
                args[name] = True
                continue
        args[name] = _command_value(value)
    return args


def _commandlike(rest: str) -> bool:
    """True when what follows the program reads as its arguments (a flag, or a repo id or path first),
    not as prose ("vllm serve crashes when ...")."""
    first = rest.split(maxsplit=1)[0] if rest.strip() else ""
    return " -" in f" {rest}" or "/" in first


def _looks_numeric(word: str) -> bool:
    return re.fullmatch(r"-\d+(?:\.\d+)?", word) is not None


def _command_value(text: str) -> Any:
    """A flag's value as the engine would read it: an int, a float, True/False, JSON, else the text."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d*\.\d+(?:[eE]-?\d+)?", text):
        return float(text)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text[:1] in "{[":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _quoted(line: _Line) -> list[_Line]:
    """The spans of ``line`` quoted in backticks that are log lines (a log quoted in a Markdown table
    or in prose); empty when none is."""
    out = []
    for span in _BACKTICKS.findall(line.text):
        part = _split(line.number, span.strip())
        part.text = line.text
        if _read_line(part, _Start(), [])[0]:
            out.append(part)
    return out


def _starts(lines: list[_Line], notes: list[str]) -> tuple[list[_Start], int]:
    """The lines grouped into starts, and how many lines were recognised. A start marker (the version
    line, the argument list) after a start's KV figures, or repeated, begins a new start unless its
    timestamp is earlier than the start's last line (then it was pasted out of order)."""
    starts = [_Start()]
    recognised = 0
    for line in lines:
        current = starts[-1]
        probe = _Start()
        found, marker = _read_line(line, probe, [])
        if not found:
            quoted = _quoted(line)
            if quoted:
                lines_here = quoted
                recognised += 1
                for part in lines_here:
                    _read_line(part, current, notes)
            continue
        recognised += 1
        repeated = {(f.field, f.rank) for f in probe.figures if f.field in _REPEAT} & current.seen
        again = marker is not None and (current.sizing or marker in current.markers)
        if repeated:  # the same figure again from the same rank: the engine started again
            again, line_when = True, None
        else:
            line_when = line.when
        earlier = line_when is not None and current.last_when is not None and line_when < current.last_when
        if again and not earlier:
            current = _Start()
            starts.append(current)
        elif again and earlier:
            notes.append(f"line {line.number} is earlier than the lines before it (pasted out of order): "
                         "read as part of the same start")
        _read_line(line, current, notes)
        current.seen |= {(f.field, f.rank) for f in probe.figures if f.field in _REPEAT}
        if marker:
            current.markers.add(marker)
        if line.when is not None and (current.last_when is None or line.when > current.last_when):
            current.last_when = line.when
    return [s for s in starts if not s.empty()], recognised


# -- engine and version --------------------------------------------------------------------------

# vLLM's logger line numbers per release (engine-versions.md, "Engine version from the log"): the line
# of the call that prints "Available KV cache memory" (gpu_worker.py), the KV cache size and the
# concurrency (kv_cache_utils.py) and "Initializing a V1 LLM engine" (core.py).
FINGERPRINTS: dict[tuple[str, int], tuple[str, ...]] = {}
for _version, _worker, _utils, _core in (
        ("0.9.2", 232, (716, 720), 69), ("0.10.2", 298, (864, 868), 76), ("0.12.0", 359, (1286, 1291), 93),
        ("0.14.1", 358, (1305, 1310), 97), ("0.16.0", 373, (1307, 1312), 97),
        ("0.18.0–0.18.1", 456, (1316, 1321), 103), ("0.20.2", 440, (1708, 1709), 109),
        ("0.21.0", 462, (1710, 1711), 109), ("0.22.0–0.22.1", 466, (1733, 1734), 112),
        ("0.24.0", 508, (2146, 2147), 114), ("0.26.0", 560, (2177, 2178), 116), ("0.27.1", 563, (2235, 2236), 121),
        ("0.30.0", 640, (2395,), 123), ("0.33.0", 772, (1147,), 139), ("0.34.0", 795, (1168,), 153)):
    for _key in [("gpu_worker.py", _worker), ("core.py", _core)] + [("kv_cache_utils.py", n) for n in _utils]:
        FINGERPRINTS[_key] = FINGERPRINTS.get(_key, ()) + (_version,)


def _engine_of(start: _Start) -> str:
    engines = start.engines | {e for e, _, _ in start.pasted_versions}
    if len(engines) == 1:
        return next(iter(engines))
    # both seen (a pasted "vLLM: X" beside SGLang lines is unlikely; prefixes decide)
    vllm = sum(1 for f in start.figures if f.field in _VLLM_ONLY)
    sglang = sum(1 for f in start.figures if f.field in _SGLANG_ONLY)
    return "sglang" if sglang > vllm else "vllm"


_VLLM_ONLY = frozenset(f for r in RULES if r.engine == "vllm" for f, _, _ in r.fields)
_SGLANG_ONLY = frozenset(f for r in RULES if r.engine == "sglang" for f, _, _ in r.fields) | set(_SUMMARY_FIELDS.values())


def _version(engine: str, start: _Start) -> tuple[str | None, str]:
    """(version, how it was told): the engine's own version line, a version pasted beside the log,
    vLLM's logger line numbers, else what the line formats bound it to ("unknown: …")."""
    own = next((f for f in start.figures if f.field == "engine_version"), None)
    if own is not None:
        return str(own.value), f"the log's version line ({cut(own.text.strip(), 120)})"
    pasted = [(v, text) for e, v, text in start.pasted_versions if e == engine]
    if pasted:
        return pasted[0][0], f"a version line pasted with the log ({cut(pasted[0][1], 120)})"
    if engine == "vllm" and start.fingerprints:
        told = _fingerprint(start.fingerprints)
        if told:
            return told
    return None, "unknown: " + _format_hint(engine, start)


def _fingerprint(hits: list[tuple[str, int]]) -> tuple[str, str] | None:
    """The vLLM release whose logger line numbers the log's lines carry, and the evidence."""
    votes: dict[str, int] = {}
    known = sorted({hit for hit in hits if hit in FINGERPRINTS})
    for hit in known:
        for version in FINGERPRINTS[hit]:
            votes[version] = votes.get(version, 0) + 1
    if not votes:
        return None
    best = max(votes, key=lambda v: (votes[v], v))
    where = ", ".join(f"{file}:{n}" for file, n in known)
    others = sorted({hit for hit in hits if hit not in FINGERPRINTS})
    text = f"logger line numbers {where} match vLLM {best}"
    if len(votes) > 1:
        text += f" (also seen in {', '.join(sorted(v for v in votes if v != best))})"
    if others:
        text += f"; {', '.join(f'{f}:{n}' for f, n in others)} unknown"
    return best.split("–")[-1], text


def _format_hint(engine: str, start: _Start) -> str:
    """What the line formats say of the version, when nothing names it."""
    fields = {f.field for f in start.figures}
    same_line = any(f.field == "kv_cache_tokens" and "Maximum concurrency" in f.text for f in start.figures)
    if engine == "vllm":
        if "warmup_committed_bytes" in fields:
            return "line format: 'Memory after warmup' (vLLM ≥ 0.34)"
        if same_line:
            return "line format: tokens and concurrency on one line (vLLM ≥ 0.30)"
        if "max_concurrency" in fields:
            return "line format: tokens and concurrency on two lines (vLLM ≤ 0.29)"
        if "num_cpu_blocks" in fields:
            return "line format: '# GPU blocks' (vLLM's V0 engine, ≤ 0.10)"
        return "no version line and no known line format"
    if "kv_pool_dtype" in fields:
        return "line format: 'is allocated. dtype:' (SGLang ≥ 0.5.16)"
    if "kv_pool_name" in fields and "kv_pool_tokens" not in fields:
        return "line format: a KV line without '#tokens' (SGLang ≤ 0.4.3)"
    return "no version line and no known line format"


# -- the whole -------------------------------------------------------------------------------------

def parse_log(text: str) -> StartupLog:
    """Read a vLLM or SGLang start-up log (the whole text a user pasted).

    Returns the last start's figures with what the log says of the engine, its version, the model,
    the GPU and the arguments. Raises ``NotAStartupLog`` (one line) when no line of either engine is
    recognised, when the text is another engine's log (llama.cpp), or when it is too large to be one.
    """
    if not isinstance(text, str):
        raise NotAStartupLog(f"a start-up log is text, not {type(text).__name__}")
    if len(text) > MAX_LOG_CHARS:
        raise NotAStartupLog(f"{len(text):,} characters is too large for a start-up log "
                             f"(at most {MAX_LOG_CHARS:,})")
    lines = list(_logical_lines(text))
    notes: list[str] = []
    starts, recognised = _starts(lines, notes)
    if not starts:
        raise NotAStartupLog(_refusal(text, len(lines)))
    if len(starts) > 1:
        notes.insert(0, f"the log holds {len(starts)} starts; the last (from line "
                        f"{min(f.line for f in starts[-1].figures) if starts[-1].figures else '?'}) is read")
    start = starts[-1]
    if not (start.engines or start.pasted_versions):  # a GPU listing or PyTorch's OOM message, nothing else
        raise NotAStartupLog("not a vLLM or SGLang start-up log: no line of either engine (only lines any "
                             "program may print: a GPU listing, PyTorch's out-of-memory message)")
    notes.extend(start.notes)
    engine = _engine_of(start)
    version, evidence = _version(engine, start)
    if engine == "vllm":
        notes.extend(_unknown_lines(start))
    return _assemble(start, engine, version, evidence, notes, text.count("\n") + (0 if text.endswith("\n") else 1),
                     len(starts))


def _refusal(text: str, count: int) -> str:
    if _LLAMA_CPP.search(text):
        return "this is a llama.cpp log: hfkv reads vLLM and SGLang start-up logs"
    return (f"not a vLLM or SGLang start-up log: none of its {count:,} lines is one hfkv knows "
            "(e.g. 'Available KV cache memory: …', 'KV Cache is allocated. …', 'max_total_num_tokens=…')")


def _unknown_lines(start: _Start) -> list[str]:
    unknown = sorted({hit for hit in start.fingerprints if hit not in FINGERPRINTS and hit[0] in
                      ("gpu_worker.py", "kv_cache_utils.py", "core.py")})
    if not unknown:
        return []
    return [f"logger line numbers not in hfkv's table of releases: {', '.join(f'{f}:{n}' for f, n in unknown)}"]


def _assemble(start: _Start, engine: str, version: str | None, evidence: str, notes: list[str], count: int,
              starts: int) -> StartupLog:
    keys = _SERVER_KEYS if engine == "sglang" else _VLLM_KEYS
    told: dict[str, Any] = {}
    for name, key in keys:
        value = start.args.get(key)
        if value is None:
            value = start.config.get(name)
        if value is not None:
            told[name] = value
    if engine == "vllm" and "model" not in told and isinstance(start.args.get("model_tag"), str):
        told["model"] = start.args["model_tag"]
    figures = {f.field: f.value for f in start.figures if first_rank(f.rank)}
    if "max_model_len" not in told:
        for name in ("concurrency_max_model_len", "refusal_max_model_len", "context_len"):
            if isinstance(figures.get(name), int):
                told["max_model_len"] = figures[name]
                break
    gpu_names = sorted(set(start.gpus.values()))
    return StartupLog(
        engine=engine, version=version, version_evidence=evidence, model=_text_or_none(told.get("model")),
        gpu=gpu_names[0] if len(gpu_names) == 1 else (", ".join(gpu_names) or None),
        gpu_count=len(start.gpus) or None,
        tensor_parallel_size=_int_or_none(told.get("tensor_parallel_size")),
        pipeline_parallel_size=_int_or_none(told.get("pipeline_parallel_size")),
        data_parallel_size=_int_or_none(told.get("data_parallel_size")),
        max_model_len=_int_or_none(told.get("max_model_len")),
        args={**{k: v for k, v in start.config.items()}, **start.args}, figures=tuple(start.figures),
        notes=tuple(notes), lines=count, starts=starts)


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _text_or_none(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None
