"""Dedicated path for absorbed MLA (DeepSeek-style): D_qk = 576 = 512 latent + 64 rope, D_v = 512 with V a view
of K's first 512 columns (``v_buffer = k_buffer[..., :512]``), one KV head shared by every q head.

`run_mla` runs `family_mla._mla_fwd_kernel` (`FamilyConfig.mla = "triton"`) or, on Hopper, one of the Gluon kernels
(`gluon_applies`, else the Triton one): `family_mla_ws._mla_ws_kernel` (``"gluon_ws"``, warp-specialized: a softmax
warpgroup with the whole 64 x 64 score tile and an output + copy warpgroup, mbarriers only) or
`family_mla_gluon._mla_gluon_kernel` (``"gluon"``: both warpgroups on halves of every step; ``"gluon_ahead"`` and
``"gluon_ahead_rope"`` and the other ``"gluon_ahead*"`` values: the same with the next tile's scores issued behind
P . V, with P in the key tile's rope slot, lazy rescale, P . V halves or warpgroup-local row statistics,
`mla_gluon.GLUON_VARIANTS`). All of them: all
G = H_q / H_kv q heads of a token block in one program (BLOCK_M = 64 rows = 4 tokens x 16 heads fills the tensor
cores' M), each key tile loaded once for the scores (latent and rope parts) and for P . V (its latent part), through
TMA descriptors for the extend keys and the pre-gathered prefix, split-KV over the prefix when the row blocks
underfill the chip.

Arithmetic of the bench case (kernels/extend_attention/cases.py ``mla``: E = 512, P = 8192, B = 4, H_q/H_kv = 16/1,
bf16; formulas of shared/reference/extend_attention.md, "Roofline floor"; H200 peaks 989 TFLOP/s, 4.8 TB/s):
- visible pairs per q head: N_i = E P + E (E + 1) / 2 = 4,325,632; FLOPs = 2 H_q (576 + 512) Σ N_i = 6.02e11;
- compulsory bytes = 2 [ΣE (H_q 576 + H_q 512 + 576) + ΣP 576] + 8 ΣP = 1.12e8;
- floor = max(609 us compute, 23 us memory) = 609 us; intensity 5.4e3 FLOP/byte (G E = 8192 for the prefix
  part), 26x the ridge point (206): compute-bound. 50 % of the floor is 1218 us, 495 TFLOP/s sustained.
Resource budget of one program (BLOCK_M = 64):
- the fp32 accumulator 64 x 512 is 128 KiB, half of a Hopper SM's register file: two warpgroups of 128 registers
  per thread for it, one program per SM;
- shared memory: Q 64 x 576 bf16 = 72 KiB, loaded once; a key tile is BLOCK_N x 1152 bytes (64 keys: 72 KiB,
  32 keys: 36 KiB) per pipeline stage, so Q + 2 x 72 KiB = 216 KiB or Q + 3 x 36 KiB = 180 KiB, within the
  H200's 227 KiB per block (`mla_smem_kb`, `fit_mla`, `mla_gluon.gluon_smem_kb`);
- per 64-key tile: 8.9 MFLOP = 2176 cycles at the SM's 4096 FLOP/cycle. A warpgroup MMA step m64nNk16 with both
  operands in shared memory reads (2 + N / 32) KiB for 64 N 16 MACs: at N = 64 that is the 128 B/cycle shared memory
  delivers while the tensor cores compute, at N = 32 (scores split over two warpgroups) 1.5x more than it delivers;
  FlashInfer's and FlashMLA's Hopper MLA kernels give each score tile [64, 64] to one warpgroup;
- L2 -> SM traffic: ΣE / 4 programs x 8448 keys x 1152 B = 5.0 GB, 4.1 TB/s at 1218 us (the cache of the four
  sequences, 38 MB, stays in the 60 MB L2); 512 programs = 3.9 waves of 132 SMs, so split-KV does not shorten the
  schedule (`mla_splits` keeps 1); the causal diagonal is < 1 % of the pairs, the pre-gather ~20 us (2 x 38 MB).
Measured on the H200 (BENCHMARKS.md "MLA path (issue 20)"): the Triton kernel reaches 25 % of the floor (Triton
3.6's pipeliner issues a tile's loads after the previous tile's dots, so loads overlap compute only with 3+
buffers, which 64-key tiles do not fit), the side-by-side Gluon kernel 41 % (its sm_90 SASS has 13 CTA-wide
barriers per key tile: the cross-warpgroup row max and sum, and one around every TMA issue), FlashInfer 63 %.
"""


