"""Turning a verdict into an evaluation record and findings (stage 4 bookkeeping, kept out of the loop)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.acceptance import Decision, geomean, measure_noise
from agent.diagnosis import floor_or_none
from agent.family_space import FamilySpace
from agent.runstate import BaselineRecord, EvalRecord, Lineage, RunState, utc_now
from agent.seams import PASS
from hardware_profiles.schema import HardwareProfile
from kernels.task import Case, TaskSpec
from knowledge.types import VERDICT_STAGES, Finding


def floors_us(task: TaskSpec, cases: list[Case], profile: HardwareProfile) -> dict[str, float]:
    """Roofline floor per case in microseconds (cases whose floor is unknown are left out)."""
    out = {}
    for case in cases:
        floor = floor_or_none(task, case, profile)
        if floor is not None:
            out[case.id] = floor
    return out


def baseline_record(times: list[Mapping[str, float]], case_ids: list[str], floors: Mapping[str, float],
                    noise_floor: float) -> tuple[BaselineRecord, dict[str, list[float]]]:
    """The baseline's record from its repeated timings (one ``{case: us}`` per repeat; empty when untimed) and
    the first replicates of the best kernel (`agent.reference`). Baseline time per case: the fastest repeat."""
    timed = bool(times) and all(set(case_ids) <= set(t) for t in times)
    best = {c: min(t[c] for t in times) for c in case_ids} if timed else {}
    record = BaselineRecord(
        stage=PASS, passed=True, timed=timed, time_us=best,
        noise=measure_noise(times, noise_floor) if timed else {}, floor_us=dict(floors),
        roofline_fraction={c: floors[c] / t for c, t in best.items() if c in floors})
    return record, ({c: [t[c] for t in times] for c in case_ids} if timed else {})


def changed_cases(case_ids: list[str], lineage: Lineage, best_lineage: Lineage | None,
                  space: FamilySpace | None) -> list[str]:
    """Cases whose code differs from the best kernel's: those of the dispatch classes whose configuration differs
    from the best table's; every case when the best is the baseline kernel or either side has no dispatch table
    (e.g. an LLM-written file)."""
    table, dispatch = lineage.parameters.get("table"), lineage.parameters.get("dispatch") or {}
    best_table = best_lineage.parameters.get("table") if best_lineage else None
    if not table or not best_table or space is None:
        return list(case_ids)
    table, best_table = space.full_table(table), space.full_table(best_table)  # a knob added since: its default
    return [c for c in case_ids if dispatch.get(c) is None or table.get(dispatch[c]) != best_table.get(dispatch[c])]


def evaluation_record(n: int, lineage: Lineage, verdict: Mapping[str, Any], decision: Decision | None,
                      baseline_us: Mapping[str, float], floors: Mapping[str, float], wall_s: float,
                      cases: list[str]) -> EvalRecord:
    """`EvalRecord` for candidate `n` from its verdict JSON and the acceptance decision (None: not timed or
    not passed, explained by the stage)."""
    stage = str(verdict.get("stage"))
    passed = stage == PASS
    times = {c: t for c, t in dict(verdict.get("time_us") or {}).items() if c in cases}
    timed = passed and bool(times) and set(cases) <= set(times)
    # a failed candidate's times (e.g. too fast to be true) stay on record, but give no speedup or roofline figure
    speedup = {c: baseline_us[c] / t for c, t in times.items() if c in baseline_us} if passed else {}
    reasons = [str(r) for r in verdict.get("reasons", [])]
    if decision is not None:
        text = decision.reason
    elif passed:
        text = "verified correct; not timed on this machine, no speedup claimed"
    else:
        text = f"failed at stage {stage}" + (f": {reasons[0]}" if reasons else "")
    return EvalRecord(
        n=n, candidate_id=lineage.id, parent_id=lineage.parent_id, proposer=lineage.proposer, stage=stage,
        passed=passed, timed=timed, accepted=bool(decision and decision.accepted), decision=text,
        time_us=times, speedup=speedup,
        geomean_speedup=geomean(list(speedup.values())) if timed and len(speedup) == len(cases) else None,
        roofline_fraction={c: floors[c] / t for c, t in times.items() if c in floors} if passed else {},
        reasons=reasons, flags=[str(f) for f in verdict.get("flags", [])], patterns=list(lineage.patterns),
        parameters=dict(lineage.parameters), target_cases=list(lineage.target_cases),
        content_hash=lineage.content_hash, wall_s=wall_s)


def failed_proposal_record(n: int, parent_id: str, proposer: str, stage: str, reason: str,
                           parameters: Mapping[str, Any] | None = None) -> EvalRecord:
    """Record of a proposal that never became a candidate file (no code, wrong signature, duplicate);
    `parameters` are what the proposer spent on it (e.g. the tokens of a tool-calling model's turn)."""
    return EvalRecord(n=n, candidate_id=f"v{n}", parent_id=parent_id, proposer=proposer, stage=stage,
                      passed=False, timed=False, accepted=False, decision=f"failed candidate ({stage}): {reason}",
                      reasons=[reason], parameters=dict(parameters or {}))


def findings_for(state: RunState, record: EvalRecord, case_classes: Mapping[str, str],
                 dispatch_classes: Mapping[str, str]) -> list[Finding]:
    """One finding per target case of `record` (all cases if it has no targets); ids are deterministic. None (an
    empty list) for a proposal that never reached the verifier (its stage is no verdict stage: no code, a duplicate).

    Status: ``accepted`` (became the best), ``rejected`` (verified and timed, not kept), ``untimed`` (verified
    where nothing is timed: no speed evidence) or ``failed`` (did not pass); only timed passes carry candidate
    times, speedups and roofline fractions.
    Patterns: those applied to the case's dispatch class (``class_patterns``), else the candidate's. Parameters:
    the family knob values the case ran with (family candidates), its dispatch class and the candidate's content
    hash.
    """
    if record.stage not in VERDICT_STAGES:
        return []
    timed = record.passed and record.timed  # only then do its times say anything about speed
    table = record.parameters.get("table") or {}
    baseline = state.baseline.time_us if state.baseline else {}
    targets = record.target_cases or list(case_classes)
    class_patterns = record.parameters.get("class_patterns") or {}
    out = []
    for case_id in targets:
        klass = dispatch_classes.get(case_id)
        params = {**(table.get(klass) or {} if klass else {}), "dispatch_class": klass,
                  "candidate": record.content_hash}
        out.append(Finding(
            id=f"{state.run_id}-{record.candidate_id}-{case_id}", chip=state.config.chip, task=state.config.task,
            case_id=case_id, case_class=case_classes.get(case_id, ""),
            patterns=tuple(class_patterns.get(klass, record.patterns) if class_patterns else record.patterns),
            parameters=params, baseline_time_us=baseline.get(case_id),
            candidate_time_us=record.time_us.get(case_id) if timed else None,
            speedup=record.speedup.get(case_id) if timed else None,
            roofline_fraction=record.roofline_fraction.get(case_id) if timed else None,
            verdict_stage=record.stage, verdict_id=f"{state.run_id}/verdicts/v{record.n}.json",
            run_id=state.run_id, date=utc_now(), accepted=record.accepted,
            notes=record.decision if record.passed else "; ".join(record.reasons[:2])))
    return out
