"""``hfkv watch``'s reports: one listed model's report planned on every ``--gpu`` spec, its Markdown for a
release thread, its state entry, and ``index.md``.

Each GPU spec gets its own serving plan from ``Deployment.apply`` (``hfkv.commands.deploy``: weights,
the engine's reserve, the one verdict), on a copy of the report (``hfkv.planning.serving.gpu_plans``);
the plans travel in ``report.extra["watch"]["plans"]`` (so in ``<name>.json``) and feed the Markdown,
the HTML page and, summarised, the indexes. Every text from the Hub or a config passes through
``hfkv.text``: ``markdown_cell`` (no HTML, no live link or image, one line), and the whole document
through ``lines`` (no control or bidi-override character).
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any, Iterable

from hfkv.commands.watch_state import iso
from hfkv.text import lines as printable_lines
from hfkv.text import markdown_cell, one_line
from hfkv.units import format_bytes

if TYPE_CHECKING:
    from hfkv.commands.watch import WatchConfig
    from hfkv.model.report import Report

_COMMIT = re.compile(r"[0-9a-f]{40}")
SKIPPED = "skipped"  # state status of a permanent failure: recorded, not retried


def sha_of(info: Any) -> str | None:
    sha = getattr(info, "sha", None)
    return sha if isinstance(sha, str) else None


def listing_weights(info: Any) -> dict[str, Any] | None:
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


def build_model_report(client: Any, info: Any, cfg: WatchConfig) -> tuple[Report, dict[str, dict], dict | None]:
    """Fetch the config of a listed model, build its report and plan it on every GPU spec of ``cfg``:
    (report, {spec: serving plan}, the listing's weights). Raises on failure."""
    from hfkv.inspection import inspect_loaded
    from hfkv.model.weights import attach as attach_weights
    from hfkv.planning.serving import gpu_plans

    repo_id = str(info.id)
    sha = sha_of(info)
    revision = sha if sha and _COMMIT.fullmatch(sha) else None
    loaded = client.load_config(repo_id, revision=revision)
    report = inspect_loaded(loaded, cfg.options, model=repo_id)
    weights = None if cfg.deployment.no_weights else listing_weights(info)
    if weights is not None:
        attach_weights(report, weights)  # the listing's safetensors counts over the estimate
    plans = gpu_plans(cfg.gpus, report, lambda twin, spec: dataclasses.replace(cfg.deployment, gpu=spec).apply(twin))
    deployment = {k: v for k, v in cfg.deployment.fingerprint().items() if k != "gpu"}
    report.extra["watch"] = {
        "created_at": iso(getattr(info, "created_at", None)),
        "listing_sha": sha,
        "gpus": list(cfg.gpus),
        "deployment": deployment,
        "plans": plans,
    }
    return report, plans, weights


def model_markdown(report: Report, plans: dict[str, dict], weights: dict | None) -> str:
    """The release-thread report: provenance, parameters and weights, then the KV report with a column
    of requests served per GPU spec and each spec's verdict, weights per GPU and KV budget."""
    from hfkv.render.terminal import render_markdown

    watch = report.extra.get("watch", {})
    lines = [f"# KV cache: {markdown_cell(report.model)}", ""]
    if watch.get("created_at"):
        lines.append(f"- published: {markdown_cell(watch['created_at'][:16].replace('T', ' '))} UTC")
    if report.commit:
        lines.append(f"- config commit: `{markdown_cell(report.commit)}`")
    if weights:
        by_dtype = ", ".join(f"{markdown_cell(d)} {n:,}" for d, n in sorted(weights["parameters"].items()))
        approx = "" if weights.get("parameters_exact", True) else " (approximate: packed tensors)"
        lines.append(f"- parameters: {weights['total_parameters']:,}{approx} ({by_dtype}), from the Hub's safetensors metadata")
        if weights.get("weights_bytes") is not None:
            lines.append(f"- weights: {weights['weights_bytes']:,} B ({format_bytes(weights['weights_bytes'])})")
    else:
        lines.append("- parameters: not listed by the Hub (no safetensors metadata)")
    if plans:
        lines.append("- requests on GPU: what each deployment serves at each context, every rank counted, in the "
                     "engine's own budget (GPU memory × its fraction, less the weights and the engine's reserve: "
                     "docs/deployments.md); each GPU's verdict, weights per GPU and KV budget follow the table")
    return printable_lines("\n".join(lines) + "\n\n" + render_markdown(report, plans=plans))


def done_entry(report: Report, info: Any, author: str, stem: str, weights: dict | None,
               plans: dict[str, dict]) -> dict[str, Any]:
    """The state entry of a reported model: what both indexes show, so neither reads a report back."""
    from hfkv.render.site import gpu_summary

    return {
        "status": "done", "author": author, "created_at": iso(getattr(info, "created_at", None)), "sha": sha_of(info),
        "file": stem, "model_type": report.model_type, "alpha_bytes_per_token": report.alpha_bytes_per_token,
        "gamma_bytes_per_request": report.gamma_bytes_per_request, "crossover_tokens": report.crossover_tokens,
        "total_parameters": weights.get("total_parameters") if weights else None,
        "weights_bytes": weights.get("weights_bytes") if weights else None,
        "gpus": {spec: gpu_summary(plan) for spec, plan in plans.items()},
    }


def error_entry(info: Any, author: str, error: str, status: str = "error") -> dict[str, Any]:
    return {"status": status, "author": author, "created_at": iso(getattr(info, "created_at", None)),
            "sha": sha_of(info), "error": error}


def _text(value: Any, default: str = "-") -> str:
    return value if isinstance(value, str) and value else default


def index_markdown(state: dict[str, Any]) -> str:
    """``index.md``: every report, newest first, with each GPU spec's verdict; then the models that
    failed (retried next run) and those skipped."""
    from hfkv.render.site import gpu_cell
    models = state["models"]

    def newest_first(items: Iterable[tuple[str, dict]]) -> list[tuple[str, dict]]:
        return sorted(items, key=lambda kv: (_text(kv[1].get("created_at"), ""), kv[0]), reverse=True)

    done = newest_first((k, v) for k, v in models.items() if v.get("status") == "done")
    failed = newest_first((k, v) for k, v in models.items() if v.get("status") not in ("done", SKIPPED))
    skipped = newest_first((k, v) for k, v in models.items() if v.get("status") == SKIPPED)
    authors = sorted({str(v.get("author")) for v in models.values() if v.get("author")})
    specs: list[str] = []
    for _, entry in done:
        specs += [s for s in (entry.get("gpus") or {}) if s not in specs]
    lines = [
        "# hfkv watch: new models", "",
        f"Authors: {markdown_cell(', '.join(authors)) or '-'}. Models created since {markdown_cell(state['since'][:10])}; "
        f"{len(done)} report(s), newest first."
        + (" Per GPU: the verdict (✓ fits, ✗ does not fit or refused, ? weights unknown: at most) and the "
           "requests served at its context." if specs else ""), "",
        "| published | model | model type | α (bytes/token) | parameters | weights | "
        + "".join(f"{markdown_cell(s)} | " for s in specs) + "report |",
        "|---|---|---|---:|---:|---:|" + "---:|" * len(specs) + "---|",
    ]
    for repo_id, entry in done:
        stem = entry["file"]
        alpha = entry.get("alpha_bytes_per_token")
        params = entry.get("total_parameters")
        weights = entry.get("weights_bytes")
        gpus = entry.get("gpus") or {}
        lines.append(
            f"| {markdown_cell(_text(entry.get('created_at'))[:10])} | {markdown_cell(one_line(repo_id))} "
            f"| {markdown_cell(_text(entry.get('model_type'), '?'))} "
            f"| {f'{alpha:,}' if isinstance(alpha, (int, float)) else '-'} | {f'{params:,}' if isinstance(params, int) else '-'} "
            f"| {format_bytes(weights) if isinstance(weights, int) else '-'} | "
            + "".join(f"{markdown_cell(gpu_cell(gpus.get(s)))} | " for s in specs)
            + f"[md]({stem}.md) · [json]({stem}.json) |"
        )
    for title, entries in (("Not reported yet (retried on the next run)", failed), ("Skipped (not retried)", skipped)):
        if entries:
            lines += ["", f"## {title}", "", "| published | model | error |", "|---|---|---|"]
            lines += [f"| {markdown_cell(_text(entry.get('created_at'))[:10])} | {markdown_cell(one_line(repo_id))} "
                      f"| {markdown_cell(one_line(entry.get('error', '?')))} |" for repo_id, entry in entries]
    return printable_lines("\n".join(lines) + "\n")
