"""The family's GEMV mode (``FamilyConfig.gemv``: tiles computed on the vector units, no ``tl.dot``) against the
float64 reference, at M = 1..4 and just above, with odd N and K tails, in every reduction mode and stream-K.

Without a GPU these run under the Triton interpreter at small shapes in float16 and float32 (bfloat16 on the GPU:
test_splitk_gemm_gpu.py).
"""

from __future__ import annotations

import functools

import pytest
import torch

from kernels.chip import ChipLimits
from kernels.splitk_gemm.cases import full_params
from kernels.splitk_gemm.common import GEMV_WIDE_ACC_ELEMS, Problem
from kernels.splitk_gemm.config import GEMV_MAX_ROWS, FamilyConfig, gemv_rows
from kernels.splitk_gemm.dispatch import dispatch_class
from kernels.splitk_gemm.family import plan_launch, run_family
from kernels.splitk_gemm.space import KNOBS
from kernels.task import Case
from tests.kernels.splitk_gemm.helpers import SMALL_CHIP, check_impl


def _case(case_id: str, **params) -> Case:
    return Case(case_id, full_params(params), 31, "edge")


#: M = 1, 2, 3, 4 with odd (prime) N and K, so neither tail is a whole tile; a transposed A and [K, N] weights;
#: M = 6 (two GEMV row blocks, the second partial).
GEMV_CASES = (
    _case("gemv-1x37x101", m=1, n=37, k=101),
    _case("gemv-2x29x67", m=2, n=29, k=67),
    _case("gemv-3x13x37", m=3, n=13, k=37),
    _case("gemv-4x41x131-b-kn", m=4, n=41, k=131, b_kn=True),
    _case("gemv-3x23x53-a-t", m=3, n=23, k=53, a_transposed=True),
    _case("gemv-6x19x45", m=6, n=19, k=45),
)
MODES = {
    "no-split": dict(split_k=1),
    "workspace": dict(split_k=3),
    "fused": dict(split_k=3, fused_reduce=True),
    "atomic": dict(split_k=3, atomic=True),
    "auto-split": dict(split_k=0, fused_reduce=True),
    "stream-k": dict(stream_k=True),
}


def gemv(limits: ChipLimits = SMALL_CHIP, **knobs):
    """Entry point running the family in GEMV mode at small tiles (BLOCK_K 16: several K-iterations per split)."""
    config = FamilyConfig(**{**dict(block_m=16, block_n=16, block_k=16, num_stages=2, gemv=True), **knobs})
    return functools.partial(run_family, config, limits=limits)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("case", GEMV_CASES, ids=lambda c: c.id)
def test_gemv_matches_reference(case, mode, dtype, device):
    check_impl(gemv(**MODES[mode]), case, device, dtype=dtype)


@pytest.mark.parametrize("block_m", [1, 2, 4])
@pytest.mark.parametrize("block_k", [16, 64])
def test_gemv_row_blocks_and_wide_k(block_m, block_k, device):
    """Explicit rows per program below M (several row blocks) and a BLOCK_K wider than the K tail."""
    check_impl(gemv(block_m=block_m, block_k=block_k, block_n=32, split_k=2, fused_reduce=True),
               _case("gemv-4x37x101", m=4, n=37, k=101), device, dtype="float16")


@pytest.mark.parametrize("block_n,block_k", [(64, 128), (64, 256)])
def test_gemv_one_row_accumulators(block_n, block_k, device):
    """One row: the element-wise accumulator (64 x 128 = GEMV_WIDE_ACC_ELEMS) and, above it, the per-iteration
    sum over K (64 x 256)."""
    assert block_n * block_k // 8192 in (1, 2) and GEMV_WIDE_ACC_ELEMS == 8192
    check_impl(gemv(block_n=block_n, block_k=block_k, split_k=2, fused_reduce=True),
               _case("gemv-1x37x301", m=1, n=37, k=301), device, dtype="float16")


