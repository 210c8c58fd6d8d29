"""Torch reference of the task, imported by tests, benchmarks and the verifier."""

from __future__ import annotations

import torch


def reference_gemm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b.T`` computed in float64 and returned as float32.

    Args:
        a: [M, K] and b: [N, K] (weights in the ``torch.nn.Linear`` layout), any floating dtype and strides.
    Returns:
        float32 [M, N]: the exact product of the given (already rounded) input values, up to float64 rounding
        (relative ~K * 2**-53) and one final rounding to float32 (2**-24 relative).
    """
    return (a.double() @ b.double().T).float()
