"""The parent's prefetch thread: it yields what the serial path computes, raises the thread's errors where their
result is needed, stays bounded, and is joined when `DynamicRun.execute` returns (pass, failure, timeout)."""

from __future__ import annotations

import dataclasses
import textwrap
import threading
import time

import pytest
import torch

import agent.verifier.dynamic as dynamic
import agent.verifier.prefetch as prefetch
from agent.verifier import Verifier, VerifyOptions
from agent.verifier.dynamic import DynamicRun
from agent.verifier.plan import (
    Plan,
    PlanSettings,
    apply_perturbation,
    build_plan,
    fresh_values,
    input_digest,
    make_trial_inputs,
)
from agent.verifier.prefetch import TrialPrefetcher
from agent.verifier.sandbox import ChildTimeout
from kernels.task import load_task

TASK = load_task("extend_attention")
OUT = TASK.output_args[0]
CPU = torch.device("cpu")
#: The CPU path is what CI runs; the CUDA one (a thread of its own on the device) runs where there is a GPU.
DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a GPU")])]


def _plan(timing: bool = False, device: str = "cpu") -> Plan:
    settings = PlanSettings(include_test_cases=True, include_bench_cases=False, random_cases=2, small=True,
                            timing=timing, reps=4, rotations=2, case_ids=("gqa-4", "sinks"))
    return build_plan(TASK, device, settings)


def _serial(trial, device: torch.device):
    """What the parent computed for `trial` before the prefetch thread: inputs, digest, reference."""
    inputs = make_trial_inputs(TASK, trial.case, trial.seed, device)
    return inputs, input_digest(inputs, skip=(OUT,)), TASK.reference(inputs)[OUT]


def _prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "verifier-trial-prefetch"]


@pytest.mark.parametrize("device", DEVICES)
def test_prefetched_trials_and_timing_references_equal_the_serial_ones(device):
    plan, dev = _plan(timing=True, device=device), torch.device(device)
    assert plan.timing is not None
    fetcher = TrialPrefetcher(TASK, plan, dev, OUT).start()
    try:
        checked = [t for t in plan.trials if t.kind != "perturb"]
        assert len(checked) == len(plan.trials) - 2  # the perturbation and the redraw of the fresh inputs
        for trial in checked:
            got = fetcher.take(trial)
            inputs, digest, expected = _serial(trial, dev)
            assert got.digest == digest
            assert torch.equal(got.expected, expected)
            assert input_digest(got.inputs) == input_digest(inputs)  # the output buffer (NaN) too
        timing = fetcher.finish()
        assert not fetcher.running
        for timed in plan.timing.cases:
            for s, seed in enumerate(timed.seeds):
                inputs = make_trial_inputs(TASK, timed.case, seed, dev)
                assert timing.digests[(timed.case.id, s)] == input_digest(inputs, skip=(OUT,))
                for rep, s2 in timed.captures:
                    if s2 == s:
                        fresh = fresh_values(TASK, inputs, timed.call_seeds[plan.timing.warmup + rep])
                        assert set(fresh) == {"q_extend"}
                        ref = TASK.reference({**inputs, **fresh})[OUT]
                        assert torch.equal(timing.refs[(timed.case.id, rep)], ref)
        assert len(timing.refs) == sum(len(t.captures) for t in plan.timing.cases)
    finally:
        fetcher.close()
    assert not fetcher.running and not fetcher.timing.refs


def test_the_thread_stays_at_most_two_trials_ahead(monkeypatch):
    made = []
    real = prefetch.prepare_trial
    monkeypatch.setattr(prefetch, "prepare_trial", lambda *a: made.append(a[1].id) or real(*a))
    plan = _plan()
    checked = [t for t in plan.trials if t.kind != "perturb"]
    fetcher = TrialPrefetcher(TASK, plan, CPU, OUT).start()
    try:
        deadline = time.monotonic() + 10
        while len(made) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        assert made == [t.id for t in checked[:2]]
        fetcher.take(checked[0])
        deadline = time.monotonic() + 10
        while len(made) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        assert made == [t.id for t in checked[:3]]
    finally:
        fetcher.close()  # wakes the thread waiting for a slot
    assert not fetcher.running


def _failing_reference(on_call: int):
    calls = []

    def reference(inputs):
        calls.append(1)
        if len(calls) == on_call:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return TASK.reference(inputs)

    return dataclasses.replace(TASK, reference=reference)


def test_an_error_in_the_thread_is_raised_where_that_trial_is_needed():
    plan = _plan()
    checked = [t for t in plan.trials if t.kind != "perturb"]
    fetcher = TrialPrefetcher(_failing_reference(on_call=3), plan, CPU, OUT).start()
    try:
        fetcher.take(checked[0])
        fetcher.take(checked[1])
        with pytest.raises(torch.OutOfMemoryError, match="simulated"):
            fetcher.take(checked[2])
        with pytest.raises(torch.OutOfMemoryError):
            fetcher.finish()
    finally:
        fetcher.close()
    assert not fetcher.running


