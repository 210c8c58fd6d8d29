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
    STORE_LSE=False, SKIP_PREFIX=False, SKIP_EXTEND=False,
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
