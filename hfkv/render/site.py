"""The static site of release reports (``hfkv watch --html``): an index of releases, newest first, and
one self-contained page per report (``html.render_html``), every file written atomically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Sequence

from hfkv.model.accounting import max_concurrency
from hfkv.model.options import DEFAULT_CONTEXTS
from hfkv.model.report import Report
from hfkv.render.html import Entry, _count, cell, document, esc, per_request, pick_budget, render_html, split, table
from hfkv.runtime.files import inside, safe_name, write_atomic
from hfkv.units import format_bytes, format_tokens

def reference_budget(data: dict[str, Any]) -> tuple[str, int] | None:
    """(name, bytes) of the budget the index shows B_max for: the watch report's H200 budget (else
    its first GPU budget), else the report's own ``--budget``."""
    picked = pick_budget((data.get("watch") or {}).get("gpu_budgets") or {})
    if picked:
        return picked
    budget = data.get("budget_bytes")
    return ("budget " + format_bytes(budget), budget) if budget else None


def published(data: dict[str, Any]) -> str:
    return str((data.get("watch") or {}).get("created_at") or "")


def index_html(datas: Sequence[dict[str, Any]], pages: Sequence[str], failed: Sequence[tuple[str, str]] = ()) -> str:
    """``index.html``: one row per release, newest first, linking to its page; then the models that
    have no report yet (``failed``: (repo id, error line) pairs)."""
    order = sorted(range(len(datas)), key=lambda k: (published(datas[k]), str(datas[k].get("model"))), reverse=True)
    headers = ["published", "model", "model type", "α (bytes/token)", "γ (bytes/request)", "S*", "B_max on"]
    headers += [f"B_max {format_tokens(S)}" for S in DEFAULT_CONTEXTS]
    rows = []
    for k in order:
        d, ref = datas[k], reference_budget(datas[k])
        by_tokens = {c["tokens"]: c for c in d.get("contexts") or []}
        row = [cell(published(d)[:10] or "-"), f'<td><a href="{esc(pages[k])}">{esc(d.get("model"))}</a></td>',
               cell(d.get("model_type") or "?"), cell(_count(d.get("alpha_bytes_per_token")), num=True),
               cell(_count(d.get("gamma_bytes_per_request")), num=True),
               cell("-" if d.get("crossover_tokens") is None else f"{round(d['crossover_tokens']):,}", num=True),
               cell(ref[0] if ref else "-")]
        for S in DEFAULT_CONTEXTS:
            c = by_tokens.get(S)
            row.append(cell(_count(max_concurrency(ref[1], per_request(c)) if c and ref else None), num=True))
        rows.append(row)
    body = ("<h1>KV cache of new releases</h1>"
            f'<p class="meta">{len(datas)} report(s), newest first. B_max: requests per GPU at each context in the '
            "named KV budget (vLLM's budget on one GPU: memory × utilization less the weights and its reserve).</p>"
            + table(headers, rows, attrs=' class="releases"'))
    if failed:
        body += ("<h2>Not reported yet (retried on the next run)</h2>"
                 + table(["model", "error"], ([cell(repo), cell(error)] for repo, error in failed), attrs=' class="failed"'))
    return document("hfkv: KV cache of new releases", body)


def write_site(folder: str | Path, entries: Iterable[Entry], *, failed: Sequence[tuple[str, str]] = ()) -> list[Path]:
    """Write ``folder/index.html`` and ``folder/<name>.html`` per entry; return the paths written.

    ``entries``: ``Report`` objects or report dicts (the JSON form, such as ``hfkv watch``'s
    ``<name>.json``); ``watch.created_at`` orders the index and ``watch.gpu_budgets`` gives its B_max.
    A page is written from a ``Report`` (exact curves from its layers); a dict entry's page is
    written only when missing, so a page drawn from layers is not replaced by a sampled one. File
    names come from ``watch.safe_name`` and never leave ``folder``; every write is atomic.
    ``failed``: (repo id, error line) of models without a report, listed after the releases.
    """

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written, datas, pages = [], [], []
    for entry in entries:
        data, report = split(entry)
        page = safe_name(str(data.get("model"))) + ".html"
        path = inside(folder, page)
        if report is not None or not path.exists():
            write_atomic(path, render_html(entry, budgets=(data.get("watch") or {}).get("gpu_budgets")))
            written.append(path)
        datas.append(data)
        pages.append(page)
    index = inside(folder, "index.html")
    write_atomic(index, index_html(datas, pages, failed))
    return written + [index]


def write_watch_site(folder: str | Path, models: dict[str, dict[str, Any]],
                     fresh: dict[str, Report] | None = None) -> list[Path]:
    """``hfkv watch --html``: the site of a watch folder, next to its Markdown reports.

    ``models``: the watch state's ``models`` map (repo id → entry; ``status == "done"`` entries name
    their report ``file``). ``fresh``: reports built in this poll, by repo id (their pages get exact
    curves); the others are read back from ``folder/<file>.json``. A report file that is missing or
    unreadable is left out of the site (the Markdown index still lists it). Models whose report
    failed (``status == "error"``, retried on the next run) are listed after the releases.
    """
    folder = Path(folder)
    entries: list[Entry] = []
    failed = [(repo_id, str(entry.get("error", "?"))) for repo_id, entry in models.items() if entry.get("status") == "error"]
    for repo_id, entry in models.items():
        if entry.get("status") != "done":
            continue
        if fresh and repo_id in fresh:
            entries.append(fresh[repo_id])
            continue
        try:
            entries.append(json.loads(inside(folder, f"{entry['file']}.json").read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return write_site(folder, entries, failed=failed)
