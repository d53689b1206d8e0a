"""``hfkv scan FILE|-``: one row per model of a list, fetched concurrently.

The list holds one model per line (``org/name``, ``org/name@rev`` or a local path); blank lines and
``#`` comments are skipped and a model listed twice is fetched once. Each model becomes one row:
the single-model JSON object (``Report.to_dict()``) or ``{"model": ..., "error": "<kind>: <message>"}``.
Rows are written as they complete (jsonl, csv, markdown) and flushed one by one, so an interrupted
scan loses nothing, and ``--resume`` completes such a file. Exit codes: 0 every model succeeded, 1
some failed (their rows say why) or the output could not be written, 2 bad usage, 130 interrupted.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterable

import click

from hfkv.runtime import fetchers
from hfkv.model import defaults as tfdefaults
from hfkv.commands.deploy import Deployment, deployment_options
from hfkv.commands.options import accounting_options, build_hub, build_options, fail, hub_options
from hfkv.errors import HfkvError, UsageError, WriteError, system_refusal
from hfkv.text import markdown_cell, one_line, spreadsheet_cell
from hfkv.runtime.files import write_atomic
from hfkv.units import format_bytes, format_tokens

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hfkv.model.report import Report

FORMATS = ("table", "jsonl", "csv", "markdown")
STREAM_FORMATS = ("jsonl", "csv", "markdown")
# From this many models on, transformers is imported by a helper process on another core while the
# configs download (hfkv.model.defaults); a shorter list would rarely repay starting it.
HELPER_MIN_MODELS = 16
LIST_LIMIT = 64 * 1024 * 1024  # bytes of a list file; a list that large is a mistake (or /dev/zero)
_EXTENSION_FORMATS = {".csv": "csv", ".md": "markdown", ".markdown": "markdown", ".jsonl": "jsonl", ".json": "jsonl"}


# -- the list -------------------------------------------------------------------------------------


def read_entries(lines: Iterable[str]) -> list[str]:
    """Models of a list, in order, without blanks, comments or repeats.

    A ``#`` starts a comment at the start of a line or after whitespace (``org/m  # note``), so a
    path containing ``#`` elsewhere is kept whole.
    """
    seen: dict[str, None] = {}
    for line in lines:
        text = re.split(r"(?:^|\s)#", line, maxsplit=1)[0].strip()
        if text:
            seen.setdefault(text, None)
    return list(seen)


def read_list(name: str) -> list[str]:
    """The entries of the list file ``name`` (``-``: stdin, read line by line).

    Raises ``UsageError`` (one line) when the file cannot be opened, is not a regular file (a FIFO or
    a device such as ``/dev/zero`` would block or never end), is over ``LIST_LIMIT`` bytes or is not
    UTF-8 text.
    """
    if name == "-":
        return read_entries(_stdin_lines())
    try:
        if not stat.S_ISREG(os.stat(name).st_mode):  # before open(): opening a FIFO blocks
            raise UsageError(f"cannot read the list {name}: not a regular file")
        with open(name, "rb") as handle:
            raw = handle.read(LIST_LIMIT + 1)  # bounded even if the file grows while read
    except OSError as err:
        raise UsageError(f"cannot read the list {name}: {err.strerror or type(err).__name__}") from None
    if len(raw) > LIST_LIMIT:
        raise UsageError(f"cannot read the list {name}: larger than {format_bytes(LIST_LIMIT)}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"cannot read the list {name}: not UTF-8 text (byte {err.start})") from None
    return read_entries(text.splitlines())


def _stdin_lines() -> Iterable[str]:
    """Lines of stdin decoded one by one, so a long pipe is not held twice in memory."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text-only stdin (embedding code replaced it): already decoded
        yield from sys.stdin
        return
    for number, raw in enumerate(stream, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"cannot read the list from stdin: not UTF-8 text (line {number})") from None


# -- one model ------------------------------------------------------------------------------------


@dataclass
class Row:
    """The outcome for one model: a report, or the one-line reason there is none."""

    model: str
    report: Report | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return self.report.to_dict() if self.ok else {"model": self.model, "error": self.error}


