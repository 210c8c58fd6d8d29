"""Two sandbox children per candidate (`VerifyOptions.parallel_children`): the plan split, the zygote serving two
children at once, verdicts equal to the one-child verdicts (pass, a failure in either child, the ablation), the
other child stopped early but never before the failure first in plan order is known, timing only after the other
child exited, and nothing left running after a failure or an exception in either child's thread."""

from __future__ import annotations

import random
import re
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch

import agent.verifier.parallel as parallel
import agent.verifier.plan as plan_module
import agent.verifier.sandbox as sandbox_module
from agent.verifier import Verifier, VerifyOptions
from agent.verifier.dynamic import DynamicRun
from agent.verifier.parallel import STOPPED_BECAUSE, ParallelRun
from agent.verifier.plan import COVERING_LABEL, Plan, PlanSettings, Trial, build_plan, split_plan
from hardware_profiles import load_profile
from kernels.task import load_task
from tests.verifier.corpus import CHEATS, HONEST

TASK = load_task("extend_attention")
CPU_ONLY = pytest.mark.skipif(torch.cuda.is_available(), reason="CPU sandbox (Triton interpreter)")
GPU = PlanSettings(include_test_cases=False, include_bench_cases=True, random_cases=2, small=False, timing=True,
                   reps=5, rotations=2)
CPU = PlanSettings(include_test_cases=True, include_bench_cases=False, random_cases=3, small=True, timing=False)
BOTH = PlanSettings(include_test_cases=True, include_bench_cases=True, random_cases=3, small=True, timing=True,
                    reps=4)
#: The cases of the verdict-equivalence runs: few test cases keep the interpreter's time down; fp32-inputs is the
#: one a float16 shortcut fails (in the first child, which holds the test cases on the CPU).
FEW = ("gqa-4", "sinks", "fp32-inputs")
SIG = ("def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, "
       "kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None, "
       "logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None, window_kv_offsets=None, "
       "xai_temperature_len=-1):\n")


# -- the split -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device, settings, first_label", [
    ("cuda", GPU, "bench case"), ("cpu", CPU, "test case"), ("cpu", BOTH, "bench case")],
    ids=["bench-cases", "test-cases", "bench-and-test-cases"])
def test_every_trial_lands_in_exactly_one_child(device, settings, first_label):
    plan = build_plan(TASK, device, settings)
    a, b = split_plan(plan, 2)
    ids = [t.id for t in a.trials] + [t.id for t in b.trials]
    assert sorted(ids) == [t.id for t in plan.trials] == list(range(len(plan.trials)))
    for part in (a, b):  # original order, trials unchanged (ids, seeds, cases)
        assert [t.id for t in part.trials] == sorted(t.id for t in part.trials)
        assert all(t == plan.trials[t.id] for t in part.trials)
        assert (part.task, part.device) == (plan.task, plan.device)
        assert Plan.from_json(part.to_json()) == part
    covering = [t for t in plan.trials if t.label.startswith(COVERING_LABEL)]  # every second one joins the first
    assert len(covering) == 9 and {t.label for t in a.trials} - {t.label for t in covering} == {first_label}
    assert [t.id for t in plan.trials if t.label == first_label] == [t.id for t in a.trials
                                                                     if t.label == first_label]
    assert [t.id for t in a.trials if t.label.startswith(COVERING_LABEL)] == [t.id for t in covering[1::2]]
    # the timing plan goes with the trials of the cases it times; the other child has none
    assert a.timing == plan.timing and b.timing is None
    if plan.timing is not None:
        assert {tc.case.id for tc in plan.timing.cases} <= {t.case.id for t in a.trials}
    # a perturbation stays with its base trial; the hidden shapes, large logits, long prefix and ablation are in b
    b_ids = {t.id for t in b.trials}
    perturbs = [t for t in plan.trials if t.kind == "perturb"]
    assert perturbs and all(t.id in b_ids and t.base in b_ids for t in perturbs)
    assert {"hidden random shape", "large logits", "long prefix", "every Triton launch disabled"} <= {
        t.label for t in b.trials}
    if first_label == "bench case" and settings.include_test_cases:
        assert "test case" in {t.label for t in b.trials}


