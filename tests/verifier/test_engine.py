"""The plausibility gate (roofline floor, speedup flag), the timing clock checks, and the sandbox's limits."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from agent.verifier import CaseErrors, CaseTiming, Verdict, Verifier, VerifyOptions
from agent.verifier.dynamic import DynamicRun, Failure, _Timed
from agent.verifier.plan import TimedCase
from agent.verifier.timing import exposed_reps
from core.errors import BadInputError
from hardware_profiles import load_profile
from kernels.task import load_task

ROOT = Path(__file__).resolve().parents[2]

TASK = load_task("extend_attention")
SIG = ("def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,\n"
       "                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale,\n"
       "                         sm_scale=None, logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1,\n"
       "                         sinks=None):\n")


def _timed_verdict(times: dict[str, float]) -> Verdict:
    timings = {k: CaseTiming(case_id=k, time_us=v, reps=20, warmup=3, min_us=v, max_us=v, wall_us=v,
                             verifier_wall_us=v) for k, v in times.items()}
    return Verdict(stage="pass", task="extend_attention", candidate="x.py", candidate_sha256="0",
                   timings=timings, time_us=times, timed=True)


def test_time_below_the_roofline_floor_is_too_fast_to_be_true():
    verifier = Verifier(TASK, load_profile("h200"))
    verdict = _timed_verdict({"decode": 100.0, "prefill": 2900.0})  # decode floor is 449 us on an H200
    verifier._plausibility(verdict)
    assert verdict.stage == "too_fast_to_be_true"
    (reason,) = verdict.reasons
    assert "decode" in reason and "roofline floor 448.5 us" in reason
    assert verdict.timings["prefill"].fraction_of_floor == pytest.approx(556 / 2900, rel=0.01)


def test_large_speedups_are_flagged_not_rejected():
    options = VerifyOptions(baseline_time_us={"decode": 8285.0, "prefill": 2858.0})
    verifier = Verifier(TASK, load_profile("h200"), options)
    verdict = _timed_verdict({"decode": 500.0, "prefill": 1100.0})
    verifier._plausibility(verdict)
    assert verdict.stage == "pass"
    assert verdict.speedup == {"decode": pytest.approx(16.57, rel=1e-3), "prefill": pytest.approx(2.598, rel=1e-3)}
    assert len(verdict.flags) == 1 and "decode" in verdict.flags[0] and "second look" in verdict.flags[0]


def test_no_profile_means_no_gate_and_says_so():
    verdict = _timed_verdict({"decode": 1.0})
    Verifier(TASK)._plausibility(verdict)
    assert verdict.stage == "pass" and any("no chip profile" in f for f in verdict.flags)


def _record(event, wall, seen) -> _Timed:
    return _Timed(TimedCase(TASK.case("decode"), (1,), ()), event, wall, seen, [])


@pytest.mark.parametrize("event, wall, seen, message", [
    ([1.0] * 20, [9000.0] * 20, [9100.0] * 20, "disagree with the sandbox's wall clock"),
    ([900.0] * 20, [950.0] * 20, [5000.0] * 20, "verifier's own clock"),
    ([0.0] * 20, [0.0] * 20, [0.0] * 20, "non-positive"),
])
def test_clock_checks_reject_tampered_timings(event, wall, seen, message):
    with pytest.raises(Failure, match=message) as info:
        DynamicRun._check_clocks("decode", _record(event, wall, seen))
    assert info.value.stage == "too_fast_to_be_true"


def test_clock_checks_accept_honest_timings():
    DynamicRun._check_clocks("decode", _record([8000.0] * 20, [8030.0] * 20, [8400.0] * 20))
    DynamicRun._check_clocks("spec-verify", _record([30.0] * 20, [45.0] * 20, [260.0] * 20))


def test_work_hidden_only_in_the_exposed_calls_is_caught():
    # 4 exposed calls of 20 show work outside the events (wall >> event); the 16 covered calls look clean.
    # Pooled, 4 <= 20 // 5 calls off would pass; checked per group, the exposed group has 4/4 off.
    exposed = frozenset({1, 7, 12, 18})
    event = [400.0] * 20
    wall = [5000.0 if r in exposed else 420.0 for r in range(20)]
    record = _Timed(TimedCase(TASK.case("decode"), (1,), ()), event, wall, [520.0] * 20, [], exposed)
    with pytest.raises(Failure, match="disagree with the sandbox's wall clock in 4/4"):
        DynamicRun._check_clocks("decode", record)


def test_covered_calls_without_host_overhead_are_accepted():
    # H200, 2026-11-29: spec-verify at 379 us event time, the parent saw ~740 us per call with the L2 flush inside
    # its window (a false rejection); with the flush outside it sees the call plus ~100-200 us of messaging.
    exposed = frozenset({3, 9, 14, 19})
    event = [700.0 if r in exposed else 379.0 for r in range(20)]
    wall = [e + 25.0 for e in event]
    seen = [e + 180.0 for e in event]
    DynamicRun._check_clocks("spec-verify", _Timed(TimedCase(TASK.case("decode"), (1,), ()), event, wall, seen, [],
                                                   exposed))


def test_exposed_calls_are_a_secret_fifth_of_the_repetitions():
    first, second = exposed_reps((11, 22, 33), 20), exposed_reps((11, 22, 34), 20)
    assert len(first) == 4 and first <= set(range(20)) and first == exposed_reps((11, 22, 33), 20)
    assert first != second  # a different secret seed, different calls
    assert len(exposed_reps((5,), 4)) == 2 and exposed_reps((5,), 3) == frozenset()


def _write(tmp_path, body: str, top: str = "") -> str:
    path = tmp_path / "candidate.py"
    path.write_text(f"import torch\n{textwrap.dedent(top)}\n\n{SIG}{textwrap.indent(textwrap.dedent(body), '    ')}")
    return str(path)


@pytest.fixture(scope="module")
def verifier():
    with Verifier(TASK) as v:
        yield v


@pytest.mark.slow  # ~8 s on a busy 2-core machine
@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU sandbox limits")
def test_a_hanging_candidate_is_killed_at_the_timeout(verifier, tmp_path):
    verifier.options = VerifyOptions(device="cpu", timeout_s=6, skip_static=True)
    verdict = verifier.verify(_write(tmp_path, "while True:\n    pass\n"))
    assert verdict.stage == "runtime_error" and "timed out" in verdict.reasons[0]
    assert "killed: timed out after 6 s (the per-process limit, --timeout)" in verdict.reasons[0], verdict.reasons
    assert verdict.verify_seconds < 30


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU sandbox limits")
@pytest.mark.slow
def test_the_address_space_limit_stops_a_memory_hog(verifier, tmp_path):
    verifier.options = VerifyOptions(device="cpu", memory_limit_gb=2, timeout_s=60)
    verdict = verifier.verify(_write(tmp_path, "hog = torch.empty(8 << 30, dtype=torch.uint8).fill_(1)\n"))
    assert verdict.stage == "runtime_error", verdict.summary()
    assert "alloc" in verdict.reasons[0].lower() or "memory" in verdict.reasons[0].lower()


def test_missing_candidate_is_bad_input(verifier, tmp_path):
    with pytest.raises(BadInputError, match="cannot read"):
        verifier.verify(tmp_path / "absent.py")


def test_unknown_task_is_bad_input():
    with pytest.raises(BadInputError, match="unknown task"):
        Verifier("no_such_task")


def test_syntax_error_is_a_compile_error(verifier, tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def extend_attention_fwd(:\n")
    verdict = verifier.verify(path)
    assert verdict.stage == "compile_error" and "syntax error" in verdict.reasons[0]

def test_verdict_json_round_trips_with_computed_fields():
    verdict = _timed_verdict({"decode": 500.0})
    verdict.errors["decode"] = CaseErrors(case_id="decode", elements=8, mismatches=2)
    data = verdict.model_dump(mode="json")
    assert data["passed"] is True and data["errors"]["decode"]["mismatch_fraction"] == 0.25
    assert Verdict.model_validate_json(verdict.model_dump_json()) == verdict


def test_a_broken_sandbox_is_one_clear_error(tmp_path):
    from agent.verifier.sandbox import Sandbox, SandboxError

    # a project root whose `agent` package cannot be imported: it shadows any installed copy (sys.path[0])
    root = tmp_path / "broken_project"
    (root / "agent").mkdir(parents=True)
    (root / "agent" / "__init__.py").write_text("raise ImportError('broken on purpose')\n")
    sandbox = Sandbox(root, interpret=True, scratch_base=tmp_path)
    with pytest.raises(SandboxError, match="did not start a child"):
        sandbox.launch({"plan": {}}, timeout_s=5)
    sandbox.close()


@pytest.mark.slow
def test_runtime_reasons_name_the_users_file_and_its_lines(verifier, tmp_path):
    from agent.verifier.engine import _own_name

    path = tmp_path / "shapebug.py"
    path.write_text(f"import torch\n\n\n{SIG}    x = 1\n    raise ValueError('bad shape')\n")
    line = path.read_text().splitlines().index("    raise ValueError('bad shape')") + 1
    verifier.options = VerifyOptions(device="cpu", timeout_s=120, skip_static=True)
    verdict = verifier.verify(path)
    assert verdict.stage == "runtime_error", verdict.summary()
    assert any(f"(shapebug.py line {line})" in r for r in verdict.reasons), verdict.reasons
    assert not any("candidate" in r for r in verdict.reasons), verdict.reasons
    assert (_own_name("forbidden torch operation aten._local_scalar_dense.default at candidate.py:224 while",
                      "itemread.py") == "forbidden torch operation aten._local_scalar_dense.default at itemread.py:224 "
            "while")
    assert _own_name("at /tmp/scratch-1/candidate.py:3; my_candidate.py:4", "x.py") == "at x.py:3; my_candidate.py:4"


@pytest.mark.slow  # ~8 s on a busy 2-core machine
@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU (interpreter) run")
def test_progress_counts_every_judged_trial_across_all_children(verifier):
    import threading

    seen: list[str] = []
    lock = threading.Lock()

    def progress(message: str) -> None:
        with lock:
            seen.append(message)

    kept, verifier.options = verifier.options, VerifyOptions(device="cpu", timeout_s=120, case_ids=("gqa-4",),
                                                             random_cases=1)
    try:
        verdict = verifier.verify(ROOT / "kernels" / "extend_attention" / "baseline.py", progress=progress)
    finally:
        verifier.options = kept
    assert verdict.stage == "pass", verdict.summary()
    total = len(verdict.config["plan"])
    assert verdict.config["children"] == 2  # the default on the CPU
    assert seen == [f"{n} of {total} trials judged" for n in range(1, total + 1)]
    assert verdict.config["trials_planned"] == verdict.config["trials_judged"] == total
    assert verdict.config["perturbations_that_moved_the_reference"] >= 1


@pytest.mark.slow
def test_a_plan_split_that_loses_trials_is_no_pass(verifier, monkeypatch):
    """A pass needs every trial of the plan judged in some child: here the split drops the in-place perturbation
    trials (the ones that catch a result replayed on pointers and shapes), and an honest candidate that passes
    every trial it runs is still no pass."""
    from agent.verifier import engine
    from agent.verifier.plan import Plan, split_plan

    def lossy_split(plan: Plan, children: int = 2) -> tuple[Plan, ...]:
        return tuple(Plan(p.task, p.device, tuple(t for t in p.trials if t.kind != "perturb"), p.timing)
                     for p in split_plan(plan, children))

    monkeypatch.setattr(engine, "split_plan", lossy_split)
    kept, verifier.options = verifier.options, VerifyOptions(device="cpu", timeout_s=120, case_ids=("gqa-4",),
                                                             random_cases=1)
    try:
        verdict = verifier.verify(ROOT / "kernels" / "extend_attention" / "baseline.py")
    finally:
        verifier.options = kept
    perturbations = [p["kind"] for p in verdict.config["plan"]].count("perturb")
    assert perturbations == 2  # the full perturbation and the redraw of q alone
    assert verdict.stage == "runtime_error", verdict.summary()
    assert verdict.config["trials_judged"] == verdict.config["trials_planned"] - perturbations
    (reason,) = verdict.reasons
    assert "never judged: [1, 2]" in reason and "no pass without every trial judged once" in reason


def _outcome(judged: list[int], sensitive: list[int]):
    from agent.verifier.dynamic import Outcome

    return Outcome(judged=judged, sensitive=sensitive)


def test_plan_coverage_needs_every_trial_judged_once_and_one_moving_perturbation():
    import random

    from agent.verifier.engine import plan_coverage_problem
    from agent.verifier.plan import PlanSettings, build_plan

    settings = PlanSettings(include_test_cases=True, include_bench_cases=False, random_cases=3, small=True,
                            timing=False)
    plan = build_plan(TASK, "cpu", settings, random.Random(7))
    ids = [t.id for t in plan.trials]
    perturbs = [t.id for t in plan.trials if t.kind == "perturb"]
    assert perturbs == [1, 2]
    assert plan_coverage_problem(plan, _outcome(ids[::-1], [1])) is None  # children judge in any order
    lost = plan_coverage_problem(plan, _outcome(ids[:-1], [1]))
    assert lost is not None and f"never judged: [{ids[-1]}]" in lost and f"{len(ids) - 1} trial verdicts" in lost
    twice = plan_coverage_problem(plan, _outcome([*ids[:-1], ids[0]], [1]))
    assert twice is not None and "judged twice: [0]" in twice
    numb = plan_coverage_problem(plan, _outcome(ids, []))
    assert numb is not None and "none of the 2 in-place perturbation trials moved the reference" in numb


class _ClockTrippedOnce(Verifier):
    """A Verifier whose dynamic stage reports the host-clock disagreement on its first `fails` runs. That failure
    needs a CUDA device and a busy host (the CPU protocol's wall timer makes event == wall), so the stage's outcome
    is given here; the static stage and the engine's control flow are the real ones."""

    def __init__(self, fails: int):
        super().__init__(TASK, load_profile("h200"))
        self.fails, self.runs = fails, 0

    def _dynamic(self, path, base, progress=None, source=None):
        self.runs += 1
        if self.runs <= self.fails:
            return Verdict(stage="too_fast_to_be_true", reasons=[
                "case prefill: CUDA-event times disagree with the sandbox's wall clock in 3/4 calls (event 1831.0 "
                "us, wall 4010.1 us): timers tampered with or work hidden from the events"], **base)
        return Verdict(stage="pass", **base)


def _honest_path() -> Path:
    from tests.verifier.corpus import HONEST
    return Path(HONEST[0].path)


def test_a_host_clock_disagreement_is_re_measured_once_and_noted():
    verifier = _ClockTrippedOnce(fails=1)
    verdict = verifier.verify(_honest_path())
    assert (verifier.runs, verdict.stage) == (2, "pass")
    assert len(verdict.flags) == 1 and "re-run once" in verdict.flags[0] and "3/4 calls" in verdict.flags[0]


def test_a_repeated_host_clock_disagreement_still_rejects():
    verifier = _ClockTrippedOnce(fails=5)
    verdict = verifier.verify(_honest_path())
    assert (verifier.runs, verdict.stage) == (2, "too_fast_to_be_true")
    assert "disagree with the sandbox's wall clock" in verdict.reasons[0]


class _OwnClockTripped(_ClockTrippedOnce):
    """The verifier's own clock saw far more time per call than the sandbox reported, on the first `fails` runs
    (a host busy with other runs slows the messages the parent times each call by)."""

    def _dynamic(self, path, base, progress=None, source=None):
        self.runs += 1
        if self.runs <= self.fails:
            return Verdict(stage="too_fast_to_be_true", reasons=[
                "case m64-n1408-k2048: reported 17.8 us per call but the verifier's own clock saw 305.3 us per "
                "call"], **base)
        return Verdict(stage="pass", **base)


def test_an_own_clock_disagreement_is_re_measured_once_and_noted():
    verifier = _OwnClockTripped(fails=1)
    verdict = verifier.verify(_honest_path())
    assert (verifier.runs, verdict.stage) == (2, "pass")
    assert len(verdict.flags) == 1 and "re-run once" in verdict.flags[0] and "305.3 us" in verdict.flags[0]


def test_a_repeated_own_clock_disagreement_still_rejects():
    verifier = _OwnClockTripped(fails=2)
    verdict = verifier.verify(_honest_path())
    assert (verifier.runs, verdict.stage) == (2, "too_fast_to_be_true")
    assert "verifier's own clock saw" in verdict.reasons[0]


def test_other_too_fast_failures_are_not_re_run():
    class NonPositive(_ClockTrippedOnce):
        def _dynamic(self, path, base, progress=None, source=None):
            self.runs += 1
            return Verdict(stage="too_fast_to_be_true", reasons=[
                "case decode: non-positive or non-finite event times"], **base)

    verifier = NonPositive(fails=0)
    assert verifier.verify(_honest_path()).stage == "too_fast_to_be_true" and verifier.runs == 1


class _RewrittenBeforeTheReRun(Verifier):
    """The first dynamic run ends on the own-clock check and, meanwhile, the candidate file on disk is replaced
    (what a first run's child could do where Landlock is unavailable): the re-run is the real sandboxed stage."""

    def __init__(self, rewrite: str):
        super().__init__(TASK, load_profile("h200"), VerifyOptions(device="cpu", timeout_s=300))
        self.rewrite, self.runs = rewrite, 0

    def _dynamic(self, path, base, progress=None, source=None):
        self.runs += 1
        if self.runs == 1:
            path.write_text(self.rewrite)
            return Verdict(stage="too_fast_to_be_true", reasons=[
                "case m64-n1408-k2048: reported 17.8 us per call but the verifier's own clock saw 305.3 us per "
                "call"], **base)
        return super()._dynamic(path, base, progress, source=source)


@pytest.mark.slow
def test_the_clock_re_run_runs_the_bytes_the_static_stage_checked(tmp_path):
    """A file rewritten between the first run and the re-run must not run unchecked: the re-run runs the bytes
    the static stage read (the honest baseline passes), not the rewritten file (which would fail at once)."""
    candidate = tmp_path / "candidate_v1.py"
    candidate.write_bytes(_honest_path().read_bytes())
    with _RewrittenBeforeTheReRun("def extend_attention_fwd(*args, **kwargs):\n    raise RuntimeError('rewritten')\n") \
            as verifier:
        verdict = verifier.verify(candidate)
    assert verifier.runs == 2 and "rewritten" in candidate.read_text()
    assert verdict.stage == "pass", verdict.summary()
    assert "re-run once" in verdict.flags[-1]


def _zero_output_case():
    """A one-token extend-attention case and trial seed whose random custom mask hides the token's only key: the
    reference output is all zeros whatever q and v hold, so an in-place perturbation moves nothing."""
    from kernels.extend_attention.params import full_params
    from kernels.task import Case

    case = Case("masked-out", full_params(dict(extend_lens=[1], prefix_lens=[0], num_q_heads=2, num_kv_heads=1,
                                               head_dim=16, custom_mask=True, dtype="float16")), 1)
    for seed in range(1, 200):
        if not TASK.reference(TASK.make_inputs(case, seed, "cpu"))["o_extend"].any():
            return case, seed
    raise AssertionError("no seed masks the only key out")


@pytest.mark.slow
def test_a_replay_passes_no_plan_whose_perturbations_move_nothing(verifier, monkeypatch):
    """The cache-on-pointers cheat replays its first output in the perturbation trials; where that first case's
    output cannot move (all zeros), the replay matches. Such a plan is re-drawn once, then rejected: no pass."""
    from dataclasses import replace

    from agent.verifier import engine
    from agent.verifier.plan import Plan, build_plan
    from tests.verifier.corpus import CHEATS

    case, seed = _zero_output_case()
    plans = []

    def numb_plan(*args, **kwargs) -> Plan:
        plan = build_plan(*args, **kwargs)
        assert [t.kind for t in plan.trials[:3]] == ["check", "perturb", "perturb"]
        first = [replace(t, case=case, seed=seed if t.id == 0 else t.seed) for t in plan.trials[:3]]
        plans.append(Plan(plan.task, plan.device, (*first, *plan.trials[3:]), plan.timing))
        return plans[-1]

    monkeypatch.setattr(engine, "build_plan", numb_plan)
    kept, verifier.options = verifier.options, VerifyOptions(device="cpu", timeout_s=120, case_ids=("gqa-4",),
                                                             random_cases=1, skip_static=True)
    try:
        verdict = verifier.verify(next(c for c in CHEATS if c.name == "ptr_cache").path)
    finally:
        verifier.options = kept
    assert verdict.stage == "runtime_error", verdict.summary()
    assert len(plans) == 2 and verdict.config["perturbations_that_moved_the_reference"] == 0
    assert "none of the 2 in-place perturbation trials moved the reference" in verdict.reasons[0]
    assert any(f.startswith("re-run once with a new plan") for f in verdict.flags)
