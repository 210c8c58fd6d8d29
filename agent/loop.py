"""The optimization loop: baseline -> diagnose -> retrieve & propose -> verify -> accept or roll back -> record.

Control flow is by named exceptions (`agent.errors.StopRun` subclasses end the run; `CandidateFailed` is a
failed candidate); limits live in `agent.config.StopRules`; the run state is saved after every step, in
``finally``. Write-ahead rule for resume: see `agent.runstate`.
"""

from __future__ import annotations

import importlib.util
import inspect
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import context as retrieval
from agent.acceptance import decide
from agent.diagnosis import diagnose
from agent.errors import (
    BaselineFailed,
    BudgetExhausted,
    CandidateFailed,
    MaxEvaluationsReached,
    NoImprovement,
    ProposerUnavailable,
    RooflineReached,
    StopRun,
    VerifierSuspect,
)
from agent.family_space import FamilySpace
from agent.outcomes import (
    baseline_record,
    changed_cases,
    evaluation_record,
    failed_proposal_record,
    findings_for,
    floors_us,
)
from agent.proposers.base import Proposal, ProposalContext, Proposer
from agent.reference import ReferenceTimes
from agent.runstate import Clock, EvalRecord, Lineage, PendingEval, RunDir, RunState, count
from agent.seams import PASS, Knowledge, Verifier, verdict_to_json
from hardware_profiles.schema import HardwareProfile
from kernels.task import Case, TaskSpec

Events = Callable[..., None]


@dataclass
class LoopParts:
    """The components one run drives. `knowledge` is None with retrieval off; `space` is None for tasks
    without a family."""

    task: TaskSpec
    profile: HardwareProfile
    cases: list[Case]
    verifier: Verifier
    proposer: Proposer
    knowledge: Knowledge | None
    space: FamilySpace | None
    events: Events = lambda event, **data: None


def baseline_path(task: TaskSpec) -> Path:
    """File of the task's baseline module."""
    spec = importlib.util.find_spec(task.baseline_module)
    if spec is None or spec.origin is None:
        raise BaselineFailed(f"baseline module {task.baseline_module!r} of task {task.name!r} not found")
    return Path(spec.origin)


