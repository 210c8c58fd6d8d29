"""Where does a verification's time go? (issue 4: target <= 15 s per candidate on the 9-case H200 suite.)

Verifies one candidate twice in one `Verifier` (the second run finds the sandbox's Triton cache warm, as later
candidates of an optimize run do for unchanged kernels) and prints, per run: total seconds, the engine's phases,
the seconds this (parent) process spent computing references and how many, and how many Triton kernels were
compiled into the sandbox's cache (new files under its ``.triton/cache``).

    python benchmarks/diagnose_verify_time.py [--candidate kernels/extend_attention/baseline.py] [--chip h200]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.verifier import Verifier, VerifyOptions  # noqa: E402
from hardware_profiles import load_profile  # noqa: E402
from kernels.extend_attention.spec import TASK  # noqa: E402

SPENT = {"seconds": 0.0, "calls": 0}


def timed_reference(inputs):
    """The task's reference, timed (synchronized on a GPU so the seconds are its own)."""
    import torch

    started = time.perf_counter()
    out = TASK.reference(inputs)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    SPENT["seconds"] += time.perf_counter() - started
    SPENT["calls"] += 1
    return out


def cache_files(verifier: Verifier) -> int:
    """Files in the sandboxes' Triton caches (each compiled kernel writes several)."""
    return sum(1 for sb in verifier._sandboxes.values()
               for p in (sb.scratch_base / ".triton" / "cache").rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidate", type=Path, default=ROOT / "kernels" / "extend_attention" / "baseline.py")
    parser.add_argument("--chip", default="h200")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    task = dataclasses.replace(TASK, reference=timed_reference)
    print("| run | verify s | stage | phases (s) | parent reference s (calls) | Triton cache files added |")
    print("|---|---:|---|---|---:|---:|")
    with Verifier(task, load_profile(args.chip), VerifyOptions()) as verifier:
        for run in range(1, args.runs + 1):
            SPENT.update(seconds=0.0, calls=0)
            before = cache_files(verifier)
            verdict = verifier.verify(args.candidate)
            phases = verdict.config.get("phase_seconds", {})
            print(f"| {run} | {verdict.verify_seconds:.1f} | {verdict.stage} | {phases} | "
                  f"{SPENT['seconds']:.1f} ({SPENT['calls']}) | {cache_files(verifier) - before} |")


if __name__ == "__main__":
    main()
