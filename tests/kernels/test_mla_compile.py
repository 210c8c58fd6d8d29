"""Offline sm_90 compiles of the MLA kernels (no GPU: Triton's NVIDIA backend and bundled ptxas), checking what the
design needs before any GPU time: the score dots split over the two warpgroups (no duplicated tensor-core work),
64 x 512 accumulators in two 64 x 256 halves, TMA copies, and a footprint within the H200's 227 KiB per block.

Runs in a child process without TRITON_INTERPRET (the test session imports the kernels in interpreter mode).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
H200_SMEM_BYTES = 227 * 1024


def _wgmma_shapes(ptx: str) -> dict[str, int]:
    return {m: ptx.count(m) for m in set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)", ptx))}


def _report() -> dict:
    """Compile the Gluon kernel (BLOCK_N 64) and the Triton kernel with and without SPLIT_QK (64 x 64, 2 stages)."""
    from kernels.extend_attention.offline_compile import compile_mla, compile_mla_gluon

    out = {}
    gluon = compile_mla_gluon(BLOCK_N=64)
    out["gluon"] = {"wgmma": _wgmma_shapes(gluon.asm["ptx"]), "smem": gluon.metadata.shared,
                    "tma": gluon.asm["ptx"].count("cp.async.bulk.tensor")}
    for split in (True, False):
        tl_kernel = compile_mla(num_warps=8, num_stages=2, BLOCK_N=64, SPLIT_QK=split)
        out[f"triton-split{int(split)}"] = {
            "wgmma": _wgmma_shapes(tl_kernel.asm["ptx"]),
            "mma": sorted(set(re.findall(r"warpsPerCTA = \[(\d+, \d+)\], instrShape = \[16, (\d+), 16\]",
                                         tl_kernel.asm["ttgir"])))}
    return out


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="GPU machines launch the real kernels instead")
def test_mla_kernels_compile_for_sm90_without_duplicated_score_work():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    code = ("import json; from tests.kernels.test_mla_compile import _report; print(json.dumps(_report()))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    gluon = report["gluon"]
    # per 64-key tile each warpgroup: 32 + 4 score instructions of its 32 key columns, 4 P.V steps of its 256 columns
    assert gluon["wgmma"] == {"m64n32k16": 36, "m64n256k16": 4}, gluon
    assert gluon["smem"] <= H200_SMEM_BYTES and gluon["tma"] > 0, gluon
    split, chained = report["triton-split1"], report["triton-split0"]
    assert ["4, 2", "32"] in split["mma"] and all(w == "4, 2" for w, _ in split["mma"]), split
    assert ["8, 1", "32"] in chained["mma"], chained  # without the branch: both warpgroups on the same score rows