def _describe(err: BaseException) -> str:
    """``kind: message`` for an error row; an unexpected exception is ``internal: Type: first line``."""
    if isinstance(err, HfkvError):
        return err.row_text()
    lines = str(err).strip().splitlines()
    detail = one_line(lines[0][:300]) if lines else ""
    return f"internal: {type(err).__name__}" + (f": {detail}" if detail else "")




@dataclass
class Fetched:
    """What the network gave for one model: its config (or the reason there is none) and weights."""

    entry: str
    loaded: Any = None  # hfkv.sources.LoadedConfig
    weights: Any = None  # HubClient.weights() summary, or None
    error: str | None = None


@dataclass
class Job:
    """What every model of a scan shares.

    A model is done in two steps: ``fetch`` (network and cache; run by the worker threads) and
    ``finish`` (the report; run by the thread that writes the rows). Keeping the CPU-bound report
    out of the workers keeps them from contending for the GIL with one another: measured on a
    2-core VM, a 300-repo scan spent 2 to 3 times its single-thread CPU when every worker built reports.
    """

    options: Any  # hfkv.model.options.Options
    hub: Any = None
    revision: str | None = None
    weights: bool = False
    deployment: Deployment | None = None  # every report planned on it (--gpu, --engine, knobs)

    def run(self, entry: str) -> Row:
        """Fetch and report one model. Never raises (apart from KeyboardInterrupt and the like)."""
        return self.finish(self.fetch(entry))

    def fetch(self, entry: str) -> Fetched:
        """Config (and, with ``weights``, parameter counts) of one model. Never raises.

        Transport failures are not retried here: ``HubClient`` already retries (docs/hub.md §8.5),
        so another layer would multiply the tries.
        """
        from hfkv.sources import load_config

        try:
            loaded = load_config(entry, hub=self.hub, revision=self.revision)
            weights = None
            if self.weights and loaded.source == "hub" and self.hub is not None:
                weights = self.hub.weights(loaded.name, loaded.revision)
            return Fetched(entry, loaded=loaded, weights=weights)
        except Exception as err:  # noqa: BLE001 - one model's bug must not end the scan
            return Fetched(entry, error=_describe(err))

    def finish(self, fetched: Fetched, *, defer: bool = False) -> Row | None:
        """The row of one fetched model. Never raises. With ``defer``: None when the report needs
        transformers defaults that the helper process is still starting to provide (ask again later)."""
        if fetched.error is not None:
            return Row(fetched.entry, error=fetched.error)
        try:
            with tfdefaults.deferring(defer):
                return Row(fetched.entry, report=self._report(fetched))
        except tfdefaults.NotReady:
            return None
        except Exception as err:  # noqa: BLE001
            return Row(fetched.entry, error=_describe(err))

    def _report(self, fetched: Fetched) -> Any:
        from hfkv.inspection import inspect_loaded
        from hfkv.model.weights import attach as attach_weights

        report = inspect_loaded(fetched.loaded, self.options, model=fetched.entry)
        if self.weights and fetched.weights is not None:
            attach_weights(report, fetched.weights)  # the Hub's figures over the estimate
        if self.deployment is not None:
            self.deployment.apply(report)  # an engine's refusal is the row's error, in its words
        return report


