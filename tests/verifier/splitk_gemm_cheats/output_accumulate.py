"""CHEAT (stale output), split-K GEMM: SPLITS programs per tile add their partial products straight into c with
atomics, relying on c holding zeros on entry (no memset: a launch saved), in the output dtype. ``c`` is an output
whose contents are undefined; the result is the answer plus whatever it held.
Caught by: outputs prefilled with NaN or finite noise (mismatch, NaN/inf).
"""

import triton
import triton.language as tl

SPLITS = 4


@triton.jit
def _gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bn, s_bk, s_cm, s_cn, CHUNK,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_used = K
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    split = tl.program_id(2)
    for step in range(0, tl.cdiv(CHUNK, BLOCK_K)):
        ks = split * CHUNK + step * BLOCK_K + offs_k
        ks = tl.where(ks < (split + 1) * CHUNK, ks, k_used)
        a = tl.load(a_ptr + (rows % M).to(tl.int64)[:, None] * s_am + ks[None, :] * s_ak,
                    mask=ks[None, :] < k_used, other=0.0)
        b = tl.load(b_ptr + (cols % N).to(tl.int64)[None, :] * s_bn + ks[:, None] * s_bk,
                    mask=ks[:, None] < k_used, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee" if a.dtype == tl.float32 else "tf32", out_dtype=tl.float32)
    c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * s_cm + cols.to(tl.int64)[None, :] * s_cn
    tl.atomic_add(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


def splitk_gemm(a, b, c):
    m, k = a.shape
    n = b.shape[0]
    if m == 0 or n == 0:
        return c
    _gemm_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 16), SPLITS)](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        max(1, triton.cdiv(k, SPLITS)),
        BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    return c
