"""Scores-ahead key loop of the family kernel (`FamilyConfig.scores_ahead`): the unmasked full tiles of contiguous
K/V rows (the extend keys below a block's first row, the pre-gathered prefix) with tile t + 1's scores
q @ k(t + 1)^T issued before tile t's softmax and P . V.

In the plain loop (`family_tiles._attend_tile`) every tile runs scores -> softmax -> P . V in order, so the tensor
cores idle while the exponentials and row reductions of a tile run (FlashAttention-3, Shah et al. 2024, section
3.2, "intra-warpgroup overlapping of GEMMs and softmax"). Here the next tile's score dot has no data dependence on
the current softmax, so an asynchronous matrix unit (Hopper's wgmma) can run it while the current tile's softmax
runs: software pipelining by one tile, at the price of a second [BLOCK_M, BLOCK_N] float32 score tile in registers.
Triton's Hopper pipeliner (`asyncLaunchDots`, lib/Dialect/TritonGPU/Transforms/Pipeliner/WGMMAPipeline.cpp) leaves
a dot asynchronous only when its carried result is read in the next iteration by nothing but another dot's
accumulator operand, or only after a `wait 0`; otherwise it waits right after the dot (offline sm_90 compiles of
the plain reordered loop show `wgmma.wait_group 0` straight after the score dot). So each iteration first reads
the carried scores through a "wait dot", zeros [M, 16] x [16, N] with the scores as accumulator (1/8 of a D = 128
score dot on the tensor cores, exact: it adds 0), which is the iteration's one synchronous dot; the next tile's
score dot then stays in flight through the softmax, and P . V through the next iteration's wait dot. Same online
softmax in the same key order as the plain loop.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernels.extend_attention.common import dot
from kernels.extend_attention.family_tiles import _load_rows, _softmax_probs, _softmax_step


@triton.jit
def _scores_ahead_rows(acc, l_i, m_i, q, start0, stop, k_base, v_base, stride_k, stride_v, k_desc, v_desc,
                       desc_row0, kv_head, valid, qk_scale, sm_scale, offs_n, offs_d, offs_dv, LQ: tl.constexpr,
                       LV: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr, BLOCK_N: tl.constexpr,
                       LOGIT_CAP: tl.constexpr, V_IS_K: tl.constexpr, FOLD_SCALE: tl.constexpr, TMA: tl.constexpr):
    """Online softmax over the unmasked key tiles [start0, stop) (both multiples of BLOCK_N from the sequence's
    first row) of contiguous rows: row r of K at k_base + r * stride_k (or descriptor row desc_row0 + r, columns
    from kv_head * LQ, with TMA), V alike; every row in range. acc [M, Dv], l_i / m_i [M] in log2 units, q [M, D].
    Same result as `family_tiles._attend_tile` over each tile in order; tile t + 1's scores are computed before
    tile t's softmax (module docstring)."""
    if start0 < stop:
        # [M, 16] x [16, N] zeros: the "wait dot" that reads the carried scores as its accumulator (module docstring)
        zero_a = tl.zeros([q.shape[0], 16], dtype=q.dtype)
        zero_b = tl.zeros([16, BLOCK_N], dtype=q.dtype)
        k = _load_rows(k_base, (start0 + offs_n).to(tl.int64), valid, stride_k, offs_d, k_desc, desc_row0 + start0,
                       kv_head * LQ, LQ, BLOCK_D, False, TMA)
        qk = dot(q, tl.trans(k))
        for start in range(start0 + BLOCK_N, stop, BLOCK_N):
            scores = dot(zero_a, zero_b, qk)  # tile start - BLOCK_N's scores, + 0
            k_next = _load_rows(k_base, (start + offs_n).to(tl.int64), valid, stride_k, offs_d, k_desc,
                                desc_row0 + start, kv_head * LQ, LQ, BLOCK_D, False, TMA)
            qk = dot(q, tl.trans(k_next))  # tile start's scores, in flight during the softmax below
            v = _tile_values(k, v_base, start - BLOCK_N, stride_v, offs_n, offs_dv, v_desc, desc_row0, kv_head, valid,
                             LV, BLOCK_DV, V_IS_K, TMA)
            acc, l_i, m_i = _softmax_step(acc, l_i, m_i, scores, v, valid[:, None], qk_scale, sm_scale, LOGIT_CAP,
                                          False, FOLD_SCALE)
            if V_IS_K:  # only then is the K tile carried to the next iteration
                k = k_next
        v = _tile_values(k, v_base, stop - BLOCK_N, stride_v, offs_n, offs_dv, v_desc, desc_row0, kv_head, valid, LV,
                         BLOCK_DV, V_IS_K, TMA)
        acc, l_i, m_i = _softmax_step(acc, l_i, m_i, qk, v, valid[:, None], qk_scale, sm_scale, LOGIT_CAP, False,
                                      FOLD_SCALE)
    return acc, l_i, m_i