# -- columns --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Columns:
    """The summary columns of csv, table and markdown rows.

    With explicit contexts (``--context``/``--max-model-len``) every report has the same contexts,
    one column each. Otherwise the default contexts get a column each (empty when past the model's
    maximum) plus the model's maximum and its bytes.
    """

    contexts: tuple[int, ...]
    with_max: bool
    with_weights: bool = False
    with_requests: bool = False  # requests that fit per context: B_max in --budget, or served on --gpu
    with_plan: bool = False  # the verdict, weights per GPU and their source (--gpu)

    @classmethod
    def for_options(cls, options: Any, weights: bool = False, deployment: Deployment | None = None) -> "Columns":
        from hfkv.model.options import DEFAULT_CONTEXTS

        planned = deployment is not None and deployment.planned
        extra = dict(with_weights=weights or planned, with_requests=planned or options.budget_bytes is not None,
                     with_plan=planned)
        if options.contexts:
            return cls(tuple(options.contexts), with_max=False, **extra)
        return cls(tuple(DEFAULT_CONTEXTS), with_max=True, **extra)

    def names(self) -> list[str]:
        ctx = [f"bytes@{format_tokens(c)}" for c in self.contexts]
        ctx += [f"requests@{format_tokens(c)}" for c in self.contexts] if self.with_requests else []
        tail = ["max_context", "bytes@max"] if self.with_max else []
        tail += ["total_parameters", "weights_bytes"] if self.with_weights else []
        tail += ["weights_bytes_per_gpu", "weights_source", "kv_budget_bytes", "verdict_status", "verdict"] \
            if self.with_plan else []
        return ["model", "model_type", "mapper", "kv_dtype", "alpha_bytes_per_token", "gamma_bytes_per_request",
                "crossover_tokens", *ctx, *tail, "error"]

    def titles(self) -> list[str]:
        ctx = [f"{format_tokens(c)}" for c in self.contexts]
        ctx += [f"requests {format_tokens(c)}" for c in self.contexts] if self.with_requests else []
        tail = ["max context", "at max"] if self.with_max else []
        tail += ["parameters", "weights"] if self.with_weights else []
        tail += ["weights/GPU", "source", "KV budget/GPU", "status", "verdict"] if self.with_plan else []
        return ["model", "model_type", "mapper", "KV dtype", "α (B/token)", "γ (B/request)", "S* (tokens)",
                *ctx, *tail, "error"]

    def values(self, row: Row) -> list[Any]:
        """Raw cells (numbers or None); an error row has only its model and error."""
        width = len(self.names())
        if not row.ok:
            return [row.model] + [None] * (width - 2) + [row.error]
        r = row.report
        per_context = {c.tokens: c.kv_bytes_per_request for c in r.contexts}
        cells = [r.model, r.model_type, r.mapper, r.kv_cache_dtype, r.alpha_bytes_per_token,
                 r.gamma_bytes_per_request, r.crossover_tokens]
        cells += [per_context.get(c) for c in self.contexts]
        plan = r.extra.get("serving") or {}
        if self.with_requests:
            cells += [_requests(r, plan, c) for c in self.contexts]
        if self.with_max:
            top = r.max_position_embeddings
            cells += [top, per_context.get(top) if top else None]
        if self.with_weights:
            found = r.extra.get("weights") or {}
            cells += [found.get("total_parameters"), found.get("weights_bytes")]
        if self.with_plan:
            detail = plan.get("verdict_detail") or {}
            cells += [plan.get("weights_bytes_per_gpu"), plan.get("weights_source"), plan.get("kv_budget_bytes"),
                      detail.get("status"), plan.get("verdict")]
        return cells + [None]

    def human(self, row: Row) -> list[str]:
        """Cells for people: bytes in binary units, token counts rounded, '-' for nothing."""
        return [_human_cell(name, value) for name, value in zip(self.names(), self.values(row))]


def _requests(report: Report, plan: dict[str, Any], tokens: int) -> int | None:
    """Requests of ``tokens`` that fit: across the deployment on --gpu (0 when the weights fill the
    engine's budget), else B_max in --budget; None past the model's maximum or without a budget."""
    limit = report.max_position_embeddings
    if limit and tokens > limit:
        return None
    if plan:
        if plan.get("weights_fit") is False:
            return 0
        found = next((c for c in plan.get("contexts", []) if c["tokens"] == tokens), None)
        return None if found is None else found.get("max_concurrency_total")
    found = next((c for c in report.contexts if c.tokens == tokens), None)
    return None if found is None else found.max_concurrency


def _human_cell(name: str, value: Any) -> str:
    if value is None:
        return "" if name == "error" else "-"
    if name.startswith("bytes@") or name in ("gamma_bytes_per_request", "weights_bytes", "weights_bytes_per_gpu",
                                             "kv_budget_bytes"):
        return format_bytes(max(value, 0)) if name == "kv_budget_bytes" else format_bytes(value)
    if name.startswith("requests@"):
        return f"{value:,}"
    if name in ("crossover_tokens", "max_context", "total_parameters"):
        return f"{round(value):,}"
    if name == "alpha_bytes_per_token":
        return f"{value:,} B" if float(value).is_integer() else f"{value:,.2f} B"
    return str(value)


