"""How many SMs a partition really runs on, counted without trusting the driver: the distinct values of the PTX
special register ``%smid`` (the SM a thread runs on; PTX ISA, "Special Registers: %smid") over a grid of many
long-running programs, launched from the thread that entered the partition.

NVIDIA only, and a check, not part of the probe (the probe uses no vendor instruction). It is the ground truth of
the virtual-chip GPU tests, `scripts/check_probe.py` and `benchmarks/transfer_virtual_chips.py`, each of which runs
it in a fresh process (a process enters one partition for good):

    python -m hardware_profiles.smid 36    # enter a 36-SM green context, print one JSON line
    python -m hardware_profiles.smid 0     # the whole device

The kernel lives in this file because Triton compiles only functions defined in a Python file (not in
``python -c`` code).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import torch
import triton
import triton.language as tl

from hardware_profiles.green_context import (
    GreenContextUnavailable,
    context_sm_count,
    enter_green_context,
    host_sm_count,
    sm_partition_granularity,
)

#: Lanes per program (one program = 4 warps); programs per SM of the whole device; dependent steps per lane
#: (about 40 us a program on an H200), so that the grid runs in several waves and no SM of the partition is left
#: without a program.
LANES, PROGRAMS_PER_SM, STEPS = 128, 32, 20000


@triton.jit
def _smid_kernel(sm_out, sink, steps, LANES: tl.constexpr):
    pid = tl.program_id(0)
    lanes = tl.arange(0, LANES)
    sm = tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r,r", [lanes], dtype=tl.int32, is_pure=False, pack=1)
    x = lanes.to(tl.float32)
    for _ in range(steps):  # keeps the program resident, so the grid spreads over every SM it may use
        x = x * 0.999 + 0.001
    tl.store(sm_out + pid, tl.max(sm, axis=0))
    tl.store(sink + pid * LANES + lanes, x)  # the loop's result is stored: it cannot be optimized away


def distinct_sms(device_index: int = 0) -> int:
    """Distinct ``%smid`` values of ``PROGRAMS_PER_SM x (the device's SMs)`` programs launched on torch's current
    stream from this thread (inside the partition when this thread entered one).

    Raises:
        RuntimeError: a program did not report its SM.
    """
    programs = PROGRAMS_PER_SM * host_sm_count(device_index)
    sm_ids = torch.full((programs,), -1, dtype=torch.int32, device="cuda")
    sink = torch.empty(programs * LANES, dtype=torch.float32, device="cuda")
    _smid_kernel[(programs,)](sm_ids, sink, STEPS, LANES=LANES, num_warps=4)
    torch.cuda.synchronize()
    ids = set(sm_ids.tolist())
    if -1 in ids:
        raise RuntimeError("a program of the %smid grid did not report its SM")
    return len(ids)


def _matmul_ok() -> bool:
    """A cuBLAS product (torch.matmul, float32 512^3) agrees with float64: the library works in this context."""
    a = torch.randn(512, 512, device="cuda")
    return bool(torch.allclose(a @ a, (a.double() @ a.double()).float(), atol=1e-2, rtol=1e-3))


def partition_report(requested: int, device_index: int = 0) -> dict[str, Any]:
    """Enter a green context of `requested` SMs (0: stay on the whole device) and count it.

    Returns ``{"requested", "smid_count" (distinct %smid), "driver_sms" (the driver's split for the request,
    `driver_sm_count`), "context_sms" (what the current context reports, `context_sm_count`), "host_sms",
    "props_sms" (what the device query reports inside), "granularity" ([smallest partition, alignment]), "matmul_ok"}``;
    counts the driver cannot give are None (the whole device: no split, ``driver_sms`` None).

    Raises:
        GreenContextUnavailable: see `hardware_profiles.green_context.enter_green_context`.
    """
    torch.cuda.set_device(device_index)
    entered = enter_green_context(requested, device_index) if requested else None
    granularity = sm_partition_granularity(device_index)
    return {"requested": requested, "smid_count": distinct_sms(device_index),
            "driver_sms": entered.driver_sms if entered else None, "context_sms": context_sm_count(),
            "host_sms": host_sm_count(device_index),
            "props_sms": torch.cuda.get_device_properties(device_index).multi_processor_count,
            "granularity": list(granularity) if granularity else None, "matmul_ok": _matmul_ok()}


def partition_problem(asked: int, report: dict[str, Any]) -> str | None:
    """Why a `partition_report` does not describe a partition of `asked` SMs (one line), or None when it does: the
    grid ran on at least the SMs asked and on less than one SM group more (8 SMs, the group of compute capability
    9.0 (CUDA Driver API, cuDevSmResourceSplitByCount), or the driver's stated alignment when larger), and the
    driver's split for the request, when readable, is the grid's count (the context's own report, ``context_sms``,
    is shown beside it, not judged)."""
    given, host, driver = report.get("smid_count"), report.get("host_sms"), report.get("driver_sms")
    if given is None:
        return f"no %smid count ({report.get('error', 'nothing reported')!s:.200})"
    if host and asked < host <= given:
        return f"the grid ran on all {given} SMs of the device: the partition of {asked} was not applied"
    slack = max(8, (report.get("granularity") or [8, 8])[1])
    if given < asked:
        return f"the grid ran on {given} SMs, fewer than the {asked} asked"
    if given >= asked + slack:
        return f"the grid ran on {given} SMs, a whole SM group ({slack}) or more above the {asked} asked"
    if driver is not None and driver != given:
        return f"the driver's split gives {driver} SMs, but the grid ran on {given}"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sms", type=int, help="SMs to ask of the driver (0: the whole device)")
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    if not torch.cuda.is_available() or torch.version.hip is not None:
        print(f"cannot count the SMs of a partition of {args.sms}: no CUDA device is visible to torch (%smid is "
              "NVIDIA PTX)", file=sys.stderr)
        raise SystemExit(2)
    try:
        report = partition_report(args.sms, args.device)
    except GreenContextUnavailable as exc:
        print(f"cannot make a green context of {args.sms} SMs: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print(json.dumps(report))


if __name__ == "__main__":
    main()
