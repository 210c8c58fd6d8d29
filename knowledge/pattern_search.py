"""The optimization patterns a question is about, by meaning: what `chiplore ask` lists under its passages.

A pattern's text (its name, id, generic description, each task's own description of it and the bottlenecks it
addresses, from knowledge/pattern_catalog.yaml and the task catalogs) is embedded with the knowledge store's
model (all-MiniLM-L6-v2 by default, `knowledge.embedder`) and compared with the question by cosine similarity.
Each match carries its evidence from the pattern graph (`knowledge.graph.PatternGraph.evidence`: findings measured
by optimization runs, and published examples), so an answer shows what is known about a pattern and how well it
is backed, not only what the documents say.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hardware_profiles.schema import FIELD_LABELS
from knowledge.catalog import load_catalog
from knowledge.catalog_models import Catalog
from knowledge.embedder import get_embedder
from knowledge.graph import Evidence, PatternGraph

__all__ = ["FACT_QUESTIONS", "MIN_SIMILARITY", "PatternMatch", "match_patterns", "pattern_text"]

#: Cosine similarity below which a pattern is not listed (MiniLM-L6-v2 on the shipped catalog: a question about a
#: technique, "how to hide memory latency", "when should I use TMA", scores its pattern 0.33-0.68).
MIN_SIMILARITY = 0.33
#: A question closer in meaning to one of these than to every pattern asks for a chip fact, not a technique
#: ("How many SMs does the chip have?": 0.69 to the compute-unit question, 0.31 to the closest pattern), and gets
#: no pattern: one question per profile field (`hardware_profiles.schema.FIELD_LABELS`) and the peak throughput.
FACT_QUESTIONS = (*(f"What is the {label} of the chip?" for label in FIELD_LABELS.values()),
                  "What is the peak throughput (TFLOPS) of the chip?")

#: Embeddings by text, for the life of the process.
_VECTORS: dict[str, list[float]] = {}


@dataclass
class PatternMatch:
    """A catalog pattern and how close it is to a question.

    Attributes:
        pattern_id / name / description: from the catalog. tasks: the tasks that apply it.
        similarity: cosine similarity of question and pattern text (-1 to 1).
        findings / examples: evidence counts (measured by optimization runs / published examples).
        best_gain: the largest measured speedup a supporting finding attributes to it (None: no finding), with
            `best_chip` where it was measured. citations: up to 3 evidence citations, best gain first.
        sources: the titles of the catalog sources that describe the pattern.
    """

    pattern_id: str
    name: str
    description: str
    tasks: tuple[str, ...]
    similarity: float
    findings: int = 0
    examples: int = 0
    best_gain: float | None = None
    best_chip: str | None = None
    citations: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The match as a JSON object (docs/cli-json.md, ``ask``'s ``patterns``)."""
        return {"pattern_id": self.pattern_id, "name": self.name, "tasks": list(self.tasks),
                "similarity": round(self.similarity, 4), "findings": self.findings, "examples": self.examples,
                "best_measured_gain": self.best_gain, "best_chip": self.best_chip, "citations": self.citations,
                "sources": self.sources, "description": self.description}


def pattern_text(catalog: Catalog, pattern_id: str) -> str:
    """The text a pattern is matched by: name, id words, generic description, the tasks' own descriptions and the
    names of the bottlenecks it addresses."""
    generic = next(p for p in catalog.patterns if p.id == pattern_id)
    uses = [p for task in catalog.tasks for p in catalog.patterns_for(task) if p.id == pattern_id]
    own = " ".join(dict.fromkeys(p.description for p in uses if p.description != generic.description))
    names = {b.id: b.name for b in catalog.bottlenecks}
    addresses = ", ".join(names.get(a, a) for a in generic.addresses)
    return f"{generic.name} ({pattern_id.replace('_', ' ')}). {generic.description} {own} Addresses: {addresses}."


def match_patterns(question: str, graph: PatternGraph | None = None, catalog: Catalog | None = None, k: int = 3,
                   min_similarity: float = MIN_SIMILARITY, chip: str | None = None) -> list[PatternMatch]:
    """Up to `k` patterns of the catalog closest in meaning to `question` (cosine similarity >= `min_similarity`),
    best first, each with its evidence from `graph` (None: no evidence is counted); none when the question is
    closer to one of `FACT_QUESTIONS` than to every pattern. With `chip`, only evidence measured on that chip
    counts towards `best_gain` (examples and other chips' findings are still counted).

    Raises:
        ValueError: `question` is empty or `k` < 1.
    """
    if not question.strip():
        raise ValueError("match_patterns: the question is empty")
    if k < 1:
        raise ValueError(f"match_patterns: k must be at least 1, got {k}")
    catalog = catalog or load_catalog()
    ids = [p.id for p in catalog.patterns]
    texts = [*FACT_QUESTIONS, *(pattern_text(catalog, i) for i in ids)]
    missing = [t for t in dict.fromkeys([question, *texts]) if t not in _VECTORS]
    if missing:  # the catalog's and the fact questions' vectors once per process (several questions per `ask`)
        _VECTORS.update(zip(missing, get_embedder().embed(missing)))
    q = _VECTORS[question]
    facts, rest = [_VECTORS[t] for t in FACT_QUESTIONS], [_VECTORS[t] for t in texts[len(FACT_QUESTIONS):]]
    scored = sorted(((_cosine(q, v), i) for v, i in zip(rest, ids)), reverse=True)
    if scored[0][0] <= max(_cosine(q, v) for v in facts):
        return []
    out = []
    for similarity, pattern_id in scored[:k]:
        if similarity < min_similarity:
            break
        out.append(_match(catalog, pattern_id, similarity, graph, chip))
    return out


def _match(catalog: Catalog, pattern_id: str, similarity: float, graph: PatternGraph | None,
           chip: str | None) -> PatternMatch:
    generic = next(p for p in catalog.patterns if p.id == pattern_id)
    match = PatternMatch(pattern_id, generic.name, generic.description, tuple(generic.tasks), similarity,
                         sources=[catalog.source(s).title for s in generic.sources])
    evidence: list[Evidence] = graph.evidence(pattern_id) if graph is not None else []
    match.findings = sum(e.kind == "finding" for e in evidence)
    match.examples = sum(e.kind != "finding" for e in evidence)
    measured = [e for e in evidence if e.kind == "finding" and e.supports and (chip is None or e.chip == chip)]
    if measured:
        best = max(measured, key=lambda e: e.log_gain)
        match.best_gain, match.best_chip = round(math.exp(best.log_gain), 3), best.chip
    ranked = sorted(evidence, key=lambda e: (e.kind != "finding", -e.log_gain))
    match.citations = [e.citation for e in ranked[:3]]
    return match


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
