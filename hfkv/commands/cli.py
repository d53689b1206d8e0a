"""The ``hfkv`` command line: the command group, its entry point and its last guard.

``hfkv MODEL [MODEL ...]`` reports on each model (``commands.report``); ``scan``, ``watch``,
``compare``, ``plot`` and ``serve`` are subcommands loaded from their own modules on demand, so that
``hfkv --help`` imports none of them. Options shared by commands are defined once in
``commands.options``. Exit codes: 0 success, 1 a model could not be
fetched or read, 2 bad usage or a config hfkv cannot understand.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from typing import NoReturn

import click

from hfkv._version import __version__
from hfkv.commands.options import fail
from hfkv.commands.report import report_command
from hfkv.errors import HfkvError, bounded, system_refusal
from hfkv.text import one_line
from hfkv.runtime import notices

# Subcommands live in their own modules: name -> "module:attribute".
SUBCOMMANDS = {
    "scan": "hfkv.commands.scan:scan_command",
    "watch": "hfkv.commands.watch:watch_command",
    "compare": "hfkv.commands.compare:compare_command",
    "plot": "hfkv.commands.plot:plot_command",
    "serve": "hfkv.commands.serve:serve_command",
    "plan": "hfkv.commands.plan:plan_command",
    "log": "hfkv.commands.log:log_command",
}
# What ``hfkv --help`` lists, written here so that listing imports none of the modules.
SHORT_HELP = {
    "report": "Report on each MODEL (the default command).",
    "scan": "One row per repo of a list (FILE or - for stdin).",
    "watch": "A report for each new model of an organisation.",
    "compare": "Several models side by side, and where their costs cross.",
    "plot": "Memory and concurrency against context (needs hfkv[plot]).",
    "serve": "Serve the calculator page on 127.0.0.1 (needs hfkv[app]).",
    "plan": "The fewest GPUs, and the layouts, that hold N requests of S tokens.",
    "log": "Read a vLLM or SGLang start-up log (FILE or -) and explain its figures.",
}

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
        if args and args[0] == "help" and not os.path.lexists("help"):  # no model is called help: the help
            args = [args[1], "--help"] if len(args) > 1 and args[1] in self.list_commands(ctx) else ["--help"]
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
    hfkv plan MODEL --requests N --context S --gpu H200   the fewest GPUs that hold them
    hfkv log FILE|-           a start-up log's figures explained
    """
    quiet_libraries()
    notices.enabled = _stderr_is_a_terminal()  # retries and slow Hub answers said as they happen


main.add_command(report_command)


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
    except click.ClickException as err:  # bad usage: click's own message, exit 2, on one bounded line
        click.echo(f"hfkv: error: {usage_line(err)}", err=True)
        return err.exit_code
    except BrokenPipeError:  # `hfkv ... | head`: the reader left; say nothing more, exit 1 as click and rich do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except HfkvError as err:  # raised outside a command's own per-model handling (e.g. a bad --endpoint)
        click.echo(f"hfkv: error: {err}", err=True)
        return err.exit_code
    except OSError as err:  # the system refused: a full disk, a read-only folder, a busy file (not a bug)
        click.echo(f"hfkv: error: {_refusal(err)}", err=True)
        return 1
    except Exception as err:  # a bug in hfkv: still one line, and a non-zero exit
        detail = str(err).splitlines()[0][:300] if str(err) else ""
        click.echo(f"hfkv: error: internal error ({type(err).__name__}: {detail}); please report it", err=True)
        return 1


def _stderr_is_a_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def usage_line(err: click.ClickException) -> str:
    """click's message on one line (its own is four: usage, a hint, a blank line, the error), with the
    command's --help named; a 100 KB value given on the command line is quoted, not echoed whole."""
    text = bounded(one_line(" ".join(err.format_message().split())))
    ctx = getattr(err, "ctx", None)
    if isinstance(err, click.UsageError) and ctx is not None:
        text += f" (see '{ctx.command_path} --help')"
    return text


def _refusal(err: OSError) -> str:
    """The line for an ``OSError`` that ended a command: the file it names; without one, the write
    that failed was the output (stdout: ``hfkv ... > /dev/full``, a full disk or pipe device)."""
    if err.filename is None:
        with contextlib.suppress(OSError, ValueError, AttributeError):  # what is left would fail again at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return system_refusal(err, "cannot write the output")
    return system_refusal(err)


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
        except OSError as err:  # the last of the output did not reach the disk (full): say so, exit 1
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
                if stream is sys.stdout:
                    click.echo(f"hfkv: error: {system_refusal(err, 'cannot write the output')}", err=True)
                    code = code or 1
        except ValueError:  # closed
            pass
    atexit._run_exitfuncs()  # noqa: SLF001 - the documented handlers, run as the interpreter would
    os._exit(code if 0 <= code <= 255 else 1)
