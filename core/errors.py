"""User-facing errors: each carries one clear line naming the input and what is wrong."""

from __future__ import annotations


class ChiploreError(Exception):
    """Base of every error the CLI reports as one line (exit code 1) instead of a traceback."""


class BadInputError(ChiploreError):
    """An input file, argument or configuration value is invalid; the message names it."""


class StoreError(ChiploreError):
    """The knowledge store cannot be opened or written (unreachable server, newer schema, ...)."""


class LockBusyError(ChiploreError):
    """A lock (the knowledge store's writer lock, a run's lock) is held by another live process; the message names
    the lock file and its holder's pid."""