@pytest.mark.parametrize("device, settings", [("cuda", GPU), ("cpu", CPU), ("cpu", BOTH)],
                         ids=["bench-cases", "test-cases", "bench-and-test-cases"])
def test_three_children_split_the_other_trials_at_the_first_timed_case(device, settings):
    plan = build_plan(TASK, device, settings)
    two, three = split_plan(plan, 2), split_plan(plan, 3)
    assert len(three) == 3 and three[0] == Plan(
        plan.task, plan.device, tuple(t for t in two[0].trials if not t.label.startswith(COVERING_LABEL)),
        plan.timing)  # the timed cases' child is unchanged, without the covering trials two children spread
    first_timed = three[0].trials[0].id
    rest = sorted((t for part in two for t in part.trials if t.id not in {u.id for u in three[0].trials}),
                  key=lambda t: t.id)
    assert [t.id for t in three[1].trials] == [t.id for t in rest if t.id < first_timed]
    assert [t.id for t in three[2].trials] == [t.id for t in rest if t.id > first_timed]
    assert three[1].timing is None and three[2].timing is None
    hidden = {"large logits", "outlier keys", "long prefix", "long extend", "many sequences", "many heads",
              "shifted values"}
    hidden |= {"shifted values, float16"} if device == "cuda" else set()
    labels = {t.label for t in three[1].trials}
    float32_pair = {label for label in labels if label.startswith("float32 long prefix and extend")}
    assert len(float32_pair) == (2 if device == "cuda" else 0)  # a GPU's float32 trials (long_trials)
    assert {"hidden random shape", "same buffers, perturbed values", "same buffers, fresh q_extend only",
            *hidden} == {label for label in labels - float32_pair if not label.startswith(COVERING_LABEL)}
    assert len([t for t in three[1].trials if t.label.startswith(COVERING_LABEL)]) == 9  # the covering trials
    later = {t.label for t in three[2].trials}
    assert "every Triton launch disabled" in later
    assert ("float32 inputs" in later) == (device == "cpu")  # a GPU's float32 is the pair of long trials


@pytest.mark.parametrize("device, settings", [("cuda", GPU), ("cpu", BOTH)],
                         ids=["bench-cases", "bench-and-test-cases"])
def test_four_children_split_the_timed_cases_over_two(device, settings):
    plan = build_plan(TASK, device, settings)
    three, four = split_plan(plan, 3), split_plan(plan, 4)
    assert len(four) == 4 and four[1:3] == three[1:3]
    assert [t.id for t in four[0].trials] == [t.id for t in three[0].trials][0::2]
    assert [t.id for t in four[3].trials] == [t.id for t in three[0].trials][1::2]
    assert four[0].timing == plan.timing and all(p.timing is None for p in four[1:])
    assert sorted(t.id for p in four for t in p.trials) == list(range(len(plan.trials)))
    assert split_plan(plan, 4) == split_plan(plan, 8)  # no more than four groups to split into


def test_the_gpu_float32_trials_have_a_fixed_head_dim_and_float32_inputs():
    plan = build_plan(TASK, "cuda", GPU)
    pair = [t for t in plan.trials if t.case.params["dtype"] == "float32"]
    assert len(pair) == 2 and all(t.case.params["head_dim"] == 64 for t in pair)
    assert {t.case.params["head_dim_v"] != 64 for t in pair} == {True, False}  # split head_dim_v in one of them


def test_one_child_or_nothing_to_split_keeps_the_whole_plan():
    plan = build_plan(TASK, "cuda", GPU)
    assert split_plan(plan, 1) == (plan,)
    hidden_only = build_plan(TASK, "cpu", PlanSettings(include_test_cases=False, include_bench_cases=False,
                                                       random_cases=2, small=True, timing=False))
    assert split_plan(hidden_only, 2) == (hidden_only,)


def test_a_perturbation_split_from_its_base_is_refused():
    plan = build_plan(TASK, "cpu", CPU)
    moved = tuple(Trial(t.id, t.kind, t.case, t.seed, "test case", t.base, t.perturb_seed) if t.kind == "perturb"
                  else t for t in plan.trials)
    with pytest.raises(ValueError, match="same child as its base"):
        split_plan(Plan(plan.task, plan.device, moved, None), 2)


