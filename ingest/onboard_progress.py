"""Onboarding's progress on stderr: a rich bar over files whose text names the current phase (loading, embedding
and writing, extracting the hardware profile), and the line printed while another process holds the store.

The bar is drawn only when stderr is a terminal, and it is erased when onboarding ends (transient): what stays on
the screen, and all that a log or a pipe receives, is the command's own lines (errors, the summary). A bar drawn
into a file is one line of its final state, which says nothing the summary does not.

File names and phases are shown as text (never parsed as Rich markup or emoji codes) with control characters
escaped (`core.text.printable`).
"""

from __future__ import annotations

import sys

from core.locks import Holder
from core.text import printable


class Progress:
    """A rich progress bar over files (or nothing when disabled or when stderr is not a terminal; the waiting line
    is printed in every case)."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled = enabled
        self.total = total
        self._bar = None
        self._task = None
        self._console = None

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            console = Console(stderr=True, emoji=False, highlight=False)
            if not console.is_terminal:
                return self
            self._console = console
            self._bar = Progress(TextColumn("[bold]onboard[/bold]"), TextColumn("{task.fields[what]}", markup=False),
                                 BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=self._console,
                                 transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task("", total=self.total, what="")
        return self

    def start(self, name: str) -> None:
        """A new file: show its name."""
        self.phase(name)

    def phase(self, text: str) -> None:
        """Show what is being done now (the last 70 characters)."""
        if self._bar is not None:
            self._bar.update(self._task, what=printable(text)[-70:])

    def advance(self) -> None:
        if self._bar is not None:
            self._bar.advance(self._task)

    def waiting(self, holder: Holder | None) -> None:
        """Say that this onboarding waits for another process's write (`core.locks.hold`'s ``on_wait``)."""
        line = f"waiting for {printable(holder.describe()) if holder else 'another process'} to finish writing"
        if self._console is not None:
            self._console.print(line, markup=False)
            self.phase("waiting for the store")
        else:
            print(line, file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.update(self._task, what="done")
            self._bar.__exit__(*exc)
