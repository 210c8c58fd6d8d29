"""Run `chiplore ARGS` in this process the way the console script does (errors -> one line, exit 1)."""

from __future__ import annotations

import sys

from agent.cli.app import main


def run_cli(capsys, monkeypatch, *args: object) -> tuple[int, str, str]:
    """`chiplore ARGS` through `agent.cli.app.main`; returns (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["chiplore", *map(str, args)])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err