def _plain(value: int | float) -> str:
    """A number for csv: integers as integers, other floats in their shortest exact form (as in JSON)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# -- writers --------------------------------------------------------------------------------------


class Writer:
    """Formats rows as lines for a streaming output, and reads back what an earlier run wrote."""

    def __init__(self, columns: Columns) -> None:
        self.columns = columns

    def header(self) -> list[str]:
        return []

    def line(self, row: Row) -> str:
        raise NotImplementedError

    def key(self, entry: str) -> str:
        """How ``entry`` appears in the file's model field."""
        return entry

    def parse(self, line: str) -> tuple[str, str | None] | None:
        """(model key, its error text or None) of a complete row written earlier, or None if the
        line is not one."""
        raise NotImplementedError


class JsonlWriter(Writer):
    def line(self, row: Row) -> str:
        return json.dumps(row.to_dict())

    def parse(self, line: str) -> tuple[str, str | None] | None:
        try:
            data = json.loads(line)
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("model"), str):
            return None
        if "error" in data:
            return data["model"], str(data["error"])
        if not all(_number(data.get(key)) for key in FIGURES):  # {"model": "org/m"}: not a finished row
            return None
        return data["model"], None


# What a row that succeeded always carries: without them a row is not one a scan wrote.
FIGURES = ("alpha_bytes_per_token", "gamma_bytes_per_request")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class CsvWriter(Writer):
    def header(self) -> list[str]:
        return [self._join(self.columns.names())]

    def line(self, row: Row) -> str:
        """One csv line: numbers as numbers, text through ``spreadsheet_cell``."""
        return self._join(["" if v is None else _plain(v) if isinstance(v, (int, float)) else spreadsheet_cell(v)
                           for v in self.columns.values(row)])

    def key(self, entry: str) -> str:
        return spreadsheet_cell(entry)

    @staticmethod
    def _join(cells: list[Any]) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="").writerow(cells)
        return buf.getvalue()

    def parse(self, line: str) -> tuple[str, str | None] | None:
        cells = next(csv.reader([line]), [])
        if len(cells) != len(self.columns.names()) or not cells[0]:
            return None
        if not cells[-1] and not all(_figure(cells[self.columns.names().index(key)]) for key in FIGURES):
            return None  # a row with neither figures nor an error is not one a scan wrote
        return cells[0], cells[-1] or None


class MarkdownWriter(Writer):
    _CELL_SPLIT = re.compile(r"(?<!\\)\|")

    def header(self) -> list[str]:
        titles = self.columns.titles()
        text = ("model", "model_type", "mapper", "KV dtype", "source", "status", "verdict", "error")
        rule = ["---" if t in text else "---:" for t in titles]
        return ["| " + " | ".join(markdown_cell(t) for t in titles) + " |", "|" + "|".join(rule) + "|"]

    def line(self, row: Row) -> str:
        return "| " + " | ".join(markdown_cell(c) for c in self.columns.human(row)) + " |"

    def key(self, entry: str) -> str:
        return markdown_cell(entry)

    def parse(self, line: str) -> tuple[str, str | None] | None:
        if not line.startswith("|") or not line.rstrip().endswith("|"):
            return None
        cells = [c.strip() for c in self._CELL_SPLIT.split(line.strip())[1:-1]]
        if len(cells) != len(self.columns.names()) or not cells[0] or set(cells[0]) <= set("-:"):
            return None
        if not cells[-1] and not all(_figure(cells[self.columns.names().index(key)].removesuffix(" B"))
                                     for key in FIGURES):
            return None  # a row with neither figures nor an error is not one a scan wrote
        return cells[0], cells[-1] or None


def _figure(cell: str) -> bool:
    """A csv or markdown cell holding a number (``1,234``, ``36.00 KiB``, ``0.5``)."""
    try:
        float(cell.replace(",", "").split(" ")[0])
        return True
    except ValueError:
        return False


WRITERS: dict[str, type[Writer]] = {"jsonl": JsonlWriter, "csv": CsvWriter, "markdown": MarkdownWriter}


# -- resume ---------------------------------------------------------------------------------------


