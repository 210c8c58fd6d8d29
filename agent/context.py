"""Stage 3a: what the loop retrieves before each proposal, with citations (documents, patterns, findings).

Every iteration queries the knowledge base with the current diagnosis: documents about the bottlenecks of the
worst cases, patterns ranked for this chip, task, case and diagnosis (the top ones, and every applicable one that
sets a family knob: `kept_patterns`), and findings for this chip and task. The
result is logged per iteration (``retrieval/v{N}.json``) and handed to the proposer. With retrieval off
(``--no-retrieval``) nothing is queried and the context says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from agent.diagnosis import CaseDiagnosis
from agent.seams import Citation, Knowledge, RankedPatternLike
from hardware_profiles.schema import HardwareProfile
from kernels.task import Case, TaskSpec

#: Query words per bottleneck class (what a kernel engineer would look up in the chip's documents).
BOTTLENECK_QUERIES = {
    "memory-bound": "memory bandwidth HBM TB/s L2 cache size",
    "compute-bound": "peak dense matrix throughput TFLOPS bf16 fp16 tensor cores",
    "occupancy": "number of compute units streaming multiprocessors occupancy waves per unit",
    "launch-overhead": "kernel launch latency host synchronization overhead",
    "unknown": "compute units shared memory bandwidth peak throughput",
}
#: Asked every iteration: the limits that decide tile sizes.
TILE_QUERY = "shared memory per block LDS size per compute unit registers threads per block"


@dataclass(frozen=True)
class PatternView:
    """A ranked pattern for one case, as logged and as proposers read it."""

    case_id: str
    pattern_id: str
    score: float
    expected_gain: float | None
    parameters: dict[str, Any]
    knobs: dict[str, Any]
    citations: list[str]
    applicable: bool = True


@dataclass
class RetrievalContext:
    """Retrieved knowledge for one iteration."""

    enabled: bool
    queries: list[str] = field(default_factory=list)
    documents: list[Citation] = field(default_factory=list)
    patterns: dict[str, list[PatternView]] = field(default_factory=dict)
    findings: list[Citation] = field(default_factory=list)

    def to_log(self) -> dict[str, Any]:
        """JSON-able log entry (citations included)."""
        return {
            "enabled": self.enabled,
            "queries": self.queries,
            "documents": [asdict(d) for d in self.documents],
            "patterns": {c: [asdict(p) for p in ps] for c, ps in self.patterns.items()},
            "findings": [asdict(f) for f in self.findings],
        }

    @staticmethod
    def from_log(data: Mapping[str, Any]) -> RetrievalContext:
        """Inverse of `to_log` (used on resume)."""
        return RetrievalContext(
            bool(data.get("enabled")), list(data.get("queries", [])),
            [Citation(**d) for d in data.get("documents", [])],
            {c: [PatternView(**p) for p in ps] for c, ps in data.get("patterns", {}).items()},
            [Citation(**f) for f in data.get("findings", [])])

    def citations(self) -> list[str]:
        """Every distinct citation in the context, documents first."""
        seen: dict[str, None] = {}
        for d in self.documents:
            seen.setdefault(d.cite, None)
        for views in self.patterns.values():
            for p in views:
                for c in p.citations:
                    seen.setdefault(c, None)
        for f in self.findings:
            seen.setdefault(f.cite, None)
        return list(seen)


def cite_of(item: Any) -> str:
    """A citation string for an evidence item: its ``cite()``, a ``cite``/``source`` entry, or ``str(item)``."""
    cite = getattr(item, "cite", None)
    if callable(cite):
        return str(cite())
    if isinstance(cite, str):
        return cite
    if isinstance(item, Mapping):
        for key in ("cite", "citation", "source"):
            if item.get(key):
                return str(item[key])
    return str(item)


def knob_values(pattern: RankedPatternLike) -> dict[str, Any]:
    """The family knobs a ranked pattern sets, with values: ``knobs`` as a mapping, or knob names whose values
    are looked up in ``parameters``. Unknown values (None) are dropped."""
    knobs = pattern.knobs
    if isinstance(knobs, Mapping):
        pairs = dict(knobs)
    else:
        params = dict(pattern.parameters or {})
        pairs = {name: params.get(name) for name in (knobs or ())}
    return {k: v for k, v in pairs.items() if v is not None}


def pattern_view(case_id: str, ranked: RankedPatternLike) -> PatternView:
    """Loggable view of a ranked pattern: evidence citations first, then the catalog sources it cites."""
    cites = [cite_of(e) for e in (ranked.evidence or ())] + [cite_of(s) for s in getattr(ranked, "sources", ())]
    return PatternView(case_id, str(ranked.pattern_id), float(ranked.score),
                       None if ranked.expected_gain is None else float(ranked.expected_gain),
                       {str(k): _jsonable(v) for k, v in dict(ranked.parameters or {}).items()}, knob_values(ranked),
                       list(dict.fromkeys(cites)), bool(getattr(ranked, "applicable", True)))


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None), list, dict)) else str(value)


def document_queries(task: TaskSpec, chip: str, diagnoses: Mapping[str, CaseDiagnosis], limit: int = 2) -> list[str]:
    """Queries for the bottlenecks of the worst cases (lowest roofline fraction first), plus the tile query."""
    ordered = sorted(diagnoses.values(), key=lambda d: (d.roofline_fraction is not None, d.roofline_fraction or 0))
    kinds: list[str] = []
    for d in ordered:
        if d.bottleneck not in kinds:
            kinds.append(d.bottleneck)
    queries = [f"{chip} {BOTTLENECK_QUERIES.get(k, BOTTLENECK_QUERIES['unknown'])}" for k in kinds[:limit]]
    return queries + [f"{chip} {TILE_QUERY}"]


def kept_patterns(ranked: Sequence[RankedPatternLike], k: int) -> list[RankedPatternLike]:
    """The first `k` of `ranked`, then every later applicable pattern that sets family knobs (`knob_values`):
    patterns without knobs (family defaults such as a preallocated workspace) would otherwise crowd a knob's only
    pattern out of the proposer's view, and a configuration would never combine it."""
    later = [r for r in ranked[k:] if getattr(r, "applicable", True) and knob_values(r)]
    return list(ranked[:k]) + later


def gather(knowledge: Knowledge | None, task: TaskSpec, profile: HardwareProfile, chip: str,
           cases: Sequence[Case], diagnoses: Mapping[str, CaseDiagnosis], docs_k: int, findings_k: int,
           patterns_k: int = 5) -> RetrievalContext:
    """Query documents, ranked patterns (per case) and findings; `knowledge=None` means retrieval is off."""
    if knowledge is None:
        return RetrievalContext(enabled=False)
    ctx = RetrievalContext(enabled=True)
    if docs_k:
        seen: set[str] = set()
        for query in document_queries(task, chip, diagnoses):
            ctx.queries.append(query)
            for hit in knowledge.search_documents(query, chip, docs_k):
                if hit.id not in seen:
                    seen.add(hit.id)
                    ctx.documents.append(hit)
    for case in cases:
        ranked = knowledge.rank_patterns(profile, task, case, diagnoses.get(case.id))
        ctx.patterns[case.id] = [pattern_view(case.id, r) for r in kept_patterns(ranked, patterns_k)]
    if findings_k:
        ctx.findings = knowledge.query_findings(chip, task.name, findings_k)
    return ctx
