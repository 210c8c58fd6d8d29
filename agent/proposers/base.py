"""The proposer seam: one Protocol for every way of producing the next candidate.

A proposer gets a `ProposalContext` (diagnosis, retrieved knowledge, the best kernel, the last verdict and the
history of this run) and returns a `Proposal` (candidate source plus lineage fields). It learns from outcomes
through `observe`, which the loop also replays over the run's history on resume, so a proposer's state is a
pure function of the run folder. It signals by exception: `CandidateFailed` (the proposal is a failed
candidate), `SearchSpaceExhausted`, `ProposerUnavailable` (from `agent.errors`).
"""

from __future__ import annotations

import inspect
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agent.context import RetrievalContext
from agent.diagnosis import CaseDiagnosis
from agent.family_space import FamilySpace
from agent.runstate import EvalRecord, Lineage
from hardware_profiles.schema import HardwareProfile
from kernels.task import Case, TaskSpec


@dataclass
class ProposalContext:
    """What a proposer may look at when proposing candidate `n`.

    Attributes:
        best_table: dispatch table of the best family candidate ({} while the baseline is best).
        best_time_us / baseline_time_us: per-case medians (empty when nothing is timed).
        noise: relative timing noise per case.
        last_verdict: the verifier's verdict of the previous candidate, verbatim (None at the start).
        rng: seeded from (run seed, n), so a resumed run proposes what the uninterrupted one would.
        run_dir: the run's folder (candidate files ``kernel_v{N}.py`` live there).
    """

    n: int
    run_id: str
    chip: str
    task: TaskSpec
    profile: HardwareProfile
    cases: list[Case]
    space: FamilySpace | None
    signature: inspect.Signature
    diagnoses: dict[str, CaseDiagnosis]
    retrieval: RetrievalContext
    best_id: str
    best_source: str
    best_lineage: Lineage | None
    best_table: dict[str, dict[str, Any]]
    best_time_us: dict[str, float]
    baseline_time_us: dict[str, float]
    noise: dict[str, float]
    last_verdict: dict[str, Any] | None
    history: list[EvalRecord]
    rng: random.Random
    timed: bool
    regression_limit: float = 0.05
    run_dir: Path | None = None


@dataclass
class Proposal:
    """A candidate and its lineage fields (the loop assigns id, parent and generation).

    Attributes:
        source: the candidate file's text.
        content_hash: identity for dedupe (dispatch-table hash for family candidates, source hash otherwise).
        parameters: what defines the candidate (family candidates: ``table``, ``classes`` changed, ``move``).
        target_cases: cases the change means to speed up (empty: all).
        raw_reply: the model's reply verbatim (LLM proposer), kept next to the candidate.
    """

    source: str
    content_hash: str
    patterns: list[str] = field(default_factory=list)
    parameters: dict[str, Any] = field(default_factory=dict)
    rationale: str = ""
    target_cases: list[str] = field(default_factory=list)
    raw_reply: str | None = None


class Proposer(Protocol):
    """Produces candidates; learns from verdicts."""

    name: str

    def propose(self, ctx: ProposalContext) -> Proposal:
        """The next candidate. Raises CandidateFailed, SearchSpaceExhausted or ProposerUnavailable."""
        ...

    def observe(self, lineage: Lineage | None, record: EvalRecord) -> None:
        """Learn from one finished evaluation (`lineage` is None for a failed proposal without a file)."""
        ...
