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
    """Records whose ``source`` metadata is `source`, as the next chromadb client will see them.

    Two things sit between a killed writer and that view. A hot rollback journal (``chroma.sqlite3-journal``): a
    read-only connection cannot roll it back and fails ("attempt to write a readonly database"), so the database and
    its journal files are copied to a scratch folder and opened read-write there (SQLite rolls a hot journal back on
    first read, https://sqlite.org/lockingv3.html section 4.3); the store itself is never touched. And chromadb's
    write log: a write lands in ``embeddings_queue`` first and reaches the metadata segment (``embedding_metadata``)
    later, up to that segment's ``max_seq_id``; the next client applies the rest. So the count is the source's
    records in the segment, plus the ids the log still adds or upserts for it, minus those it deletes (chromadb's
    ``Operation``: ADD 0, UPDATE 1, UPSERT 2, DELETE 3). Raises sqlite3.Error where the copy cannot be read.
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
            return len(_ids_of_source(db, source))
        finally:
            db.close()


def _ids_of_source(db: sqlite3.Connection, source: str) -> set[str]:
    applied = {row[0] for row in db.execute(
        "SELECT e.embedding_id FROM embeddings e JOIN embedding_metadata m ON m.id = e.id "
        "WHERE m.key = 'source' AND m.string_value = ?", (source,))}
    done = dict(db.execute("SELECT s.collection, COALESCE(x.seq_id, -1) FROM segments s "
                           "LEFT JOIN max_seq_id x ON x.segment_id = s.id WHERE s.scope = 'METADATA'"))
    pending = db.execute("SELECT q.seq_id, q.operation, q.topic, q.id, q.metadata FROM embeddings_queue q "
                         "ORDER BY q.seq_id")
    for seq_id, operation, topic, rid, metadata in pending:
        collection = topic.rsplit("/", 1)[-1]
        if seq_id <= done.get(collection, -1):
            continue
        if operation == 3:
            applied.discard(rid)
        elif operation in (0, 1, 2) and metadata and json.loads(metadata).get("source") == source:
            applied.add(rid)
    return applied


def run_probe(store_dir: Path, repo: Path, env: dict) -> dict[str, list[int]]:
    """`probe` in a fresh process (so this test process never holds a chromadb client on the store)."""
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "tests.knowledge.raw_probe", str(store_dir)], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1])))