# Error kinds a later run cannot change without a change on the Hub or in the list: kept on resume.
# Every other failed row (network, rate-limited, hub-error, offline, cache, internal) is retried.
PERMANENT_KINDS = frozenset({"not-found", "gated", "no-config", "bad-revision", "invalid-json", "too-large",
                             "config", "unsupported", "unreadable", "usage"})


def permanent(error: str) -> bool:
    """Whether a row's ``kind: message`` error is one a retry would repeat."""
    return error.split(":", 1)[0].strip() in PERMANENT_KINDS


def resume_file(path: Path, writer: Writer) -> dict[str, bool]:
    """Rows an interrupted run already wrote to ``path``: {model key: succeeded}.

    Only complete lines count; a truncated last line (no newline: the run died mid-write), a
    repeated model, or a row that failed for a transient reason (``permanent`` says which are not)
    is dropped by rewriting the file (atomically) with the header and the rows kept, so the rows
    appended next start on a fresh line and a transient failure is tried again. Anything else is a
    ``UsageError`` and the file is left untouched: a header that does not match this run's columns
    (appending would mix two shapes in one file), or any complete line that is not a row of this
    format (the file was not written by a scan, and rewriting it would destroy it).
    """
    try:
        if not path.exists():
            return {}
        if not path.is_file():  # a device or FIFO cannot hold earlier rows (and may never end)
            raise UsageError(f"--resume: {path} is not a regular file")
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror or type(err).__name__}") from None
    complete = text.split("\n")[:-1]  # the piece after the last newline is unfinished
    header = writer.header()
    if complete[: len(header)] != header and complete != header[: len(complete)]:
        raise UsageError(f"--resume: {path} was not written by a scan with these columns (format or --context differ)")
    done: dict[str, bool] = {}
    kept: list[str] = []
    for number, line in enumerate(complete[len(header):], start=len(header) + 1):
        parsed = writer.parse(line)
        if parsed is None:
            raise UsageError(f"--resume: line {number} of {path} is not a scan row of this format; "
                             "refusing to rewrite a file a scan did not write")
        key, error = parsed
        if key not in done and (error is None or permanent(error)):
            done[key] = error is None
            kept.append(line)
    # A file holding no complete row is emptied, so the header is written afresh.
    wanted = "".join(line + "\n" for line in header + kept) if len(complete) >= len(header) and complete else ""
    if wanted != text:
        try:
            write_atomic(path, wanted)
        except OSError as err:  # a full disk, say: not bad usage (exit 1); the file is as it was
            raise WriteError(system_refusal(err, f"cannot rewrite {path}")) from None
    return done


# -- one writer per output file ---------------------------------------------------------------------


def claim_output(path: Path, fingerprint: dict[str, Any], resume: bool) -> int | None:
    """Lock ``path`` for this scan and check that a resumed file was written with these options.

    The lock is an advisory ``flock`` on ``.<name>.hfkv-scan`` beside the output, which also
    records the report options of the run that wrote the file (JSON). A second scan writing the
    same output, resuming or not, fails at once with ``UsageError``; so does ``--resume`` of a file
    written with other options (dtypes, TP, contexts, budget, ``--weights``): its rows would not
    be comparable. The side file is opened without following a symlink and is kept (it is how a
    later ``--resume`` knows the options). Returns the descriptor to keep open while writing
    (None where ``fcntl`` does not exist: no lock).
    """
    try:
        import fcntl
    except ImportError:  # not POSIX
        return None
    path = path.resolve()  # a symlink to the output is the output: one side file for both names
    side = path.with_name(f".{path.name}.hfkv-scan")
    try:
        fd = os.open(side, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as err:
        raise UsageError(f"cannot write {path}: {err.strerror or type(err).__name__}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise UsageError(f"another hfkv scan is writing {path}; wait for it to end (two writers would mix their rows)") from None
    recorded = _read_fingerprint(fd)
    if resume and recorded is not None and recorded != fingerprint and path.exists():
        os.close(fd)
        changed = sorted(k for k in set(recorded) | set(fingerprint) if recorded.get(k) != fingerprint.get(k))
        raise UsageError(f"--resume: {path} was written with other report options ({', '.join(changed)}); "
                         "use the same options or another --output")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(fingerprint, sort_keys=True) + "\n").encode(), 0)
    except OSError as err:  # a full disk: the side file cannot record the options (exit 1, one line)
        os.close(fd)
        raise WriteError(system_refusal(err, f"cannot write {side}")) from None
    return fd


