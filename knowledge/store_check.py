"""`chiplore store check` and `chiplore store repair`: records against the vector index and the journal, per source.

Check (reads only): for each collection, the records chromadb holds, how many of them have a vector in the index
(`knowledge.store_index`), and per source whether its records are exactly what its journal entry
(`knowledge.journal`) says; index files that are empty; collections chromadb cannot read at all.

Repair rebuilds what chromadb's records allow, without re-embedding what is intact:

1. a collection whose index files are damaged or unreadable: the vectors chromadb can still return are read, then
   its index folder is moved aside (to ``$CHIPLORE_HOME/store-damaged/``, kept for inspection) and chromadb starts
   an empty index for it over the same records (in ``chroma.sqlite3``);
2. every record without a vector gets one back in place (same id, text and metadata): from the vector cache
   (`knowledge.embed_cache`, exact), else the vector read in step 1, else embedded again from the record's text
   (`knowledge.store.index_text`, the text it was embedded from). Records whose vector is in the index are not
   touched.

Interrupted onboardings (incomplete journal entries) are repaired by onboarding the file again, which the ingest
layer does (`ingest.onboard.repair_interrupted`); `chiplore store repair` runs both.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from core.errors import StoreError
from knowledge.store import COLLECTIONS, KnowledgeStore, index_text
from knowledge.store_files import damaged_index_files, one_line, vector_segments
from knowledge.store_index import all_ids, present_ids, upsert, vectors_of


@dataclass
class SourceCheck:
    """One (collection, chip, source): records stored, how many have a vector, its journal state and count."""

    collection: str
    chip: str
    source: str
    records: int = 0
    indexed: int = 0
    journal: str = "none"
    expected: int | None = None
    problems: list[str] = field(default_factory=list)


@dataclass
class CollectionCheck:
    """One collection: records, records with a vector, and `error` when chromadb cannot read it."""

    name: str
    records: int = 0
    indexed: int = 0
    error: str = ""


@dataclass
class StoreCheck:
    """The result of `check_store`; `problems` lists one line per problem (empty: healthy)."""

    location: str
    collections: list[CollectionCheck] = field(default_factory=list)
    sources: list[SourceCheck] = field(default_factory=list)
    damaged_files: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        out = [f"index file {f} is empty" for f in self.damaged_files]
        out += [f"collection {c.name!r}: {c.error}" for c in self.collections if c.error]
        out += [f"{s.source} (chip {s.chip}, {s.collection}): {p}" for s in self.sources for p in s.problems]
        return out

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """The ``chiplore store check --json`` object (docs/cli-json.md)."""
        return {"store": self.location, "ok": self.ok, "problems": self.problems,
                "damaged_files": self.damaged_files, "collections": [asdict(c) for c in self.collections],
                "sources": [asdict(s) for s in self.sources]}


def check_store(store: KnowledgeStore) -> StoreCheck:
    """Compare records, vector index and journal of every collection (module docstring); reads only."""
    report = StoreCheck(store.location)
    if store.embedded:
        report.damaged_files = [str(p) for p in damaged_index_files(store.place.folder)]
    journal = {(e.collection, e.chip, e.source): e for e in store.journal.entries()} if store.journal else {}
    interrupted = {(e.collection, e.chip, e.source) for e in store.interrupted(None)}
    for name in COLLECTIONS:
        check = CollectionCheck(name)
        report.collections.append(check)
        try:
            col = store.collection(name)
            with store.chroma():
                records = store._get(col, include_documents=False)
                present = present_ids(col, [r.id for r in records], store.location)
        except StoreError as exc:
            check.error = f"chromadb cannot read it ({exc})"
            continue
        check.records, check.indexed = len(records), len(present)
        by_source: dict[tuple[str, str], list[str]] = {}
        for r in records:
            key = (str(r.metadata.get("chip", "")), str(r.metadata.get("source", "")))
            by_source.setdefault(key, []).append(r.id)
        keys = set(by_source) | {(c, s) for (col, c, s) in journal if col == name}
        for chip, source in sorted(keys):
            report.sources.append(_source_check(name, chip, source, by_source.get((chip, source), []), present,
                                                journal.get((name, chip, source)),
                                                (name, chip, source) in interrupted))
    return report


def _source_check(collection: str, chip: str, source: str, ids: list[str], present: set[str], entry: Any,
                  interrupted: bool) -> SourceCheck:
    out = SourceCheck(collection, chip, source, records=len(ids), indexed=sum(1 for i in ids if i in present))
    if out.indexed < out.records:
        out.problems.append(f"{out.records - out.indexed} of {out.records} records have no vector in the index")
    if entry is None:
        return out
    out.expected, out.journal = entry.count, entry.state
    if interrupted:
        out.problems.append(f"its onboarding (pid {entry.pid}, started {entry.started_at}) was interrupted: "
                            f"{len(set(ids) & set(entry.ids))} of {entry.count} chunks stored; onboard it again "
                            "or run `chiplore store repair`")
    elif entry.complete and set(ids) != set(entry.ids):
        missing, extra = len(set(entry.ids) - set(ids)), len(set(ids) - set(entry.ids))
        out.problems.append(f"its records differ from its journal entry ({missing} missing, {extra} not in it); "
                            "onboard it again")
    elif not entry.complete:
        out.journal = "in progress"
    return out


@dataclass
class RepairReport:
    """What `repair_store` did: index folders moved aside, and vectors put back per origin."""

    moved: list[str] = field(default_factory=list)
    from_cache: int = 0
    salvaged: int = 0
    embedded: int = 0
    intact: int = 0

    @property
    def restored(self) -> int:
        return self.from_cache + self.salvaged + self.embedded


def repair_store(store: KnowledgeStore) -> tuple[KnowledgeStore, RepairReport]:
    """Rebuild damaged or incomplete vector indexes from the records (module docstring), holding the writer lock.

    Args:
        store: opened with ``check_files=False`` (so a store with empty index files can be opened at all).

    Returns:
        (the store, reopened when an index folder was moved aside; the report).

    Raises:
        StoreError: chromadb cannot read the records, or the index still lacks vectors after the repair (the
            message says what to do).
    """
    report = RepairReport()
    with store.writing("repairing the store"):
        salvaged: dict[str, dict[str, list[float]]] = {}
        if store.embedded:
            store, salvaged = _move_damaged(store, report)
        for name in COLLECTIONS:
            _refill(store, name, salvaged.get(name, {}), report)
    return store, report


def _move_damaged(store: KnowledgeStore, report: RepairReport) -> tuple[KnowledgeStore,
                                                                         dict[str, dict[str, list[float]]]]:
    """Move aside the index folder of every collection with empty index files or that chromadb cannot read,
    after reading the vectors it still returns; reopen the store when one was moved."""
    folder = store.place.folder
    segments = vector_segments(folder)
    damaged = {p.parent.name for p in damaged_index_files(folder)}
    salvaged: dict[str, dict[str, list[float]]] = {}
    for name in COLLECTIONS:
        seg = segments.get(name)
        if seg is None or not (folder / seg).is_dir():
            continue
        try:
            col = store.collection(name)
            with store.chroma():
                vectors = vectors_of(col, all_ids(col, location=store.location), store.location)
        except StoreError:
            vectors, damaged = {}, damaged | {seg}
        if seg in damaged:
            salvaged[name] = vectors
            stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
            target = store.place.home / "store-damaged" / f"{stamp}-{name}-{seg}"
            target.parent.mkdir(parents=True, exist_ok=True)
            with store.chroma():
                shutil.move(str(folder / seg), str(target))
            report.moved.append(str(target))
    if not report.moved:
        return store, salvaged
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()  # chromadb keeps the old index open in this process otherwise
    reopened = KnowledgeStore.open(store.place.home, url="", embedder=store._embedder, check_files=False)
    reopened.wait, reopened.on_wait = store.wait, store.on_wait
    return reopened, salvaged


def _refill(store: KnowledgeStore, name: str, salvaged: dict[str, list[float]], report: RepairReport) -> None:
    """Give every record of collection `name` that lacks a vector its vector back, in place."""
    col = store.collection(name)
    with store.chroma():
        ids = all_ids(col, location=store.location)
        present = present_ids(col, ids, store.location)
    report.intact += len(present)
    lacking = [i for i in ids if i not in present]
    if not lacking:
        return
    with store.chroma():
        records = store._get(col, ids=lacking)
    texts = [index_text(r.text, r.metadata) for r in records]
    cache = getattr(store.embedder, "cache", None)
    dim = int(store.embedder.dim)
    vectors = cache.get(texts, dim) if cache is not None else [None] * len(records)
    report.from_cache += sum(v is not None for v in vectors)
    for i, r in enumerate(records):
        if vectors[i] is None and salvaged.get(r.id) is not None and len(salvaged[r.id]) == dim:
            vectors[i] = salvaged[r.id]
            report.salvaged += 1
    todo = [i for i, v in enumerate(vectors) if v is None]
    for i, vec in zip(todo, store.embedder.embed([texts[i] for i in todo]) if todo else []):
        vectors[i] = vec
    report.embedded += len(todo)
    with store.chroma():
        try:
            upsert(col, store.batch_size, [r.id for r in records], [r.text for r in records],
                   [r.metadata for r in records], vectors)
            left = len(ids) - len(present_ids(col, ids, store.location))
        except Exception as exc:
            raise StoreError(f"{store.location}: repairing the index of {name!r} failed: {one_line(exc)}; keep the "
                             "store for inspection, point CHIPLORE_HOME at a fresh folder and onboard again") from exc
    if left:
        raise StoreError(f"{store.location}: after the repair {left} records of {name!r} still have no vector; keep "
                         "the store for inspection, point CHIPLORE_HOME at a fresh folder and onboard again")
