"""Hybrid retrieval: dense (chromadb, cosine) + keyword (BM25 via bm25s), fused by reciprocal rank.

Reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009): score(d) = sum over ranked lists of
1 / (RRF_K + rank(d)), rank starting at 1, RRF_K = 60. Each list (dense and BM25, per collection) contributes its
top `candidates` records, after the chip filter. A count question ("How many X ...") adds a third list, the
candidate chunks that state a count of X in their fused order (`knowledge.answer_type`).

The BM25 index is built from the stored records (the same ``context + text`` that is embedded), cached on disk
under ``$CHIPLORE_HOME/cache/bm25/<collection>/<key>/`` where key = hash(store location, collection revision,
tokenizer version), and memoized in the process; any write to the collection changes its revision, so a stale
index is never used.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core import settings
from core.errors import BadInputError
from core.text import normalize_text, printable
from knowledge.answer_type import asked_count_term, states_count
from knowledge.store import COLLECTIONS, KnowledgeStore, index_text

RRF_K = 60
#: Most passages one search returns (each ranked list then holds up to 10 x MAX_K candidates).
MAX_K = 100
MAX_ROWS_PER_TABLE = 2
TOKENIZER_VERSION = "1"
_TOKEN = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
_NUMBER_UNIT = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([a-z]+)$")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
# English function words and question words (NLTK's English list, abridged); they carry no topical signal.
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both but
by can could did do does doing down during each few for from further had has have having he her here hers herself
him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or
other our ours ourselves out over own same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up very was we were what when where which while who whom why
will with would you your yours yourself yourselves much many does also per via using use used may might must shall
""".split())


@dataclass(frozen=True)
class Hit:
    """One retrieved record with provenance.

    Attributes:
        text: the chunk text as stored; chip, source, page (1-based, None if not paginated), section (heading path).
        score: fused reciprocal-rank score (higher is better; at most 2 / (RRF_K + 1) per collection, 3 / (RRF_K + 1)
            for a chunk that states the count a count question asks for).
        collection: ``chunks`` or ``findings``; id: the record id; kind: prose | table_row | caption | finding ...
        dense_rank / keyword_rank: 1-based rank in each list, None if absent from it.
    """

    text: str
    chip: str
    source: str
    page: int | None
    section: str
    score: float
    collection: str
    id: str
    kind: str = ""
    dense_rank: int | None = None
    keyword_rank: int | None = None

    def cite(self) -> str:
        """Citation such as ``amd-cdna-3-white-paper.pdf p.10 > AMD CDNA 3 ARCHITECTURE MEMORY``, on one line:
        control characters of a file name or heading are escaped (`core.text.printable`)."""
        loc = f" p.{self.page}" if self.page is not None else ""
        sec = f" > {self.section}" if self.section else ""
        return printable(f"{self.source}{loc}{sec}")

    def to_json(self) -> dict[str, Any]:
        """The hit as in ``chiplore ask --json`` (docs/cli-json.md)."""
        return {"id": self.id, "collection": self.collection, "chip": self.chip, "source": self.source,
                "page": self.page, "section": self.section, "kind": self.kind, "score": round(self.score, 6),
                "dense_rank": self.dense_rank, "keyword_rank": self.keyword_rank, "citation": self.cite(),
                "text": self.text}


def tokenize(text: str) -> list[str]:
    """BM25 tokens: lower-case alphanumeric words and decimal numbers (``4.096`` stays whole, ``1,216`` -> ``1216``);
    a number glued to a unit also yields both parts (``4mb`` -> ``4mb 4 mb``; ``mi300x`` stays whole);
    English stop words and single letters are dropped; a plural ``s`` is stripped from words of 4+ letters."""
    out: list[str] = []
    for tok in _TOKEN.findall(_THOUSANDS.sub("", text.lower())):
        unit = _NUMBER_UNIT.match(tok)
        for t in ([tok, unit.group(1), unit.group(2)] if unit else [tok]):
            if t in STOPWORDS or (len(t) == 1 and not t.isdigit()):
                continue
            if t.isalpha() and len(t) >= 4 and t.endswith("s") and not t.endswith("ss"):
                t = t[:-1]
            out.append(t)
    return out


