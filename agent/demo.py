"""`chiplore demo`: the three jobs in a few minutes on embedded defaults.

1. onboard the chip notes shipped under ``hardware_profiles/notes/`` (one ``<chip>.md`` per chip),
2. ask a question with citations and list the patterns ranked for the chip,
3. optimize extend attention for it. Without a GPU the optimize step is the correctness-only exploration under
   the Triton interpreter (nothing timed, no speedup claimed).

Each step runs the real command in-process, so the demo prints what a user would see.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

import hardware_profiles
from agent.errors import DependencyMissingError
from kernels.task import DEFAULT_TASK

NOTES_DIR = Path(hardware_profiles.__file__).parent / "notes"
DEMO_CHIP = "h200"
DEMO_TASK = DEFAULT_TASK
QUESTION = "How much shared memory can one thread block use, and how many SMs are there?"


def shipped_notes() -> dict[str, list[Path]]:
    """Chip name -> note files shipped under `NOTES_DIR` (``<chip>.md`` or ``<chip>/...``)."""
    out: dict[str, list[Path]] = {}
    for path in sorted(NOTES_DIR.glob("*")):
        if path.is_file() and path.suffix in (".md", ".rst", ".txt", ".html"):
            out.setdefault(path.stem, []).append(path)
        elif path.is_dir():
            out.setdefault(path.name, []).extend(sorted(p for p in path.rglob("*") if p.is_file()))
    return out


def run_demo(console: Console, command: Callable[[list[str]], Any], max_evals: int, gpu: bool) -> None:
    """Run the demo steps through `command` (the CLI's own entry: ``command(["ask", ...])`` runs that command
    in-process); `max_evals` bounds the optimize step.

    Raises:
        DependencyMissingError: no chip notes are shipped, or a command's module is not installed.
    """
    notes = shipped_notes()
    if DEMO_CHIP not in notes:
        raise DependencyMissingError(f"no {DEMO_CHIP} note under {NOTES_DIR}")
    steps = [["onboard", chip, *map(str, files)] for chip, files in notes.items()]
    steps += [["ask", QUESTION, "--chip", DEMO_CHIP], ["patterns", "--chip", DEMO_CHIP, "--case", "decode"],
              ["optimize", DEMO_TASK, "--chip", DEMO_CHIP, "--max-evals", str(max_evals)]]
    for args in steps:
        console.rule(f"[bold]chiplore {' '.join(args)}")
        command(args)
