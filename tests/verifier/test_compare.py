"""Whole-tensor comparison: counts, first mismatching index, NaN handling, shape problems, movement masks."""

from __future__ import annotations

import torch

from agent.verifier.compare import compare, describe, moved, ulp
from kernels.task import Tolerance

TOL = Tolerance(atol=1e-2, rtol=1e-2)


def test_identical_outputs_pass():
    ref = torch.randn(4, 3, 8)
    c = compare(ref.half(), ref, TOL)
    assert c.ok and c.mismatches == 0 and c.first_index is None and c.max_abs_error < 5e-3


def test_first_mismatch_index_and_values_are_reported():
    ref = torch.zeros(4, 3, 8)
    got = ref.clone()
    got[2, 1, 5] = 0.5
    got[3, 0, 0] = -0.25
    c = compare(got, ref, TOL)
    assert not c.ok and c.mismatches == 2 and c.first_index == (2, 1, 5)
    assert c.first_got == 0.5 and c.first_expected == 0.0 and c.max_abs_error == 0.5
    text = describe(c, "o_extend", TOL)
    assert "2/96 elements" in text and "o_extend[2, 1, 5]" in text and "got 0.5, expected 0" in text


def test_nan_anywhere_fails_even_where_the_reference_is_zero():
    ref = torch.zeros(2, 2)
    got = ref.clone()
    got[1, 1] = float("nan")
    c = compare(got, ref, TOL)
    assert not c.ok and c.nonfinite == 1 and c.first_index == (1, 1) and c.max_abs_error == 0.0
    assert "NaN/inf" in describe(c, "o", TOL) and "finite elements" in describe(c, "o", TOL)


def test_tolerance_is_relative_plus_absolute():
    ref = torch.tensor([100.0, 0.0])
    assert compare(torch.tensor([100.9, 0.009]), ref, TOL).ok
    assert not compare(torch.tensor([101.2, 0.0]), ref, TOL).ok


def test_shape_problem_fails_with_a_reason():
    c = compare(torch.zeros(3), torch.zeros(4), TOL)
    assert not c.ok and c.mismatch_fraction == 1.0 and "shape [3]" in describe(c, "o", TOL)


def test_moved_marks_changes_beyond_tolerance():
    a = torch.zeros(5)
    b = torch.tensor([0.0, 0.5, 0.005, -1.0, 0.0])
    assert moved(a, b, TOL).tolist() == [False, True, False, True, False]


def test_ulp_is_the_spacing_of_the_dtype():
    x = torch.tensor([1.0, 1.999, 0.75, -3.0, 2.0 ** -20, 0.0])
    assert ulp(x, torch.float16).tolist() == [2.0 ** -10, 2.0 ** -10, 2.0 ** -11, 2.0 ** -9, 2.0 ** -24, 2.0 ** -24]
    assert ulp(x[:4], torch.bfloat16).tolist() == [2.0 ** -7, 2.0 ** -7, 2.0 ** -8, 2.0 ** -6]


def test_rounding_bound_passes_one_rounding_and_refuses_two_ulps():
    """With ``ulps`` set, the correctly rounded float16 value passes and a value 2 ulps off fails, though both are
    far inside atol + rtol * |ref|."""
    tol = Tolerance(atol=2e-3, rtol=2e-3, ulps=1.0, ulp_atol=1e-5)
    ref = torch.linspace(0.5, 0.99, 64)  # one binade: ulp 2**-11 = 4.9e-4 in float16
    rounded = ref.half()
    assert compare(rounded, ref, tol).ok
    off = (rounded.float() + 2 * 2.0 ** -11).half()
    result = compare(off, ref, tol)
    assert result.mismatches == 64 and compare(off, ref, Tolerance(atol=2e-3, rtol=2e-3)).ok
    assert "1 ulp(expected)" in describe(result, "c", tol)
    assert compare(ref + 5e-5, ref, tol).ok  # float32 outputs: no rounding bound
