"""Host-side cost of the verifier's compute guards on a launcher call, Triton launches disabled.

    python benchmarks/bench_verifier_overhead.py [--rounds 30] [--calls 50]

The guards sit inside every candidate call, checked and timed alike; this measures what they add to the Python
path of the baseline and the optimized entry point (argument checks, workspace, Triton's launcher), with every
launch turned into a no-op so that only host time is left: no guard at all, the audit and import hooks alone
(flag set, no torch mode), and every guard armed. Minimum over rounds of the mean per call, the modes interleaved
so that machine load hits them alike. Runs on the CPU (interpreter) or a GPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import contextmanager
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


@contextmanager
def _launches_off():
    """Every Triton launch a no-op with no guard flag set (the guards' launch patch only acts when armed)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    saved = {cls: cls.run for cls in (JITFunction, InterpretedFunction)}
    for cls in saved:
        cls.run = lambda self, *args, **kwargs: None
    try:
        yield
    finally:
        for cls, run in saved.items():
            cls.run = run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--case", default="gqa-4")
    parser.add_argument("--chip", default="h200", help="chip profile whose limits the kernels run with")
    args = parser.parse_args()
    use_chip(args.chip)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    guards = Guards(FrameJudge(ROOT), "kernels.extend_attention", device)
    inputs = TASK.make_inputs(TASK.case(args.case), 1, device)
    print(f"device {device}, case {args.case}, {args.rounds} rounds x {args.calls} calls, launches disabled")
    print("| entry point | no guard (us/call) | audit + import hooks (+us) | every guard armed (+us) |")
    print("|---|---|---|---|")
    for name, fn in (("baseline", baseline), ("optimized", optimized)):
        best = {"none": 1e9, "hooks": 1e9, "armed": 1e9}
        for _ in range(args.rounds):
            for mode in best:
                t0 = time.perf_counter()
                for _ in range(args.calls):
                    if mode == "armed":
                        with guards.armed(disable_kernels=True):
                            fn(**inputs)
                    elif mode == "hooks":
                        STATE.active = STATE.kernels_disabled = True
                        fn(**inputs)
                        STATE.active = STATE.kernels_disabled = False
                    else:
                        with _launches_off():
                            fn(**inputs)
                best[mode] = min(best[mode], (time.perf_counter() - t0) / args.calls * 1e6)
        print(f"| {name} | {best['none']:.1f} | {best['hooks'] - best['none']:+.1f} | "
              f"{best['armed'] - best['none']:+.1f} |")
    assert not STATE.violations, STATE.violations


if __name__ == "__main__":
    main()
