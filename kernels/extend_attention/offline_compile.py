"""Compile the family kernel for an NVIDIA target without a GPU (Triton's bundled ptxas), for checks that need
no device: which instructions a configuration emits (TMA copies, fences, atomics) and what it allocates.

Used by `tests/kernels/test_tma_compile.py` and `scripts/compile_report_sm90.py`; the one place that knows the
kernel's argument types, so a change of its signature is made here once.
"""

from __future__ import annotations

from typing import Any

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from kernels.extend_attention.family_kernels import _family_fwd_kernel

#: Constexprs of a causal bf16 call, D = 128, pack GQA (G = 4), pre-gathered prefix through TMA, one split.
DEFAULT_CONSTS: dict[str, Any] = dict(
    LQ=128, LV=128, BLOCK_D=128, BLOCK_DPE=0, BLOCK_DV=128, BLOCK_M=128, BLOCK_N=128, BLOCK_B=32, GROUP=4, PACK=4,
    NUM_SPLITS=1, WINDOW=-1, LOGIT_CAP=0.0, IS_CAUSAL=True, USE_MASK=False, SKIP_PREFIX_MASK=True, HAS_SINK=False,
    V_IS_K=False, HEAVY_FIRST=True, FOLD_SCALE=True, GATHER_STAGES=0, PREFIX_CONTIG=True, TMA_EXT=True,
    TMA_PREFIX=True, AHEAD_ROWS=0, AHEAD_HEADS=1, AHEAD_SYNC=False, PROXY_FENCE=False, V_SCALED=False,
    STORE_LSE=False, SKIP_PREFIX=False, SKIP_EXTEND=False, SCORES_AHEAD=False, HEADS_INNER=False,
)
_SCALARS = {"qk_scale": "fp32", "sm_scale": "fp32", "k_scale": "fp32", "v_scale": "fp32", "batch": "i32",
            "head_base": "i32", "num_heads": "i32", "grid_blocks": "i32"}
_POINTERS = {"qo_indptr": "*i32", "kv_indptr": "*i32", "kv_indices": "*i64", "mask_ptr": "*i32",
             "mask_indptr": "*i32", "mask_offsets_ptr": "*i32", "sinks_ptr": "*i32", "Mid_O": "*fp32",
             "Mid_L": "*fp32", "ahead_cnt": "*i32", "LSE": "*fp32"}
_DESCRIPTORS = ("K_ext_desc", "V_ext_desc", "K_buf_desc", "V_buf_desc")


def compile_family(dtype: str = "bf16", capability: int = 90, num_warps: int = 8, num_stages: int = 3,
                   **consts: Any):
    """`triton.compile` of `_family_fwd_kernel` for cuda:`capability` with `DEFAULT_CONSTS` updated by `consts`.

    dtype: "bf16" / "fp16" / "fp32" of q, k, v, o and the caches. Descriptors get block [BLOCK_N, BLOCK_D].
    Pointers and strides are marked 16-divisible, as JIT specialization gives on aligned inputs.
    Returns the CompiledKernel (``.asm["ptx"]``, ``.asm["cubin"]``, ``.metadata.shared`` in bytes).

    Raises:
        Whatever Triton's compiler or ptxas raises for the configuration (e.g. an instruction the target lacks).
    """
    values = {**DEFAULT_CONSTS, **consts}
    desc = f"tensordesc<{dtype}[{values['BLOCK_N']}, {values['BLOCK_D']}]>"
    sig = {}
    for name in _family_fwd_kernel.arg_names:
        if name in values:
            sig[name] = "constexpr"
        elif name in _DESCRIPTORS:
            sig[name] = desc
        else:
            sig[name] = _SCALARS.get(name) or _POINTERS.get(name) or ("i32" if name.startswith("stride")
                                                                      else f"*{dtype}")
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(_family_fwd_kernel.arg_names)
             if sig[name].startswith("*") or name.startswith("stride")}
    source = ASTSource(_family_fwd_kernel, sig, constexprs=values, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", capability, 32),
                          options=dict(num_warps=num_warps, num_stages=num_stages))


def groups_in_flight_at_exp(ptx: str) -> int:
    """The most committed, not yet waited-for wgmma groups at any ``ex2`` of `ptx` (``wgmma.wait_group N`` leaves
    N pending; PTX ISA, "Asynchronous Warpgroup Level Matrix Instructions"): 0 when no exponential runs under a
    tensor-core dot (the plain key loop), 1 or 2 with the scores-ahead loop (`FamilyConfig.scores_ahead`)."""
    most, pending = 0, 0
    for line in ptx.splitlines():
        op = line.strip()
        if op.startswith("wgmma.commit_group"):
            pending += 1
        elif op.startswith("wgmma.wait_group"):
            pending = min(pending, int(op.split()[-1].rstrip(";")))
        elif op.startswith("ex2.approx"):
            most = max(most, pending)
    return most


