"""Independent look at an embedded store with chromadb alone (no chiplore code): records and vectors per source.

``python -m tests.knowledge.raw_probe STORE_DIR`` prints one JSON object ``{"chip/source": [records, vectors]}`` for
the ``chunks`` collection: how many records each (chip, source) has, and how many of them the vector index returns
(``get(ids, include=["embeddings"])``, bisected where chromadb fails on an id without a vector). Run it as a separate
process while nothing else uses the store (chromadb's client applies its write log when it reads).

``records_in_sqlite(STORE_DIR, source)`` counts a source's records in a copy of ``chroma.sqlite3`` (chromadb 1.x
schema), without starting chromadb at all.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path


def _vectors(col, ids: list[str]) -> int:
    if not ids:
        return 0
    try:
        res = col.get(ids=ids, include=["embeddings"])
        return sum(1 for e in res["embeddings"] if e is not None)
    except Exception:
        if len(ids) == 1:
            return 0
        half = len(ids) // 2
        return _vectors(col, ids[:half]) + _vectors(col, ids[half:])


def probe(store_dir: str) -> dict[str, list[int]]:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=store_dir, settings=Settings(anonymized_telemetry=False))
    col = client.get_collection("chunks")
    res = col.get(include=["metadatas"])
    by_source: dict[str, list[str]] = {}
    for rid, meta in zip(res["ids"], res["metadatas"]):
        by_source.setdefault(f"{meta['chip']}/{meta['source']}", []).append(rid)
    return {key: [len(ids), sum(_vectors(col, ids[i:i + 2000]) for i in range(0, len(ids), 2000))]
            for key, ids in sorted(by_source.items())}


def records_in_sqlite(store_dir: Path, source: str) -> int:
    """Records whose ``source`` metadata is `source`, as the next reader of ``chroma.sqlite3`` will see them.

    A killed writer can leave a hot rollback journal (``chroma.sqlite3-journal``) or a write-ahead log beside the
    database; a read-only connection cannot roll such a journal back and fails with "database is locked" or
    "attempt to write a readonly database". The database and its journal files are therefore copied to a scratch
    folder and opened read-write there (SQLite rolls a hot journal back on first read, https://sqlite.org/lockingv3.html
    section 4.3), so the store itself is never touched. Raises sqlite3.Error where the copy cannot be read.
    """
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        for suffix in ("", "-journal", "-wal", "-shm"):
            src = Path(store_dir) / f"chroma.sqlite3{suffix}"
            if src.exists():
                shutil.copy2(src, Path(scratch) / src.name)
        db = sqlite3.connect(Path(scratch) / "chroma.sqlite3", timeout=30)
        try:
            if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'embedding_metadata'").fetchone():
                return 0  # killed before chromadb created its schema
            row = db.execute("SELECT COUNT(DISTINCT id) FROM embedding_metadata WHERE key = 'source' AND "
                             "string_value = ?", (source,)).fetchone()
        finally:
            db.close()
    return int(row[0])


def run_probe(store_dir: Path, repo: Path, env: dict) -> dict[str, list[int]]:
    """`probe` in a fresh process (so this test process never holds a chromadb client on the store)."""
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "tests.knowledge.raw_probe", str(store_dir)], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1])))