@pytest.mark.parametrize("block_m,block_n,block_k", [(2, 64, 64), (4, 32, 64), (4, 64, 64)])
def test_gemv_several_rows_accumulators(block_m, block_n, block_k, device):
    """Several rows sharing each weight tile: the element-wise [rows, BLOCK_N, BLOCK_K] accumulator (2 x 64 x 64,
    4 x 32 x 64: at most GEMV_WIDE_ACC_ELEMS) and, above it, the per-iteration sum over K (4 x 64 x 64)."""
    assert GEMV_WIDE_ACC_ELEMS == 8192
    check_impl(gemv(block_m=block_m, block_n=block_n, block_k=block_k, split_k=2, fused_reduce=True),
               _case("gemv-4x37x301", m=4, n=37, k=301), device, dtype="float16")
    check_impl(gemv(block_m=block_m, block_n=block_n, block_k=block_k, split_k=0, fused_reduce=True),
               _case("gemv-3x70x150", m=3, n=70, k=150), device, dtype="float32")


def test_gemv_one_element_and_empty_k(device):
    check_impl(gemv(), _case("gemv-1x1x1", m=1, n=1, k=1), device, dtype="float16")
    check_impl(gemv(split_k=0), _case("gemv-2x9x0", m=2, n=9, k=0), device, dtype="float16")


def test_gemv_is_deterministic(device):
    case = _case("gemv-1x37x101", m=1, n=37, k=101)
    first = check_impl(gemv(split_k=3, fused_reduce=True), case, device, dtype="float16").clone()
    again = check_impl(gemv(split_k=3, fused_reduce=True), case, device, dtype="float16")
    assert torch.equal(first, again)


@pytest.mark.parametrize("m,rows", [(1, 1), (2, 2), (3, 4), (4, 4), (5, 4), (16, 4), (100, 4)])
def test_gemv_rows_per_program(m, rows):
    """The plan's BLOCK_M in GEMV mode: the next power of two >= M, at most GEMV_MAX_ROWS and the config's BLOCK_M;
    the split rule then sizes the grid of those tiles."""
    assert gemv_rows(64, m) == rows == min(GEMV_MAX_ROWS, rows)
    plan = plan_launch(FamilyConfig(block_m=64, block_n=64, block_k=64, gemv=True, split_k=0),
                       Problem(m, 4096, 4096, torch.bfloat16), SMALL_CHIP)
    assert plan.config.block_m == rows and plan.config.gemv
    tiles = -(-m // rows) * (4096 // 64)
    assert plan.programs == tiles * plan.splits
    assert gemv_rows(2, 4) == 2


def test_gemv_fills_the_units_of_the_profile():
    """An M = 1 call with few column tiles is split by the family's one split rule (`schedule.auto_split_k`) into
    one wave of at least 90 % of the chip's compute units."""
    for units, n in ((8, 512), (132, 4096)):
        limits = ChipLimits(num_compute_units=units, smem_per_block_kb=227.0, warp_size=32,
                            max_threads_per_block=1024)
        plan = plan_launch(FamilyConfig(block_m=16, block_n=128, block_k=128, gemv=True, split_k=0),
                           Problem(1, n, 14336, torch.bfloat16), limits)
        assert plan.splits > 1 and 0.9 * units <= plan.programs <= units and plan.programs == n // 128 * plan.splits


def test_block_m_below_16_only_in_gemv_mode():
    with pytest.raises(ValueError, match="block_m=4 must be a power of two in \\[16, 256\\]"):
        FamilyConfig(block_m=4)
    with pytest.raises(ValueError, match="block_m=3"):
        FamilyConfig(block_m=3, gemv=True)
    with pytest.raises(ValueError, match="gemv"):
        FamilyConfig(gemv=1)
    assert FamilyConfig(block_m=1, gemv=True).block_m == 1


def test_gemv_is_a_searched_knob_and_a_dispatch_class():
    assert KNOBS["gemv"] == (False, True)
    assert FamilyConfig.from_dict({**FamilyConfig().to_dict(), "gemv": True}).gemv
    assert [dispatch_class(m, 4096, 4096) for m in (1, 2, 4, 16, 17)] == ["m1-deep", "m16-deep", "m16-deep",
                                                                          "m16-deep", "m64-deep"]
