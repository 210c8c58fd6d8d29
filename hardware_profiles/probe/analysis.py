"""The probe's conclusions from its raw readings: pure functions, tested on synthetic curves (no GPU, no timing).

- `summarize`: median and spread ((max - min) / median) of repeated readings.
- `fit_staircase`: the compute-unit count from a fixed-work-per-program kernel timed against its number of
  programs. With P programs on N units, each program filling its unit, the time is a staircase
  ``t(P) = t0 + T * ceil(P / N)`` (a second program on a unit takes as long again). Every N that leaves at least
  one step inside the sweep is fitted by least squares in (t0, T) and the N of the smallest residual wins: the
  whole curve votes, so neither a noisy point nor the device's reported count (which a green context leaves at
  the whole GPU's) decides it, and a driver that rounds a partition up shows as the count it really gave.
- `ladder_limit`: the shared memory per program from a compile-and-launch ladder: the largest rung that ran, the
  smallest that was refused, and the limit named in the refusal (Triton's ``OutOfResources``), which must lie
  between the two.
- `largest_that_ran`: the threads per program from a ladder of warps per program.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Stat:
    """Median of repeated readings, their spread ((max - min) / median; 0 when the median is 0) and count."""

    median: float
    spread: float
    repeats: int

    @staticmethod
    def of(values: Sequence[float]) -> Stat:
        """`Stat` of `values`.

        Raises:
            ValueError: no values.
        """
        if not values:
            raise ValueError("no readings to summarize")
        med = statistics.median(values)
        spread = (max(values) - min(values)) / med if med else 0.0
        return Stat(float(med), float(spread), len(values))


@dataclass(frozen=True)
class StaircaseFit:
    """Best staircase ``t(P) = offset_us + step_us * ceil(P / units)`` and its residual relative to the steps."""

    units: int
    step_us: float
    offset_us: float
    rel_residual: float


def _fit(programs: Sequence[int], times: Sequence[float], units: int) -> tuple[float, float, float]:
    """Least squares of times ~ offset + step * ceil(P / units): (sse, step, offset)."""
    xs = [math.ceil(p / units) for p in programs]
    n = len(xs)
    mx, my = sum(xs) / n, sum(times) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return math.inf, 0.0, my
    step = sum((x - mx) * (y - my) for x, y in zip(xs, times)) / sxx
    offset = my - step * mx
    sse = sum((y - offset - step * x) ** 2 for x, y in zip(xs, times))
    return sse, step, offset


def fit_staircase(programs: Sequence[int], times_us: Sequence[float], min_steps: float = 1.5) -> StaircaseFit:
    """The compute-unit count that best explains `times_us` measured at `programs` (see the module docstring).

    Candidates are the counts N with max(programs) >= `min_steps` x N, so that the sweep reaches past at least
    one step; a candidate whose fitted step is not positive is discarded.

    Raises:
        ValueError: fewer than 4 readings, mismatched lengths, or no candidate with a rising staircase (the sweep
            did not reach past the compute units, or the times do not rise with the programs).
    """
    if len(programs) != len(times_us) or len(programs) < 4:
        raise ValueError("fit_staircase needs at least 4 (programs, time) readings of equal count")
    top = max(programs)
    best: tuple[float, int, float, float] | None = None
    for units in range(1, int(top / min_steps) + 1):
        sse, step, offset = _fit(programs, times_us, units)
        if step <= 0 or not math.isfinite(sse):
            continue
        if best is None or sse < best[0] * (1 - 1e-9):
            best = (sse, units, step, offset)
    if best is None:
        raise ValueError(f"no staircase in the readings: the time does not rise with the programs up to {top}")
    sse, units, step, offset = best
    rel = math.sqrt(sse / len(programs)) / step
    return StaircaseFit(units, step, offset, rel)


def sweep_points(upper_hint: int, factor: float = 2.5, dense_to: int | None = None) -> list[int]:
    """Program counts to time: every count from 1 to ``factor x upper_hint`` (the device's reported units, an
    upper bound of what a partition gives), so at least two steps of the staircase fall inside the sweep."""
    top = max(8, int(math.ceil(factor * max(1, upper_hint))))
    return list(range(1, (dense_to or top) + 1))


@dataclass(frozen=True)
class LadderResult:
    """What a compile-and-launch ladder says: the limit (bytes; None when no rung was refused), the largest rung
    that ran, the smallest refused, and how the limit was concluded."""

    limit: int | None
    largest_ok: int | None
    smallest_refused: int | None
    how: str


def ladder_limit(rungs: Sequence[tuple[int, bool, int | None]]) -> LadderResult:
    """Limit from rungs ``(required bytes, ran, limit the refusal named or None)``.

    The limit is the one the refusals name when it lies in [largest that ran, smallest refused); else, with both
    ends known, the largest that ran (a lower bound the chip did honour); None when nothing was refused.
    """
    ran = [r for r, ok, _ in rungs if ok]
    refused = [(r, lim) for r, ok, lim in rungs if not ok]
    largest_ok = max(ran) if ran else None
    smallest = min(refused)[0] if refused else None
    if smallest is None:
        return LadderResult(None, largest_ok, None, f"no rung refused up to {largest_ok} bytes: limit not reached")
    named = {lim for _, lim in refused if lim is not None}
    for lim in sorted(named):
        if (largest_ok is None or lim >= largest_ok) and lim < smallest:
            return LadderResult(lim, largest_ok, smallest, f"largest rung that ran {largest_ok} B, smallest refused "
                                f"{smallest} B, which the refusal named over the limit of {lim} B")
    if largest_ok is None:
        return LadderResult(None, None, smallest, f"every rung refused (smallest {smallest} B)")
    return LadderResult(largest_ok, largest_ok, smallest, f"largest rung that ran {largest_ok} B (smallest refused "
                        f"{smallest} B; the refusal named no limit between them)")


def largest_that_ran(rungs: Sequence[tuple[int, bool]]) -> int | None:
    """The largest value of rungs ``(value, ran)`` that ran, when a larger one was refused (else None)."""
    ran = [v for v, ok in rungs if ok]
    refused = [v for v, ok in rungs if not ok]
    if not ran or not refused or min(refused) <= max(ran):
        return None
    return max(ran)
