"""Replicate reference times: medians, noise from replicates, updates by changed/unchanged cases."""

import pytest

from agent.reference import WINDOW, ReferenceTimes


def test_medians_noise_and_updates():
    samples = {"a": [100.0, 104.0], "b": [10.0, 10.0]}
    ref = ReferenceTimes(samples, {"a": 0.04, "b": 0.0}, 0.02)
    assert ref.medians() == {"a": 102.0, "b": 10.0}
    assert ref.noise() == {"a": 0.04, "b": 0.02}  # fewer than 3 replicates: baseline spread / floor
    # a rejected candidate that changed "a": its time of "a" is not a replicate; "b" ran the same code
    ref.update({"a": 80.0, "b": 11.0}, changed=["a"], accepted=False)
    assert samples == {"a": [100.0, 104.0], "b": [10.0, 10.0, 11.0]}
    assert ref.noise()["b"] == pytest.approx(0.1)  # 11 / median 10 - 1
    # accepted: "a" starts over from the new code's time
    ref.update({"a": 80.0, "b": 10.5}, changed=["a"], accepted=True)
    assert samples["a"] == [80.0] and samples["b"] == [10.0, 10.0, 11.0, 10.5]
    for _ in range(2 * WINDOW):
        ref.update({"a": 81.0, "b": 10.0}, changed=[], accepted=False)
    assert len(samples["a"]) == WINDOW and samples["a"] == [81.0] * WINDOW


def test_one_hiccup_does_not_set_the_noise():
    """The H200 run of session 5: eight small-heads replicates of 606-616 us and one of 6417 us."""
    samples = {"small-heads": [611.0, 613.0, 613.0, 614.0, 616.0, 6417.0, 608.0, 606.0]}
    ref = ReferenceTimes(samples, {}, 0.02)
    # median 613; deviations without the 6417 outlier: largest |606 / 613 - 1| = 0.0114 < floor 0.02
    assert ref.medians() == {"small-heads": 613.0}
    assert ref.noise() == {"small-heads": 0.02}
    # two hiccups are a pattern: the second one counts (median 615: 1226 / 615 - 1 = 0.993)
    samples["small-heads"] = [611.0, 613.0, 614.0, 616.0, 1226.0, 6417.0]
    assert ref.noise()["small-heads"] == pytest.approx(1226.0 / 615.0 - 1.0)
    # fewer than TRIM_FROM replicates: the largest deviation counts
    samples["small-heads"] = [600.0, 606.0, 612.0, 660.0]
    assert ref.noise()["small-heads"] == pytest.approx(660.0 / 609.0 - 1.0)
