"""Plans: secret seeds, hidden shapes, trial order; input digests and the in-place perturbation."""

from __future__ import annotations

import random

import pytest
import torch

from agent.verifier.plan import (
    REQUIRED_DTYPES,
    Plan,
    PlanSettings,
    build_plan,
    input_digest,
    make_trial_inputs,
    perturb_inputs,
    prefill_output,
    tensor_digest,
)
from kernels.extend_attention.cases import (
    ADVERSARIAL_Q_SCALE,
    GPU_DTYPE_HEAD_DIM,
    LONG_PREFIX_KEYS,
    WIDE_DTYPE_HEAD_DIMS,
    adversarial_case,
    long_prefix_case,
)
from core.errors import BadInputError
from kernels.task import load_task

TASK = load_task("extend_attention")
EXTEND, GEMM = TASK, load_task("splitk_gemm")
CPU = PlanSettings(include_test_cases=True, include_bench_cases=False, random_cases=3, small=True, timing=False)
GPU = PlanSettings(include_test_cases=False, include_bench_cases=True, random_cases=2, small=False, timing=True,
                   reps=7, rotations=2)


def test_cpu_plan_order_and_contents():
    plan = build_plan(TASK, "cpu", CPU)
    kinds = [t.kind for t in plan.trials]
    assert kinds[:4] == ["check", "perturb", "perturb", "check"] and kinds[-1] == "ablate"
    assert plan.trials[1].base == plan.trials[0].id and plan.trials[1].case == plan.trials[0].case
    assert plan.trials[2].base == plan.trials[1].id and plan.trials[2].redraw_only
    assert not plan.trials[1].redraw_only
    assert plan.trials[3].case.params["q_scale"] == ADVERSARIAL_Q_SCALE
    ids = [t.case.id for t in plan.trials]
    assert {c.id for c in TASK.test_cases} <= set(ids)
    assert sum(i.startswith("random-") for i in ids) >= 4  # hidden shapes, one repeated with a new seed
    assert plan.timing is None
    assert Plan.from_json(plan.to_json()) == plan


@pytest.mark.parametrize("task", [EXTEND, GEMM], ids=["extend_attention", "splitk_gemm"])
def test_prefills_vary_and_always_include_finite_ones(task):
    """Some check trials call the candidate on a finite prefilled output (zeros and noise, at least one of each), at
    trials the secret seed picks; the first trial, perturbation chains and the ablation keep NaN."""
    seen_at: set[tuple[str, int]] = set()
    for seed in range(8):
        plan = build_plan(task, "cpu", CPU, random.Random(seed))
        fills = [t.prefill for t in plan.trials]
        assert {"zeros", "noise"} <= set(fills) <= {"nan", "zeros", "noise"}
        assert fills[0] == fills[1] == fills[2] == "nan" and fills[-1] == "nan"
        seen_at |= {(f, i) for i, f in enumerate(fills) if f != "nan"}
        assert Plan.from_json(plan.to_json()) == plan
    assert len({i for _, i in seen_at}) > 2  # not always the same trials


def test_prefill_output_fills():
    out = torch.empty(3, 5, dtype=torch.float16)
    prefill_output(out, "nan", 1)
    assert torch.isnan(out).all()
    prefill_output(out, "zeros", 1)
    assert (out == 0).all()
    prefill_output(out, "noise", 7)
    first = out.clone()
    assert torch.isfinite(out).all() and out.float().std() > 0.3
    prefill_output(out, "noise", 7)
    assert torch.equal(out, first)


def test_seeds_are_fresh_and_secret():
    a, b = build_plan(TASK, "cpu", CPU), build_plan(TASK, "cpu", CPU)
    assert {t.seed for t in a.trials}.isdisjoint({t.seed for t in b.trials})
    assert all(t.seed != t.case.seed for t in a.trials)
    assert a.trials[0].case.id != b.trials[0].case.id


def test_gpu_plan_times_every_bench_case_on_rotated_sets():
    plan = build_plan(TASK, "cuda", GPU, random.Random(1))
    assert plan.timing is not None and plan.timing.reps == 7
    assert [t.case.id for t in plan.timing.cases] == [c.id for c in TASK.bench_cases]
    bench_trials = {t.case.id: t.seed for t in plan.trials if t.label == "bench case"}
    for timed in plan.timing.cases:
        assert timed.seeds[0] == bench_trials[timed.case.id] and len(timed.seeds) == 2
        # two re-checked calls per set (7 reps over 2 sets: set 0 = reps 0,2,4,6; set 1 = reps 1,3,5)
        per_set = {s: sorted(r for r, s2 in timed.captures if s2 == s) for s in (0, 1)}
        assert len(per_set[0]) == len(per_set[1]) == 2
        assert all(r % 2 == s for s, reps in per_set.items() for r in reps)
    last_rechecked = [(6, 0) in t.captures for t in plan.timing.cases]
    assert not all(last_rechecked), "the last call of a set must not always be the one re-checked"


