"""Does Triton's automatic warp specialization (`tl.range(..., warp_specialize=True)`) compile an attention loop for
Hopper (sm_90)? Compiles, without a GPU, a minimal FlashAttention-style loop (TMA K/V tiles, QK^T, online softmax,
PV) for target cuda:90 at several (num_warps, num_stages) and reports whether the TTGIR holds a
`ttg.warp_specialize` op, or the compiler's failure. Each compile runs in its own process: the Hopper pass fails
with a C++ assertion that aborts the process.

    pip install triton==3.6.0   # the GPU machine's version, in a separate venv
    python scripts/probe_hopper_ws.py

Session 6 (2026-11-30), triton 3.6.0 (and 3.9.0, the CPU venv, alike): num_warps 4 -> the pass runs and aborts
(WSLowerToken.cpp:73, processProducerCommitOp, `Assertion false`) with host descriptors, in-kernel descriptors
and pointer loads alike;
num_warps 8 -> compiles with no warp_specialize op (the pass leaves the loop alone). On the H200 the family with the
request ran within 0.3 % of without it on every compute-bound case (BENCHMARKS.md, session 6, sweep 6).
"""

from __future__ import annotations

import subprocess
import sys

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def _attention_loop(Q, k_desc, v_desc, O, n_keys, qk_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    D: tl.constexpr, WS: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + offs_m[:, None] * D + offs_d[None, :])
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    m_i = tl.zeros([BLOCK_M], tl.float32) - 1e30
    for start in tl.range(0, n_keys, BLOCK_N, warp_specialize=WS):
        k = k_desc.load([start, 0])
        v = v_desc.load([start, 0])
        qk = tl.dot(q, tl.trans(k))
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.exp2(qk * qk_scale - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(tl.bfloat16), v, acc)
        m_i = m_new
    tl.store(O + offs_m[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(tl.bfloat16))


def compile_once(num_warps: int, num_stages: int, ws: bool) -> str:
    """One sm_90 compile; returns a one-line result."""
    desc = "tensordesc<bf16[128, 128]>"
    sig = {"Q": "*bf16", "k_desc": desc, "v_desc": desc, "O": "*bf16", "n_keys": "i32", "qk_scale": "fp32",
           "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "D": "constexpr", "WS": "constexpr"}
    src = ASTSource(_attention_loop, sig, {(6,): 128, (7,): 128, (8,): 128, (9,): ws})
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": num_warps, "num_stages": num_stages})
    return f"compiled, ttg.warp_specialize ops: {kernel.asm['ttgir'].count('ttg.warp_specialize')}"


def main() -> None:
    if len(sys.argv) == 4:  # child: one compile
        print(compile_once(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"))
        return
    print(f"triton {triton.__version__}, target cuda:90")
    for warps, stages, ws in [(4, 2, 0), (4, 2, 1), (4, 3, 1), (8, 2, 1), (8, 3, 1)]:
        run = subprocess.run([sys.executable, __file__, str(warps), str(stages), str(ws)], capture_output=True,
                             text=True, timeout=300)
        lines = (run.stdout + run.stderr).splitlines()
        result = next((ln for ln in lines if ln.startswith("compiled")), None)
        if result is None:
            result = "FAILED: " + next((ln.strip() for ln in lines if "Assertion" in ln or "error" in ln),
                                       lines[-1] if lines else f"exit {run.returncode}")[:200]
        print(f"num_warps={warps} num_stages={stages} warp_specialize={bool(ws)}: {result}")


if __name__ == "__main__":
    main()
