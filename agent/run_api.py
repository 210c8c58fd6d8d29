"""Run management one candidate at a time: start, submit, status, finish (what an agent outside chiplore drives,
e.g. over MCP), with exactly the bookkeeping of ``chiplore optimize``.

A `ManagedRun` holds an `agent.loop.OptimizationLoop` whose proposer is an `ExternalProposer`: `submit` queues
the caller's source and runs one loop step, so the candidate is written as ``kernel_v{N}.py``, verified, accepted
or rolled back by the loop's own acceptance rules (`agent.acceptance.decide`), findings are recorded either way,
the stop rules are checked before it (40 evaluations, 20 without gain, budget, roofline) and the run state is
saved after every step (`agent.runstate`). A run started here resumes like any other (``optimize --resume``) and
vice versa.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.config import OptimizeConfig
from agent.errors import StopRun
from agent.family_space import source_hash
from agent.loop import LoopParts, OptimizationLoop
from agent.proposers.base import Proposal, ProposalContext
from agent.runstate import EvalRecord, Lineage, RunDir, RunState
from agent.seams import Knowledge, Verifier
from agent.session import open_run, prepare, start_run
from core.errors import BadInputError
from hardware_profiles.schema import HardwareProfile


@dataclass
class Submission:
    """A candidate handed in from outside: its source and optional lineage fields."""

    source: str
    patterns: list[str]
    rationale: str
    target_cases: list[str]


class ExternalProposer:
    """Proposer whose candidates come from outside the loop (`ManagedRun.submit`). A source without the task's
    entry point, with a syntax error or the wrong signature is a failed candidate, as for the LLM proposer."""

    name = "external"

    def __init__(self) -> None:
        self.queued: Submission | None = None

    def propose(self, ctx: ProposalContext) -> Proposal:
        """The queued submission as a `Proposal`.

        Raises:
            CandidateFailed: ``bad_signature`` / ``syntax_error`` (`agent.proposers.llm.check_signature`).
            BadInputError: nothing was queued (a programming error of the caller).
        """
        from agent.proposers.llm import check_signature

        if self.queued is None:
            raise BadInputError("no candidate submitted")
        sub, self.queued = self.queued, None
        check_signature(sub.source, ctx.task.entry_point, ctx.signature)
        known = {c.id for c in ctx.cases}
        return Proposal(source=sub.source, content_hash=source_hash(sub.source), patterns=list(sub.patterns),
                        parameters={"submitted_by": "external"}, rationale=sub.rationale,
                        target_cases=[c for c in sub.target_cases if c in known])

    def observe(self, lineage: Lineage | None, record: EvalRecord) -> None:
        """The caller sees every outcome in `ManagedRun.submit`'s result; nothing to keep here."""


class FinishedByCaller(StopRun):
    """The caller ended the run (`ManagedRun.finish`)."""

    kind = "finished"


class RunFinished(BadInputError):
    """The run has ended (a stop rule fired or `finish` was called); no further candidate is taken."""


