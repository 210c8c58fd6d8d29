"""The verifier's timing loop (GPU only), run in the sandbox child around the project's one timing helper.

Each timed call is one `kernels.timing.time_one_call`: L2 flushed by writing a buffer larger than it, a GPU-side
delay that hides host launch work (the guards armed around the call cost host time, which must not count as kernel
time), CUDA events around the call on the current stream, then a device-wide synchronize inside the host wall-clock
region -- so work left on a side stream or a background thread shows as wall time far above event time, which the
verifier rejects. Calls picked by the plan's secret seeds run *exposed* (no delay), so a candidate cannot hide work
behind the delay without showing it in those calls. Around it this loop adds what a verifier needs and a benchmark
does not: fixed warm-up and repetition counts from the plan (never derived from the candidate's own first calls),
the output refilled with NaN and the queries regenerated (``refresh``) before every call -- so no call sees the
inputs of another and a replayed answer is wrong -- input sets rotated call by call, the outputs of secret
repetitions cloned for re-checking, and markers (``mark``) that let the parent time every call on its own clock.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from kernels.timing import HOST_COVER_US, device_of, flush_l2, prepare_delay, time_one_call

Timer = Callable[[Callable[[dict[str, Any]], None], dict[str, Any], bool], tuple[float, float, float]]


def gpu_timer(call: Callable[[dict[str, Any]], None], args: dict[str, Any], exposed: bool = False,
              ) -> tuple[float, float, float]:
    """(event_us, wall_us, cover_us) of one call through `kernels.timing.time_one_call`; `exposed`: no delay.

    L2 is flushed by `timed_reps` before the parent's "rb" marker, so the parent's clock does not count the flush.
    """
    cover = 0.0 if exposed else HOST_COVER_US
    return time_one_call(lambda: call(args), device_of(args), flush_l2=False, cover_us=cover)


def wall_timer(call: Callable[[dict[str, Any]], None], args: dict[str, Any], exposed: bool = False,
               ) -> tuple[float, float, float]:
    """(wall_us, wall_us, 0) of one call: exercises the timing protocol on the CPU; never a measurement."""
    t0 = time.perf_counter()
    call(args)
    elapsed = (time.perf_counter() - t0) * 1e6
    return elapsed, elapsed, 0.0


@dataclass
class TimingResult:
    """Per-repetition times in microseconds and the captured outputs keyed by (rep, set).

    `cover_us[r]` is the GPU-side delay before call r (0 for exposed calls); `wall_us` already excludes it.
    """

    event_us: list[float] = field(default_factory=list)
    wall_us: list[float] = field(default_factory=list)
    cover_us: list[float] = field(default_factory=list)
    captured: dict[tuple[int, int], torch.Tensor] = field(default_factory=dict)


def timed_reps(
    call: Callable[[dict[str, Any]], None],
    arg_sets: Sequence[dict[str, Any]],
    output: str,
    *,
    warmup: int,
    reps: int,
    capture: set[tuple[int, int]],
    mark: Callable[[str], None],
    refresh: Callable[[dict[str, Any], int], None],
    timer: Timer = gpu_timer,
    exposed: frozenset[int] = frozenset(),
) -> TimingResult:
    """Time `reps` calls of `call` cycling through `arg_sets` (rep r uses set r % len(arg_sets)).

    Args:
        call: runs the candidate on one argument dict (guards armed by the caller).
        output: name of the in-place output argument, refilled with NaN before every call.
        capture: (rep, set) pairs whose output is cloned after the call (outside the timed region).
        mark: sends ``"rb"`` right before and ``"re"`` right after each timed call to the parent.
        refresh: ``refresh(args, i)`` rewrites the inputs in place before call i (warm-up calls count first).
        timer: `gpu_timer` (default) or `wall_timer` (CPU protocol tests).
        exposed: repetitions timed without the GPU-side delay (host launch work counts in those).
    """
    n = len(arg_sets)
    gpu = timer is gpu_timer
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    for w in range(warmup):
        args = arg_sets[w % n]
        refresh(args, w)
        args[output].fill_(float("nan"))
        call(args)
    if gpu:
        prepare_delay(device_of(arg_sets[0]))
    sync()
    result = TimingResult()
    for r in range(reps):
        s = r % n
        args = arg_sets[s]
        refresh(args, warmup + r)
        args[output].fill_(float("nan"))
        if gpu:
            flush_l2(device_of(args))
        sync()
        mark("rb")
        event_us, wall_us, cover_us = timer(call, args, r in exposed)
        mark("re")
        result.event_us.append(event_us)
        result.wall_us.append(wall_us)
        result.cover_us.append(cover_us)
        if (r, s) in capture:
            result.captured[(r, s)] = args[output].clone()
    return result


def exposed_reps(call_seeds: Sequence[int], reps: int) -> frozenset[int]:
    """Repetitions timed without the GPU-side delay: a fifth of them (at least 2 when reps >= 4), picked from the
    plan's secret call seeds, so candidate code cannot tell which calls are exposed."""
    if reps < 4 or not call_seeds:
        return frozenset()
    rng = random.Random(int(call_seeds[-1]) ^ 0x5EED)
    return frozenset(rng.sample(range(reps), max(2, reps // 5)))


def median(values: Sequence[float]) -> float:
    """Median of a non-empty sequence (mean of the two middle values for even lengths)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
