"""Split-K GEMM for skinny matrix products (LLM decode and small batches): ``C[M, N] = A[M, K] @ B[N, K]^T``.

``from kernels.splitk_gemm import splitk_gemm`` is the optimized kernel: it picks its configuration from the chip
limits (its `limits` argument or the process's, `kernels.chip.set_chip_limits`; a `kernels.chip.ChipLimits` built
from the chip profile) and the call's sizes. The
baseline with the same signature is ``kernels.splitk_gemm.baseline.splitk_gemm``; the task spec is
``kernels.splitk_gemm.spec.TASK``.
"""

from kernels.splitk_gemm.tuned import splitk_gemm

__all__ = ["splitk_gemm"]
