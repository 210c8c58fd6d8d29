"""The knowledge store: chromadb collections ``chunks`` (document chunks) and ``findings`` (verified results).

Embedded ``chromadb.PersistentClient`` under ``$CHIPLORE_HOME/store`` by default; a Chroma server
(``chroma run --path DIR --host 127.0.0.1 --port N``) when ``CHIPLORE_CHROMA_URL`` is set: the way to share one
store between machines (the server is one process, so its writes never race). Telemetry is off. Vectors always
come from `knowledge.embedder` (through `knowledge.embed_cache`) and are passed explicitly (collections are
created with ``embedding_function=None``), so chromadb never downloads its default model.

chromadb's embedded client is not safe for several processes (chroma issues #1595, #551): a process that writes
the vector index from its own view drops the vectors another process added, and even a reader applies chromadb's
write log and may write the index. So, for an embedded store (`knowledge.store_files`):

- one writer at a time: every write holds ``chiplore-write.lock`` (`writing`; onboarding holds it for one file's
  whole onboarding, `record_finding` for the record and the pattern graph). A second writer waits, saying for
  whom, or fails at once when `KnowledgeStore.wait` is False (``--no-wait``);
- one chromadb call at a time: every call of this module, reads included, holds ``chiplore-index.lock`` for its
  duration only, so readers go on during an onboarding and wait at most for one write phase;
- a write journal (`knowledge.journal`) per source, completed only after the index returns every id;
- no write over a damaged index: the first write of a process checks that every record has its vector
  (`knowledge.store_index`) and refuses otherwise, naming the sources (`chiplore store repair` fixes it).

Each collection's metadata records ``chiplore_schema`` (`SCHEMA_VERSION`), the embedding model and
width, and ``chiplore_revision``, a token that changes on every write (retrieval keys its on-disk BM25 cache on it).
Records carry string/number metadata: ``chip``, ``source``, ``section``, ``kind``, ``page`` (absent when the
format has no pages) and whatever the writer adds (``file_sha256``, ``context``, ...).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import settings
from core.errors import LockBusyError, StoreError
from core.locks import Holder, hold, is_held, read_holder
from knowledge.journal import JournalEntry, WriteJournal
from knowledge.store_files import (  # noqa: F401  check_store_files is part of this module's API
    REPAIR_HINT,
    StorePlace,
    check_store_files,
    chroma_settings,
    embedded_place,
    http_client,
    one_line,
    persistent_client,
    server_place,
)
from knowledge.store_index import all_ids
from knowledge.store_records import (  # noqa: F401  re-exported: part of this module's API
    ChipSummary,
    ReplaceResult,
    StoredRecord,
    chunk_metadata,
    index_text,
    records_of,
    where,
)
from knowledge.store_write import SCHEMA_VERSION, StoreWrites

if TYPE_CHECKING:  # the store duck-types chunks: any object with these attributes works
    from knowledge.types import Chunk

COLLECTIONS = ("chunks", "findings")
PAGE_SIZE = 2000
_chroma_settings = chroma_settings  # the name tests and scripts used before the move to knowledge.store_files
_one_line = one_line


class KnowledgeStore(StoreWrites):
    """chromadb-backed store of chunks and findings with deterministic ids, upserts, a schema version, an
    inter-process writer lock and a write journal (module docstring).

    Open with `KnowledgeStore.open()`. Writes go through `upsert_chunks` / `replace_source`; both embed before
    writing anything, write in batches within ``client.get_max_batch_size()``, check that the index returns every
    id written, and bump the collection revision.

    Attributes:
        wait: a write waits for another writer (True, the default) or fails at once with `LockBusyError`.
        on_wait: called once with the current holder when a write has to wait (default: one line on stderr).
    """

    def __init__(self, client: Any, location: str, embedder: Any = None, place: StorePlace | None = None) -> None:
        self.client = client
        self.location = location
        self.place = place
        self.journal = WriteJournal(place.journal) if place is not None else None
        self._embedder = embedder
        self._collections: dict[str, Any] = {}
        self._index_checked: set[str] = set()
        self.wait = True
        self.on_wait: Callable[[Holder | None], None] = self._tell_waiting
        self.batch_size = _max_batch_size(client, location)

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, home: Path | None = None, url: str | None = None, embedder: Any = None,
             check_files: bool = True) -> KnowledgeStore:
        """Open the store: a Chroma server if `url` (default ``$CHIPLORE_CHROMA_URL``) is set, else the embedded
        store under `home` (default ``$CHIPLORE_HOME``) ``/store``.

        Args:
            check_files: refuse damaged index files before chromadb reads them (`check_store_files`); only
                `knowledge.store_repair` opens a store without this check.

        Raises:
            StoreError: the server is unreachable, the store cannot be opened, its files are damaged
                (`check_store_files`), or it was written by a newer chiplore (schema version above `SCHEMA_VERSION`).
        """
        url = url if url is not None else settings.chroma_url()
        if url:
            place = server_place(url, home)
            client = http_client(url)
        else:
            place = embedded_place(home)
            try:
                with hold(place.index_lock, "opening the store"):
                    client = persistent_client(place, check=check_files)
            except StoreError as exc:
                raise StoreError(f"{exc}{_interrupted_note(place)}") from exc
        store = cls(client, place.location, embedder, place)
        for name in COLLECTIONS:
            store.collection(name)
        return store

    @property
    def embedded(self) -> bool:
        """True for an embedded store (a local chromadb folder), False for a Chroma server."""
        return self.place is not None and self.place.embedded

    def collection(self, name: str) -> Any:
        """The chromadb collection `name` (created on first use), after checking its schema version."""
        if name not in COLLECTIONS:
            raise StoreError(f"unknown collection {name!r}; collections: {', '.join(COLLECTIONS)}")
        if name not in self._collections:
            try:
                with self.chroma():
                    col = self.client.get_or_create_collection(
                        name, embedding_function=None, metadata={"chiplore_schema": SCHEMA_VERSION},
                        configuration={"hnsw": {"space": "cosine"}},
                    )
                    _check_schema(col, self.location)
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(f"{self.location}: cannot open collection {name!r}: {_one_line(exc)}") from exc
            self._collections[name] = col
        return self._collections[name]

    # ------------------------------------------------------------------ locks
    @contextlib.contextmanager
    def writing(self, what: str) -> Iterator[None]:
        """Hold the store's writer lock for the ``with`` block (re-entrant in this process); `what` is what others
        are told while they wait (``onboarding of a.pdf for chip x``).

        Raises:
            LockBusyError: another process writes and `wait` is False; the message names it and its pid.
        """
        if self.place is None:
            yield
            return
        try:
            with hold(self.place.write_lock, what, wait=self.wait, on_wait=self.on_wait):
                yield
        except LockBusyError as exc:
            if "is locked by" not in str(exc):
                raise
            who = str(exc).split(" is locked by ", 1)[1]
            raise LockBusyError(f"{self.location} is busy: {who} (lock {self.place.write_lock}); run again when "
                                "it is done, or without --no-wait to wait for it") from None

    def chroma(self) -> contextlib.AbstractContextManager:
        """The inter-process lock every chromadb call of an embedded store holds (a no-op for a server)."""
        if not self.embedded:
            return contextlib.nullcontext()
        return hold(self.place.index_lock, "a chromadb call")

    def _tell_waiting(self, holder: Holder | None) -> None:
        who = holder.describe() if holder else "another process"
        print(f"waiting for {who} ({self.location})", file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ embedding
    @property
    def embedder(self) -> Any:
        """The document embedder: the configured model behind the vector cache (`knowledge.embed_cache`), loaded
        only when a text is not cached; an embedder given to `open` is used as it is."""
        if self._embedder is None:
            from knowledge.embed_cache import CachedEmbedder, cache_disabled
            from knowledge.embedder import get_embedder

            home = self.place.home if self.place is not None else None
            self._embedder = get_embedder() if cache_disabled() else CachedEmbedder(home=home)
        return self._embedder

    @property
    def query_embedder(self) -> Any:
        """The loaded model itself (questions are embedded without the cache)."""
        return getattr(self.embedder, "model", self.embedder)

    def embed_chunks(self, chunks: Sequence[Chunk]) -> list[list[float]]:
        """Embed `index_text` of each chunk: [n_chunks, dim] float32 lists. Checks the store's embedding width."""
        return self.embedder.embed([index_text(c.text, chunk_metadata(c)) for c in chunks])

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed raw texts (questions) with the loaded model: [n, dim]."""
        return self.query_embedder.embed(list(texts))

    # ------------------------------------------------------------------ reading
    def records(self, collection: str = "chunks", chip: str | None = None, source: str | None = None,
                include_embeddings: bool = False) -> list[StoredRecord]:
        """All records of `collection`, optionally of one chip and/or source (paged reads)."""
        col = self.collection(collection)
        with self.chroma():
            return self._get(col, where=where(chip=chip, source=source), include_embeddings=include_embeddings)

    def ids(self, collection: str = "chunks") -> list[str]:
        """Every record id of `collection`."""
        col = self.collection(collection)
        with self.chroma():
            return all_ids(col, location=self.location)

    def query(self, embedding: Sequence[float], collection: str = "chunks", k: int = 10,
              chip: str | None = None) -> list[tuple[StoredRecord, float]]:
        """Nearest records to `embedding` ([dim] floats) by cosine distance (0 = identical), best first.

        Raises:
            StoreError: the query failed, or the vector index returned fewer records than the store holds (a
                damaged index would otherwise silently drop dense retrieval).
        """
        col = self.collection(collection)
        with self.chroma():
            stored = self._count(col, chip)
            n = min(k, stored)
            if n <= 0:
                return []
            try:
                res = col.query(query_embeddings=[list(embedding)], n_results=n, where=where(chip=chip),
                                include=["documents", "metadatas", "distances"])
            except Exception as exc:
                raise StoreError(f"{self.location}: query on {collection} failed: {_one_line(exc)}; "
                                 f"{self._damage_hint(collection)}") from exc
        if len(res["ids"][0]) < n:
            raise StoreError(
                f"{self.location}: the vector index of {collection!r} returned {len(res['ids'][0])} of {n} nearest "
                f"records although {stored} are stored (damaged index files); {self._damage_hint(collection)}")
        return [(StoredRecord(i, d or "", dict(m or {})), float(dist)) for i, d, m, dist in
                zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0])]

    def interrupted(self, collection: str | None = "chunks") -> list[JournalEntry]:
        """Journal entries of writes that did not finish and whose writer no longer holds the writer lock (their
        records may be partial)."""
        if self.journal is None:
            return []
        lock = self.place.write_lock

        def in_progress(entry: JournalEntry) -> bool:
            holder = read_holder(lock)
            return holder is not None and holder.pid == entry.pid and is_held(lock)

        return self.journal.incomplete(collection, in_progress)

    def _damage_hint(self, collection: str) -> str:
        broken = self.interrupted(collection)
        if broken:
            names = ", ".join(f"{e.source} (chip {e.chip})" for e in broken[:3])
            return f"its onboarding of {names} was interrupted: onboard it again, or run `chiplore store repair`"
        return REPAIR_HINT

    def count(self, collection: str = "chunks", chip: str | None = None) -> int:
        """Number of records in `collection` (of `chip` if given)."""
        col = self.collection(collection)
        with self.chroma():
            return self._count(col, chip)

    def _count(self, col: Any, chip: str | None) -> int:
        try:
            if chip is None:
                return int(col.count())
            return len(col.get(where=where(chip=chip), include=[])["ids"])
        except Exception as exc:
            raise StoreError(f"{self.location}: cannot count {col.name}: {_one_line(exc)}{_index_hint(exc)}") from exc

    def chips(self) -> list[ChipSummary]:
        """Every chip with records, sorted by name, with its document, chunk and finding counts."""
        docs: dict[str, set[str]] = {}
        chunks: dict[str, int] = {}
        findings: dict[str, int] = {}
        cols = [self.collection("chunks"), self.collection("findings")]
        with self.chroma():
            chunk_records = self._get(cols[0], include_documents=False)
            finding_records = self._get(cols[1], include_documents=False)
        for rec in chunk_records:
            chip = str(rec.metadata.get("chip", ""))
            docs.setdefault(chip, set()).add(str(rec.metadata.get("source", "")))
            chunks[chip] = chunks.get(chip, 0) + 1
        for rec in finding_records:
            chip = str(rec.metadata.get("chip", ""))
            findings[chip] = findings.get(chip, 0) + 1
        names = sorted(set(chunks) | set(findings))
        return [ChipSummary(c, len(docs.get(c, ())), chunks.get(c, 0), findings.get(c, 0)) for c in names]

    def source_metadata(self, chip: str, source: str, collection: str = "chunks") -> list[dict[str, Any]]:
        """Metadata of every stored record of (`chip`, `source`)."""
        col = self.collection(collection)
        with self.chroma():
            return [r.metadata for r in self._get(col, where=where(chip=chip, source=source),
                                                  include_documents=False)]

    def revision(self, collection: str = "chunks") -> str:
        """A token that changes whenever `collection` is written (fresh read from the server or disk)."""
        try:
            with self.chroma():
                meta = self.client.get_collection(collection, embedding_function=None).metadata or {}
        except Exception as exc:
            raise StoreError(f"{self.location}: cannot read collection {collection!r}: {_one_line(exc)}") from exc
        return f"{meta.get('chiplore_revision', 'r0')}-{self.count(collection)}"

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
                out.extend(records_of(res, include_embeddings, include_documents))
                if ids is None and len(res["ids"]) < PAGE_SIZE:
                    break
                offset += PAGE_SIZE
        except Exception as exc:
            raise StoreError(f"{self.location}: reading {col.name} failed: {_one_line(exc)}{_index_hint(exc)}") \
                from exc
        return out


def _index_hint(exc: BaseException) -> str:
    """`REPAIR_HINT` after a chromadb error that says its vector index cannot be loaded (else nothing)."""
    return f"; {REPAIR_HINT}" if "hnsw" in str(exc).lower() else ""


def _interrupted_note(place: StorePlace) -> str:
    """``; interrupted onboarding: a.pdf (chip x)`` for the journal's unfinished writes whose writer is gone."""
    if is_held(place.write_lock):
        return ""
    broken = [e for e in WriteJournal(place.journal).incomplete(None, lambda e: False)]
    if not broken:
        return ""
    names = ", ".join(f"{e.source} (chip {e.chip})" for e in broken[:3])
    return f"; interrupted onboarding: {names}" + (f" and {len(broken) - 3} more" if len(broken) > 3 else "")


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


def _max_batch_size(client: Any, location: str) -> int:
    try:
        return max(1, int(client.get_max_batch_size()))
    except Exception as exc:
        raise StoreError(f"{location}: cannot read the maximum batch size: {_one_line(exc)}") from exc


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] if text else type(exc).__name__