def test_adversarial_case_has_enough_keys_per_row():
    case = adversarial_case(random.Random(3), small=True)
    assert min(case.params["prefix_lens"]) >= 16 and min(case.params["extend_lens"]) >= 8
    assert case.params["logit_cap"] == 0.0 and case.params["sliding_window"] == -1


def test_long_prefix_case_outruns_truncation_windows_and_stays_small_on_the_cpu():
    plan = build_plan(TASK, "cpu", CPU)
    (trial,) = [t for t in plan.trials if t.label == "long prefix"]
    low, high = LONG_PREFIX_KEYS[True]
    assert low <= max(trial.case.params["prefix_lens"]) <= high and low > 4096
    p = trial.case.params
    assert p["num_q_heads"] <= 2 and p["num_kv_heads"] == 1 and max(p["extend_lens"]) > 128  # and a long extend
    gpu = long_prefix_case(random.Random(2), small=False)
    assert max(gpu.params["prefix_lens"]) > max(max(c.params["prefix_lens"]) for c in TASK.bench_cases)


def test_long_prefix_case_draws_every_feature_but_the_window():
    drawn = [long_prefix_case(random.Random(seed), small=True).params for seed in range(40)]
    for key, rare in (("is_causal", False), ("custom_mask", True), ("skip_prefix_custom_mask", False),
                      ("dtype", "float32"), ("sinks", True)):
        assert any(p[key] == rare for p in drawn) and any(p[key] != rare for p in drawn), key
    assert any(p["sm_scale"] is not None for p in drawn) and any(p["sm_scale"] is None for p in drawn)
    assert any(p["head_dim_v"] != p["head_dim"] for p in drawn) and any(p["head_dim"] > 32 for p in drawn)
    assert any(p["k_scale"] != 1.0 for p in drawn) and all(p["sliding_window"] <= 0 for p in drawn)  # no window
    assert any(p["logit_cap"] > 0 for p in drawn) and any(p["num_q_heads"] > p["num_kv_heads"] for p in drawn)
    longest = [max(range(len(p["prefix_lens"])), key=p["prefix_lens"].__getitem__) for p in drawn]
    assert 0 in longest and any(i > 0 for i in longest)  # which sequence holds the long prefix is drawn too


def test_float32_inputs_are_checked_on_every_device():
    assert "float32" in REQUIRED_DTYPES
    plan = build_plan(TASK, "cuda", GPU, random.Random(4))
    # bench and random cases are bfloat16; the GPU's float32 is a complementary pair of long trials
    pair = [t for t in plan.trials if t.case.params["dtype"] == "float32"]
    assert len(pair) == 2 and all(t.kind == "check" and t.label.startswith("float32 long prefix") for t in pair)
    assert all(t.case.params["head_dim"] == GPU_DTYPE_HEAD_DIM for t in pair)
    assert {t.case.params["is_causal"] for t in pair} == {True, False}
    cpu = build_plan(TASK, "cpu", CPU)
    (wide,) = [t for t in cpu.trials if t.label == "float32 inputs"]  # beside the fp32-inputs test case (16, 32)
    assert wide.case.params["dtype"] == "float32" and wide.case.params["head_dim"] in WIDE_DTYPE_HEAD_DIMS


def test_digest_is_bit_exact_and_deterministic_in_the_seed():
    case = TASK.case("gqa-4")
    a, b = make_trial_inputs(TASK, case, 11, "cpu"), make_trial_inputs(TASK, case, 11, "cpu")
    assert input_digest(a, ("o_extend",)) == input_digest(b, ("o_extend",))
    assert input_digest(a) != input_digest(make_trial_inputs(TASK, case, 12, "cpu"))
    x = torch.tensor([1.0, 2.0, float("nan")])
    assert tensor_digest(x) == tensor_digest(x.clone()) != tensor_digest(x.flip(0))
    y = x.clone()
    y.view(torch.int32)[2] += 1  # a different NaN payload
    assert tensor_digest(x) != tensor_digest(y)


