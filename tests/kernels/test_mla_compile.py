"""Offline sm_90 compiles of the MLA kernels (no GPU: Triton's NVIDIA backend and bundled ptxas), checking what the
design needs before any GPU time: the score dots split over the two warpgroups (no duplicated tensor-core work),
64 x 512 accumulators in two 64 x 256 halves, TMA copies, and a footprint within the H200's 227 KiB per block; for
the warp-specialized kernel, scores of N = 64 from one warpgroup, the P . V halves from both, P from registers in
the tuned variant, the partitions' register limits, and no spills.

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

from kernels.extend_attention.common import Problem
from kernels.extend_attention.mla_gluon import GLUON_VARIANTS, gluon_smem_kb

ROOT = Path(__file__).resolve().parents[2]
H200_SMEM_BYTES = 227 * 1024
#: The bench's ``mla`` case (B = 4, E = 512, P = 8192, 16/1 heads, 576/512, bf16): the compiles' shapes.
BENCH_PROBLEM = Problem(4, 2048, 4 * 8192, 16, 1, 576, 512, torch.bfloat16)


def _nvidia_tool(name: str, *args: str, data: bytes, suffix: str) -> str:
    """Output (stdout + stderr) of Triton's own sm_90 ptxas or nvdisasm run on `data` written to a temporary file."""
    import tempfile

    from triton import knobs
    from triton.backends.nvidia.compiler import get_ptxas

    tool = get_ptxas(90).path if name == "ptxas" else knobs.nvidia.nvdisasm.path
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k" + suffix)
        Path(path).write_bytes(data)
        proc = subprocess.run([tool, *args, path], capture_output=True, text=True, check=True, cwd=tmp)
    return proc.stdout + proc.stderr