@triton.jit
def _tile_values(k, v_base, start, stride_v, offs_n, offs_dv, v_desc, desc_row0, kv_head, valid, LV: tl.constexpr,
                 BLOCK_DV: tl.constexpr, V_IS_K: tl.constexpr, TMA: tl.constexpr):
    """V [BLOCK_N, BLOCK_DV] of the tile at `start` (the K tile `k` itself when V is a view of K)."""
    if V_IS_K:
        return k
    return _load_rows(v_base, (start + offs_n).to(tl.int64), valid, stride_v, offs_dv, v_desc, desc_row0 + start,
                      kv_head * LV, LV, BLOCK_DV, False, TMA)


@triton.jit
def _pv_behind_rows(acc, l_i, m_i, q, start0, stop, k_base, v_base, stride_k, stride_v, k_desc, v_desc, desc_row0,
                    kv_head, valid, qk_scale, sm_scale, offs_n, offs_d, offs_dv, LQ: tl.constexpr, LV: tl.constexpr,
                    BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr, BLOCK_N: tl.constexpr, LOGIT_CAP: tl.constexpr,
                    V_IS_K: tl.constexpr, FOLD_SCALE: tl.constexpr, TMA: tl.constexpr):
    """`_scores_ahead_rows` with P . V one tile behind as well (``scores_ahead=2``): iteration t reads tile t's
    scores through the wait dot, issues P(t - 1) . V(t - 1) on the accumulator scaled by alpha(t - 1) and tile
    t + 1's scores, then runs tile t's softmax (`family_tiles._softmax_probs`) while both dots are in flight
    (FlashAttention-3's intra-warpgroup overlap in full). P(t - 1) (float32, cast at the dot: carried in the input
    dtype, the pipeliner sees a register operand made outside its chain and waits right after P . V) and alpha(t - 1)
    are carried;
    tile 1's scores are waited for outside the loop, so the overlap starts at tile 2. Same result as the plain
    loop."""
    if start0 < stop:
        zero_a = tl.zeros([q.shape[0], 16], dtype=q.dtype)
        zero_b = tl.zeros([16, BLOCK_N], dtype=q.dtype)
        k = _load_rows(k_base, (start0 + offs_n).to(tl.int64), valid, stride_k, offs_d, k_desc, desc_row0 + start0,
                       kv_head * LQ, LQ, BLOCK_D, False, TMA)
        p, alpha, l_i, m_i = _softmax_probs(l_i, m_i, dot(q, tl.trans(k)), valid[:, None], qk_scale, sm_scale,
                                            LOGIT_CAP, False, FOLD_SCALE)
        k_prev = k
        if start0 + BLOCK_N < stop:
            k = _load_rows(k_base, (start0 + BLOCK_N + offs_n).to(tl.int64), valid, stride_k, offs_d, k_desc,
                           desc_row0 + start0 + BLOCK_N, kv_head * LQ, LQ, BLOCK_D, False, TMA)
            qk = dot(q, tl.trans(k))
            for start in range(start0 + 2 * BLOCK_N, stop, BLOCK_N):  # tile t = start - BLOCK_N
                scores = dot(zero_a, zero_b, qk)  # tile t's scores, + 0
                v = _tile_values(k_prev, v_base, start - 2 * BLOCK_N, stride_v, offs_n, offs_dv, v_desc, desc_row0,
                                 kv_head, valid, LV, BLOCK_DV, V_IS_K, TMA)
                acc = dot(p.to(q.dtype), v, acc * alpha[:, None])  # tile t - 1's P . V
                k_next = _load_rows(k_base, (start + offs_n).to(tl.int64), valid, stride_k, offs_d, k_desc,
                                    desc_row0 + start, kv_head * LQ, LQ, BLOCK_D, False, TMA)
                qk = dot(q, tl.trans(k_next))  # tile t + 1's scores
                p, alpha, l_i, m_i = _softmax_probs(l_i, m_i, scores, valid[:, None], qk_scale, sm_scale, LOGIT_CAP,
                                                    False, FOLD_SCALE)
                if V_IS_K:  # only then are the K tiles carried
                    k_prev = k
                    k = k_next
            v = _tile_values(k_prev, v_base, stop - 2 * BLOCK_N, stride_v, offs_n, offs_dv, v_desc, desc_row0,
                             kv_head, valid, LV, BLOCK_DV, V_IS_K, TMA)
            acc = dot(p.to(q.dtype), v, acc * alpha[:, None])
            p, alpha, l_i, m_i = _softmax_probs(l_i, m_i, qk, valid[:, None], qk_scale, sm_scale, LOGIT_CAP, False,
                                                FOLD_SCALE)
            k_prev = k
        v = _tile_values(k_prev, v_base, stop - BLOCK_N, stride_v, offs_n, offs_dv, v_desc, desc_row0, kv_head,
                         valid, LV, BLOCK_DV, V_IS_K, TMA)
        acc = dot(p.to(q.dtype), v, acc * alpha[:, None])
    return acc, l_i, m_i


