"""CHEAT (result caching across calls), split-K GEMM: a module-level dict keyed on the pointers and shapes of a and b
replays the output of an earlier call through a copy kernel.
Caught by: static rules no-module-state / no-identity-keys; with the static stage skipped, the in-place perturbation
trial (same pointers, fresh a and negated b: the output did not move, mismatch).
"""

import torch
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


def _launch(a, b, c, column_tiles, k_steps, block=16):
    m, k = a.shape
    n = b.shape[0]
    if m == 0 or n == 0:
        return
    _gemm_kernel[(triton.cdiv(m, block), column_tiles)](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), k_steps,
        BLOCK_M=block, BLOCK_N=block, BLOCK_K=block)


@triton.jit
def _copy_kernel(Src, Dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Dst + offs, tl.load(Src + offs, mask=m), mask=m)


def _memo():
    """A dict reachable only through its bound methods: no container is bound at module level."""
    store = {}
    return store.get, store.__setitem__


_CACHE_GET, _CACHE_SET = _memo()


def splitk_gemm(a, b, c):
    key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape))
    n = c.numel()
    if _CACHE_GET(key) is not None and c.is_contiguous():
        _copy_kernel[(triton.cdiv(n, 1024),)](_CACHE_GET(key), c, n, BLOCK=1024)
        return c
    _launch(a, b, c, triton.cdiv(b.shape[0], 16), triton.cdiv(a.shape[1], 16))
    if c.is_contiguous():
        saved = torch.empty_like(c)
        _copy_kernel[(triton.cdiv(n, 1024),)](c, saved, n, BLOCK=1024)
        _CACHE_SET(key, saved)
    return c
