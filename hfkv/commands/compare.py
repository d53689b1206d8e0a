"""``hfkv compare A B ...``: several models side by side, and which one fits more requests where.

Two numbers decide a comparison of KV memory: α (bytes per token of context) and γ (bytes per
request that do not grow with the context). A model with a small α but a large γ (sliding-window or
linear-attention hybrids) loses at high concurrency of short requests and wins at long context; the
command prints one column per model and, for every pair, which model fits more requests at each
context and the context at which the lead changes (``hfkv.planning.compare``).

``collect_reports`` (load every model, keep going past failures, put all reports on the same
contexts) is shared with ``hfkv plot``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from hfkv.commands.deploy import Deployment, deployment_options
from hfkv.commands.options import accounting_options, build_hub, build_options, hub_options
from hfkv.errors import HfkvError

if TYPE_CHECKING:  # the report stack (pydantic) is imported by the command, not by --help
    from hfkv.model.options import Options
    from hfkv.model.report import Report
    from hfkv.planning.compare import Collected


class _Failures:
    """Records each model's failure in the collection (one JSON error per model) and says it on stderr
    once: a model given twice, or an option every model fails on alike (3 GPUs for TP 2 × DP 2), would
    otherwise print the same line once per model."""

    def __init__(self, out: Collected) -> None:
        self.out = out
        self.said: set[str] = set()

    def __call__(self, model: str, err: HfkvError) -> None:
        line = f"hfkv: error: {err}"
        if line not in self.said:
            self.said.add(line)
            click.echo(line, err=True)
        self.out.errors.append({"model": model, "error": err.row_text()})
        self.out.exit_code = max(self.out.exit_code, err.exit_code)


def _inspect(model: str, cfg: Any, options: Options, failed: _Failures, hub: Any = None,
             deployment: Deployment | None = None) -> Report | None:
    """The report of one loaded config (planned on ``deployment`` when given), or None after recording
    its error."""
    from hfkv.inspection import inspect_loaded

    try:
        report = inspect_loaded(cfg, options, hub=hub)
        return deployment.apply(report) if deployment is not None else report
    except HfkvError as err:
        failed(model, err)
        return None


def collect_reports(models: tuple[str, ...] | list[str], params: dict[str, Any]) -> Collected:
    """Load and inspect every MODEL; each failure prints one line on stderr and is recorded.

    Without ``--context`` every report is rebuilt on the union of the models' default contexts
    (4K, 32K, 128K and each model's maximum), so that the columns line up. With a deployment
    (``--gpu``, ``--engine``, the layout and reserve knobs) every report is then planned on it, as
    ``hfkv report`` plans one (a model the engine refuses is an error row, the others stay).
    """
    # Deferred, as every import of the report stack here: ``compare --help`` loads no pydantic.
    from hfkv.planning.compare import Collected
    from hfkv.render.compare import unique_labels
    from hfkv.sources import load_config, looks_like_repo_id

    options = build_options(params)
    deployment = Deployment.from_params(params)
    deployment = deployment if deployment.planned else None
    hub = build_hub(params) if any(looks_like_repo_id(m) for m in models) else None
    weights_hub = None if params.get("no_weights") or deployment is None else hub
    out = Collected()
    failed = _Failures(out)
    done: list[tuple[str, Any, Report]] = []
    for model in models:
        try:
            cfg = load_config(model, hub=hub, revision=params.get("revision"))
        except HfkvError as err:
            failed(model, err)
            continue
        now = options.contexts is not None  # else planned once the contexts are the union of all
        report = _inspect(model, cfg, options, failed, weights_hub if now else None, deployment if now else None)
        if report is not None:
            done.append((model, cfg, report))
    if options.contexts is None and done:
        union = tuple(sorted({c.tokens for _, _, r in done for c in r.contexts}))
        shared = options.model_copy(update={"contexts": union})
        # Same configs, other contexts: what read once reads again.
        done = [(m, cfg, _inspect(m, cfg, shared, failed, weights_hub, deployment)) for m, cfg, _ in done]
    out.reports = [r for _, _, r in done if r is not None]
    out.configs = [cfg for _, cfg, r in done if r is not None]
    out.labels = unique_labels([m for m, _, r in done if r is not None])
    return out


@click.command("compare")
@click.argument("models", nargs=-1, required=True)
@accounting_options
@deployment_options
@hub_options
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown"]), default="table", show_default=True)
def compare_command(models: tuple[str, ...], fmt: str, **params: Any) -> None:
    """Compare MODELS side by side: α, γ, S*, and per context bytes, B_max and reads.

    For each pair, says which model fits more requests at each context: a small α wins at long
    context, a small γ at high concurrency of short requests. With --gpu (and the report's layout
    and engine options) each model is planned on that deployment, its weights and the engine's
    reserve subtracted, and the models are ranked by the requests each serves at every context.
    """
    from hfkv.planning.compare import all_pairs
    from hfkv.render.compare import render_markdown, render_table, to_json

    out = collect_reports(models, params)
    budget = params.get("budget")
    pairs = all_pairs(out.reports, budget)
    if fmt == "json":
        click.echo(to_json(out, pairs))
    elif out.reports and fmt == "markdown":
        click.echo(render_markdown(out, pairs, budget), nl=False)
    elif out.reports:
        render_table(out, pairs, budget)
    sys.exit(out.exit_code)
