"""Gather-ahead: KV head 0's prefix is copied before attention, each later head's by the previous head's launch."""

from __future__ import annotations

import pytest
import torch

from kernels.extend_attention.cases import full_params
from kernels.extend_attention.common import check_inputs
from kernels.extend_attention.family import FamilyConfig, ahead_applies, run_family
from kernels.extend_attention.spec import make_inputs
from kernels.extend_attention.workspace import pooled
from kernels.task import Case
from tests.kernels.helpers import check_impl, on_poisoned_workspace, poison_prefix_workspace

AHEAD = FamilyConfig(block_m=16, block_n=16, num_splits=1, pack_gqa=True, pregather=True, tma=True, gather_ahead=4)
#: one launch over all heads, two heads pre-gathered, programs of head h waiting on the copies of head h - 2
AHEAD_SYNC = FamilyConfig(**{**AHEAD.to_dict(), "ahead_heads": 2, "ahead_sync": True})


def _case(extend, prefix, heads=(8, 4), **extra) -> Case:
    params = full_params(dict(extend_lens=extend, prefix_lens=prefix, num_q_heads=heads[0], num_kv_heads=heads[1],
                              head_dim=32, dtype="float16", **extra))
    return Case("ahead", params, 7, "edge")


@pytest.mark.parametrize("config", [AHEAD, AHEAD_SYNC], ids=["launch-per-head", "sync-two-ahead"])
def test_every_prefix_row_attention_reads_is_copied_in_the_same_call(config, device):
    # a sequence without extend rows (nobody copies its prefix past head 0) after one whose last prefix tile
    # reaches into it; uneven prefixes leave rows to the copy after the loop
    case = _case([5, 0, 21, 1], [3, 9, 40, 17])
    args = make_inputs(case, 3, device)
    poison_prefix_workspace(args)
    check_impl(lambda **a: run_family(config, **a), case, device, seed=3)
    gathered = pooled(args["k_buffer"].device, args["k_buffer"].dtype, "prefix_k",
                      args["kv_indices"].shape[0] * 4 * 32).view(-1, 4, 32)
    expected = args["k_buffer"][args["kv_indices"]]
    starts = args["kv_indptr"].tolist()
    extend = case.params["extend_lens"]
    rows_with_queries = torch.cat([torch.arange(starts[b], starts[b + 1]) for b in range(len(extend)) if extend[b]])
    assert rows_with_queries.numel() == 3 + 40 + 17  # sequence 1 (no queries) is the one left out
    assert torch.equal(gathered[rows_with_queries], expected[rows_with_queries])


@pytest.mark.parametrize("heads", [1, pytest.param(3, marks=pytest.mark.slow)])
@pytest.mark.parametrize("sync", [False, True])
@pytest.mark.parametrize("rows", [pytest.param(1, marks=pytest.mark.slow), 2, pytest.param(64, marks=pytest.mark.slow)])
def test_any_rows_per_tile_heads_ahead_and_ordering_give_the_reference(rows, sync, heads, device):
    case = _case([13, 30], [50, 7])
    config = FamilyConfig(block_m=16, block_n=16, num_splits=1, pack_gqa=True, pregather=True, tma=True,
                          gather_ahead=rows, ahead_heads=heads, ahead_sync=sync)
    check_impl(on_poisoned_workspace(lambda **a: run_family(config, **a)), case, device)


def test_the_launch_plan_follows_heads_ahead_and_sync():
    from kernels.extend_attention.family import ahead_launches

    two = FamilyConfig(**{**AHEAD.to_dict(), "ahead_heads": 2})
    assert ahead_launches(two, 5, True) == [(0, 2, 4), (2, 2, 4), (4, 1, 4)]
    assert ahead_launches(AHEAD_SYNC, 5, True) == [(0, 5, 4)]
    assert ahead_launches(two, 5, False) == [(0, 5, 0)]


def _applies(config: FamilyConfig, case: Case, window: bool = False, masked_prefix: bool = False) -> bool:
    args = make_inputs(case, 1, "cpu")
    prob = check_inputs(*(args[k] for k in ("q_extend", "k_extend", "v_extend", "o_extend", "k_buffer", "v_buffer",
                                            "qo_indptr", "kv_indptr", "kv_indices", "custom_mask",
                                            "mask_indptr", "sinks")))
    return ahead_applies(config, prob, contig=True, v_is_k=False, prefix_masked=window or masked_prefix)


def test_it_applies_only_where_one_launch_per_kv_head_can_copy_the_next():
    gqa, mha = _case([4], [8]), _case([4], [8], heads=(4, 4))
    assert _applies(AHEAD, gqa)
    assert not _applies(FamilyConfig(**{**AHEAD.to_dict(), "gather_ahead": 0}), gqa)
    assert not _applies(FamilyConfig(**{**AHEAD.to_dict(), "num_splits": 2}), gqa)
    assert not _applies(FamilyConfig(**{**AHEAD.to_dict(), "pack_gqa": False}), gqa)  # programs per q head
    assert _applies(FamilyConfig(**{**AHEAD.to_dict(), "pack_gqa": False}), mha)
    assert not _applies(AHEAD, _case([4], [8], heads=(4, 1)))  # one KV head: nothing to copy ahead
    assert not _applies(AHEAD, gqa, window=True)
    assert not _applies(FamilyConfig(**{**AHEAD.to_dict(), "ahead_heads": 4}), gqa)  # every head pre-gathered


@pytest.mark.parametrize("knobs", [{"gather_ahead": 3}, {"gather_ahead": 512}, {"gather_ahead": -2},
                                   {"ahead_heads": 0}])
def test_rows_per_tile_must_be_a_power_of_two_up_to_256_and_heads_ahead_positive(knobs):
    """-1 (family.AHEAD_DERIVED: the rule per call) is the one value outside the rows."""
    with pytest.raises(ValueError, match="out of range"):
        FamilyConfig(**knobs)
