"""``hfkv watch``: a Markdown and JSON report for each new model of one or more Hub organisations.

    hfkv watch --author ORG [--author ORG ...] --out DIR [--once | --interval MINUTES]
               [--since DATE] [--state FILE] [--limit N] [--html] [--gpu NAME[:COUNT] ...]
               [report's deployment options: --engine, --tp, --dp, ..., --gpu-memory-utilization, ...]

Each poll makes one ``list_models`` call per author (newest first, with ``createdAt``, ``sha``,
``config`` and ``safetensors``), compares the ids with a state file (default ``DIR/.hfkv-watch.json``),
and for each model not yet reported fetches ``config.json``, plans it on every ``--gpu`` spec as
``hfkv report --gpu`` plans one (``hfkv.commands.deploy``: the same options, the one verdict; default
one GPU of each of ``COMMON_GPUS``) and writes ``DIR/<name>.md`` (the report a person pastes into a
release thread), ``DIR/<name>.json`` (with ``watch.plans``) and with ``--html`` ``DIR/<name>.html``,
plus ``DIR/index.md`` (and ``index.html``) listing every report, newest first.

Guarantees:
* First run: models created since ``--since`` (default: the last 7 days); the cut-off is kept in
  the state, so later runs see every model created after it. The first run always writes the state
  and the index; a later run with nothing new writes nothing at all.
* ``<name>`` comes from the repo id but is always a plain file name inside DIR, distinct from every
  other report's even where the file system folds case (``runtime.files.FileNames``).
* Every write is atomic (a temporary file in the same folder, then ``os.replace``). Per model the order
  is: report files, then (in batches) index and state. A model is recorded as done only after its
  files are written, so a process killed at any point leaves complete files and a valid state, and
  the models not yet recorded are redone next run. A write that fails (disk full, read-only folder)
  is one error line and exit 1.
* A model whose config cannot be fetched or read is recorded with its error and **retried on the next
  run**; it never gets a report file. A listing failure is reported and exits 1 with ``--once``.
* Permanent failures are recorded once and **not retried**: a listed id that is not a Hub repo id
  (``org/name`` of word characters, ``.`` and ``-``; stored under its escaped form) or that the
  Hub's own id rules reject (``..``, ``--``, over 96 characters), and a config refused as too
  large or as not JSON (retried only when the listing shows a new commit).
* Index and state are saved every ``COMMIT_SECONDS`` (or ``COMMIT_RATIO`` times what a save took,
  if longer) and at the end of each author's models, not after every model. ``index.html`` is written once per poll from the state's entries (never by
  reading the reports back): linear in the number of reports.
* A damaged entry of the state is reported and dropped (the model is reported again) or repaired.
* The listing follows "next" pages only on the endpoint's own origin (the token goes nowhere
  else), at most ``hfkv.sources.hub.MAX_LISTING_PAGES`` pages; a listing that repeats a model it
  listed already (a "next" page served twice) is a listing error.
* Repo ids are printed and indexed with unprintable characters escaped (a newline becomes the two
  characters backslash-n), so an id from the Hub can never forge a line on stderr or in Markdown.
* One watcher per state file (an advisory lock next to it).
"""

from __future__ import annotations

import copy
import datetime as dt
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from hfkv.commands.deploy import Deployment, deployment_options
from hfkv.commands.options import accounting_options, build_hub, build_options, fail, hub_options
from hfkv.commands.watch_report import (SKIPPED, build_model_report, done_entry, error_entry, index_markdown,
                                        model_markdown, sha_of)
from hfkv.commands.watch_state import (STATE_FILE, STATE_VERSION, OutputError, iso,
                                       load_state, output_error, parse_since, repair_state,
                                       save_state, state_lock)
from hfkv.errors import HfkvError, UsageError
from hfkv.planning.gpus import COMMON_GPUS, parse_gpu
from hfkv.runtime.files import FileNames, inside, remove_stale_temporaries, write_atomic
from hfkv.text import one_line

__all__ = ["STATE_FILE", "STATE_VERSION", "WatchConfig", "PollSummary", "poll", "watch_command", "state_lock",
           "load_state", "save_state", "parse_since", "OutputError"]

DEFAULT_WINDOW = dt.timedelta(days=7)
EXPAND = ["createdAt", "sha", "config", "safetensors"]
_HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")  # what the Hub accepts as a model id (\w: unicode letters too)
# SourceError kinds a retry of the same commit cannot fix: recorded as skipped until a new sha is listed.
PERMANENT_KINDS = frozenset({"too-large", "invalid-json"})
COMMIT_SECONDS = 2.0  # index and state are saved at most this often while models are reported
COMMIT_RATIO = 10  # ... and at most once per this many times the last save took (≤ 1/10 of a pass saving)


