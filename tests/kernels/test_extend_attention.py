"""Baseline, tuned entry point and family configurations against the fp32 reference (interpreter on CPU)."""

from __future__ import annotations

import random

import pytest
import torch

from kernels.extend_attention import baseline, extend_attention_fwd
from kernels.extend_attention.cases import TEST_CASES, full_params
from kernels.extend_attention.family import FamilyConfig, run_family
from kernels.extend_attention.spec import TASK, make_inputs
from kernels.task import Case
from tests.kernels.helpers import check_impl, on_poisoned_workspace

FAMILY = {
    "split3-pack": FamilyConfig(block_m=16, block_n=16, num_warps=4, num_stages=2, num_splits=3, pack_gqa=True),
    "nosplit-nopack": FamilyConfig(block_m=32, block_n=16, num_splits=1, pack_gqa=False, heavy_first=False),
    "split2-nopack": FamilyConfig(block_m=16, block_n=32, num_splits=2, pack_gqa=False),
    "pregather-split2": FamilyConfig(block_m=32, block_n=16, num_splits=2, pack_gqa=False, pregather=True),
    # tensor-descriptor loads where the conditions hold (fp16/bf16, D == D_v a power of two: most edge cases),
    # the pointer path elsewhere (head dims 13/80/96/192/576, float32); tests/kernels/test_tma.py checks which
    "tma-split2-pack": FamilyConfig(block_m=16, block_n=32, num_splits=2, pack_gqa=True, tma=True),
    "tma-pregather-split3": FamilyConfig(block_m=32, block_n=16, num_splits=3, pack_gqa=False, pregather=True,
                                         tma=True),
    # gather-ahead (KV head h's launch copies head h + 1's prefix): 2 rows per key tile leaves most of a slice to
    # the copy after the loop, 16 covers it inside; not packed, it applies only where G = 1
    "ahead2-pack-tma": FamilyConfig(block_m=16, block_n=16, num_splits=1, pack_gqa=True, pregather=True, tma=True,
                                    gather_ahead=2),
    "ahead16-nopack": FamilyConfig(block_m=32, block_n=16, num_splits=1, pack_gqa=False, pregather=True,
                                   gather_ahead=16),
    "ahead4-sync-pack-tma": FamilyConfig(block_m=16, block_n=16, num_splits=1, pack_gqa=True, pregather=True,
                                         tma=True, gather_ahead=4, ahead_sync=True),
}
IMPLS = {"baseline": baseline.extend_attention_fwd, "tuned": extend_attention_fwd}
IMPLS.update({name: (lambda c: lambda **a: run_family(c, **a))(cfg) for name, cfg in FAMILY.items()})
# gather-ahead reads rows its own call copies: start each call on a NaN workspace, not on an earlier call's rows
IMPLS.update({name: on_poisoned_workspace(IMPLS[name]) for name in FAMILY if name.startswith("ahead")})


#: Implementations the fast lane (``-m "not slow"``) checks on every edge case: the two entry points; the full suite
#: checks every family configuration too (~17 s per implementation on a busy 2-core machine; the fast lane's family
#: coverage is tests/agent/test_family_space.py's rendered candidates and tests/kernels/test_tma.py).
FAST_IMPLS = ("baseline", "tuned")
IMPL_PARAMS = [pytest.param(name, marks=() if name in FAST_IMPLS else pytest.mark.slow) for name in sorted(IMPLS)]


@pytest.mark.parametrize("impl", IMPL_PARAMS)
@pytest.mark.parametrize("case", TEST_CASES, ids=[c.id for c in TEST_CASES])
def test_edge_cases_match_reference(case, impl, device):
    check_impl(IMPLS[impl], case, device)


@pytest.mark.parametrize("draw", [*range(6), *(pytest.param(d, marks=pytest.mark.slow) for d in (6, 7))])
def test_random_shapes_match_reference(draw, device):
    rng = random.Random(1234 + draw)
    case = TASK.random_case(rng, small=True)
    cfg = FamilyConfig(block_m=rng.choice([16, 32]), block_n=rng.choice([16, 32]),
                       num_splits=rng.choice([0, 1, 2, 5]), pack_gqa=rng.random() < 0.5,
                       pregather=rng.random() < 0.5, tma=rng.random() < 0.5)
    check_impl(lambda **a: run_family(cfg, **a), case, device)
    check_impl(baseline.extend_attention_fwd, case, device)


def test_int32_kv_indices_accepted(device):
    case = TASK.case("gqa-4")
    args = make_inputs(case, 5, device)
    args["kv_indices"] = args["kv_indices"].to(torch.int32)
    check_impl(lambda **a: extend_attention_fwd(**{**a, "kv_indices": args["kv_indices"]}), case, device)


def test_loose_max_len_extend_only_changes_the_tile_choice(device):
    """A bound far above the real maximum routes the call to the ragged-batch tiles; the result stays exact."""
    case = TASK.case("gqa-4")
    check_impl(lambda **a: extend_attention_fwd(**{**a, "max_len_extend": 10_000}), case, device)


def test_max_len_extend_is_not_trusted(device):
    """A max_len_extend smaller than the real maximum must not drop rows in the optimized kernel."""
    case = TASK.case("gqa-4")
    check_impl(lambda **a: extend_attention_fwd(**{**a, "max_len_extend": 1}), case, device)


@pytest.mark.parametrize("fn", [baseline.extend_attention_fwd, extend_attention_fwd])
@pytest.mark.parametrize("arg, value", [("score_mod", lambda *a: a[0]), ("xai_temperature_len", 8)])
def test_unsupported_argument_names_itself(fn, arg, value, device):
    args = make_inputs(TASK.case("shorter-than-tile"), 0, device)
    with pytest.raises(NotImplementedError, match=arg):
        fn(**args, **{arg: value})


@pytest.mark.parametrize("field, bad, message", [
    ("o_extend", lambda a: a["o_extend"][:, :1], "o_extend has shape"),
    ("q_extend", lambda a: a["q_extend"].to(torch.int8), "q_extend has dtype"),
    ("sinks", lambda a: torch.zeros(3), "sinks must have shape"),
    ("kv_indices", lambda a: a["kv_indices"].float(), "kv_indices must be"),
])
def test_bad_inputs_raise_clear_errors(field, bad, message, device):
    args = make_inputs(TASK.case("shorter-than-tile"), 0, device)
    args[field] = bad(args)
    with pytest.raises(ValueError, match=message):
        extend_attention_fwd(**args)


def test_empty_batch_is_a_no_op(device):
    args = make_inputs(TASK.case("shorter-than-tile"), 0, device)
    for key in ("q_extend", "k_extend", "v_extend", "o_extend"):
        args[key] = args[key][:0]
    args["qo_indptr"] = torch.zeros_like(args["qo_indptr"])
    assert extend_attention_fwd(**args).shape[0] == 0


#: More query tokens than one 128-row block (every TEST_CASES entry has <= 17): the second block and the causal bound
#: between blocks run too (a causal off-by-one at block edges passed the short cases).
LONG_EXTEND = Case("long-extend", full_params(dict(extend_lens=[150, 7], prefix_lens=[9, 0], num_q_heads=4,
                                                  num_kv_heads=2, head_dim=16, dtype="float16")), 31, "edge")


@pytest.mark.parametrize("impl", IMPL_PARAMS)
def test_more_query_rows_than_one_block_match_reference(impl, device):
    check_impl(IMPLS[impl], LONG_EXTEND, device)
