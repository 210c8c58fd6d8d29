"""The in-place perturbation trial's judgement (`dynamic.replay_check`) on real extend-attention references."""

from __future__ import annotations

import torch

from agent.verifier.dynamic import replay_check
from agent.verifier.plan import Trial, apply_perturbation, make_trial_inputs
from kernels.extend_attention.params import full_params
from kernels.task import Case, load_task

TASK = load_task("extend_attention")
TOL = TASK.tolerance("float16", interpreter=True)


def _reference_before_and_after(redraw_only: bool, extend_lens: list[int], prefix_lens: list[int]):
    """References of a small float16 case before and after its in-place perturbation (`plan.apply_perturbation`)."""
    case = Case("small", full_params(dict(extend_lens=extend_lens, prefix_lens=prefix_lens, num_q_heads=2,
                                          num_kv_heads=1, head_dim=16, dtype="float16")), 5)
    inputs = make_trial_inputs(TASK, case, 11, "cpu")
    before = TASK.reference(inputs)["o_extend"].clone()
    apply_perturbation(TASK, inputs, Trial(1, "perturb", case, 11, "perturb", base=0, perturb_seed=29,
                                           redraw_only=redraw_only))
    return before, TASK.reference(inputs)["o_extend"]


def test_a_replayed_output_fails_and_an_honest_one_passes():
    before, after = _reference_before_and_after(False, [5, 3], [4, 0])
    moved_at, problem = replay_check(before, before.half(), after, before.half(), TOL)  # the old answer replayed
    assert moved_at > before.numel() // 2  # v negated and q redrawn: nearly every element moves
    assert problem is not None and "did not move" in problem and f"changed at {moved_at} elements" in problem
    assert replay_check(before, before.half(), after, after.half(), TOL) == (moved_at, None)


def test_a_perturbation_that_moves_no_reference_element_reports_zero_and_no_failure():
    # one query token without a prefix sees only its own key: the output is its value row whatever q is, so the
    # redraw of q alone moves nothing (the plan's full perturbation negates v as well)
    before, after = _reference_before_and_after(True, [1], [0])
    assert torch.equal(before, after)
    assert replay_check(before, before.half(), after, before.half(), TOL) == (0, None)
