"""``hfkv plot A [B ...] --output FILE.png|svg``: memory and concurrency against context length
(``hfkv.render.plot`` draws it); with ``--gpu`` and a layout, the right panel is the deployment's
requests in flight, planned here as the report command plans them.

matplotlib is an optional extra (``hfkv[plot]``); without it the command fails with one line.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hfkv.commands.compare import collect_reports
from hfkv.commands.deploy import Deployment, deployment_options
from hfkv.commands.options import accounting_options, build_hub, build_options, fail, hub_options
from hfkv.errors import HfkvError

if TYPE_CHECKING:
    from hfkv.planning.compare import Collected
    from hfkv.render.plot import DeploymentCurve

MISSING_EXTRA = "install hfkv[plot] for plots"
FORMATS = (".png", ".svg")


def deployment(cfg: Any, model: str, xs: list[int], params: dict[str, Any], hub: Any) -> DeploymentCurve:
    """Plan serving ``cfg`` on ``params``' GPU and layout at the contexts ``xs`` as the report command
    plans it (``Deployment.apply``; weights from the Hub, ``--weights-bytes`` or the config's shapes)."""
    from hfkv.inspection import inspect_loaded
    from hfkv.planning.compare import plan_status, served
    from hfkv.planning.verdict import layout_label
    from hfkv.render.plot import DeploymentCurve

    from_hub = None if params.get("no_weights") else hub
    report = inspect_loaded(cfg, build_options(params).model_copy(update={"contexts": tuple(xs)}), hub=from_hub)
    planned = Deployment.from_params(params).apply(report)
    plan = planned.extra["serving"]
    counts = served(planned) or {}  # only a "fits" verdict serves requests, and none past the max length
    return DeploymentCurve(
        xs=[c["tokens"] for c in plan["contexts"]], requests=[counts.get(c["tokens"]) for c in plan["contexts"]],
        verdict=plan["verdict"], layout=layout_label(plan), where=f"{plan['gpu_count']} × {plan['gpu']}",
        status=plan_status(planned) or "none",
    )


def deployments(out: Collected, grid: list[int], params: dict[str, Any]) -> list[DeploymentCurve]:
    """One ``DeploymentCurve`` per model on its usable part of ``grid``; a refused layout: one line, exit 2."""
    from hfkv.render.curves import usable

    hub = build_hub(params) if any(getattr(c, "source", None) == "hub" for c in out.configs) else None
    try:
        return [deployment(cfg, r.model, usable(r, grid), params, hub) for cfg, r in zip(out.configs, out.reports)]
    except HfkvError as err:
        fail(str(err), err.exit_code)


def context_range(out: Collected, params: dict[str, Any]) -> tuple[int, int]:
    """x-axis range: 1K (or the shortest --context) to the longest context of the report set.

    A single short context (``--context 512``) still gets a range: from an eighth of it.
    """
    from hfkv.render.curves import SHORTEST

    hi = max(out.contexts)
    lo = min(SHORTEST, min(params["contexts"])) if params.get("contexts") else SHORTEST
    return (lo, hi) if lo < hi else (max(1, hi // 8), max(hi, 2))


@click.command("plot")
@click.argument("models", nargs=-1, required=True)
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False),
              help="Image file to write: .png or .svg.")
@accounting_options
@deployment_options
@hub_options
def plot_command(models: tuple[str, ...], output: str, **params: Any) -> None:
    """Plot memory per request and the requests that fit against context length for MODELS.

    With --gpu (and the report's layout options: --tp, --dp, --enable-dp-attention, --pp, ...) the
    right panel is the deployment's: requests in flight across every rank, from hfkv.planning.serving.
    """
    if Path(output).suffix.lower() not in FORMATS:
        raise click.BadParameter(f"'{output}': the file name must end in .png or .svg", param_hint="--output")
    try:
        from hfkv.render.plot import build_figure, import_matplotlib  # the report stack and matplotlib

        import_matplotlib()
    except ImportError:
        fail(MISSING_EXTRA, 2)
    out = collect_reports(models, params)
    if not out.reports:
        sys.exit(out.exit_code)
    deploy = (lambda grid: deployments(out, grid, params)) if params.get("gpu") else None
    fig = build_figure(out, *context_range(out, params), params.get("budget"), deploy)
    try:
        fig.savefig(output, dpi=150)
    except OSError as err:
        fail(f"cannot write {output}: {err.strerror or err}", 1)
    click.echo(f"wrote {output}")
    sys.exit(out.exit_code)
