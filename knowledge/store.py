"""The knowledge store: chromadb collections ``chunks`` (document chunks) and ``findings`` (verified results).

Embedded ``chromadb.PersistentClient`` under ``$CHIPLORE_HOME/store`` by default; a Chroma server
(``chroma run --path DIR --host 127.0.0.1 --port N``) when ``CHIPLORE_CHROMA_URL`` is set. Telemetry is off.
Vectors always come from `knowledge.embedder` and are passed explicitly (collections are created with
``embedding_function=None``), so chromadb never downloads its default model.

Each collection's metadata records ``chiplore_schema`` (this module's `SCHEMA_VERSION`), the embedding model and
width, and ``chiplore_revision``, a token that changes on every write (retrieval keys its on-disk BM25 cache on it).
Records carry string/number metadata: ``chip``, ``source``, ``section``, ``kind``, ``page`` (absent when the
format has no pages) and whatever the writer adds (``file_sha256``, ``context``, ...).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from core import settings
from core.errors import StoreError

if TYPE_CHECKING:  # the store duck-types chunks: any object with these attributes works
    from knowledge.types import Chunk

SCHEMA_VERSION = 1
COLLECTIONS = ("chunks", "findings")
PAGE_SIZE = 2000


@dataclass(frozen=True)
class StoredRecord:
    """One record read back from a collection (`text` is what is shown; `metadata` as written)."""

    id: str
    text: str
    metadata: dict[str, Any]
    embedding: list[float] | None = None


@dataclass(frozen=True)
class ChipSummary:
    """What the store holds for one chip: distinct documents, chunks, and findings."""

    chip: str
    documents: int
    chunks: int
    findings: int


@dataclass(frozen=True)
class ReplaceResult:
    """Outcome of `KnowledgeStore.replace_source`: chunk ids added, removed and kept unchanged."""

    added: int
    removed: int
    kept: int


def index_text(text: str, metadata: dict[str, Any]) -> str:
    """The text that is embedded and keyword-indexed: the chunk's ``context`` line (document and heading path),
    when there is one, followed by the chunk text. Shown text stays `text`."""
    context = str(metadata.get("context") or "").strip()
    return f"{context}\n{text}" if context else text


def chunk_metadata(chunk: Chunk) -> dict[str, str | int | float | bool]:
    """chromadb metadata for a chunk: provenance fields plus `chunk.metadata`, with None values dropped."""
    meta: dict[str, Any] = dict(chunk.metadata)
    meta.update(chip=chunk.chip, source=chunk.source, section=chunk.section, kind=chunk.kind)
    if chunk.page is not None:
        meta["page"] = int(chunk.page)
    return {k: (v if isinstance(v, (str, int, float, bool)) else str(v)) for k, v in meta.items() if v is not None}


class KnowledgeStore:
    """chromadb-backed store of chunks and findings with deterministic ids, upserts and a schema version.

    Open with `KnowledgeStore.open()`. Writes go through `upsert_chunks` / `replace_source`; both embed before
    writing anything, write in batches within ``client.get_max_batch_size()``, and bump the collection revision.
    """

    def __init__(self, client: Any, location: str, embedder: Any = None) -> None:
        self.client = client
        self.location = location
        self._embedder = embedder
        self._collections: dict[str, Any] = {}
        self.batch_size = _max_batch_size(client, location)

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, home: Path | None = None, url: str | None = None, embedder: Any = None) -> KnowledgeStore:
        """Open the store: a Chroma server if `url` (default ``$CHIPLORE_CHROMA_URL``) is set, else the embedded
        store under `home` (default ``$CHIPLORE_HOME``) ``/store``.

        Raises:
            StoreError: the server is unreachable, the store cannot be opened, its files are damaged
                (`check_store_files`), or it was written by a newer chiplore (schema version above `SCHEMA_VERSION`).
        """
        url = url if url is not None else settings.chroma_url()
        client, location = _http_client(url) if url else _persistent_client(home)
        store = cls(client, location, embedder)
        for name in COLLECTIONS:
            store.collection(name)
        return store

    def collection(self, name: str) -> Any:
        """The chromadb collection `name` (created on first use), after checking its schema version."""
        if name not in COLLECTIONS:
            raise StoreError(f"unknown collection {name!r}; collections: {', '.join(COLLECTIONS)}")
        if name not in self._collections:
            try:
                col = self.client.get_or_create_collection(
                    name, embedding_function=None, metadata={"chiplore_schema": SCHEMA_VERSION},
                    configuration={"hnsw": {"space": "cosine"}},
                )
            except Exception as exc:
                raise StoreError(f"{self.location}: cannot open collection {name!r}: {_one_line(exc)}") from exc
            _check_schema(col, self.location)
            self._collections[name] = col
        return self._collections[name]

    @property
    def embedder(self) -> Any:
        """The embedder (loaded on first use, so read-only commands such as `chips` stay fast)."""
        if self._embedder is None:
            from knowledge.embedder import get_embedder

            self._embedder = get_embedder()
        return self._embedder

    # ------------------------------------------------------------------ writing
    def embed_chunks(self, chunks: Sequence[Chunk]) -> list[list[float]]:
        """Embed `index_text` of each chunk: [n_chunks, dim] float32 lists. Checks the store's embedding width."""
        texts = [index_text(c.text, chunk_metadata(c)) for c in chunks]
        return self.embed_texts(texts)

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed raw texts with the store's embedder: [n, dim]."""
        return self.embedder.embed(list(texts))

    def upsert_chunks(self, chunks: Sequence[Chunk], collection: str = "chunks",
                      embeddings: Sequence[Sequence[float]] | None = None) -> int:
        """Insert or overwrite `chunks` by id; returns the number written.

        Raises:
            StoreError: the write failed (records written by this call are rolled back where possible).
        """
        if not chunks:
            return 0
        col = self._writable(collection)
        ids = [c.id for c in chunks]
        if len(set(ids)) != len(ids):
            raise StoreError(f"{collection}: duplicate chunk ids in one upsert")
        embeddings = list(embeddings) if embeddings is not None else self.embed_chunks(chunks)
        before = self._get(col, ids=ids, include_embeddings=True)
        try:
            self._upsert(col, ids, [c.text for c in chunks], [chunk_metadata(c) for c in chunks], embeddings)
        except Exception as exc:
            self._restore(col, before, ids)
            raise StoreError(f"{self.location}: writing {collection} failed: {_one_line(exc)}") from exc
        self._bump_revision(col)
        return len(ids)

    def replace_source(self, chip: str, source: str, chunks: Sequence[Chunk], collection: str = "chunks",
                       embeddings: Sequence[Sequence[float]] | None = None) -> ReplaceResult:
        """Make the records of (`chip`, `source`) exactly `chunks`: upsert them, then delete the old ids that are
        not among them. Other sources are not touched. On any failure the source's previous records are
        restored, so a file is stored completely or not at all.

        Raises:
            StoreError: the write failed (after restoring the previous state).
        """
        col = self._writable(collection)
        new_ids = [c.id for c in chunks]
        if len(set(new_ids)) != len(new_ids):
            raise StoreError(f"{source}: duplicate chunk ids")
        embeddings = list(embeddings) if embeddings is not None else self.embed_chunks(chunks)
        old = self._get(col, where=_where(chip=chip, source=source), include_embeddings=True)
        new_set = set(new_ids)
        stale = [r.id for r in old if r.id not in new_set]
        old_ids = {r.id for r in old}
        try:
            if chunks:
                self._upsert(col, new_ids, [c.text for c in chunks], [chunk_metadata(c) for c in chunks], embeddings)
            for start in range(0, len(stale), self.batch_size):
                col.delete(ids=stale[start:start + self.batch_size])
        except Exception as exc:
            self._restore(col, old, new_ids)
            raise StoreError(f"{self.location}: storing {source} failed, previous version kept: {_one_line(exc)}") \
                from exc
        self._bump_revision(col)
        return ReplaceResult(added=len(new_set - old_ids), removed=len(stale), kept=len(new_set & old_ids))

    def delete_source(self, chip: str, source: str, collection: str = "chunks") -> int:
        """Delete every record of (`chip`, `source`); returns how many were deleted."""
        return self.replace_source(chip, source, [], collection, embeddings=[]).removed

    # ------------------------------------------------------------------ reading
    def records(self, collection: str = "chunks", chip: str | None = None, source: str | None = None,
                include_embeddings: bool = False) -> list[StoredRecord]:
        """All records of `collection`, optionally of one chip and/or source (paged reads)."""
        return self._get(self.collection(collection), where=_where(chip=chip, source=source),
                         include_embeddings=include_embeddings)

    def query(self, embedding: Sequence[float], collection: str = "chunks", k: int = 10,
              chip: str | None = None) -> list[tuple[StoredRecord, float]]:
        """Nearest records to `embedding` ([dim] floats) by cosine distance (0 = identical), best first.

        Raises:
            StoreError: the query failed, or the vector index returned fewer records than the store holds (a
                damaged index would otherwise silently drop dense retrieval).
        """
        col = self.collection(collection)
        n = min(k, self.count(collection, chip))
        if n <= 0:
            return []
        try:
            res = col.query(query_embeddings=[list(embedding)], n_results=n, where=_where(chip=chip),
                            include=["documents", "metadatas", "distances"])
        except Exception as exc:
            raise StoreError(f"{self.location}: query on {collection} failed: {_one_line(exc)}") from exc
        if len(res["ids"][0]) < n and len(res["ids"][0]) < min(k, self.count(collection, chip)):
            raise StoreError(
                f"{self.location}: the vector index of {collection!r} returned {len(res['ids'][0])} of {n} nearest "
                f"records although {self.count(collection, chip)} are stored (damaged index files); {_FRESH_HOME}")
        return [(StoredRecord(i, d or "", dict(m or {})), float(dist)) for i, d, m, dist in
                zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0])]

    def count(self, collection: str = "chunks", chip: str | None = None) -> int:
        """Number of records in `collection` (of `chip` if given)."""
        col = self.collection(collection)
        try:
            if chip is None:
                return int(col.count())
            return len(col.get(where=_where(chip=chip), include=[])["ids"])
        except Exception as exc:
            raise StoreError(f"{self.location}: cannot count {collection}: {_one_line(exc)}") from exc

    def chips(self) -> list[ChipSummary]:
        """Every chip with records, sorted by name, with its document, chunk and finding counts."""
        docs: dict[str, set[str]] = {}
        chunks: dict[str, int] = {}
        findings: dict[str, int] = {}
        for rec in self._get(self.collection("chunks"), include_documents=False):
            chip = str(rec.metadata.get("chip", ""))
            docs.setdefault(chip, set()).add(str(rec.metadata.get("source", "")))
            chunks[chip] = chunks.get(chip, 0) + 1
        for rec in self._get(self.collection("findings"), include_documents=False):
            chip = str(rec.metadata.get("chip", ""))
            findings[chip] = findings.get(chip, 0) + 1
        names = sorted(set(chunks) | set(findings))
        return [ChipSummary(c, len(docs.get(c, ())), chunks.get(c, 0), findings.get(c, 0)) for c in names]

    def source_metadata(self, chip: str, source: str, collection: str = "chunks") -> list[dict[str, Any]]:
        """Metadata of every stored record of (`chip`, `source`) (used to detect unchanged files)."""
        col = self.collection(collection)
        return [r.metadata for r in self._get(col, where=_where(chip=chip, source=source), include_documents=False)]

    def revision(self, collection: str = "chunks") -> str:
        """A token that changes whenever `collection` is written (fresh read from the server or disk)."""
        try:
            meta = self.client.get_collection(collection, embedding_function=None).metadata or {}
        except Exception as exc:
            raise StoreError(f"{self.location}: cannot read collection {collection!r}: {_one_line(exc)}") from exc
        return f"{meta.get('chiplore_revision', 'r0')}-{self.count(collection)}"

    # ------------------------------------------------------------------ internals
    def _writable(self, collection: str) -> Any:
        col = self.collection(collection)
        meta = dict(col.metadata or {})
        dim = meta.get("embed_dim")
        if dim is not None and int(dim) != self.embedder.dim:
            raise StoreError(
                f"{self.location}: collection {collection!r} holds {dim}-d embeddings of {meta.get('embed_model')}, "
                f"but the configured model {self.embedder.model_name} gives {self.embedder.dim}-d; "
                "use the same CHIPLORE_EMBED_MODEL or a fresh CHIPLORE_HOME")
        return col

    def _bump_revision(self, col: Any) -> None:
        meta = {k: v for k, v in dict(col.metadata or {}).items() if not k.startswith("hnsw:")}
        meta.update(chiplore_schema=SCHEMA_VERSION, chiplore_revision=uuid.uuid4().hex,
                    embed_model=str(self.embedder.model_name), embed_dim=int(self.embedder.dim))
        try:
            col.modify(metadata=meta)
        except Exception as exc:
            raise StoreError(f"{self.location}: cannot update collection metadata: {_one_line(exc)}") from exc

    def _upsert(self, col: Any, ids: list[str], docs: list[str], metas: list[dict], embs: Sequence) -> None:
        for start in range(0, len(ids), self.batch_size):
            end = start + self.batch_size
            col.upsert(ids=ids[start:end], documents=docs[start:end], metadatas=metas[start:end],
                       embeddings=[list(map(float, e)) for e in embs[start:end]])

    def _restore(self, col: Any, before: list[StoredRecord], written_ids: Sequence[str]) -> None:
        """Best-effort rollback: drop ids this write added, put back the records that were there before."""
        old_ids = {r.id for r in before}
        added = [i for i in written_ids if i not in old_ids]
        try:
            for start in range(0, len(added), self.batch_size):
                col.delete(ids=added[start:start + self.batch_size])
            if before:
                self._upsert(col, [r.id for r in before], [r.text for r in before],
                             [r.metadata for r in before], [r.embedding for r in before])
        except Exception:  # the original error is what the user needs to see
            pass

    def _get(self, col: Any, ids: Sequence[str] | None = None, where: dict | None = None,
             include_embeddings: bool = False, include_documents: bool = True) -> list[StoredRecord]:
        include = ["metadatas"] + (["documents"] if include_documents else []) + \
            (["embeddings"] if include_embeddings else [])
        out: list[StoredRecord] = []
        offset = 0
        try:
            while True:
                if ids is not None:
                    batch_ids = list(ids)[offset:offset + PAGE_SIZE]
                    if not batch_ids:
                        break
                    res = col.get(ids=batch_ids, include=include)
                else:
                    res = col.get(where=where, include=include, limit=PAGE_SIZE, offset=offset)
                out.extend(_records(res, include_embeddings, include_documents))
                if ids is None and len(res["ids"]) < PAGE_SIZE:
                    break
                offset += PAGE_SIZE
        except Exception as exc:
            raise StoreError(f"{self.location}: reading {col.name} failed: {_one_line(exc)}") from exc
        return out


