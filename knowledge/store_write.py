"""Writes of the knowledge store: journaled per source, checked against the vector index, rolled back on failure.

Part of `knowledge.store`: `StoreWrites` is mixed into `knowledge.store.KnowledgeStore` and uses its collections,
locks (`writing`, `chroma`), journal and embedder (see that module's docstring for the rules).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core.errors import StoreError
from knowledge.journal import JournalEntry
from knowledge.store_files import REPAIR_HINT, one_line
from knowledge.store_index import all_ids, delete_ids, present_ids, upsert, vectors_of
from knowledge.store_records import ReplaceResult, StoredRecord, chunk_metadata, index_text, sources_of, where

if TYPE_CHECKING:
    from knowledge.types import Chunk

#: Version of the store's layout, recorded in each collection's metadata (``chiplore_schema``).
SCHEMA_VERSION = 1


class StoreWrites:
    """The writing half of `knowledge.store.KnowledgeStore`."""

    # ------------------------------------------------------------------ writing
    def upsert_chunks(self, chunks: Sequence[Chunk], collection: str = "chunks",
                      embeddings: Sequence[Sequence[float]] | None = None) -> int:
        """Insert or overwrite `chunks` by id; returns the number written.

        Raises:
            StoreError: the store's index is damaged, or the write failed (records written by this call are rolled
                back where possible). LockBusyError: another writer holds the store and `wait` is False.
        """
        if not chunks:
            return 0
        ids = [c.id for c in chunks]
        if len(set(ids)) != len(ids):
            raise StoreError(f"{collection}: duplicate chunk ids in one upsert")
        with self.writing(f"writing {len(ids)} record(s) to {collection}"):
            col = self._writable(collection)
            embeddings = list(embeddings) if embeddings is not None else self.embed_chunks(chunks)
            with self.chroma():
                before = self._get(col, ids=ids)
                before_vectors = vectors_of(col, [r.id for r in before], self.location)
                try:
                    upsert(col, self.batch_size, ids, [c.text for c in chunks], [chunk_metadata(c) for c in chunks],
                           embeddings)
                    self._verify(col, ids)
                except Exception as exc:
                    self._restore(col, before, before_vectors, ids)
                    raise StoreError(f"{self.location}: writing {collection} failed: {one_line(exc)}") from exc
                self._bump_revision(col)
        return len(ids)

    def replace_source(self, chip: str, source: str, chunks: Sequence[Chunk], collection: str = "chunks",
                       embeddings: Sequence[Sequence[float]] | None = None, *, sha256: str = "", path: str = "",
                       versions: dict[str, str] | None = None) -> ReplaceResult:
        """Make the records of (`chip`, `source`) exactly `chunks`, journaled (`knowledge.journal`).

        Records already stored identically (same id, text and metadata, vector in the index) are not written again;
        a record whose index text is unchanged keeps its stored vector; only the others are embedded. The journal
        entry (`sha256`, `path`, `versions`, the ids) is begun before the first write and completed after the index
        returned every id. On a failure the source's previous records are restored (and its previous journal entry
        with them), so a file is stored completely or not at all; a killed process leaves the entry incomplete.

        Raises:
            StoreError: the store's index is damaged, or the write failed (after restoring the previous state).
            LockBusyError: another writer holds the store and `wait` is False.
        """
        new_ids = [c.id for c in chunks]
        if len(set(new_ids)) != len(new_ids):
            raise StoreError(f"{source}: duplicate chunk ids")
        with self.writing(f"writing {source} for chip {chip}"):
            col = self._writable(collection)
            with self.chroma():
                old = self._get(col, where=where(chip=chip, source=source))
                old_vectors = vectors_of(col, [r.id for r in old], self.location)
            old_by_id = {r.id: r for r in old}
            metas = [chunk_metadata(c) for c in chunks]
            todo = [i for i, (c, m) in enumerate(zip(chunks, metas))
                    if not (c.id in old_vectors and old_by_id[c.id].text == c.text and old_by_id[c.id].metadata == m)]
            vectors = [embeddings[i] for i in todo] if embeddings is not None else \
                self._vectors_for([chunks[i] for i in todo], old_by_id, old_vectors)
            new_set = set(new_ids)
            stale = [r.id for r in old if r.id not in new_set]
            entry = JournalEntry(collection, chip, source, sha256, list(new_ids), path=path,
                                 versions=dict(versions or {}))
            previous = self.journal.get(collection, chip, source) if self.journal else None
            if self.journal:
                self.journal.begin(entry)
            with self.chroma():
                try:
                    self._bump_revision(col)
                    upsert(col, self.batch_size, [new_ids[i] for i in todo], [chunks[i].text for i in todo],
                           [metas[i] for i in todo], vectors)
                    delete_ids(col, self.batch_size, stale, self._dim(), self.location)
                    self._verify(col, new_ids, where=where(chip=chip, source=source))
                except Exception as exc:
                    if self._restore(col, old, old_vectors, new_ids) and self.journal:
                        if previous is not None:
                            self.journal.put(previous)
                        else:
                            self.journal.remove(collection, chip, source)
                    raise StoreError(f"{self.location}: storing {source} failed, previous version kept: "
                                     f"{one_line(exc)}") from exc
                self._bump_revision(col)
            if self.journal:
                self.journal.complete(entry)
        return ReplaceResult(added=len(new_set - set(old_by_id)), removed=len(stale),
                             kept=len(new_set & set(old_by_id)), written=len(todo))

    def delete_source(self, chip: str, source: str, collection: str = "chunks") -> int:
        """Delete every record of (`chip`, `source`) and its journal entry; returns how many were deleted."""
        removed = self.replace_source(chip, source, [], collection, embeddings=[]).removed
        if self.journal:
            self.journal.remove(collection, chip, source)
        return removed

    def source_complete(self, chip: str, source: str, ids: Sequence[str], collection: str = "chunks") -> bool:
        """Whether the records of (`chip`, `source`) are exactly `ids` and the vector index holds every one."""
        col = self.collection(collection)
        with self.chroma():
            if set(all_ids(col, where(chip=chip, source=source), self.location)) != set(ids):
                return False
            return len(present_ids(col, ids, self.location)) == len(set(ids))

    def index_gaps(self, collection: str = "chunks") -> list[StoredRecord]:
        """Records of `collection` whose vector the index lacks (text left empty; metadata as stored).

        Raises:
            StoreError: chromadb cannot read the collection or its index.
        """
        col = self.collection(collection)
        with self.chroma():
            ids = all_ids(col, location=self.location)
            present = present_ids(col, ids, self.location)
            lacking = [i for i in ids if i not in present]
            return self._get(col, ids=lacking, include_documents=False) if lacking else []

    def _vectors_for(self, chunks: Sequence[Chunk], old_by_id: dict[str, StoredRecord],
                     old_vectors: dict[str, Any]) -> list[Any]:
        """Vectors of `chunks`: the stored one where the record's index text is unchanged, else embedded."""
        out: list[list[float] | None] = []
        fresh: list[int] = []
        for i, c in enumerate(chunks):
            old = old_by_id.get(c.id)
            same = old is not None and c.id in old_vectors and \
                index_text(old.text, old.metadata) == index_text(c.text, chunk_metadata(c))
            out.append(old_vectors[c.id] if same else None)
            if not same:
                fresh.append(i)
        for i, vec in zip(fresh, self.embed_chunks([chunks[i] for i in fresh]) if fresh else []):
            out[i] = vec
        return out  # type: ignore[return-value]

    def _writable(self, collection: str) -> Any:
        """The collection, after checking the embedding width and (once per process, embedded store) that the
        index holds every record's vector, except records of interrupted writes, which their next write replaces.

        Raises:
            StoreError: another model's width, or a damaged index (the message names the sources and the repair).
        """
        col = self.collection(collection)
        meta = dict(col.metadata or {})
        dim = meta.get("embed_dim")
        if dim is not None and int(dim) != self._dim():
            raise StoreError(
                f"{self.location}: collection {collection!r} holds {dim}-d embeddings of {meta.get('embed_model')}, "
                f"but the configured model {self.embedder.model_name} gives {self._dim()}-d; "
                "use the same CHIPLORE_EMBED_MODEL or a fresh CHIPLORE_HOME")
        if self.embedded and collection not in self._index_checked:
            gaps = self.index_gaps(collection)
            interrupted = {(e.chip, e.source) for e in self.interrupted(collection)}
            foreign = [r for r in gaps if (r.metadata.get("chip"), r.metadata.get("source")) not in interrupted]
            if foreign:
                raise StoreError(f"{self.location}: the vector index of {collection!r} lacks {len(gaps)} of "
                                 f"{self.count(collection)} records' vectors ({sources_of(foreign)}; damaged index); "
                                 f"{REPAIR_HINT}")
            self._index_checked.add(collection)
        return col

    def _dim(self) -> int:
        return int(self.embedder.dim)

    def _verify(self, col: Any, ids: Sequence[str], where: dict | None = None) -> None:
        """Check that the records (of `where`, if given, exactly) are `ids` and that the index returns each one."""
        stored = set(all_ids(col, where, self.location)) if where is not None else \
            {r.id for r in self._get(col, ids=ids, include_documents=False)}
        lacking = set(ids) - stored
        extra = stored - set(ids) if where is not None else set()
        unindexed = set(ids) - present_ids(col, ids, self.location)
        if lacking or extra or unindexed:
            raise StoreError(f"after the write {len(lacking)} record(s) are missing, {len(extra)} left over and "
                             f"{len(unindexed)} without a vector in the index")

    def _bump_revision(self, col: Any) -> None:
        meta = {k: v for k, v in dict(col.metadata or {}).items() if not k.startswith("hnsw:")}
        meta.update(chiplore_schema=SCHEMA_VERSION, chiplore_revision=uuid.uuid4().hex,
                    embed_model=str(self.embedder.model_name), embed_dim=self._dim())
        try:
            col.modify(metadata=meta)
        except Exception as exc:
            raise StoreError(f"{self.location}: cannot update collection metadata: {one_line(exc)}") from exc

    def _restore(self, col: Any, before: list[StoredRecord], vectors: dict[str, Any],
                 written_ids: Sequence[str]) -> bool:
        """Best-effort rollback: drop ids this write added, put back the records that were there before (with their
        vectors). True when everything was put back."""
        old_ids = {r.id for r in before}
        back = [r for r in before if r.id in vectors]
        try:
            delete_ids(col, self.batch_size, [i for i in written_ids if i not in old_ids], self._dim(), self.location)
            upsert(col, self.batch_size, [r.id for r in back], [r.text for r in back], [r.metadata for r in back],
                   [vectors[r.id] for r in back])
        except Exception:  # the original error is what the user needs to see
            return False
        return len(back) == len(before)
