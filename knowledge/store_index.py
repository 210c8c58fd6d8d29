"""What chromadb's vector index holds, read through its API, and writes that keep records and index in step.

chromadb (1.x, embedded) keeps records (ids, documents, metadata) and a write log in ``chroma.sqlite3`` and the
vectors in an HNSW index folder per collection. The two can disagree: a process that wrote the index from an older
view drops another process's vectors (chroma issues #1595, #551), and a kill while the index files are written tears
them. Observed with chromadb 1.5.9:

- ``get(ids, include=["embeddings"])`` fails as a whole ("Error getting embedding" / "Error finding id") when one of
  the ids has a record but no vector; bisecting the id list finds which (`vectors_of`).
- upserting such an id (same document and metadata, with a vector) puts its vector back;
- deleting such an id makes chromadb's log unappliable: every later call fails ("Failed to apply logs to the hnsw
  segment writer"). `delete_ids` therefore upserts a placeholder vector for it first, then deletes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.errors import StoreError
from knowledge.store_files import one_line

PAGE = 2000
#: chromadb's messages for an id whose record exists but whose vector the index lacks.
_MISSING = ("Error getting embedding", "Error finding id")


def is_missing_vector_error(exc: BaseException) -> bool:
    """Whether a chromadb error says that the index lacks a vector that a record has."""
    return any(m in str(exc) for m in _MISSING)


def vectors_of(col: Any, ids: Sequence[str], location: str = "") -> dict[str, Any]:
    """Vectors of `ids` that the index holds ({id: [dim] float32 numpy array}); ids with a record but no vector are
    left out.

    Raises:
        StoreError: chromadb fails for another reason (unreadable index files, unappliable log).
    """
    out: dict[str, Any] = {}
    ids = list(ids)
    for start in range(0, len(ids), PAGE):
        _probe(col, ids[start:start + PAGE], out, location, keep=True)
    return out


def present_ids(col: Any, ids: Sequence[str], location: str = "") -> set[str]:
    """The ids among `ids` whose vector the index holds (like `vectors_of`, without keeping the vectors).

    Raises:
        StoreError: as `vectors_of`.
    """
    out: dict[str, Any] = {}
    ids = list(ids)
    for start in range(0, len(ids), PAGE):
        _probe(col, ids[start:start + PAGE], out, location, keep=False)
    return set(out)


def _probe(col: Any, batch: list[str], out: dict[str, Any], location: str, keep: bool) -> None:
    if not batch:
        return
    try:
        res = col.get(ids=batch, include=["embeddings"])
    except Exception as exc:
        if not is_missing_vector_error(exc):
            raise StoreError(f"{location}: reading the vector index of {col.name!r} failed: {one_line(exc)}") \
                from exc
        if len(batch) > 1:
            half = len(batch) // 2
            _probe(col, batch[:half], out, location, keep)
            _probe(col, batch[half:], out, location, keep)
        return
    import numpy as np

    embs = res.get("embeddings")
    for i, rid in enumerate(res["ids"]):
        if embs is not None and embs[i] is not None:
            out[rid] = np.asarray(embs[i], dtype=np.float32) if keep else None


def all_ids(col: Any, where: dict | None = None, location: str = "") -> list[str]:
    """Every record id of `col` (matching `where`), in pages.

    Raises:
        StoreError: the records cannot be read.
    """
    out: list[str] = []
    offset = 0
    try:
        while True:
            res = col.get(where=where, include=[], limit=PAGE, offset=offset)
            out.extend(res["ids"])
            if len(res["ids"]) < PAGE:
                return out
            offset += PAGE
    except Exception as exc:
        raise StoreError(f"{location}: reading {col.name} failed: {one_line(exc)}") from exc


def upsert(col: Any, batch_size: int, ids: Sequence[str], docs: Sequence[str], metas: Sequence[dict],
           embs: Sequence[Sequence[float]]) -> None:
    """``col.upsert`` in batches of at most `batch_size` (chromadb's ``get_max_batch_size``)."""
    for start in range(0, len(ids), batch_size):
        end = start + batch_size
        col.upsert(ids=list(ids[start:end]), documents=list(docs[start:end]), metadatas=list(metas[start:end]),
                   embeddings=[[float(x) for x in e] for e in embs[start:end]])


def delete_ids(col: Any, batch_size: int, ids: Sequence[str], dim: int, location: str = "") -> None:
    """Delete `ids` from `col`; ids whose vector the index lacks get a placeholder vector first (module docstring)."""
    ids = list(ids)
    if not ids:
        return
    present = present_ids(col, ids, location)
    lacking = [i for i in ids if i not in present]
    if lacking:
        res = col.get(ids=lacking, include=["documents", "metadatas"])
        placeholder = [1.0] + [0.0] * (dim - 1)
        upsert(col, batch_size, res["ids"], [d or "" for d in res["documents"]],
               [m or {"placeholder": True} for m in res["metadatas"]], [placeholder] * len(res["ids"]))
    for start in range(0, len(ids), batch_size):
        col.delete(ids=ids[start:start + batch_size])