def test_digest_in_chunks_equals_the_whole_tensor_sums_with_int64_wraparound(monkeypatch):
    import agent.verifier.plan as plan_module

    x = torch.tensor([2**62, 2**62, 2**62, -5, 7], dtype=torch.int64)  # the plain sum wraps past 2^63
    monkeypatch.setattr(plan_module, "_DIGEST_CHUNK", 2)
    values = [2**62, 2**62, 2**62, -5, 7]
    plain = sum(values)
    weighted = sum(v * (i % 65521 + 1) for i, v in enumerate(values))

    def wrap(v):
        v &= (1 << 64) - 1
        return v - (1 << 64) if v >= 1 << 63 else v

    assert tensor_digest(x) == f"[5]:torch.int64:{wrap(plain):x}:{wrap(weighted):x}"


def test_perturbation_is_in_place_deterministic_and_moves_the_reference():
    case = TASK.case("gqa-4")
    a = make_trial_inputs(TASK, case, 5, "cpu")
    ptrs = {k: v.data_ptr() for k, v in a.items() if isinstance(v, torch.Tensor)}
    before = TASK.reference(a)["o_extend"]
    perturb_inputs(TASK, a, 99)
    assert ptrs == {k: v.data_ptr() for k, v in a.items() if isinstance(v, torch.Tensor)}
    b = make_trial_inputs(TASK, case, 5, "cpu")
    perturb_inputs(TASK, b, 99)
    assert input_digest(a) == input_digest(b)
    assert (TASK.reference(a)["o_extend"] - before).abs().max() > 0.1


def test_perturbation_of_mla_views_stays_consistent():
    a = make_trial_inputs(TASK, TASK.case("mla-576-512"), 5, "cpu")
    perturb_inputs(TASK, a, 1)
    assert torch.equal(a["v_extend"], a["k_extend"][..., :512])


def test_gemm_perturbation_redraws_a_and_negates_b_in_place():
    gemm = load_task("splitk_gemm")
    case = gemm.case("a-transposed")  # a is a transposed view: the redraw writes through its strides
    inputs = make_trial_inputs(gemm, case, 5, "cpu")
    ptrs = {k: (v.data_ptr(), v.stride()) for k, v in inputs.items()}
    a0, b0 = inputs["a"].clone(), inputs["b"].clone()
    before = gemm.reference(inputs)["c"]
    perturb_inputs(gemm, inputs, 7)
    assert ptrs == {k: (v.data_ptr(), v.stride()) for k, v in inputs.items()}
    assert torch.equal(inputs["b"], -b0) and not torch.equal(inputs["a"], a0)
    gen = torch.Generator().manual_seed(7)
    assert torch.equal(inputs["a"], torch.randn(a0.shape, generator=gen).to(a0.dtype))
    assert (gemm.reference(inputs)["c"] - before).abs().max() > 0.1


@pytest.mark.parametrize("task", [EXTEND, GEMM], ids=["extend_attention", "splitk_gemm"])
def test_an_unknown_case_id_is_one_error_naming_it(task):
    """A misspelt case id used to drop the case silently (the GPU test timed one of its two cases)."""
    known = task.bench_cases[0].id
    with pytest.raises(BadInputError, match=r"case ids: no-such-case not a bench or test case of " + task.name):
        build_plan(task, "cpu", _only(known, "no-such-case"))
    plan = build_plan(task, "cpu", _only(known))
    assert [t.case.id for t in plan.trials if t.label == "bench case"] == [known]


def _only(*ids: str) -> PlanSettings:
    return PlanSettings(include_test_cases=False, include_bench_cases=True, random_cases=1, small=True, timing=False,
                        case_ids=ids)


@pytest.mark.parametrize("device,settings", [("cpu", CPU), ("cuda", GPU)], ids=["cpu", "gpu"])
def test_gemm_float32_trial_reaches_past_every_random_k(device, settings):
    from kernels.splitk_gemm.cases import FLOAT32_K
    for seed in range(20):
        plan = build_plan(GEMM, device, settings, random.Random(seed))
        (trial,) = [t for t in plan.trials if t.label == "float32 inputs"]
        p = trial.case.params
        assert p["dtype"] == "float32" and 400 <= p["k"] <= 1200 and FLOAT32_K == (400, 1200)
        # every CPU random draw has K <= 320 (cases.random_case), so a float32 path summing 320 of K is far off
        assert p["k"] > max(GEMM.random_case(random.Random(s), True).params["k"] for s in range(200))