# -- sandbox ---------------------------------------------------------------------------------------------------
def _write(tmp_path: Path, body: str, name: str = "candidate.py") -> Path:
    path = tmp_path / name
    path.write_text(f"import torch\n\n\n{SIG}{textwrap.indent(textwrap.dedent(body), '    ')}")
    return path


def _request(sandbox: sandbox_module.Sandbox, candidate: Path, plan: Plan) -> dict:
    scratch = sandbox.new_scratch()
    (scratch / "candidate.py").write_bytes(candidate.read_bytes())
    return {"plan": plan.to_json(), "candidate": str(scratch / "candidate.py"), "scratch": str(scratch),
            "root": str(sandbox.root), "compute_guard": True, "max_file_bytes": 1 << 26, "address_space_bytes": 0,
            "cpu_seconds": 120}


@CPU_ONLY
@pytest.mark.slow
def test_the_zygote_runs_two_children_at_once_and_reports_exits_in_any_order(tmp_path):
    root = Path(__file__).resolve().parents[2]
    hang = _write(tmp_path, "while True:\n    pass\n", "hang.py")
    quick = _write(tmp_path, "return None\n", "quick.py")
    plan = build_plan(TASK, "cpu", CPU)
    one = Plan(plan.task, plan.device, plan.trials[:1], None)
    sandbox = sandbox_module.Sandbox(root, interpret=True, scratch_base=tmp_path / "sandbox")
    (tmp_path / "sandbox").mkdir()
    try:
        first = sandbox.launch(_request(sandbox, hang, one), timeout_s=60)
        second = sandbox.launch(_request(sandbox, quick, one), timeout_s=60)
        assert first.pid != second.pid
        assert first.next()[1]["type"] == "ready" and second.next()[1]["type"] == "ready"
        # the second child answers (no kernel launched) and exits while the first still runs its trial
        assert second.next()[1]["type"] == "trial"
        assert second.finish() in (0, 9)  # exited, or killed by finish on its way out (SIGKILL)
        assert Path(f"/proc/{first.pid}").exists() and not Path(f"/proc/{second.pid}").exists()
        assert first.finish() == 9  # killed by finish (its exit report came after the second's)
        assert not Path(f"/proc/{first.pid}").exists()
        assert first.finish() == 9  # once: a second finish touches nothing
        third = sandbox.launch(_request(sandbox, quick, one), timeout_s=60)  # the zygote still serves
        assert third.next()[1]["type"] == "ready"
        third.finish()
    finally:
        sandbox.close()


# -- verdicts ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def verifier():
    with Verifier(TASK, load_profile("h200"), VerifyOptions(device="cpu", timeout_s=300)) as v:
        yield v


def _verify(verifier: Verifier, path, children: int, **options):
    verifier.options = VerifyOptions(**{"device": "cpu", "timeout_s": 300, "parallel_children": children, **options})
    return verifier.verify(path)


def _where(reason: str) -> tuple[str, str] | None:
    """(label, trial id) of a per-trial failure reason (the case id and seed of hidden trials are secret)."""
    m = re.search(r"\((.+?), trial (\d+), seed", reason)
    return (m.group(1), m.group(2)) if m else None


@pytest.fixture
def runs(monkeypatch):
    """Every `ParallelRun` and `DynamicRun` and every launched child of the test."""
    seen: dict[str, list] = {"parallel": [], "dynamic": [], "children": []}
    real_execute, real_init, real_launch = ParallelRun.execute, DynamicRun.__init__, sandbox_module.Sandbox.launch

    def execute(self):
        seen["parallel"].append(self)
        return real_execute(self)

    def init(self, *args, **kwargs):
        seen["dynamic"].append(self)
        real_init(self, *args, **kwargs)

    def launch(self, *args, **kwargs):
        child = real_launch(self, *args, **kwargs)
        seen["children"].append(child)
        return child

    monkeypatch.setattr(ParallelRun, "execute", execute)
    monkeypatch.setattr(DynamicRun, "__init__", init)
    monkeypatch.setattr(sandbox_module.Sandbox, "launch", launch)
    return seen