class KeywordIndex:
    """A BM25 index over every record of one collection, with the records' ids, texts and metadata."""

    def __init__(self, ids: list[str], texts: list[str], metas: list[dict], retriever: Any) -> None:
        self.ids, self.texts, self.metas, self.retriever = ids, texts, metas, retriever
        self.chips = np.array([str(m.get("chip", "")) for m in metas])

    @classmethod
    def build(cls, records: list) -> KeywordIndex:
        bm25s = _import_bm25s()

        if not records:
            return cls([], [], [], None)
        retriever = bm25s.BM25()
        corpus = [tokenize(index_text(r.text, r.metadata)) or ["_empty_"] for r in records]
        retriever.index(corpus, show_progress=False)
        return cls([r.id for r in records], [r.text for r in records], [r.metadata for r in records], retriever)

    def save(self, folder: Path) -> None:
        """Write atomically: a temporary sibling folder renamed into place (an empty index is not cached)."""
        if self.retriever is None:
            return
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
        try:
            self.retriever.save(str(tmp), show_progress=False)
            with open(tmp / "records.json", "w", encoding="utf-8") as fh:
                json.dump({"ids": self.ids, "texts": self.texts, "metas": self.metas}, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, folder)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # a cache that cannot be written is rebuilt next time

    @classmethod
    def load(cls, folder: Path) -> KeywordIndex | None:
        bm25s = _import_bm25s()

        try:
            with open(folder / "records.json", encoding="utf-8") as fh:
                data = json.load(fh)
            retriever = bm25s.BM25.load(str(folder), show_progress=False)
        except (OSError, ValueError, KeyError):
            return None
        return cls(data["ids"], data["texts"], data["metas"], retriever)

    def top(self, query_tokens: list[str], n: int, chip: str | None) -> list[int]:
        """Indices of the `n` best records with a positive BM25 score, restricted to `chip` if given."""
        vocab = self.retriever.vocab_dict
        tokens = [t for t in query_tokens if t in vocab]
        if not tokens or not self.ids:
            return []
        scores = np.asarray(self.retriever.get_scores(tokens), dtype=np.float64)
        if chip is not None:
            scores = np.where(self.chips == chip, scores, 0.0)
        order = np.argsort(-scores, kind="stable")[:n]
        return [int(i) for i in order if scores[i] > 0]


_MEMO: dict[str, KeywordIndex] = {}
_STORES: dict[tuple, KnowledgeStore] = {}


def default_store() -> KnowledgeStore:
    """The store for the current environment (``CHIPLORE_HOME`` / ``CHIPLORE_CHROMA_URL``), opened once per process."""
    key = (str(settings.chiplore_home()), settings.chroma_url())
    if key not in _STORES:
        _STORES[key] = KnowledgeStore.open()
    return _STORES[key]


def keyword_index(store: KnowledgeStore, collection: str) -> KeywordIndex:
    """The BM25 index of `collection` at its current revision (memory, then disk cache, then built and cached)."""
    if store.count(collection) == 0:
        return KeywordIndex([], [], [], None)
    raw = f"{store.location}|{collection}|{store.revision(collection)}|{TOKENIZER_VERSION}"
    key = hashlib.sha256(raw.encode()).hexdigest()[:20]
    if key in _MEMO:
        return _MEMO[key]
    base = settings.chiplore_home() / "cache" / "bm25" / collection
    index = KeywordIndex.load(base / key) if (base / key).is_dir() else None
    if index is None:
        index = KeywordIndex.build(store.records(collection))
        index.save(base / key)
        for old in base.iterdir() if base.is_dir() else []:
            if old.name != key and not old.name.startswith(".tmp-"):
                shutil.rmtree(old, ignore_errors=True)
    _MEMO[key] = index
    return index


