"""Findings: what happened when a pattern was tried on a chip, stored twice.

1. As a chunk in the chromadb ``findings`` collection (`knowledge.store`): a readable summary with metadata
   (chip, task, case, patterns, verdict, run, date, and the whole record as JSON), so `ask` can retrieve and cite
   it. The chunk id is the finding id, which is deterministic, so recording the same finding twice stores it once.
2. As evidence in the pattern graph (`knowledge.graph`): a ``finding`` node with ``evidence_for`` /
   ``evidence_against`` edges to the patterns it applied, with the chip's similarity features.

Failed attempts are findings too (``accepted=False``, the verdict stage says how they failed). The store is
written first: if the process dies before the graph is saved, the next `record_finding` or `load_graph` adds the
missing finding to the graph from the store.

Public API: `Finding` (defined in `knowledge.types`), `record_finding(finding, profile=None)`,
`query_findings(chip, task, case_class, pattern)`, `load_graph()`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.errors import BadInputError
from hardware_profiles import load_profile
from hardware_profiles.schema import HardwareProfile
from knowledge.catalog import Catalog, load_catalog
from knowledge.graph import PatternGraph
from knowledge.similarity import chip_features
from knowledge.types import Chunk, Finding

FINDINGS_COLLECTION = "findings"


def _profile_for(chip: str) -> HardwareProfile | None:
    """The chip's profile through `hardware_profiles.load_profile`, or None when there is none."""
    try:
        return load_profile(chip)
    except Exception:  # an unknown chip records evidence without similarity features
        return None


def _check_patterns(finding: Finding, catalog: Catalog) -> None:
    known = {p.id for p in catalog.patterns}
    bad = [p for p in finding.patterns if p not in known]
    if bad:
        raise BadInputError(f"finding {finding.id}: unknown pattern(s) {bad}; known: {', '.join(sorted(known))}")


def _chunk(finding: Finding, record: dict[str, Any]) -> Chunk:
    meta: dict[str, Any] = {
        "task": finding.task, "case_id": finding.case_id, "case_class": finding.case_class,
        "patterns": ",".join(finding.patterns), "status": finding.status, "accepted": finding.accepted,
        "verdict_stage": finding.verdict_stage, "verdict_id": finding.verdict_id, "run_id": finding.run_id,
        "date": finding.date, "finding_json": json.dumps(record, sort_keys=True),
    }
    for key in ("speedup", "roofline_fraction", "candidate_time_us", "baseline_time_us"):
        value = getattr(finding, key)
        if value is not None:
            meta[key] = float(value)
    return Chunk(id=f"finding-{finding.id}", text=finding.summary(), chip=finding.chip,
                 source=f"findings/{finding.run_id}", section=f"{finding.task} > {finding.case_id}",
                 kind="finding", metadata=meta)


def open_store(store: Any = None) -> Any:
    """`store` if given, else `knowledge.store.KnowledgeStore.open()` (embedded under $CHIPLORE_HOME, or the
    Chroma server of $CHIPLORE_CHROMA_URL).

    Raises:
        StoreError: the store cannot be opened.
    """
    if store is not None:
        return store
    from knowledge.store import KnowledgeStore

    return KnowledgeStore.open()


def store_records(store: Any = None, chip: str | None = None) -> list[dict[str, Any]]:
    """Finding records (`Finding.record`) held by the store's findings collection (of `chip` if given)."""
    out = []
    for rec in open_store(store).records(FINDINGS_COLLECTION, chip=chip):
        raw = rec.metadata.get("finding_json")
        if raw:
            out.append(json.loads(raw))
    return out


def record_finding(finding: Any, profile: HardwareProfile | None = None, *, store: Any = None,
                   graph_file: str | Path | None = None) -> str:
    """Store `finding` in the findings collection and as graph evidence; idempotent (deterministic id).

    Args:
        finding: a `Finding`, or a mapping / object with its fields (`Finding.from_record`).
        profile: the chip's profile for similarity features (default: `load_profile(finding.chip)` if known).
        store: an open `KnowledgeStore` (default: `KnowledgeStore.open()`).
        graph_file: graph file (default ``$CHIPLORE_HOME/graph/pattern_graph.json``).

    Returns:
        the finding id.

    Raises:
        BadInputError: invalid finding or a pattern id the catalog does not know.
        StoreError: the store or the graph cannot be written (what was stored before is kept).
    """
    finding = Finding.from_record(finding)
    catalog = load_catalog()
    _check_patterns(finding, catalog)
    record = finding.record(chip_features(profile or _profile_for(finding.chip)))
    store = open_store(store)
    with store.writing(f"recording finding {finding.id}"):  # the record and the graph, one writer at a time
        store.upsert_chunks([_chunk(finding, record)], collection=FINDINGS_COLLECTION)
        graph = PatternGraph.load(graph_file, catalog)
        for missing in _missing_records(store, graph.finding_ids() | {finding.id}):
            graph.add_finding(missing)
        graph.add_finding(record)
        graph.save(graph_file)
    return finding.id


def _missing_records(store: Any, known: set[str]) -> list[dict[str, Any]]:
    """Finding records in the store whose ids are not in `known` (ids are listed first; only those are read)."""
    ids = store.ids(FINDINGS_COLLECTION)
    missing = [i for i in ids if i.removeprefix("finding-") not in known]
    if not missing:
        return []
    return [json.loads(r.metadata["finding_json"]) for r in store.records(FINDINGS_COLLECTION)
            if r.id in set(missing) and r.metadata.get("finding_json")]


def load_graph(store: Any = None, graph_file: str | Path | None = None, sync: bool = True) -> PatternGraph:
    """The pattern graph; with `sync`, findings in the store but not in the graph (e.g. after a crash between
    the two writes) are added and the graph is saved."""
    graph = PatternGraph.load(graph_file, load_catalog())
    if sync:
        store = open_store(store)
        missing = _missing_records(store, graph.finding_ids())
        if missing:
            with store.writing("updating the pattern graph"):
                graph = PatternGraph.load(graph_file, load_catalog())  # as another writer may have left it
                for record in _missing_records(store, graph.finding_ids()):
                    graph.add_finding(record)
                graph.save(graph_file)
    return graph


def query_findings(chip: str | None = None, task: str | None = None, case_class: str | None = None,
                   pattern: str | None = None, *, store: Any = None) -> list[Finding]:
    """Findings of the store filtered by chip, task, case class and pattern (None = any), oldest first.

    Raises:
        StoreError: the store cannot be read.
    """
    out = []
    for record in store_records(store, chip=chip.strip().lower() if chip else None):
        if task is not None and record.get("task") != task:
            continue
        if case_class is not None and record.get("case_class") != case_class:
            continue
        if pattern is not None and pattern not in (record.get("patterns") or ()):
            continue
        out.append(Finding.from_record(record))
    return sorted(out, key=lambda f: (f.date, f.run_id, f.id))
