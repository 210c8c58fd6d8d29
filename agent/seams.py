"""Protocols at the seams between the loop and the components it drives (verifier, knowledge, proposers).

The loop depends only on these shapes; `agent.adapters` binds them to the real modules (`agent.verifier`,
`knowledge.retrieval`, `knowledge.ranking`, `knowledge.findings`), and tests drive the loop with scripted
implementations. `verdict_to_json` turns any verdict object the verifier returns into the JSON kept per run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from hardware_profiles.schema import HardwareProfile
from kernels.task import Case, TaskSpec
from knowledge.types import Finding

PASS = "pass"  # the verdict stage of a candidate that passed (knowledge.types.VERDICT_STAGES)


@runtime_checkable
class VerdictLike(Protocol):
    """What the loop reads from a verdict (DESIGN.md "Verdict"): a stage, readable reasons, errors and timings."""

    stage: str
    reasons: Sequence[str]
    time_us: Mapping[str, float]


class Verifier(Protocol):
    """``verify(task, candidate_path, profile, options) -> Verdict`` (ARCHITECTURE.md, `agent.verifier`)."""

    def __call__(self, task: TaskSpec, candidate_path: Path, profile: HardwareProfile,
                 options: Mapping[str, Any]) -> VerdictLike: ...


class RankedPatternLike(Protocol):
    """`knowledge.ranking.RankedPattern`: a pattern with parameters computed for the chip and its evidence."""

    pattern_id: str
    parameters: Mapping[str, Any]
    knobs: Any
    expected_gain: float | None
    evidence: Sequence[Any]
    score: float


@dataclasses.dataclass(frozen=True)
class Citation:
    """A retrieved document chunk or finding as the loop logs it: where it came from, and an excerpt."""

    cite: str
    text: str
    score: float
    collection: str
    id: str
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)


class Knowledge(Protocol):
    """The knowledge base as the loop queries it at every iteration."""

    def search_documents(self, query: str, chip: str | None, k: int) -> list[Citation]: ...

    def rank_patterns(self, profile: HardwareProfile, task: TaskSpec, case: Case,
                      diagnosis: Any) -> list[RankedPatternLike]: ...

    def query_findings(self, chip: str, task: str, k: int) -> list[Citation]: ...

    def record_finding(self, finding: Finding) -> str: ...


def _plain(value: Any) -> Any:
    """JSON-able copy of `value` (pydantic models, dataclasses, mappings, sequences, enums, paths)."""
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "value") and type(value).__module__ != "builtins":  # enums
        return _plain(value.value)
    return str(value)


def verdict_to_json(verdict: Any) -> dict[str, Any]:
    """The verdict as a JSON-able dict with at least ``stage``, ``reasons``, ``time_us`` ({case: us}),
    ``flags`` and ``errors``; everything else the verdict carries is kept verbatim.

    ``time_us`` given as a list of per-case records (``case_id``/``id`` + ``time_us``) becomes a mapping.
    """
    data = _plain(verdict)
    if not isinstance(data, dict):
        data = {"stage": str(getattr(verdict, "stage", "unknown")), "raw": data}
    stage = data.get("stage", "unknown")
    data["stage"] = stage.get("value", str(stage)) if isinstance(stage, dict) else str(stage)
    data["reasons"] = [str(r) for r in data.get("reasons") or []]
    data["flags"] = [str(f) for f in data.get("flags") or []]
    times = data.get("time_us") or {}
    if isinstance(times, list):
        times = {str(r.get("case_id", r.get("id"))): r.get("time_us") for r in times if isinstance(r, dict)}
    data["time_us"] = {str(k): float(v) for k, v in times.items() if isinstance(v, (int, float)) and v > 0}
    data.setdefault("errors", {})
    return data
