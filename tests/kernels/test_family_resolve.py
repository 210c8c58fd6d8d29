"""Call-dependent knob values (`family.resolve_call`): ragged tiles, derived gather-ahead, and the tuned entry point
as a class configuration plus that resolution."""

from __future__ import annotations

import pytest
import torch

from kernels.chip import ChipLimits
from kernels.extend_attention.cases import full_params
from kernels.extend_attention.common import Problem
from kernels.extend_attention.family import (
    AHEAD_DERIVED,
    FamilyConfig,
    auto_splits,
    extend_hint,
    is_ragged,
    launch_config,
    resolve_call,
    run_family,
)
from kernels.extend_attention.family_ahead import gather_ahead_rows
from kernels.extend_attention.family_space import case_shape
from kernels.extend_attention.spec import TASK
from kernels.extend_attention.tuned import choose_config, class_config
from kernels.task import Case
from tests.kernels.helpers import check_impl, on_poisoned_workspace

H200 = ChipLimits(num_compute_units=132, smem_per_block_kb=227, warp_size=32, max_threads_per_block=1024)
#: one compute unit: a grid of a few programs per KV head is already a wave, so small cases gather ahead
ONE_UNIT = ChipLimits(num_compute_units=1, smem_per_block_kb=227, warp_size=32, max_threads_per_block=1024)
DERIVED = FamilyConfig(block_m=128, block_n=128, num_warps=8, num_stages=3, num_splits=0, pack_gqa=True,
                       pregather=True, tma=True, gather_ahead=AHEAD_DERIVED, ahead_heads=1, ahead_sync=True,
                       ragged_tiles=64)


def _problem(batch, ext, pre, hq=32, hkv=8, d=128):
    return Problem(batch, batch * ext, batch * pre, hq, hkv, d, d, torch.bfloat16)


def test_hint_prefers_the_host_list_and_ragged_means_over_twice_the_mean():
    assert extend_hint(300, [4, 9]) == 9 and extend_hint(300, None) == 300 and extend_hint(None, []) is None
    prob = Problem(8, 8192 + 7 * 16, 7 * 4096, 32, 8, 128, 128, torch.bfloat16)  # the ragged bench case
    assert is_ragged(prob, 8192) and not is_ragged(prob, 2 * prob.total_extend // 8) and not is_ragged(prob, None)


def test_ragged_tiles_apply_to_ragged_calls_only():
    prob = Problem(8, 8192 + 7 * 16, 7 * 4096, 32, 8, 128, 128, torch.bfloat16)
    ragged = resolve_call(DERIVED, prob, H200, 8192)
    assert (ragged.block_m, ragged.block_n, ragged.num_warps, ragged.ragged_tiles) == (64, 64, 4, 0)
    assert ragged.num_stages == DERIVED.num_stages and ragged.pack_gqa
    even = resolve_call(DERIVED, prob, H200, prob.total_extend // prob.batch)
    assert (even.block_m, even.block_n, even.num_warps, even.ragged_tiles) == (128, 128, 8, 0)


@pytest.mark.parametrize("prob, hint", [
    (_problem(16, 256, 4096), 256),  # the mixed batch: 16 rows per key tile
    (_problem(64, 512, 4096), 512),  # 8 rows per tile
    (_problem(12, 256, 4096), 256),  # too few programs per head: off
    (_problem(16, 256, 4096), 300),  # unequal extends: off
    (_problem(1, 2048, 32768), 2048),  # two splits: off
])
def test_derived_gather_ahead_is_the_rule_per_call_and_off_leaves_no_sub_knobs(prob, hint):
    resolved = resolve_call(DERIVED, prob, H200, hint)
    rows_per_seq = prob.total_extend // prob.batch * prob.group
    rows = gather_ahead_rows(prob, rows_per_seq, auto_splits(DERIVED, prob, H200), H200, hint)
    assert resolved.gather_ahead == rows
    if rows:
        assert (resolved.ahead_heads, resolved.ahead_sync) == (1, True)
    else:  # the sub-knobs change nothing without gather-ahead: at their defaults
        assert (resolved.ahead_heads, resolved.ahead_sync) == (FamilyConfig().ahead_heads, FamilyConfig().ahead_sync)
    assert resolve_call(resolved, prob, H200, hint) == resolved  # idempotent
    assert resolved.num_splits == 0  # the split count stays derived (run_family resolves it after fitting)


def test_every_bench_case_runs_its_class_configuration_resolved():
    """The tuned entry point's configuration of each bench case is the case's class configuration (derived
    values) resolved for the call: one configuration per class serves every call of the class."""
    for case in TASK.bench_cases:
        shape = case_shape(case)
        prob, hint = shape.problem(), max(case.params["extend_lens"])
        tuned = choose_config(prob, H200, hint)
        assert launch_config(class_config(prob), prob, H200, shape.v_is_k, hint) == \
            launch_config(tuned, prob, H200, shape.v_is_k, hint), case.id
    assert launch_config(DERIVED, _problem(16, 256, 4096), H200, False, 256).gather_ahead == 16


def test_out_of_range_values_are_refused():
    for bad in ({"gather_ahead": -2}, {"ragged_tiles": 48}, {"ragged_tiles": 8}):
        with pytest.raises(ValueError, match="out of range"):
            FamilyConfig(**bad)


def _case(extend, prefix) -> Case:
    params = full_params(dict(extend_lens=extend, prefix_lens=prefix, num_q_heads=8, num_kv_heads=4, head_dim=32,
                              dtype="float16"))
    return Case("resolve", params, 5, "edge")


@pytest.mark.parametrize("extend, prefix, ahead", [
    ([8, 8], [20, 37], True),  # uniform: 16 rows per 16-key tile are copied ahead
    ([5, 0, 21, 1], [3, 9, 40, 17], False),  # ragged: 16 x 16 tiles, gather-ahead off
])
def test_derived_values_give_the_reference_under_the_interpreter(extend, prefix, ahead, device):
    config = FamilyConfig(block_m=32, block_n=16, num_splits=1, pack_gqa=True, pregather=True, tma=True,
                          gather_ahead=AHEAD_DERIVED, ahead_sync=True, ragged_tiles=16)
    shape = case_shape(_case(extend, prefix))
    resolved = resolve_call(config, shape.problem(), ONE_UNIT, max(extend))
    assert (resolved.gather_ahead > 0) == ahead and (resolved.block_m == 16) == (not ahead)
    check_impl(on_poisoned_workspace(lambda **a: run_family(config, **a, limits=ONE_UNIT)), _case(extend, prefix),
               device)
