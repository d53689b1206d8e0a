"""The static site of release reports (``hfkv watch --html``): ``index.html``, one row per release,
newest first, and one self-contained page per report (``html.render_html``); every file written
atomically.

The index is drawn from *rows* (``index_row``): a few figures per report (α, γ, S*, and per GPU spec
the verdict's status and the requests it counts) that ``hfkv watch`` keeps in its state. Writing the
index therefore reads no report file: its cost grows with the number of reports, once per pass
(re-reading every ``<name>.json`` each time made a watch with ``--html`` quadratic).

Per GPU spec a row shows the plan's verdict (``hfkv.planning.verdict``: the one verdict): ✓ fits, ✗
does not fit or refused, ? weights unknown (the count is then an upper bound), with the requests the
deployment serves at the verdict's context. A report written by an earlier hfkv (``watch.gpu_budgets``,
no plans) still loads: its row shows its figures and no verdict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from hfkv.model.report import Report
from hfkv.render.html import Entry, _count, cell, document, render_html, split, table, watch_plans
from hfkv.text import markup
from hfkv.render.terminal import VERDICT_MARKS, plan_status
from hfkv.runtime.files import FileNames, inside, write_atomic
from hfkv.units import format_tokens

# What a row of the index holds (besides "model" and "file"); ``hfkv watch`` keeps these in its state.
ROW_FIGURES = ("created_at", "model_type", "alpha_bytes_per_token", "gamma_bytes_per_request", "crossover_tokens")


def gpu_summary(plan: dict[str, Any]) -> dict[str, Any]:
    """What the index keeps of one GPU's plan: the verdict's status, and the requests it counts at its
    context (``verdict_detail``), or the refusal."""
    detail = plan.get("verdict_detail") or {}
    return {"status": plan_status(plan), "requests": detail.get("requests"), "tokens": detail.get("tokens")}


def gpu_cell(summary: Any) -> str:
    """'✓ 6 at 128K', '? 1 at 32K, may not start' (the low end of the bands holds none), '? ≤ 7 at 128K' (weights
    unknown: an upper bound), '✗ does not fit', '✗ refused', '-'."""
    if not isinstance(summary, dict) or not summary.get("status"):
        return "-"
    status, requests, tokens = summary["status"], summary.get("requests"), summary.get("tokens")
    mark = VERDICT_MARKS.get(status, "")
    at = f" at {format_tokens(tokens)}" if isinstance(tokens, int) else ""
    if status == "fits" and isinstance(requests, int):
        return f"{mark} {requests:,}{at}"
    if status == "may-not-start" and isinstance(requests, int):
        return f"{mark} {requests:,}{at}, may not start"
    if status == "unknown" and isinstance(requests, int):
        return f"{mark} ≤ {requests:,}{at}"
    if status == "does-not-fit":
        return f"{mark} does not fit"
    if status == "refused":
        return f"{mark} refused"
    return f"{mark} {status}".strip()


def index_row(data: dict[str, Any]) -> dict[str, Any]:
    """The index row of a report's JSON form: its figures, and per GPU spec of its watch plans the
    verdict's summary (``gpu_summary``)."""
    watch = data.get("watch") if isinstance(data.get("watch"), dict) else {}
    row = {key: data.get(key) for key in ROW_FIGURES if key != "created_at"}
    row["created_at"] = watch.get("created_at")
    row["gpus"] = {spec: gpu_summary(plan) for spec, plan in watch_plans(data).items()}
    return row


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def index_html(rows: Sequence[Mapping[str, Any]], failed: Sequence[tuple[str, str]] = ()) -> str:
    """``index.html``: one row per release (``model``, ``file``: the page's stem, and ``ROW_FIGURES``,
    ``gpus``), newest first, linking to its page; a column per GPU spec the rows were planned on; then
    the models that have no report yet (``failed``: (repo id, error line) pairs)."""
    order = sorted(rows, key=lambda r: (_text(r.get("created_at")), str(r.get("model"))), reverse=True)
    specs: list[str] = []
    for row in order:
        gpus = row.get("gpus")
        specs += [spec for spec in (gpus if isinstance(gpus, dict) else {}) if spec not in specs]
    headers = ["published", "model", "model type", "α (bytes/token)", "γ (bytes/request)", "S*"] + specs
    body_rows = []
    for r in order:
        s_star = r.get("crossover_tokens")
        gpus = r.get("gpus") if isinstance(r.get("gpus"), dict) else {}
        row = [cell(_text(r.get("created_at"))[:10] or "-"),
               f'<td><a href="{markup(str(r.get("file")) + ".html")}">{markup(r.get("model"))}</a></td>',
               cell(r.get("model_type") or "?"), cell(_count(r.get("alpha_bytes_per_token")), num=True),
               cell(_count(r.get("gamma_bytes_per_request")), num=True),
               cell(f"{round(s_star):,}" if isinstance(s_star, (int, float)) else "-", num=True)]
        for spec in specs:
            summary = gpus.get(spec)
            status = summary.get("status") if isinstance(summary, dict) else None
            row.append(f'<td class="num verdict {markup(status or "none")}" data-gpu="{markup(spec)}">{markup(gpu_cell(summary))}</td>')
        body_rows.append(row)
    body = ("<h1>KV cache of new releases</h1>"
            f'<p class="meta">{len(order)} report(s), newest first. Per GPU: the verdict on that deployment '
            "(✓ fits, ✗ does not fit or refused, ? weights unknown: at most) and the requests it serves at the "
            "verdict's context, in the engine's budget less the weights and its reserve; each page has every "
            "context.</p>"
            + table(headers, body_rows, attrs=' class="releases"'))
    if failed:
        body += ("<h2>Not reported yet (retried on the next run)</h2>"
                 + table(["model", "error"], ([cell(repo), cell(error)] for repo, error in failed), attrs=' class="failed"'))
    return document("hfkv: KV cache of new releases", body)


