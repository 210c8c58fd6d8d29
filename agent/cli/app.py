"""Typer application and the entry point that turns `ChiploreError` into one clear line and exit code 1."""

from __future__ import annotations

import re
import sys
from importlib.metadata import PackageNotFoundError, version

import typer
import typer.core

from agent.cli.console import closed_stdout
from core.errors import ChiploreError

app = typer.Typer(
    name="chiplore",
    help="Onboard a chip's documents, ask what is known, and optimize kernels for it with retrieval.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # click's help: paragraphs rewrapped to the terminal, long option names on a line
)


#: An argument that is a negative number (``-3``, ``-0.5``, ``-.5``, ``-1e3``), not an option name.
_NEGATIVE_NUMBER = re.compile(r"-(\d|\.\d)")


class NegativeNumberArguments(typer.core.TyperCommand):
    """A command whose arguments may be negative numbers: click reads ``-3`` as an unknown short option ("No such
    option: -3") before the command can check the value. Here numbers reach the arguments (click's
    ``ignore_unknown_options``, for that call); any other unknown option (a typo such as ``--sourc``) is still
    click's "No such option" error, naming that option."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
        numbers, unknown = _dash_arguments(self, ctx, args)
        if numbers and unknown:
            raise _CLICK.NoSuchOption(unknown, ctx=ctx)
        ctx.ignore_unknown_options = ctx.ignore_unknown_options or numbers
        return super().parse_args(ctx, args)


def _dash_arguments(command: typer.core.TyperCommand, ctx, args: list[str]) -> tuple[bool, str | None]:  # type: ignore[no-untyped-def]
    """(whether `args` hold a negative number where click looks for options, the first unknown option or None);
    values of options that take one are skipped (``--source "-3 dB"``), as is everything after ``--``."""
    options = [p for p in command.get_params(ctx) if p.param_type_name == "option"]
    known = {name for p in options for name in (*p.opts, *p.secondary_opts)}
    with_value = {name for p in options if not p.is_flag and not p.count for name in p.opts}
    numbers, skip = False, False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--":
            break
        elif arg in with_value:
            skip = True
        elif not arg.startswith("-") or arg in known or arg.split("=", 1)[0] in with_value:
            continue
        elif _NEGATIVE_NUMBER.match(arg):
            numbers = True
        else:
            return numbers, arg
    return numbers, None


def installed_version() -> str:
    """The installed chiplore distribution's version, or a note that it is not installed (run from a checkout)."""
    try:
        return version("chiplore")
    except PackageNotFoundError:
        return "unknown (not installed; run from a source checkout)"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"chiplore {installed_version()}")
        raise typer.Exit(0)


@app.callback()
def _root(show_version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                            help="print chiplore's version and exit")) -> None:
    """Onboard a chip's documents, ask what is known, and optimize kernels for it with retrieval."""


#: The module that defines each top-level command (each module adds its commands to `app` on import).
COMMAND_MODULES = {
    "onboard": "docs_cmds", "ask": "docs_cmds", "chips": "docs_cmds", "mcp": "mcp_cmds",
    "optimize": "optimize_cmds", "report": "optimize_cmds", "bench": "optimize_cmds", "demo": "optimize_cmds",
    "patterns": "pattern_cmds", "findings": "pattern_cmds", "profile": "profile_cmds", "verify": "verify_cmds",
    "store": "store_cmds",
}

#: Commands that run other commands (``demo`` runs onboard, ask, patterns and optimize): they need every module.
RUNS_OTHER_COMMANDS = frozenset({"demo"})


def _register_commands(argv: list[str] | None = None) -> None:
    """Import the command modules. With `argv` naming a command (``chiplore chips ...``) only that command's module
    is imported, so a command pays for no other command's imports; otherwise (help, a typo, a command of
    `RUNS_OTHER_COMMANDS`) every module is."""
    import importlib

    first = next((a for a in argv or [] if not a.startswith("-")), None)
    if argv and first in COMMAND_MODULES and first == argv[0] and first not in RUNS_OTHER_COMMANDS:
        importlib.import_module(f"agent.cli.{COMMAND_MODULES[first]}")
        return
    for module in dict.fromkeys(COMMAND_MODULES.values()):
        importlib.import_module(f"agent.cli.{module}")


#: The click exceptions module typer raises from (recent typer versions vendor click as ``typer._click``).
_CLICK = sys.modules[typer.BadParameter.__module__]


def usage_error_line(exc: Exception) -> str:
    """One line for a click usage error (a missing argument, an unknown option, a value of the wrong type): the
    message and where the command's help is, instead of click's usage block."""
    names, ctx = [], getattr(exc, "ctx", None)
    while ctx is not None and ctx.parent is not None:  # the subcommands' names, not how the program was started
        names.append(ctx.info_name)
        ctx = ctx.parent
    where = " ".join(["chiplore", *reversed(names)])
    return f"error: {exc.format_message()} (see '{where} --help')"


def main() -> None:
    """Console-script entry point (``chiplore``). Exit codes: 0 ok, 1 bad input (a `ChiploreError`, or a usage error:
    a missing argument, an unknown option, a value of the wrong type), 2 a kernel the verifier rejected (`verify`),
    3 an optimize run stopped on an error; click's own code for usage errors (2) is mapped to 1 so that 2 always
    means a rejection. A closed stdout (``| head -1``) ends quietly with 0 (`agent.cli.console`)."""
    _register_commands(sys.argv[1:])
    try:
        code = app(standalone_mode=False)
        sys.stdout.flush()  # a pipe closed early fails here at the latest, not in the interpreter's exit
    except BrokenPipeError:
        closed_stdout()
    except SystemExit as exc:
        if exc.code not in (0, None) and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            closed_stdout()  # click turned a closed stdout (EPIPE) into exit 1 and wrapped the stream
        raise
    except ChiploreError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        sys.exit(1)
    except _CLICK.UsageError as exc:
        typer.secho(usage_error_line(exc), fg=typer.colors.RED, err=True)
        sys.exit(1)
    except _CLICK.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("Aborted!", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)

