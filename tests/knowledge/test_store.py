"""The embedded store: deterministic upserts, per-source replacement, rollback, schema version, batching."""

import pytest

from core.errors import StoreError
from knowledge.store import SCHEMA_VERSION, KnowledgeStore, index_text
from knowledge.types import Chunk


def _chunk(i: int, source: str = "a.md", chip: str = "z9", text: str | None = None) -> Chunk:
    return Chunk(id=f"{source}-{i}", text=text or f"fact number {i} about {source}", chip=chip, source=source,
                 page=i if source.endswith(".pdf") else None, section="S > T", kind="prose",
                 metadata={"context": f"{source} > S"})


def _snapshot(store: KnowledgeStore, collection: str = "chunks"):
    return sorted((r.id, r.text, tuple(sorted(r.metadata.items()))) for r in store.records(collection))


def test_upsert_query_roundtrip_and_metadata(chiplore_home, embedder):
    store = KnowledgeStore.open()
    chunks = [_chunk(1, "x.pdf", text="The Z9 has 96 vector cores."),
              _chunk(2, "x.pdf", text="Bananas are yellow fruit.")]
    assert store.upsert_chunks(chunks) == 2
    hits = store.query(store.embed_texts(["how many cores does the Z9 have"])[0], k=2)
    assert hits[0][0].id == "x.pdf-1"
    meta = hits[0][0].metadata
    assert (meta["chip"], meta["source"], meta["page"], meta["section"], meta["kind"]) == ("z9", "x.pdf", 1, "S > T",
                                                                                            "prose")
    assert hits[0][1] < hits[1][1]
    assert (chiplore_home / "store").is_dir()


def test_upsert_same_chunks_twice_changes_nothing(chiplore_home, embedder):
    store = KnowledgeStore.open()
    store.upsert_chunks([_chunk(i) for i in range(4)])
    before = _snapshot(store)
    store.upsert_chunks([_chunk(i) for i in range(4)])
    assert _snapshot(store) == before
    assert store.count() == 4


def test_replace_source_touches_only_that_source(chiplore_home, embedder):
    store = KnowledgeStore.open()
    store.replace_source("z9", "a.md", [_chunk(i, "a.md") for i in range(3)])
    store.replace_source("z9", "b.md", [_chunk(i, "b.md") for i in range(3)])
    other = _snapshot(store)
    other_b = [r for r in other if r[0].startswith("b.md")]
    result = store.replace_source("z9", "a.md", [_chunk(0, "a.md"), _chunk(7, "a.md")])
    assert (result.added, result.removed, result.kept) == (1, 2, 1)
    ids = {r.id for r in store.records(source="a.md")}
    assert ids == {"a.md-0", "a.md-7"}
    assert [r for r in _snapshot(store) if r[0].startswith("b.md")] == other_b


def test_writes_are_batched_within_the_client_limit(chiplore_home, embedder):
    store = KnowledgeStore.open()
    assert store.batch_size == store.client.get_max_batch_size() > 0
    store.batch_size = 3
    col = store.collection("chunks")
    sizes = []
    real = col.upsert

    def spy(**kwargs):
        sizes.append(len(kwargs["ids"]))
        return real(**kwargs)

    col.upsert = spy
    store.replace_source("z9", "a.md", [_chunk(i) for i in range(8)])
    assert sizes == [3, 3, 2]
    assert store.count() == 8


