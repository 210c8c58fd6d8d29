"""The probe's conclusions on synthetic readings: staircases of known unit counts, ladders of known limits."""

from __future__ import annotations

import math
import random

import pytest

from hardware_profiles.probe.analysis import (
    Stat,
    fit_staircase,
    ladder_limit,
    largest_that_ran,
    sweep_points,
)


def staircase(units: int, points: list[int], step=50.0, offset=6.0, noise=0.0, second=1.0, seed=0):
    """Times of `points` programs on `units` units: each wave one `step`; `second` scales the step of waves past
    the first (co-resident programs that do not quite halve each other's speed); relative Gaussian `noise`."""
    rng = random.Random(seed)
    out = []
    for p in points:
        waves = math.ceil(p / units)
        t = offset + step * (1 + second * (waves - 1))
        out.append(t * (1 + rng.gauss(0, noise)))
    return out


@pytest.mark.parametrize("units", [132, 40, 36, 66, 7])
@pytest.mark.parametrize("noise", [0.0, 0.02])
def test_the_staircase_fit_finds_the_unit_count(units, noise):
    points = sweep_points(132)  # the device says 132 whatever the partition: the sweep reaches 2.5 x 132
    fit = fit_staircase(points, staircase(units, points, noise=noise, seed=units))
    assert fit.units == units and fit.step_us == pytest.approx(50.0, rel=0.05)


def test_uneven_steps_still_fall_at_multiples_of_the_units():
    points = sweep_points(132)
    assert fit_staircase(points, staircase(40, points, second=0.7, noise=0.01)).units == 40


def test_a_driver_that_rounds_up_is_measured_as_what_it_gave():
    """Asked for 36, given 40: the curve of 40 units is read as 40, not as the request or the device's 132."""
    points = sweep_points(132)
    assert fit_staircase(points, staircase(40, points, noise=0.02, seed=3)).units == 40


def test_a_flat_curve_has_no_staircase():
    points = list(range(1, 50))
    with pytest.raises(ValueError, match="no staircase"):
        fit_staircase(points, [10.0] * len(points))
    with pytest.raises(ValueError, match="at least 4"):
        fit_staircase([1, 2], [1.0, 2.0])


def test_stat_median_and_spread():
    s = Stat.of([10.0, 12.0, 11.0])
    assert (s.median, s.repeats) == (11.0, 3) and s.spread == pytest.approx(2 / 11)
    with pytest.raises(ValueError):
        Stat.of([])


def test_ladder_takes_the_named_limit_between_the_rungs():
    kib = 1024
    rungs = [(32 * kib, True, None), (96 * kib, True, None), (224 * kib, True, None), (256 * kib, False, 227 * kib)]
    result = ladder_limit(rungs)
    assert result.limit == 227 * kib and result.largest_ok == 224 * kib and result.smallest_refused == 256 * kib
    capped = [(32 * kib, True, None), (64 * kib, False, 48 * kib), (96 * kib, False, 48 * kib)]
    assert ladder_limit(capped).limit == 48 * kib


def test_ladder_without_a_refusal_or_a_consistent_name():
    assert ladder_limit([(1024, True, None), (2048, True, None)]).limit is None
    odd = ladder_limit([(1024, True, None), (4096, False, 512)])  # a named limit below what ran: not trusted
    assert odd.limit == 1024 and "named no limit" in odd.how
    assert ladder_limit([(4096, False, None)]).limit is None


def test_largest_that_ran():
    assert largest_that_ran([(32, True), (512, True), (1024, True), (2048, False)]) == 1024
    assert largest_that_ran([(32, True), (64, True)]) is None  # nothing refused: the top is not the limit
    assert largest_that_ran([(32, False), (64, True)]) is None  # inconsistent