from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from kernels.extend_attention.common import (
    FLOAT32_TILE_CAP,
    Problem,
    chip_has_tma,
    describable_rows,
    head_dim_blocks,
    resolve_sm_scale,
    v_is_view_of_k,
)
from kernels.extend_attention.family_kernels import _merge_kernel, merge_grid
from kernels.extend_attention.family_mla import LOG2E, _mla_fwd_kernel
from kernels.extend_attention.mla_gluon import GLUON_BLOCK_M, GLUON_IMPLS, GLUON_WARPS, gluon_applies, launch_gluon
from kernels.extend_attention.prefix_gather import gather_prefix
from kernels.extend_attention.splits import MLA_MIN_SPLIT_KEYS, wave_split_factor
from kernels.extend_attention.workspace import get_workspace
from kernels.launch import launch

if TYPE_CHECKING:
    from kernels.extend_attention.family import ChipLimits, FamilyConfig

#: Implementations `FamilyConfig.mla` selects: the generic family, the dedicated Triton kernel, or one of the dedicated
#: Gluon kernels for Hopper (`mla_gluon.GLUON_IMPLS`; they fall back to the Triton one where `gluon_applies` says no).
MLA_IMPLS = ("off", "triton", *GLUON_IMPLS)

#: Registers per thread the fp32 accumulator may take (half of the 255 a thread can address): BLOCK_M x D_v fp32
#: over num_warps x warp_size threads; so 8 warps for 64 x 512.
ACC_REGS_PER_THREAD = 128

#: Shared memory Triton allocates beyond Q and the key-tile stages: two fp32 score tiles (layout conversion of the
#: scores, sm_90 compiles with triton 3.6: 64x64 tiles 258,064 B, 64x32 tiles 204,824 B) and 4 KiB of barriers.
SCORE_BUFFERS = 2
SMEM_SLACK_BYTES = 4096


def mla_dims(prob: Problem) -> tuple[int, int] | None:
    """(D, DPE) = (latent width, rope width) when `prob` has MLA head dims (D_qk = D_v + rope, both parts powers of
    two: 576 = 512 + 64, `common.head_dim_blocks`), else None."""
    block_d, block_dpe, block_dv = head_dim_blocks(prob.head_dim, prob.head_dim_v)
    if block_dpe == 0 or block_d != prob.head_dim_v or block_dv != block_d or block_d + block_dpe != prob.head_dim:
        return None
    return block_d, block_dpe


def mla_applies(prob: Problem, v_is_k: bool, custom_mask: Any, sliding_window_size: int | None) -> bool:
    """Whether the dedicated kernel runs this call: MLA head dims (`mla_dims`), V a view of K in the cache and in
    the extend part, no custom mask and no sliding window (the generic family keeps those)."""
    window = sliding_window_size is not None and sliding_window_size > 0
    return mla_dims(prob) is not None and v_is_k and custom_mask is None and not window


def mla_smem_kb(block_m: int, block_n: int, stages: int, prob: Problem) -> float:
    """Shared memory of one program in KiB: Q [BLOCK_M, D_qk] once, `stages` key tiles [BLOCK_N, D_qk], the score
    buffers (`SCORE_BUFFERS` fp32 [BLOCK_M, BLOCK_N]) and `SMEM_SLACK_BYTES`."""
    elem = prob.dtype.itemsize
    tiles = elem * prob.head_dim * (block_m + stages * block_n)
    return (tiles + SCORE_BUFFERS * 4 * block_m * block_n + SMEM_SLACK_BYTES) / 1024


