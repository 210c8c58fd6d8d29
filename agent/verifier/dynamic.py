"""Parent side of the dynamic and timing stages: follow the child's messages in a strict order, regenerate every
input, compute every reference here (never in the child), compare, and validate timings against this
process's own clock.

Anything out of order, malformed or missing is a ``runtime_error``: the child is untrusted once the candidate
has been imported into it.

`DynamicRun` drives one child; `agent.verifier.parallel.ParallelRun` drives several at once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from agent.verifier.compare import Comparison, compare, describe, moved
from agent.verifier.plan import Plan, TimedCase, Trial, apply_perturbation, input_digest
from agent.verifier.prefetch import Prepared, TrialPrefetcher
from agent.verifier.sandbox import ChildProcess, ChildTimeout
from agent.verifier.timing import exposed_reps, median
from agent.verifier.verdict import CaseErrors, CaseTiming
from kernels.task import Case, TaskSpec, Tolerance
from kernels.timing import HOST_COVER_US

if TYPE_CHECKING:
    from agent.verifier.parallel import ParallelRun


class Failure(Exception):
    """The candidate failed at `stage` for `reasons`."""

    def __init__(self, stage: str, *reasons: str):
        super().__init__(reasons[0] if reasons else stage)
        self.stage = stage
        self.reasons = list(reasons)


@dataclass
class Outcome:
    """What the dynamic stage found (stage None = every check passed)."""

    stage: str | None = None
    reasons: list[str] = field(default_factory=list)
    errors: dict[str, CaseErrors] = field(default_factory=dict)
    timings: dict[str, CaseTiming] = field(default_factory=dict)
    exit_status: int = 0
    phase_seconds: dict[str, float] = field(default_factory=dict)
    # per judged trial, "case (label)" -> seconds from the previous trial's verdict to this one's (the child's
    # compile + run + transfer, and the parent's judging): where a slow verification's time goes
    trial_seconds: dict[str, float] = field(default_factory=dict)
    fs_isolation: str = ""  # what the child reported: "landlock ABI n", "off" or "unavailable: ..."
    #: Where in the plan the candidate failed: -1 before the first trial (start, import), a trial's id, the number
    #: of trials in the plan after the last trial, one more in the timing stage; None when it did not fail.
    failed_at: int | None = None
    #: Stopped by the verifier because the candidate failed in another sandbox child (not a verdict of its own).
    stopped: bool = False
    exit_statuses: list[int] = field(default_factory=list)
    #: Ids of the trials judged and passed, in the order judged: a pass needs every trial of the plan here exactly
    #: once (`Verifier._dynamic` checks it against the plan).
    judged: list[int] = field(default_factory=list)
    #: Ids of the perturbation trials whose reference moved (`replay_check`): a pass of a plan with perturbation
    #: trials needs at least one, or nothing checked that the output follows its inputs in place.
    sensitive: list[int] = field(default_factory=list)


@dataclass
class _Kept:
    inputs: dict[str, Any]
    output: torch.Tensor
    expected: torch.Tensor
    digest: str


@dataclass
class _Timed:
    case: TimedCase
    event_us: list[float]
    wall_us: list[float]
    verifier_wall_us: list[float]
    captures: list[tuple[int, int, torch.Tensor]]
    exposed: frozenset[int] = frozenset()

    def covered(self, values: list[float]) -> list[float]:
        """`values` of the calls timed behind the GPU-side delay (all of them when none were)."""
        kept = [v for r, v in enumerate(values) if r not in self.exposed]
        return kept or values


class _Stopped(Exception):
    """The run was stopped because the candidate failed in another sandbox child (see `ParallelRun`)."""


class DynamicRun:
    """Drives one child through `plan` and judges everything it reports.

    `peers` (set by `ParallelRun`) coordinates this run with the runs of the candidate's other sandbox children:
    it learns where each run is in the plan, stops a run once another has failed earlier in the plan, and holds a
    run back from the timing stage until every other child has finished and exited.
    """

    def __init__(self, task: TaskSpec, plan: Plan, child: ChildProcess, scratch: Path,
                 peers: ParallelRun | None = None, progress: Callable[[str], None] | None = None):
        self.task = task
        #: told "judged" after each trial and "timing" before the timing stage (`Verifier.verify`'s progress)
        self.progress = progress or (lambda event: None)
        self.plan = plan
        self.child = child
        self.scratch = scratch
        self.peers = peers
        #: the plan position this run waits on (see `Outcome.failed_at`)
        self.position = -1
        self.after_trials = peers.after_trials if peers is not None else len(plan.trials)
        self.phase_ends: dict[str, float] = {}  # perf_counter at the end of each phase
        self.output = task.output_args[0]
        self.device = torch.device(plan.device)
        self.outcome = Outcome()
        self.kept: dict[int, _Kept] = {}
        self.bases = {t.base for t in plan.trials if t.base is not None}
        self.timing_digests: dict[tuple[str, int], str] = {}
        self.timing_refs: dict[tuple[str, int], torch.Tensor] = {}
        self.prefetch = TrialPrefetcher(task, plan, self.device, self.output)

    # -- messages ------------------------------------------------------------------------------------------
    def _next(self, expected: str) -> tuple[float, dict[str, Any], torch.Tensor | None]:
        t, head, tensor = self.child.next()
        kind = head.get("type")
        if kind == "error":
            stage = head.get("stage") if head.get("stage") in ("compile_error", "runtime_error") else "runtime_error"
            raise Failure(stage, f"{head.get('label', '?')}: {head.get('summary', 'error')}")
        if kind == "violation":
            problems = [str(p) for p in head.get("problems", [])][:10] or ["unspecified violation"]
            raise Failure("runtime_error", *(f"{head.get('label', '?')}: {p}" for p in problems))
        if kind in ("eof", "channel_error"):
            raise Failure("runtime_error", self._death_reason(head))
        if kind != expected:
            raise Failure("runtime_error", f"sandbox protocol: expected {expected!r}, got {kind!r}")
        return t, head, tensor

    def _death_reason(self, head: dict[str, Any]) -> str:
        if self.child.killed_because:
            return f"the candidate's process was killed: {self.child.killed_because}"
        log = self.scratch / "candidate.log"
        tail = log.read_text(errors="replace")[-800:].strip() if log.exists() else ""
        what = head.get("summary") or "the candidate's process ended without reporting"
        return f"{what}{'; its output ended with: ' + tail if tail else ''}"

    # -- run -----------------------------------------------------------------------------------------------
    def execute(self) -> Outcome:
        started = time.perf_counter()

        def phase(name: str) -> None:
            self.phase_ends[name] = time.perf_counter()
            self.outcome.phase_seconds[name] = round(time.perf_counter() - started - sum(
                self.outcome.phase_seconds.values()), 3)

        try:
            self.prefetch.start()
            _, ready, _ = self._next("ready")
            self.outcome.fs_isolation = str(ready.get("fs_isolation", "off"))
            phase("start_and_import")
            last = time.perf_counter()
            for trial in self.plan.trials:
                self._step(trial.id)
                self._judge_trial(trial)
                self.outcome.judged.append(trial.id)
                self.progress("judged")
                now = time.perf_counter()
                self.outcome.trial_seconds[f"{trial.case.id} ({trial.label}, trial {trial.id})"] = round(now - last, 3)
                last = now
            self._step(self.after_trials)
            timing = self.prefetch.finish()  # the thread has ended: no more device work from this process
            self.timing_digests, self.timing_refs = timing.digests, timing.refs
            phase("correctness")
            if self.plan.timing is not None and self.peers is not None:
                self.peers.wait_for_others(self)  # the other children have exited, their parent threads ended
                phase("waiting_for_other_children")
            self._release_device_memory()
            if self.plan.timing is not None:
                self.progress("timing")
                self._timing_stage()
                phase("timing")
            else:
                self._next("done")
        except _Stopped:
            self._stopped()
        except Failure as failure:
            self._failed(failure.stage, failure.reasons)
        except ChildTimeout:
            self._failed("runtime_error", [f"the candidate's process was killed: {self.child.killed_because}"])
        except torch.OutOfMemoryError as exc:  # the verifier's own references/digests: no verdict on the candidate
            self._failed("runtime_error", [f"verifier infrastructure: the verifier's process ran out of device "
                                           f"memory while checking this candidate "
                                           f"({' '.join(str(exc).split())[:240]})"])
        finally:
            self.outcome.exit_status = self.child.finish()
            self.outcome.exit_statuses = [self.outcome.exit_status]
            self.prefetch.close()
            self.kept.clear()
            self.timing_refs.clear()
            self._release_device_memory()
        return self.outcome

    def _step(self, position: int) -> None:
        """Move to `position` of the plan; raises `_Stopped` if another child's run failed before it."""
        if self.peers is not None:
            self.peers.step(self, position)
        else:
            self.position = position

    def _failed(self, stage: str, reasons: list[str]) -> None:
        if self.peers is not None and self.peers.was_stopped(self):
            self._stopped()  # the failure is the verifier's kill (or comes later in the plan than the other's)
            return
        self.outcome.stage, self.outcome.reasons = stage, reasons
        self.outcome.failed_at = self.position
        if self.peers is not None:
            self.peers.failed(self)

    def _stopped(self) -> None:
        self.outcome.stopped = True
        self.outcome.stage = "runtime_error"
        self.outcome.reasons = ["stopped early: the candidate failed in another sandbox child"]
        self.outcome.failed_at = None

    def _release_device_memory(self) -> None:
        """Hand the parent's cached-but-free GPU blocks back to the driver so the candidate's process can use
        them: references and input digests are computed here on the same GPU (transiently up to ~17 GiB on the
        H200 bench cases), and the caching allocator would otherwise keep that memory reserved across candidates.
        (The 108-138 GiB once held by an optimize run's parent was JAX, initialized by bm25s; see
        `knowledge.retrieval._import_bm25s`.)"""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.empty_cache()

    # -- correctness ---------------------------------------------------------------------------------------
    def _judge_trial(self, trial: Trial) -> None:
        _, head, tensor = self._next("trial")
        label = f"case {trial.case.id} ({trial.label}, trial {trial.id}, seed {trial.seed:#x})"
        if head.get("id") != trial.id:
            raise Failure("runtime_error", f"sandbox protocol: result for trial {head.get('id')} instead of {trial.id}")
        base = self.kept.pop(trial.base, None) if trial.base is not None else None
        if trial.kind == "perturb":
            if base is None:
                raise Failure("runtime_error", f"{label}: perturbation of an unknown trial")
            prepared = self._perturbed(base.inputs, trial)
            if prepared.digest == base.digest:
                raise Failure("runtime_error", f"verifier infrastructure: {label}: the perturbation left every input "
                              "as it was, so the trial could not tell a replayed output")
        else:
            prepared = self.prefetch.take(trial)
        inputs, digest, expected = prepared.inputs, prepared.digest, prepared.expected
        if head.get("digest") != digest:
            raise Failure("runtime_error", f"{label}: the sandbox's inputs differ from the verifier's (input "
                          "generation was tampered with)")
        if head.get("digest_after") != digest:
            raise Failure("runtime_error", f"{label}: the candidate modified its inputs (input mutation)")
        got = self._output(tensor, inputs, label)
        tol = self._tolerance(str(inputs[self.output].dtype).replace("torch.", ""))
        result = compare(got, expected, tol)
        if trial.kind == "ablate":
            if result.ok:
                raise Failure("runtime_error", f"{label}: the output matched the reference with every Triton launch "
                              "disabled, so the answer does not come from the candidate's kernels (dead kernel)")
            return
        if int(head.get("launches", 0)) < 1:
            raise Failure("runtime_error", f"{label}: no Triton kernel was launched")
        if base is not None:
            self._check_sensitivity(label, trial, base, got, expected, tol)
        self._record(trial.case, result, tol)
        if not result.ok:
            raise Failure("mismatch", f"{label}: {describe(result, self.output, tol)}")
        if trial.id in self.bases:
            self.kept[trial.id] = _Kept(inputs, got, expected, digest)

    def _perturbed(self, inputs: dict[str, Any], trial: Trial) -> Prepared:
        """A perturbation trial: its base trial's inputs edited in place, digested, and their reference (here, not
        prefetched: the edit needs the base trial judged first)."""
        apply_perturbation(self.task, inputs, trial)
        return Prepared(inputs, input_digest(inputs, skip=(self.output,)), self.task.reference(inputs)[self.output])

    def _tolerance(self, dtype: str) -> Tolerance:
        """The task's tolerance for `dtype`; on the CPU the candidate ran under the Triton interpreter, where the
        task may state tighter ones (exact float32 dots)."""
        return self.task.tolerance(dtype, interpreter=self.device.type == "cpu")

    def _output(self, tensor: torch.Tensor | None, inputs: dict[str, Any], label: str) -> torch.Tensor:
        want = inputs[self.output]
        if tensor is None or tensor.dtype != want.dtype or tuple(tensor.shape) != tuple(want.shape):
            raise Failure("runtime_error", f"{label}: the sandbox returned no {self.output} of the right shape and "
                          "dtype")
        return tensor.to(self.device)

    def _check_sensitivity(self, label: str, trial: Trial, base: _Kept, got: torch.Tensor, expected: torch.Tensor,
                           tol: Tolerance) -> None:
        moved_at, problem = replay_check(base.expected, base.output, expected, got, tol)
        if problem is not None:
            raise Failure("mismatch", f"{label}: {problem}")
        if moved_at:
            self.outcome.sensitive.append(trial.id)

    def _record(self, case: Case, c: Comparison, tol) -> None:
        prev = self.outcome.errors.get(case.id) or CaseErrors(case_id=case.id, atol=tol.atol, rtol=tol.rtol)
        self.outcome.errors[case.id] = CaseErrors(
            case_id=case.id, trials=prev.trials + 1, elements=prev.elements + c.elements,
            mismatches=prev.mismatches + c.mismatches, nonfinite=prev.nonfinite + c.nonfinite,
            max_abs_error=max(prev.max_abs_error, c.max_abs_error),
            max_rel_error=max(prev.max_rel_error, c.max_rel_error), atol=tol.atol, rtol=tol.rtol)

    # -- timing --------------------------------------------------------------------------------------------
    def _timing_stage(self) -> None:
        """Release the child into timing; this process stays off the GPU until every case is timed (the prefetch
        thread, which computed the digests and references used here, has ended)."""
        assert self.plan.timing is not None and not self.prefetch.running
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        self._next("await_go")
        self._step(self.after_trials + 1)
        self.child.send({"type": "go"})
        timed = [self._receive_case(tc) for tc in self.plan.timing.cases]
        self._next("done")
        for record in timed:
            self._judge_timed(record)

    def _receive_case(self, tc: TimedCase) -> _Timed:
        timing = self.plan.timing
        assert timing is not None
        _, head, _ = self._next("case_begin")
        if head.get("case") != tc.case.id:
            raise Failure("runtime_error", f"sandbox protocol: timing {head.get('case')} instead of {tc.case.id}")
        walls = []
        for _ in range(timing.reps):
            t_begin, mark, _ = self._next("m")
            t_end, mark2, _ = self._next("m")
            if (mark.get("k"), mark2.get("k")) != ("rb", "re"):
                raise Failure("runtime_error", "sandbox protocol: timing markers out of order")
            walls.append((t_end - t_begin) * 1e6)
        _, summary, _ = self._next("timing")
        event_us = [float(x) for x in summary.get("event_us", [])]
        wall_us = [float(x) for x in summary.get("wall_us", [])]
        captures = [tuple(c) for c in summary.get("captures", [])]
        if len(event_us) != timing.reps or len(wall_us) != timing.reps or sorted(captures) != sorted(tc.captures):
            raise Failure("runtime_error", f"timing {tc.case.id}: the sandbox reported a different number of calls "
                          "or captures than the plan fixed")
        exposed = exposed_reps(tc.call_seeds, timing.reps) if self.device.type == "cuda" else frozenset()
        covers = self._covers(tc.case.id, summary.get("cover_us"), exposed, timing.reps)
        walls = [w - c for w, c in zip(walls, covers)]
        digests = summary.get("digests", [])
        for s in range(len(tc.seeds)):
            if s >= len(digests) or digests[s] != self.timing_digests[(tc.case.id, s)]:
                raise Failure("runtime_error", f"timing {tc.case.id}: rotation set {s} differs from the verifier's "
                              "inputs")
        received = []
        for rep, s in tc.captures:
            _, cap, tensor = self._next("capture")
            if (cap.get("case"), cap.get("rep"), cap.get("set")) != (tc.case.id, rep, s) or tensor is None:
                raise Failure("runtime_error", f"timing {tc.case.id}: capture of call {rep} missing or out of order")
            received.append((rep, s, tensor))
        return _Timed(tc, event_us, wall_us, walls, received, exposed)

    def _covers(self, case_id: str, reported: Any, exposed: frozenset[int], reps: int) -> list[float]:
        """The child's GPU-side delays per call (microseconds), bounded by the timing protocol: none before
        exposed calls and at most a few `HOST_COVER_US` before the others (a delay that ran short only shows host
        work; another process time-slicing the GPU can stretch any of them)."""
        covers = [float(x) for x in reported] if isinstance(reported, list) else []
        gpu = self.device.type == "cuda"
        if len(covers) != reps:
            raise Failure("runtime_error", f"timing {case_id}: the sandbox reported {len(covers)} GPU-side delays "
                          f"for {reps} calls")
        for r, c in enumerate(covers):
            limit = 1000.0 if (r in exposed or not gpu) else 4 * HOST_COVER_US + 2000.0
            if not (math.isfinite(c) and 0 <= c <= limit):
                kind = "an exposed" if r in exposed else "a covered"
                raise Failure("runtime_error", f"timing {case_id}: call {r} had a GPU-side delay of {c:.1f} us "
                              f"(the protocol allows 0 to {limit:.0f} us for {kind} call)")
        return covers

    def _judge_timed(self, record: _Timed) -> None:
        case = record.case.case
        tol = self._tolerance(str(case.params.get("dtype")))
        for rep, s, tensor in record.captures:
            expected = self.timing_refs[(case.id, rep)]
            result = compare(tensor.to(self.device), expected, tol)
            self._record(case, result, tol)
            if not result.ok:
                raise Failure("mismatch", f"case {case.id}: output of timed call {rep} (input set {s}), re-checked "
                              f"after the timing loop: {describe(result, self.output, tol)}")
        self._check_clocks(case.id, record)
        self.outcome.timings[case.id] = CaseTiming(
            case_id=case.id, time_us=median(record.covered(record.event_us)), reps=len(record.event_us),
            warmup=self.plan.timing.warmup if self.plan.timing else 0, min_us=min(record.covered(record.event_us)),
            max_us=max(record.covered(record.event_us)), wall_us=median(record.covered(record.wall_us)),
            verifier_wall_us=median(record.covered(record.verifier_wall_us)))

    @staticmethod
    def _check_clocks(case_id: str, record: _Timed) -> None:
        """Reject times that are non-positive or that the wall clocks contradict."""
        if not all(math.isfinite(e) and e > 0 for e in record.event_us):
            raise Failure("too_fast_to_be_true", f"case {case_id}: non-positive or non-finite event times")
        groups = (record.exposed, set(range(len(record.event_us))) - record.exposed)
        for group in (g for g in groups if g):
            off = sum(1 for r in group if _clocks_disagree(record.event_us[r], record.wall_us[r]))
            if off > len(group) // 5:
                raise Failure("too_fast_to_be_true", f"case {case_id}: CUDA-event times disagree with the sandbox's "
                              f"wall clock in {off}/{len(group)} calls (event {median(record.event_us):.1f} us, "
                              f"wall {median(record.wall_us):.1f} us): timers tampered with or work hidden from "
                              "the events")
        event, seen = median(record.event_us), median(record.verifier_wall_us)
        if event < 0.8 * seen - 200:
            raise Failure("too_fast_to_be_true", f"case {case_id}: reported {event:.1f} us per call but the "
                          f"verifier's own clock saw {seen:.1f} us per call")


