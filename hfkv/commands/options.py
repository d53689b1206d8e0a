"""The command-line options every command shares, defined once: accounting (dtypes, TP, contexts,
budget), Hub access, and planning (GPU, engine mode and the engine knobs, generated from
``hfkv.engines.contract.EngineKnobs``); and how a command turns them into ``Options`` and a Hub client.
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Any, Callable, NoReturn

import click

from hfkv.engines.contract import EngineKnobs, cli_flag
from hfkv.errors import UsageError
from hfkv.units import parse_size, parse_token_list, parse_tokens

if TYPE_CHECKING:
    from hfkv.model.options import Options

DTYPES = ["auto", "bf16", "fp16", "fp8", "fp4", "fp32"]


def fail(message: str, code: int) -> NoReturn:
    """One line on stderr, ``hfkv: error: MESSAGE``, and exit with ``code``."""
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


def size_option(ctx: click.Context, param: click.Parameter, value: Any) -> int | None:
    """A size option (``parse_size``); a figure floored to whole bytes is said once, on stderr."""
    if value is None:
        return None
    notes: list[str] = []
    try:
        size = parse_size(value, notes)
    except UsageError as err:
        raise click.BadParameter(str(err)) from None
    for note in notes:
        click.echo(f"hfkv: note: {param.opts[0]} {note}", err=True)
    return size


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
        click.option("--budget", "--kv-cache-memory-bytes", "budget", callback=size_option,
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


# What each kind of engine knob parses to on the command line (``EngineKnobs`` field metadata).
_KNOB_TYPES: dict[str, Any] = {
    "int": click.IntRange(min=1), "ratio": click.FloatRange(min=0, min_open=True, max=1),
    "count": click.IntRange(min=0), "positive": click.FloatRange(min=0, min_open=True),
    "dtype": click.Choice(DTYPES[1:]), "text": None,
}


def knob_option(f: Any) -> Callable:
    """The click option of one ``EngineKnobs`` field: its flag, aliases and help from the field."""
    flag, kind, help_text = cli_flag(f.name), f.metadata["kind"], f"[engine] {f.metadata['doc']}"
    if kind == "flag":
        return click.option(f"{flag}/--no-{flag[2:]}", f.name, default=None, help=help_text)
    return click.option(flag, *f.metadata["aliases"], f.name, type=_KNOB_TYPES[kind], default=None, help=help_text)


def engine_knobs(params: dict[str, Any]) -> dict[str, Any]:
    """The engine knobs the command line set (``EngineKnobs`` field names; unset ones left out)."""
    knobs = {name: params.get(name) for name in EngineKnobs.names() if params.get(name) is not None}
    if params.get("spec_tokens"):
        knobs["num_speculative_tokens"] = params["spec_tokens"]
    return knobs


def build_options(params: dict[str, Any]) -> Options:
    """``Options`` from the parsed CLI parameters (a bad value: one line naming the option, exit 2)."""
    from hfkv.model.options import DEFAULT_CONTEXTS, make_options

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
        **_layout_fields(params),
    )


def _layout_fields(params: dict[str, Any]) -> dict[str, Any]:
    """The layout knobs that change what one GPU holds, for the figures (well-formed values only: a
    malformed one is the engine knobs' to refuse, with their message)."""
    out: dict[str, Any] = {}
    for name in ("data_parallel_size", "pipeline_parallel_size"):
        value = params.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            out[name] = value
    if params.get("enable_dp_attention") is True:
        out["enable_dp_attention"] = True
    return out


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


