"""`chiplore demo`: the three jobs in a few minutes on embedded defaults.

1. onboard the chip notes shipped under ``hardware_profiles/notes/`` (one ``<chip>.md`` per chip),
2. ask a question with citations and list the patterns ranked for the chip,
3. optimize extend attention for it. Without a GPU the optimize step is the correctness-only exploration under
   the Triton interpreter (nothing timed, no speedup claimed).

Each step runs the real command in-process, so the demo prints what a user would see.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

import hardware_profiles
from agent.errors import DependencyMissingError

NOTES_DIR = Path(hardware_profiles.__file__).parent / "notes"
DEMO_CHIP = "h200"
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


def _invoke(console: Console, args: list[str]) -> None:
    from typer.main import get_command

    from agent.cli.app import app

    console.rule(f"[bold]chiplore {' '.join(args)}")
    get_command(app).main(args=args, prog_name="chiplore", standalone_mode=False)


def run_demo(console: Console, max_evals: int, gpu: bool) -> None:
    """Run the demo steps; `max_evals` bounds the optimize step.

    Raises:
        DependencyMissingError: no chip notes are shipped, or a command's module is not installed.
    """
    notes = shipped_notes()
    if DEMO_CHIP not in notes:
        raise DependencyMissingError(f"no {DEMO_CHIP} note under {NOTES_DIR}")
    for chip, files in notes.items():
        _invoke(console, ["onboard", chip, *map(str, files)])
    _invoke(console, ["ask", QUESTION, "--chip", DEMO_CHIP])
    _invoke(console, ["patterns", "--chip", DEMO_CHIP, "--case", "decode"])
    _invoke(console, ["optimize", "extend_attention", "--chip", DEMO_CHIP, "--max-evals", str(max_evals)])
