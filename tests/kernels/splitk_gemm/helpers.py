"""Running a split-K GEMM implementation on a case and checking it against the float64 reference."""

from __future__ import annotations

from collections.abc import Callable

import torch

from kernels.chip import ChipLimits
from kernels.splitk_gemm.spec import TASK, make_inputs, reference

#: Limits of a small chip for interpreter runs (few units, so skinny test shapes split).
SMALL_CHIP = ChipLimits(num_compute_units=8, smem_per_block_kb=100.0, warp_size=32, max_threads_per_block=1024)


def check_impl(fn: Callable, case, device: str, dtype: str | None = None, seed: int | None = None) -> torch.Tensor:
    """Run ``fn(a=, b=, c=)`` on fresh NaN-filled inputs of `case`; assert it returns c, finite, within the dtype
    tolerance of the reference. Returns the output."""
    dtype = dtype or case.params["dtype"]
    args = make_inputs(case, seed, device, dtype)
    expected = reference(args)["c"]
    result = fn(**args)
    assert result is args["c"], "entry point must return c"
    got = args["c"].float()
    assert torch.isfinite(got).all(), f"{case.id}: non-finite output (unwritten elements)"
    tol = TASK.tolerances[dtype]
    err = (got - expected).abs()
    bad = (err > tol.atol + tol.rtol * expected.abs()).nonzero()
    assert bad.numel() == 0, (f"{case.id} {dtype}: {bad.shape[0]} of {got.numel()} elements out of tolerance, "
                              f"first at {tuple(bad[0].tolist())}: got {got[tuple(bad[0])]:.5f} expected "
                              f"{expected[tuple(bad[0])]:.5f}")
    return args["c"]
