"""``hfkv log FILE``: read a vLLM or SGLang start-up log (``-``: stdin) and explain every figure in it
(``hfkv.api.explain_log``).

Exit codes: 0 the log was read (whether or not the model it names could be resolved: the figures
are printed either way, and the comparisons that need the model are left out with the reason);
2 the text is not a start-up log hfkv can read, or bad usage; 1 the file could not be read, or the
``--model`` given could not be fetched (2 when its config cannot be taken).
"""

from __future__ import annotations

import os
import stat
import sys
from typing import Any

import click

from hfkv.commands.options import fail, hub_options
from hfkv.errors import HfkvError, UsageError

LOG_LIMIT = 20_000_000  # bytes of a log read; a larger file is refused (no paste is that long)


def read_text(name: str) -> str:
    """The text of the log file ``name`` (``-``: stdin), decoded as UTF-8 with bad bytes replaced (a
    pasted log may hold a stray byte). Raises ``HfkvError`` (exit 1) when it cannot be read, and
    ``UsageError`` when it is not a regular file or is too large."""
    if name == "-":
        stream = getattr(sys.stdin, "buffer", None)
        raw = stream.read(LOG_LIMIT + 1) if stream is not None else sys.stdin.read(LOG_LIMIT + 1).encode()
        where = "stdin"
    else:
        where = name
        try:
            if not stat.S_ISREG(os.stat(name).st_mode):  # before open(): opening a FIFO blocks
                raise UsageError(f"cannot read the log {name}: not a regular file")
            with open(name, "rb") as handle:
                raw = handle.read(LOG_LIMIT + 1)
        except OSError as err:
            raise HfkvError(f"cannot read the log {name}: {err.strerror or type(err).__name__}") from None
    if len(raw) > LOG_LIMIT:
        raise UsageError(f"cannot read the log {where}: larger than {LOG_LIMIT:,} bytes")
    return raw.decode("utf-8", errors="replace")


@click.command("log")
@click.argument("file")
@click.option("--model", "model", metavar="REPO_OR_PATH",
              help="The model's config (repo id, config.json or folder), instead of the id the log names.")
@click.option("--gpu", metavar="NAME[:COUNT]", help="The GPU, when the log does not name it (a preset, e.g. RTX-3090-24GB).")
@click.option("--requests", type=click.IntRange(min=1), metavar="N",
              help="Requests of the log's max length to size the utilization (vLLM) or fraction (SGLang) for "
                   "(default: the log's max_num_seqs or max_running_requests, else one more than fit now).")
@click.option("--no-weights", is_flag=True, help="Do not fetch the checkpoint's parameter counts from the Hub.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@hub_options
def log_command(file: str, model: str | None, gpu: str | None, requests: int | None, no_weights: bool, fmt: str,
                **params: Any) -> None:
    """Read a vLLM or SGLang start-up log (FILE, or - for stdin) and explain every figure in it.

    Prints what was read (engine, version and how it was told, model, GPU, arguments), every figure
    with its line, then each figure against what hfkv computes: the tokens and concurrency from the
    printed KV memory, the printed weights against the checkpoint's, and the whole budget of the log's
    release on its GPU term by term. Then the answers: the requests of the log's length that fit, the
    largest --max-model-len that would start, the utilization or fraction that fits N requests, and
    the same start on the newest modelled release.

    Exit codes: 0 the log was read (a model it names that cannot be resolved is said, not an error);
    2 not a start-up log, or bad usage; 1 the file, or the --model given, could not be read.
    """
    from hfkv.api import explain_log  # deferred: the report stack loads for a log, not for --help
    from hfkv.commands.options import build_hub

    try:
        text = read_text(file)
        hub = build_hub({**params, "no_weights": no_weights})
        explanation = explain_log(text, model, hub=hub, revision=params.get("revision"), gpu=gpu,
                                  weights=not no_weights, requests=requests)
    except HfkvError as err:
        fail(str(err), err.exit_code)
    if fmt == "json":
        from hfkv.render.log import to_json

        click.echo(to_json(explanation))
    else:
        from hfkv.render.log import render

        render(explanation)
