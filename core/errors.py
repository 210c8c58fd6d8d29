"""User-facing errors: each carries one clear line naming the input and what is wrong."""

from __future__ import annotations


class ChiploreError(Exception):
    """Base of every error the CLI reports as one line (exit code 1) instead of a traceback."""


class BadInputError(ChiploreError):
    """An input file, argument or configuration value is invalid; the message names it."""


class StoreError(ChiploreError):
    """The knowledge store cannot be opened or written (unreachable server, newer schema, ...)."""