def test_failed_write_restores_the_previous_version(chiplore_home, embedder):
    store = KnowledgeStore.open()
    store.replace_source("z9", "a.md", [_chunk(i) for i in range(4)])
    before = _snapshot(store)
    store.batch_size = 2
    col = store.collection("chunks")
    real = col.upsert
    calls = {"n": 0}

    def fail_second_batch(**kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk full")
        return real(**kwargs)

    col.upsert = fail_second_batch
    edited = [_chunk(i, text=f"edited fact {i}") for i in range(4)]
    with pytest.raises(StoreError, match="storing a.md failed, previous version kept: disk full"):
        store.replace_source("z9", "a.md", edited)
    col.upsert = real
    assert _snapshot(store) == before


def test_schema_version_recorded_and_newer_store_rejected(chiplore_home, embedder):
    store = KnowledgeStore.open()
    store.upsert_chunks([_chunk(1)])
    meta = store.client.get_collection("chunks").metadata
    assert meta["chiplore_schema"] == SCHEMA_VERSION and meta["embed_dim"] == 384
    raw = store.client  # the plain chromadb client, as another program would use it
    col = raw.get_collection("chunks")
    col.modify(metadata={**col.metadata, "chiplore_schema": SCHEMA_VERSION + 1})
    with pytest.raises(StoreError) as info:
        KnowledgeStore.open()
    message = str(info.value)
    assert "written by a newer chiplore" in message and "\n" not in message
    assert raw.get_collection("chunks").count() == 1


def test_embedding_width_mismatch_is_reported(chiplore_home, embedder):
    class Wide:
        dim, model_name = 768, "wide-model"

        def embed(self, texts):
            return [[0.0] * 768 for _ in texts]

    KnowledgeStore.open().upsert_chunks([_chunk(1)])
    with pytest.raises(StoreError, match="holds 384-d embeddings.*wide-model gives 768-d"):
        KnowledgeStore.open(embedder=Wide()).upsert_chunks([_chunk(2)])


@pytest.mark.slow
def test_chips_and_revision(chiplore_home, embedder):
    store = KnowledgeStore.open()
    assert store.chips() == []
    r0 = store.revision()
    store.replace_source("z9", "a.md", [_chunk(i, "a.md") for i in range(2)])
    store.replace_source("z9", "b.md", [_chunk(i, "b.md") for i in range(3)])
    store.replace_source("q1", "c.md", [_chunk(0, "c.md", chip="q1")])
    store.upsert_chunks([_chunk(0, "run-1", chip="z9")], collection="findings")
    assert [(c.chip, c.documents, c.chunks, c.findings) for c in store.chips()] == [("q1", 1, 1, 0), ("z9", 2, 5, 1)]
    assert store.revision() != r0


def test_index_text_prepends_context():
    assert index_text("body", {"context": "doc > sec"}) == "doc > sec\nbody"
    assert index_text("body", {}) == "body"


def test_unknown_collection_is_rejected(chiplore_home):
    with pytest.raises(StoreError, match="unknown collection 'notes'"):
        KnowledgeStore.open().collection("notes")


_QUERY_DAMAGED = """
import sys
import chromadb
from knowledge.store import KnowledgeStore, _chroma_settings
from core.errors import StoreError
client = chromadb.PersistentClient(path=sys.argv[1], settings=_chroma_settings())  # past check_store_files
store = KnowledgeStore(client, "knowledge store " + sys.argv[1])
try:
    print(len(store.query([1.0] + [0.0] * 383, k=5, chip="big")))
except StoreError as exc:
    print("StoreError:", exc)
"""


@pytest.mark.slow
def test_a_vector_index_that_drops_records_is_a_store_error(chiplore_home, embedder):
    """An index file emptied behind chromadb's back makes filtered queries return nothing (dense retrieval would
    silently vanish); `query` compares with the stored count. Run in a fresh process, past the file checks of
    `open`, so the damaged file is what chromadb reads."""
    import os
    import random
    import subprocess
    import sys
    from pathlib import Path

    rng = random.Random(0)
    store = KnowledgeStore.open()
    chunks = [_chunk(i, f"doc{i // 100}.md", chip="big") for i in range(1200)]  # > chromadb's sync threshold
    store.upsert_chunks(chunks, embeddings=[[rng.gauss(0, 1) for _ in range(384)] for _ in chunks])
    assert len(store.query([1.0] + [0.0] * 383, k=5, chip="big")) == 5
    index = next((chiplore_home / "store").glob("*/data_level0.bin"))
    index.write_bytes(b"")
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", _QUERY_DAMAGED, str(chiplore_home / "store")], cwd=repo,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(repo)})
    assert proc.stdout.strip() == (
        f"StoreError: knowledge store {chiplore_home / 'store'}: the vector index of 'chunks' returned 0 of 5 nearest "
        "records although 1200 are stored (damaged index files); chiplore will not write over it; run `chiplore "
        "store repair` (or keep it for inspection and point CHIPLORE_HOME at a fresh folder)"), proc.stderr


def test_damaged_store_files_are_refused_before_chromadb_opens_them(tmp_path):
    from knowledge.store import check_store_files

    store = tmp_path / "store"
    seg = store / "0b5d2c8e-5c1e-4c8a-9d57-0d1f7c3b8a11"
    seg.mkdir(parents=True)
    (store / "chroma.sqlite3").write_bytes(b"not a database, just text")
    with pytest.raises(StoreError, match=r"chroma\.sqlite3 is not a SQLite database \(damaged store\)"):
        check_store_files(store)
    (store / "chroma.sqlite3").write_bytes(b"SQLite format 3\x00" + bytes(100))
    (seg / "header.bin").write_bytes(bytes(100))
    (seg / "link_lists.bin").write_bytes(b"")  # legitimately empty for a small index
    check_store_files(store)
    (seg / "length.bin").write_bytes(b"")
    with pytest.raises(StoreError, match=r"vector index file .*length\.bin is empty"):
        check_store_files(store)
    check_store_files(tmp_path / "no-store-yet")