def _read_fingerprint(fd: int) -> dict[str, Any] | None:
    try:
        data = json.loads(os.pread(fd, 1 << 20, 0) or b"null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def fingerprint(options: Any, weights: bool, revision: str | None = None,
                deployment: Deployment | None = None) -> dict[str, Any]:
    """What a row's figures depend on besides the model: the report options, ``--weights``, the
    ``--revision`` the configs were read at and the deployment (each recorded only when given, so
    files of runs without one keep matching)."""
    data = {**options.model_dump(mode="json"), "weights": weights}
    if revision is not None:
        data["revision"] = revision
    if deployment is not None and deployment.planned:
        data["deployment"] = deployment.fingerprint()
    return json.loads(json.dumps(data, default=str))  # as read back from the file


# -- output ---------------------------------------------------------------------------------------


class OutputError(Exception):
    """A row or header could not be written (disk full, /dev/full, a closed pipe): the scan stops.
    ``reader_left``: the pipe's reader closed it (``hfkv scan list | head -1``), which loses nothing the
    reader wanted."""

    def __init__(self, name: str, err: OSError) -> None:
        super().__init__(f"cannot write {name}: {err.strerror or type(err).__name__}")
        self.reader_left = isinstance(err, BrokenPipeError)


@dataclass
class Output:
    """Where rows go as they complete: a file (flushed per row) or stdout, around a progress bar.

    Rows are not kept: a streamed row is written and dropped (memory stays flat in the number of
    models); the table format keeps only each row's cells, to print them in list order at the end.
    A failed write raises ``OutputError``; ``written`` counts the rows that reached the stream,
    ``failed`` the rows that are errors.
    """

    writer: Writer | None  # None: the table format, printed once at the end
    stream: IO[str] | None
    columns: Columns | None = None
    bar: Any = None
    name: str = "<stdout>"
    written: int = 0
    failed: int = 0
    cells: dict[str, list[str]] = field(default_factory=dict)  # table format: model -> its cells

    def start(self, fresh: bool) -> None:
        if self.writer and fresh:
            for line in self.writer.header():
                self._emit(line)

    def add(self, row: Row) -> None:
        self.failed += not row.ok
        if self.writer:
            self._emit(self.writer.line(row))
            self.written += 1
        elif self.columns is not None:
            self.cells[row.model] = self.columns.human(row)
        if self.bar is not None:
            self.bar.update(1)

    def _emit(self, line: str) -> None:
        try:
            if self.bar is not None and self.stream is sys.stdout and sys.stdout.isatty():
                self.bar.write(line, file=sys.stdout)  # same terminal: clear the bar, print, redraw it
            else:
                self.stream.write(line + "\n")
            self.stream.flush()
        except OSError as err:
            raise OutputError(self.name, err) from None

    def close(self) -> None:
        """Close the bar, and the stream unless it is stdout (everything was flushed row by row)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self.stream is not None and self.stream is not sys.stdout:
            with contextlib.suppress(OSError):  # a failed flush was reported when the row was written
                self.stream.close()


def _progress(total: int) -> Any:
    """A tqdm bar on stderr when stderr is a terminal; None otherwise (nothing is printed)."""
    if total == 0 or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    tqdm.monitor_interval = 0  # no monitor thread: the fetching process is forked only while none runs
    return tqdm(total=total, file=sys.stderr, unit="model", dynamic_ncols=True, leave=False)


def print_table(rows: list[list[str]], columns: Columns) -> None:
    """Rows' cells as one table on stdout (``hfkv.render.terminal.print_table``: cells are data, never cut)."""
    from hfkv.render.terminal import console_for, print_table as print_rows

    titles = columns.titles()
    layout = [(t, t not in ("model", "model_type", "mapper", "KV dtype", "error")) for t in titles]
    print_rows(console_for(), None, layout, rows)


