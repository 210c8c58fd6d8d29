"""Stage 4 decision: does a verified candidate replace the best kernel?

Rule (issue 6): accept only if the candidate is faster than the best kernel beyond the measured noise on its
target cases, and no case regresses by more than `regression_limit` (5%). Noise per case is the relative spread
of repeated baseline timings (`measure_noise`), never below `noise_floor`. Both sides of the rule are judged
against that noise: the target gain must exceed ``1 + noise``, and a case counts as regressed when it is slower
by more than ``regression_limit + noise`` (a 5% check on a case whose timings move 4% between processes would
otherwise reject good candidates at random; H200 baseline times moved 1-5% between runs). Only cases whose code
changed are checked for regressions (`changed_cases`); the others run the best kernel's code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Decision:
    """Outcome of `decide`.

    Attributes:
        accepted: the candidate becomes the new best.
        reason: one readable line (what was compared, against which threshold).
        target_gain: geometric-mean speedup over the best kernel on the target cases (None if not computable).
        worst_case: case with the largest slowdown ratio new/best, and that ratio.
    """

    accepted: bool
    reason: str
    target_gain: float | None = None
    worst_case: tuple[str, float] | None = None


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of positive values.

    Raises:
        ValueError: empty input or a non-positive value.
    """
    if not values or min(values) <= 0:
        raise ValueError(f"geomean needs positive values, got {list(values)}")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def measure_noise(repeats: Sequence[Mapping[str, float]], noise_floor: float) -> dict[str, float]:
    """Relative noise per case from repeated timings of one kernel: ``(max - min) / min``, at least `noise_floor`.

    `repeats` is one ``{case_id: time_us}`` per repetition; with one repetition every case gets `noise_floor`.
    """
    cases = set().union(*(r.keys() for r in repeats)) if repeats else set()
    noise = {}
    for case in sorted(cases):
        times = [r[case] for r in repeats if case in r]
        spread = (max(times) - min(times)) / min(times) if len(times) > 1 else 0.0
        noise[case] = max(noise_floor, spread)
    return noise


def decide(best_us: Mapping[str, float], new_us: Mapping[str, float], noise: Mapping[str, float],
           target_cases: Sequence[str], regression_limit: float, noise_floor: float,
           changed_cases: Sequence[str] | None = None) -> Decision:
    """Accept or reject a verified candidate timed on every case of `best_us`.

    Args:
        best_us / new_us: ``{case_id: median time_us}`` of the best kernel and of the candidate.
        noise: relative noise per case (`measure_noise`); missing cases use `noise_floor`.
        target_cases: the cases the candidate means to speed up (empty: every case).
        regression_limit: largest allowed slowdown of any case, relative (0.05 = 5%).
        changed_cases: cases whose code differs from the best kernel's (None: every case). A case that runs the
            identical code cannot regress; its timing difference is noise and is not checked.
    """
    missing = sorted(set(best_us) - set(new_us))
    if missing:
        return Decision(False, f"not timed on case(s) {missing}")
    targets = [c for c in (target_cases or list(best_us)) if c in best_us] or list(best_us)
    ratios = {c: new_us[c] / best_us[c] for c in best_us}
    worst = max(((c, r) for c, r in ratios.items() if changed_cases is None or c in changed_cases),
                key=lambda kv: kv[1], default=max(ratios.items(), key=lambda kv: kv[1]))
    gain = geomean([1.0 / ratios[c] for c in targets])
    threshold = 1.0 + max([noise.get(c, noise_floor) for c in targets] + [noise_floor])
    checked = set(best_us) if changed_cases is None else set(changed_cases)
    regressed = [(c, r) for c, r in ratios.items()
                 if c in checked and r > 1.0 + regression_limit + noise.get(c, noise_floor)]
    if regressed:
        c, r = max(regressed, key=lambda cr: cr[1])
        return Decision(False, f"case {c} regressed {100 * (r - 1):.1f}% (limit {100 * regression_limit:.0f}% "
                               f"+ noise {100 * noise.get(c, noise_floor):.1f}%)", gain, worst)
    if gain <= threshold:
        return Decision(False, f"target gain x{gain:.3f} on {len(targets)} case(s) is within noise "
                               f"(needs > x{threshold:.3f})", gain, worst)
    return Decision(True, f"target gain x{gain:.3f} on {len(targets)} case(s) > noise threshold "
                          f"x{threshold:.3f}; worst case {worst[0]} x{1 / worst[1]:.3f}", gain, worst)