def _nothing_left(seen) -> None:
    names = {t.name for t in threading.enumerate()}
    assert not {n for n in names if n.startswith("verifier-")}, names
    assert all(not r.prefetch.running for r in seen["dynamic"])
    for child in seen["children"]:
        assert child._status is not None and not Path(f"/proc/{child.pid}").exists()


@pytest.mark.slow  # 39-113 s on 2 cores (8 verifications)
@CPU_ONLY
@pytest.mark.parametrize("honest", [HONEST[0], HONEST[-1]], ids=lambda h: h.name)
def test_honest_candidates_pass_with_one_to_four_children(verifier, honest, runs):
    reruns = []  # host load can trip a clock check: the verifier then runs the whole dynamic stage once more
    for children in (1, 2, 3, 4):
        verdict = _verify(verifier, honest.path, children, case_ids=FEW)
        assert verdict.stage == "pass", verdict.summary()
        reruns += [children] * sum(f.startswith("clock check re-run once") for f in verdict.flags)
        assert verdict.config["children"] == children
        assert {p["child"] for p in verdict.config["plan"]} == set(range(children))
        assert set(verdict.errors) >= set(FEW) and all(e.mismatches == 0 for e in verdict.errors.values())
        trials = sum(e.trials for e in verdict.errors.values())
        assert trials == len(verdict.config["plan"]) - 1  # every trial but the ablation, merged over children
    phases = verdict.config["phase_seconds"]
    assert {"start_and_import", "correctness", "correctness_child_a", "correctness_child_b",
            "correctness_child_c", "correctness_child_d"} <= set(phases)
    assert set(verdict.config["trial_seconds"]) == {f"{p['case']} ({p['label']}, trial {i})"
                                                    for i, p in enumerate(verdict.config["plan"])}
    assert len(runs["parallel"]) == 3 + sum(c > 1 for c in reruns)
    assert len(runs["children"]) == 10 + sum(reruns)
    _nothing_left(runs)


CAUGHT_IN = {  # cheat name -> (options, the child the trial that catches it is in)
    "fp32_as_fp16": ({}, "b: long extend, float32 on the CPU (a: the fp32-inputs test case, later in the plan)"),
    "hardcoded_test_shapes": ({"skip_static": True}, "b: hidden random shape"),
    "ptr_cache": ({"skip_static": True}, "b: in-place perturbation"),
    "no_max_subtraction": ({}, "b: large logits"),
    "dead_kernel": ({"skip_static": True, "compute_guard": False}, "b: ablation, the last trial"),
    "partial_grid": ({}, "both: every trial; the first in plan order is reported"),
}

#: Over ~1.5 s each on a quiet 2-core machine: full suite only (the fast lane keeps the other two).
SLOW_PAIRS = {"fp32_as_fp16", "no_max_subtraction", "dead_kernel", "hardcoded_test_shapes"}


@CPU_ONLY
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_PAIRS else n
                                  for n in sorted(CAUGHT_IN)])
@pytest.mark.slow
def test_a_cheat_is_rejected_at_the_same_stage_and_trial_with_one_and_two_children(verifier, name, runs,
                                                                                   monkeypatch):
    cheat = next(c for c in CHEATS if c.name == name)
    options, _where_caught = CAUGHT_IN[name]
    expected = cheat.unguarded if options.get("compute_guard") is False else (
        cheat.dynamic if options.get("skip_static") else cheat.full)
    # one plan (same hidden shapes and seeds) for both runs, so the same trial must be the first to fail
    seed = random.randrange(1 << 30)
    monkeypatch.setattr(plan_module, "secret_rng", lambda: random.Random(seed))
    verdicts = {n: _verify(verifier, cheat.path, n, case_ids=FEW, **options) for n in (1, 2)}
    assert verdicts[1].config["plan"] == [{**p, "child": 0} for p in verdicts[2].config["plan"]]
    for verdict in verdicts.values():
        assert verdict.stage == expected, verdict.summary()
        assert any(cheat.reason in r or (name == "dead_kernel" and "dead kernel" in r) for r in verdict.reasons), (
            verdict.summary())
        assert not any("stopped" in r for r in verdict.reasons), verdict.summary()
    assert _where(verdicts[1].reasons[0]) == _where(verdicts[2].reasons[0]), (seed, verdicts[2].reasons[0])
    assert verdicts[1].reasons == verdicts[2].reasons, (seed, verdicts[1].reasons, verdicts[2].reasons)
    _nothing_left(runs)


