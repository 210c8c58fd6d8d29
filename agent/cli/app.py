"""Typer application and the entry point that turns `ChiploreError` into one clear line and exit code 1."""

from __future__ import annotations

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
)


def _flags_take_no_value() -> None:
    """Rich help without a value placeholder after a flag (``--json``, not ``--json <bool>``).

    typer's rich help shows every option's type, flags included (typer 0.29 prints ``<bool>``), although a flag
    takes no value; its plain help already leaves it out. Only the help text changes; parsing is untouched.
    """
    option = typer.core.TyperOption
    shown = getattr(option, "display_type_rich", None)
    if shown is None or getattr(shown, "_chiplore_flags", False):
        return

    def display_type_rich(self: typer.core.TyperOption, ctx):  # type: ignore[no-untyped-def]
        if self.is_flag and self.metavar is None and not self.count:
            return None
        return shown(self, ctx)

    display_type_rich._chiplore_flags = True  # type: ignore[attr-defined]
    option.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_take_no_value()


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
        exc.show()
        sys.exit(1)
    except _CLICK.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("Aborted!", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)