class OptimizationLoop:
    """Runs (or resumes) one optimization run in `run` with `parts`."""

    def __init__(self, run: RunDir, state: RunState, parts: LoopParts) -> None:
        self.run, self.state, self.p = run, state, parts
        self.config = state.config
        self.case_ids = [c.id for c in parts.cases]
        self.floors = floors_us(parts.task, parts.cases, parts.profile)
        self.signature = inspect.signature(parts.task.load_entry_point("baseline"))
        self.clock = Clock(state.elapsed_s)
        self.same_failure: tuple[str, int] = ("", 0)  # (reason, count) of this session's failed verifications

    @property
    def reference(self) -> ReferenceTimes:
        """Replicate times of the best kernel (medians and noise per case), backed by the run state."""
        noise = self.state.baseline.noise if self.state.baseline else {}
        return ReferenceTimes(self.state.reference_us, noise, self.config.accept.noise_floor)

    # ----- driver: `run_loop`, or the same steps one at a time (`begin`, `step`, `end`; `agent.run_api`)
    def run_loop(self) -> RunState:
        """Run until a stop rule fires; the state is saved after every step and on the way out."""
        try:
            self.begin()
            while True:
                self.step()
        except StopRun as stop:
            self.end(stop)
        except BaseException:
            self.state.status = "stopped"
            raise
        finally:
            self._save()
        return self.state

    def begin(self) -> None:
        """Mark the run running, feed its history to the proposer (resume) and measure the baseline if it has none.

        Raises:
            BaselineFailed: the baseline did not pass the verifier (the run is then marked stopped).
        """
        self.state.status, self.state.stop_kind, self.state.stop_reason = "running", None, None
        self._replay()
        try:
            if self.state.baseline is None:
                self.baseline()
        except BaseException:
            self.state.status = "stopped"
            raise
        finally:
            self._save()

    def end(self, stop: StopRun) -> None:
        """Record why the run ended: ``stopped`` (resumable: endpoint down, verifier suspect) or ``finished``."""
        self.state.status = "stopped" if isinstance(stop, ProposerUnavailable | VerifierSuspect) else "finished"
        self.state.stop_kind, self.state.stop_reason = stop.kind, stop.reason
        self._save()
        self.p.events("stop", stop=stop)

    def step(self) -> None:
        """One iteration: (re)evaluate the pending candidate, or check limits and propose a new one."""
        if self.state.pending is None:
            self.check_limits()
            lineage = self.propose(self.state.next_n)
            if lineage is None:
                return
        n = self.state.pending.n
        lineage = self.run.read_lineage(n)
        started = time.monotonic()
        verdict = self.run.read_verdict(n)
        if verdict is None:
            self.p.events("verify", n=n, lineage=lineage)
            verdict = self.verify(self.run.candidate_path(n))
            self.run.write_verdict(n, verdict)
        self.conclude(n, lineage, verdict, time.monotonic() - started)

    def check_limits(self) -> None:
        """Raise the `StopRun` of the first stop rule that holds."""
        rules, s = self.config.stop, self.state
        if len(s.evaluations) >= rules.max_evals:
            raise MaxEvaluationsReached(f"{count(len(s.evaluations), 'evaluation')} made (max {rules.max_evals})")
        if s.no_improve_streak >= rules.patience:
            untimed = self.config.timing != "gpu"
            raise NoImprovement(f"{count(s.no_improve_streak, 'consecutive evaluation')} without improvement" + (
                " (nothing is timed without a GPU, so no candidate can improve on the baseline; the candidates were "
                "verified for correctness)" if untimed else ""))
        if self.same_failure[1] >= rules.same_failure_limit:
            raise VerifierSuspect(f"{self.same_failure[1]} candidates in a row failed verification with the same "
                                  f"reason (check the verifier and the machine, then --resume): "
                                  f"{self.same_failure[0][:300]}")
        if rules.budget_min is not None and self.clock.elapsed_s() >= 60 * rules.budget_min:
            raise BudgetExhausted(f"wall-clock budget of {rules.budget_min:g} min used ({self.clock.elapsed_s():.0f} s "
                                  f"elapsed; the budget is checked before each new candidate)")
        fractions = [self.floors[c] / s.best_time_us[c] for c in self.case_ids
                     if c in self.floors and c in s.best_time_us]
        if fractions and len(fractions) == len(self.case_ids) and min(fractions) >= rules.target_roofline_fraction:
            raise RooflineReached(f"every case at >= {rules.target_roofline_fraction:.0%} of its roofline floor")

    # ----- stage 1: baseline
    def baseline(self) -> None:
        """Verify and time the baseline `baseline_repeats` times (once without timing); noise from the spread."""
        path = baseline_path(self.p.task)
        shutil.copyfile(path, self.run.candidate_path(0))
        repeats = self.config.accept.baseline_repeats if self.config.timing == "gpu" else 1
        times: list[dict[str, float]] = []
        for r in range(repeats):
            self.p.events("baseline", repeat=r + 1, of=repeats, timed=self.config.timing == "gpu")
            verdict = self.verify(path)
            if r == 0:
                self.run.write_verdict(0, verdict)
            else:
                self.run.write_verdict_extra(0, r, verdict)
            if verdict["stage"] != PASS:
                raise BaselineFailed(f"baseline {path.name} failed verification at stage {verdict['stage']}: "
                                     + "; ".join(verdict["reasons"][:2]))
            times.append({c: t for c, t in verdict["time_us"].items() if c in self.case_ids})
        record, replicates = baseline_record(times, self.case_ids, self.floors, self.config.accept.noise_floor)
        if self.config.timing == "gpu" and not record.timed:
            raise BaselineFailed(f"baseline {path.name} passed but was not timed on every case: "
                                 f"{verdict.get('timing_note') or 'no timings in the verdict'}")
        self.state.baseline, self.state.reference_us = record, replicates
        self.state.best_id, self.state.best_time_us = "v0", self.reference.medians()
        self._save()
        self.p.events("baseline_done", record=self.state.baseline)

    # ----- stages 2 and 3: diagnose, retrieve, propose
    def propose(self, n: int) -> Lineage | None:
        """Write candidate `n` and mark it pending; a failed proposal is recorded and None returned."""
        best = self.state.best_record()
        best_lineage = self.run.read_lineage(best.n) if best else None
        table = (best_lineage.parameters.get("table") if best_lineage else None) or {}
        programs = {}  # programs the best kernel launches per case (None config: the baseline kernel)
        if self.p.space and (best_lineage is None or table):
            programs = {c.id: self.p.space.programs(table.get(self.p.space.class_of(c)), c) for c in self.p.cases}
        table = self.p.space.full_table(table) if self.p.space else table
        diagnoses = diagnose(self.p.task, self.p.cases, self.p.profile, self.state.best_time_us, programs)
        ctx_retrieved = retrieval.gather(self.p.knowledge, self.p.task, self.p.profile, self.config.chip,
                                         self.p.cases, diagnoses, self.config.docs_k, self.config.findings_k)
        self.run.write_retrieval(n, {"n": n, "diagnosis": {c: d.to_json() for c, d in diagnoses.items()},
                                     **ctx_retrieved.to_log()})
        self.p.events("retrieved", n=n, context=ctx_retrieved, diagnoses=diagnoses)
        last = self.state.evaluations[-1] if self.state.evaluations else None
        ctx = ProposalContext(
            n=n, run_id=self.state.run_id, chip=self.config.chip, task=self.p.task, profile=self.p.profile,
            cases=self.p.cases, space=self.p.space, signature=self.signature, diagnoses=diagnoses,
            retrieval=ctx_retrieved, best_id=self.state.best_id,
            best_source=self.run.read_candidate(best.n if best else 0), best_lineage=best_lineage,
            best_table=table, best_time_us=dict(self.state.best_time_us),
            baseline_time_us=dict(self.state.baseline.time_us), noise=self.reference.noise(),
            last_verdict=self._last_verdict(last), history=list(self.state.evaluations),
            rng=random.Random(f"{self.config.seed}:{n}"), timed=self.state.baseline.timed,
            regression_limit=self.config.accept.regression_limit, run_dir=self.run.path)
        try:
            proposal = self.p.proposer.propose(ctx)
            if proposal.content_hash in {e.content_hash for e in self.state.evaluations}:
                raise CandidateFailed("duplicate", f"same content as an earlier candidate ({proposal.content_hash})")
        except CandidateFailed as failed:
            if failed.raw_reply is not None:
                self.run.write_reply(n, failed.raw_reply)
            self._finish(failed_proposal_record(n, self.state.best_id, self.p.proposer.name, failed.stage,
                                                failed.reason, failed.parameters), None)
            return None
        lineage = self._lineage(n, proposal, best_lineage)
        self.run.write_candidate(n, proposal.source, lineage)
        if proposal.raw_reply is not None:
            self.run.write_reply(n, proposal.raw_reply)
        self.state.pending = PendingEval(n=n, candidate_id=lineage.id)
        self._save()
        self.p.events("proposed", n=n, lineage=lineage)
        return lineage

    def _last_verdict(self, last: EvalRecord | None) -> dict[str, Any] | None:
        """The previous candidate's verdict verbatim; for a failed proposal its stage and reason."""
        if last is None:
            return None
        return self.run.read_verdict(last.n) or {"stage": last.stage, "reasons": last.reasons}

    def _lineage(self, n: int, proposal: Proposal, parent: Lineage | None) -> Lineage:
        return Lineage(id=f"v{n}", parent_id=self.state.best_id, generation=(parent.generation if parent else 0) + 1,
                       proposer=self.p.proposer.name, patterns=proposal.patterns, parameters=proposal.parameters,
                       rationale=proposal.rationale, content_hash=proposal.content_hash,
                       target_cases=proposal.target_cases)

    # ----- stage 4: verify, decide, record
    def verify(self, path: Path) -> dict[str, Any]:
        options = {**self.config.verify_options, "cases": self.case_ids, "timing": self.config.timing == "gpu"}
        if self.state.baseline is not None and self.state.baseline.timed:
            options["baseline_time_us"] = dict(self.state.baseline.time_us)
        return verdict_to_json(self.p.verifier(self.p.task, path, self.p.profile, options))

    def conclude(self, n: int, lineage: Lineage, verdict: dict[str, Any], wall_s: float) -> None:
        """Decide on a verified candidate against the best kernel's replicate medians (only cases whose code
        changed can regress), update the replicates and the best kernel, record findings, clear the pending mark."""
        decision, reference = None, self.reference
        changed = self._changed_cases(lineage)
        times = verdict.get("time_us") or {}
        if verdict["stage"] == PASS and self.state.best_time_us and set(self.case_ids) <= set(times):
            decision = decide(reference.medians(), times, reference.noise(), lineage.target_cases or changed,
                              self.config.accept.regression_limit, self.config.accept.noise_floor, changed)
        record = evaluation_record(n, lineage, verdict, decision, self.state.baseline.time_us, self.floors, wall_s,
                                   self.case_ids)
        record.changed_cases = changed
        if record.passed and record.timed:
            reference.update({c: times[c] for c in self.case_ids}, changed, record.accepted)
        if record.accepted:
            self.state.best_id = lineage.id
        if record.timed:
            self.state.best_time_us = reference.medians()
        self._finish(record, lineage)

    def _changed_cases(self, lineage: Lineage) -> list[str]:
        best = self.state.best_record()
        best_lineage = self.run.read_lineage(best.n) if best else None
        return changed_cases(self.case_ids, lineage, best_lineage, self.p.space)

    def _finish(self, record: EvalRecord, lineage: Lineage | None) -> None:
        if record.content_hash and not record.passed:
            reason = record.reasons[0] if record.reasons else record.stage
            count = self.same_failure[1] + 1 if reason == self.same_failure[0] else 1
            self.same_failure = (reason, count)
        elif record.passed:
            self.same_failure = ("", 0)
        s = self.state
        s.no_improve_streak = 0 if record.accepted else s.no_improve_streak + 1
        if self.config.record_findings and self.p.knowledge is not None and record.content_hash:
            record.finding_ids = self._record_findings(record)
        s.evaluations.append(record)
        s.pending = None
        self._save()
        self.p.proposer.observe(lineage, record)
        self.p.events("evaluated", record=record)

    def _record_findings(self, record: EvalRecord) -> list[str]:
        dispatch = record.parameters.get("dispatch") or {}
        ids = []
        for finding in findings_for(self.state, record, {c.id: c.case_class for c in self.p.cases}, dispatch):
            if finding.id not in self.state.findings_recorded:
                if not self.p.knowledge.record_finding(finding):
                    continue  # not a finding (e.g. a duplicate proposal: no verifier stage); nothing was stored
                self.state.findings_recorded.append(finding.id)
            ids.append(finding.id)
        return ids

    # ----- persistence
    def _replay(self) -> None:
        """Feed the run's history to the proposer again (resume), so it knows what it learned."""
        for record in self.state.evaluations:
            lineage = self.run.read_lineage(record.n) if record.content_hash else None
            self.p.proposer.observe(lineage, record)

    def _save(self) -> None:
        self.state.elapsed_s = self.clock.elapsed_s()
        self.clock = Clock(self.state.elapsed_s)
        self.run.save_state(self.state)
