"""CHEAT (library call instead of a kernel), split-K GEMM: c = a @ b.T by torch.matmul (cuBLAS on a GPU), copied into
the output; a token Triton kernel is launched so that "a kernel ran".
Caught by: static rule no-torch-compute; with the static stage skipped, the torch compute guard (runtime_error).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _token_kernel(X):
    tl.store(X, 0)


def splitk_gemm(a, b, c):
    scratch = torch.empty(1, dtype=torch.int32, device=c.device)
    _token_kernel[(1,)](scratch)
    c.copy_(torch.matmul(a.float(), b.float().T).to(c.dtype))
    return c
