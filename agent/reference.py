"""Reference times of the best kernel per case, from every measurement of the code that runs that case.

On the H200 the same kernel timed in two verifications differs by up to ~10% on short cases (the first GPU run of
this loop: untouched cases "regressed" 8-12% between evaluations), so one sample of the best kernel is a poor
reference. A family candidate that changes one case class runs exactly the best kernel's code for every other
case, so its timings of those cases are replicates of the best kernel's times. This module keeps the last
`WINDOW` replicates per case; the reference is their median and the case's noise is the largest relative
deviation from it (at least the baseline repeats' spread and the noise floor), leaving out the single largest
once there are `TRIM_FROM` replicates: one hiccup is not the case's noise (H200, session 5: one small-heads
replicate at 6417 us among eight of 606-616 us set its noise to 946 %, and every later candidate of its class
then needed a x10 gain to be accepted).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping

#: Replicates kept per case (a sliding window follows slow drift of the machine).
WINDOW = 8
#: From this many replicates on, the largest deviation is left out of the noise estimate.
TRIM_FROM = 5


class ReferenceTimes:
    """Per-case replicate times of the current best kernel (``samples`` is the run state's mapping, mutated in
    place so it is saved with the state)."""

    def __init__(self, samples: dict[str, list[float]], baseline_noise: Mapping[str, float], noise_floor: float):
        self.samples = samples
        self.baseline_noise = baseline_noise
        self.noise_floor = noise_floor

    def medians(self) -> dict[str, float]:
        """Median replicate time per case, microseconds."""
        return {c: statistics.median(ts) for c, ts in self.samples.items() if ts}

    def noise(self) -> dict[str, float]:
        """Relative noise per case: max(noise floor, baseline repeats' spread, largest deviation of a replicate
        from the median once there are 3 or more replicates -- the second largest from `TRIM_FROM` on)."""
        out = {}
        for case, ts in self.samples.items():
            spread = 0.0
            if len(ts) >= 3:
                med = statistics.median(ts)
                deviations = sorted(abs(t / med - 1.0) for t in ts)
                spread = deviations[-2] if len(ts) >= TRIM_FROM else deviations[-1]
            out[case] = max(self.noise_floor, self.baseline_noise.get(case, 0.0), spread)
        return out

    def update(self, times: Mapping[str, float], changed: Iterable[str], accepted: bool) -> None:
        """Fold one verified, timed evaluation in: unchanged cases add a replicate; changed cases start over
        from this time when the candidate was accepted (its code is the best kernel's now)."""
        changed = set(changed)
        for case, t in times.items():
            if case in changed:
                if accepted:
                    self.samples[case] = [t]
            elif case in self.samples:
                self.samples[case] = (self.samples[case] + [t])[-WINDOW:]
