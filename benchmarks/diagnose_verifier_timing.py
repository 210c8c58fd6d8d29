"""Where does the verifier's per-call timing overhead come from? (GPU diagnostic, one call.)

On the H200 (2026-11-29) the verifier's timed calls were slower than `kernels.timing.bench` outside the sandbox by
a constant per call: +1.0-1.4 ms for the baseline, +0.3-0.6 ms for the optimized entry point (BENCHMARKS.md). Host
time inside the CUDA-event window counts when the GPU is idle, so this script measures, with launches ENABLED:

- host µs per call (perf_counter around the call, no synchronize) and event µs per call (`kernels.timing.bench`),
  for: guards installed but disarmed; armed (one mechanism for checked and timed calls since verifier2);
- the audit events raised per armed call, by event name (a Python audit hook runs on each of them).

    python benchmarks/diagnose_verifier_timing.py [--case decode] [--calls 30]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.verifier.guard import STATE, FrameJudge, Guards  # noqa: E402
from benchmarks._util import use_chip  # noqa: E402
from kernels.extend_attention import extend_attention_fwd as optimized  # noqa: E402
from kernels.extend_attention.baseline import extend_attention_fwd as baseline  # noqa: E402
from kernels.extend_attention.spec import TASK  # noqa: E402
from kernels.timing import bench  # noqa: E402

EVENTS: collections.Counter = collections.Counter()
COUNTING = False


def _count(event: str, args: tuple) -> None:
    if COUNTING:
        EVENTS[event] += 1


def host_us(call, args: dict, calls: int) -> float:
    """Mean host time of one call (the GPU runs asynchronously; synchronize only between batches)."""
    call(args)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        call(args)
    elapsed = (time.perf_counter() - t0) / calls * 1e6
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return elapsed


def main() -> None:
    global COUNTING
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", default="decode")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--chip", default="h200", help="chip profile whose limits the kernels run with")
    args = parser.parse_args()
    use_chip(args.chip)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    case = TASK.case(args.case) if torch.cuda.is_available() else TASK.case("gqa-4")
    inputs = TASK.make_inputs(case, 1, device)
    guards = Guards(FrameJudge(ROOT), "kernels.extend_attention", device)
    sys.addaudithook(_count)

    def variants(fn):
        def plain(a):
            fn(**a)

        def armed(a):
            with guards.armed():
                fn(**a)

        return {"plain (guards installed, disarmed)": plain, "armed (checked and timed calls alike)": armed}

    print(f"device {device}, case {case.id}, {args.calls} calls per figure")
    print("| entry point | variant | host us/call | event us/call, delay-covered (median of 10) | event us/call, "
          "exposed (cover 0) |")
    print("|---|---|---|---|---|")
    for name, fn in (("baseline", baseline), ("optimized", optimized)):
        for label, call in variants(fn).items():
            host = host_us(call, inputs, args.calls)
            gpu = torch.cuda.is_available()
            event = bench(lambda _c=call, **kw: _c(kw), [inputs], reps=10, warmup=2).median_us if gpu else float("nan")
            bare = (bench(lambda _c=call, **kw: _c(kw), [inputs], reps=10, warmup=2, cover_us=0).median_us
                    if gpu else float("nan"))
            print(f"| {name} | {label} | {host:.1f} | {event:.1f} | {bare:.1f} |")
        EVENTS.clear()
        COUNTING = True
        with guards.armed():
            fn(**inputs)
        COUNTING = False
        print(f"audit events in one armed call of {name}: {dict(EVENTS.most_common(12))}")
    assert not STATE.violations, STATE.violations


if __name__ == "__main__":
    main()
