"""The Rich console every chiplore command prints through.

- Text passed as a `rich.text.Text` (or printed with ``markup=False``) is never parsed as markup, and emoji codes
  (``:warning:``, the ``:x:`` of ``rw:x:ro``) are never replaced: document text and file names print as they are.
- A closed stdout (``chiplore ask ... | head -1``) ends the command quietly with exit code 0: Rich's
  `Console.on_broken_pipe` hook (documented for this purpose) points stdout at /dev/null and exits 0 instead of 1.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console


class CliConsole(Console):
    """`rich.console.Console` with emoji codes off, soft wrapping (paths are never broken mid-name when piped), and
    a quiet closed stdout."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("emoji", False)
        kwargs.setdefault("soft_wrap", True)
        super().__init__(**kwargs)

    def on_broken_pipe(self) -> None:
        self.quiet = True
        closed_stdout()


def closed_stdout() -> None:
    """End quietly with exit code 0 when the reader of stdout went away: what was asked for was printed. stdout is
    pointed at /dev/null so that the interpreter's final flush cannot fail (the recipe of Python's documentation,
    "Note on SIGPIPE")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    raise SystemExit(0)
