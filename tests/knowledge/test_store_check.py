"""The journal's "unchanged", the refusal to write over a damaged index, and `chiplore store check / repair`.

Every command runs in its own process, as a user runs them (and so that this test process never holds a chromadb
client on a store it damages); stores are read back with chromadb alone (`tests.knowledge.raw_probe`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.knowledge.bulk_docs import write_chunk_doc
from tests.knowledge.raw_probe import run_probe

pytestmark = pytest.mark.slow  # each command a cold process, and a 1200-chunk store built first (about 2 minutes)
REPO = Path(__file__).resolve().parents[2]
BIG = 1200  # above chromadb's sync threshold (1000): the index files are written


def _env(home: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), CHIPLORE_HOME=str(home))
    env.pop("CHIPLORE_CHROMA_URL", None)
    return env


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agent.cli", *map(str, args)], cwd=REPO, env=_env(home),
                          capture_output=True, text=True, timeout=900)


def _raw(home: Path, code: str) -> None:
    """Run `code` with chromadb alone on the store (``col`` is its chunks collection) in a fresh process."""
    script = ("import sys, chromadb\nfrom chromadb.config import Settings\n"
              "client = chromadb.PersistentClient(path=sys.argv[1], settings=Settings(anonymized_telemetry=False))\n"
              "col = client.get_collection('chunks')\n" + code)
    proc = subprocess.run([sys.executable, "-c", script, str(home / "store")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[Path, Path]:
    """A home whose store holds chip z9: a.txt (1200 chunks) and b.txt (20), and the docs folder."""
    root = tmp_path_factory.mktemp("store-check")
    docs = root / "docs"
    write_chunk_doc(docs / "a.txt", BIG, seed=1)
    write_chunk_doc(docs / "b.txt", 20, seed=2)
    proc = _cli(root / "home", "onboard", "z9", docs, "--json")
    assert proc.returncode == 0, proc.stderr
    return root / "home", docs


@pytest.fixture
def home(base, tmp_path) -> Path:
    shutil.copytree(base[0], tmp_path / "home")
    return tmp_path / "home"


def _statuses(proc: subprocess.CompletedProcess) -> dict[str, str]:
    assert proc.returncode == 0, proc.stderr
    return {f["source"]: f["status"] for f in json.loads(proc.stdout)["files"]}


def test_a_file_missing_chunks_is_not_unchanged(base, home):
    """Half of a.txt's records deleted behind chiplore's back: its hash still matches, yet it is stored again."""
    _raw(home, "ids = col.get(where={'source': 'a.txt'}, include=[])['ids']\ncol.delete(ids=ids[::2])\n")
    assert run_probe(home / "store", REPO, _env(home))["z9/a.txt"] == [BIG // 2, BIG // 2]
    assert _statuses(_cli(home, "onboard", "z9", base[1], "--json")) == {"a.txt": "stored", "b.txt": "unchanged"}
    assert run_probe(home / "store", REPO, _env(home)) == {"z9/a.txt": [BIG, BIG], "z9/b.txt": [20, 20]}


def test_writes_are_refused_over_a_damaged_index_and_repair_restores_it(base, home, tmp_path):
    """The vector-index folder deleted (records stay in chroma.sqlite3; chromadb puts back only the vectors still in
    its write log): `store check` counts the records without a vector; onboarding refuses to write, naming the
    sources; `store repair` puts every vector back from the vector cache (nothing is embedded again)."""
    for folder in (home / "store").iterdir():
        if folder.is_dir() and (folder / "header.bin").exists():
            shutil.rmtree(folder)
    check = _cli(home, "store", "check", "--json")
    report = json.loads(check.stdout)
    assert check.returncode == 1 and not report["ok"]
    lacking = {s["source"]: s["records"] - s["indexed"] for s in report["sources"] if s["records"] > s["indexed"]}
    missing = sum(lacking.values())
    assert lacking.get("a.txt", 0) > 0
    assert f"a.txt (chip z9, chunks): {lacking['a.txt']} of {BIG} records have no vector in the index" in \
        report["problems"]
    write_chunk_doc(tmp_path / "more" / "c.txt", 5, seed=3)
    refused = _cli(home, "onboard", "z9", tmp_path / "more", "--json")
    assert refused.returncode == 1 and refused.stdout == "" and refused.stderr.count("\n") == 1, refused.stderr
    assert f"the vector index of 'chunks' lacks {missing} of {BIG + 20} records' vectors (a.txt (chip z9): " \
           f"{lacking['a.txt']}" in refused.stderr and "run `chiplore store repair`" in refused.stderr
    repair = _cli(home, "store", "repair")
    assert repair.returncode == 0, repair.stderr
    assert f"vector index: {BIG + 20 - missing} intact, {missing} restored ({missing} from the vector cache, 0 read " \
           "from the damaged index, 0 embedded again)" in repair.stdout
    assert run_probe(home / "store", REPO, _env(home)) == {"z9/a.txt": [BIG, BIG], "z9/b.txt": [20, 20]}
    assert _statuses(_cli(home, "onboard", "z9", tmp_path / "more", "--json")) == {"c.txt": "stored"}


@pytest.mark.parametrize("damage", ["length-empty", "header-garbage"])
def test_repair_rebuilds_torn_index_files(base, home, damage):
    """Index files torn (an empty length.bin, which chromadb reads without error but which changes its distances;
    a header.bin it cannot load): every command refuses the store and names the repair; `store repair` moves the
    folder aside and rebuilds the index from the records (vectors from the cache, none embedded again)."""
    [segment] = [f for f in (home / "store").iterdir() if f.is_dir() and (f / "header.bin").exists()]
    if damage == "length-empty":
        (segment / "length.bin").write_bytes(b"")
    else:
        (segment / "header.bin").write_bytes(bytes(range(100)))
    ask = _cli(home, "ask", "v kib", "--chip", "z9", "--json")
    assert ask.returncode == 1 and "chiplore store repair" in ask.stderr and ask.stderr.count("\n") == 1, ask.stderr
    repair = _cli(home, "store", "repair")
    assert repair.returncode == 0, repair.stderr
    assert "moved a damaged index aside: " in repair.stderr and "0 embedded again" in repair.stdout
    assert list((home / "store-damaged").iterdir())  # kept for inspection
    assert run_probe(home / "store", REPO, _env(home)) == {"z9/a.txt": [BIG, BIG], "z9/b.txt": [20, 20]}
    check = _cli(home, "store", "check")
    assert check.returncode == 0, check.stderr
    ask = _cli(home, "ask", "v kib", "--chip", "z9", "--json")
    assert ask.returncode == 0 and len(json.loads(ask.stdout)["hits"]) == 5
