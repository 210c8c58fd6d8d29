"""Baseline: a plain Triton GEMM without split-K, the kernel every speedup of the task is measured against.

Structure of Triton's matrix multiplication tutorial (triton-lang.org, "Matrix Multiplication"): a 1-D grid of
cdiv(M, BLOCK_M) x cdiv(N, BLOCK_N) programs, one per output tile, ordered GROUP_M row blocks at a time (L2
swizzle); each program walks all of K in BLOCK_K steps, accumulates in float32 and stores its tile once. Rows
past M / columns past N are read modulo M / N and masked at the store; K is masked. The tiles follow the call
only in BLOCK_M (the smallest power of two >= M, 16..64), so that skinny calls do not compute 64 rows for one:
BLOCK_N = BLOCK_K = 64, 4 warps, 3 stages ((64 + 64) * 64 * 2 B * 3 = 48 KiB of shared memory at most);
float32 caps at 32 x 32 x 32, 2 stages (`common.FLOAT32_TILE_CAP`). 48 KiB is the per-block shared memory every
CUDA GPU since compute capability 3.0 offers without opting in (CUDA C++ Programming Guide, "Technical
Specifications per Compute Capability"), so the baseline needs no chip limits.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.splitk_gemm.common import FLOAT32_TILE_CAP, Problem, check_inputs, dot, input_precision

GROUP_M = 8


@triton.jit
def _matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bn, stride_bk, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    PRECISION: tl.constexpr,
):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    size_m = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % size_m
    pid_n = (pid % per_group) // size_m

    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am.to(tl.int64)[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_bn.to(tl.int64)[None, :] * stride_bn + offs_k[:, None] * stride_bk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = dot(a, b, acc, PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm.to(tl.int64)[:, None] * stride_cm + offs_cn.to(tl.int64)[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def baseline_tiles(prob: Problem) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) of the baseline for a call of sizes `prob`."""
    block_m = min(64, max(16, triton.next_power_of_2(prob.m)))
    tiles = (block_m, 64, 64, 4, 3)
    if prob.dtype == torch.float32:
        tiles = tuple(min(t, cap) for t, cap in zip(tiles[:3], FLOAT32_TILE_CAP[:3])) + (4, FLOAT32_TILE_CAP[3])
    return tiles


def splitk_gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Baseline ``c = a @ b.T`` (one program per output tile, no split-K); writes `c` in place and returns it.

    Args:
        a: [M, K] activations; b: [N, K] weights (the ``torch.nn.Linear`` layout); c: [M, N] output.
            One dtype for all three: float16, bfloat16 or float32 (IEEE float32 dots); any strides.
    Accumulates in float32 and rounds once to c's dtype.

    Raises:
        ValueError: wrong rank, shape, dtype or device (`common.check_inputs`).
    """
    prob = check_inputs(a, b, c)
    if prob.m == 0 or prob.n == 0:
        return c
    block_m, block_n, block_k, warps, stages = baseline_tiles(prob)
    grid = (triton.cdiv(prob.m, block_m) * triton.cdiv(prob.n, block_n),)
    _matmul_kernel[grid](
        a, b, c, prob.m, prob.n, prob.k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
        c.stride(1), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=GROUP_M,
        PRECISION=input_precision(prob.dtype), num_warps=warps, num_stages=stages,
    )
    return c