def min_warps(block_m: int, head_dim_v: int, warp_size: int) -> int:
    """Fewest warps that keep the BLOCK_M x D_v fp32 accumulator within `ACC_REGS_PER_THREAD` per thread."""
    return max(1, math.ceil(block_m * head_dim_v / (ACC_REGS_PER_THREAD * warp_size)))


def fit_mla(config: FamilyConfig, prob: Problem, limits: ChipLimits) -> FamilyConfig:
    """`config` fitted to the chip: float32 tiles capped at `FLOAT32_TILE_CAP`; num_warps raised to `min_warps`;
    then num_stages, BLOCK_N and BLOCK_M lowered (in that order, stages not below 2) until `mla_smem_kb` fits
    ``limits.smem_per_block_kb`` and the warps fit ``limits.max_threads_per_block``.

    Raises:
        ValueError: nothing fits (the chip's shared memory is below a 16 x 16 tile).
    """
    if prob.dtype == torch.float32:
        cap_m, cap_n, cap_stages = FLOAT32_TILE_CAP
        config = replace(config, block_m=min(config.block_m, cap_m), block_n=min(config.block_n, cap_n),
                         num_stages=min(config.num_stages, cap_stages))
    max_warps = max(1, limits.max_threads_per_block // limits.warp_size)
    while True:
        warps = max(config.num_warps, min_warps(config.block_m, prob.head_dim_v, limits.warp_size))
        smem = mla_smem_kb(config.block_m, config.block_n, config.num_stages, prob)
        if warps <= max_warps and smem <= limits.smem_per_block_kb:
            return replace(config, num_warps=warps)
        if config.num_stages > 2 and warps <= max_warps:
            config = replace(config, num_stages=config.num_stages - 1)
        elif config.block_n > 16 and warps <= max_warps:
            config = replace(config, block_n=config.block_n // 2)
        elif config.block_m > 16:
            config = replace(config, block_m=config.block_m // 2)
        else:
            raise ValueError(f"MLA: no tile fits {limits.smem_per_block_kb} KiB of shared memory and "
                             f"{limits.max_threads_per_block} threads per block ({prob.dtype}, D_qk={prob.head_dim})")


def mla_splits(prob: Problem, block_m: int, limits: ChipLimits, max_splits: int = 32,
               min_keys: int = MLA_MIN_SPLIT_KEYS) -> int:
    """Split-KV factor of the MLA kernel: `splits.wave_split_factor` (one program per SM, `fit_mla`) for its
    B x H_kv x cdiv(ΣE G / B, BLOCK_M) programs. Metadata only."""
    if prob.total_prefix == 0 or prob.batch == 0:
        return 1
    rows_per_seq = max(1, prob.total_extend * prob.group // prob.batch)
    programs = prob.batch * prob.num_kv_heads * math.ceil(rows_per_seq / block_m)
    return wave_split_factor(programs, limits.num_compute_units, prob.total_prefix // prob.batch, max_splits,
                             min_keys)


def _key_descriptors(t: torch.Tensor, d: int, dpe: int, block_n: int) -> tuple[TensorDescriptor, TensorDescriptor]:
    """(latent, rope) descriptors of a 2-D [rows, H_kv * D_qk] view of `t` [rows, H_kv, D_qk]: boxes [BLOCK_N, D]
    and [BLOCK_N, DPE]."""
    shape, strides = [t.shape[0], t.shape[1] * t.shape[2]], [t.stride(0), 1]
    return (TensorDescriptor(t, shape, strides, [block_n, d]), TensorDescriptor(t, shape, strides, [block_n, dpe]))


def run_mla(config: FamilyConfig, q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
            kv_indices, is_causal, sm_scale, logit_cap, sinks, k_scale, v_scale, limits: ChipLimits, *,
            split_qk: bool = True, lazy_rescale: bool = False, early_qk: bool = True, p_regs: bool = True):
    """MLA extend attention with a dedicated kernel at `config`; writes ``o_extend`` in place and returns it.

    Shapes: q_extend [ΣE, H_q, 576], k_extend [ΣE, H_kv, 576] with v_extend = k_extend[..., :512], o_extend
    [ΣE, H_q, 512], k_buffer [slots, H_kv, 576] with v_buffer = k_buffer[..., :512], qo_indptr/kv_indptr [B + 1],
    kv_indices [>= ΣP] (entries past kv_indptr[B] are never read). fp16/bf16 (tensor cores) or fp32 (IEEE dots).
    Prefix logits are scaled by sm_scale * k_scale (sm_scale None: 1/sqrt(576)), prefix P . V by v_scale.
    ``config.mla`` "gluon_ws" (warp-specialized, 64 x 64 tiles) or "gluon" / a "gluon_ahead*" variant
    (64 x BLOCK_N tiles, 8 warps, `mla_gluon.GLUON_VARIANTS`) runs that
    Gluon kernel where `mla_gluon.gluon_applies` (two key buffers, prefix always pre-gathered), else the Triton
    kernel with the knobs block_m, block_n, num_warps, num_stages (fitted by `fit_mla`), pregather (prefix copied to
    contiguous rows first, `prefix_gather`) and tma (descriptor loads of contiguous key tiles where the chip has TMA,
    `common.chip_has_tma`). All use num_splits (0: `mla_splits`) and heavy_first. `limits` is required: the split
    count and the tile fit come from it. Measurement switches: `split_qk` (Triton kernel: scores dots kept out of
    P . V's def-use chain, `family_mla`), `lazy_rescale` ("gluon": conditional accumulator rescale,
    `family_mla_gluon`; off by default: slower in the H200 sweep of BENCHMARKS.md "MLA path (issue 20)"), and for
    "gluon_ws" `early_qk` (the next tile's scores issued before this tile's P . V completes) and `p_regs` (the
    softmax warpgroup's P . V takes P from registers), `family_mla_ws`; the defaults are what the tuned entry
    point runs.

    Raises:
        ValueError: the call is not MLA-shaped (`mla_dims`, V a view of K), or no tile fits the chip.
    """
    prob = Problem(qo_indptr.shape[0] - 1, q_extend.shape[0], kv_indices.shape[0], q_extend.shape[1],
                   k_extend.shape[1], q_extend.shape[2], v_extend.shape[2], q_extend.dtype)
    dims = mla_dims(prob)
    if dims is None or not (v_is_view_of_k(k_buffer, v_buffer) and v_is_view_of_k(k_extend, v_extend)):
        raise ValueError(f"run_mla: head dims {prob.head_dim}/{prob.head_dim_v} with V a view of K are required")
    if prob.batch == 0 or prob.total_extend == 0:
        return o_extend
    use_gluon = config.mla in GLUON_IMPLS and gluon_applies(config, prob, q_extend, k_extend, limits)
    config = replace(config, block_m=GLUON_BLOCK_M, num_warps=GLUON_WARPS) if use_gluon else fit_mla(
        config, prob, limits)
    splits = config.num_splits or mla_splits(prob, config.block_m, limits)
    contig = (use_gluon or config.pregather) and prob.total_prefix > 0 and k_buffer.stride(2) == 1
    k_pre = k_buffer
    if contig:  # prefix rows in sequence order below kv_indptr[B], zeros after
        k_pre, _ = gather_prefix(k_buffer, v_buffer, kv_indices, v_is_k=True, bound=kv_indptr)
    scale = resolve_sm_scale(sm_scale, prob.head_dim)
    scale_pre, v_scale, cap = scale * float(k_scale), float(v_scale), float(logit_cap or 0.0)
    mid_o, mid_l = get_workspace(q_extend.device, splits, prob.total_extend, prob.num_q_heads, dims[0])
    if use_gluon:
        launch_gluon(config, prob, dims, splits, q_extend, k_extend, k_pre if contig else None, o_extend, qo_indptr,
                     kv_indptr, sinks, mid_o, mid_l, scale, scale_pre, v_scale, cap, bool(is_causal), LOG2E,
                     lazy_rescale, early_qk, p_regs)
    else:
        _launch_triton(config, prob, dims, splits, contig, q_extend, k_extend, k_pre, o_extend, qo_indptr,
                       kv_indptr, kv_indices, sinks, mid_o, mid_l, scale, scale_pre, v_scale, cap, bool(is_causal),
                       split_qk)
    if splits > 1:
        launch(_merge_kernel, merge_grid(prob.total_extend, prob.num_q_heads),
            mid_o, mid_l, o_extend, mid_l, sinks if sinks is not None else qo_indptr, prob.num_q_heads,
            mid_o.stride(0), mid_o.stride(1), mid_o.stride(2), mid_l.stride(0), mid_l.stride(1),
            o_extend.stride(0), o_extend.stride(1), 0, 0, LV=dims[0], BLOCK_DV=dims[0], NUM_SPLITS=splits,
            BLOCK_S=max(2, triton.next_power_of_2(splits)), HAS_SINK=sinks is not None, STORE_LSE=False,
            num_warps=8,
        )
    return o_extend


def _launch_triton(config: FamilyConfig, prob: Problem, dims: tuple[int, int], splits: int, contig: bool, q_extend,
                   k_extend, k_pre, o_extend, qo_indptr, kv_indptr, kv_indices, sinks, mid_o, mid_l, scale: float,
                   scale_pre: float, v_scale: float, cap: float, is_causal: bool, split_qk: bool) -> None:
    """Launch `family_mla._mla_fwd_kernel` over (row blocks, KV heads, splits); arguments as `run_mla` computes them."""
    d, dpe = dims
    tma = config.tma and prob.dtype in (torch.float16, torch.bfloat16) and chip_has_tma(q_extend.device)
    tma_ext = tma and describable_rows(k_extend, prob.head_dim)
    tma_pre = tma and contig and describable_rows(k_pre, prob.head_dim)
    dummy = qo_indptr
    ext_descs = _key_descriptors(k_extend, d, dpe, config.block_n) if tma_ext else (dummy, dummy)
    pre_descs = _key_descriptors(k_pre, d, dpe, config.block_n) if tma_pre else (dummy, dummy)
    row_blocks = triton.cdiv(prob.total_extend * prob.group, config.block_m) + prob.batch
    launch(_mla_fwd_kernel, (row_blocks, prob.num_kv_heads, splits),
        q_extend, k_extend, k_pre, o_extend, qo_indptr, kv_indptr, kv_indices,
        sinks if sinks is not None else dummy, mid_o, mid_l, *ext_descs, *pre_descs,
        scale * LOG2E, scale_pre * LOG2E, scale, scale_pre, v_scale, prob.batch, 1,
        q_extend.stride(0), q_extend.stride(1), k_extend.stride(0), k_extend.stride(1), k_pre.stride(0),
        k_pre.stride(1), o_extend.stride(0), o_extend.stride(1), mid_o.stride(0), mid_o.stride(1), mid_o.stride(2),
        mid_l.stride(0), mid_l.stride(1),
        D=d, DPE=dpe, GROUP=prob.group, BLOCK_M=config.block_m, BLOCK_N=config.block_n,
        BLOCK_B=max(32, triton.next_power_of_2(prob.batch + 1)), NUM_SPLITS=splits, LOGIT_CAP=cap, IS_CAUSAL=is_causal,
        HAS_SINK=sinks is not None, HEAVY_FIRST=config.heavy_first and is_causal, SCALE_V=v_scale != 1.0,
        SPLIT_QK=split_qk, PREFIX_CONTIG=contig, TMA_EXT=tma_ext, TMA_PREFIX=tma_pre,
        num_warps=config.num_warps, num_stages=config.num_stages,
    )
