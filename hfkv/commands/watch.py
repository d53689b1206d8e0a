"""``hfkv watch``: a Markdown and JSON report for each new model of one or more Hub organisations.

    hfkv watch --author ORG [--author ORG ...] --out DIR [--once | --interval MINUTES]
               [--since DATE] [--state FILE] [--limit N] [--gpu NAME ...]

Each poll makes one ``list_models`` call per author (newest first, with ``createdAt``, ``sha``,
``config`` and ``safetensors``), compares the ids with a state file (default ``DIR/.hfkv-watch.json``),
and for each model not yet reported fetches ``config.json`` and writes ``DIR/<name>.md`` (the report a
person pastes into a release thread: parameters and weights from the listing, then
``render_markdown`` with a B_max column per GPU preset) and ``DIR/<name>.json``, plus ``DIR/index.md``
listing every report, newest first.

Guarantees:
* First run: models created since ``--since`` (default: the last 7 days); the cut-off is kept in
  the state, so later runs see every model created after it. The first run always writes the state
  and the index; a later run with nothing new writes nothing at all.
* ``<name>`` comes from the repo id but is always a plain file name inside DIR (``safe_name``),
  whatever the Hub returns (``..``, absolute paths, NUL, unicode, very long ids).
* Every write is atomic (a temporary file in the same folder, then ``os.replace``). Per model the order
  is: report files, index, state. A model is recorded as done only after its files are written, so a
  process killed at any point leaves complete files and a valid state, and the models not yet
  recorded are redone next run.
* A model whose config cannot be fetched or read is recorded with its error and **retried on the next
  run**; it never gets a report file. A listing failure is reported and exits 1 with ``--once``.
* Permanent failures are recorded once and **not retried**: a listed id that is not a Hub repo id
  (``org/name`` of word characters, ``.`` and ``-``; stored under its escaped form) or that the
  Hub's own id rules reject (``..``, ``--``, over 96 characters), and a config refused as too
  large (retried only when the listing shows a new commit).
* Index and state are saved every ``COMMIT_SECONDS`` and at the end of each author's models, not
  after every model; a model's entry is recorded only after its report files are written.
* The listing follows "next" pages only on the endpoint's own origin (the token goes nowhere
  else), at most ``hfkv.sources.hub.MAX_LISTING_PAGES`` pages.
* Repo ids are printed and indexed with unprintable characters escaped (a newline becomes the two
  characters backslash-n), so an id from the Hub can never forge a line on stderr or in Markdown.
* One watcher per state file (an advisory lock next to it).
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import json
import os
import re
import sys
import unicodedata
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import click

from hfkv.commands.options import accounting_options, build_hub, build_options, fail, hub_options
from hfkv.errors import HfkvError, UsageError
from hfkv.planning.gpus import COMMON_GPUS, get_gpu
from hfkv.runtime.files import inside, remove_stale_temporaries, safe_name, write_atomic
from hfkv.units import format_bytes

STATE_FILE = ".hfkv-watch.json"
STATE_VERSION = 1
DEFAULT_WINDOW = dt.timedelta(days=7)
EXPAND = ["createdAt", "sha", "config", "safetensors"]
_COMMIT = re.compile(r"[0-9a-f]{40}")
_HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")  # what the Hub accepts as a model id (\w: unicode letters too)
PERMANENT_KINDS = frozenset({"too-large"})  # SourceError kinds a retry of the same commit cannot fix
SKIPPED = "skipped"  # state status of a permanent failure: recorded, not retried
COMMIT_SECONDS = 2.0  # index and state are saved at most this often while models are reported


# -- file names and atomic writes -------------------------------------------------------------------


def printable_text(text: str) -> str:
    """``text`` with control and format characters (NUL, bidi overrides, ...) shown as ``\\uXXXX``; newlines kept.

    Repo ids come from the Hub and end up in Markdown; ``md_escape`` handles pipes and HTML, this the rest.
    """
    return "".join(
        c if c == "\n" or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co") else f"\\u{ord(c):04x}"
        for c in text
    )


def escape_id(text: Any) -> str:
    """``text`` with every unprintable character (newline, NUL, ESC, bidi overrides, ...) as its Python escape.

    For ids in terminal lines, state keys of invalid ids and Markdown: ``evil/x\\nInjected: 1`` stays
    one line. Valid Hub ids are unchanged (they hold only word characters, ``.``, ``-`` and ``/``).
    """
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in str(text))


def is_hub_id(repo_id: str) -> bool:
    return bool(_HUB_ID.fullmatch(repo_id))


@contextlib.contextmanager
def state_lock(state_path: Path) -> Iterator[None]:
    """An advisory lock beside the state file: a second watcher on the same state fails at once.
    The lock file is opened without following a symlink (one planted there is an error)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    lock_path = state_path.with_name(state_path.name + ".lock")
    try:  # O_NOFOLLOW: a symlink planted at the lock path is refused, never followed and written
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as err:
        raise UsageError(f"cannot use the watch lock {lock_path}: {err.strerror or type(err).__name__}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UsageError(f"another hfkv watch is using {state_path}") from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# -- state ------------------------------------------------------------------------------------------


def load_state(path: Path) -> dict[str, Any] | None:
    """The saved state, or None when there is none yet. A damaged file is an error, never overwritten."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read the watch state {path}: {getattr(err, 'strerror', None) or type(err).__name__}") from None
    try:
        state = json.loads(raw)
    except json.JSONDecodeError:
        state = None
    if not (isinstance(state, dict) and isinstance(state.get("models"), dict) and isinstance(state.get("since"), str)):
        raise UsageError(f"{path} is not an hfkv watch state; move it away to start afresh")
    return state


def save_state(path: Path, state: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(state, indent=2, sort_keys=True, ensure_ascii=True) + "\n", durable=True)


def parse_since(text: str) -> dt.datetime:
    """A date (``2025-06-01``) or ISO time (``2025-06-01T12:00:00Z``); no zone means UTC."""
    try:
        value = dt.datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"cannot read '{text}' as a date (try 2025-06-01 or 2025-06-01T12:00:00Z)") from None
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)


def _iso(value: dt.datetime | None) -> str | None:
    return value.astimezone(dt.timezone.utc).isoformat() if value else None


# -- one poll ---------------------------------------------------------------------------------------


@dataclass
class WatchConfig:
    """What a poll needs besides the Hub client."""

    authors: tuple[str, ...]
    out_dir: Path
    state_path: Path
    options: Any  # hfkv.model.options.Options
    since: dt.datetime | None = None
    limit: int = 100
    gpus: tuple[str, ...] = COMMON_GPUS
    gpu_memory_utilization: float = 0.92
    html: bool = False  # also a static site: index.html and <name>.html per report (hfkv.render.html)


@dataclass
class PollSummary:
    """What one poll did: ids written, ids that failed (retried next run), listing errors, warnings."""

    written: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # newly recorded permanent failures
    list_errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    wrote_anything: bool = False


def _scrub(text: str) -> str:
    """One printable line of at most 300 characters without secrets (``hfkv.sources.hub.scrub``: the token
    sent whatever its shape, anything token-shaped, URL user:password)."""
    from hfkv.sources.hub import scrub

    return escape_id(scrub(text))[:300]


def _error_line(err: BaseException) -> str:
    """One line for a failed model or listing; never ``str()`` of request objects or headers."""
    if isinstance(err, HfkvError):
        return f"{err.kind}: {_scrub(err.message)}"
    status = getattr(getattr(err, "response", None), "status_code", None)
    first = _scrub(str(err).splitlines()[0]) if str(err).strip() else ""
    return f"{type(err).__name__}{f' (HTTP {status})' if status else ''}{': ' + first if first else ''}"


def list_new_models(client: Any, author: str, since: dt.datetime, limit: int, summary: PollSummary) -> list[Any]:
    """One listing (``HubClient.list_models``): the author's models created at or after ``since``,
    newest first.

    A listing that did not see everything it was asked to is a listing error (``summary.list_errors``,
    so ``--once`` exits 1), never a warning: a listing cut short (every message ``list_models``
    returns names such a cut; the models listed before it are still returned and reported) and an
    empty listing of an author the Hub does not know (a typo'd ``--author`` would otherwise give
    green runs forever).
    """
    listed, cuts = client.list_models(author, limit=limit, expand=EXPAND)
    summary.list_errors += [f"{cut}: listing incomplete, only the models listed before it were reported"
                            for cut in cuts]
    fresh = [m for m in listed if getattr(m, "created_at", None) is None or m.created_at >= since]
    if len(listed) >= limit and len(fresh) == len(listed):
        summary.warnings.append(f"{author}: all {limit} models listed are newer than the cut-off; "
                                "older new models may be missed: raise --limit")
    if not listed:
        check_author(client, author, summary)
    return fresh


def check_author(client: Any, author: str, summary: PollSummary) -> None:
    """After an empty listing: an author the Hub does not know is a listing error; one whose
    existence cannot be checked (the Hub did not answer) is a warning; a known one is a clean run."""
    exists = client.author_exists(author) if hasattr(client, "author_exists") else True  # stubs: no check
    if exists is False:
        summary.list_errors.append(f"{author}: no such user or organisation on the Hub")
    elif exists is None:
        summary.warnings.append(f"{author}: nothing listed, and the Hub could not say whether {author} exists")


def _weights(info: Any) -> dict[str, Any] | None:
    """Parameters and weight bytes from the listing's ``safetensors`` field, or None."""
    from hfkv.sources.weights import weights_summary

    st = getattr(info, "safetensors", None)
    parameters = getattr(st, "parameters", None)
    if not isinstance(parameters, dict):
        return None
    try:
        counts = {str(k): int(v) for k, v in parameters.items()}
        total = getattr(st, "total", None)
        if any(n < 0 for n in counts.values()) or (total is not None and int(total) < 0):
            return None  # not a count: ignore rather than inflate a GPU budget
        return weights_summary(counts, total, source="metadata")
    except (TypeError, ValueError):
        return None


def build_model_report(client: Any, info: Any, cfg: WatchConfig) -> tuple[Any, dict[str, int], dict | None]:
    """Fetch the config of a listed model and build its report with GPU budgets. Raises on failure."""
    from hfkv.inspection import inspect_loaded
    from hfkv.model.weights import attach as attach_weights
    from hfkv.planning.serving import gpu_budgets

    repo_id = str(info.id)
    sha = getattr(info, "sha", None)
    revision = sha if isinstance(sha, str) and _COMMIT.fullmatch(sha) else None
    loaded = client.load_config(repo_id, revision=revision)
    report = inspect_loaded(loaded, cfg.options, model=repo_id)
    weights = _weights(info)
    if weights is not None:
        attach_weights(report, weights)  # the listing's safetensors counts over the estimate
    weights_bytes = report.extra.get("weights_bytes")
    budgets = gpu_budgets(cfg.gpus, report, weights_bytes, cfg.gpu_memory_utilization)
    report.extra["watch"] = {
        "created_at": _iso(getattr(info, "created_at", None)),
        "listing_sha": sha if isinstance(sha, str) else None,
        "gpu_memory_utilization": cfg.gpu_memory_utilization,
        "gpu_budgets": budgets,
    }
    return report, budgets, weights


def model_markdown(report: Any, budgets: dict[str, int], weights: dict | None, cfg: WatchConfig) -> str:
    """The release-thread report: provenance, parameters and weights, then the KV report with B_max columns."""
    from hfkv.render.terminal import md_escape, render_markdown

    watch = report.extra.get("watch", {})
    lines = [f"# KV cache: {md_escape(report.model)}", ""]
    if watch.get("created_at"):
        lines.append(f"- published: {watch['created_at'][:16].replace('T', ' ')} UTC")
    if report.commit:
        lines.append(f"- config commit: `{md_escape(report.commit)}`")
    if weights:
        by_dtype = ", ".join(f"{md_escape(d)} {n:,}" for d, n in sorted(weights["parameters"].items()))
        approx = "" if weights.get("parameters_exact", True) else " (approximate: packed tensors)"
        lines.append(f"- parameters: {weights['total_parameters']:,}{approx} ({by_dtype}), from the Hub's safetensors metadata")
        if weights.get("weights_bytes") is not None:
            lines.append(f"- weights: {weights['weights_bytes']:,} B ({format_bytes(weights['weights_bytes'])})")
    else:
        lines.append("- parameters: not listed by the Hub (no safetensors metadata)")
    util = cfg.gpu_memory_utilization
    if budgets:
        subtracted = "the weights" if report.extra.get("weights_bytes") is not None else "(weights unknown, not subtracted)"
        lines.append(f"- B_max columns: requests per GPU at each context in vLLM's budget on one GPU: memory × {util:g} "
                     f"less {subtracted}, its sampler buffers, peak activation, non-torch memory and CUDA graphs "
                     "(estimates, docs/deployments.md)")
    return printable_text("\n".join(lines) + "\n\n" + render_markdown(report, budgets=budgets))


def _done_entry(report: Any, info: Any, author: str, stem: str, weights: dict | None) -> dict[str, Any]:
    return {
        "status": "done", "author": author, "created_at": _iso(getattr(info, "created_at", None)),
        "sha": _sha(info),
        "file": stem, "model_type": report.model_type, "alpha_bytes_per_token": report.alpha_bytes_per_token,
        "total_parameters": weights.get("total_parameters") if weights else None,
        "weights_bytes": weights.get("weights_bytes") if weights else None,
    }


def _error_entry(info: Any, author: str, error: str, status: str = "error") -> dict[str, Any]:
    return {
        "status": status, "author": author, "created_at": _iso(getattr(info, "created_at", None)),
        "sha": _sha(info),
        "error": error,
    }


def index_markdown(state: dict[str, Any]) -> str:
    """``index.md``: every report, newest first, then the models that failed (retried next run)."""
    from hfkv.render.terminal import md_escape

    models = state["models"]

    def newest_first(items: Iterable[tuple[str, dict]]) -> list[tuple[str, dict]]:
        return sorted(items, key=lambda kv: (kv[1].get("created_at") or "", kv[0]), reverse=True)

    done = newest_first((k, v) for k, v in models.items() if v.get("status") == "done")
    failed = newest_first((k, v) for k, v in models.items() if v.get("status") not in ("done", SKIPPED))
    skipped = newest_first((k, v) for k, v in models.items() if v.get("status") == SKIPPED)
    authors = sorted({str(v.get("author")) for v in models.values() if v.get("author")})
    lines = [
        "# hfkv watch: new models", "",
        f"Authors: {md_escape(', '.join(authors)) or '-'}. Models created since {md_escape(state['since'][:10])}; "
        f"{len(done)} report(s), newest first.", "",
        "| published | model | model type | α (bytes/token) | parameters | weights | report |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for repo_id, entry in done:
        stem = entry["file"]
        alpha = entry.get("alpha_bytes_per_token")
        params = entry.get("total_parameters")
        weights = entry.get("weights_bytes")
        lines.append(
            f"| {md_escape((entry.get('created_at') or '-')[:10])} | {md_escape(escape_id(repo_id))} | {md_escape(entry.get('model_type') or '?')} "
            f"| {f'{alpha:,}' if isinstance(alpha, (int, float)) else '-'} | {f'{params:,}' if isinstance(params, int) else '-'} "
            f"| {format_bytes(weights) if isinstance(weights, int) else '-'} | [md]({stem}.md) · [json]({stem}.json) |"
        )
    for title, entries in (("Not reported yet (retried on the next run)", failed), ("Skipped (not retried)", skipped)):
        if entries:
            lines += ["", f"## {title}", "", "| published | model | error |", "|---|---|---|"]
            lines += [f"| {md_escape((entry.get('created_at') or '-')[:10])} | {md_escape(escape_id(repo_id))} "
                      f"| {md_escape(escape_id(entry.get('error', '?')))} |" for repo_id, entry in entries]
    return printable_text("\n".join(lines) + "\n")


def _commit(cfg: WatchConfig, state: dict[str, Any]) -> None:
    """Index, then state: the index never lags a saved state (a kill in between redoes the model)."""
    write_atomic(inside(cfg.out_dir, "index.md"), index_markdown(state), durable=True)
    if cfg.html:
        from hfkv.render.site import write_watch_site

        write_watch_site(cfg.out_dir, state["models"])  # index.html; pages of earlier runs kept as written
    save_state(cfg.state_path, state)


def process_model(client: Any, info: Any, author: str, cfg: WatchConfig) -> dict[str, Any]:
    """Report one listed model: write its files and return its done entry, or return an error entry."""
    from hfkv.render.terminal import to_json

    repo_id = str(info.id)
    try:
        report, budgets, weights = build_model_report(client, info, cfg)
    except HfkvError as err:
        permanent = getattr(err, "kind", None) in PERMANENT_KINDS
        return _error_entry(info, author, _error_line(err), SKIPPED if permanent else "error")
    except Exception as err:  # a bug or a hostile config must not stop the watcher: record and retry later
        return _error_entry(info, author, "internal error: " + _error_line(err))
    stem = safe_name(repo_id)
    write_atomic(inside(cfg.out_dir, stem + ".json"), to_json(report) + "\n", durable=True)
    write_atomic(inside(cfg.out_dir, stem + ".md"), model_markdown(report, budgets, weights, cfg), durable=True)
    if cfg.html:
        from hfkv.render.html import render_html

        write_atomic(inside(cfg.out_dir, stem + ".html"), render_html(report, budgets=budgets), durable=True)
    return _done_entry(report, info, author, stem, weights)


def poll(client: Any, cfg: WatchConfig, *, now: dt.datetime | None = None) -> PollSummary:
    """One poll over every author. Writes only when something changed (or on the first run)."""
    summary = PollSummary()
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    cfg.state_path.parent.mkdir(parents=True, exist_ok=True)
    with state_lock(cfg.state_path):
        remove_stale_temporaries(cfg.out_dir)
        remove_stale_temporaries(cfg.state_path.parent)
        saved = load_state(cfg.state_path)
        now = now or dt.datetime.now(dt.timezone.utc)
        since = cfg.since or (parse_since(saved["since"]) if saved else now - DEFAULT_WINDOW)
        state = copy.deepcopy(saved) if saved else {"version": STATE_VERSION, "since": _iso(since), "models": {}}
        state["since"] = _iso(since)
        if saved != state:  # first run, or a new --since: record the cut-off
            _commit(cfg, state)
            summary.wrote_anything = True
        for author in cfg.authors:
            try:
                listed = list_new_models(client, author, since, cfg.limit, summary)
            except Exception as err:
                summary.list_errors.append(f"{author}: listing failed: {_error_line(err)}")
                continue
            batch = _Batch(cfg, state, summary)
            for info in listed:
                repo_id, entry = poll_one(client, info, author, cfg, state["models"])
                if entry is not None:
                    _tally(summary, repo_id, entry)
                    batch.record(repo_id, entry)
            batch.flush()
    return summary


def _tally(summary: PollSummary, repo_id: str, entry: dict[str, Any]) -> None:
    if entry["status"] == "done":
        summary.written.append(repo_id)
    elif entry["status"] == SKIPPED:
        summary.skipped.append((repo_id, entry["error"]))
    else:
        summary.failed.append((repo_id, entry["error"]))


class _Batch:
    """State changes saved (index, then state) every ``COMMIT_SECONDS`` and at the end of an author.

    A model's report files are written before its entry is recorded here, so a saved state never
    names a report that is not on disk; a kill loses at most the entries of the last few seconds,
    whose models are redone next run. (Saving after every model rewrote the whole index and state
    per model: quadratic, 10,000 new models did not finish in 25 minutes.)
    """

    def __init__(self, cfg: WatchConfig, state: dict[str, Any], summary: PollSummary) -> None:
        self.cfg, self.state, self.summary = cfg, state, summary
        self.pending = False
        self.saved_at = time.monotonic()

    def record(self, repo_id: str, entry: dict[str, Any]) -> None:
        if entry == self.state["models"].get(repo_id):
            return
        self.state["models"][repo_id] = entry
        self.pending = True
        if time.monotonic() - self.saved_at >= COMMIT_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            _commit(self.cfg, self.state)
            self.summary.wrote_anything = True
            self.pending = False
        self.saved_at = time.monotonic()


def poll_one(client: Any, info: Any, author: str, cfg: WatchConfig,
             models: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """(state key, new entry) for one listed model; entry None when there is nothing to do.

    Nothing to do: already reported, or a permanent failure already recorded for this commit. An id
    that is not a Hub id is never fetched; it is keyed by its escaped form (no control characters
    in the state or the index) and recorded as skipped.
    """
    repo_id = str(info.id)
    key = repo_id if is_hub_id(repo_id) else escape_id(repo_id)
    old = models.get(key)
    if old and (old.get("status") == "done" or (old.get("status") == SKIPPED and old.get("sha") == _sha(info))):
        return key, None
    if not is_hub_id(repo_id):
        return key, _error_entry(info, author, "not a valid Hub repo id (org/name)", SKIPPED)
    rejected = hub_rejects(repo_id)
    if rejected:
        return key, _error_entry(info, author, f"not a valid Hub repo id ({rejected})", SKIPPED)
    return key, process_model(client, info, author, cfg)


def hub_rejects(repo_id: str) -> str | None:
    """Why huggingface_hub would refuse to request ``repo_id`` (``..``, ``--``, over 96 characters,
    ...), or None. Such an id fails the same way on every run: it is recorded once as skipped."""
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except Exception as err:  # HFValidationError
        return _scrub(str(err).splitlines()[0] if str(err) else type(err).__name__)[:120]
    return None


def _sha(info: Any) -> str | None:
    sha = getattr(info, "sha", None)
    return sha if isinstance(sha, str) else None


# -- command line -----------------------------------------------------------------------------------


def _since_option(ctx: click.Context, param: click.Parameter, value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    try:
        return parse_since(value)
    except UsageError as err:
        raise click.BadParameter(str(err)) from None


def _echo_summary(summary: PollSummary) -> None:
    for line in summary.warnings:
        click.echo(f"hfkv: warning: {line}", err=True)
    for line in summary.list_errors:
        click.echo(f"hfkv: error: {line}", err=True)
    for repo_id, error in summary.failed:
        click.echo(f"hfkv: warning: {escape_id(repo_id)}: {escape_id(error)} (retried on the next run)", err=True)
    for repo_id, error in summary.skipped:
        click.echo(f"hfkv: warning: {escape_id(repo_id)}: {escape_id(error)} (recorded; not retried)", err=True)
    written = ", ".join(escape_id(r) for r in summary.written) if summary.written else "nothing new"
    skipped = f"; {len(summary.skipped)} skipped" if summary.skipped else ""
    listing = f"; {len(summary.list_errors)} listing error(s)" if summary.list_errors else ""  # why the exit is 1
    click.echo(f"hfkv watch: {len(summary.written)} report(s) written ({written}); {len(summary.failed)} failed"
               f"{skipped}{listing}")


@click.command("watch")
@click.option("--author", "authors", multiple=True, required=True, help="Hub organisation or user to watch (repeatable).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the reports, index.md and (by default) the state file.")
@click.option("--once", is_flag=True, help="Poll once and exit (the default when --interval is not given).")
@click.option("--interval", type=click.FloatRange(min=0, min_open=True), help="Poll every MINUTES, until interrupted.")
@click.option("--since", callback=_since_option, help="First run: models created since DATE (default: the last 7 days).")
@click.option("--state", "state_path", type=click.Path(dir_okay=False, path_type=Path),
              help=f"State file (default: OUT/{STATE_FILE}).")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True,
              help="Newest models listed per author per poll.")
@click.option("--gpu", "gpus", multiple=True, help=f"GPU preset for a B_max column (repeatable; default {', '.join(COMMON_GPUS)}).")
@click.option("--gpu-memory-utilization", type=click.FloatRange(min=0, max=1, min_open=True), default=0.92,
              show_default=True, help="Fraction of GPU memory for weights + KV (vLLM default; SGLang --mem-fraction-static).")
@click.option("--html", is_flag=True, help="Also write a static site: index.html and <name>.html per report.")
@accounting_options
@hub_options
def watch_command(authors: tuple[str, ...], out_dir: Path, once: bool, interval: float | None, since: dt.datetime | None,
                  state_path: Path | None, limit: int, gpus: tuple[str, ...], gpu_memory_utilization: float,
                  html: bool, **params: Any) -> None:
    """Write a KV-cache report for each new model of the --author organisations.

    Failed models are recorded in the state and retried on the next run. Exit 0 when every listing
    worked (even if some models failed), 1 when a listing failed, was cut short or named an author
    the Hub does not know, 2 on bad usage.
    """
    if once and interval:
        raise click.UsageError("--once and --interval exclude each other")
    if params.get("revision"):
        raise click.UsageError("--revision does not apply to watch (each model is read at its listed commit)")
    for author in authors:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", author):
            raise click.BadParameter(f"'{author}' is not an organisation or user name", param_hint="--author")
    try:
        presets = tuple(get_gpu(g).name for g in gpus) if gpus else COMMON_GPUS
    except UsageError as err:
        raise click.BadParameter(str(err), param_hint="--gpu") from None
    cfg = WatchConfig(
        authors=authors, out_dir=out_dir, state_path=state_path or out_dir / STATE_FILE,
        options=build_options(params), since=since, limit=limit, gpus=presets,
        gpu_memory_utilization=gpu_memory_utilization, html=html,
    )
    client = build_hub(params)
    while True:
        try:
            summary = poll(client, cfg)
        except HfkvError as err:
            fail(str(err), err.exit_code)
        _echo_summary(summary)
        if not interval:
            sys.exit(1 if summary.list_errors else 0)
        time.sleep(interval * 60)
