"""Registers, spills and shared memory of the family kernel compiled for Hopper (sm_90), without a GPU.

Compiles `_family_fwd_kernel` for target cuda:90 with the knobs of a bf16 compute-bound call (TMA extend and
pre-gathered prefix, pack GQA, G = 4, causal) at each configuration given, and prints what ptxas allocated:
registers per thread, spill stores/loads (bytes) and static + dynamic shared memory per program. A program that
spills in its key loop, or whose shared memory no longer lets it (or two of it) fit an SM's 228 KB, is
visible before any GPU time is spent.

    pip install triton==3.6.0   # the GPU machine's version, in a separate venv with torch
    python scripts/compile_report_sm90.py 128x128w8s3 128x128w8s3a16 128x128w8s3a16y

A configuration is BLOCK_M x BLOCK_N, w num_warps, s num_stages, optional a AHEAD_ROWS (gather-ahead rows per
key tile, two heads ahead; 0 or absent: off), y for AHEAD_SYNC (one launch, ticket and copy counters), -saN for
``scores_ahead=N`` and -d64 for the small-heads layout (D = 64, G = 1, heads fastest), e.g. 128x64w8s3-sa2.
The MLA kernels (bf16 576/512, 16 heads, causal, TMA; `kernels/extend_attention/mla.py`): ``mla-BMxBNwWsS`` for the
Triton kernel (``c`` at the end: the score dots chained to P . V, without the SPLIT_QK branch), ``mla-gluon-nBN``
for the Gluon kernel (``l`` at the end: lazy rescale) and ``mla-gluon-ws`` for the warp-specialized one (``-e``
early scores, ``-p`` P from registers, e.g. ``mla-gluon-ws-e-p``, the tuned variant); their rows add the warpgroup
MMA shapes in the PTX and the register limits that the partitions set (setmaxnreg).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

from triton.backends.nvidia.compiler import get_ptxas

from kernels.extend_attention.offline_compile import (
    compile_family,
    compile_mla,
    compile_mla_gluon,
    groups_in_flight_at_exp,
)

PATTERN = re.compile(r"(\d+)x(\d+)w(\d+)s(\d+)(?:a(\d+))?(y?)(?:-sa(\d))?(-d64)?$")
MLA_TRITON = re.compile(r"mla-(\d+)x(\d+)w(\d+)s(\d+)(c?)$")
MLA_GLUON = re.compile(r"mla-gluon-n(\d+)(l?)$")
MLA_WS = re.compile(r"mla-gluon-ws(-e)?(-p)?$")


def compile_one(bm: int, bn: int, warps: int, stages: int, ahead: int, sync: bool, scores_ahead: int = 0,
                d64: bool = False) -> dict:
    """Compile one configuration (bf16, D = 128, G = 4 packed, or with `d64` D = 64 and G = 1 unpacked, heads
    fastest; causal, TMA; gather-ahead two heads ahead; `scores_ahead` the family knob's depth); ptxas's registers
    and spills, the shared memory Triton allocates, and the most wgmma groups in flight at an exponential
    (`offline_compile.groups_in_flight_at_exp`: 0 for the plain loop, the overlap the scores-ahead loop gets)."""
    heads = dict(LQ=64, LV=64, BLOCK_D=64, BLOCK_DV=64, GROUP=1, PACK=1, HEADS_INNER=True) if d64 else {}
    compiled = compile_family(num_warps=warps, num_stages=stages, BLOCK_M=bm, BLOCK_N=bn, AHEAD_ROWS=ahead,
                              AHEAD_HEADS=2, AHEAD_SYNC=sync, PROXY_FENCE=sync, SCORES_AHEAD=scores_ahead, **heads)
    ptx = compiled.asm["ptx"]
    return {**ptxas_usage(ptx), "smem_kb": round(compiled.metadata.shared / 1024, 1),
            "in_flight_at_exp": groups_in_flight_at_exp(ptx)}


def compile_mla_one(arg: str) -> dict | None:
    """Registers, spills, shared memory and warpgroup MMA shapes of an MLA configuration, or None if `arg` is not
    one."""
    triton_match, gluon_match, ws_match = MLA_TRITON.match(arg), MLA_GLUON.match(arg), MLA_WS.match(arg)
    if triton_match:
        bm, bn, warps, stages = (int(g) for g in triton_match.groups()[:4])
        compiled = compile_mla(num_warps=warps, num_stages=stages, BLOCK_M=bm, BLOCK_N=bn,
                               SPLIT_QK=not triton_match.group(5))
    elif gluon_match:
        compiled = compile_mla_gluon(BLOCK_N=int(gluon_match.group(1)), LAZY_RESCALE=bool(gluon_match.group(2)))
    elif ws_match:
        compiled = compile_mla_gluon(ws=True, EARLY_QK=bool(ws_match.group(1)), P_REGS=bool(ws_match.group(2)))
    else:
        return None
    ptx = compiled.asm["ptx"]
    shapes = re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)", ptx)
    maxnreg = sorted(set(re.findall(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+)", ptx)))
    return {**ptxas_usage(ptx), "smem_kb": round(compiled.metadata.shared / 1024, 1),
            "wgmma": {shape: shapes.count(shape) for shape in sorted(set(shapes))},
            **({"setmaxnreg": [f"{op} {n}" for op, n in maxnreg]} if maxnreg else {})}


def ptxas_usage(ptx: str) -> dict:
    """Registers and spill bytes from `ptxas -v` (Triton's bundled ptxas) on the kernel's PTX."""
    ptxas = get_ptxas(90).path  # the ptxas Triton itself uses for sm_90 (3.9: ptxas-blackwell, CUDA 13)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.ptx")
        with open(path, "w") as fh:
            fh.write(ptx)
        log = subprocess.run([ptxas, "-arch=sm_90a", "-v", path, "-o", os.path.join(tmp, "k.cubin")],
                             capture_output=True, text=True, check=True).stderr
    regs = re.search(r"Used (\d+) registers", log)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    return {"regs": int(regs.group(1)) if regs else None,
            "spill_store_b": int(spills.group(1)) if spills else None,
            "spill_load_b": int(spills.group(2)) if spills else None}


def main() -> None:
    for arg in sys.argv[1:] or ["128x128w8s3", "128x128w8s3a16"]:
        if arg.startswith("mla-"):
            try:
                print(arg, compile_mla_one(arg) or ("not an MLA configuration (mla-64x32w8s3[c], mla-gluon-n64[l], "
                                                    "mla-gluon-ws[-e][-p])"), flush=True)
            except Exception as exc:  # a refusal is a result here
                print(arg, f"does not compile: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}", flush=True)
            continue
        match = PATTERN.match(arg)
        if not match:
            raise SystemExit(f"{arg}: expected BMxBNwWARPSsSTAGES[aROWS][y][-saDEPTH][-d64], e.g. 128x128w8s3a16")
        bm, bn, warps, stages, ahead = (int(g or 0) for g in match.groups()[:5])
        try:
            print(arg, compile_one(bm, bn, warps, stages, ahead, match.group(6) == "y", int(match.group(7) or 0),
                                   bool(match.group(8))), flush=True)
        except Exception as exc:  # a refusal (e.g. out of shared memory) is a result here
            print(arg, f"does not compile: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}", flush=True)


if __name__ == "__main__":
    main()
