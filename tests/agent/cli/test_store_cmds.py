"""`chiplore store check` as text: every source name is printed in full, whatever the terminal's width."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.cli.cli_helpers import run_cli

REPO = Path(__file__).resolve().parents[3]
#: A document 3 folders deep: its source (its path below the folder onboarded) is 131 characters long.
FOLDERS = ("a_very_long_folder_name_for_the_vendor_documents", "another_long_subfolder_name_per_product_line")
NAME = "the_datasheet_with_a_really_long_name_v2.rst"
SOURCE = "/".join((*FOLDERS, NAME))
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def long_named(chiplore_home, embedder, tmp_path, capsys, monkeypatch) -> Path:
    """A store holding chip lchip's one document, whose source is `SOURCE`."""
    doc = tmp_path.joinpath("docs", *FOLDERS, NAME)
    doc.parent.mkdir(parents=True)
    doc.write_text("Zephyr Z9\n=========\n\nThe Zephyr Z9 has 96 vector cores and 48 GB of HBM3 memory.\n")
    code, _, err = run_cli(capsys, monkeypatch, "onboard", "lchip", tmp_path / "docs", "--json")
    assert code == 0, err
    return chiplore_home


def _check(home: Path, **env: str) -> str:
    """stdout of a cold `chiplore store check` (its stdout a pipe) under `env`, ANSI styles removed."""
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TTY_COMPATIBLE", "FORCE_COLOR")}
    environ.update(PYTHONPATH=str(REPO), CHIPLORE_HOME=str(home), **env)
    proc = subprocess.run([sys.executable, "-m", "agent.cli", "store", "check"], cwd=REPO, env=environ,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert len(SOURCE) > 120 and "…" not in proc.stdout
    return _ANSI.sub("", proc.stdout)


@pytest.mark.parametrize("columns", [None, "40"])
def test_a_pipe_gets_each_source_name_whole_on_one_line(long_named, columns):
    out = _check(long_named, **({"COLUMNS": columns} if columns else {}))
    [row] = [line for line in out.splitlines() if "lchip" in line]
    cells = [cell.strip() for cell in row.split("│")]
    assert cells[1:7] == ["chunks", "lchip", SOURCE, "1", "1", "complete (1)"]


@pytest.mark.parametrize("columns", ["80", "60"])
def test_a_narrow_terminal_folds_a_long_name_onto_more_lines(long_named, columns):
    """A terminal (TTY_COMPATIBLE=1: rich treats the pipe as one) of 80 or 60 columns: the table fits its width
    and the source cell's lines, read in order, are the whole name."""
    out = _check(long_named, COLUMNS=columns, TTY_COMPATIBLE="1", NO_COLOR="1")
    lines = [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]  # the table (its title is the store's path)
    assert max(len(line) for line in lines) <= int(columns)
    body = lines[next(i for i, line in enumerate(lines) if line.startswith("┡")) + 1:]
    sources = "".join(line.split("│")[3].strip() for line in body if line.startswith("│"))
    assert sources == "(all)(all)" + SOURCE
