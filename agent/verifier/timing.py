"""The verifier's timing loop (GPU only), run in the sandbox child.

Rules (shared/reference/verifier_threats.md, "Timing attacks"): a fixed number of warm-up and timed calls set by
the plan, never derived from the candidate's own first calls; before every timed call the output is refilled
with NaN and the L2 cache is flushed by writing a buffer larger than it; the timed region is
``start.record(); call; torch.cuda.synchronize(); end.record()`` -- a device-wide synchronize inside the region,
so work on side streams or in the background is counted; the median is reported. Each call is also timed with
``time.perf_counter_ns`` (cross-check), and ``mark`` lets the parent time each call on its own clock. Outputs
of secret repetitions are cloned for re-checking after the loop; inputs rotate between sets.

This is the one function to swap for ``kernels.timing.bench`` once it offers these hooks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class TimingResult:
    """Per-repetition times in microseconds and the captured outputs keyed by (rep, set)."""

    event_us: list[float] = field(default_factory=list)
    wall_us: list[float] = field(default_factory=list)
    captured: dict[tuple[int, int], torch.Tensor] = field(default_factory=dict)


def timed_reps(
    call: Callable[[dict[str, Any]], None],
    arg_sets: Sequence[dict[str, Any]],
    output: str,
    *,
    warmup: int,
    reps: int,
    flush: torch.Tensor,
    capture: set[tuple[int, int]],
    mark: Callable[[str], None],
) -> TimingResult:
    """Time `reps` calls of `call` cycling through `arg_sets` (rep r uses set r % len(arg_sets)).

    Args:
        call: runs the candidate on one argument dict (guards armed by the caller).
        output: name of the in-place output argument, refilled with NaN before every call.
        flush: device buffer larger than the L2 cache, zeroed before every timed call.
        capture: (rep, set) pairs whose output is cloned after the call (outside the timed region).
        mark: sends ``"rb"`` right before and ``"re"`` right after each timed region to the parent.
    """
    sync = torch.cuda.synchronize
    n = len(arg_sets)
    for w in range(warmup):
        args = arg_sets[w % n]
        args[output].fill_(float("nan"))
        call(args)
    sync()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    result = TimingResult()
    for r in range(reps):
        s = r % n
        args = arg_sets[s]
        args[output].fill_(float("nan"))
        flush.zero_()
        sync()
        mark("rb")
        t0 = time.perf_counter_ns()
        start.record()
        call(args)
        sync()
        end.record()
        t1 = time.perf_counter_ns()
        end.synchronize()
        mark("re")
        result.event_us.append(start.elapsed_time(end) * 1000.0)
        result.wall_us.append((t1 - t0) / 1000.0)
        if (r, s) in capture:
            result.captured[(r, s)] = args[output].clone()
    return result


def median(values: Sequence[float]) -> float:
    """Median of a non-empty sequence (mean of the two middle values for even lengths)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
