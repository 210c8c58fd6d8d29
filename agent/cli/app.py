"""Typer application and the entry point that turns `ChiploreError` into one clear line and exit code 1."""

from __future__ import annotations

import sys

import typer

from knowledge.errors import ChiploreError

app = typer.Typer(
    name="chiplore",
    help="Onboard a chip's documents, ask what is known, and optimize kernels for it with retrieval.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _register_commands() -> None:
    """Import the command modules; each adds its commands to `app` on import."""
    import agent.cli.docs_cmds  # noqa: F401  onboard, ask, chips
    import agent.cli.optimize_cmds  # noqa: F401  optimize, report, bench, demo
    import agent.cli.pattern_cmds  # noqa: F401  patterns, findings
    import agent.cli.profile_cmds  # noqa: F401  profile show, diff, detect
    import agent.cli.verify_cmds  # noqa: F401  verify


def main() -> None:
    """Console-script entry point (``chiplore``)."""
    _register_commands()
    try:
        app()
    except ChiploreError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        sys.exit(1)
