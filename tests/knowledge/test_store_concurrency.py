"""Several `chiplore onboard` processes into one embedded store at once (chroma issues #1595, #551): with the writer
lock every chip ends complete, in the records and in the vector index, and the waiting process says for whom."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.knowledge.bulk_docs import write_chunk_doc
from tests.knowledge.raw_probe import run_probe

REPO = Path(__file__).resolve().parents[2]
CHUNKS = 1500
REPEATS = 5
WRITERS = ("p", "q", "r")


def _env(home: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), CHIPLORE_HOME=str(home))
    env.pop("CHIPLORE_CHROMA_URL", None)
    return env


def _onboard(env: dict, chip: str, folder: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "agent.cli", "onboard", chip, str(folder), "--json", *extra],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _read_while(env: dict, writers: list[subprocess.Popen]) -> int:
    """Run `chiplore chips` again and again (a reader that opens the store each time, as readers do) while any of
    `writers` runs; returns how many reads succeeded (each must)."""
    reads = 0
    while any(w.poll() is None for w in writers):
        proc = subprocess.run([sys.executable, "-m", "agent.cli", "chips", "--json"], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        reads += 1
    return reads


@pytest.mark.slow
def test_three_concurrent_onboards_leave_every_chip_complete(tmp_path):
    """Five rounds of three concurrent onboards of 1500 chunks each into one store (round 1 into a brand-new store,
    the later rounds into a store that already holds the earlier chips), with a reader (`chiplore chips`, a fresh
    process each time) beside them. After each round a fresh process reads the store with chromadb alone: every
    chip has its 1500 records and every record its vector."""
    home = tmp_path / "home"
    env = _env(home)
    folders = {w: write_chunk_doc(tmp_path / "docs" / w / f"{w}.txt", CHUNKS, seed=ord(w)).parent for w in WRITERS}
    waited = reads = 0
    for round_ in range(REPEATS):
        chips = {w: f"{w}{round_}" for w in WRITERS}
        procs = {w: _onboard(env, chips[w], folders[w]) for w in WRITERS}
        reads += _read_while(env, list(procs.values()))
        for w, proc in procs.items():
            out, err = proc.communicate(timeout=900)
            assert proc.returncode == 0, (round_, w, err[-2000:])
            report = json.loads(out)
            assert [(f["status"], f["chunks"]) for f in report["files"]] == [("stored", CHUNKS)], (round_, w, out)
            waited += "waiting for onboarding of" in err
        found = run_probe(home / "store", REPO, env)
        expected = {f"{chip}/{w}.txt": [CHUNKS, CHUNKS] for r in range(round_ + 1) for w, chip in
                    ((w, f"{w}{r}") for w in WRITERS)}
        assert found == expected, round_
    assert waited > 0  # the writers did meet, and the later ones said whom they waited for
    assert reads >= REPEATS  # and a reader went on beside them
    print(f"{REPEATS} rounds of {len(WRITERS)} concurrent onboards: {waited} writers waited, {reads} reads beside them")
    ask = subprocess.run([sys.executable, "-m", "agent.cli", "ask", "v kib", "--chip", "q2", "-k", "3", "--json"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert ask.returncode == 0, ask.stderr
    hits = json.loads(ask.stdout)["hits"]
    assert len(hits) == 3 and {h["chip"] for h in hits} == {"q2"} and all(h["dense_rank"] for h in hits)


def test_no_wait_fails_at_once_naming_the_writer(tmp_path, chiplore_home):
    """While another process holds the writer lock, ``onboard --no-wait`` fails with one line naming the pid and
    what it does, and writes nothing."""
    from core.locks import hold
    from knowledge.store_files import embedded_place

    doc = write_chunk_doc(tmp_path / "docs" / "a.txt", 3).parent
    place = embedded_place(chiplore_home)
    with hold(place.write_lock, "onboarding of big.pdf for chip other"):
        proc = _onboard(_env(chiplore_home), "zz", doc, "--no-wait")
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: knowledge store {place.folder} is busy: onboarding of "
                                                   f"big.pdf for chip other by pid {os.getpid()} since "), err
    assert not list(place.folder.glob("*/data_level0.bin"))
