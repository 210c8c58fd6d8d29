"""Compile the split-K GEMM kernels for an NVIDIA target without a GPU (Triton's bundled ptxas), to see before any
GPU time what a configuration emits (PTX) and allocates (shared memory; registers and spills with
scripts/compile_report_splitk.py).

Used by scripts/compile_report_splitk.py (the tuned configurations of the bench cases) and
tests/kernels/splitk_gemm/test_offline_compile.py.
Arguments are typed as the JIT specializes them on contiguous inputs: pointers and strides divisible by 16, unit
strides along K and N as the constant 1, and M = 1 as the constant 1 where the call has it.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from kernels.splitk_gemm.common import Problem, input_precision
from kernels.splitk_gemm.config import FamilyConfig
from kernels.splitk_gemm.family import REDUCE_KERNEL_MODES, plan_launch
from kernels.splitk_gemm.family_kernels import _splitk_kernel, _streamk_kernel

_TYPES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
_UNIT = {"stride_ak": 1, "stride_bk": 1, "stride_cn": 1}


def compile_config(config: FamilyConfig, m: int, n: int, k: int, dtype: torch.dtype, limits: Any,
                   capability: int = 90):
    """`triton.compile` of the main kernel `run_family(config)` launches for a contiguous (m, n, k) call of `dtype`
    on `limits`, for cuda:`capability`. Returns (CompiledKernel, LaunchPlan).

    Raises:
        Whatever Triton's compiler or ptxas raises for the configuration.
    """
    plan = plan_launch(config, Problem(m, n, k, dtype), limits)
    cfg = plan.config
    kernel = _streamk_kernel if plan.stream_k else _splitk_kernel
    consts: dict[str, Any] = dict(BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
                                  GROUP_M=cfg.group_m, PRECISION=input_precision(dtype), **_UNIT)
    if not plan.stream_k:
        consts.update(SPLIT_K=plan.splits, REDUCE=REDUCE_KERNEL_MODES[cfg.reduce_mode])
    if m == 1:
        consts["M"] = 1
    elem = _TYPES[dtype]
    sig = {}
    for name in kernel.arg_names:
        if name in consts:
            sig[name] = "constexpr"
        elif name in ("a_ptr", "b_ptr", "c_ptr"):
            sig[name] = f"*{elem}"
        else:
            sig[name] = {"ws_ptr": "*fp32", "counters": "*i32"}.get(name, "i32")
    sixteen = {"a_ptr", "b_ptr", "c_ptr", "ws_ptr", "counters", "stride_am", "stride_bn", "stride_cm", "N", "K"}
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(kernel.arg_names)
             if name in sixteen and sig[name] != "constexpr"}
    source = ASTSource(kernel, sig, constexprs=consts, attrs=attrs)
    compiled = triton.compile(source, target=GPUTarget("cuda", capability, 32),
                              options=dict(num_warps=cfg.num_warps, num_stages=cfg.num_stages))
    return compiled, plan
