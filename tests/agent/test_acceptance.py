"""Acceptance: faster beyond noise on the targets, no case slower by more than 5%."""

import pytest

from agent.acceptance import decide, geomean, measure_noise

BEST = {"a": 100.0, "b": 200.0, "c": 50.0}


def test_accepts_clear_gain_without_regression():
    d = decide(BEST, {"a": 50.0, "b": 201.0, "c": 50.5}, {"a": 0.02}, ["a"], 0.05, 0.02)
    assert d.accepted and d.target_gain == pytest.approx(2.0)
    assert d.worst_case == ("c", pytest.approx(1.01))


def test_rejects_regression_beyond_limit_even_with_gain():
    # 8% slower > 5% limit + 2% noise floor
    d = decide(BEST, {"a": 40.0, "b": 216.0, "c": 50.0}, {}, ["a"], 0.05, 0.02)
    assert not d.accepted and "b regressed 8.0% (limit 5% + noise 2.0%)" in d.reason
    # 6% slower on a case whose measured noise is 3%: within limit + noise
    assert decide(BEST, {"a": 40.0, "b": 212.0, "c": 50.0}, {"b": 0.03}, ["a"], 0.05, 0.02).accepted


def test_rejects_gain_within_noise():
    noise = {"a": 0.04, "b": 0.04, "c": 0.04}
    d = decide(BEST, {"a": 97.0, "b": 195.0, "c": 49.0}, noise, [], 0.05, 0.02)
    assert not d.accepted and d.target_gain == pytest.approx(geomean([100 / 97, 200 / 195, 50 / 49]))
    assert "within noise" in d.reason
    assert decide(BEST, {"a": 90.0, "b": 180.0, "c": 45.0}, noise, [], 0.05, 0.02).accepted


def test_missing_case_is_not_accepted():
    assert not decide(BEST, {"a": 1.0, "b": 1.0}, {}, ["a"], 0.05, 0.02).accepted


def test_measure_noise_spread_and_floor():
    noise = measure_noise([{"a": 100.0, "b": 10.0}, {"a": 104.0, "b": 10.01}], 0.02)
    assert noise == {"a": pytest.approx(0.04), "b": 0.02}
    assert measure_noise([{"a": 5.0}], 0.03) == {"a": 0.03}


def test_geomean_rejects_non_positive():
    with pytest.raises(ValueError):
        geomean([1.0, 0.0])
