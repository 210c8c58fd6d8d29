"""Host side of the Hopper Gluon MLA kernels: when they apply, their shared-memory budget, their tensor descriptors
and their launch. Used by `mla.run_mla` for ``FamilyConfig.mla`` in `GLUON_IMPLS`: ``"gluon"`` runs
`family_mla_gluon._mla_gluon_kernel` (two warpgroups side by side on every step; the ``"gluon_ahead*"`` values the
same kernel with the next tile's scores issued ahead, with P in the rope slot, lazy rescale or P . V in two column
halves: `GLUON_VARIANTS`), ``"gluon_ws"`` the warp-specialized `family_mla_ws._mla_ws_kernel` (a softmax warpgroup
and an output + copy warpgroup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import torch
import triton
from triton.experimental.gluon.language import NVMMASharedLayout, bfloat16, float16
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonDescriptor

from kernels.extend_attention.common import Problem
from kernels.extend_attention.family_mla_gluon import _mla_gluon_kernel
from kernels.extend_attention.family_mla_ws import OUTPUT_REGS, _mla_ws_kernel
from kernels.launch import launch

if TYPE_CHECKING:
    from kernels.extend_attention.family import ChipLimits, FamilyConfig

#: The kernels' fixed shape: 64 rows (one warpgroup MMA row block), two warpgroups, two key-tile buffers.
GLUON_BLOCK_M = 64
GLUON_WARPS = 8
GLUON_BUFFERS = 2


class GluonVariant(NamedTuple):
    """Switches of `family_mla_gluon._mla_gluon_kernel` that a `FamilyConfig.mla` value sets: SCORES_AHEAD,
    P_IN_ROPE (where the shapes allow it, `gluon_p_in_rope`), LAZY_RESCALE (on whatever `launch_gluon` is asked),
    SPLIT_PV and LOCAL_STATS."""

    ahead: bool = False
    p_in_rope: bool = False
    lazy: bool = False
    split_pv: bool = False
    local_stats: bool = False


#: The two-warpgroup kernel's variants per `FamilyConfig.mla` value. ``*_lazy``: the accumulator rescale skipped
#: while no row's max grew by more than 2^8 (no spills in the sm_90 compile, 249-255 registers, where the eager
#: scores-ahead variants spill); ``*_split``: P . V in two 256-column halves so half of the rescale runs beside the
#: tensor cores; ``*_lazy_local``: lazy rescale decided by one CTA-wide reduction per tile, the row max and sums
#: reduced within each warpgroup (no cross-warpgroup exchange on the common path).
GLUON_VARIANTS = {
    "gluon": GluonVariant(),
    "gluon_ahead": GluonVariant(ahead=True),
    "gluon_ahead_rope": GluonVariant(ahead=True, p_in_rope=True),
    "gluon_ahead_lazy": GluonVariant(ahead=True, lazy=True),
    "gluon_ahead_rope_lazy": GluonVariant(ahead=True, p_in_rope=True, lazy=True),
    "gluon_ahead_rope_split": GluonVariant(ahead=True, p_in_rope=True, split_pv=True),
    "gluon_ahead_rope_lazy_local": GluonVariant(ahead=True, p_in_rope=True, lazy=True, local_stats=True),
}
#: `FamilyConfig.mla` values that run a Gluon kernel.
GLUON_IMPLS = (*GLUON_VARIANTS, "gluon_ws")
#: The Gluon kernel that the tuned entry point's MLA branch (`tuned.class_config`) runs and the optimizer's ``mla``
#: knob offers (`family_space.KNOBS`): the fastest passing one of benchmarks/sweep_mla.py on the H200 (BENCHMARKS.md
#: "MLA path (issue 20)").
MLA_ROUTE = "gluon_ahead_rope_split"
#: Bytes of the kernels' mbarriers and of the compiler's cross-warpgroup reduction scratch beside the tiles.
_GLUON_EXTRA_BYTES = 3 * 8 + 512
_GL_DTYPES = {torch.bfloat16: bfloat16, torch.float16: float16}


def gluon_smem_kb(block_n: int, prob: Problem, impl: str = "gluon") -> float:
    """Shared memory of one program in KiB: Q [64, D_qk], two key tiles [BLOCK_N, D_qk] and P [64, BLOCK_N].
    ``"gluon"``: one P buffer, three mbarriers and 512 B of reduction scratch (sm_90 compile at BLOCK_N = 64 with
    triton 3.6 and 3.9: 229,912 B, this model the same); ``"gluon_ws"``: P in the rope slot of its key
    tile when the rope width equals BLOCK_N, else two P buffers, plus two [2, 64] fp32 vectors (rescale factors, row
    statistics), eight mbarriers and 512 B of slack (compile at BLOCK_N = 64: 222,500 B, this model 222,784 B);
    ``"gluon_ahead"`` and ``"gluon_ahead_lazy"`` as ``"gluon"`` (the next scores live in registers; the lazy
    rescale's cross-warp max fits the reduction scratch); the ``"gluon_ahead_rope*"`` values without the P
    buffer (P in the rope slot of its key tile, `gluon_p_in_rope`; compile with triton 3.9: 221,720 B, the model's
    bytes)."""
    elem = prob.dtype.itemsize
    tiles = elem * prob.head_dim * (GLUON_BLOCK_M + GLUON_BUFFERS * block_n)
    if impl == "gluon_ws":
        rope = prob.head_dim - prob.head_dim_v
        p_bufs = 0 if rope == block_n else GLUON_BUFFERS * elem * GLUON_BLOCK_M * block_n
        return (tiles + p_bufs + 2 * 2 * 4 * GLUON_BLOCK_M + 8 * 8 + 512) / 1024
    p_buf = 0 if gluon_p_in_rope(impl, block_n, prob) else elem * GLUON_BLOCK_M * block_n
    return (tiles + p_buf + _GLUON_EXTRA_BYTES) / 1024


def gluon_p_in_rope(impl: str, block_n: int, prob: Problem) -> bool:
    """Whether the two-warpgroup kernel of `impl` writes P [64, BLOCK_N] over its key tile's rope part [BLOCK_N,
    DPE]: the variant asks for it (`GLUON_VARIANTS`) and the shapes match (DPE == BLOCK_N); otherwise P gets its
    own buffer."""
    variant = GLUON_VARIANTS.get(impl, GluonVariant())
    return variant.ahead and variant.p_in_rope and prob.head_dim - prob.head_dim_v == block_n


def gluon_registers(impl: str, block_n: int, prob: Problem) -> int:
    """fp32 accumulator registers per thread that the Gluon kernel of `impl` keeps live in its key loop (8 warps:
    the 64 x D_v output accumulator and the 64 x BLOCK_N scores spread over 256 threads; with scores ahead a second
    score tile is in flight while P and the output accumulator are live; ``"gluon_ws"``: the softmax warpgroup's
    half of the output (64 x D_v / 2 over 128 threads), its score tile and the next one (early scores, the
    default)). Lazy rescale and P . V halves keep the same accumulators. The compiler adds addresses, P's bf16
    registers and loop state (sm_90 compiles with triton 3.9 at the bench shape: 214 registers for ``"gluon"``; 255
    and 84-100 bytes of spills for ``"gluon_ahead"`` / ``"gluon_ahead_rope"`` / ``"gluon_ahead_rope_split"``; 249-255
    and none for the lazy ones); the hardware limit is 255 per thread and 65,536 per SM (NVIDIA Hopper tuning guide)."""
    rows = GLUON_BLOCK_M
    if impl == "gluon_ws":
        return rows * prob.head_dim_v // 2 // 128 + 2 * rows * block_n // 128
    scores = rows * block_n // 256
    ahead = GLUON_VARIANTS.get(impl, GluonVariant()).ahead
    return rows * prob.head_dim_v // 256 + scores * (2 if ahead else 1)


def _on_hopper(device: torch.device) -> bool:
    """An NVIDIA GPU of compute capability 9.x (warpgroup MMA is sm_90a only), by Triton's own target query."""
    if device.type != "cuda" or torch.version.hip is not None:
        return False
    target = triton.runtime.driver.active.get_current_target()
    return target.backend == "cuda" and target.arch // 10 == 9


