"""Offline compile of the family kernel with tensor descriptors for sm_90 (Hopper), no GPU needed: Triton's NVIDIA
backend lowers TTIR -> TTGIR -> PTX -> cubin with its bundled ptxas, and the PTX must hold TMA bulk-tensor copies.

Runs in a child process without TRITON_INTERPRET (the test session imports the kernels in interpreter mode). On a
GPU machine the real launches (test_extend_attention_gpu.py) cover the same ground, so this test is CPU-only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]

#: (name, dtype, D, BLOCK_M, BLOCK_N, num_warps, num_stages, PACK): the compute-bound bench tile (bf16, D=128,
#: wgmma) and the small fp16 tile of the interpreter tests (mma v2).
CONFIGS = [("bench", "bf16", 128, 128, 64, 8, 2, 1), ("small", "fp16", 32, 16, 16, 4, 2, 4)]


def _compile_report(ahead: bool = False) -> dict[str, dict[str, int]]:
    """Compile `_family_fwd_kernel` with TMA_EXT and TMA_PREFIX for each of `CONFIGS`; TMA copies in PTX per name.
    `ahead`: the ordered gather-ahead kernel instead, for sm_90 with TMA and the proxy fence (as `run_family` sets
    them on Hopper) and for sm_80 without either (Ampere has no TMA and no fence.proxy.async); PTX counts of the
    fence and of acquire loads / release atomics per target."""
    from kernels.extend_attention.offline_compile import compile_family

    out = {}
    configs = [(f"ahead-sm{cc}", "bf16", 128, 128, 128, 8, 3, 4, cc) for cc in (90, 80)] if ahead else [
        (*c, 90) for c in CONFIGS]
    for name, dt, d, bm, bn, warps, stages, pack, cc in configs:
        tma = cc >= 90
        compiled = compile_family(
            dt, cc, warps, stages, LQ=d, LV=d, BLOCK_D=d, BLOCK_DV=d, BLOCK_M=bm, BLOCK_N=bn, BLOCK_B=2, PACK=pack,
            NUM_SPLITS=1 if ahead or pack == 1 else 2, TMA_EXT=tma, TMA_PREFIX=tma, AHEAD_ROWS=16 if ahead else 0,
            AHEAD_SYNC=ahead, PROXY_FENCE=ahead and tma)
        ptx = compiled.asm["ptx"]
        out[name] = {"tma_copies": ptx.count("cp.async.bulk.tensor"), "cubin_bytes": len(compiled.asm["cubin"]),
                     "proxy_fences": ptx.count("fence.proxy.async.global"), "acquires": ptx.count(".acquire."),
                     "releases": ptx.count(".release.")}
    return out


@pytest.mark.slow  # ~8 s on a busy 2-core machine
@pytest.mark.skipif(torch.cuda.is_available(), reason="GPU machines launch the real kernel instead")
def test_descriptor_loads_compile_to_tma_copies_for_sm90():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    code = ("import json; from tests.kernels.test_tma_compile import _compile_report; "
            "print(json.dumps(_compile_report()))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, *_ in CONFIGS:
        assert report[name]["cubin_bytes"] > 0
        assert report[name]["tma_copies"] > 0, report


@pytest.mark.slow  # ~24 s on 2 cores
@pytest.mark.skipif(torch.cuda.is_available(), reason="GPU machines launch the real kernel instead")
def test_ordered_gather_ahead_compiles_for_hopper_with_its_fence_and_for_ampere_without():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    code = ("import json; from tests.kernels.test_tma_compile import _compile_report; "
            "print(json.dumps(_compile_report(ahead=True)))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    hopper, ampere = report["ahead-sm90"], report["ahead-sm80"]
    assert hopper["proxy_fences"] == 1 and hopper["tma_copies"] > 0
    assert ampere["proxy_fences"] == 0 and ampere["tma_copies"] == 0 and ampere["cubin_bytes"] > 0
    for target in (hopper, ampere):  # the wait's acquire load and the copy's release increment
        assert target["acquires"] >= 1 and target["releases"] >= 1