def _ws_report(compiled) -> dict:
    """What the warp-specialized kernel's sm_90 compile shows: MMA shapes, footprint, warps, TMA copies, the
    partitions' register limits, P . V steps with a register operand (SASS), and ptxas's spill bytes."""
    ptx = compiled.asm["ptx"]
    sass = _nvidia_tool("nvdisasm", "-c", data=compiled.asm["cubin"], suffix=".cubin")
    ptxas = _nvidia_tool("ptxas", "-arch=sm_90a", "-v", "-o", "k.cubin", data=ptx.encode(), suffix=".ptx")
    return {"wgmma": _wgmma_shapes(ptx), "smem": compiled.metadata.shared, "warps": compiled.metadata.num_warps,
            "tma": ptx.count("cp.async.bulk.tensor"),
            "maxnreg": sorted(set(re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", ptx))),
            "register_a": len(re.findall(r"HGMMA\.64x256x16\.F32\.BF16 R\d+, R\d+", sass)),
            "spills": [int(b) for b in re.findall(r"(\d+) bytes spill (?:stores|loads)", ptxas)]}


def _wgmma_shapes(ptx: str) -> dict[str, int]:
    return {m: ptx.count(m) for m in set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)", ptx))}


def _report() -> dict:
    """Compile the warp-specialized Gluon kernel (the tuned variant and the plain one), the Gluon kernel (BLOCK_N
    64) and the Triton kernel with and without SPLIT_QK (64 x 64, 2 stages)."""
    import triton

    from kernels.extend_attention.offline_compile import compile_mla, compile_mla_gluon

    out = {f"ws-{int(early)}{int(p_regs)}": _ws_report(compile_mla_gluon(ws=True, EARLY_QK=early, P_REGS=p_regs))
           for early, p_regs in ((True, True), (False, False))}
    gluon = compile_mla_gluon(BLOCK_N=64)
    out["triton"] = triton.__version__
    out["gluon"] = {"wgmma": _wgmma_shapes(gluon.asm["ptx"]), "smem": gluon.metadata.shared,
                    "tma": gluon.asm["ptx"].count("cp.async.bulk.tensor")}
    for impl, variant in GLUON_VARIANTS.items():
        if variant.ahead:
            compiled = compile_mla_gluon(BLOCK_N=64, SCORES_AHEAD=True, P_IN_ROPE=variant.p_in_rope,
                                         LAZY_RESCALE=variant.lazy, SPLIT_PV=variant.split_pv,
                                         LOCAL_STATS=variant.local_stats)
            ptxas = _nvidia_tool("ptxas", "-arch=sm_90a", "-v", "-o", "k.cubin", data=compiled.asm["ptx"].encode(),
                                 suffix=".ptx")
            out[impl] = {"wgmma": _wgmma_shapes(compiled.asm["ptx"]), "smem": compiled.metadata.shared,
                         "spills": [int(b) for b in re.findall(r"(\d+) bytes spill (?:stores|loads)", ptxas)],
                         "registers": [int(r) for r in re.findall(r"Used (\d+) registers", ptxas)],
                         "serialized": "serialized" in ptxas}
    edges = (dict(BLOCK_N=32), dict(NUM_SPLITS=3, LOGIT_CAP=30.0, HAS_SINK=True, SCALE_V=True, IS_CAUSAL=False))
    for impl, variant in GLUON_VARIANTS.items():  # the GPU tests' edge configurations compile too
        if variant.ahead and impl != "gluon_ahead":
            out[f"{impl}-edges"] = [compile_mla_gluon(
                **{"BLOCK_N": 64, "SCORES_AHEAD": True, "P_IN_ROPE": variant.p_in_rope and edge.get("BLOCK_N") != 32,
                   "LAZY_RESCALE": variant.lazy, "SPLIT_PV": variant.split_pv, "LOCAL_STATS": variant.local_stats,
                   **edge}).metadata.shared for edge in edges]
    for split in (True, False):
        tl_kernel = compile_mla(num_warps=8, num_stages=2, BLOCK_N=64, SPLIT_QK=split)
        out[f"triton-split{int(split)}"] = {
            "wgmma": _wgmma_shapes(tl_kernel.asm["ptx"]),
            "mma": sorted(set(re.findall(r"warpsPerCTA = \[(\d+, \d+)\], instrShape = \[16, (\d+), 16\]",
                                         tl_kernel.asm["ttgir"])))}
    return out


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="GPU machines launch the real kernels instead")
def test_mla_kernels_compile_for_sm90_without_duplicated_score_work_or_spills():
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
    for impl in (k for k, v in GLUON_VARIANTS.items() if v.ahead):
        ahead = report[impl]
        # the score instructions twice in the PTX (the first tile's issue before the loop, the next tile's in it),
        # P . V once, as 4 steps of 256 columns or (P . V halves) 2 x 4 steps of 128; the footprint is the host
        # model's (`gluon_smem_kb`, P in the rope slot: 8 KiB less)
        pv = {"m64n128k16": 8} if GLUON_VARIANTS[impl].split_pv else {"m64n256k16": 4}
        assert ahead["wgmma"] == {"m64n32k16": 72, **pv}, (impl, ahead)
        model = gluon_smem_kb(64, BENCH_PROBLEM, impl) * 1024
        assert abs(ahead["smem"] - model) <= 64 and ahead["smem"] <= H200_SMEM_BYTES, (impl, ahead, model)
        # 255 registers x 256 threads: the whole register file; triton 3.9's ptxas spills 84-100 bytes of the eager
        # variants, none of the lazy ones (249-255 registers); no MMA serialized by ptxas
        assert ahead["registers"] and max(ahead["registers"]) <= 255 and sum(ahead["spills"]) <= 128, (impl, ahead)
        assert not ahead["serialized"], (impl, ahead)
        if GLUON_VARIANTS[impl].lazy:
            assert sum(ahead["spills"]) == 0, (impl, ahead)
        if impl != "gluon_ahead":  # 64 x 32 tiles (P in its own buffer), and splits + cap + sinks + v_scale, not causal
            assert all(0 < smem <= H200_SMEM_BYTES for smem in report[f"{impl}-edges"]), (impl, report)
    assert report["gluon_ahead"]["smem"] - report["gluon_ahead_rope"]["smem"] == 64 * 64 * 2
    for name, ws in ((k, v) for k, v in report.items() if k.startswith("ws-")):
        # scores: 32 + 4 instructions of N = 64 from the softmax warpgroup (twice in the PTX with early scores: the
        # first tile's issue and the loop's); P . V: 4 steps of 256 columns from each warpgroup
        assert ws["wgmma"] == {"m64n64k16": 72 if name == "ws-11" else 36, "m64n256k16": 8}, (name, ws)
        assert ws["smem"] <= H200_SMEM_BYTES and ws["tma"] > 0 and ws["warps"] == 8, (name, ws)
        assert ws["maxnreg"] == ["192", "256"], (name, ws)  # output warpgroup 192, softmax warpgroup 256
        # no spills with triton 3.6 (the GPU machine's); triton 3.9's CUDA 13 ptxas spills 68 bytes of the tuned one
        allowed = 0 if report["triton"].startswith("3.6") or name == "ws-00" else 128
        assert ws["spills"] and sum(ws["spills"]) <= allowed, (name, ws)
        assert ws["register_a"] == (4 if name == "ws-11" else 0), (name, ws)  # P . V with P from registers
    split, chained = report["triton-split1"], report["triton-split0"]
    assert ["4, 2", "32"] in split["mma"] and all(w == "4, 2" for w, _ in split["mma"]), split
    assert ["8, 1", "32"] in chained["mma"], chained  # without the branch: both warpgroups on the same score rows