def _rows_2d(t: torch.Tensor) -> tuple[list[int], list[int]] | None:
    """(shape, strides) of the 2-D view [rows * heads, width] of a [rows, heads, width] tensor whose heads are
    contiguous, or None; TMA needs 16-byte aligned rows and base."""
    rows, heads, width = t.shape
    if t.stride(2) != 1 or (heads > 1 and t.stride(1) != width) or t.data_ptr() % 16:
        return None
    if heads > 1 and t.stride(0) != heads * width:
        return None
    row_stride = width if heads > 1 else t.stride(0)
    if row_stride * t.dtype.itemsize % 16:
        return None
    return [rows * heads, width], [row_stride, 1]


def gluon_applies(config: FamilyConfig, prob: Problem, q_extend: torch.Tensor, k_extend: torch.Tensor,
                  limits: ChipLimits) -> bool:
    """Whether the Gluon kernel of ``config.mla`` (`GLUON_IMPLS`) runs the call: a Hopper GPU, fp16/bf16, one KV head,
    latent width <= 512 (256 output columns per warpgroup), BLOCK_N in 16..64 (``"gluon_ws"``: 64, the softmax
    warpgroup's N), Q and k_extend viewable as TMA row tensors, and the footprint (`gluon_smem_kb`) within
    ``limits.smem_per_block_kb``. Otherwise `mla.run_mla` runs the Triton kernel."""
    block_ok = config.block_n == 64 if config.mla == "gluon_ws" else 16 <= config.block_n <= 64
    return (config.mla in GLUON_IMPLS and _on_hopper(q_extend.device) and prob.dtype in _GL_DTYPES
            and prob.num_kv_heads == 1 and prob.head_dim_v <= 512 and block_ok
            and gluon_smem_kb(config.block_n, prob, config.mla) <= limits.smem_per_block_kb
            and _rows_2d(q_extend) is not None and _rows_2d(k_extend) is not None)