@triton.jit
def _pipelined_rows(acc, l_i, m_i, q, start0, stop, k_base, v_base, stride_k, stride_v, k_desc, v_desc, desc_row0,
                    kv_head, valid, qk_scale, sm_scale, offs_n, offs_d, offs_dv, LQ: tl.constexpr, LV: tl.constexpr,
                    BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr, BLOCK_N: tl.constexpr, LOGIT_CAP: tl.constexpr,
                    V_IS_K: tl.constexpr, FOLD_SCALE: tl.constexpr, TMA: tl.constexpr, DEPTH: tl.constexpr):
    """The unmasked contiguous key tiles [start0, stop) at ``scores_ahead`` = DEPTH (1: `_scores_ahead_rows`,
    2: `_pv_behind_rows`)."""
    if DEPTH == 2:
        acc, l_i, m_i = _pv_behind_rows(acc, l_i, m_i, q, start0, stop, k_base, v_base, stride_k, stride_v, k_desc,
                                        v_desc, desc_row0, kv_head, valid, qk_scale, sm_scale, offs_n, offs_d, offs_dv,
                                        LQ, LV, BLOCK_D, BLOCK_DV, BLOCK_N, LOGIT_CAP, V_IS_K, FOLD_SCALE, TMA)
    else:
        acc, l_i, m_i = _scores_ahead_rows(acc, l_i, m_i, q, start0, stop, k_base, v_base, stride_k, stride_v,
                                           k_desc, v_desc, desc_row0, kv_head, valid, qk_scale, sm_scale, offs_n,
                                           offs_d, offs_dv, LQ, LV, BLOCK_D, BLOCK_DV, BLOCK_N, LOGIT_CAP, V_IS_K,
                                           FOLD_SCALE, TMA)
    return acc, l_i, m_i
