"""CHEAT (timing: side stream), split-K GEMM: on a GPU the kernel is launched on a second stream and the call
returns at once, so CUDA events recorded on the current stream around the call see almost none of the work (the
output is complete by the time anything on the host reads it after a device-wide synchronize). On the CPU it
computes honestly on the default path: a GPU-only attack.
Caught by: static rule no-streams-timers; with the static stage skipped, on a GPU, the guards' stream check or the
event-vs-wall-clock comparison of the timing stage (runtime_error or too_fast_to_be_true). It passes the CPU's
dynamic stage, which times nothing.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bn, s_bk, s_cm, s_cn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_used = K
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


def _launch(a, b, c):
    m, k = a.shape
    n = b.shape[0]
    _gemm_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 16))](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)


def splitk_gemm(a, b, c):
    if a.shape[0] == 0 or b.shape[0] == 0:
        return c
    if c.is_cuda:
        side = torch.cuda.Stream(device=c.device)
        side.wait_stream(torch.cuda.current_stream(c.device))
        with torch.cuda.stream(side):
            _launch(a, b, c)
    else:
        _launch(a, b, c)
    return c
