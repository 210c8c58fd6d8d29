"""Compile the split-K GEMM kernels for an NVIDIA target without a GPU (Triton's bundled ptxas), to see before any
GPU time what a configuration emits (PTX) and allocates (shared memory; registers and spills with
scripts/compile_report_splitk.py).

Used by scripts/compile_report_splitk.py (the tuned configurations of the bench cases) and
tests/kernels/splitk_gemm/test_offline_compile.py.
Arguments are typed as the JIT specializes them on contiguous inputs: pointers and strides divisible by 16, unit
strides along K and N as the constant 1, and M = 1 as the constant 1 where the call has it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from kernels.splitk_gemm.common import Problem, input_precision
from kernels.splitk_gemm.config import FamilyConfig
from kernels.splitk_gemm.family import REDUCE_KERNEL_MODES, plan_launch
from kernels.splitk_gemm.family_kernels import REDUCE_UNROLL, _splitk_kernel, _streamk_kernel

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
                                  GROUP_M=cfg.group_m, PRECISION=input_precision(dtype), GEMV=cfg.gemv,
                                  STAGES=cfg.num_stages, EVICT_B=cfg.evict_weights, **_UNIT)
    if not plan.stream_k:
        consts.update(SPLIT_K=plan.splits, REDUCE=REDUCE_KERNEL_MODES[cfg.reduce_mode], UNROLL=REDUCE_UNROLL)
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


#: TTGIR operations that access global memory through their first pointer operand: name -> writes?
_MEMORY_OPS = {"tt.load": False, "ttg.async_copy_global_to_local": False, "tt.store": True, "tt.atomic_rmw": True,
               "tt.atomic_cas": True}
#: Operations whose result points into the same buffer as their first operand.
_POINTER_OPS = ("tt.splat", "tt.addptr", "tt.broadcast", "tt.expand_dims", "ttg.convert_layout", "tt.reshape")
_STATEMENT = re.compile(r"^\s*(?:(%[\w.]+)(?::\d+)? = )?([\w.]+) (.*)$")
_OPERAND = re.compile(r"%[\w.]+")
#: A CTA barrier that orders global memory: ``gpu.barrier`` (Triton 3.6), ``ttg.barrier all|global`` (3.9).
_BARRIER = re.compile(r"^\s*(gpu\.barrier\b|ttg\.barrier\b.*\b(all|global)\b)")


@dataclass(frozen=True)
class Access:
    """One global-memory operation of a compiled kernel: TTGIR line number, operation, pointer value, writes?"""

    line: int
    op: str
    pointer: str
    writes: bool


def unordered_accesses(ttgir: str, buffer: str) -> list[tuple[Access, Access]]:
    """Pairs of accesses to kernel argument `buffer` (e.g. ``"ws_ptr"``) that threads of one program may perform in
    either order: at least one writes, they go through different pointer values, and no ``gpu.barrier`` lies
    between them in program text (`_BARRIER`).

    Triton gives every pointer tensor its own layout (which thread holds which element); only the same pointer
    value guarantees that one thread touches an address in both operations, where program order holds. Two
    pointer values of one buffer may put an address in two threads, and without a CTA barrier the write of one
    thread can be performed before or after the other's access (PTX memory model: no order between threads
    without synchronization). A store of zeros after a load of the same elements in another layout, with no
    barrier between, loses values the load had not read yet.

    Straight-line analysis over the program text: accesses in different loop iterations, and barriers in
    branches, are not modeled. Returns (earlier, later) pairs in text order; empty when none.
    """
    derived = {f"%{buffer}"}
    pending: list[Access] = []
    pairs: list[tuple[Access, Access]] = []
    for number, text in enumerate(ttgir.splitlines(), 1):
        if _BARRIER.match(text):
            pending.clear()
            continue
        match = _STATEMENT.match(text)
        if match is None:
            continue
        result, op, rest = match.groups()
        operands = _OPERAND.findall(rest.split(" : ")[0])
        if op in _POINTER_OPS and result and operands and operands[0] in derived:
            derived |= {result}
        elif op in _MEMORY_OPS:
            pointer = next((o for o in operands if o in derived), None)
            if pointer is None:
                continue
            access = Access(number, op, pointer, _MEMORY_OPS[op])
            pairs += [(p, access) for p in pending if p.pointer != pointer and (p.writes or access.writes)]
            pending.append(access)
    return pairs
