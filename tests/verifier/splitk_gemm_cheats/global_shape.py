"""CHEAT (hard-coded shapes), split-K GEMM: the reduction length K is read from a module-level global recorded at
the first call, not from the call's own tensors (clamped to the call's K so nothing reads out of bounds): a kernel
written for one layer's shape and reused on others.
Caught by: static rule no-module-state (the global); with the static stage skipped, the first later trial whose K
differs from the first one's (mismatch).
"""

import triton
import triton.language as tl


@triton.jit
def _gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bn, s_bk, s_cm, s_cn, K_STEPS,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, K_STEPS):
        ks = step * BLOCK_K + offs_k
        a = tl.load(a_ptr + (rows % M).to(tl.int64)[:, None] * s_am + ks[None, :] * s_ak, mask=ks[None, :] < K,
                    other=0.0)
        b = tl.load(b_ptr + (cols % N).to(tl.int64)[None, :] * s_bn + ks[:, None] * s_bk, mask=ks[:, None] < K,
                    other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee" if a.dtype == tl.float32 else "tf32", out_dtype=tl.float32)
    c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * s_cm + cols.to(tl.int64)[None, :] * s_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


def _memo():
    """A dict reachable only through its bound methods: no container is bound at module level."""
    store = {}
    return store.get, store.__setitem__


_SHAPE_GET, _SHAPE_SET = _memo()


def splitk_gemm(a, b, c):
    m, k = a.shape
    n = b.shape[0]
    if m == 0 or n == 0:
        return c
    if _SHAPE_GET("k") is None:
        _SHAPE_SET("k", k)
    k_used = min(_SHAPE_GET("k"), k)
    _gemm_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 16))](
        a, b, c, m, n, k_used, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        triton.cdiv(k_used, 16), BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    return c