class ManagedRun:
    """One run driven step by step. Build with `create` (new run, baseline measured) or `resume` (existing run)."""

    def __init__(self, run: RunDir, state: RunState, parts: LoopParts) -> None:
        self.run, self.parts = run, parts
        self.proposer = parts.proposer
        self.loop = OptimizationLoop(run, state, parts)

    @property
    def state(self) -> RunState:
        return self.loop.state

    @classmethod
    def create(cls, config: OptimizeConfig, profile: HardwareProfile, verifier: Verifier,
               knowledge: Knowledge | None, device: str = "", root: Path | None = None) -> ManagedRun:
        """Create the run folder, verify and time the baseline (`OptimizationLoop.begin`).

        Raises:
            BadInputError: unknown task or case. BaselineFailed: the baseline did not pass the verifier.
        """
        config = config.model_copy(update={"proposer": "external"})
        parts = prepare(config, profile, verifier, knowledge, proposer=ExternalProposer())
        run, state = start_run(config, device=device, root=root)
        managed = cls(run, state, parts)
        managed.loop.begin()
        return managed

    @classmethod
    def resume(cls, run_id: str, profile: HardwareProfile, verifier: Verifier, knowledge: Knowledge | None,
               root: Path | None = None) -> ManagedRun:
        """Open an existing run to continue it with submitted candidates (a pending candidate is evaluated first).

        Raises:
            RunNotFoundError, RunCorruptError: see `agent.session.open_run`. RunBusyError: the run is live in
                another process (its lock names the pid).
        """
        run, _ = open_run(run_id, root)
        run.lock("resuming")  # held by this managed run until `finish` (or the end of the process)
        state = run.load_state()
        parts = prepare(state.config, profile, verifier, knowledge, proposer=ExternalProposer())
        managed = cls(run, state, parts)
        if state.status == "running" or state.status == "stopped":
            managed.loop.begin()
        return managed

    def submit(self, source: str, patterns: list[str] | None = None, rationale: str = "",
               target_cases: list[str] | None = None) -> EvalRecord:
        """Evaluate one candidate: the loop's stop rules first, then write, verify, decide, record.

        Returns:
            the candidate's evaluation record (stage, decision, reasons verbatim, times, findings).

        Raises:
            RunFinished: the run has ended, or a stop rule ended it now (the message gives the reason).
            BadInputError: an empty source.
        """
        if not source.strip():
            raise BadInputError("submit_candidate: the source is empty; send the whole candidate file")
        self._check_open()
        while self.state.pending is not None:  # a candidate interrupted by a crash is finished first
            self.loop.step()
        before = len(self.state.evaluations)
        self.proposer.queued = Submission(source, list(patterns or []), rationale, list(target_cases or []))
        try:
            self.loop.step()
        except StopRun as stop:
            self.loop.end(stop)
            self._check_open()
        finally:
            self.proposer.queued = None
        if len(self.state.evaluations) == before:
            raise RunFinished(f"run {self.state.run_id}: the candidate was not evaluated")
        return self.state.evaluations[-1]

    def finish(self, reason: str = "finished by the caller") -> Any:
        """End the run (if a stop rule has not already) and write its report; returns `agent.report.ReportFiles`."""
        from agent.report import write_report

        if self.state.status == "running":
            self.loop.end(FinishedByCaller(reason))
        self.run.unlock()  # the run is no longer live
        return write_report(self.run)

    def _check_open(self) -> None:
        if self.state.status != "running":
            raise RunFinished(f"run {self.state.run_id} has ended ({self.state.stop_kind}: {self.state.stop_reason});"
                              f" call finish_run for its report, or start_run for a new run")


def status_of(run: RunDir, state: RunState) -> dict[str, Any]:
    """A run's progress as JSON: status, stop reason, best kernel, baseline and every evaluation in short."""
    best = state.best_record()
    return {
        "run": state.run_id, "folder": str(run.path), "task": state.config.task, "chip": state.config.chip,
        "status": state.status, "stop_kind": state.stop_kind, "stop_reason": state.stop_reason,
        "timed": bool(state.baseline and state.baseline.timed),
        "baseline_time_us": state.baseline.time_us if state.baseline else {},
        "best_id": state.best_id, "best_file": str(run.candidate_path(int(state.best_id[1:]))),
        "best_time_us": state.best_time_us, "best_geomean_speedup": best.geomean_speedup if best else None,
        "evaluations": [evaluation_summary(e) for e in state.evaluations],
        "no_improve_streak": state.no_improve_streak, "patience": state.config.stop.patience,
        "max_evals": state.config.stop.max_evals, "elapsed_s": round(state.elapsed_s, 1),
    }


def evaluation_summary(record: EvalRecord) -> dict[str, Any]:
    """One evaluation as the tools report it (reasons verbatim)."""
    return {"candidate": record.candidate_id, "parent": record.parent_id, "stage": record.stage,
            "passed": record.passed, "timed": record.timed, "accepted": record.accepted,
            "decision": record.decision, "reasons": record.reasons, "flags": record.flags,
            "time_us": record.time_us, "speedup": record.speedup, "geomean_speedup": record.geomean_speedup,
            "roofline_fraction": record.roofline_fraction, "findings": record.finding_ids}
