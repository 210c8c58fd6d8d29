"""Tile-level helpers of the extend-attention family kernel (`family_kernels.py`): the online-softmax step over
one key tile, the row loads (pointer gather or TMA box), one prefix tile and the key-visibility mask.

Source of the method: FlashAttention-2 (Dao 2023) online softmax in base 2.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernels.extend_attention.common import dot, stable_tanh


@triton.jit
def _attend_tile(acc, l_i, m_i, q, qpe, k, kpe, v, visible, qk_scale, sm_scale,
                 LOGIT_CAP: tl.constexpr, BLOCK_DPE: tl.constexpr, APPLY_MASK: tl.constexpr,
                 FOLD_SCALE: tl.constexpr):
    """One online-softmax step over a key tile. k: [N, D], v: [N, Dv]; scores in log2 units
    (`_tile_scores`, then `_softmax_step`)."""
    qk = _tile_scores(q, qpe, k, kpe, BLOCK_DPE)
    return _softmax_step(acc, l_i, m_i, qk, v, visible, qk_scale, sm_scale, LOGIT_CAP, APPLY_MASK, FOLD_SCALE)


@triton.jit
def _tile_scores(q, qpe, k, kpe, BLOCK_DPE: tl.constexpr):
    """Raw scores q @ k^T [M, N] in float32 (plus the rope part qpe @ kpe^T when BLOCK_DPE > 0), unscaled."""
    qk = dot(q, tl.trans(k))
    if BLOCK_DPE > 0:
        qk += dot(qpe, tl.trans(kpe))
    return qk


@triton.jit
def _softmax_step(acc, l_i, m_i, qk, v, visible, qk_scale, sm_scale, LOGIT_CAP: tl.constexpr,
                  APPLY_MASK: tl.constexpr, FOLD_SCALE: tl.constexpr):
    """Fold raw scores `qk` [M, N] of one key tile and its values `v` [N, Dv] into the online softmax (acc [M, Dv],
    row sum l_i and row max m_i in log2 units): `_softmax_probs`, then acc = acc * alpha + P @ V."""
    p, alpha, l_i, m_new = _softmax_probs(l_i, m_i, qk, visible, qk_scale, sm_scale, LOGIT_CAP, APPLY_MASK,
                                          FOLD_SCALE)
    acc = acc * alpha[:, None]
    acc = dot(p.to(v.dtype), v, acc)
    return acc, l_i, m_new


@triton.jit
def _softmax_probs(l_i, m_i, qk, visible, qk_scale, sm_scale, LOGIT_CAP: tl.constexpr, APPLY_MASK: tl.constexpr,
                   FOLD_SCALE: tl.constexpr):
    """The online-softmax update of one tile's raw scores `qk` [M, N] without the accumulator: (P [M, N] float32,
    alpha = 2^(m_i - m_new) [M] by which the accumulator is to be scaled before P @ V is added, the new row sum,
    the new row max), in log2 units.

    FOLD_SCALE (scale > 0, no logit cap): the row max is taken on raw scores and the scale is applied in the
    same fused multiply-add that subtracts it, one operation per score fewer (FlashAttention-2 trick).
    """
    if FOLD_SCALE:
        if APPLY_MASK:
            qk = tl.where(visible, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.exp2(qk * qk_scale - m_new[:, None])
    else:
        if LOGIT_CAP > 0:
            qk = (LOGIT_CAP * 1.4426950408889634) * stable_tanh(qk * (sm_scale / LOGIT_CAP))
        else:
            qk = qk * qk_scale
        if APPLY_MASK:
            qk = tl.where(visible, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp2(qk - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    return p, alpha, l_i, m_new


@triton.jit
def _load_rows(base, rows, row_ok, stride, offs, desc, desc_row, desc_col, LIMIT: tl.constexpr,
               WIDTH: tl.constexpr, MASKED: tl.constexpr, TMA: tl.constexpr):
    """Load [N, WIDTH] rows at base + rows * stride + offs; masks only what can be out of range.

    TMA: one tensor-descriptor load of the [N, WIDTH] box at (desc_row, desc_col) of a 2-D [rows, heads * WIDTH]
    view instead (contiguous rows desc_row + n, head columns from desc_col; LIMIT == WIDTH). Rows past the
    tensor come back as zeros; rows of the next sequence inside it are real (finite) values that the caller's
    key mask hides, as it hides the pointer path's zero-filled rows.
    """
    if TMA:
        return desc.load([desc_row, desc_col])
    ptrs = base + rows[:, None] * stride + offs[None, :]
    if MASKED:
        if LIMIT < WIDTH:
            return tl.load(ptrs, mask=row_ok[:, None] & (offs < LIMIT)[None, :], other=0.0)
        return tl.load(ptrs, mask=row_ok[:, None], other=0.0)
    if LIMIT < WIDTH:
        return tl.load(ptrs, mask=(offs < LIMIT)[None, :], other=0.0)
    return tl.load(ptrs)


@triton.jit
def _prefix_tile(acc, l_i, m_i, q, qpe, start, hi, kv_indices, pre_start, kb_head, vb_head, stride_kbt,
                 stride_vbt, kb_desc, vb_desc, kv_head, tok, valid, pre_len, seq_len, mask_ptr, mask_start, qk_scale,
                 sm_scale, offs_n, offs_d, offs_dv, LQ: tl.constexpr, LV: tl.constexpr, BLOCK_D: tl.constexpr,
                 BLOCK_DPE: tl.constexpr, BLOCK_DV: tl.constexpr, WINDOW: tl.constexpr, LOGIT_CAP: tl.constexpr,
                 IS_CAUSAL: tl.constexpr, USE_MASK: tl.constexpr, SKIP_PREFIX_MASK: tl.constexpr,
                 V_IS_K: tl.constexpr, FOLD_SCALE: tl.constexpr, MASKED: tl.constexpr, PREFIX_CONTIG: tl.constexpr,
                 TMA: tl.constexpr):
    """Gather one tile of prefix K/V through kv_indices (or, pre-gathered, read rows pre_start + kpos, through
    tensor descriptors with TMA) and fold it into the online softmax."""
    kpos = start + offs_n
    key_ok = kpos < hi
    if PREFIX_CONTIG:
        slots = pre_start + kpos.to(tl.int64)
    elif MASKED:
        slots = tl.load(kv_indices + pre_start + kpos, mask=key_ok, other=0).to(tl.int64)
    else:
        slots = tl.load(kv_indices + pre_start + kpos).to(tl.int64)
    row0 = (pre_start + start).to(tl.int32)  # TMA only: the tile's first row in the pre-gathered buffer
    k = _load_rows(kb_head, slots, key_ok, stride_kbt, offs_d, kb_desc, row0, kv_head * LQ, LQ, BLOCK_D, MASKED,
                   TMA)
    kpe = k
    if BLOCK_DPE > 0:
        kpe = _load_rows(kb_head, slots, key_ok, stride_kbt, BLOCK_D + tl.arange(0, BLOCK_DPE), kb_desc, row0, 0,
                         BLOCK_DPE, BLOCK_DPE, MASKED, False)
    if V_IS_K:
        v = k
    else:
        v = _load_rows(vb_head, slots, key_ok, stride_vbt, offs_dv, vb_desc, row0, kv_head * LV, LV, BLOCK_DV,
                       MASKED, TMA)
    vis = valid[:, None]
    if MASKED:
        vis = _visible(tok, valid, kpos, key_ok, pre_len, seq_len, mask_ptr, mask_start, True,
                       WINDOW, IS_CAUSAL, USE_MASK, SKIP_PREFIX_MASK)
    return _attend_tile(acc, l_i, m_i, q, qpe, k, kpe, v, vis, qk_scale, sm_scale, LOGIT_CAP, BLOCK_DPE,
                        MASKED, FOLD_SCALE)


@triton.jit
def _visible(tok, valid, kpos, key_ok, pre_len, seq_len, mask_ptr, mask_start, is_prefix: tl.constexpr,
             WINDOW: tl.constexpr, IS_CAUSAL: tl.constexpr, USE_MASK: tl.constexpr, SKIP_PREFIX_MASK: tl.constexpr):
    """Bool [M, N]: row (token tok) may see key at sequence position kpos (prefix then extend)."""
    vis = valid[:, None] & key_ok[None, :]
    if USE_MASK and not (is_prefix and SKIP_PREFIX_MASK):
        cm = tl.load(mask_ptr + mask_start + tok[:, None].to(tl.int64) * seq_len + kpos[None, :], mask=vis, other=0)
        vis &= cm != 0
    elif IS_CAUSAL and not is_prefix:
        vis &= (kpos[None, :] - pre_len) <= tok[:, None]
    if WINDOW > 0:
        vis &= kpos[None, :] >= (pre_len + tok[:, None] - WINDOW)
    return vis