def _descriptors(t: torch.Tensor, rows: int, d: int, dpe: int) -> tuple[GluonDescriptor, GluonDescriptor]:
    """(latent [rows, D], rope [rows, DPE]) block descriptors over the 2-D row view of `t` (`_rows_2d`)."""
    shape, strides = _rows_2d(t)
    dtype = _GL_DTYPES[t.dtype]
    return tuple(GluonDescriptor(t, shape, strides, [rows, w], NVMMASharedLayout.get_default_for([rows, w], dtype))
                 for w in (d, dpe))


def launch_gluon(config: FamilyConfig, prob: Problem, dims: tuple[int, int], splits: int, q_extend, k_extend, k_pre,
                 o_extend, qo_indptr, kv_indptr, sinks, mid_o, mid_l, scale: float, scale_pre: float, v_scale: float,
                 logit_cap: float, is_causal: bool, log2e: float, lazy_rescale: bool = False,
                 early_qk: bool = True, p_regs: bool = True) -> None:
    """Launch the Gluon kernel of ``config.mla`` over (row blocks, splits); `k_pre` is the pre-gathered prefix
    [ΣP, 1, D_qk] (zeros past kv_indptr[B]) or None without a prefix. Arguments as `mla.run_mla` computes them;
    `lazy_rescale` applies to the two-warpgroup kernel (the ``*_lazy*`` values set it themselves), `early_qk` and
    `p_regs` to ``"gluon_ws"``."""
    d, dpe = dims
    block_n = config.block_n
    q_descs = _descriptors(q_extend, GLUON_BLOCK_M, d, dpe)
    ext_descs = _descriptors(k_extend, block_n, d, dpe)
    pre_descs = _descriptors(k_pre, block_n, d, dpe) if k_pre is not None and k_pre.shape[0] else ext_descs
    row_blocks = triton.cdiv(prob.total_extend * prob.group, GLUON_BLOCK_M) + prob.batch
    args = (*q_descs, *ext_descs, *pre_descs, o_extend, qo_indptr, kv_indptr, sinks if sinks is not None else qo_indptr,
            mid_o, mid_l, scale * log2e, scale_pre * log2e, scale, scale_pre, v_scale, prob.batch,
            o_extend.stride(0), o_extend.stride(1), mid_o.stride(0), mid_o.stride(1), mid_o.stride(2),
            mid_l.stride(0), mid_l.stride(1))
    consts = dict(D=d, DPE=dpe, GROUP=prob.group, BLOCK_M=GLUON_BLOCK_M, BLOCK_N=block_n, NUM_SPLITS=splits,
                  LOGIT_CAP=float(logit_cap), IS_CAUSAL=is_causal, HAS_SINK=sinks is not None,
                  HEAVY_FIRST=config.heavy_first and is_causal, SCALE_V=v_scale != 1.0)
    if config.mla == "gluon_ws":  # 4 warps here, 4 more in the worker partition
        warps = GLUON_WARPS // 2
        launch(_mla_ws_kernel, (row_blocks, splits),
            *args, BLOCK_B=max(32 * warps, triton.next_power_of_2(prob.batch + 1)), EARLY_QK=early_qk,
            P_REGS=p_regs, OUTPUT_NUM_REGS=OUTPUT_REGS, num_warps=warps, **consts)
    else:
        variant = GLUON_VARIANTS[config.mla]
        launch(_mla_gluon_kernel, (row_blocks, splits),
            *args, BLOCK_B=max(32 * GLUON_WARPS, triton.next_power_of_2(prob.batch + 1)),
            LAZY_RESCALE=lazy_rescale or variant.lazy, SCORES_AHEAD=variant.ahead,
            P_IN_ROPE=gluon_p_in_rope(config.mla, block_n, prob), SPLIT_PV=variant.split_pv,
            LOCAL_STATS=variant.local_stats,
            num_warps=GLUON_WARPS, **consts)
