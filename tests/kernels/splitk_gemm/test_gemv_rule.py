"""The GEMV mode's tile rule (kernels/splitk_gemm/gemv_rule.py): Little's law bytes in flight, registers per
thread and 16-byte vector loads, checked against hand arithmetic and against the H200 few-row sweep's ranking."""

from __future__ import annotations

import math

import pytest
import torch

from kernels.chip import ChipLimits
from kernels.splitk_gemm.cases import BENCH_GRID
from kernels.splitk_gemm.common import Problem
from kernels.splitk_gemm.config import smem_footprint_kb
from kernels.splitk_gemm.gemv_rule import choose_gemv_config, gemv_choices, in_flight_need

H200 = ChipLimits(num_compute_units=132, smem_per_block_kb=227.0, warp_size=32, max_threads_per_block=1024)
SMALL = ChipLimits(num_compute_units=36, smem_per_block_kb=48.0, warp_size=32, max_threads_per_block=1024)


def test_in_flight_need_is_littles_law():
    assert in_flight_need(4.8e12, 132) == pytest.approx(4.8e12 * 2.5e-6 / 132)  # 90.9 KB
    assert in_flight_need(1.0e12, 36, latency_s=1e-6) == pytest.approx(1e12 * 1e-6 / 36)


@pytest.mark.parametrize("n,k", [(n, k) for n, k, _ in BENCH_GRID])
def test_sweep_ranking_follows_at_one_row(n, k):
    """H200 few-row sweep at M = 1 (BENCHMARKS.md, split-K GEMM): 128x64 at 8 warps was faster than 64x128 at 4
    warps on all 6 layers (up to 1.65x) and than 32x256 at 4 warps in geometric mean. The rule ranks 128x64 w8
    above both: it keeps 32 accumulator elements per thread (4 loads of 16 bytes), the 4-warp tiles 64."""
    ranked = [(c.config.block_n, c.config.block_k, c.config.num_warps) for c in
              gemv_choices(Problem(1, n, k, torch.bfloat16), H200, 4.8e12)]
    best = ranked.index((128, 64, 8))
    assert best < ranked.index((64, 128, 4)) and best < ranked.index((32, 256, 4))
    first = gemv_choices(Problem(1, n, k, torch.bfloat16), H200, 4.8e12)[0]
    assert first.acc_per_thread <= 32 and first.vector_ok and first.config.num_warps == 8


def test_stages_meet_the_need_within_shared_memory():
    """128x64 bf16 tile, 16384 bytes: at 4.8 TB/s / 132 units 1 + ceil(90909 / 16384) = 7 -> capped at 6; on a
    48 KiB chip at 1 TB/s / 36 units (69.4 KB) the need is 1 + ceil(69444 / 16384) = 6 stages, but 48 KiB holds
    48 // 16.125 = 2 of the one-row program's stages."""
    h200 = choose_gemv_config(Problem(1, 4096, 14336, torch.bfloat16), H200, 4.8e12)
    assert (h200.block_n, h200.block_k, h200.num_warps, h200.num_stages) == (128, 64, 8, 6)
    for choice in gemv_choices(Problem(1, 4096, 14336, torch.bfloat16), SMALL, 1.0e12):
        assert smem_footprint_kb(choice.config, torch.bfloat16) <= SMALL.smem_per_block_kb
        tile = choice.config.block_n * choice.config.block_k * 2
        per_stage = smem_footprint_kb(choice.config, torch.bfloat16) / choice.config.num_stages
        assert choice.config.num_stages == max(2, min(1 + math.ceil(1e12 * 2.5e-6 / 36 / tile),
                                                      int(48.0 // per_stage), 6))


def test_rows_share_the_register_budget():
    """rows x BLOCK_N x BLOCK_K / threads <= 32: at 4 rows and 8 warps the tile is 32 x 64 = 2048 elements."""
    c = choose_gemv_config(Problem(4, 4096, 14336, torch.bfloat16), H200, 4.8e12)
    assert c.block_m == 4 and 4 * c.block_n * c.block_k / (32 * c.num_warps) <= 32


def test_float32_loads_are_whole_vectors():
    """float32: a 16-byte load is 4 elements; every ranked-first choice keeps whole vectors per thread."""
    first = gemv_choices(Problem(1, 4096, 4096, torch.float32), H200, 4.8e12)[0]
    assert first.vector_ok and first.acc_per_thread % 4 == 0