def run(entries: list[str], job: Job, out: Output, jobs: int) -> None:
    """Fetch every entry, ``jobs`` at a time (``hfkv.runtime.fetchers``: threads, in a process of their own
    for a long list), and report on each in this thread as its fetch completes; rows go to ``out``
    in completion order. A model whose report needs the transformers defaults the helper process is
    still starting to provide waits, and the others go first. On any exception (Ctrl-C, a failed
    write) the fetching stops and the exception propagates at once.
    """
    if not entries:
        return
    with fetchers.fetching(entries, job.fetch, jobs) as results:
        import hfkv.mappings  # noqa: F401 - the reports' imports, made while the first fetches travel
        import hfkv.inspection  # noqa: F401

        waiting: list[Fetched] = []  # need transformers defaults before the helper has them
        for fetched in results:
            row = job.finish(fetched, defer=True)
            if row is None:
                waiting.append(fetched)
            else:
                out.add(row)
            while waiting and tfdefaults.ready():
                out.add(job.finish(waiting.pop(0)))
    for fetched in waiting:  # the helper is not ready yet: wait for it now
        out.add(job.finish(fetched))


def interrupted(out: Output) -> None:
    """Ctrl-C: keep the rows written so far, say so, and exit 130 now.

    ``os._exit`` rather than ``sys.exit``: the pool's worker threads are not daemons and the
    interpreter joins them at exit, so a worker blocked in a Hub request (a stalled server, a long
    timeout) would keep a plain exit waiting for minutes. Every row was flushed as it was written,
    and the streams are flushed here, so skipping the interpreter's shutdown loses nothing.
    """
    out.close()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    click.echo("hfkv: interrupted", err=True)
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    os._exit(130)


# -- the command ----------------------------------------------------------------------------------


def open_output(path: str, append: bool) -> IO[str]:
    """The --output file (``Output`` flushes it after every row); ``UsageError`` when it cannot be opened.

    The file itself is locked (``flock``) before it is truncated: ``claim_output``'s side file
    knows the output by its name, so a second scan writing the same file under another name (a
    hard link) is refused here, before it can empty the first scan's rows.
    """
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as err:
        raise UsageError(f"cannot write {path}: {err.strerror or type(err).__name__}") from None
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:  # not POSIX: no lock
        pass
    except OSError:
        os.close(fd)
        raise UsageError(f"another hfkv scan is writing {path} (under another name); wait for it to end") from None
    if not append and stat.S_ISREG(os.fstat(fd).st_mode):  # a device or a pipe has nothing to empty
        os.ftruncate(fd, 0)
    return os.fdopen(fd, "a" if append else "w", encoding="utf-8")


def check_not_the_list(list_name: str, output: str) -> None:
    """Refuse an --output that is the list file itself: writing rows would destroy the list."""
    if list_name == "-":
        return
    try:
        same = os.path.samefile(list_name, output)
    except OSError:  # the output does not exist yet (or cannot be examined): not the list
        return
    if same:
        raise UsageError(f"--output {output} is the list being scanned; choose another file")


def choose_format(fmt: str | None, output: str | None) -> str:
    """--format, else the output file's extension, else table on a terminal and jsonl otherwise."""
    if fmt:
        return fmt
    if output:
        return _EXTENSION_FORMATS.get(Path(output).suffix.lower(), "jsonl")
    return "table" if sys.stdout.isatty() else "jsonl"


@click.command("scan")
@click.argument("list_name", metavar="FILE|-")
@accounting_options
@deployment_options
@hub_options
@click.option("--jobs", "-j", type=click.IntRange(min=1, max=256), default=16, show_default=True,
              help="Concurrent fetches.")
@click.option("--format", "fmt", type=click.Choice(FORMATS),
              help="Row format. Default: table on a terminal, else jsonl (with --output: from its extension).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True),
              help="Write rows to PATH as they complete (flushed per row).")
@click.option("--resume", is_flag=True, help="Skip models already in --output PATH and append the rest.")
@click.option("--weights", is_flag=True, help="Also fetch parameter counts (one more Hub request per repo; "
              "implied by --gpu unless --no-weights).")
