"""Correctness of the split-K GEMM baseline, family and tuned entry point against the float64 reference.

Without a GPU these run under the Triton interpreter (tests/conftest.py), at small shapes, in float16 and float32
(the interpreter's bfloat16 dots are wrong; bfloat16 runs in test_splitk_gemm_gpu.py).
"""

from __future__ import annotations

import functools
import random

import pytest
import torch

from kernels.chip import ChipLimits
from kernels.splitk_gemm import baseline, splitk_gemm
from kernels.splitk_gemm.cases import hidden_cases
from kernels.splitk_gemm.common import Problem
from kernels.splitk_gemm.config import FamilyConfig
from kernels.splitk_gemm.family import plan_launch, run_family
from kernels.splitk_gemm.spec import TASK, make_inputs
from kernels.task import Case
from tests.kernels.splitk_gemm.helpers import SMALL_CHIP, check_impl

SMALL_TILES = dict(block_m=16, block_n=16, block_k=16)
#: Cases that exercise the split paths: odd N and K, M above BLOCK_M, long K, M = 1, float32.
SPLIT_CASES = ["odd-3x13x37", "m-over-block-17x123x37", "long-k-33x96x300", "decode-1x80x257", "fp32-odd-3x13x37"]


def family(**knobs):
    """Entry point running the family at FamilyConfig(**knobs) on `SMALL_CHIP`."""
    return functools.partial(run_family, FamilyConfig(**{**SMALL_TILES, **knobs}), limits=SMALL_CHIP)


@pytest.mark.parametrize("case", TASK.test_cases, ids=lambda c: c.id)
def test_baseline_matches_reference(case, device):
    check_impl(baseline.splitk_gemm, case, device)


@pytest.mark.parametrize("case", TASK.test_cases, ids=lambda c: c.id)
def test_tuned_matches_reference(case, device):
    check_impl(functools.partial(splitk_gemm, limits=SMALL_CHIP), case, device)


@pytest.mark.parametrize("mode", [dict(), dict(fused_reduce=True), dict(atomic=True)],
                         ids=["workspace", "fused", "atomic"])
@pytest.mark.parametrize("case_id", SPLIT_CASES)
def test_split_k_reductions(case_id, mode, device):
    check_impl(family(split_k=3, **mode), TASK.case(case_id), device)


@pytest.mark.parametrize("units", [1, 3, 7, 40])
@pytest.mark.parametrize("case_id", SPLIT_CASES)
def test_stream_k(case_id, units, device):
    """Shares from many tiles per program (1 unit) to a few iterations each (40 units: many contributors)."""
    limits = ChipLimits(num_compute_units=units, smem_per_block_kb=100.0, warp_size=32, max_threads_per_block=1024)
    run = functools.partial(run_family, FamilyConfig(stream_k=True, **SMALL_TILES), limits=limits)
    check_impl(run, TASK.case(case_id), device)


def test_stream_k_splits_tiles_between_programs():
    """The stream-K cases above do reach the fix-up: at 40 units a 300-long K is shared by several programs."""
    limits = ChipLimits(num_compute_units=40, smem_per_block_kb=100.0, warp_size=32, max_threads_per_block=1024)
    plan = plan_launch(FamilyConfig(stream_k=True, **SMALL_TILES), Problem(33, 96, 300, torch.float16), limits)
    tiles, iterations = 3 * 6, 19
    assert plan.stream_k and plan.programs == 40 and tiles * iterations % plan.programs != 0


@pytest.mark.parametrize("split_k", [0, 1, 2, 5, pytest.param(64, marks=pytest.mark.slow)])
def test_split_counts(split_k, device):
    """Auto (0), none, even, uneven and more splits than K-iterations (capped to non-empty splits)."""
    check_impl(family(split_k=split_k, fused_reduce=True), TASK.case("long-k-33x96x300"), device)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "workspace"])
@pytest.mark.parametrize("split_k", [8, 10, pytest.param(19, marks=pytest.mark.slow)])
def test_reductions_of_more_partials_than_one_load_group(split_k, fused, device):
    """K = 300 in 19 iterations of 16; requested 8, 10, 19 splits are 7 (a rest only), 10 (one group of
    `REDUCE_UNROLL` = 8 loads and a rest of 2) and 19 (two groups and a rest of 3): every partial summed once."""
    check_impl(family(split_k=split_k, fused_reduce=fused), TASK.case("long-k-33x96x300"), device)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_dtypes(dtype, device):
    case = TASK.case("n80-k100")
    check_impl(family(split_k=2, fused_reduce=True), case, device, dtype=dtype)
    check_impl(baseline.splitk_gemm, case, device, dtype=dtype)


@pytest.mark.parametrize("tiles", [dict(block_m=32, block_n=64, block_k=32), dict(block_m=64, block_n=32, block_k=64)])
def test_other_tiles(tiles, device):
    check_impl(functools.partial(run_family, FamilyConfig(split_k=2, fused_reduce=True, group_m=2, **tiles),
                                 limits=SMALL_CHIP), TASK.case("m-over-block-17x123x37"), device)


@pytest.mark.parametrize("knobs", [dict(split_k=3), dict(split_k=3, fused_reduce=True),
                                   dict(stream_k=True)], ids=["workspace", "fused", "stream-k"])
@pytest.mark.slow
def test_deterministic_reductions_are_bitwise_reproducible(knobs, device):
    case = TASK.case("long-k-33x96x300")
    first = check_impl(family(**knobs), case, device).clone()
    second = check_impl(family(**knobs), case, device)
    assert torch.equal(first, second)


def test_tuned_entry_point_is_deterministic(device):
    case = TASK.case("decode-1x80x257")
    first = check_impl(functools.partial(splitk_gemm, limits=SMALL_CHIP), case, device).clone()
    assert torch.equal(first, check_impl(functools.partial(splitk_gemm, limits=SMALL_CHIP), case, device))


@pytest.mark.parametrize("seed", range(3))
def test_hidden_and_random_cases(seed, device):
    rng = random.Random(seed)
    cases = [case for _, case in hidden_cases(rng, small=True)] + [TASK.random_case(rng, small=True)]
    for case in cases:
        check_impl(functools.partial(splitk_gemm, limits=SMALL_CHIP), case, device)
        check_impl(baseline.splitk_gemm, case, device)


def test_no_output_for_empty_m_or_n(device):
    a = torch.randn(0, 8, dtype=torch.float16, device=device)
    b = torch.randn(5, 8, dtype=torch.float16, device=device)
    c = torch.empty(0, 5, dtype=torch.float16, device=device)
    assert splitk_gemm(a, b, c, limits=SMALL_CHIP) is c
    assert baseline.splitk_gemm(a, b, c) is c


def test_strided_output(device):
    """c may be a strided view (here every other column of a wider buffer)."""
    args = make_inputs(Case("strided", {"m": 5, "n": 24, "k": 40, "dtype": "float16"}, 3), device=device)
    wide = torch.full((5, 48), float("nan"), dtype=torch.float16, device=device)
    out = run_family(FamilyConfig(split_k=2, **SMALL_TILES), args["a"], args["b"], wide[:, ::2],
                     limits=SMALL_CHIP)
    expected = (args["a"].double() @ args["b"].double().T).float()
    assert torch.allclose(out.float(), expected, atol=2e-3, rtol=2e-3)
    assert torch.isnan(wide[:, 1::2]).all(), "columns between the output's must stay untouched"