def _with_fp32_shortcut(tmp_path: Path, body: str) -> Path:
    """simple_triton (honest) answering the fp32-inputs test case (float32, head dim 32; the CPU's long-extend
    trial is float32 at head dim 16) with `body` instead."""
    text = (Path(__file__).parent / "honest" / "simple_triton.py").read_text()
    head = "def extend_attention_fwd("
    start = text.index(head)
    colon = text.index("):\n", start) + 3
    condition = "if o_extend.element_size() == 4 and q_extend.shape[2] == 32:"
    injected = textwrap.indent(f"{condition}\n{textwrap.indent(body, '    ')}\n", "    ")
    path = tmp_path / "fp32_shortcut.py"
    path.write_text(text[:colon] + injected + text[colon:])
    return path


@pytest.mark.slow  # ~18 s on 2 cores
@CPU_ONLY
def test_the_other_child_is_stopped_once_it_is_past_the_failure(verifier, tmp_path, runs):
    # child a (its covering trials, then the test case) fails at the test case; child b runs its trials before it in the plan (any failure
    # there would be the verdict) and is stopped before the ones after it (the wide float32 case, the ablation)
    path = _with_fp32_shortcut(tmp_path, "return None")
    verdict = _verify(verifier, path, 2, case_ids=("fp32-inputs",), random_cases=1, skip_static=True)
    a, b = runs["dynamic"]
    (failing,) = [t.id for t in a.plan.trials if t.label == "test case"]  # a's others: every second covering trial
    spread = [t.id for t in a.plan.trials if t.id != failing]
    assert spread and all(t.label.startswith(COVERING_LABEL) and t.id < failing for t in a.plan.trials[:-1])
    assert verdict.stage == "runtime_error" and _where(verdict.reasons[0]) == ("test case", str(failing)), (
        verdict.summary())
    assert "no Triton kernel was launched" in verdict.reasons[0]
    before = [t.id for t in b.plan.trials if t.id < failing]
    after = [t.id for t in b.plan.trials if t.id > failing]
    assert len(before) >= 4 and len(after) == 2 and b.plan.trials[-1].kind == "ablate"
    assert b.outcome.stopped and b.position == after[0]
    # the trials before the failure in both children, judged
    assert sum(e.trials for e in verdict.errors.values()) == len(before) + len(spread)
    _nothing_left(runs)


@CPU_ONLY
def test_a_child_hanging_after_the_failure_is_killed_at_once(verifier, tmp_path, runs):
    # child b fails at trial 0 (no kernel launched); child a hangs in its test-case trial: killed, not waited for
    path = _write(tmp_path, "if o_extend.dtype == torch.float32:\n    while True:\n        pass\nreturn None\n")
    started = time.monotonic()
    verdict = _verify(verifier, path, 2, case_ids=("fp32-inputs",), random_cases=1, skip_static=True,
                      timeout_s=120)
    assert time.monotonic() - started < 60
    assert verdict.stage == "runtime_error" and _where(verdict.reasons[0]) == ("hidden random shape", "0")
    a, b = runs["children"]
    run_a = runs["dynamic"][0]
    # killed while hanging, or -- when b failed before a had reached its trial (a loaded machine) -- stopped at
    # that step and killed on the way out, or failed at a trial of its own first (its covering trials launch no
    # kernel either); either way never waited for
    own_failure = run_a.outcome.stage == "runtime_error" and run_a.outcome.failed_at is not None
    assert (run_a.outcome.stopped or own_failure) and a.killed_because in (STOPPED_BECAUSE, "")
    assert not b.killed_because
    assert verdict.config["exit_statuses"][0] == 9  # SIGKILL
    _nothing_left(runs)