def test_an_error_in_the_timing_work_is_raised_at_the_next_result_needed(monkeypatch):
    def broken(*args):
        raise ValueError("rotation set broke")

    monkeypatch.setattr(prefetch, "prepare_rotation_set", broken)
    plan = _plan(timing=True)
    checked = [t for t in plan.trials if t.kind != "perturb"]
    fetcher = TrialPrefetcher(TASK, plan, CPU, OUT).start()
    try:
        deadline = time.monotonic() + 10
        while fetcher.running and time.monotonic() < deadline:  # it fails on the first set, after two trials
            time.sleep(0.01)
        fetcher.take(checked[0])  # the two trials prepared before the thread turned to the timing work
        fetcher.take(checked[1])
        with pytest.raises(ValueError, match="rotation set broke"):
            fetcher.take(checked[2])
    finally:
        fetcher.close()
    assert not fetcher.running


class FakeChild:
    """The child's side of the correctness trials, played from the plan as an honest sandbox would (its output is
    the reference; the ablation's is NaN); `wrong_at` answers that trial with a wrong output, `timeout_at` makes
    that trial's message time out."""

    def __init__(self, plan: Plan, wrong_at: int | None = None, timeout_at: int | None = None):
        self.plan, self.wrong_at, self.timeout_at = plan, wrong_at, timeout_at
        self.device = torch.device(plan.device)
        self.killed_because = ""
        self.finished = False
        self._messages = self._play()

    def _play(self):
        yield {"type": "ready"}, None
        kept = {}
        for trial in self.plan.trials:
            if trial.id == self.timeout_at:
                self.killed_because = "timed out"
                raise ChildTimeout()
            if trial.kind == "perturb":
                inputs = kept.pop(trial.base)
                apply_perturbation(TASK, inputs, trial)
            else:
                inputs = make_trial_inputs(TASK, trial.case, trial.seed, self.device)
            kept[trial.id] = inputs
            out = TASK.reference(inputs)[OUT].to(inputs[OUT].dtype)
            if trial.kind == "ablate":
                out = torch.full_like(out, float("nan"))
            if trial.id == self.wrong_at:
                out = out + 1
            digest = input_digest(inputs, skip=(OUT,))
            yield {"type": "trial", "id": trial.id, "digest": digest, "digest_after": digest, "launches": 1}, out
        yield {"type": "done"}, None

    def next(self):
        header, tensor = next(self._messages)
        return time.perf_counter(), header, tensor

    def send(self, header) -> None:
        pass

    def finish(self) -> int:
        self.finished = True
        return 0


@pytest.mark.parametrize("child, make_task, stage, reason", [
    (dict(), lambda: TASK, None, ""),
    (dict(wrong_at=3), lambda: TASK, "mismatch", "trial 3"),
    (dict(timeout_at=4), lambda: TASK, "runtime_error", "killed: timed out"),
    (dict(), lambda: _failing_reference(on_call=2), "runtime_error", "verifier infrastructure"),
], ids=["pass", "mismatch", "child-timeout", "worker-oom"])
@pytest.mark.parametrize("device", DEVICES)
def test_execute_returns_with_the_thread_joined(tmp_path, device, child, make_task, stage, reason):
    plan = _plan(device=device)
    fake = FakeChild(plan, **child)
    run = DynamicRun(make_task(), plan, fake, tmp_path)  # type: ignore[arg-type]
    outcome = run.execute()
    assert outcome.stage == stage, outcome.reasons
    assert reason in " ".join(outcome.reasons)
    assert fake.finished and not run.prefetch.running and not _prefetch_threads()
    if stage is None:
        assert sum(e.trials for e in outcome.errors.values()) == len(plan.trials) - 1  # every trial but the ablation


def _write(tmp_path, body: str) -> str:
    sig = ("def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, "
           "kv_indptr, kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, "
           "sm_scale=None, logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None, "
           "window_kv_offsets=None, xai_temperature_len=-1):\n")
    path = tmp_path / "candidate.py"
    path.write_text(f"import torch\n\n\n{sig}{textwrap.indent(textwrap.dedent(body), '    ')}")
    return str(path)


@pytest.mark.slow  # ~14 s on a busy 2-core machine
@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU sandbox")
def test_a_real_child_timeout_leaves_no_thread_behind(tmp_path, monkeypatch):
    runs: list[DynamicRun] = []
    real = dynamic.DynamicRun.execute

    def execute(self):
        runs.append(self)
        return real(self)

    monkeypatch.setattr(dynamic.DynamicRun, "execute", execute)
    with Verifier(TASK, options=VerifyOptions(device="cpu", timeout_s=5, skip_static=True)) as verifier:
        verdict = verifier.verify(_write(tmp_path, "while True:\n    pass\n"))
    assert verdict.stage == "runtime_error" and "timed out" in verdict.reasons[0]
    assert len(runs) == 2  # one run per sandbox child (VerifyOptions.parallel_children: 2 on the CPU)
    assert not any(run.prefetch.running for run in runs) and not _prefetch_threads()
