"""Where does a verification's time go? (issue 4: target <= 15 s per candidate on the 9-case H200 suite.)

Verifies one candidate twice in one `Verifier` (the second run finds the sandbox's Triton cache warm, as later
candidates of an optimize run do for unchanged kernels) and prints, per run: total seconds, the engine's phases,
the seconds this (parent) process spent computing references and how many (since the parent prefetches them in a
background thread, `agent.verifier.prefetch`, these seconds mostly overlap the child's work rather than add to
it), and how many Triton kernels the child compiled, in all and by kernel name. Compiled kernels are counted in
the sandbox's Triton cache (``TRITON_CACHE_DIR`` = ``<scratch>/triton-cache``, see `Sandbox._env`): Triton
writes each kernel it compiles into a directory named by a hash, with ``<name>.json`` (metadata), ``<name>.cubin``
etc. and, last, ``__grp__<name>.json`` listing them; one such group file is one compiled kernel (launcher and
driver modules, ``.so`` files only, are not counted).

    python benchmarks/diagnose_verify_time.py [--candidate kernels/extend_attention/baseline.py] [--chip h200]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.verifier import Verifier, VerifyOptions  # noqa: E402
from hardware_profiles import load_profile  # noqa: E402
from kernels.extend_attention.spec import TASK  # noqa: E402

SPENT = {"seconds": 0.0, "calls": 0}
_SPENT_LOCK = threading.Lock()  # the prefetch thread and the main thread both compute references
_GROUP = "__grp__"


def timed_reference(inputs):
    """The task's reference, timed (synchronized on a GPU so the seconds are its own)."""
    import torch

    started = time.perf_counter()
    out = TASK.reference(inputs)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    with _SPENT_LOCK:
        SPENT["seconds"] += time.perf_counter() - started
        SPENT["calls"] += 1
    return out


def compiled_kernels(verifier: Verifier) -> Counter[str]:
    """Kernels in the sandboxes' Triton caches, by kernel name (one ``__grp__<name>.json`` per compiled kernel)."""
    return Counter(p.name[len(_GROUP):-len(".json")] for sb in verifier._sandboxes.values()
                   for p in (sb.scratch_base / "triton-cache").rglob(f"{_GROUP}*.json"))


def by_name(counts: Counter[str]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidate", type=Path, default=ROOT / "kernels" / "extend_attention" / "baseline.py")
    parser.add_argument("--chip", default="h200")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    task = dataclasses.replace(TASK, reference=timed_reference)
    print("| run | verify s | stage | phases (s) | parent reference s (calls) | kernels compiled | by name |")
    print("|---|---:|---|---|---:|---:|---|")
    slowest: list[tuple[int, dict, list]] = []
    with Verifier(task, load_profile(args.chip), VerifyOptions()) as verifier:
        for run in range(1, args.runs + 1):
            SPENT.update(seconds=0.0, calls=0)
            before = compiled_kernels(verifier)
            verdict = verifier.verify(args.candidate)
            phases = verdict.config.get("phase_seconds", {})
            compiled = compiled_kernels(verifier) - before
            print(f"| {run} | {verdict.verify_seconds:.1f} | {verdict.stage} | {phases} | "
                  f"{SPENT['seconds']:.1f} ({SPENT['calls']}) | {compiled.total()} | {by_name(compiled)} |")
            slowest.append((run, verdict.config.get("trial_seconds", {}), verdict.config.get("plan", [])))
    for run, seconds, plan in slowest:
        child = {f"{t['case']} ({t['label']}, trial {i})": t["child"] for i, t in enumerate(plan)}
        top = sorted(seconds.items(), key=lambda kv: -kv[1])[:12]
        print(f"\nrun {run}, slowest trials (seconds since the previous verdict in the same child):")
        for name, s in top:
            print(f"  {s:7.2f}  child {child.get(name, '?')}  {name}")


if __name__ == "__main__":
    main()
