"""A deployment on the command line, defined once for every command that plans (report, compare, scan,
plot, watch): the options (``deployment_options``: GPU preset, engine mode, the layout and reserve
knobs of ``hfkv.engines.contract.EngineKnobs``, the weights) and how a report is planned with them
(``Deployment.apply``: ``hfkv.planning.enrich``, the one verdict).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import click

from hfkv.commands.options import engine_knobs, knob_option, size_option
from hfkv.engines.contract import knob_fields
from hfkv.engines.layout import LAYOUT_KNOBS

if TYPE_CHECKING:
    from hfkv.model.report import Report

ENGINES = ("auto", "theory", "sglang", "vllm")


def deployment_options(fn: Callable | None = None, *, many_gpus: bool = False) -> Callable:
    """The GPU, engine, weights and engine-knob options. ``many_gpus``: ``--gpu`` may be repeated (one
    plan per GPU spec: ``watch``'s columns); otherwise one ``--gpu NAME[:COUNT]``."""

    def decorate(f: Callable) -> Callable:
        gpu_help = ("GPU preset, NAME[:COUNT] (e.g. H200:8): the KV budget is what the engine leaves after its "
                    "weights and reserve (vLLM's rule unless --engine sglang).")
        options = [
            click.option("--gpu", "gpus" if many_gpus else "gpu", multiple=many_gpus,
                         help=gpu_help + (" Repeatable: one plan per preset." if many_gpus else "")),
            *([] if many_gpus else [click.option(
                "--gpu-memory", callback=_gpu_memory_option,
                help="A GPU no preset names, by the total memory CUDA reports (e.g. 23.57GiB, as vLLM logs it); "
                     "the same as --gpu 23.57GiB. --gpu local reads this machine's GPUs (nvidia-smi, rocm-smi).")]),
            click.option("--engine", default="auto", show_default=True, callback=_engine_option,
                         metavar="[auto|theory|vllm|sglang][==VERSION]",
                         help="auto: hfkv's exact figures, the verdict led by vLLM's own count (its newest modelled "
                              "release) with hfkv's and SGLang's beside; theory: led by hfkv's exact count; vllm or "
                              "sglang: the engine's own start-up arithmetic, of its newest modelled release or of "
                              "the one pinned as pip pins it (vllm==0.22.1, sglang==0.5.12)."),
            click.option("--no-weights", is_flag=True, help="Do not fetch parameter counts from the Hub."),
            click.option("--weights-bytes", callback=size_option,
                         help="Model weights (e.g. 16GB), for budgets when the Hub has no metadata (local files)."),
            click.option("--weights-read-bytes", callback=size_option,
                         help="Weights one decode step reads per GPU (MoE: the active experts), for the decode bound."),
        ]
        options += [knob_option(k) for k in knob_fields() if k.metadata["cli"]]
        return functools.reduce(lambda g, opt: opt(g), reversed(options), f)

    return decorate(fn) if fn is not None else decorate


def _engine_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    """``--engine`` checked at parse time: an engine name, optionally ``==VERSION`` that a rule set covers."""
    if value in (None, "auto", "theory"):
        return value or "auto"  # hfkv's own plan: no engine tables to read here
    from hfkv.engines.versions import parse_engine
    from hfkv.errors import UsageError

    try:
        return parse_engine(value or "theory", ENGINES).spec
    except UsageError as err:
        raise click.BadParameter(err.message, ctx=ctx, param=param) from None


def _gpu_memory_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--gpu-memory SIZE`` checked at parse time (it stands for ``--gpu SIZE``)."""
    if value is None:
        return None
    from hfkv.planning.gpus import _SIZE  # the one definition of what reads as a size

    if not _SIZE.fullmatch(value.strip()):
        raise click.BadParameter(f"{value!r} is not a memory size such as 23.57GiB or 24GB", ctx=ctx, param=param)
    return value.strip()


def reserve_options(fn: Callable) -> Callable:
    """The engine knobs that are not a layout (memory fractions, scheduler sizes, graphs, backends): for
    a command that chooses the layouts itself (``plan``)."""
    options = [knob_option(k) for k in knob_fields() if k.metadata["cli"] and k.name not in LAYOUT_KNOBS]
    return functools.reduce(lambda g, opt: opt(g), reversed(options), fn)


@dataclass(frozen=True)
class Deployment:
    """What the command line asked of a deployment: ``gpu`` (``NAME[:COUNT]``, None for none), the
    engine mode, given weights, and the engine knobs it set (``EngineKnobs`` names)."""

    gpu: str | None = None
    engine: str = "auto"
    weights_bytes: int | None = None
    weights_read_bytes: int | None = None
    max_model_len: int | None = None
    no_weights: bool = False
    knobs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_params(cls, params: dict[str, Any], gpu: str | None = None) -> Deployment:
        """The deployment of a command's parsed parameters (``gpu`` overrides ``params["gpu"]``)."""
        if gpu is None and params.get("gpu_memory"):
            if params.get("gpu"):
                raise click.UsageError("give --gpu or --gpu-memory, not both")
            gpu = params["gpu_memory"]
        return cls(gpu=gpu if gpu is not None else params.get("gpu"), engine=params.get("engine") or "auto",
                   weights_bytes=params.get("weights_bytes"), weights_read_bytes=params.get("weights_read_bytes"),
                   max_model_len=params.get("max_model_len"), no_weights=bool(params.get("no_weights")),
                   knobs=engine_knobs(params))

    @property
    def planned(self) -> bool:
        """Whether a report gets a serving plan (a GPU, or an engine mode with a budget)."""
        return self.gpu is not None or self.engine not in ("auto", "theory")

    def apply(self, report: Report) -> Report:
        """``report`` with its serving plan, the engine's figures and the verdict (``enrich``); raises
        ``UnsupportedModelError`` (named) when the engine would refuse the model or layout."""
        if not self.planned and self.weights_bytes is None and not report.batch:
            return report  # enrich would change nothing (no plan, no given weights, no --batch to warn of)
        from hfkv.planning.enrich import enrich  # and its imports (planning, the engines) are not paid

        return enrich(report, gpu=self.gpu, engine=self.engine, weights_bytes=self.weights_bytes,
                      weights_read_bytes=self.weights_read_bytes, max_model_len=self.max_model_len,
                      engine_knobs=dict(self.knobs))

    def fingerprint(self) -> dict[str, Any]:
        """What a planned figure depends on besides the model and the report options (scan's resume)."""
        return {"gpu": self.gpu, "engine": self.engine, "weights_bytes": self.weights_bytes,
                "knobs": dict(sorted(self.knobs.items()))}
