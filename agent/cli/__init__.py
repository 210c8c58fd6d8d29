"""chiplore command line: ``chiplore COMMAND``. Sub-command groups live in sibling modules."""

from agent.cli.app import app, main

__all__ = ["app", "main"]
