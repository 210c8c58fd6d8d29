"""Registers, spills and shared memory of the split-K GEMM kernels at the tuned configurations of the bench cases,
compiled for an NVIDIA target without a GPU (`kernels.splitk_gemm.offline_compile`).

    python scripts/compile_report_splitk.py [--chip h200] [--capability 90]

Run it with the GPU machine's Triton (3.6: a separate venv, docs/GPU_RUNBOOK.md) before spending GPU time on a
kernel change: a spilling program, or one whose shared memory no longer fits the chip, shows here.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.nvidia.compiler import get_ptxas  # noqa: E402

from hardware_profiles import load_profile  # noqa: E402
from kernels.chip import ChipLimits  # noqa: E402
from kernels.splitk_gemm.offline_compile import compile_config  # noqa: E402
from kernels.splitk_gemm.spec import TASK  # noqa: E402
from kernels.splitk_gemm.tuned import choose_config  # noqa: E402


def ptxas_usage(ptx: str, capability: int = 90) -> dict:
    """Registers and spill bytes reported by ``ptxas -v`` for `ptx` (the ptxas Triton itself uses for the target)."""
    ptxas = get_ptxas(capability).path
    arch = f"sm_{capability}a" if capability >= 90 else f"sm_{capability}"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.ptx")
        with open(path, "w") as fh:
            fh.write(ptx)
        log = subprocess.run([ptxas, f"-arch={arch}", "-v", path, "-o", os.path.join(tmp, "k.cubin")],
                             capture_output=True, text=True, check=True).stderr
    regs = re.search(r"Used (\d+) registers", log)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    return {"regs": int(regs.group(1)) if regs else None,
            "spill_store_b": int(spills.group(1)) if spills else None,
            "spill_load_b": int(spills.group(2)) if spills else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--capability", type=int, default=90)
    ap.add_argument("--chip", default="h200")
    args = ap.parse_args()
    limits = ChipLimits.from_profile(load_profile(args.chip))
    print(f"triton {triton.__version__}, cuda:{args.capability}, {limits}")
    for case in TASK.bench_cases:
        m, n, k = (case.params[x] for x in "mnk")
        cfg = choose_config(limits, m, n, k, torch.bfloat16)
        compiled, plan = compile_config(cfg, m, n, k, torch.bfloat16, limits, args.capability)
        usage = ptxas_usage(compiled.asm["ptx"], args.capability)
        schedule = "stream-K" if plan.stream_k else f"split {plan.splits} {plan.config.reduce_mode}"
        c = plan.config
        print(f"{case.id:18s} {c.block_m}x{c.block_n}x{c.block_k} w{c.num_warps} s{c.num_stages} {schedule:16s} "
              f"programs {plan.programs:4d}: regs {usage['regs']} spills {usage['spill_store_b']}/"
              f"{usage['spill_load_b']} B, smem {compiled.metadata.shared / 1024:.1f} KiB", flush=True)


if __name__ == "__main__":
    main()