def _records(res: dict, with_embeddings: bool, with_documents: bool) -> list[StoredRecord]:
    embs = res.get("embeddings") if with_embeddings else None
    docs = res.get("documents") if with_documents else None
    return [StoredRecord(rid, (docs[i] or "") if docs is not None else "", dict(res["metadatas"][i] or {}),
                         [float(x) for x in embs[i]] if embs is not None else None)
            for i, rid in enumerate(res["ids"])]


def _where(**fields: str | None) -> dict | None:
    clauses = [{k: v} for k, v in fields.items() if v is not None]
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _check_schema(col: Any, location: str) -> None:
    meta = dict(col.metadata or {})
    found = meta.get("chiplore_schema")
    if found is None:
        if col.count() == 0:
            return
        raise StoreError(f"{location}: collection {col.name!r} was not written by chiplore (no schema version)")
    if int(found) > SCHEMA_VERSION:
        raise StoreError(f"{location}: written by a newer chiplore (store schema {found}, this version reads "
                         f"{SCHEMA_VERSION}); upgrade chiplore or point CHIPLORE_HOME elsewhere")
    if int(found) < SCHEMA_VERSION:
        raise StoreError(f"{location}: written by an older chiplore (store schema {found}, this version reads "
                         f"{SCHEMA_VERSION}); re-onboard into a fresh CHIPLORE_HOME")


