"""``hfkv report MODEL [MODEL ...]`` (the default command): one report per model, as a table for
people, JSON, Markdown or one HTML page."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from hfkv.commands.deploy import Deployment, deployment_options
from hfkv.commands.options import accounting_options, build_hub, build_options, hub_options
from hfkv.errors import HfkvError

VERDICT_FAILED_EXIT = 3  # a model that does not fit, or that every engine refuses, on the given GPUs
VERDICT_NO = ("does-not-fit", "refused")


@click.command("report")
@click.argument("models", nargs=-1, required=True)
@accounting_options
@deployment_options
@hub_options
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown", "html"]), default="table",
              show_default=True, help="html: one self-contained page (several models: one section each).")
@click.option("--brief", is_flag=True, help="The answer alone: the verdict, the weights, the KV budget and the "
                                            "requests per context (table and markdown; JSON keeps everything).")
def report_command(models: tuple[str, ...], fmt: str, brief: bool = False, **params: Any) -> None:
    """Report on each MODEL: layers by kind, α, γ, S*, and per context bytes, reads and B_max.

    With --gpu, the first line is the verdict: will it start, and how many requests fit. Exit codes: 0
    success; 1 a model could not be fetched or read; 2 bad usage, or a config hfkv (or the engine of
    --engine) cannot take; 3 a verdict of "does NOT fit" or "refused" (errors take precedence).
    """
    # Deferred: the pipeline (pydantic, the mappers) loads when a report is asked for, not for --help.
    from hfkv.inspection import inspect_loaded
    from hfkv.sources import load_config, looks_like_repo_id

    options = build_options(params)
    deployment = Deployment.from_params(params)
    hub = build_hub(params) if any(looks_like_repo_id(m) for m in models) else None
    reports, rows, code, failed = [], [], 0, False  # rows: JSON objects in the order the models were given
    for model in models:
        try:
            loaded = load_config(model, hub=hub, revision=params.get("revision"))
            report = inspect_loaded(loaded, options, hub=None if params.get("no_weights") else hub)
            deployment.apply(report)
        except HfkvError as err:
            click.echo(f"hfkv: error: {err}", err=True)
            rows.append({"model": model, "error": err.row_text()})
            code = max(code, err.exit_code)
            continue
        reports.append(report)
        rows.append(report.to_dict() if fmt == "json" else {})
        if ((report.extra.get("serving") or {}).get("verdict_detail") or {}).get("status") in VERDICT_NO:
            failed = True
        if fmt not in ("json", "html"):  # the rendering stack (rich) is imported only for people
            from hfkv.render import terminal as render

            if brief:
                click.echo("\n".join(render.brief_lines(report)))
            elif fmt == "table":
                render.render_table(report)
            else:
                click.echo(render.render_markdown(report))
    if fmt == "html" and reports:
        from hfkv.render.html import render_html

        click.echo(render_html(reports[0] if len(reports) == 1 else reports), nl=False)
    if fmt == "json" and rows:
        if len(models) == 1 and reports:
            click.echo(json.dumps(rows[0], indent=2))
        elif len(models) > 1:
            click.echo(json.dumps(rows, indent=2))
    sys.exit(code or (VERDICT_FAILED_EXIT if failed else 0))
