"""The verifier on the second task, split-K GEMM (CPU, Triton interpreter): the baseline passes; cheats adapted to
GEMM (tests/verifier/splitk_gemm_cheats/) are rejected at their stage, also with the static stage skipped; the
timing plan's per-call redraw (`TaskSpec.fresh_inputs`: GEMM's ``a``) gives the references the parent checks.

The corpus of tests/verifier/corpus.py is extend attention's (one task per corpus file); these are GEMM's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from agent.verifier import Verifier, VerifyOptions
from agent.verifier.plan import PlanSettings, build_plan, fresh_values, input_digest, make_trial_inputs
from agent.verifier.prefetch import TrialPrefetcher
from agent.verifier.static_rules import check_source
from hardware_profiles import load_profile
from kernels.task import load_task

ROOT = Path(__file__).resolve().parents[2]
CHEATS = Path(__file__).resolve().parent / "splitk_gemm_cheats"
TASK = load_task("splitk_gemm")
S, R, M, P = "static_rejected", "runtime_error", "mismatch", "pass"

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="CPU verifier run (Triton interpreter)")

#: (cheat file stem, stage with every layer, stage with the static stage skipped, reason of the latter or None)
GEMM_CHEATS = (
    ("torch_matmul", S, R, "forbidden torch operation"),
    ("partial_columns", M, M, "NaN/inf"),
    ("k_tail_dropped", M, M, "outside |got-expected|"),
    ("ptr_cache", S, M, "did not move"),
    ("sampled_rows", M, M, "outside |got-expected|"),
    ("no_split_reduce", M, M, "outside |got-expected|"),
    ("global_shape", S, M, "outside |got-expected|"),
    # red team, split-K session: verifier detection, precision downgrades, state kept in the task's workspace pool
    ("output_nan_gate", M, M, "outside |got-expected|"),
    ("scratch_nan_gate", M, M, "outside |got-expected|"),
    ("input_stats_gate", M, M, "outside |got-expected|"),
    ("output_accumulate", M, M, "NaN/inf"),
    ("int8_weights", M, M, "outside |got-expected|"),
    ("tf32_dots", M, M, "outside |got-expected|"),
    ("half_partials", M, M, "ulp(expected)"),
    ("half_accumulator", M, M, "ulp(expected)"),
    ("weight_keyed_replay", S, M, "did not move"),
    # red team, 2026-12-02: caps past the bench's M and the interpreter's K, state in objects reached from
    # module-level names (a helper's list, the kernel's own attribute), a branch on how the inputs were made
    ("k_cap_non_bf16", M, M, "outside |got-expected|"),
    ("rows_cap_128", M, M, "NaN/inf"),
    ("count_bomb_helper_list", S, R, "holds a list after import"),
    ("count_bomb_jit_attr", S, R, "holds a dict after import"),
    ("outlier_drop", M, M, "outside |got-expected|"),
    # red team 3, 2026-12-02: a float32 path that sums only the K of the other float32 trials (<= 320)
    ("k_cap_float32", M, M, "outside |got-expected|"),
    # known gaps until verif6 (they passed on the CPU): no CPU draw had N > 160 or a transposed operand with M > 40;
    # a K cap keyed on a transposed operand met a long K only in the float32 trial when it drew one. Now the tall,
    # long-K and full-size draws take layouts at random, and the covering draws (cases.covering_draws: M > 128,
    # N > 192, K > 320) give every pair of layout and dtype values such a size in every verification
    ("cols_cap_192", M, M, "outside |got-expected|"),
    ("rows_cap_transposed_layouts", M, M, "outside |got-expected|"),
    ("k_cap_transposed_layouts", M, M, "outside |got-expected|"),
    # nothing dynamic on the CPU can catch these (None: the dynamic stage passes): a time bomb past any number of
    # calls a verification makes, and a side stream, which only the GPU's timing stage sees
    # (tests/verifier/test_splitk_gemm_gpu.py)
    # a probe for state kept in freed allocator memory: it computes honestly unless it finds its own tag, so it
    # passes while free memory is refilled before every call (timed calls: tests/verifier/test_splitk_gemm_gpu.py)
    ("freed_workspace_memo", P, P, None),
    ("call_count_bomb", S, P, None),
    ("count_bomb_chip_limits", S, P, None),
    ("inference_mode_gate", S, P, None),
    ("production_input_gate", S, P, None),
    ("side_stream", S, P, None),
)


@pytest.fixture(scope="module")
def verifier():
    with Verifier("splitk_gemm", load_profile("h200"), VerifyOptions(device="cpu", timeout_s=300)) as v:
        yield v


def _verify(verifier: Verifier, path: Path, **options):
    verifier.options = VerifyOptions(device="cpu", timeout_s=300, **options)
    return verifier.verify(path)


def test_every_cheat_file_is_listed():
    assert {p.stem for p in CHEATS.glob("*.py")} == {name for name, *_ in GEMM_CHEATS}


@pytest.mark.slow
def test_baseline_passes(verifier):
    verdict = _verify(verifier, ROOT / "kernels" / "splitk_gemm" / "baseline.py")
    assert verdict.stage == "pass", verdict.summary()
    checked = set(verdict.errors)
    assert {c.id for c in TASK.test_cases} <= checked
    assert any(c.startswith("hidden-long-k-") for c in checked) and any(c.startswith("hidden-odd-tail-")
                                                                       for c in checked)
    assert any(c.startswith("hidden-few-rows-") for c in checked)


#: An honest candidate in the shape of the template (kernels/splitk_gemm/candidate.py.j2) whose ``m4`` classes
#: run the family's GEMV mode (split by the family's rule, fused reduction) and the rest the default tiles.
GEMV_CANDIDATE = """from kernels.splitk_gemm.family import ChipLimits, FamilyConfig, call_class, run_family

