"""Registers, spills and shared memory of the split-K GEMM kernels at the tuned configurations of the bench cases,
compiled for an NVIDIA target without a GPU (`kernels.splitk_gemm.offline_compile`).

    python scripts/compile_report_splitk.py [--chip h200] [--capability 90] [--m16]

``--m16``: instead, every variant of benchmarks/splitk_m16.py on the bench cases with M <= 16, with the count of
evict-first weight loads in the PTX (``L2::evict_first``) and of 16-byte vector loads (``.v4.b32`` / ``.v4.u32``
global loads, and ``cp.async`` of 16 bytes).

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
    ap.add_argument("--m16", action="store_true", help="the M <= 16 variants of benchmarks/splitk_m16.py")
    args = ap.parse_args()
    limits = ChipLimits.from_profile(load_profile(args.chip))
    print(f"triton {triton.__version__}, cuda:{args.capability}, {limits}")
    for case in TASK.bench_cases:
        m, n, k = (case.params[x] for x in "mnk")
        configs = {"tuned": choose_config(limits, m, n, k, torch.bfloat16)}
        if args.m16:
            from benchmarks.splitk_m16 import MAX_M, variants

            if m > MAX_M:
                continue
            configs.update(variants(case, limits))
        for name, cfg in configs.items():
            report(case.id, name, cfg, m, n, k, limits, args.capability, args.m16)


def report(case_id: str, name: str, cfg, m: int, n: int, k: int, limits, capability: int, loads: bool) -> None:
    """Print one line: tiles, schedule, programs, registers, spills, shared memory (and with `loads` the PTX's
    evict-first and 16-byte loads); a configuration that does not compile prints its error."""
    try:
        compiled, plan = compile_config(cfg, m, n, k, torch.bfloat16, limits, capability)
    except Exception as exc:  # noqa: BLE001 - one configuration failing is reported, the others still run
        print(f"{case_id:18s} {name:28s} compile error: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
        return
    ptx = compiled.asm["ptx"]
    usage = ptxas_usage(ptx, capability)
    schedule = "stream-K" if plan.stream_k else f"split {plan.splits} {plan.config.reduce_mode}"
    c = plan.config
    extra = ""
    if loads:
        evict = len(re.findall(r"L2::evict_first", ptx))
        vec = len(re.findall(r"ld\.global[\w.:]*\.v4\.(?:b32|u32)", ptx))
        cp16 = len(re.findall(r"cp\.async\.c[ag]\.shared\.global[\w.:]* \[[^]]+\], \[[^]]+\], 0x10", ptx))
        extra = f", evict_first {evict}, v4 loads {vec}, cp.async 16 B {cp16}"
    print(f"{case_id:18s} {name:28s} {c.block_m}x{c.block_n}x{c.block_k} w{c.num_warps} s{c.num_stages} "
          f"{schedule:16s} programs {plan.programs:4d}: regs {usage['regs']} spills {usage['spill_store_b']}/"
          f"{usage['spill_load_b']} B, smem {compiled.metadata.shared / 1024:.1f} KiB{extra}", flush=True)


if __name__ == "__main__":
    main()