def replay_check(base_expected: torch.Tensor, base_output: torch.Tensor, expected: torch.Tensor, got: torch.Tensor,
                 tol: Tolerance) -> tuple[int, str | None]:
    """An in-place perturbation trial judged: (the number of elements where its reference `expected` moved from its
    base trial's reference `base_expected`, elementwise beyond `tol` as `compare.moved` says; why the trial fails,
    or None). It fails when the candidate's output `got` stayed at its base output `base_output` at more than half of
    those elements (a cached or replayed result). All four are shaped like the output.

    A trial whose reference moved nowhere checks nothing (a replayed output would match): it does not fail, but it
    does not count as a sensitivity check either (`Outcome.sensitive`; extend attention's redraw of q alone leaves
    a row that sees one key unchanged).
    """
    ref_moved = moved(base_expected, expected, tol)
    total = int(ref_moved.sum().item())
    stuck = int((ref_moved & ~moved(base_output, got, tol)).sum().item())
    if total and stuck > total // 2:
        return total, (f"the output did not move when the inputs moved in place: the reference changed at {total} "
                       f"elements, the candidate's output stayed at {stuck} of them (a cached or replayed result)")
    return total, None


def _clocks_disagree(event_us: float, wall_us: float) -> bool:
    """True when a call's event time is far below or above its sandbox wall time (wall includes ~10-50 us of
    synchronize and clock overhead)."""
    return event_us < 0.5 * wall_us - 50 or event_us > 1.5 * wall_us + 20
