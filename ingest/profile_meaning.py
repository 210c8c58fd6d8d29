"""Meaning by embedding: sentence-embedding similarity of short texts to descriptions of profile concepts.

The profile extractor decides *what a phrase means* (is "Tile SRAM per dispatch" shared memory per work-group?
is a "cell" the compute unit?) by cosine similarity between the phrase's embedding and the embeddings of a few
descriptions of each concept, with the packaged all-MiniLM-L6-v2 (`knowledge.embedder`, the onboarding model;
Reimers & Gurevych, "Sentence-BERT", EMNLP 2019). Descriptions are definitions in plain words, the way a
glossary would write them; the model generalizes to names they do not contain. A decision is taken only when the
best concept is similar enough (`MIN_SIMILARITY`) and ahead of the runner-up by `MIN_MARGIN`; otherwise the
phrase means nothing here (unknown is allowed, a guess is not).

Embeddings are cached per text for the life of the process (the same labels recur in every extraction).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

#: Cosine similarity below which a phrase is not taken to mean any concept.
MIN_SIMILARITY = 0.35
#: How far the best concept must be ahead of the second best (cosine).
MIN_MARGIN = 0.02

_CACHE: dict[str, np.ndarray] = {}
_LOCK = threading.Lock()


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit-length embeddings ``[len(texts), dim]`` (float32) of `texts`, cached per text. Embedding many texts in
    one call is far cheaper than one by one: callers pass every text they will look at first (`prefetch`).

    Raises:
        StoreError: the embedding model cannot be loaded from local files (`knowledge.embedder`).
    """
    from knowledge.embedder import get_embedder

    missing = [t for t in dict.fromkeys(texts) if t not in _CACHE]
    if missing:
        vectors = get_embedder().embed(missing, batch_size=128)
        with _LOCK:
            for text, vector in zip(missing, vectors):
                _CACHE[text] = np.asarray(vector, dtype=np.float32)
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    return np.stack([_CACHE[t] for t in texts])


def prefetch(texts: Iterable[str]) -> None:
    """Embed `texts` in one batch into the cache (see `embed`)."""
    embed([t for t in texts if t])


@dataclass(frozen=True)
class Choice:
    """The concept a text was matched to, its similarity and the runner-up's."""

    concept: str
    similarity: float
    runner_up: float

    @property
    def margin(self) -> float:
        return self.similarity - self.runner_up


class ConceptSpace:
    """Named concepts, each described by one or more sentences; `choose` matches a text to one of them.

    Args:
        descriptions: concept name -> descriptions (the similarity to a concept is the best over its descriptions).
    """

    def __init__(self, descriptions: dict[str, Sequence[str]]) -> None:
        self.names: list[str] = []
        texts: list[str] = []
        for name, items in descriptions.items():
            for text in items:
                self.names.append(name)
                texts.append(text)
        self._texts = texts
        self._matrix: np.ndarray | None = None

    def _vectors(self) -> np.ndarray:
        if self._matrix is None:
            self._matrix = embed(self._texts)
        return self._matrix

    def similarities(self, text: str, among: Iterable[str] | None = None) -> dict[str, float]:
        """Concept -> cosine similarity of `text` (best description), for the concepts in `among` (default all)."""
        allowed = set(among) if among is not None else None
        scores = self._vectors() @ embed([text])[0]
        out: dict[str, float] = {}
        for name, score in zip(self.names, scores.tolist()):
            if allowed is not None and name not in allowed:
                continue
            out[name] = max(out.get(name, -1.0), float(score))
        return out

    def choose(self, text: str, among: Iterable[str] | None = None, min_similarity: float = MIN_SIMILARITY,
               min_margin: float = MIN_MARGIN) -> Choice | None:
        """The concept `text` means, among `among` (default all), or None when no concept is similar enough or
        the best one is not clearly ahead of the next."""
        scores = self.similarities(text, among)
        if not scores:
            return None
        ranked = sorted(scores.items(), key=lambda kv: -kv[1])
        best, score = ranked[0]
        runner = ranked[1][1] if len(ranked) > 1 else -1.0
        if score < min_similarity or score - runner < min_margin:
            return None
        return Choice(best, score, runner)