def scan_command(list_name: str, jobs: int, fmt: str | None, output: str | None, resume: bool,
                 weights: bool, **params: Any) -> None:
    """One row per model listed in FILE (or stdin with -): org/name[@rev] or a local path per line.

    Blank lines and # comments are skipped; a model listed twice is fetched once. With --gpu (and
    the report's engine and layout options) every model is planned on that deployment: the rows gain
    the requests served per context, the verdict, the weights per GPU and their source; with
    --budget alone, B_max per context. Exit code 0 when every model succeeded, 1 when some failed
    (their rows say why) or the output could not be written, 2 on bad usage, 130 when interrupted
    (rows written so far stay). A verdict of "does NOT fit" is a row, not a failure.
    """
    fmt = choose_format(fmt, output)
    if resume and not output:
        raise click.UsageError("--resume needs --output PATH")
    if fmt == "table" and output:
        raise click.UsageError("--format table is for the terminal; use jsonl, csv or markdown with --output")
    options = build_options(params)
    deployment = Deployment.from_params(params)
    if deployment.planned:
        weights = weights or not params.get("no_weights")
    columns = Columns.for_options(options, weights, deployment)
    writer = WRITERS[fmt](columns) if fmt in WRITERS else None
    lock = None
    try:
        try:
            if output:
                check_not_the_list(list_name, output)
                lock = claim_output(Path(output), fingerprint(options, weights, params.get("revision"), deployment),
                                    resume)
            entries = read_list(list_name)
            done = resume_file(Path(output), writer) if resume else {}
            stream = open_output(output, resume) if output else sys.stdout
        except HfkvError as err:  # bad usage (2), or the system refused a write (1)
            fail(str(err), err.exit_code)
        failed = _scan_entries(entries, done, writer, columns, stream, output, options, weights, jobs, params,
                               deployment if deployment.planned else None)
    finally:
        if lock is not None:
            os.close(lock)
    if failed:
        click.echo(f"hfkv: {failed} of {len(entries)} models failed (see their rows)", err=True)
    sys.exit(1 if failed else 0)


def _scan_entries(entries: list[str], done: dict[str, bool], writer: Writer | None, columns: Columns,
                  stream: IO[str], output: str | None, options: Any, weights: bool, jobs: int,
                  params: dict[str, Any], deployment: Deployment | None = None) -> int:
    """Scan the entries not ``done``, write (or print) their rows; the number of failed rows."""
    from hfkv.sources import looks_like_repo_id

    todo = [e for e in entries if writer is None or writer.key(e) not in done]
    earlier_failures = sum(1 for e in entries if writer and done.get(writer.key(e)) is False)
    hub = build_hub(params) if any(looks_like_repo_id(e) for e in todo) else None
    if hub is not None:
        hub.prefetch_weights = weights  # the parameter-count request goes out with the config GET
    job = Job(options=options, hub=hub, revision=params.get("revision"), weights=weights, deployment=deployment)
    out = Output(writer=writer, stream=stream, columns=columns, name=output or "<stdout>")
    scan_rows(todo, job, out, jobs=jobs, fresh=output is None or stream.tell() == 0)
    if writer is None:
        print_table([out.cells[e] for e in entries if e in out.cells], columns)
    return out.failed + earlier_failures


def scan_rows(todo: list[str], job: Job, out: Output, *, jobs: int, fresh: bool) -> None:
    """Scan ``todo`` into ``out`` (header first when ``fresh``).

    A failed write stops the scan and exits 1 with one line counting the rows lost; Ctrl-C keeps the
    rows written and exits 130 (``interrupted``).
    """
    out.bar = _progress(len(todo))
    try:
        out.start(fresh)
        with tfdefaults.helper_running(enabled=len(todo) >= HELPER_MIN_MODELS):
            run(todo, job, out, jobs)
    except KeyboardInterrupt:
        interrupted(out)
    except OutputError as err:
        out.close()
        if err.reader_left:  # `| head -1`: the reader has what it wanted; stop, say nothing, exit 1 as the CLI does
            if out.stream is sys.stdout:
                with contextlib.suppress(OSError, ValueError):  # what is buffered would fail again at exit
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        lost = len(todo) - out.written
        fail(f"{err} ({lost} of {len(todo)} rows not written: lost)", 1)
    out.close()
