"""Several sandbox children for one candidate: its plan split (`plan.split_plan`), one `DynamicRun` per child,
each in a thread of its own, merged into the verdict the one-child run would give."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from agent.verifier.dynamic import DynamicRun, Outcome, _Stopped
from agent.verifier.plan import Plan
from agent.verifier.sandbox import ChildProcess
from agent.verifier.verdict import CaseErrors
from kernels.task import TaskSpec

#: `ChildProcess.killed_because` of a child the verifier stopped because its sibling failed first.
STOPPED_BECAUSE = "stopped by the verifier: the candidate failed in another sandbox child"


class ParallelRun:
    """One candidate's plan split over several sandbox children that run at the same time (`plan.split_plan`):
    one `DynamicRun` per child, each driven in a thread of its own, and one merged `Outcome`.

    Why: on a GPU a child compiles its Triton kernels lazily, one specialization after another, CPU-bound, while
    the GPU idles; several children compile at once (on the H200: 28 s -> 20.5 s for a cold baseline verification
    with three children -> four, BENCHMARKS.md session 4).

    The verdict is the serial one: a pass only if every run passed; otherwise the failure that comes first in the
    order of the whole plan (`Outcome.failed_at`; the first child's on a tie, e.g. both failing at import), so
    the reported failure does not depend on which child got there first. To save time, once a run has failed at
    position p, every other run is stopped (its child killed) as soon as it is past p -- it has then judged all of
    its trials that come before p, so none of its failures could be reported instead.

    The run with the timing plan (`split_plan` gives it to the first child) does not start timing before every
    other run has ended: its child exited and reaped, its prefetch thread joined, its device memory released
    (`DynamicRun.execute`'s cleanup); then it synchronizes and releases its own as before, so no other process of
    the verification is on the GPU while it times. Its child's deadline is moved by the time it waited.

    An exception other than a verdict in any run's thread stops every other run; `execute` joins all threads
    (every child is finished by its own run) and raises it again.
    """

    def __init__(self, task: TaskSpec, plan: Plan, parts: list[tuple[Plan, ChildProcess, Path]],
                 progress: Callable[[str], None] | None = None):
        self.plan = plan
        self.after_trials = len(plan.trials)
        self._lock = threading.Lock()
        self._stop_after: int | None = None  # runs stop once they are past this plan position
        self._stopped: set[int] = set()  # indices of the runs stopped
        self._errors: list[BaseException] = []
        self.runs = [DynamicRun(task, p, child, scratch, peers=self, progress=progress)
                     for p, child, scratch in parts]
        self._done = [threading.Event() for _ in self.runs]
        self._ended_at = [0.0 for _ in self.runs]
        self.threads: list[threading.Thread] = []

    # -- called by the runs (each from its own thread) -----------------------------------------------------
    def _index(self, run: DynamicRun) -> int:
        return next(i for i, r in enumerate(self.runs) if r is run)

    def step(self, run: DynamicRun, position: int) -> None:
        """`run` moves on to `position`; raises `_Stopped` if another run failed before it."""
        with self._lock:
            run.position = position
            i = self._index(run)
            if i in self._stopped or (self._stop_after is not None and position > self._stop_after):
                self._stopped.add(i)
                raise _Stopped()

    def failed(self, run: DynamicRun) -> None:
        """`run` failed at `run.outcome.failed_at`: stop every other run that is past that position already."""
        assert run.outcome.failed_at is not None
        with self._lock:
            at = run.outcome.failed_at
            self._stop_after = at if self._stop_after is None else min(self._stop_after, at)
            self._stop_others(run, self._stop_after)

    def was_stopped(self, run: DynamicRun) -> bool:
        with self._lock:
            return self._index(run) in self._stopped

    def wait_for_others(self, run: DynamicRun) -> None:
        """Block until every other run has ended; raises `_Stopped` if any of them did not pass."""
        i = self._index(run)
        waited = time.monotonic()
        for j, done in enumerate(self._done):
            if j != i:
                done.wait()
        run.child.deadline += time.monotonic() - waited  # the child sat idle waiting for the others
        with self._lock:
            if (i in self._stopped or self._stop_after is not None or self._errors
                    or any(r.outcome.stage for j, r in enumerate(self.runs) if j != i)):
                self._stopped.add(i)
                raise _Stopped()

    def _stop_others(self, run: DynamicRun | None, after: int) -> None:
        for j, other in enumerate(self.runs):
            if other is not run and not self._done[j].is_set() and j not in self._stopped and other.position > after:
                self._stopped.add(j)
                other.child.kill(STOPPED_BECAUSE)

    def abort(self) -> None:
        """Stop every run that has not ended (an exception in a run, or in the caller's thread)."""
        with self._lock:
            self._stop_after = -2
            self._stop_others(None, -2)

    # -- the caller's side ---------------------------------------------------------------------------------
    def _drive(self, i: int) -> None:
        try:
            self.runs[i].execute()
        except BaseException as exc:  # noqa: BLE001 - raised again by `execute` after every thread ended
            with self._lock:
                self._errors.append(exc)
            self.abort()
        finally:
            self._ended_at[i] = time.perf_counter()
            self._done[i].set()

    def execute(self) -> Outcome:
        """Run every part at once and merge the outcomes; every thread has ended when it returns or raises.

        Raises:
            BaseException: the first exception (not a verdict) raised in a run's thread.
        """
        started = time.perf_counter()
        self.threads = [threading.Thread(target=self._drive, args=(i,), name=f"verifier-child-run-{i}", daemon=True)
                        for i in range(len(self.runs))]
        try:
            for thread in self.threads:
                thread.start()
            for thread in self.threads:
                thread.join()
        except BaseException:
            self.abort()
            for j, thread in enumerate(self.threads):
                if thread.ident is not None:
                    thread.join()
                else:  # never started: its child was never driven, so nothing else finishes it
                    self.runs[j].child.finish()
            raise
        if self._errors:
            raise self._errors[0]
        return self._merge(started)

    def _merge(self, started: float) -> Outcome:
        outcomes = [r.outcome for r in self.runs]
        merged = Outcome()
        failures = [(o.failed_at, i) for i, o in enumerate(outcomes) if o.stage and not o.stopped]
        if failures:
            first = outcomes[min(failures)[1]]  # type: ignore[type-var]
            merged.stage, merged.reasons, merged.failed_at = first.stage, list(first.reasons), first.failed_at
        elif any(o.stage for o in outcomes):  # stopped with no failure to show: never a pass
            stopped = next(o for o in outcomes if o.stage)
            merged.stage, merged.reasons = stopped.stage, list(stopped.reasons)
        for o in outcomes:
            for case_id, e in o.errors.items():
                merged.errors[case_id] = _merge_errors(merged.errors.get(case_id), e)
            merged.timings.update(o.timings)
            merged.trial_seconds.update(o.trial_seconds)
            merged.fs_isolation = merged.fs_isolation or o.fs_isolation
            merged.judged += o.judged
            merged.sensitive += o.sensitive
        merged.exit_statuses = [o.exit_status for o in outcomes]
        merged.exit_status = next((s for s in merged.exit_statuses if s), 0)
        merged.phase_seconds = self._phases(started)
        return merged

    def _phases(self, started: float) -> dict[str, float]:
        """Wall-clock phases of the whole verification -- start_and_import (until every child was ready),
        correctness (until every child had judged its trials: the children without timing exited), timing -- and
        per child the seconds until its correctness trials were done (``correctness_child_a``, ...) and the time
        the timing child waited for the others."""
        names = "abcdefgh"
        ends = []
        for i, run in enumerate(self.runs):
            end = run.phase_ends.get("correctness") if run.plan.timing is not None else None
            ends.append(end or self._ended_at[i])
        phases: dict[str, float] = {}
        ready = [r.phase_ends.get("start_and_import") for r in self.runs]
        imported = max(ready) if all(ready) else None  # type: ignore[type-var]
        if imported is not None:
            phases["start_and_import"] = round(imported - started, 3)
            phases["correctness"] = round(max(max(ends) - imported, 0.0), 3)
        for i, run in enumerate(self.runs):
            phases[f"correctness_child_{names[i]}"] = round(ends[i] - started, 3)
            if "waiting_for_other_children" in run.outcome.phase_seconds:
                phases[f"child_{names[i]}_waited_for_the_others"] = run.outcome.phase_seconds[
                    "waiting_for_other_children"]
            if "timing" in run.outcome.phase_seconds:
                phases["timing"] = run.outcome.phase_seconds["timing"]
        return phases


def _merge_errors(a: CaseErrors | None, b: CaseErrors) -> CaseErrors:
    if a is None:
        return b
    return CaseErrors(case_id=b.case_id, trials=a.trials + b.trials, elements=a.elements + b.elements,
                      mismatches=a.mismatches + b.mismatches, nonfinite=a.nonfinite + b.nonfinite,
                      max_abs_error=max(a.max_abs_error, b.max_abs_error),
                      max_rel_error=max(a.max_rel_error, b.max_rel_error), atol=b.atol, rtol=b.rtol)
