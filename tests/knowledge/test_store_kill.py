"""SIGKILL at random points of an 8000-chunk onboarding (chromadb writes it in batches of 5461 + 2539): the next
`chiplore onboard` repairs and completes the file or names it, and never calls a partial file "unchanged"."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.knowledge.bulk_docs import write_chunk_doc
from tests.knowledge.raw_probe import records_in_sqlite, run_probe

REPO = Path(__file__).resolve().parents[2]
CHUNKS = 8000
REPEATS = 10


def _env(home: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), CHIPLORE_HOME=str(home))
    env.pop("CHIPLORE_CHROMA_URL", None)
    return env


def _onboard(home: Path, folder: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "agent.cli", "onboard", "kchip", str(folder), "--json"], cwd=REPO,
                            env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _kill_when(proc: subprocess.Popen, home: Path, round_: int, rng: random.Random, duration: float) -> None:
    """Even rounds: at a random moment of the onboarding's duration. Odd rounds: a random moment within 2 s after
    the first records reach chromadb's database (between its two write batches, or while it writes the index)."""
    if round_ % 2 == 0:
        time.sleep(rng.uniform(0.1, 1.0) * duration)
    else:
        deadline = time.monotonic() + 2 * duration
        while time.monotonic() < deadline and proc.poll() is None:
            db = home / "store" / "chroma.sqlite3"
            if db.exists() and _records_while_writing(home) > 0:
                break
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 2.0))
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)


def _records_while_writing(home: Path) -> int:
    """`records_in_sqlite` while the onboarding still writes: a copy taken mid-write may be torn, or miss a journal
    that SQLite deleted between the listing and the copy; either reads as 0."""
    try:
        return records_in_sqlite(home / "store", "big.txt")
    except (sqlite3.Error, FileNotFoundError):
        return 0


@pytest.mark.slow
def test_sigkill_during_a_large_onboard_is_repaired_or_named(tmp_path):
    """Each round starts from an empty store (the vector cache of a first, uninterrupted onboarding is copied in, so
    no round embeds again), kills the onboarding (`_kill_when`), then runs it again and reads the store with chromadb
    alone. When the next onboarding refuses a torn index instead, it must name the file, and `chiplore store repair`
    (what it says to run) must leave the file complete."""
    folder = write_chunk_doc(tmp_path / "docs" / "big.txt", CHUNKS).parent
    warm = tmp_path / "warm"
    first = _onboard(warm, folder)
    _, err = first.communicate(timeout=1800)
    assert first.returncode == 0, err[-2000:]
    shutil.copytree(warm / "cache", tmp_path / "timed" / "cache")
    started = time.monotonic()
    timed = _onboard(tmp_path / "timed", folder)
    _, err = timed.communicate(timeout=900)
    assert timed.returncode == 0, err[-2000:]
    duration = time.monotonic() - started
    rng = random.Random(22)
    outcomes = []
    for round_ in range(REPEATS):
        home = tmp_path / f"round{round_}"
        shutil.copytree(warm / "cache", home / "cache")
        _kill_when(_onboard(home, folder), home, round_, rng, duration)
        before = records_in_sqlite(home / "store", "big.txt") if (home / "store" / "chroma.sqlite3").exists() else 0
        again = _onboard(home, folder)
        out, err = again.communicate(timeout=900)
        if again.returncode == 0:
            statuses = [f["status"] for f in json.loads(out)["files"] if f["source"] == "big.txt"]
            assert statuses in (["stored"], ["unchanged"]), (round_, out)
            if before < CHUNKS:  # the killed write left the file partial: it must not be called unchanged
                assert statuses == ["stored"], (round_, before, out)
            outcome = statuses[0]
        else:  # or it names the file and what to run, on one line
            assert "big.txt" in err and "chiplore store repair" in err and err.strip().count("\n") == 0, (round_, err)
            repair = subprocess.run([sys.executable, "-m", "agent.cli", "store", "repair"], cwd=REPO, env=_env(home),
                                    capture_output=True, text=True, timeout=900)
            assert repair.returncode == 0, (round_, repair.stdout, repair.stderr)
            outcome = "named, repaired"
        assert run_probe(home / "store", REPO, _env(home)) == {"kchip/big.txt": [CHUNKS, CHUNKS]}, (round_, outcome)
        outcomes.append((round_, before, outcome))
    print(f"onboarding of {CHUNKS} chunks: {duration:.1f} s; (round, records before the next command, its "
          f"outcome): {outcomes}")
    assert any(0 < before < CHUNKS for _, before, _ in outcomes), outcomes  # some kills split the write
