"""The Rich console every chiplore command prints through.

- Text passed as a `rich.text.Text` (or printed with ``markup=False``) is never parsed as markup, and emoji codes
  (``:warning:``, the ``:x:`` of ``rw:x:ro``) are never replaced: document text and file names print as they are.
- A closed stdout (``chiplore ask ... | head -1``) ends the command quietly: Rich's `Console.on_broken_pipe` hook
  (documented for this purpose) points stdout at /dev/null and exits with the command's own outcome instead of 1:
  0, or the code a command set with `exit_code_if_stdout_closes` once its outcome was known (``chiplore verify``
  sets 2 for a rejected kernel, so ``verify k.py | head -1`` under ``set -o pipefail`` still reports the rejection).
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


#: The exit code a closed stdout ends the command with (`exit_code_if_stdout_closes`).
_CLOSED_STDOUT_EXIT = [0]


def exit_code_if_stdout_closes(code: int) -> None:
    """Make a closed stdout end this command with `code` (the command's outcome, known before it prints it)."""
    _CLOSED_STDOUT_EXIT[0] = code


def closed_stdout() -> None:
    """End quietly when the reader of stdout went away, with exit code 0 or the outcome the command set
    (`exit_code_if_stdout_closes`): what was asked for was printed. stdout is
    pointed at /dev/null so that the interpreter's final flush cannot fail (the recipe of Python's documentation,
    "Note on SIGPIPE")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    raise SystemExit(_CLOSED_STDOUT_EXIT[0])
