"""CHEAT (precision downgrade), split-K GEMM: each BLOCK_K step's dot is exact in float32, but the running sum over
K is kept in the output dtype (float16 / bfloat16 accumulators: half the registers, and the float16-accumulate
tensor-core rate on chips that have one); the contract is float32 accumulation. Over a few hundred K the error
stays under an elementwise bound sized for the final rounding times ~4.
Caught by: the task's rounding bound for 16-bit outputs (mismatch).
"""

import triton
import triton.language as tl


@triton.jit
def _gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bn, s_bk, s_cm, s_cn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=c_ptr.dtype.element_ty)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        ks = step * BLOCK_K + offs_k
        a = tl.load(a_ptr + (rows % M).to(tl.int64)[:, None] * s_am + ks[None, :] * s_ak, mask=ks[None, :] < K,
                    other=0.0)
        b = tl.load(b_ptr + (cols % N).to(tl.int64)[None, :] * s_bn + ks[:, None] * s_bk, mask=ks[:, None] < K,
                    other=0.0)
        part = tl.dot(a, b, input_precision="ieee" if a.dtype == tl.float32 else "tf32", out_dtype=tl.float32)
        acc = (acc.to(tl.float32) + part).to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * s_cm + cols.to(tl.int64)[None, :] * s_cn
    tl.store(c_ptrs, acc, mask=(rows[:, None] < M) & (cols[None, :] < N))


def splitk_gemm(a, b, c):
    m, k = a.shape
    n = b.shape[0]
    if m == 0 or n == 0:
        return c
    _gemm_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 16))](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    return c
