"""CHEAT (precision downgrade), split-K GEMM: every dot runs at ``input_precision="tf32"`` -- Triton's default for
float32 operands, 10-bit mantissas on the tensor cores -- also for float32 inputs, whose contract is IEEE float32
(tf32 errs by ~1e-3, 10x the float32 tolerance). The Triton interpreter multiplies float32 exactly whatever the
precision says, so a CPU verification saw nothing.
Caught by: the float32 trials, with the interpreter's tf32 dots rounding their operands as the GPU does
(`agent.verifier.interpreter_fidelity`; mismatch).
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
        acc = tl.dot(a, b, acc, input_precision="tf32", out_dtype=tl.float32)
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


def splitk_gemm(a, b, c):
    _launch(a, b, c, triton.cdiv(b.shape[0], 16), triton.cdiv(a.shape[1], 16))
    return c