def known_chips(store: KnowledgeStore | None = None, collections=COLLECTIONS) -> list[str]:
    """Chip names that have records in any of `collections`."""
    store = store or default_store()
    chips: set[str] = set()
    for name in collections:
        chips.update(c for c in keyword_index(store, name).chips.tolist() if c)
    return sorted(chips)


def search(query: str, chip: str | None = None, k: int = 5, collections: tuple[str, ...] = COLLECTIONS,
           store: KnowledgeStore | None = None, candidates: int | None = None) -> list[Hit]:
    """Hybrid search over `collections`, best first.

    Args:
        query: the question or keywords.
        chip: restrict to one chip (case-insensitive); None searches every chip.
        k: number of hits (1 to `MAX_K`).
        collections: any of ``chunks`` and ``findings``.
        store: an open store (default: `default_store()`).
        candidates: records taken from each ranked list before fusion (default max(10k, 100)).

    Returns:
        Up to `k` hits sorted by fused score (ties broken by dense rank), lists of sources (`is_reference_list`)
        after every other hit.

    Raises:
        BadInputError: empty query, k outside 1..`MAX_K`, unknown collection, or a chip with no records (the
            message lists the chips that have records, and says so when the chip has a profile but no documents).
        StoreError: the store cannot be read, or the embedding model cannot be loaded (checked even when the store
            is empty).
    """
    if not query or not query.strip():
        raise BadInputError("ask: the question is empty")
    if not 1 <= k <= MAX_K:
        raise BadInputError(f"ask: -k {k}: must be between 1 and {MAX_K} passages")
    unknown = [c for c in collections if c not in COLLECTIONS]
    if unknown:
        raise BadInputError(f"unknown collection {unknown[0]!r}; collections: {', '.join(COLLECTIONS)}")
    query = normalize_text(query)  # the same normal form as the documents (ligatures, full-width forms)
    store = store or default_store()
    indexes = {name: keyword_index(store, name) for name in collections}
    if chip is not None:
        chip = chip.strip().lower()
        chips = sorted({c for ix in indexes.values() for c in ix.chips.tolist() if c})
        if chip not in chips:
            raise BadInputError(_chip_without_records(chip, chips))
    _ = store.query_embedder  # load the model even when nothing is stored: a broken one is an error, not "no hits"
    n = candidates or max(10 * k, 100)
    fused: dict[tuple[str, str], dict[str, Any]] = {}
    tokens = tokenize(query)
    embedding = None
    for name, index in indexes.items():
        if not index.ids:
            continue
        if embedding is None:
            embedding = store.embed_texts([query])[0]
        dense = [(rec.id, rec.text, rec.metadata) for rec, _ in store.query(embedding, name, k=n, chip=chip)]
        keyword = [(index.ids[i], index.texts[i], index.metas[i]) for i in index.top(tokens, n, chip)]
        for label, ranked_list in (("dense", dense), ("keyword", keyword)):
            for rank, (rid, text, meta) in enumerate(_diverse(ranked_list), start=1):
                entry = fused.setdefault((name, rid), {"text": text, "meta": meta, "score": 0.0})
                entry["score"] += 1.0 / (RRF_K + rank)
                entry[label] = rank
    term = asked_count_term(query, tokenize)
    if term:
        _fuse_count_list(fused, term, set(tokens))
    ranked = sorted(fused.items(), key=lambda kv: (is_reference_list(kv[1]["meta"]), -kv[1]["score"],
                                                   kv[1].get("dense", 10**9)))
    return [_hit(name, rid, entry) for (name, rid), entry in ranked[:k]]


#: Last headings of a document's list of sources. Such a list names every topic of its document, so it matches many
#: questions (lexically and by embedding) while stating none of the facts: `chiplore ask "warp size" --chip h200`
#: returned the H200 note's "Sources" chunk above "Compute units and threads", which says "Warp size: 32".
REFERENCE_LIST_HEADINGS = frozenset({"sources", "references", "bibliography", "citations", "further reading",
                                     "works cited", "sources and references"})


