"""Inter-process file locks: a second process waits or fails naming the holder; a dead holder's lock is taken."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.errors import LockBusyError
from core.locks import FileLock, hold, is_held, read_holder

REPO = Path(__file__).resolve().parents[2]

_HOLDER = """
import sys, time
from pathlib import Path
from core.locks import hold
with hold(Path(sys.argv[1]), "onboarding of big.pdf for chip x"):
    Path(sys.argv[2]).write_text("held")
    time.sleep(float(sys.argv[3]))
"""


def _holder(lock: Path, flag: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(lock), str(flag), str(seconds)], cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    deadline = time.monotonic() + 60
    while not flag.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    return proc


@pytest.mark.slow
def test_a_held_lock_names_its_holder_and_a_waiter_gets_it_after(tmp_path):
    lock = tmp_path / "locks" / "write.lock"
    proc = _holder(lock, tmp_path / "flag", 1.5)
    assert is_held(lock)
    holder = read_holder(lock)
    assert holder.pid == proc.pid and holder.describe() == f"onboarding of big.pdf for chip x by pid {proc.pid}"
    with pytest.raises(LockBusyError, match=f"locked by onboarding of big.pdf for chip x by pid {proc.pid} since"):
        with hold(lock, "second writer", wait=False):
            pass
    told = []
    started = time.monotonic()
    with hold(lock, "second writer", on_wait=told.append):
        assert time.monotonic() - started > 0.5 and read_holder(lock).pid == os.getpid()
    assert [h.pid for h in told] == [proc.pid]
    proc.wait(timeout=30)


def test_a_lock_left_by_a_killed_process_is_taken_over(tmp_path):
    lock = tmp_path / "write.lock"
    proc = _holder(lock, tmp_path / "flag", 60)
    proc.kill()
    proc.wait(timeout=30)
    assert read_holder(lock).pid == proc.pid  # its text is still there
    assert not is_held(lock)  # but the kernel released the lock with the process
    with hold(lock, "next", wait=False):
        assert read_holder(lock).what == "next"


def test_hold_is_reentrant_in_one_process_and_file_lock_is_not(tmp_path):
    lock = tmp_path / "a.lock"
    with hold(lock, "outer"):
        with hold(lock, "inner", wait=False):
            assert read_holder(lock).what == "outer"
    first, second = FileLock(tmp_path / "run.lock"), FileLock(tmp_path / "run.lock")
    first.acquire("run")
    with pytest.raises(LockBusyError):
        second.acquire("again")
    first.release()
    second.acquire("again")
    second.release()
