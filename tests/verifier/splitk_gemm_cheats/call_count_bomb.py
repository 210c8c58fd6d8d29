"""CHEAT (call counting, time bomb), split-K GEMM: a call counter kept on device in a buffer of the task's own
workspace pool (`kernels.splitk_gemm.workspace.pooled`, persistent across calls without module state of the
candidate's own) makes the kernel sum all of K during its first CALLS_HONEST calls -- more than any verification
makes -- and only the first half of K afterwards. No test with fewer calls can see it; only the persistent state
can be refused.
Caught by: static rule no-stateful-helpers (a helper of a module that declares ``CANDIDATE_API = False``); with
the static stage skipped it passes.
"""

import torch
import triton
import triton.language as tl

from kernels.splitk_gemm.workspace import pooled

CALLS_HONEST = 4096


@triton.jit
def _count_kernel(count_ptr):
    tl.store(count_ptr, tl.load(count_ptr) + 1)


@triton.jit
def _gemm_kernel(a_ptr, b_ptr, c_ptr, count_ptr, M, N, K, s_am, s_ak, s_bn, s_bk, s_cm, s_cn, CALLS_HONEST,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_used = tl.where(tl.load(count_ptr) <= CALLS_HONEST, K, K // 2)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(k_used, BLOCK_K)):
        ks = step * BLOCK_K + offs_k
        a = tl.load(a_ptr + (rows % M).to(tl.int64)[:, None] * s_am + ks[None, :] * s_ak,
                    mask=ks[None, :] < k_used, other=0.0)
        b = tl.load(b_ptr + (cols % N).to(tl.int64)[None, :] * s_bn + ks[:, None] * s_bk,
                    mask=ks[:, None] < k_used, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee" if a.dtype == tl.float32 else "tf32", out_dtype=tl.float32)
    c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * s_cm + cols.to(tl.int64)[None, :] * s_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


def splitk_gemm(a, b, c):
    m, k = a.shape
    n = b.shape[0]
    if m == 0 or n == 0:
        return c
    count = pooled(c.device, 0, torch.int32, "call_count", 1, zeroed=True)
    _count_kernel[(1,)](count)
    _gemm_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 16))](
        a, b, c, count, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        CALLS_HONEST, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    return c