def is_hub_id(repo_id: str) -> bool:
    return bool(_HUB_ID.fullmatch(repo_id))


def gpu_spec(text: str) -> str:
    """A ``--gpu`` value as a plan's key: the preset's name, with ``:COUNT`` when more than one."""
    preset, count = parse_gpu(text)
    return preset.name if count == 1 else f"{preset.name}:{count}"


# -- one poll ---------------------------------------------------------------------------------------


@dataclass
class WatchConfig:
    """What a poll needs besides the Hub client. ``deployment``: the report's deployment options
    (engine, layout and reserve knobs, weights); each report is planned on it once per ``gpus`` spec."""

    authors: tuple[str, ...]
    out_dir: Path
    state_path: Path
    options: Any  # hfkv.model.options.Options
    since: dt.datetime | None = None
    limit: int = 100
    gpus: tuple[str, ...] = COMMON_GPUS
    deployment: Deployment = field(default_factory=Deployment)
    html: bool = False  # also a static site: index.html and <name>.html per report (hfkv.render.site)


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

    return one_line(scrub(text))[:300]


def _error_line(err: BaseException) -> str:
    """One line for a failed model or listing; never ``str()`` of request objects or headers."""
    if isinstance(err, HfkvError):
        return f"{err.kind}: {_scrub(err.message)}"
    status = getattr(getattr(err, "response", None), "status_code", None)
    first = _scrub(str(err).splitlines()[0]) if str(err).strip() else ""
    return f"{type(err).__name__}{f' (HTTP {status})' if status else ''}{': ' + first if first else ''}"


def list_new_models(client: Any, author: str, since: dt.datetime, limit: int, summary: PollSummary) -> list[Any]:
    """One listing (``HubClient.list_models``): the author's models created at or after ``since``,
    newest first, each once.

    A listing that did not see everything it was asked to is a listing error (``summary.list_errors``,
    so ``--once`` exits 1), never a warning: a listing cut short (every message ``list_models``
    returns names such a cut; the models listed before it are still returned and reported), a
    listing that lists a model again (a "next" page that repeats one already read: what follows it
    was never seen), and an empty listing of an author the Hub does not know (a typo'd ``--author``
    would otherwise give green runs forever).
    """
    listed, cuts = client.list_models(author, limit=limit, expand=EXPAND)
    summary.list_errors += [f"{cut}: listing incomplete, only the models listed before it were reported"
                            for cut in cuts]
    seen: set[str] = set()
    unique = []
    for info in listed:
        key = str(getattr(info, "id", ""))
        if key not in seen:
            seen.add(key)
            unique.append(info)
    if len(unique) < len(listed):
        summary.list_errors.append(
            f"{author}: the listing repeated {len(listed) - len(unique)} model(s) it had already listed (a 'next' "
            "page served again): listing incomplete, only the models listed before it were reported")
    fresh = [m for m in unique if getattr(m, "created_at", None) is None or m.created_at >= since]
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


def _commit(cfg: WatchConfig, state: dict[str, Any]) -> None:
    """Index, then state: the index never lags a saved state (a kill in between redoes the model)."""
    write_atomic(inside(cfg.out_dir, "index.md"), index_markdown(state), durable=True)
    save_state(cfg.state_path, state)


def process_model(client: Any, info: Any, author: str, cfg: WatchConfig, names: FileNames) -> dict[str, Any]:
    """Report one listed model: write its files and return its done entry, or return an error entry."""
    import json

    repo_id = str(info.id)
    try:
        report, plans, weights = build_model_report(client, info, cfg)
    except HfkvError as err:
        permanent = getattr(err, "kind", None) in PERMANENT_KINDS
        return error_entry(info, author, _error_line(err), SKIPPED if permanent else "error")
    except Exception as err:  # a bug or a hostile config must not stop the watcher: record and retry later
        return error_entry(info, author, "internal error: " + _error_line(err))
    stem = names.claim(repo_id)
    write_atomic(inside(cfg.out_dir, stem + ".json"), json.dumps(report.to_dict(), indent=2) + "\n", durable=True)
    write_atomic(inside(cfg.out_dir, stem + ".md"), model_markdown(report, plans, weights), durable=True)
    if cfg.html:
        from hfkv.render.site import write_page

        write_page(cfg.out_dir, stem, report)
    return done_entry(report, info, author, stem, weights, plans)


def poll(client: Any, cfg: WatchConfig, *, now: dt.datetime | None = None) -> PollSummary:
    """One poll over every author. Writes only when something changed (or on the first run).
    Raises ``OutputError`` (exit 1) when the folder or the state cannot be written."""
    try:
        cfg.out_dir.mkdir(parents=True, exist_ok=True)
        cfg.state_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise output_error(err, cfg.out_dir) from None
    with state_lock(cfg.state_path):
        try:
            return _poll(client, cfg, now)
        except OSError as err:  # disk full, read-only: one line, never a traceback
            raise output_error(err, cfg.out_dir) from None


