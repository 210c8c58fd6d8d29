"""The shapes of what the knowledge store holds and returns, and how a chunk becomes a record.

Part of `knowledge.store` (which re-exports these names).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the store duck-types chunks: any object with these attributes works
    from knowledge.types import Chunk


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
    """Outcome of `KnowledgeStore.replace_source`: chunk ids added, removed and kept, and how many records were
    written (0 when the store already held exactly these records)."""

    added: int
    removed: int
    kept: int
    written: int = 0


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


def records_of(res: dict, with_embeddings: bool, with_documents: bool) -> list[StoredRecord]:
    embs = res.get("embeddings") if with_embeddings else None
    docs = res.get("documents") if with_documents else None
    return [StoredRecord(rid, (docs[i] or "") if docs is not None else "", dict(res["metadatas"][i] or {}),
                         [float(x) for x in embs[i]] if embs is not None else None)
            for i, rid in enumerate(res["ids"])]


def where(**fields: str | None) -> dict | None:
    clauses = [{k: v} for k, v in fields.items() if v is not None]
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def sources_of(records: Sequence[StoredRecord], limit: int = 3) -> str:
    """``a.md (chip x): 12, b.pdf (chip y): 3`` for the (chip, source) pairs of `records`, most first."""
    counts: dict[tuple[str, str], int] = {}
    for r in records:
        key = (str(r.metadata.get("source", "?")), str(r.metadata.get("chip", "?")))
        counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{s} (chip {c}): {n}" for (s, c), n in ranked[:limit])
    return text + (f" and {len(ranked) - limit} more source(s)" if len(ranked) > limit else "")
