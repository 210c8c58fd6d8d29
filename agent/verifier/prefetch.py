"""The parent's own work per trial -- regenerate the inputs, digest them, compute the float32 reference -- done
ahead of the child in one background thread, so that it overlaps the child's run instead of following it.

Why: the parent used to start a trial's work only once the child had reported that trial, so every second it
spent there was added to the verification. On an H200 (baseline candidate, 9-case suite) the parent's 52
reference calls alone took 2.2-2.4 s of a 9.5 s verification (24.7 s when the child compiled its kernels),
on top of input generation and digests. The child does not wait for the parent during the correctness trials,
so none of this needs to be serial.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import torch

from agent.verifier.plan import Plan, TimedCase, TimingPlan, Trial, fresh_values, input_digest, make_trial_inputs
from kernels.task import TaskSpec


@dataclass
class Prepared:
    """One trial as the parent computed it: its inputs, their digest (output skipped) and the reference output."""

    inputs: dict[str, Any]
    digest: str
    expected: torch.Tensor


@dataclass
class TimingReferences:
    """Digest of every rotation set, by (case id, set), and reference of every captured call, by (case id, rep)."""

    digests: dict[tuple[str, int], str] = field(default_factory=dict)
    refs: dict[tuple[str, int], torch.Tensor] = field(default_factory=dict)


def prepare_trial(task: TaskSpec, trial: Trial, device: torch.device, output: str) -> Prepared:
    """Inputs, digest and reference of a check or ablation trial."""
    inputs = make_trial_inputs(task, trial.case, trial.seed, device)
    return Prepared(inputs, input_digest(inputs, skip=(output,)), task.reference(inputs)[output])


def prepare_rotation_set(task: TaskSpec, timing: TimingPlan, timed: TimedCase, s: int, device: torch.device,
                         output: str, into: TimingReferences) -> None:
    """Digest of rotation set `s` of `timed`, and references of its captured calls (the set with the fresh inputs
    of that call, `plan.fresh_values`), into `into`."""
    inputs = make_trial_inputs(task, timed.case, timed.seeds[s], device)
    into.digests[(timed.case.id, s)] = input_digest(inputs, skip=(output,))
    for rep, _ in [c for c in timed.captures if c[1] == s]:
        fresh = fresh_values(task, inputs, timed.call_seeds[timing.warmup + rep])
        into.refs[(timed.case.id, rep)] = task.reference({**inputs, **fresh})[output]


class TrialPrefetcher:
    """Prepares every check and ablation trial of `plan` (`Prepared`, in plan order, at most `ahead` not yet
    taken, which bounds the device memory held) and the timing plan's digests and references, in one thread.

    Trials come first whenever one may be prepared; the rotation sets fill the time the thread would otherwise
    wait. Perturbation trials are not prepared here: they edit the kept inputs of their base trial in place, so
    the caller computes them after judging that base trial.

    `take` hands out the next trial, `finish` waits for the rest and returns the timing references, `close`
    stops and joins the thread. An exception in the thread is raised again by the first `take` or `finish`
    whose result it prevented; once it happened, nothing more is prepared.
    """

    def __init__(self, task: TaskSpec, plan: Plan, device: torch.device, output: str, ahead: int = 2):
        self.task, self.device, self.output, self.timing_plan = task, device, output, plan.timing
        self.timing = TimingReferences()
        self._trials = deque(t for t in plan.trials if t.kind != "perturb")
        timed = plan.timing.cases if plan.timing else ()
        self._sets = deque((tc, s) for tc in timed for s in range(len(tc.seeds)))
        self._ready: queue.Queue[tuple[int | None, Any]] = queue.Queue()
        self._slots = threading.Semaphore(ahead)
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._cuda_index = (device.index if device.index is not None else torch.cuda.current_device()
                            ) if device.type == "cuda" else None
        self._thread = threading.Thread(target=self._work, name="verifier-trial-prefetch", daemon=True)

    def start(self) -> TrialPrefetcher:
        self._thread.start()
        return self

    def _work(self) -> None:
        try:
            if self._cuda_index is not None:
                torch.cuda.set_device(self._cuda_index)  # the thread's current device, for any "cuda" tensor
            while (self._trials or self._sets) and not self._stop.is_set():
                if self._trials and self._slots.acquire(blocking=not self._sets):
                    if self._stop.is_set():
                        return
                    trial = self._trials.popleft()
                    self._ready.put((trial.id, prepare_trial(self.task, trial, self.device, self.output)))
                else:
                    timed, s = self._sets.popleft()
                    assert self.timing_plan is not None
                    prepare_rotation_set(self.task, self.timing_plan, timed, s, self.device, self.output,
                                         self.timing)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            self._error = exc
            self._ready.put((None, exc))

    def take(self, trial: Trial) -> Prepared:
        """The prepared `trial` (the next check or ablation trial of the plan); waits for it.

        Raises:
            Exception: whatever the thread raised before it could prepare this trial.
        """
        if self._error is not None and self._ready.empty():
            raise self._error
        trial_id, item = self._ready.get()
        if trial_id is None:
            raise item
        if trial_id != trial.id:
            raise RuntimeError(f"verifier: trial {trial.id} requested, trial {trial_id} was prepared")
        self._slots.release()
        return item

    def finish(self) -> TimingReferences:
        """Wait until everything is prepared and the thread has ended (it holds nothing on the device after).

        Raises:
            Exception: whatever the thread raised.
        """
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self.timing

    def close(self) -> None:
        """Stop the thread (after the step it is in), join it and drop everything it prepared (trials nobody took,
        the timing references), so the caller can hand the device memory back."""
        self._stop.set()
        self._slots.release()  # wakes the thread if it waits for a slot
        if self._thread.ident is not None:
            self._thread.join()
        while not self._ready.empty():
            self._ready.get_nowait()
        self.timing.digests.clear()
        self.timing.refs.clear()

    @property
    def running(self) -> bool:
        """Whether the thread is still alive (it may be using the device)."""
        return self._thread.is_alive()