def _poll(client: Any, cfg: WatchConfig, now: dt.datetime | None) -> PollSummary:
    summary = PollSummary()
    remove_stale_temporaries(cfg.out_dir)
    remove_stale_temporaries(cfg.state_path.parent)
    saved = load_state(cfg.state_path)
    now = now or dt.datetime.now(dt.timezone.utc)
    since = cfg.since or (parse_since(saved["since"]) if saved else now - DEFAULT_WINDOW)
    state = copy.deepcopy(saved) if saved else {"version": STATE_VERSION, "since": iso(since), "models": {}}
    summary.warnings += repair_state(state, cfg.state_path)
    state["since"] = iso(since)
    if cfg.html:
        _complete_site(cfg, state)
    if saved != state:  # first run, a new --since, a repaired or completed state: record it
        _commit(cfg, state)
        summary.wrote_anything = True
    names = FileNames(state["models"])
    for author in cfg.authors:
        try:
            listed = list_new_models(client, author, since, cfg.limit, summary)
        except Exception as err:
            summary.list_errors.append(f"{author}: listing failed: {_error_line(err)}")
            continue
        batch = _Batch(cfg, state, summary)
        for info in listed:
            repo_id, entry = poll_one(client, info, author, cfg, state["models"], names)
            if entry is not None:
                _tally(summary, repo_id, entry)
                batch.record(repo_id, entry)
        batch.flush()
    if cfg.html and (summary.wrote_anything or _site_behind(cfg)):
        from hfkv.render.site import write_watch_site

        write_watch_site(cfg.out_dir, state["models"])  # once per poll, from the entries in memory
    return summary


def _site_behind(cfg: WatchConfig) -> bool:
    """Whether ``index.html`` is missing or older than the state (a run killed before writing it)."""
    try:
        return os.stat(inside(cfg.out_dir, "index.html")).st_mtime_ns < os.stat(cfg.state_path).st_mtime_ns
    except FileNotFoundError:
        return True


def _complete_site(cfg: WatchConfig, state: dict[str, Any]) -> None:
    """Before ``--html`` writes the index: each done entry of an earlier run that has no page yet, or
    whose entry lacks the index's figures (a state of an earlier hfkv), is completed from its
    ``<name>.json``, read once (``site.upgrade_entry``). Entries of this version with a page cost a stat."""
    from hfkv.render.site import upgrade_entry

    for repo_id, entry in state["models"].items():
        if entry.get("status") != "done":
            continue
        if "gamma_bytes_per_request" in entry and inside(cfg.out_dir, entry["file"] + ".html").exists():
            continue
        upgraded = upgrade_entry(cfg.out_dir, entry)
        if upgraded is not None:
            state["models"][repo_id] = upgraded


def _tally(summary: PollSummary, repo_id: str, entry: dict[str, Any]) -> None:
    if entry["status"] == "done":
        summary.written.append(repo_id)
    elif entry["status"] == SKIPPED:
        summary.skipped.append((repo_id, entry["error"]))
    else:
        summary.failed.append((repo_id, entry["error"]))


class _Batch:
    """State changes saved (index, then state) every ``COMMIT_SECONDS``, but never more often than once
    per ``COMMIT_RATIO`` times the last save took, and at the end of an author.

    A model's report files are written before its entry is recorded here, so a saved state never
    names a report that is not on disk; a kill loses at most the entries of the last few seconds,
    whose models are redone next run. (Saving after every model rewrote the whole index and state
    per model: quadratic, 10,000 new models did not finish in 25 minutes. A save costs O(reports),
    ~0.5 s at 6,000: with a fixed 2 s period that is still quadratic, so the period grows with it.)
    """

    def __init__(self, cfg: WatchConfig, state: dict[str, Any], summary: PollSummary) -> None:
        self.cfg, self.state, self.summary = cfg, state, summary
        self.pending = False
        self.saved_at = time.monotonic()
        self.cost = 0.0  # seconds the last save took

    def record(self, repo_id: str, entry: dict[str, Any]) -> None:
        if entry == self.state["models"].get(repo_id):
            return
        self.state["models"][repo_id] = entry
        self.pending = True
        if time.monotonic() - self.saved_at >= max(COMMIT_SECONDS, COMMIT_RATIO * self.cost):
            self.flush()

    def flush(self) -> None:
        if self.pending:
            start = time.monotonic()
            _commit(self.cfg, self.state)
            self.cost = time.monotonic() - start
            self.summary.wrote_anything = True
            self.pending = False
        self.saved_at = time.monotonic()


