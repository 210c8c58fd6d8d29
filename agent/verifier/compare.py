"""Whole-tensor comparison of a candidate's output with the float32 reference, and readable reasons.

An element passes when it is finite and ``|got - expected| <= atol + rtol * |expected|`` (the task's per-dtype
`Tolerance`), and, where the tolerance sets ``ulps``, within that many ulps of `got`'s dtype at ``|expected|`` plus
``ulp_atol`` (`ulp`); NaN or inf anywhere fails. Reasons name the first mismatching index with got vs expected.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kernels.task import Tolerance


@dataclass(frozen=True)
class Comparison:
    """Errors of one output against its reference (all finite numbers; counts are element counts)."""

    elements: int
    mismatches: int
    nonfinite: int
    max_abs_error: float
    max_rel_error: float
    first_index: tuple[int, ...] | None
    first_got: float
    first_expected: float
    shape_problem: str = ""

    @property
    def ok(self) -> bool:
        return not self.shape_problem and self.mismatches == 0

    @property
    def mismatch_fraction(self) -> float:
        return self.mismatches / self.elements if self.elements else (1.0 if self.shape_problem else 0.0)


def compare(got: torch.Tensor, expected: torch.Tensor, tol: Tolerance) -> Comparison:
    """Compare `got` (any float dtype) with `expected` (float32) elementwise on `expected`'s device."""
    if tuple(got.shape) != tuple(expected.shape):
        return Comparison(expected.numel(), expected.numel(), 0, 0.0, 0.0, None, 0.0, 0.0,
                          f"shape {list(got.shape)} but expected {list(expected.shape)}")
    g = got.to(device=expected.device, dtype=torch.float32)
    finite = torch.isfinite(g)
    diff = torch.where(finite, (g - expected).abs(), torch.zeros_like(g))
    bound = tol.atol + tol.rtol * expected.abs()
    if tol.ulps is not None and got.dtype != torch.float32 and got.is_floating_point():
        bound = torch.minimum(bound, tol.ulps * ulp(expected, got.dtype) + tol.ulp_atol)
    bad = ~finite | (diff > bound)
    mismatches = int(bad.sum().item())
    rel = diff / expected.abs().clamp_min(tol.atol)
    first: tuple[int, ...] | None = None
    got_v = exp_v = 0.0
    if mismatches:
        flat = int(bad.reshape(-1).nonzero()[0].item())
        first = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), bad.shape))
        got_v, exp_v = float(g[first].item()), float(expected[first].item())
    return Comparison(
        elements=expected.numel(), mismatches=mismatches, nonfinite=int((~finite).sum().item()),
        max_abs_error=float(diff.max().item()) if diff.numel() else 0.0,
        max_rel_error=float(rel.max().item()) if rel.numel() else 0.0,
        first_index=first, first_got=got_v, first_expected=exp_v,
    )


def ulp(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Spacing of floating `dtype` at ``|x|`` (float32, shaped like `x`): ``eps * 2**floor(log2 |x|)`` for
    normal values, the smallest subnormal ``tiny * eps`` below ``tiny`` (IEEE 754 binary formats; bfloat16 alike)."""
    info = torch.finfo(dtype)
    mag = x.float().abs().clamp_min(info.tiny)
    _, exponent = torch.frexp(mag)  # mag = m * 2**exponent, m in [0.5, 1)
    return torch.ldexp(torch.full_like(mag, info.eps), exponent - 1)


def describe(c: Comparison, output: str, tol: Tolerance) -> str:
    """One-line account of a failed comparison: how many, first index with got vs expected, worst error."""
    if c.shape_problem:
        return f"{output} has {c.shape_problem}"
    idx = ", ".join(str(i) for i in c.first_index or ())
    nonfinite = f", {c.nonfinite} NaN/inf" if c.nonfinite else ""
    bound = f"{tol.atol:g} + {tol.rtol:g}*|expected|"
    if tol.ulps is not None:
        bound = f"min({bound}, {tol.ulps:g} ulp(expected) + {tol.ulp_atol:g})"
    return (f"{c.mismatches}/{c.elements} elements ({100 * c.mismatch_fraction:.2f}%{nonfinite}) outside "
            f"|got-expected| <= {bound}; first at {output}[{idx}]: "
            f"got {c.first_got:.6g}, expected {c.first_expected:.6g}; max abs error {c.max_abs_error:.4g}"
            f"{' over the finite elements' if c.nonfinite else ''}")


def moved(before: torch.Tensor, after: torch.Tensor, tol: Tolerance) -> torch.Tensor:
    """Bool mask of elements that changed by more than the tolerance between two outputs."""
    b, a = before.float(), after.to(before.device).float()
    return (a - b).abs() > tol.atol + tol.rtol * b.abs()
