"""The split-K kernels compile for Hopper (sm_90) without a GPU (Triton's bundled ptxas): every reduction mode,
stream-K and float32, within the shared memory the footprint model budgets, with the memory ordering the
reductions rely on (a CTA barrier and an acquire-release arrival counter; partials read at L2; no workspace element
touched by two threads of a program without a barrier between) and float32 dots in IEEE float32 (no tf32).

Runs in a child process without TRITON_INTERPRET (the test session imports the kernels in interpreter mode). On a
GPU machine the real launches (test_splitk_gemm_gpu.py) cover the same ground, so this test is CPU-only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]
SKINNY = dict(block_m=16, block_n=128, block_k=128, num_stages=4)
#: name -> (FamilyConfig knobs, dtype name)
CONFIGS = {
    "fused": (dict(SKINNY, split_k=4, fused_reduce=True), "bfloat16"),
    "atomic": (dict(SKINNY, split_k=4, atomic=True), "bfloat16"),
    "workspace": (dict(SKINNY, split_k=4), "float16"),
    "stream-k": (dict(block_m=128, block_n=128, block_k=64, num_warps=8, num_stages=4, stream_k=True),
                 "bfloat16"),
    "fp32": (dict(SKINNY, split_k=4, fused_reduce=True), "float32"),
    "gemv-fused": (dict(block_m=16, block_n=64, block_k=128, num_stages=4, gemv=True, split_k=4, fused_reduce=True),
                   "bfloat16"),
    "gemv-atomic": (dict(block_m=16, block_n=64, block_k=128, num_stages=4, gemv=True, split_k=4, atomic=True),
                    "bfloat16"),
}


def _compile_report() -> dict:
    """Per config: shared memory (KiB) against the model, cubin size, and PTX instruction counts."""
    from kernels.chip import ChipLimits
    from kernels.splitk_gemm.config import FamilyConfig, smem_footprint_kb
    from kernels.splitk_gemm.offline_compile import compile_config, unordered_accesses

    limits = ChipLimits(num_compute_units=132, smem_per_block_kb=227.0, warp_size=32, max_threads_per_block=1024)
    out = {}
    for name, (knobs, dtype) in CONFIGS.items():
        dt = getattr(torch, dtype)
        compiled, plan = compile_config(FamilyConfig(**knobs), 1, 4096, 4096, dt, limits, capability=90)
        ptx = compiled.asm["ptx"]
        out[name] = {"smem_kb": compiled.metadata.shared / 1024, "model_kb": smem_footprint_kb(plan.config, dt),
                     "cubin_bytes": len(compiled.asm["cubin"]), "arrivals": ptx.count("atom.global.gpu.acq_rel.add"),
                     "l2_loads": ptx.count("ld.global.cg"), "barriers": ptx.count("bar.sync"),
                     "exchanges": ptx.count("atom.global.gpu.relaxed.exch"),
                     "float_atomics": ptx.count("red.global.gpu.relaxed.add"), "tf32": ptx.count("tf32"),
                     "cp_async": ptx.count("cp.async"),
                     "unordered": {buf: [[str(x) for x in pair]
                                         for pair in unordered_accesses(compiled.asm["ttgir"], buf)]
                                   for buf in ("ws_ptr", "counters")}}
    return out


@pytest.fixture(scope="module")
def report() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    code = ("import json; from tests.kernels.splitk_gemm.test_offline_compile import _compile_report; "
            "print(json.dumps(_compile_report()))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="GPU machines launch the real kernels instead")


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.slow
def test_compiles_within_the_modeled_shared_memory(report, name):
    assert 0 < report[name]["smem_kb"] <= report[name]["model_kb"] + 1.0, report[name]
    assert report[name]["cubin_bytes"] > 0


@pytest.mark.parametrize("name", ["fused", "atomic", "stream-k", "fp32", "gemv-fused", "gemv-atomic"])
def test_reductions_arrive_after_a_barrier_and_read_partials_at_l2(report, name):
    """Loads at L2 (``.cg``), or for the atomic accumulator an atomic exchange (performed at L2)."""
    l2_reads = report[name]["exchanges"] if name.endswith("atomic") else report[name]["l2_loads"]
    assert report[name]["arrivals"] >= 1 and report[name]["barriers"] >= 1 and l2_reads >= 1, report[name]


def test_only_the_atomic_mode_adds_floats_atomically(report):
    assert report["atomic"]["float_atomics"] >= 1
    assert all(report[n]["float_atomics"] == 0 for n in ("fused", "workspace", "stream-k", "gemv-fused"))
    assert report["gemv-atomic"]["float_atomics"] >= 1
    assert report["workspace"]["arrivals"] == 0


@pytest.mark.parametrize("name", list(CONFIGS))
def test_no_workspace_element_is_touched_by_two_threads_without_a_barrier(report, name):
    """Within one program, a write to the workspace or the counters and another access of them through another
    pointer value (hence possibly another thread) are separated by a CTA barrier (`unordered_accesses`): else a
    thread may reset an accumulator element before the thread that reads it has read it."""
    assert report[name]["unordered"] == {"ws_ptr": [], "counters": []}, report[name]["unordered"]


@pytest.mark.parametrize("name", ["gemv-fused", "gemv-atomic"])
def test_gemv_loads_are_pipelined_through_shared_memory(report, name):
    """The GEMV mode's K loop (no tl.dot) keeps num_stages - 1 = 3 weight tiles of 64 x 128 bf16 (16 KiB each) in
    flight through shared memory with cp.async, as the dot path does: at least 48 KiB of shared memory."""
    assert report[name]["cp_async"] > 0 and report[name]["smem_kb"] >= 3 * 64 * 128 * 2 / 1024, report[name]


def test_float32_dots_are_ieee(report):
    assert report["fp32"]["tf32"] == 0