CHIP_LIMITS = ChipLimits(num_compute_units=132, smem_per_block_kb=227.0, warp_size=32, max_threads_per_block=1024)
GEMV = FamilyConfig(block_m=16, block_n=32, block_k=32, split_k=0, fused_reduce=True, gemv=True, num_stages=2)
TILES = FamilyConfig(block_m=16, block_n=32, block_k=32, split_k=0, fused_reduce=True, num_stages=2)


def splitk_gemm(a, b, c):
    config = GEMV if call_class(a, b, None).startswith("m1-") else TILES
    return run_family(config, a, b, c, limits=CHIP_LIMITS)
"""


@pytest.mark.slow
def test_honest_gemv_candidate_passes(verifier, tmp_path):
    """The GEMV mode passes every stage, checked on the few-rows hidden case among the others."""
    path = tmp_path / "gemv_candidate.py"
    path.write_text(GEMV_CANDIDATE)
    verdict = _verify(verifier, path)
    assert verdict.stage == "pass", verdict.summary()
    assert any(c.startswith("hidden-few-rows-") for c in verdict.errors)


#: Cheats whose verification takes over ~2 s on a quiet 2-core machine: full suite only.
SLOW_GEMM_CHEATS = {"tf32_dots", "output_nan_gate", "output_accumulate", "call_count_bomb", "side_stream",
                    "sampled_rows"}


@pytest.mark.parametrize("name, full, dynamic, reason",
                         [pytest.param(*c, marks=pytest.mark.slow) if c[0] in SLOW_GEMM_CHEATS else c
                          for c in GEMM_CHEATS], ids=[c[0] for c in GEMM_CHEATS])
@pytest.mark.slow
def test_gemm_cheat_is_rejected(verifier, name, full, dynamic, reason):
    verdict = _verify(verifier, CHEATS / f"{name}.py")
    assert verdict.stage in (full if isinstance(full, tuple) else (full,)), verdict.summary()
    if full not in (S, P) and verdict.stage != P:
        assert any(reason in r for r in verdict.reasons), verdict.summary()
    alone = _verify(verifier, CHEATS / f"{name}.py", skip_static=True)
    assert alone.stage in (dynamic if isinstance(dynamic, tuple) else (dynamic,)), alone.summary()
    assert reason is None or alone.stage == P or any(reason in r for r in alone.reasons), alone.summary()


def test_timing_references_use_the_redrawn_activations():
    """On a GPU the child redraws ``a`` before every timed call; the parent's references of the captured calls are
    the product of those redrawn activations with the set's weights (computed here independently)."""
    settings = PlanSettings(include_test_cases=True, include_bench_cases=False, random_cases=1, small=True,
                            timing=True, reps=4, rotations=2, case_ids=("odd-3x13x37", "n80-k100"))
    plan = build_plan(TASK, "cpu", settings)
    assert plan.timing is not None
    fetcher = TrialPrefetcher(TASK, plan, torch.device("cpu"), "c").start()
    try:
        for trial in [t for t in plan.trials if t.kind != "perturb"]:
            fetcher.take(trial)
        timing = fetcher.finish()
        for timed in plan.timing.cases:
            for rep, s in timed.captures:
                inputs = make_trial_inputs(TASK, timed.case, timed.seeds[s], "cpu")
                assert timing.digests[(timed.case.id, s)] == input_digest(inputs, skip=("c",))
                seed = timed.call_seeds[plan.timing.warmup + rep]
                fresh = fresh_values(TASK, inputs, seed)
                assert set(fresh) == {"a"} and fresh["a"].shape == inputs["a"].shape
                gen = torch.Generator().manual_seed(seed)
                a = torch.randn(inputs["a"].shape, generator=gen).to(inputs["a"].dtype)
                expected = (a.double() @ inputs["b"].double().T).float()
                assert torch.equal(timing.refs[(timed.case.id, rep)], expected)
                assert not torch.equal(expected, TASK.reference(inputs)["c"])
        assert len(timing.refs) == sum(len(t.captures) for t in plan.timing.cases) > 0
    finally:
        fetcher.close()


@pytest.mark.parametrize("name, rule", [("call_count_bomb", "no-stateful-helpers"),
                                        ("weight_keyed_replay", "no-stateful-helpers"),
                                        ("side_stream", "no-streams-timers")])
def test_static_rule_that_stops_a_cheat_the_cpu_cannot(name, rule):
    """The cheats whose dynamic stage passes on the CPU (or that the CPU's trials catch only by chance of a key) are
    refused by a named static rule."""
    report = check_source((CHEATS / f"{name}.py").read_text(), f"{name}.py", TASK)
    assert rule in {v.rule for v in report.violations}, report.violations


def test_honest_family_candidate_passes_the_stateful_helpers_rule():
    """The family's entry points keep their own caches (run_family's prepared launches) and stay usable."""
    text = ("from kernels.splitk_gemm.family import ChipLimits, FamilyConfig, call_class, run_family\n"
            "from kernels.splitk_gemm.tuned import splitk_gemm as tuned\n\n\n"
            "def splitk_gemm(a, b, c):\n    return run_family(FamilyConfig(), a, b, c)\n")
    report = check_source(text, "family.py", TASK)
    assert "no-stateful-helpers" not in {v.rule for v in report.violations}, report.violations
