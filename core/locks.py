"""Inter-process locks on files (``fcntl.flock``), with the holder's pid and purpose written in the lock file.

- An flock belongs to the open file: the kernel releases it when its process exits or is killed, so a lock left by
  a dead process is simply taken by the next one (the stale holder text is overwritten). Nothing has to be cleaned.
- The holder writes one JSON line into the file (``{"pid", "what", "since"}``), so a process that finds the lock
  taken can say by whom: ``waiting for onboarding of X by pid N``.
- Within one process a lock is re-entrant: nested `hold` calls of the same path (any thread of the process that
  holds it first; others wait on an in-process lock) count up and only the outermost releases the file lock.

Linux and macOS (flock on a local file system; NFS is not supported by flock everywhere).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from core.errors import LockBusyError

POLL_S = 0.2


@dataclass(frozen=True)
class Holder:
    """Who holds a lock: process id, what it is doing (free text), and since when (UTC, ISO 8601)."""

    pid: int
    what: str
    since: str

    def describe(self) -> str:
        """``onboarding of X by pid N`` (the purpose, then the pid)."""
        return f"{self.what or 'a write'} by pid {self.pid}"


class _Entry:
    def __init__(self) -> None:
        self.thread_lock = threading.RLock()
        self.fd: int | None = None
        self.count = 0


_ENTRIES: dict[str, _Entry] = {}
_ENTRIES_LOCK = threading.Lock()


def _entry(path: Path) -> _Entry:
    key = os.path.abspath(path)
    with _ENTRIES_LOCK:
        return _ENTRIES.setdefault(key, _Entry())


def read_holder(path: Path) -> Holder | None:
    """The holder text of lock file `path` (None when absent or unreadable). Only meaningful while the lock is held:
    a lock released by a dead process keeps its last holder's text."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8") or "null")
        return Holder(int(data["pid"]), str(data.get("what", "")), str(data.get("since", "")))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def is_held(path: Path) -> bool:
    """True when another process holds lock `path` now (a free lock, or one held by this process, is False)."""
    entry = _entry(path)
    if entry.count:
        return False
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's lock
    return False


@contextlib.contextmanager
def hold(path: Path, what: str, *, wait: bool = True, on_wait: Callable[[Holder | None], None] | None = None,
         timeout_s: float | None = None) -> Iterator[None]:
    """Hold the exclusive lock `path` (created with its folder if missing) for the ``with`` block.

    Args:
        path: the lock file.
        what: the holder's purpose as others will read it (``onboarding of docs/a.pdf for chip x``).
        wait: wait until the lock is free (polling every `POLL_S`); False fails at once when it is taken.
        on_wait: called once, with the current holder, when this call has to wait.
        timeout_s: give up after this many seconds of waiting (None: wait as long as it takes).

    Raises:
        LockBusyError: the lock is taken and `wait` is False, or `timeout_s` passed; the message names the holder.
    """
    entry = _entry(path)
    if not entry.thread_lock.acquire(blocking=wait, timeout=-1 if timeout_s is None or not wait else timeout_s):
        raise LockBusyError(_busy(path, None))
    try:
        if entry.count == 0:
            entry.fd = _acquire(Path(path), what, wait, on_wait, timeout_s)
        entry.count += 1
        try:
            yield
        finally:
            entry.count -= 1
            if entry.count == 0 and entry.fd is not None:
                os.close(entry.fd)  # releases the flock
                entry.fd = None
    finally:
        entry.thread_lock.release()


class FileLock:
    """An exclusive lock on `path` held by this object from `acquire` to `release` (or the process's end).

    Not re-entrant: a second `FileLock` of the same path finds it taken, in this process as in another (flock locks
    of two opens of one file exclude each other), so one process cannot run the same thing twice either.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, what: str, wait: bool = False, on_wait: Callable[[Holder | None], None] | None = None,
                timeout_s: float | None = None) -> None:
        """Take the lock (see `hold` for the arguments).

        Raises:
            LockBusyError: taken by another holder and `wait` is False (or `timeout_s` passed).
        """
        if self._fd is None:
            self._fd = _acquire(self.path, what, wait, on_wait, timeout_s)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:  # a lock object dropped without `release` does not keep the lock
        with contextlib.suppress(Exception):
            self.release()


def _acquire(path: Path, what: str, wait: bool, on_wait: Callable[[Holder | None], None] | None,
             timeout_s: float | None) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    started, told = time.monotonic(), False
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = read_holder(path)
                if not wait or (timeout_s is not None and time.monotonic() - started >= timeout_s):
                    raise LockBusyError(_busy(path, holder)) from None
                if not told and on_wait is not None:
                    on_wait(holder)
                    told = True
                time.sleep(POLL_S)
        since = datetime.now(timezone.utc).isoformat(timespec="seconds")
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps({"pid": os.getpid(), "what": what, "since": since}) + "\n").encode(), 0)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _busy(path: Path, holder: Holder | None) -> str:
    who = f"{holder.describe()} since {holder.since}" if holder else "another process"
    return f"{path} is locked by {who}"