def write_site(folder: str | Path, entries: Iterable[Entry], *, failed: Sequence[tuple[str, str]] = ()) -> list[Path]:
    """Write ``folder/index.html`` and ``folder/<name>.html`` per entry; return the paths written.

    ``entries``: ``Report`` objects or report dicts (the JSON form, such as ``hfkv watch``'s
    ``<name>.json``); ``watch.created_at`` orders the index and ``watch.plans`` gives its verdicts.
    A page is written from a ``Report`` (exact curves from its layers); a dict entry's page is
    written only when missing, so a page drawn from layers is not replaced by a sampled one. File
    names come from ``FileNames`` (distinct even where the file system folds case) and never leave
    ``folder``; every write is atomic.
    ``failed``: (repo id, error line) of models without a report, listed after the releases.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written, rows, names = [], [], FileNames({})
    for entry in entries:
        data, report = split(entry)
        stem = names.claim(str(data.get("model")))
        path = write_page(folder, stem, entry, replace=report is not None)
        if path is not None:
            written.append(path)
        rows.append(index_row(data) | {"model": data.get("model"), "file": stem})
    return written + [write_index(folder, rows, failed)]


def write_page(folder: Path, stem: str, entry: Entry | Report, *, replace: bool = True) -> Path | None:
    """``folder/<stem>.html`` for one report (its plans from ``watch.plans``); with ``replace`` False,
    only when missing. Returns the path written, or None."""
    path = inside(Path(folder), stem + ".html")
    if not replace and path.exists():
        return None
    write_atomic(path, render_html(entry))
    return path


def write_index(folder: str | Path, rows: Sequence[Mapping[str, Any]], failed: Sequence[tuple[str, str]] = ()) -> Path:
    path = inside(Path(folder), "index.html")
    write_atomic(path, index_html(rows, failed))
    return path


def watch_rows(models: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """(index rows, failed models) of a watch state's ``models`` (repo id → entry): its done entries
    (``file`` names the report) and those that failed (retried on the next run). Nothing is read."""
    rows = [dict(entry, model=repo_id) for repo_id, entry in models.items()
            if isinstance(entry, dict) and entry.get("status") == "done" and isinstance(entry.get("file"), str)]
    failed = [(repo_id, str(entry.get("error", "?"))) for repo_id, entry in models.items()
              if isinstance(entry, dict) and entry.get("status") == "error"]
    return rows, failed


def write_watch_site(folder: str | Path, models: Mapping[str, Any]) -> Path:
    """``hfkv watch --html``: ``folder/index.html`` from the watch state's ``models`` (its entries carry
    the index's figures: ``watch_rows``), without reading any report. Pages are written per report as
    it is made (``write_page``)."""
    rows, failed = watch_rows(models)
    return write_index(folder, rows, failed)


def upgrade_entry(folder: str | Path, entry: dict[str, Any]) -> dict[str, Any] | None:
    """For a done entry of a state written by an earlier hfkv (no γ, S*, per-GPU summary): the entry
    with the index's figures read once from ``folder/<file>.json``, its page written when missing
    (drawn from the JSON); None when that report cannot be read (the entry is then shown as it is)."""
    folder = Path(folder)
    try:
        data = json.loads(inside(folder, f"{entry['file']}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(data, dict):
        return None
    write_page(folder, entry["file"], data, replace=False)
    row = index_row(data)
    return dict(entry) | {key: row[key] for key in ("gamma_bytes_per_request", "crossover_tokens", "gpus")} | {
        key: entry.get(key) if entry.get(key) is not None else row.get(key)
        for key in ("created_at", "model_type", "alpha_bytes_per_token")}
