"""Findings: what happened when a pattern was tried on a chip, stored twice.

1. As a chunk in the chromadb ``findings`` collection (`knowledge.store`): a readable summary with metadata
   (chip, task, case, patterns, verdict, run, date, and the whole record as JSON), so `ask` can retrieve and cite
   it. The chunk id is the finding id, which is deterministic, so recording the same finding twice stores it once.
2. As evidence in the pattern graph (`knowledge.graph`): a ``finding`` node with ``evidence_for`` /
   ``evidence_against`` edges to the patterns it applied, with the chip's similarity features.

Failed attempts are findings too (``accepted=False``, the verdict stage says how they failed). The store is
written first: if the process dies before the graph is saved, the next `record_finding` or `load_graph` adds the
missing finding to the graph from the store.

Public API: `Finding`, `record_finding(finding, profile=None)`, `query_findings(chip, task, case_class, pattern)`,
`load_graph()`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.errors import BadInputError
from hardware_profiles.schema import HardwareProfile
from knowledge.catalog import Catalog, load_catalog
from knowledge.graph import PatternGraph
from knowledge.similarity import chip_features

VerdictStage = Literal["static_rejected", "compile_error", "runtime_error", "mismatch", "too_fast_to_be_true", "pass"]
FINDINGS_COLLECTION = "findings"
#: Relative tolerance between a given speedup and baseline_time_us / candidate_time_us.
SPEEDUP_TOLERANCE = 0.01


class Finding(BaseModel):
    """One verified attempt (DESIGN.md "Finding"). Times in microseconds; speedup = baseline / candidate.

    Attributes:
        id: deterministic when left empty: sha256(chip | task | case_id | run_id | verdict_id)[:24].
        chip / task / case_id / case_class: where it was measured (chip names are stored lower-case).
        patterns: catalog pattern ids the candidate applied (relative to the baseline it is compared with).
        parameters: knob values (`FamilyConfig` fields) and pattern parameters of the candidate.
        baseline_time_us / candidate_time_us: medians, microseconds (None when not timed).
        speedup: baseline_time_us / candidate_time_us (computed when both times are given).
        roofline_fraction: floor_us / candidate_time_us (1.0 = at the roofline floor).
        verdict_stage / verdict_id: the verifier's verdict; only ``pass`` can be accepted.
        run_id / date: the optimization run and the ISO date (YYYY-MM-DD or a full ISO timestamp).
        accepted: the loop kept the candidate; False for slower, noisy or failed candidates (kept as knowledge).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = ""
    chip: str = Field(min_length=1)
    task: str = Field(min_length=1)
    case_id: str = Field(min_length=1)
    case_class: str = ""
    patterns: tuple[str, ...] = ()
    parameters: dict[str, Any] = Field(default_factory=dict)
    baseline_time_us: float | None = Field(default=None, gt=0)
    candidate_time_us: float | None = Field(default=None, gt=0)
    speedup: float | None = Field(default=None, gt=0)
    roofline_fraction: float | None = Field(default=None, ge=0)
    verdict_stage: VerdictStage
    verdict_id: str = Field(min_length=1)
    run_id: str = Field(min_length=1)
    date: str
    accepted: bool = False
    notes: str = ""

    @model_validator(mode="before")
    @classmethod
    def _fill(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("chip"), str):
            data["chip"] = data["chip"].strip().lower()  # chip names are case-insensitive (load_profile)
        base, cand = data.get("baseline_time_us"), data.get("candidate_time_us")
        if data.get("speedup") is None and base and cand:
            data["speedup"] = float(base) / float(cand)
        if not data.get("id"):
            key = "|".join(str(data.get(k, "")) for k in ("chip", "task", "case_id", "run_id", "verdict_id"))
            data["id"] = hashlib.sha256(key.encode()).hexdigest()[:24]
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Finding:
        try:
            dt.date.fromisoformat(self.date[:10])
        except ValueError:
            raise ValueError(f"date {self.date!r} is not an ISO date (YYYY-MM-DD)") from None
        if self.accepted and (self.verdict_stage != "pass" or self.speedup is None):
            raise ValueError(f"an accepted finding needs verdict_stage 'pass' and a speedup "
                             f"(got {self.verdict_stage!r}, speedup {self.speedup})")
        if self.speedup and self.baseline_time_us and self.candidate_time_us:
            ratio = self.baseline_time_us / self.candidate_time_us
            if abs(ratio - self.speedup) > SPEEDUP_TOLERANCE * ratio:
                raise ValueError(f"speedup {self.speedup} disagrees with baseline_time_us / candidate_time_us = "
                                 f"{ratio:.4g}")
        return self

    @property
    def timed(self) -> bool:
        """The candidate's time was measured (a speedup or a candidate time is known)."""
        return self.speedup is not None or self.candidate_time_us is not None

    @property
    def status(self) -> str:
        """``accepted``, ``rejected`` (verified and timed, not kept), ``untimed`` (passed the verifier where nothing
        is timed, e.g. the Triton interpreter: no evidence about speed) or ``failed`` (did not pass the verifier)."""
        if self.accepted:
            return "accepted"
        if self.verdict_stage != "pass":
            return "failed"
        return "rejected" if self.timed else "untimed"

    @classmethod
    def from_record(cls, obj: Any) -> Finding:
        """A Finding from a mapping or an object with the same attribute names (e.g. the loop's draft);
        ``status == 'accepted'`` stands for ``accepted=True`` when `accepted` is absent.

        Raises:
            BadInputError: a field is missing or invalid; the message names it.
        """
        if isinstance(obj, Finding):
            return obj
        fields = list(cls.model_fields)
        data = dict(obj) if isinstance(obj, Mapping) else {k: getattr(obj, k) for k in fields + ["status"]
                                                           if hasattr(obj, k)}
        if "accepted" not in data and "status" in data:
            data["accepted"] = data["status"] == "accepted"
        data.pop("status", None)
        data = {k: v for k, v in data.items() if k in fields}
        if isinstance(data.get("parameters"), Mapping):
            data["parameters"] = dict(data["parameters"])
        try:
            return cls(**data)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"]) or "finding"
            raise BadInputError(f"finding {data.get('id') or ''}: {where}: {err['msg']}".replace("  ", " ")) \
                from None

    def summary(self) -> str:
        """Readable text stored in the findings collection (what `ask` shows and cites)."""
        pats = " + ".join(self.patterns) or "no pattern"
        params = ", ".join(f"{k}={v}" for k, v in sorted(self.parameters.items())) or "default parameters"
        head = (f"Finding on chip {self.chip}, task {self.task}, case {self.case_id}"
                f"{f' ({self.case_class})' if self.case_class else ''}: {pats} with {params}")
        if self.verdict_stage != "pass":
            body = f"failed verification at stage {self.verdict_stage}"
        elif self.candidate_time_us is not None and self.baseline_time_us is not None:
            body = (f"ran {self.candidate_time_us:.1f} us against {self.baseline_time_us:.1f} us "
                    f"({self.speedup:.2f}x)")
        else:
            body = "passed verification (not timed)"
        roof = (f", {100 * self.roofline_fraction:.1f}% of the roofline floor"
                if self.roofline_fraction and self.verdict_stage == "pass" else "")
        notes = f" Notes: {self.notes}" if self.notes else ""
        return (f"{head}; {body}{roof}; {self.status}. Verdict {self.verdict_id}, run {self.run_id}, "
                f"{self.date}.{notes}")

    def record(self, features: Mapping[str, float | None]) -> dict[str, Any]:
        """The JSON record kept in the graph and in the chunk metadata (fields + status + chip_features)."""
        return {**self.model_dump(mode="json"), "status": self.status, "chip_features": dict(features)}


def _profile_for(chip: str) -> HardwareProfile | None:
    """The chip's profile through `hardware_profiles.load_profile`, or None when there is none."""
    try:
        from hardware_profiles import load_profile  # type: ignore[attr-defined]
    except ImportError:
        return None
    try:
        return load_profile(chip)
    except Exception:  # an unknown chip records evidence without similarity features
        return None


def _check_patterns(finding: Finding, catalog: Catalog) -> None:
    known = {p.id for p in catalog.patterns}
    bad = [p for p in finding.patterns if p not in known]
    if bad:
        raise BadInputError(f"finding {finding.id}: unknown pattern(s) {bad}; known: {', '.join(sorted(known))}")


def _chunk(finding: Finding, record: dict[str, Any]) -> Any:
    from knowledge.types import Chunk

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