@pytest.mark.slow  # ~8 s on a busy 2-core machine
@CPU_ONLY
def test_a_child_hanging_before_the_failure_decides_the_verdict_as_with_one_child(verifier, tmp_path, runs):
    # child a fails at its test-case trial, child b hangs at trial 0: the verdict is trial 0's timeout (as with one)
    path = _write(tmp_path, "if o_extend.dtype == torch.float16:\n    while True:\n        pass\nreturn None\n")
    for children in (1, 2):
        verdict = _verify(verifier, path, children, case_ids=("fp32-inputs",), random_cases=1, skip_static=True,
                          timeout_s=4)
        assert verdict.stage == "runtime_error" and "timed out" in verdict.reasons[0], verdict.summary()
    _nothing_left(runs)


@pytest.mark.slow  # ~50 s on 2 cores
@CPU_ONLY
def test_timing_starts_only_after_the_other_child_exited(verifier, runs, monkeypatch):
    at_go: list[dict] = []
    real_send = sandbox_module.ChildProcess.send

    def send(self, header):
        if header.get("type") == "go":
            (parallel,) = runs["parallel"]
            others = [r for r in parallel.runs if r.child is not self]
            at_go.append({"others_done": all(parallel._done[parallel.runs.index(r)].is_set() for r in others),
                          "others_reaped": all(r.child._status is not None for r in others),
                          "prefetch_threads": [t.name for t in threading.enumerate()
                                               if t.name == "verifier-trial-prefetch"],
                          "own_timing": self is parallel.runs[0].child})
        real_send(self, header)

    monkeypatch.setattr(sandbox_module.ChildProcess, "send", send)
    verdict = _verify(verifier, HONEST[-1].path, 2, timing=True, case_ids=("gqa-4",), reps=4)
    assert verdict.stage == "pass", verdict.summary()
    assert set(verdict.timings) == {"gqa-4"}
    assert at_go == [{"others_done": True, "others_reaped": True, "prefetch_threads": [], "own_timing": True}]
    assert "timing" in verdict.config["phase_seconds"]
    _nothing_left(runs)


@pytest.mark.slow  # 28-36 s on 2 cores
@CPU_ONLY
@pytest.mark.parametrize("in_child", [0, 1], ids=["first-child", "second-child"])
def test_an_exception_in_either_run_leaves_nothing_running(verifier, runs, monkeypatch, in_child):
    real = DynamicRun._judge_trial

    def judge(self, trial):
        if self is runs["dynamic"][in_child] and trial.id == self.plan.trials[0].id:
            raise KeyError("verifier bug (simulated)")
        return real(self, trial)

    monkeypatch.setattr(DynamicRun, "_judge_trial", judge)
    with pytest.raises(KeyError, match="simulated"):
        _verify(verifier, HONEST[-1].path, 2, case_ids=("gqa-4",))
    _nothing_left(runs)
    # the other child was stopped (or had ended); the verifier still works
    assert all(not r.prefetch.running for r in runs["dynamic"])
    monkeypatch.setattr(DynamicRun, "_judge_trial", real)
    assert _verify(verifier, HONEST[-1].path, 2, case_ids=("gqa-4",)).stage == "pass"


def test_merged_errors_sum_counts_and_keep_the_worst():
    from agent.verifier.verdict import CaseErrors

    a = CaseErrors(case_id="x", trials=1, elements=10, mismatches=1, nonfinite=0, max_abs_error=0.5,
                   max_rel_error=0.1, atol=1e-3, rtol=1e-3)
    b = CaseErrors(case_id="x", trials=2, elements=5, mismatches=0, nonfinite=2, max_abs_error=0.2,
                   max_rel_error=0.3, atol=1e-3, rtol=1e-3)
    m = parallel._merge_errors(a, b)
    assert (m.trials, m.elements, m.mismatches, m.nonfinite) == (3, 15, 1, 2)
    assert (m.max_abs_error, m.max_rel_error) == (0.5, 0.3)
    assert parallel._merge_errors(None, b) is b