def _chroma_settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


SQLITE_FILE = "chroma.sqlite3"
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: Vector-index files of a chromadb segment folder that are never empty once written (``link_lists.bin`` may be).
_INDEX_FILES = ("header.bin", "data_level0.bin", "length.bin", "index_metadata.pickle")
_FRESH_HOME = ("chiplore will not write over it; keep it for inspection, point CHIPLORE_HOME at a fresh folder "
               "and onboard the documents again")


def check_store_files(path: Path) -> None:
    """Refuse an embedded store whose files exist but are damaged, before chromadb opens (and rebuilds over) it.

    Checks: ``chroma.sqlite3`` starts with the SQLite header (an empty or overwritten file would be silently
    replaced by a new, empty database); segment folders (vector indexes) are not left without that database; and
    the vector-index files of each segment folder that exist are not empty.

    Raises:
        StoreError: one line naming the damaged file and what to do.
    """
    location = f"knowledge store {path}"
    db = path / SQLITE_FILE
    segments = sorted(p for p in path.iterdir() if p.is_dir() and _is_uuid(p.name)) if path.is_dir() else []
    if db.exists():
        try:
            with open(db, "rb") as fh:
                head = fh.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            raise StoreError(f"{location}: cannot read {db} ({exc.strerror or exc})") from exc
        if head != _SQLITE_MAGIC:
            what = "is empty" if not head else "is not a SQLite database"
            raise StoreError(f"{location}: {db} {what} (damaged store); {_FRESH_HOME}")
    elif segments:
        raise StoreError(f"{location}: {db} is missing but vector indexes remain in {segments[0]} "
                         f"(damaged store); {_FRESH_HOME}")
    for folder in segments:
        for name in _INDEX_FILES:
            file = folder / name
            if file.is_file() and file.stat().st_size == 0:
                raise StoreError(f"{location}: vector index file {file} is empty (damaged store); {_FRESH_HOME}")


