"""Split-K GEMM for skinny matrix products (LLM decode and small batches): ``C[M, N] = A[M, K] @ B[N, K]^T``.

``from kernels.splitk_gemm import splitk_gemm`` is the optimized kernel: it picks its configuration from the chip
limits (`set_chip_limits` or its `limits` argument, built from the chip profile) and the call's sizes. The
baseline with the same signature is ``kernels.splitk_gemm.baseline.splitk_gemm``; the task spec is
``kernels.splitk_gemm.spec.TASK``.
"""

from kernels.splitk_gemm.tuned import set_chip_limits, splitk_gemm

__all__ = ["set_chip_limits", "splitk_gemm"]
