"""Host time of the split-K GEMM entry points' own Python, on the CPU, with the GPU launch left out.

Method: the bench cases' tensors are allocated on the CPU (real shapes, nothing is computed); each case's
`PreparedCall` is built exactly as the first call builds it (`tuned.choose_config`, `family.plan_launch`), and its
kernels are given a compiled kernel whose launcher does nothing (for the CPU tensors' device: no CUDA device or
stream query is made). Then warm calls of ``splitk_gemm(a, b, c, limits=...)`` (the tuned entry point) and of
``run_family(config, a, b, c, limits=...)`` (what candidates call) are timed back to back (`timeit`, best of 5
repeats, in process CPU time: other processes on a shared machine do not count). What this leaves out, and the
GPU bench's host-time column (bench_splitk_gemm.py) adds: Triton's launcher (`CompiledKernel.run`: its Python
wrapper, argument parsing, cuLaunchKernelEx) and the CUDA device and stream queries.

    python benchmarks/host_overhead_splitk.py [--calls 20000] [--out host.json]

No GPU, no interpreter: the kernels never run, so the figures are host time only, never kernel time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from hardware_profiles import load_profile  # noqa: E402
from kernels.chip import ChipLimits  # noqa: E402
from kernels.splitk_gemm import family, tuned  # noqa: E402
from kernels.splitk_gemm.common import check_inputs  # noqa: E402
from kernels.splitk_gemm.family import plan_launch, run_family  # noqa: E402
from kernels.splitk_gemm.prepared import PreparedCall, call_key  # noqa: E402
from kernels.splitk_gemm.spec import TASK  # noqa: E402


class NoLaunch:
    """A compiled kernel whose launcher returns at once (same call signature as `CompiledKernel.run`)."""

    function = 0
    packed_metadata = None

    @staticmethod
    def run(*args) -> None:
        return None


def prepared_for(config, a, b, c, limits) -> PreparedCall:
    """The PreparedCall the first call of (config, a, b, c) builds, with launchers that do nothing."""
    prob = check_inputs(a, b, c)
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    prepared = PreparedCall(plan_launch(config, prob, limits), prob, strides, a.device)
    for launch in (prepared.main, prepared.reduce):
        if launch is not None:
            launch._compiled[None] = NoLaunch()  # None: the device of CPU tensors (no driver query)
    return prepared


def per_call_us(fn, calls: int) -> float:
    """Best of 5 repeats of `calls` back-to-back calls, in microseconds per call."""
    return min(timeit.repeat(fn, number=calls, repeat=5, timer=time.process_time)) / calls * 1e6


def case_row(case, limits: ChipLimits, calls: int) -> dict:
    """Host microseconds per warm call of one bench case: tuned entry point, run_family, call_key alone."""
    m, n, k = (case.params[x] for x in "mnk")
    a, b = torch.empty(m, k, dtype=torch.bfloat16), torch.empty(n, k, dtype=torch.bfloat16)
    c = torch.empty(m, n, dtype=torch.bfloat16)
    config = tuned.choose_config(limits, m, n, k, torch.bfloat16)
    tuned._PREPARED[(limits, call_key(a, b, c))] = prepared_for(config, a, b, c, limits)
    family._PREPARED[(config, limits, call_key(a, b, c))] = prepared_for(config, a, b, c, limits)
    row = {"case": case.id, "mode": "stream-K" if config.stream_k else f"{config.reduce_mode} x{config.split_k}",
           "tuned_us": per_call_us(lambda: tuned.splitk_gemm(a, b, c, limits=limits), calls),
           "run_family_us": per_call_us(lambda: run_family(config, a, b, c, limits=limits), calls),
           "call_key_us": per_call_us(lambda: call_key(a, b, c), calls)}
    print(f"{case.id:20s} {row['mode']:14s} tuned {row['tuned_us']:5.2f} us  run_family {row['run_family_us']:5.2f} "
          f"us  (call_key {row['call_key_us']:4.2f} us)")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    limits = ChipLimits.from_profile(load_profile("h200"))
    rows = [case_row(case, limits, args.calls) for case in TASK.bench_cases]
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "torch": torch.__version__}, indent=1))


if __name__ == "__main__":
    main()