def poll_one(client: Any, info: Any, author: str, cfg: WatchConfig, models: dict[str, Any],
             names: FileNames) -> tuple[str, dict[str, Any] | None]:
    """(state key, new entry) for one listed model; entry None when there is nothing to do.

    Nothing to do: already reported, or a permanent failure already recorded for this commit. An id
    that is not a Hub id is never fetched; it is keyed by its escaped form (no control characters
    in the state or the index) and recorded as skipped.
    """
    repo_id = str(info.id)
    key = repo_id if is_hub_id(repo_id) else one_line(repo_id)
    old = models.get(key)
    if old and (old.get("status") == "done" or (old.get("status") == SKIPPED and old.get("sha") == sha_of(info))):
        return key, None
    if not is_hub_id(repo_id):
        return key, error_entry(info, author, "not a valid Hub repo id (org/name)", SKIPPED)
    rejected = hub_rejects(repo_id)
    if rejected:
        return key, error_entry(info, author, f"not a valid Hub repo id ({rejected})", SKIPPED)
    return key, process_model(client, info, author, cfg, names)


def hub_rejects(repo_id: str) -> str | None:
    """Why huggingface_hub would refuse to request ``repo_id`` (``..``, ``--``, over 96 characters,
    ...), or None. Such an id fails the same way on every run: it is recorded once as skipped."""
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except Exception as err:  # HFValidationError
        return _scrub(str(err).splitlines()[0] if str(err) else type(err).__name__)[:120]
    return None


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
        click.echo(f"hfkv: warning: {one_line(line)}", err=True)
    for line in summary.list_errors:
        click.echo(f"hfkv: error: {one_line(line)}", err=True)
    for repo_id, error in summary.failed:
        click.echo(f"hfkv: warning: {one_line(repo_id)}: {one_line(error)} (retried on the next run)", err=True)
    for repo_id, error in summary.skipped:
        click.echo(f"hfkv: warning: {one_line(repo_id)}: {one_line(error)} (recorded; not retried)", err=True)
    written = ", ".join(one_line(r) for r in summary.written) if summary.written else "nothing new"
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
@click.option("--html", is_flag=True, help="Also write a static site: index.html and <name>.html per report.")
@accounting_options
@deployment_options(many_gpus=True)
@hub_options
def watch_command(authors: tuple[str, ...], out_dir: Path, once: bool, interval: float | None, since: dt.datetime | None,
                  state_path: Path | None, limit: int, html: bool, gpus: tuple[str, ...], **params: Any) -> None:
    """Write a KV-cache report for each new model of the --author organisations.

    Each report is planned on every --gpu (repeatable; default one GPU of each of H100-SXM-80GB,
    H200-141GB, B200-180GB, MI300X-192GB) with the deployment options of hfkv report: per GPU the
    verdict, the requests served at each context, the weights per GPU and their source.

    Failed models are recorded in the state and retried on the next run. Exit 0 when every listing
    worked (even if some models failed), 1 when a listing failed, was cut short or named an author
    the Hub does not know, or when the folder cannot be written; 2 on bad usage (--offline or
    HF_HUB_OFFLINE=1 included: a watch lists the Hub, so it refuses at once, asking nothing).
    """
    if once and interval:
        raise click.UsageError("--once and --interval exclude each other")
    if params.get("revision"):
        raise click.UsageError("--revision does not apply to watch (each model is read at its listed commit)")
    for author in authors:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", author):
            raise click.BadParameter(f"'{author}' is not an organisation or user name", param_hint="--author")
    try:
        specs = tuple(dict.fromkeys(gpu_spec(g) for g in gpus)) if gpus else COMMON_GPUS
    except UsageError as err:
        raise click.BadParameter(str(err), param_hint="--gpu") from None
    cfg = WatchConfig(
        authors=authors, out_dir=out_dir, state_path=state_path or out_dir / STATE_FILE,
        options=build_options(params), since=since, limit=limit, gpus=specs,
        deployment=Deployment.from_params(params), html=html,
    )
    client = build_hub(params)
    if client.offline:  # every poll starts with a listing: offline, there is nothing to watch
        cause = "--offline" if params.get("offline") else "HF_HUB_OFFLINE=1"
        fail(f"watch needs the Hub (each poll lists the organisations' new models) and {cause} forbids asking "
             "it: nothing to watch offline (hfkv MODEL --offline reports on a cached config)", 2)
    while True:
        try:
            summary = poll(client, cfg)
        except HfkvError as err:
            fail(str(err), err.exit_code)
        _echo_summary(summary)
        if not interval:
            sys.exit(1 if summary.list_errors else 0)
        time.sleep(interval * 60)
