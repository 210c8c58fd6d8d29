"""Host-side cost of the verifier's compute guards on a launcher call, Triton launches disabled.

    python benchmarks/bench_verifier_overhead.py [--rounds 30] [--calls 50]

The guards sit inside every candidate call, including timed ones; this measures what they add to the Python
path of the baseline and the optimized entry point (argument checks, workspace, Triton's launcher), with every
launch turned into a no-op so that only host time is left. Minimum over rounds of the mean per call, the three
modes interleaved so that machine load hits them alike. Runs on the CPU (interpreter) or a GPU.
"""

from __future__ import annotations

import argparse
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
from kernels.extend_attention import extend_attention_fwd as optimized  # noqa: E402
from kernels.extend_attention.baseline import extend_attention_fwd as baseline  # noqa: E402
from kernels.extend_attention.spec import TASK  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--case", default="gqa-4")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    guards = Guards(FrameJudge(ROOT), "kernels.extend_attention", device)
    inputs = TASK.make_inputs(TASK.case(args.case), 1, device)
    print(f"device {device}, case {args.case}, {args.rounds} rounds x {args.calls} calls, launches disabled")
    print("| entry point | no guard (us/call) | function-mode guard (+us) | dispatcher guard, timed calls (+us) |")
    print("|---|---|---|---|")
    for name, fn in (("baseline", baseline), ("optimized", optimized)):
        best = {"plain": 1e9, "function": 1e9, "dispatch": 1e9}
        for _ in range(args.rounds):
            for mode in best:
                t0 = time.perf_counter()
                for _ in range(args.calls):
                    if mode == "plain":
                        STATE.active = STATE.kernels_disabled = True
                        fn(**inputs)
                        STATE.active = STATE.kernels_disabled = False
                    else:
                        with guards.armed(disable_kernels=True, timed=mode == "dispatch"):
                            fn(**inputs)
                best[mode] = min(best[mode], (time.perf_counter() - t0) / args.calls * 1e6)
        print(f"| {name} | {best['plain']:.1f} | {best['function'] - best['plain']:+.1f} | "
              f"{best['dispatch'] - best['plain']:+.1f} |")
    assert not STATE.violations, STATE.violations


if __name__ == "__main__":
    main()