def _is_uuid(name: str) -> bool:
    try:
        uuid.UUID(name)
    except ValueError:
        return False
    return True


def _persistent_client(home: Path | None) -> tuple[Any, str]:
    path = (Path(home) if home is not None else settings.chiplore_home()) / "store"
    location = f"knowledge store {path}"
    check_store_files(path)
    try:
        import chromadb

        path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(path), settings=_chroma_settings()), location
    except Exception as exc:
        raise StoreError(f"{location}: cannot open: {_one_line(exc)}") from exc


def _http_client(url: str) -> tuple[Any, str]:
    parsed = urlparse(url if "://" in url else f"http://{url}")
    location = f"Chroma server {url}"
    if not parsed.hostname:
        raise StoreError(f"CHIPLORE_CHROMA_URL={url!r}: expected http://HOST:PORT")
    try:
        import chromadb

        port = parsed.port or (443 if parsed.scheme == "https" else 8000)
        client = chromadb.HttpClient(host=parsed.hostname, port=port, ssl=parsed.scheme == "https",
                                     settings=_chroma_settings())
        client.heartbeat()
    except Exception as exc:
        raise StoreError(f"{location}: unreachable ({_one_line(exc)}); start it with "
                         "`chroma run --path DIR --host HOST --port PORT` or unset CHIPLORE_CHROMA_URL") from exc
    return client, location


def _max_batch_size(client: Any, location: str) -> int:
    try:
        return max(1, int(client.get_max_batch_size()))
    except Exception as exc:
        raise StoreError(f"{location}: cannot read the maximum batch size: {_one_line(exc)}") from exc


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] if text else type(exc).__name__
