"""The ``hfkv`` command line: a thin layer over ``hfkv.inspect``.

``hfkv MODEL [MODEL ...]`` reports on each model; ``scan``, ``watch``, ``compare`` and ``plot`` are
subcommands loaded from their own modules on demand. Exit codes: 0 success, 1 a model could not be
fetched or read, 2 bad usage or a config hfkv cannot understand.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, NoReturn

import click

from hfkv import __version__
from hfkv.errors import HfkvError, UsageError
from hfkv.units import parse_size, parse_token_list, parse_tokens

if TYPE_CHECKING:
    from hfkv.model.report import Options

# Subcommands live in their own modules: name -> "module:attribute".
SUBCOMMANDS = {
    "scan": "hfkv.commands.scan:scan_command",
    "watch": "hfkv.commands.watch:watch_command",
    "compare": "hfkv.commands.compare:compare_command",
    "plot": "hfkv.commands.plot:plot_command",
    "serve": "hfkv.commands.serve:serve_command",
}
# What ``hfkv --help`` lists, written here so that listing imports none of the modules.
SHORT_HELP = {
    "report": "Report on each MODEL (the default command).",
    "scan": "One row per repo of a list (FILE or - for stdin).",
    "watch": "A report for each new model of an organisation.",
    "compare": "Several models side by side, and where their costs cross.",
    "plot": "Memory and concurrency against context (needs hfkv[plot]).",
    "serve": "Serve the calculator page on 127.0.0.1 (needs hfkv[app]).",
}
DTYPES = ["auto", "bf16", "fp16", "fp8", "fp4", "fp32"]


def quiet_libraries() -> None:
    """Before huggingface_hub or transformers are imported: no telemetry call, no bars, no noise."""
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_VERBOSITY", "error")  # no "Retrying in 8s" lines: errors are ours, one line
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")


def disable_pydantic_plugins() -> None:
    """In hfkv's own command-line process, before pydantic is imported: no plugin discovery.

    pydantic looks for plugins when it builds its first validator, by reading every installed
    distribution's entry points through ``importlib.metadata`` (~55 ms on a full environment);
    hfkv's specs use no plugin. Only here, never on ``import hfkv`` (a library user's plugins are
    theirs), and a value the user set (a list of plugin names to skip) is kept.
    """
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def fail(message: str, code: int) -> None:
    click.echo(f"hfkv: error: {message}", err=True)
    sys.exit(code)


def _convert(kind: Callable[[str], Any]) -> Callable:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        try:
            return kind(value)
        except UsageError as err:
            raise click.BadParameter(str(err)) from None

    return callback


def accounting_options(fn: Callable) -> Callable:
    """The precision, parallelism and question options shared by every command that reports."""
    options = [
        click.option("--kv-cache-dtype", type=click.Choice(DTYPES), default="auto", show_default=True,
                     help="KV cache dtype; auto = the config's dtype, or fp8 when quantization_config declares an fp8 KV cache."),
        click.option("--state-dtype", type=click.Choice(DTYPES[1:]), default="fp32", show_default=True,
                     help="Recurrent-state dtype (linear attention, Mamba)."),
        click.option("--conv-dtype", type=click.Choice(DTYPES), default="auto", show_default=True,
                     help="Conv-state dtype; auto = the model's 16-bit dtype."),
        click.option("--indexer-dtype", type=click.Choice(DTYPES[1:]), default="fp8", show_default=True,
                     help="Indexer-key dtype; fp8/fp4 add a 4-byte scale per 128 values."),
        click.option("--tensor-parallel-size", "--tp", "tp", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Tensor-parallel size; all bytes are then per GPU."),
        click.option("--context", "contexts", callback=_convert(parse_token_list),
                     help="Context lengths, comma-separated (4k = 4096). Default: 4k,32k,128k and the model's maximum."),
        click.option("--max-model-len", callback=_convert(parse_tokens),
                     help="Longest context of interest; replaces the model's maximum in the default contexts."),
        click.option("--budget", "--kv-cache-memory-bytes", "budget", callback=_convert(parse_size),
                     help="KV memory per GPU (e.g. 60GiB), for max concurrency."),
        click.option("--batch", type=click.IntRange(min=1), help="Concurrent requests: report the longest context that fits the budget."),
        click.option("--prefix-cache", callback=_convert(parse_tokens), help="Cached prefix length P: adds floor(P/Δ) state snapshots."),
        click.option("--snapshot-interval", callback=_convert(parse_tokens), help="Δ, tokens between state snapshots."),
        click.option("--spec-tokens", "--num-speculative-tokens", "spec_tokens", type=click.IntRange(min=0), default=0,
                     help="Draft tokens d verified per step: adds d state copies."),
    ]
    return functools.reduce(lambda f, opt: opt(f), reversed(options), fn)


def hub_options(fn: Callable) -> Callable:
    """Hub options shared by every command that fetches configs (HF_TOKEN / HF_ENDPOINT also apply)."""
    options = [
        click.option("--revision", help="Branch, tag or commit for Hub repos (or write org/name@revision)."),
        click.option("--token", envvar=None, help="Hub token (else HF_TOKEN, else the stored token). Never printed."),
        click.option("--endpoint", help="Hub endpoint (else HF_ENDPOINT, e.g. a mirror)."),
        click.option("--offline", is_flag=True, help="Use the local cache only (also HF_HUB_OFFLINE=1)."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
                     help="Seconds to wait for each Hub answer (default HF_HUB_DOWNLOAD_TIMEOUT, else 10)."),
        click.option("--retries", type=click.IntRange(min=0), default=5, show_default=True,
                     help="Retries of a config download after a network error, HTTP 429 or 5xx (1-8 s apart, "
                          "or as the Hub asks)."),
    ]
    return functools.reduce(lambda f, opt: opt(f), reversed(options), fn)


# Engine knobs (hfkv.engines.ENGINE_KNOBS) as CLI options, spelled like the engines' own flags.
_KNOB_TYPES: dict[str, Any] = {
    "page_size": click.IntRange(min=1), "block_size": click.IntRange(min=1),
    "swa_full_tokens_ratio": click.FloatRange(min=0, min_open=True, max=1),
    "max_running_requests": click.IntRange(min=1), "mamba_full_memory_ratio": click.FloatRange(min=0, min_open=True),
    "max_num_batched_tokens": click.IntRange(min=1), "mamba_ssm_dtype": click.Choice(DTYPES[1:]),
    "speculative_draft_layers": click.IntRange(min=0),
    "data_parallel_size": click.IntRange(min=1), "pipeline_parallel_size": click.IntRange(min=1),
}
_KNOB_FLAGS = ("enable_prefix_caching", "async_scheduling", "disable_hybrid_kv_cache_manager", "chunked_local_hybrid",
               "enable_dp_attention", "enable_expert_parallel")
_KNOB_ALIASES = {"data_parallel_size": ("--dp",), "pipeline_parallel_size": ("--pp",)}  # vLLM's -dp / -pp


def planning_options(fn: Callable) -> Callable:
    """GPU, serving and engine-mode options of the report command."""
    from hfkv.engines import ENGINE_KNOBS

    options = [
        click.option("--gpu", help="GPU preset, NAME[:COUNT] (e.g. H200:8); KV budget = memory × utilization − weights/TP."),
        click.option("--gpu-memory-utilization", "--mem-fraction-static", "gpu_memory_utilization",
                     type=click.FloatRange(min=0, min_open=True, max=1), help="Fraction of GPU memory the engine may use (default 0.92)."),
        click.option("--engine", type=click.Choice(["theory", "sglang", "vllm"]), default="theory", show_default=True,
                     help="theory: hfkv's exact per-request figures; sglang/vllm: the engine's own pool arithmetic."),
        click.option("--no-weights", is_flag=True, help="Do not fetch parameter counts from the Hub."),
        click.option("--weights-bytes", callback=_convert(parse_size),
                     help="Model weights (e.g. 16GB), for budgets when the Hub has no metadata (local files)."),
        click.option("--weights-read-bytes", callback=_convert(parse_size),
                     help="Weights one decode step reads per GPU (MoE: the active experts), for the decode bound."),
    ]
    for name, (default, text) in ENGINE_KNOBS.items():
        if name == "num_speculative_tokens":
            continue  # --spec-tokens / --num-speculative-tokens already sets it
        flag = "--" + name.replace("_", "-")
        if name in _KNOB_FLAGS:
            opt = click.option(f"{flag}/--no-{flag[2:]}", name, default=None, help=f"[engine] {text}")
        else:
            opt = click.option(flag, *_KNOB_ALIASES.get(name, ()), name, type=_KNOB_TYPES.get(name), default=None,
                               help=f"[engine] {text}")
        options.append(opt)
    return functools.reduce(lambda f, opt: opt(f), reversed(options), fn)


def engine_knobs(params: dict[str, Any]) -> dict[str, Any]:
    from hfkv.engines import ENGINE_KNOBS

    knobs = {name: params.get(name) for name in ENGINE_KNOBS if params.get(name) is not None}
    if params.get("spec_tokens"):
        knobs["num_speculative_tokens"] = params["spec_tokens"]
    return knobs


def build_options(params: dict[str, Any]) -> Options:
    """``Options`` from the parsed CLI parameters (a bad value: one line naming the option, exit 2)."""
    from hfkv.model.report import DEFAULT_CONTEXTS, make_options

    if params.get("prefix_cache") and not params.get("snapshot_interval"):
        raise click.UsageError("--prefix-cache needs --snapshot-interval")
    contexts = params.get("contexts")
    if contexts is None and params.get("max_model_len"):
        limit = params["max_model_len"]
        contexts = sorted({c for c in DEFAULT_CONTEXTS if c <= limit} | {limit})
    try:
        return make_options(**_option_fields(params, contexts))
    except UsageError as err:  # one line naming the option, as for every other bad input
        fail(str(err), 2)


def _option_fields(params: dict[str, Any], contexts: list[int] | None) -> dict[str, Any]:
    return dict(
        kv_cache_dtype=params["kv_cache_dtype"], state_dtype=params["state_dtype"],
        conv_dtype=params["conv_dtype"], indexer_dtype=params["indexer_dtype"],
        tensor_parallel_size=params["tp"], contexts=tuple(contexts) if contexts else None,
        budget_bytes=params.get("budget"), batch=params.get("batch"),
        prefix_cache_tokens=params.get("prefix_cache"), snapshot_interval=params.get("snapshot_interval"),
        spec_tokens=params.get("spec_tokens") or 0,
    )


def build_hub(params: dict[str, Any]) -> Any:
    """The command's ``HubClient`` from its Hub options. Unless ``--no-weights`` is given, the
    parameter-count request goes out together with the config GET (one round trip, not two)."""
    from hfkv.runtime.deadlines import sync_http_only
    from hfkv.sources.hub import HubClient

    sync_http_only()  # a command-line process runs no async HTTP
    return HubClient(
        endpoint=params.get("endpoint"), token=params.get("token"), offline=bool(params.get("offline")),
        timeout=params.get("timeout"), retries=params.get("retries", 5),
        prefetch_weights=not params.get("no_weights", True),
    )


class DefaultGroup(click.Group):
    """A group whose unknown first word is a MODEL for the default ``report`` command."""

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in SUBCOMMANDS:
            module, _, attr = SUBCOMMANDS[name].partition(":")
            try:
                return getattr(importlib.import_module(module), attr)
            except ImportError as err:  # listed in --help, fails with one line when run
                reason = f"the '{name}' command is not available in this install ({err})"
                return click.Command(name, help=f"(unavailable: {err})", callback=lambda: fail(reason, 2))
        return super().get_command(ctx, name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return ["report"] + list(SUBCOMMANDS)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from ``SHORT_HELP``: ``--help`` imports no subcommand module."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, SHORT_HELP[name]) for name in self.list_commands(ctx)])

    def resolve_command(self, ctx: click.Context, args: list[str]):
        if args and args[0] not in SUBCOMMANDS and args[0] != "report" and not args[0].startswith("-"):
            args = ["report"] + args
        elif args and args[0].startswith("-") and args[0] not in ("--help", "-h", "--version"):
            args = ["report"] + args
        return super().resolve_command(ctx, args)


@click.group(
    cls=DefaultGroup,
    context_settings={"help_option_names": ["-h", "--help"], "ignore_unknown_options": True},
)
@click.version_option(__version__, package_name="hfkv")  # no importlib.metadata lookup at start
def main() -> None:
    """KV-cache and state memory of Hugging Face models, from config.json alone.

    \b
    hfkv MODEL [MODEL ...]    report (MODEL: org/name[@rev], config.json, or a folder)
    hfkv scan FILE|-          one row per repo of a list
    hfkv watch --author ORG   a report for each new model of an organisation
    hfkv compare A B ...      side by side
    hfkv plot A [B ...]       memory and concurrency against context
    hfkv serve                the calculator page on http://127.0.0.1:7860
    """
    quiet_libraries()


@main.command("report")
@click.argument("models", nargs=-1, required=True)
@accounting_options
@planning_options
@hub_options
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown", "html"]), default="table",
              show_default=True, help="html: one self-contained page (several models: one section each).")
def report_command(models: tuple[str, ...], fmt: str, **params: Any) -> None:
    """Report on each MODEL: layers by kind, α, γ, S*, and per context bytes, reads and B_max."""
    from hfkv.planning.enrich import enrich
    from hfkv.model.report import inspect_loaded
    from hfkv.sources.local import load_config, looks_like_repo_id

    options = build_options(params)
    hub = build_hub(params) if any(looks_like_repo_id(m) for m in models) else None
    reports, rows, code = [], [], 0  # rows: JSON objects in the order the models were given
    for model in models:
        try:
            loaded = load_config(model, hub=hub, revision=params.get("revision"))
            report = inspect_loaded(loaded, options)
            enrich(
                report, hub=None if params.get("no_weights") or loaded.source != "hub" else hub,
                repo_id=loaded.name, revision=loaded.revision, gpu=params.get("gpu"),
                gpu_memory_utilization=params.get("gpu_memory_utilization"), weights_bytes=params.get("weights_bytes"),
                weights_read_bytes=params.get("weights_read_bytes"), engine=params["engine"],
                max_model_len=params.get("max_model_len"), engine_knobs=engine_knobs(params),
            )
        except HfkvError as err:
            click.echo(f"hfkv: error: {err}", err=True)
            rows.append({"model": model, "error": err.row_text()})
            code = max(code, err.exit_code)
            continue
        reports.append(report)
        rows.append(report.to_dict() if fmt == "json" else {})
        if fmt not in ("json", "html"):  # the rendering stack (rich) is imported only for people
            from hfkv.render import terminal as render

            if fmt == "table":
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
    sys.exit(code)


def entry() -> None:
    """Console entry point: ``main`` with a last guard, so no input ever ends in a traceback."""
    disable_pydantic_plugins()
    leave(run_guarded())


def run_guarded() -> int:
    """``main``'s exit code, every way it can end turned into one (a one-line message on stderr)."""
    try:
        code = main(standalone_mode=False)
        return code or 0
    except SystemExit as err:  # a command's own sys.exit(code)
        if err.code is None or isinstance(err.code, int):
            return err.code or 0
        click.echo(str(err.code), err=True)
        return 1
    except click.exceptions.Abort:  # Ctrl-C inside click's prompt handling
        click.echo("hfkv: interrupted", err=True)
        return 130
    except KeyboardInterrupt:
        click.echo("hfkv: interrupted", err=True)
        return 130
    except click.ClickException as err:  # bad usage: click's own message, exit 2
        err.show()
        return err.exit_code
    except BrokenPipeError:  # `hfkv ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except HfkvError as err:  # raised outside a command's own per-model handling (e.g. a bad --endpoint)
        click.echo(f"hfkv: error: {err}", err=True)
        return err.exit_code
    except Exception as err:  # a bug in hfkv: still one line, and a non-zero exit
        detail = str(err).splitlines()[0][:300] if str(err) else ""
        click.echo(f"hfkv: error: internal error ({type(err).__name__}: {detail}); please report it", err=True)
        return 1


def leave(code: int) -> NoReturn:
    """End the process with ``code`` once the output is out: the streams flushed and the ``atexit``
    handlers run (logging's flush, the Hub session's close), but not the interpreter's teardown of
    every module and object, which cost 60-80 ms on the benchmark VM (a fifth of a local report) and
    holds nothing a finished command needs: hfkv closes its own files when it is done with them."""
    import atexit

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader left: what could not be written is dropped, as above
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        except (OSError, ValueError):
            pass
    atexit._run_exitfuncs()  # noqa: SLF001 - the documented handlers, run as the interpreter would
    os._exit(code if 0 <= code <= 255 else 1)
