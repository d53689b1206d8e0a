"""``hfkv plan MODEL --requests N --context S --gpu H200``: how few GPUs, and which layout, hold N
requests of S tokens (``hfkv.planning.search``): the smallest GPU count first, then the alternatives by
requests per GPU, each with its verdict and the command that prints it; ``--format json`` lists every
layout tried and why each was dropped."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import click

from hfkv.commands.deploy import reserve_options
from hfkv.commands.options import engine_knobs, fail, hub_options, size_option
from hfkv.errors import HfkvError
from hfkv.units import parse_tokens

SHOWN = 10  # layouts printed after the best one, in the table
# Every GPU count up to --max-gpus is tried with each TP, PP and DP that fills it, on each engine and KV
# dtype, each replayed through the engine's start-up arithmetic: about N·log N layouts (8 GPUs: 2 s, 128:
# a minute on a quick core; 4,096 never finished). 512 GPUs, 64 nodes of 8, is past any published
# serving deployment of one model.
MAX_GPUS = 512


def _digits(value: int) -> int:
    """Decimal digits of ``value`` without str(), which Python refuses past 4,300 digits (log10's
    rounding corrected)."""
    exponent = int(math.log10(value))
    return exponent + (1 if 10**exponent <= value else 0)


def _max_gpus(ctx: click.Context, param: click.Parameter, value: int) -> int:
    if value > MAX_GPUS:
        written = f"{value:,}" if value < 10**15 else f"a number of {_digits(value)} digits"
        raise click.BadParameter(
            f"{written} is past {MAX_GPUS} GPUs (64 nodes of 8): every layout up to that count is replayed "
            "through the engines' start-up arithmetic, about N·log N of them, which takes minutes already at "
            f"{MAX_GPUS}; plan a replica on fewer GPUs and multiply")
    return value


@click.command("plan")
@click.argument("model")
@click.option("--requests", type=click.IntRange(min=1), required=True, help="Concurrent requests to hold.")
@click.option("--context", "context_text", required=True, help="Tokens per request (e.g. 32k).")
@click.option("--gpu", default="H200", show_default=True, help="GPU preset the layouts are built of.")
@click.option("--engine", type=click.Choice(["vllm", "sglang", "both"]), default="both", show_default=True,
              help="Whose rules, refusals and budget decide.")
@click.option("--max-gpus", type=click.IntRange(min=1), callback=_max_gpus, default=8, show_default=True,
              help=f"Largest GPU count tried (at most {MAX_GPUS}).")
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=8, show_default=True,
              help="Tensor parallelism stays within a node.")
@click.option("--kv-cache-dtype", type=click.Choice(["auto", "fp8", "both"]), default="both", show_default=True,
              help="KV cache dtypes tried.")
@click.option("--weights-bytes", callback=size_option, help="Model weights (e.g. 16GB), when the Hub has no metadata.")
@click.option("--no-weights", is_flag=True, help="Do not fetch parameter counts from the Hub.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@reserve_options
@hub_options
def plan_command(model: str, requests: int, context_text: str, gpu: str, engine: str, max_gpus: int,
                 gpus_per_node: int, kv_cache_dtype: str, weights_bytes: int | None, no_weights: bool, fmt: str,
                 **params: Any) -> None:
    """Find the fewest GPUs, and the layouts, that hold REQUESTS requests of CONTEXT tokens for MODEL.

    Exit codes: 0 a layout holds them; 3 none of those tried is known to (none does, or the weights
    are unknown: the first line says which); 1 the model could not be fetched; 2 bad usage or a
    config hfkv cannot take.
    """
    from hfkv.api import plan  # deferred: the report stack loads for a plan, not for --help
    from hfkv.commands.options import build_hub

    try:
        context = parse_tokens(context_text)
        hub = build_hub({**params, "no_weights": no_weights})
        knobs = {k: v for k, v in engine_knobs(params).items()}
        dtypes = ("auto", "fp8") if kv_cache_dtype == "both" else (kv_cache_dtype,)
        found = plan(model, requests=requests, context=context, gpu=gpu, engine=engine, max_gpus=max_gpus,
                     gpus_per_node=gpus_per_node, kv_cache_dtypes=dtypes, hub=hub, revision=params.get("revision"),
                     weights=not no_weights, weights_bytes=weights_bytes, **knobs)
    except HfkvError as err:
        fail(str(err), err.exit_code)
    if fmt == "json":
        click.echo(json.dumps(found.to_dict(), indent=2))
    else:
        _print(found)
    sys.exit(0 if found.best else 3)


def _print(found: Any) -> None:
    from hfkv.planning.verdict import ENGINE_LABELS
    from hfkv.render.terminal import console_for, print_table, terminal_text
    from hfkv.units import format_tokens

    console = console_for()
    asked = f"{found.requests:,} request{'s' if found.requests != 1 else ''} of {format_tokens(found.context)} tokens"
    head = f"{found.model}: {asked} on {found.gpu}"
    if not found.best:
        upper = [o for o in found.dropped if o.status == "unknown" and (o.requests or 0) >= found.requests]
        if upper:  # not a "no": the weights are unknown, and without them these layouts would hold them
            first = min(upper, key=lambda o: (o.layout.gpus, -o.requests_per_gpu))
            console.print(terminal_text(f"unknown: no layout is known to hold {head}: the weights are unknown; "
                                        f"give --weights-bytes", "bold yellow"))
            console.print(terminal_text(f"  without them, {len(upper)} layouts would, the fewest GPUs: "
                                        f"{first.layout.gpus}, {first.layout.describe()} "
                                        f"({ENGINE_LABELS[first.layout.engine]})"))
            console.print(terminal_text(f"  {first.verdict}"))
            return
        closest = max(found.dropped, key=lambda o: (o.requests or 0), default=None)
        console.print(terminal_text(f"does NOT fit: no layout of up to {found.max_gpus} GPUs tried holds {head}",
                                    "bold red"))
        if closest is not None and closest.requests:
            console.print(terminal_text(f"closest: {closest.layout.gpus} GPUs, {closest.layout.describe()} "
                                        f"({ENGINE_LABELS[closest.layout.engine]}): {closest.reason}"))
            console.print(terminal_text(f"  {closest.command}"))
        return
    best = found.best
    console.print(terminal_text(f"{best.layout.gpus} × {found.gpu} hold {asked}: {best.layout.describe()} "
                                f"({ENGINE_LABELS[best.layout.engine]})", "bold green"))
    console.print(terminal_text(f"  {best.verdict}"))
    console.print(terminal_text(f"  {best.command}"))
    rows = [[str(o.layout.gpus), ENGINE_LABELS[o.layout.engine], o.layout.describe(), f"{o.requests:,}", f"{o.requests_per_gpu:,.1f}"]
            for o in found.kept[:SHOWN + 1]]
    marginal = [o for o in found.dropped if o.status == "marginal"]
    columns = [("GPUs", True), ("engine", False), ("layout", False), ("requests", True), ("per GPU", True)]
    print_table(console, f"layouts that hold them ({len(found.kept)} of {len(found.kept) + len(found.dropped)} tried)",
                columns, rows)
    if marginal:
        console.print(terminal_text(f"{len(marginal)} more hold them only within the reserve's estimate band "
                                    f"(--format json lists them)"))
