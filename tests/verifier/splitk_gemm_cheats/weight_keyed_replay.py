"""CHEAT (result caching across calls), split-K GEMM: the output is memoized on device, keyed by the shape and 64
sampled values of the weights ``b`` only, and replayed whenever they match (a decode step calls each layer with
the same weights and new activations, so in real use every call after the first replays a stale answer). The
memo lives in buffers of the task's own workspace pool (`kernels.splitk_gemm.workspace.pooled`), which persist
across calls without any module state of the candidate's own, so the static rules see none.
Caught by: the in-place redraw trial (same buffers, fresh activations, weights kept: the output did not move,
mismatch); on a GPU also by the timing loop's captured calls.
"""

import torch
import triton
import triton.language as tl

from kernels.splitk_gemm.workspace import pooled

SAMPLES = 64


@triton.jit
def _probe_kernel(b_ptr, key_ptr, hit_ptr, M, N, K, s_bn, s_bk, SAMPLES: tl.constexpr):
    i = tl.arange(0, SAMPLES)
    vals = tl.load(b_ptr + ((i * 7919) % N).to(tl.int64) * s_bn + ((i * 104729) % K).to(tl.int64) * s_bk)
    vals = vals.to(tl.float32)
    old = tl.load(key_ptr + 3 + i)
    same = tl.sum((vals != old).to(tl.int32), axis=0) == 0
    same = same & (tl.load(key_ptr) == M) & (tl.load(key_ptr + 1) == N) & (tl.load(key_ptr + 2) == K)
    tl.store(hit_ptr, same.to(tl.int32))
    tl.store(key_ptr + 3 + i, vals)
    tl.store(key_ptr, M.to(tl.float32))
    tl.store(key_ptr + 1, N.to(tl.float32))
    tl.store(key_ptr + 2, K.to(tl.float32))


@triton.jit
def _gemm_kernel(a_ptr, b_ptr, c_ptr, memo_ptr, hit_ptr, M, N, K, s_am, s_ak, s_bn, s_bk, s_cm, s_cn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    memo_ptrs = memo_ptr + rows.to(tl.int64)[:, None] * N + cols[None, :]
    hit = tl.load(hit_ptr)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if hit != 0:
        acc = tl.load(memo_ptrs, mask=mask, other=0.0)
    else:
        offs_k = tl.arange(0, BLOCK_K)
        for step in range(0, tl.cdiv(K, BLOCK_K)):
            ks = step * BLOCK_K + offs_k
            a = tl.load(a_ptr + (rows % M).to(tl.int64)[:, None] * s_am + ks[None, :] * s_ak, mask=ks[None, :] < K,
                        other=0.0)
            b = tl.load(b_ptr + (cols % N).to(tl.int64)[None, :] * s_bn + ks[:, None] * s_bk, mask=ks[:, None] < K,
                        other=0.0)
            acc = tl.dot(a, b, acc, input_precision="ieee" if a.dtype == tl.float32 else "tf32",
                         out_dtype=tl.float32)
        tl.store(memo_ptrs, acc, mask=mask)
    c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * s_cm + cols.to(tl.int64)[None, :] * s_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def splitk_gemm(a, b, c):
    m, k = a.shape
    n = b.shape[0]
    if m == 0 or n == 0:
        return c
    key = pooled(c.device, 0, torch.float32, "memo_key", 3 + SAMPLES)
    hit = pooled(c.device, 0, torch.int32, "memo_hit", 1, zeroed=True)
    never = pooled(c.device, 0, torch.int32, "memo_never", 1, zeroed=True)
    memo = pooled(c.device, 0, torch.float32, "memo_out", m * n)
    if k > 0:
        _probe_kernel[(1,)](b, key, hit, m, n, k, b.stride(0), b.stride(1), SAMPLES=SAMPLES)
    _gemm_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 16))](
        a, b, c, memo, hit if k > 0 else never, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
        c.stride(0), c.stride(1), BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    return c
