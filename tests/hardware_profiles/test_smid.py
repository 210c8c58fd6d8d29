"""The %smid counter's CPU side: its kernel compiles for sm_90 (Triton compiles only kernels defined in a file,
which a ``python -c`` script is not), the rule that says whether a count is the partition asked for, and the
command's one line without a GPU. The count itself runs on the GPU (test_virtual_gpu.py, scripts/check_probe.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from hardware_profiles.smid import partition_problem

ROOT = Path(__file__).resolve().parents[2]


_COMPILE = """
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from hardware_profiles.smid import LANES, _smid_kernel
source = ASTSource(_smid_kernel, {"sm_out": "*i32", "sink": "*fp32", "steps": "i32", "LANES": "constexpr"},
                   constexprs={"LANES": LANES})
print(triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}).asm["ptx"])
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # the session imports in interpreter mode
    env["PYTHONPATH"] = str(ROOT)
    return env


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the count itself runs (test_virtual_gpu)")
@pytest.mark.slow
def test_the_kernel_compiles_for_sm90_and_reads_the_register_once_per_thread():
    done = subprocess.run([sys.executable, "-c", _COMPILE], cwd=ROOT, env=_env(), text=True, capture_output=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    reads = [line for line in done.stdout.splitlines() if "%smid" in line and "mov" in line]
    assert len(reads) == 1 and "fma.rn.f32" in done.stdout  # 128 lanes on 4 warps: one read a thread; loop kept


def _report(count, driver=None, granularity=None, host=132):
    return {"smid_count": count, "driver_sms": driver, "granularity": granularity, "host_sms": host}


@pytest.mark.parametrize("asked, report, problem", [
    (36, _report(40, 40, [8, 8]), None),  # rounded up to the next group of 8
    (40, _report(40), None),
    (66, _report(72, 72), None),
    (36, _report(132, 132), "the grid ran on all 132 SMs of the device: the partition of 36 was not applied"),
    (36, _report(32, 32), "the grid ran on 32 SMs, fewer than the 36 asked"),
    (36, _report(44, 44), "the grid ran on 44 SMs, a whole SM group (8) or more above the 36 asked"),
    (36, _report(44, 44, [16, 16]), None),  # a driver that states larger groups
    (40, _report(40, 48), "the driver's split gives 48 SMs, but the grid ran on 40"),
    (40, {"error": "boom"}, "no %smid count (boom)"),
])
def test_a_count_is_the_partition_asked_for_or_says_why_not(asked, report, problem):
    assert partition_problem(asked, report) == problem


@pytest.mark.skipif(torch.cuda.is_available(), reason="what a machine without a GPU says")
@pytest.mark.slow
def test_without_a_gpu_the_command_says_so_in_one_line():
    done = subprocess.run([sys.executable, "-m", "hardware_profiles.smid", "36"], cwd=ROOT, env=_env(), text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    lines = [line for line in done.stderr.splitlines() if line.strip() and "Warning" not in line]
    assert lines[-1] == ("cannot count the SMs of a partition of 36: no CUDA device is visible to torch (%smid is "
                         "NVIDIA PTX)")