def is_reference_list(meta: dict[str, Any]) -> bool:
    """Whether a record is (part of) a list of sources: its innermost heading is one of `REFERENCE_LIST_HEADINGS`.
    `search` ranks such records after every other hit (their fused score is kept as is)."""
    section = str(meta.get("section") or "")
    return section.rsplit(" > ", 1)[-1].strip().lower() in REFERENCE_LIST_HEADINGS


def _chip_without_records(chip: str, chips: list[str]) -> str:
    """Why `chip` cannot be searched: it has a hardware profile but no documents yet (say how to onboard them), or it
    is unknown everywhere; both name the chips that do have records."""
    from hardware_profiles import PACKAGED_DIR, profile_path

    try:
        path = profile_path(chip)
    except BadInputError:
        path = None
    if path is None:
        listing = ", ".join(chips) if chips else "none yet (run `chiplore onboard CHIP PATH...`)"
        return f"unknown chip {chip!r}; known chips: {listing}"
    kind = "a packaged profile" if path.parent == PACKAGED_DIR else f"a profile, {path}"
    listing = f"chips in the knowledge store: {', '.join(chips)}" if chips else "the knowledge store is empty"
    return (f"no documents onboarded for chip {chip!r} (it has {kind}); onboard its documents with "
            f"`chiplore onboard {chip} PATH...` ({listing})")


def _fuse_count_list(fused: dict[tuple[str, str], dict[str, Any]], term: list[str], query_tokens: set[str]) -> None:
    """Add the count list of a count question to `fused` (in place): the chunks that state a count of `term`
    (`answer_type.states_count`), ranked in their fused order, each scoring 1 / (RRF_K + rank)."""
    order = sorted(fused.items(), key=lambda kv: (-kv[1]["score"], kv[1].get("dense", 10**9)))
    rank = 0
    for (name, _), entry in order:
        if name == "chunks" and states_count(entry["text"], str(entry["meta"].get("kind", "")), term, query_tokens,
                                             tokenize):
            rank += 1
            entry["score"] += 1.0 / (RRF_K + rank)


def _diverse(ranked: list[tuple[str, str, dict]]) -> list[tuple[str, str, dict]]:
    """One ranked list with at most `MAX_ROWS_PER_TABLE` rows of any one table (same source, page and section):
    further rows of that table are dropped from this list. A long table whose rows all share its caption and header
    would otherwise fill the candidate list and crowd out the prose that answers the question."""
    kept, per_table = [], {}
    for item in ranked:
        meta = item[2]
        if meta.get("kind") == "table_row":
            key = (meta.get("source"), meta.get("page"), meta.get("section"))
            per_table[key] = per_table.get(key, 0) + 1
            if per_table[key] > MAX_ROWS_PER_TABLE:
                continue
        kept.append(item)
    return kept


def _hit(collection: str, rid: str, entry: dict[str, Any]) -> Hit:
    meta = entry["meta"]
    page = meta.get("page")
    return Hit(text=entry["text"], chip=str(meta.get("chip", "")), source=str(meta.get("source", "")),
               page=int(page) if page is not None else None, section=str(meta.get("section", "")),
               score=float(entry["score"]), collection=collection, id=rid, kind=str(meta.get("kind", "")),
               dense_rank=entry.get("dense"), keyword_rank=entry.get("keyword"))


def _import_bm25s():
    """Import bm25s with JAX kept off the GPU.

    bm25s runs one ``jax.lax.top_k`` at import time when JAX is installed; on a machine with JAX's CUDA plugin that
    initializes JAX on the GPU, which preallocates 75% of its memory for the life of the process (seen on an H200:
    108 GiB held by `chiplore optimize`, every candidate then out of memory). BM25 here scores on the CPU with
    numpy, so JAX is pointed at the CPU unless the user already chose (``JAX_PLATFORMS``), and told not to
    preallocate in any case (``XLA_PYTHON_CLIENT_PREALLOCATE``; JAX documents both variables).
    """
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import bm25s

    return bm25s
