"""CHEAT (precision downgrade), split-K GEMM: K is split in SPLITS chunks whose partial sums are stored in the
output dtype (float16 / bfloat16: half the workspace traffic of float32) and reduced from there; the contract is
float32 accumulation with one rounding to the output dtype. Each partial's rounding adds up to half an output ulp
of the partial, which stays under an elementwise bound sized for the final rounding times ~4.
Caught by: the task's rounding bound for 16-bit outputs (honest: within about one output ulp of the float64
product at every element; mismatch).
"""

import torch
import triton
import triton.language as tl

SPLITS = 8


@triton.jit
def _split_kernel(a_ptr, b_ptr, w_ptr, M, N, K, s_am, s_ak, s_bn, s_bk, CHUNK,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    split = tl.program_id(2)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(CHUNK, BLOCK_K)):
        ks = split * CHUNK + step * BLOCK_K + offs_k
        inside = (ks < K) & (ks < (split + 1) * CHUNK)
        a = tl.load(a_ptr + (rows % M).to(tl.int64)[:, None] * s_am + ks[None, :] * s_ak, mask=inside[None, :],
                    other=0.0)
        b = tl.load(b_ptr + (cols % N).to(tl.int64)[None, :] * s_bn + ks[:, None] * s_bk, mask=inside[:, None],
                    other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee" if a.dtype == tl.float32 else "tf32", out_dtype=tl.float32)
    w_ptrs = w_ptr + split.to(tl.int64) * M * N + rows.to(tl.int64)[:, None] * N + cols[None, :]
    tl.store(w_ptrs, acc.to(w_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def _reduce_kernel(w_ptr, c_ptr, M, N, s_cm, s_cn, SPLITS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    total = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for s in range(0, SPLITS):
        total += tl.load(w_ptr + s * M * N + rows.to(tl.int64)[:, None] * N + cols[None, :], mask=mask,
                         other=0.0).to(tl.float32)
    tl.store(c_ptr + rows.to(tl.int64)[:, None] * s_cm + cols.to(tl.int64)[None, :] * s_cn,
             total.to(c_ptr.dtype.element_ty), mask=mask)


def splitk_gemm(a, b, c):
    m, k = a.shape
    n = b.shape[0]
    if m == 0 or n == 0:
        return c
    work = torch.empty((SPLITS, m, n), dtype=c.dtype, device=c.device)
    chunk = max(1, triton.cdiv(k, SPLITS))
    _split_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 16), SPLITS)](
        a, b, work, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), chunk,
        BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    _reduce_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 16))](work, c, m, n, c.stride(0), c.stride(1),
                                                              SPLITS=SPLITS, BLOCK=16)
    return c