#: Constexprs of the MLA bench call (`mla.run_mla`): bf16 576/512, 16 q heads on one KV head, causal, pre-gathered
#: prefix and extend keys through TMA, one split (the union of both MLA kernels' constexprs; each takes its own).
MLA_CONSTS: dict[str, Any] = dict(
    D=512, DPE=64, GROUP=16, BLOCK_M=64, BLOCK_N=64, BLOCK_B=256, NUM_SPLITS=1, LOGIT_CAP=0.0, IS_CAUSAL=True,
    HAS_SINK=False, HEAVY_FIRST=True, SCALE_V=False, SPLIT_QK=True, LAZY_RESCALE=False, PREFIX_CONTIG=True,
    TMA_EXT=True, TMA_PREFIX=True, EARLY_QK=True, P_REGS=True, SCORES_AHEAD=False, P_IN_ROPE=False, SPLIT_PV=False,
    LOCAL_STATS=False,
)
_MLA_SCALARS = {"qk_scale": "fp32", "qk_scale_pre": "fp32", "sm_scale": "fp32", "sm_scale_pre": "fp32",
                "cap_scale": "fp32", "cap_scale_pre": "fp32",
                "v_scale": "fp32", "batch": "i32", "one": "i32"}
_MLA_POINTERS = {"qo_indptr": "*i32", "kv_indptr": "*i32", "kv_indices": "*i64", "sinks_ptr": "*fp32",
                 "Mid_O": "*fp32", "Mid_L": "*fp32"}


def compile_mla(dtype: str = "bf16", capability: int = 90, num_warps: int = 8, num_stages: int = 2, **consts: Any):
    """`triton.compile` of `family_mla._mla_fwd_kernel` for cuda:`capability` with `MLA_CONSTS` updated by `consts`.

    Descriptors get blocks [BLOCK_N, D] (latent) and [BLOCK_N, DPE] (rope); pointers and strides are marked
    16-divisible, as JIT specialization gives on aligned inputs; `one` stays a runtime i32 (do_not_specialize).
    Returns the CompiledKernel (``.asm["ttgir"]``, ``.asm["ptx"]``, ``.metadata.shared`` in bytes).

    Raises:
        Whatever Triton's compiler or ptxas raises for the configuration.
    """
    from kernels.extend_attention.family_mla import _mla_fwd_kernel

    values = {k: v for k, v in {**MLA_CONSTS, **consts}.items() if k in _mla_fwd_kernel.arg_names}
    blocks = {"Kn": values["D"], "Kr": values["DPE"]}
    sig = {}
    for name in _mla_fwd_kernel.arg_names:
        if name in values:
            sig[name] = "constexpr"
        elif name.endswith("_desc"):
            sig[name] = f"tensordesc<{dtype}[{values['BLOCK_N']}, {blocks[name[:2]]}]>"
        else:
            sig[name] = (_MLA_SCALARS.get(name) or _MLA_POINTERS.get(name)
                         or ("i32" if name.startswith("stride") else f"*{dtype}"))
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(_mla_fwd_kernel.arg_names)
             if sig[name].startswith("*") or name.startswith("stride")}
    source = ASTSource(_mla_fwd_kernel, sig, constexprs=values, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", capability, 32),
                          options=dict(num_warps=num_warps, num_stages=num_stages))


def compile_mla_gluon(dtype: str = "bf16", capability: int = 90, ws: bool = False, **consts: Any):
    """`triton.compile` of a Gluon MLA kernel for cuda:`capability`: `family_mla_gluon._mla_gluon_kernel` (8 warps)
    or, with `ws`, the warp-specialized `family_mla_ws._mla_ws_kernel` (4 warps + a 4-warp worker partition), with
    `MLA_CONSTS` (those the kernel has) updated by `consts`; descriptors get the NVMMA shared layouts that
    `mla_gluon._descriptors` gives them (blocks [BLOCK_M or BLOCK_N, D] and [.., DPE]).

    Raises:
        Whatever Triton's compiler or ptxas raises for the configuration.
    """
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.experimental.gluon.language import NVMMASharedLayout

    if ws:
        from kernels.extend_attention.family_mla_ws import OUTPUT_REGS
        from kernels.extend_attention.family_mla_ws import _mla_ws_kernel as kernel
        consts = {"OUTPUT_NUM_REGS": OUTPUT_REGS, "BLOCK_B": 128, **consts}
    else:
        from kernels.extend_attention.family_mla_gluon import _mla_gluon_kernel as kernel

    names = kernel.arg_names
    values = {k: v for k, v in {**MLA_CONSTS, **consts}.items() if k in names}
    widths = {"n": values["D"], "r": values["DPE"]}
    sig = {}
    for name in names:
        if name in values:
            sig[name] = "constexpr"
        elif name.endswith("_desc"):
            rows = values["BLOCK_M"] if name.startswith("q") else values["BLOCK_N"]
            layout = NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16 if dtype != "fp32" else 32)
            sig[name] = f"tensordesc<{dtype}[{rows}, {widths[name[1]]}],{layout!r}>"
        else:
            sig[name] = (_MLA_SCALARS.get(name) or _MLA_POINTERS.get(name)
                         or ("i32" if name.startswith("stride") else f"*{dtype}"))
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(names)
             if sig[name].startswith("*") or name.startswith("stride")}
    source = GluonASTSource(kernel, sig, constexprs=values, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", capability, 32), options=dict(num_warps=4 if ws else 8))
