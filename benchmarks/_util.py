"""Helpers shared by the GPU benchmark scripts: environment record, input sets, correctness, roofline."""

from __future__ import annotations

import json
import platform
import subprocess
from pathlib import Path
from typing import Any

import torch
import triton

from kernels.extend_attention.spec import TASK, bytes_moved, flops, make_inputs, reference
from kernels.task import Case


def use_chip(chip: str):
    """Run this process's kernels as chip `chip`: its profile's limits become the process's chip limits
    (`kernels.chip.set_chip_limits`), and a virtual chip's partition is entered (green context, shared-memory
    cap). Call it before the first CUDA allocation. Returns the profile.

    Raises:
        BadInputError: unknown chip, a limit unknown in its profile, or a virtual chip this machine cannot realise.
    """
    from hardware_profiles import load_profile
    from hardware_profiles.limits import chip_limits_of
    from hardware_profiles.virtual import enter_chip
    from kernels.chip import ChipLimits, device_conflicts, set_chip_limits

    profile = load_profile(chip)
    limits = chip_limits_of(profile)
    set_chip_limits(limits)
    if torch.cuda.is_available():
        enter_chip(profile)
        for line in device_conflicts(limits, ChipLimits.from_device("cuda")):
            print(f"chip {chip}: the device reports other limits than the profile (the profile's are used): {line}")
    return profile


def environment() -> dict[str, Any]:
    """Device, versions and commit of this run (recorded beside every result row)."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=False).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    dev = torch.cuda.get_device_properties(0) if torch.cuda.is_available() else None
    return {
        "device": torch.cuda.get_device_name(0) if dev else "cpu",
        "num_sms": dev.multi_processor_count if dev else None,
        "smem_optin_kb": getattr(dev, "shared_memory_per_block_optin", 0) / 1024 if dev else None,
        "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
        "commit": commit,
    }


def input_sets(case: Case, count: int, device: str = "cuda", base_seed: int = 1000) -> list[dict[str, Any]]:
    """`count` independent input sets of `case` (rotated between timed calls so L2 never holds them)."""
    return [make_inputs(case, base_seed + i, device) for i in range(count)]


def max_error(out: torch.Tensor, ref: torch.Tensor, case: Case) -> tuple[bool, float]:
    """(passes the task tolerance with no NaN, max |out - ref|)."""
    tol = TASK.tolerances[case.params["dtype"]]
    out = out.float()
    err = (out - ref).abs()
    ok = bool(torch.isfinite(out).all()) and bool((err <= tol.atol + tol.rtol * ref.abs()).all())
    return ok, float(err.nan_to_num(float("inf")).max()) if err.numel() else 0.0


def reference_output(args: dict[str, Any]) -> torch.Tensor:
    """fp32 reference output for one input set."""
    return reference(args)["o_extend"]


def roofline(case: Case, time_us: float, peak_tflops: float, peak_gbps: float) -> dict[str, float]:
    """Floor (µs), fraction of floor, achieved TFLOP/s and GB/s for one timing."""
    f, b = flops(case), bytes_moved(case)
    floor = max(f / (peak_tflops * 1e12), b / (peak_gbps * 1e9)) * 1e6
    return {"floor_us": floor, "fraction_of_floor": floor / time_us, "tflops": f / time_us / 1e6,
            "gbps": b / time_us / 1e3}


def write_json(path: str | Path, data: Any) -> None:
    """Write `data` as indented JSON."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=1, default=str))
