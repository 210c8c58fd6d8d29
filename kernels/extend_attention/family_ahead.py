"""Gather-ahead of the prefix (`FamilyConfig.gather_ahead`): attention programs copy the next KV heads' prefix.

With the prefix pre-gathered into contiguous order (`prefix_gather.py`), a separate copy pass (mixed batch: 536 MB,
135 us at the bandwidth ceiling on the H200) runs before the compute-bound attention. Gather-ahead copies only the
first `ahead_heads` KV heads before; every attention program of KV head h then copies a 1/count slice of its
sequence's prefix of KV head h + ahead_heads, AHEAD_ROWS rows per key tile, software-pipelined across tiles so
the copy's DRAM latency runs under the tile's tensor-core work.

Ordering (``ahead_sync``): one launch over all heads. Each program takes its work item from a ticket counter
(`ahead_ticket`), so every item with a smaller ticket belongs to a program that is already running: a program
of head h >= ahead_heads waits (`ahead_wait`, acquire) until all `count` programs of its sequence at head
h - ahead_heads have released (`ahead_release`: CTA barrier, then a release increment at GPU scope), and no wait can
deadlock (the work-ticket discipline of CUB's decoupled look-back, Merrill & Garland 2016). Its TMA loads then
follow a proxy fence, as the copies were generic-proxy stores (PTX ISA, "Proxies", fence.proxy.async).
Without ``ahead_sync`` the heads run as consecutive launches of `ahead_heads` heads each (stream order).

Which calls gather ahead, and how many rows per tile: `gather_ahead_rows` (the tuned entry point's rule, and the
family's ``gather_ahead=AHEAD_DERIVED``).
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernels.extend_attention.common import dot
from kernels.extend_attention.family_pipelined import _tile_values
from kernels.extend_attention.family_tiles import _load_rows, _prefix_tile, _softmax_step

#: Gather-ahead rows per key tile measured on the H200 (16: the mixed batch's 4096-key prefix over 8 row blocks);
#: fewer rows per tile leave part of a slice to the copy after the loop, more cost issue slots in it.
AHEAD_ROWS_RANGE = (8, 16)


def gather_ahead_rows(prob, rows_per_seq: int, splits: int, limits, hint: int | None, block_m: int = 128,
                      block_n: int = 128) -> int:
    """Gather-ahead rows per key tile for a call of sizes `prob` (`common.Problem`) at `block_m` x `block_n` tiles
    and `splits` splits on a chip of `limits` (`kernels.chip.ChipLimits`), or 0 to keep the whole pre-gather.

    On when the call has a prefix, one split, several KV heads, equal extend lengths (`hint`, the caller's
    host-side bound of the longest extend, x B == ΣE: a sequence with fewer row blocks would copy a larger slice,
    mostly after its loop, and the next head's programs of that sequence wait for it; the hint only steers this
    choice), a slice of its prefix per row block that `AHEAD_ROWS_RANGE` rows per key tile copy inside the loop
    (rows = BLOCK_N / row blocks per sequence, `rows_per_seq` query rows per sequence after GQA packing), and at
    least 0.9 x compute units programs per KV head, so the programs of head h (which wait for head h - 1's copies)
    start about a wave after those of head h - 1.
    Source: BENCHMARKS.md, 'Kernel sweeps' (H200, mixed batch): 665 -> 637 us with tickets; the one-head pre-gather
    costs 22 us against 136 us for all heads and the copy inside the loop about 35-50 us; two heads ahead 650 us,
    32 rows per tile 703 us.
    """
    blocks_per_seq = -(-rows_per_seq // block_m)
    rows = block_n // blocks_per_seq if blocks_per_seq else 0
    programs_per_head = prob.batch * blocks_per_seq
    uniform = hint is not None and hint * prob.batch == prob.total_extend
    if (not uniform or prob.total_prefix == 0 or splits != 1 or prob.num_kv_heads < 2
            or block_n % max(1, blocks_per_seq)
            or not AHEAD_ROWS_RANGE[0] <= rows <= AHEAD_ROWS_RANGE[1]
            or programs_per_head * 10 < 9 * limits.num_compute_units):
        return 0
    return rows


@triton.jit
def _ahead_slots(a_tok, a_hi, kv_indices, pre_start):
    """Step 1: cache slots of rows a_tok (< a_hi) of the sequence's prefix."""
    return tl.load(kv_indices + pre_start + a_tok, mask=a_tok < a_hi, other=0).to(tl.int64)


@triton.jit
def _ahead_load(a_tok, a_hi, slots, src_k, src_v, stride_kst, stride_vst, offs_d, offs_dv, LQ: tl.constexpr,
                LV: tl.constexpr):
    """Step 2: those rows of the target KV head's K and V, read at their cache slots."""
    ok_k, ok_v = _ahead_masks(a_tok < a_hi, offs_d, offs_dv, LQ, LV)
    ak = tl.load(src_k + slots[:, None] * stride_kst + offs_d[None, :], mask=ok_k)
    av = tl.load(src_v + slots[:, None] * stride_vst + offs_dv[None, :], mask=ok_v)
    return ak, av


@triton.jit
def _ahead_masks(ok, offs_d, offs_dv, LQ: tl.constexpr, LV: tl.constexpr):
    """[rows, D] masks of K and V; the column test only where the head dim is not a power of two (fewer
    instructions in the attention loop, whose issue slots the copy shares)."""
    ok_k = ok[:, None] & (offs_d < LQ)[None, :] if LQ != offs_d.shape[0] else ok[:, None]
    ok_v = ok[:, None] & (offs_dv < LV)[None, :] if LV != offs_dv.shape[0] else ok[:, None]
    return ok_k, ok_v


@triton.jit
def _ahead_store(ak, av, a_tok, a_hi, pre_start, dst_k, dst_v, stride_kgt, stride_vgt, offs_d, offs_dv,
                 LQ: tl.constexpr, LV: tl.constexpr):
    """Step 3: write those rows at pre_start + a_tok of the contiguous prefix buffers."""
    ok_k, ok_v = _ahead_masks(a_tok < a_hi, offs_d, offs_dv, LQ, LV)
    rows = pre_start + a_tok.to(tl.int64)
    tl.store(dst_k + rows[:, None] * stride_kgt + offs_d[None, :], ak, mask=ok_k)
    tl.store(dst_v + rows[:, None] * stride_vgt + offs_dv[None, :], av, mask=ok_v)


@triton.jit
def ahead_prefix(acc, l_i, m_i, q, qpe, lo, full_hi, hi, kv_indices, pre_start, kb_head, vb_head, stride_kbt,
                 stride_vbt, kb_desc, vb_desc, kv_head, tok, valid, pre_len, seq_len, mask_ptr, mask_start, qk_scale,
                 sm_scale, offs_n, offs_d, offs_dv, a_lo, a_hi, a_src_k, a_src_v, a_dst_k, a_dst_v, stride_kst,
                 stride_vst, LQ: tl.constexpr, LV: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DPE: tl.constexpr,
                 BLOCK_DV: tl.constexpr, BLOCK_N: tl.constexpr, WINDOW: tl.constexpr, LOGIT_CAP: tl.constexpr,
                 IS_CAUSAL: tl.constexpr, USE_MASK: tl.constexpr, SKIP_PREFIX_MASK: tl.constexpr,
                 V_IS_K: tl.constexpr, FOLD_SCALE: tl.constexpr, PREFIX_CONTIG: tl.constexpr, TMA: tl.constexpr,
                 AHEAD_ROWS: tl.constexpr, SCORES_AHEAD: tl.constexpr = False):
    """The unmasked prefix tiles [lo, full_hi) folded into the online softmax while rows [a_lo, a_hi) of the
    target head's prefix are copied: at tile i the rows of chunk i (loaded at tile i - 1) are stored, chunk i + 1's
    rows are loaded at slots read at tile i - 1, and chunk i + 2's slots are read, so neither load stalls the warps
    in front of the tile's dots; rows the loop did not reach are copied after it. SCORES_AHEAD (contiguous prefix,
    no rope part): the tiles run as `family_pipelined._scores_ahead_rows` does, one copy step per tile as here."""
    a_tok = a_lo + tl.arange(0, AHEAD_ROWS)
    ak, av = _ahead_load(a_tok, a_hi, _ahead_slots(a_tok, a_hi, kv_indices, pre_start), a_src_k, a_src_v,
                         stride_kst, stride_vst, offs_d, offs_dv, LQ, LV)
    n_slots = _ahead_slots(a_tok + AHEAD_ROWS, a_hi, kv_indices, pre_start)
    SCORES_LOOP: tl.constexpr = SCORES_AHEAD and PREFIX_CONTIG and BLOCK_DPE == 0
    if SCORES_LOOP:
        if lo < full_hi:
            k_base = kb_head + pre_start * stride_kbt
            v_base = vb_head + pre_start * stride_vbt
            row0 = pre_start.to(tl.int32)
            zero_a = tl.zeros([q.shape[0], 16], dtype=q.dtype)  # the wait dot (family_pipelined.py)
            zero_b = tl.zeros([16, BLOCK_N], dtype=q.dtype)
            k = _load_rows(k_base, (lo + offs_n).to(tl.int64), valid, stride_kbt, offs_d, kb_desc, row0 + lo,
                           kv_head * LQ, LQ, BLOCK_D, False, TMA)
            qk = dot(q, tl.trans(k))
            for start in range(lo + BLOCK_N, full_hi, BLOCK_N):
                scores = dot(zero_a, zero_b, qk)
                k_next = _load_rows(k_base, (start + offs_n).to(tl.int64), valid, stride_kbt, offs_d, kb_desc,
                                    row0 + start, kv_head * LQ, LQ, BLOCK_D, False, TMA)
                qk = dot(q, tl.trans(k_next))
                a_tok, ak, av, n_slots = _copy_step(a_tok, ak, av, n_slots, a_hi, kv_indices, pre_start, a_src_k,
                                                    a_src_v, a_dst_k, a_dst_v, stride_kst, stride_vst, stride_kbt,
                                                    stride_vbt, offs_d, offs_dv, LQ, LV, AHEAD_ROWS)
                v = _tile_values(k, v_base, start - BLOCK_N, stride_vbt, offs_n, offs_dv, vb_desc, row0, kv_head,
                                 valid, LV, BLOCK_DV, V_IS_K, TMA)
                acc, l_i, m_i = _softmax_step(acc, l_i, m_i, scores, v, valid[:, None], qk_scale, sm_scale,
                                              LOGIT_CAP, False, FOLD_SCALE)
                if V_IS_K:
                    k = k_next
            a_tok, ak, av, n_slots = _copy_step(a_tok, ak, av, n_slots, a_hi, kv_indices, pre_start, a_src_k, a_src_v,
                                                a_dst_k, a_dst_v, stride_kst, stride_vst, stride_kbt, stride_vbt,
                                                offs_d, offs_dv, LQ, LV, AHEAD_ROWS)
            v = _tile_values(k, v_base, full_hi - BLOCK_N, stride_vbt, offs_n, offs_dv, vb_desc, row0, kv_head,
                             valid, LV, BLOCK_DV, V_IS_K, TMA)
            acc, l_i, m_i = _softmax_step(acc, l_i, m_i, qk, v, valid[:, None], qk_scale, sm_scale, LOGIT_CAP,
                                          False, FOLD_SCALE)
    else:
        for start in range(lo, full_hi, BLOCK_N):
            a_tok, ak, av, n_slots = _copy_step(a_tok, ak, av, n_slots, a_hi, kv_indices, pre_start, a_src_k, a_src_v,
                                                a_dst_k, a_dst_v, stride_kst, stride_vst, stride_kbt, stride_vbt,
                                                offs_d, offs_dv, LQ, LV, AHEAD_ROWS)
            acc, l_i, m_i = _prefix_tile(acc, l_i, m_i, q, qpe, start, hi, kv_indices, pre_start, kb_head, vb_head,
                                         stride_kbt, stride_vbt, kb_desc, vb_desc, kv_head, tok, valid, pre_len,
                                         seq_len, mask_ptr, mask_start, qk_scale, sm_scale, offs_n, offs_d, offs_dv,
                                         LQ, LV, BLOCK_D, BLOCK_DPE, BLOCK_DV, WINDOW, LOGIT_CAP, IS_CAUSAL, USE_MASK,
                                         SKIP_PREFIX_MASK, V_IS_K, FOLD_SCALE, False, PREFIX_CONTIG, TMA)
    _ahead_store(ak, av, a_tok, a_hi, pre_start, a_dst_k, a_dst_v, stride_kbt, stride_vbt, offs_d, offs_dv, LQ, LV)
    for a0 in range(a_lo + ((full_hi - lo) // BLOCK_N + 1) * AHEAD_ROWS, a_hi, AHEAD_ROWS):
        r_tok = a0 + tl.arange(0, AHEAD_ROWS)
        rk, rv = _ahead_load(r_tok, a_hi, _ahead_slots(r_tok, a_hi, kv_indices, pre_start), a_src_k, a_src_v,
                             stride_kst, stride_vst, offs_d, offs_dv, LQ, LV)
        _ahead_store(rk, rv, r_tok, a_hi, pre_start, a_dst_k, a_dst_v, stride_kbt, stride_vbt, offs_d, offs_dv, LQ, LV)
    return acc, l_i, m_i


@triton.jit
def _copy_step(a_tok, ak, av, n_slots, a_hi, kv_indices, pre_start, a_src_k, a_src_v, a_dst_k, a_dst_v, stride_kst,
               stride_vst, stride_kbt, stride_vbt, offs_d, offs_dv, LQ: tl.constexpr, LV: tl.constexpr,
               AHEAD_ROWS: tl.constexpr):
    """One tile's share of the copy in `ahead_prefix`: load the next chunk's rows, read the slots of the one after,
    store this chunk's; returns the next chunk's (rows, K, V, slots of the one after)."""
    n_tok = a_tok + AHEAD_ROWS
    nk, nv = _ahead_load(n_tok, a_hi, n_slots, a_src_k, a_src_v, stride_kst, stride_vst, offs_d, offs_dv, LQ, LV)
    n_slots = _ahead_slots(n_tok + AHEAD_ROWS, a_hi, kv_indices, pre_start)
    _ahead_store(ak, av, a_tok, a_hi, pre_start, a_dst_k, a_dst_v, stride_kbt, stride_vbt, offs_d, offs_dv, LQ, LV)
    return n_tok, nk, nv, n_slots


@triton.jit
def ahead_ticket(counters):
    """This program's work item: the next ticket of counters[0] (zeroed before the launch)."""
    return tl.atomic_add(counters, 1, sem="relaxed", scope="gpu")


@triton.jit
def ahead_wait(counter, need, PROXY_FENCE: tl.constexpr):
    """Spin until *counter >= need (acquire at GPU scope); then order the async proxy (TMA) after it."""
    got = tl.atomic_add(counter, 0, sem="acquire", scope="gpu")
    while got < need:
        got = tl.atomic_add(counter, 0, sem="acquire", scope="gpu")
    if PROXY_FENCE:
        tl.inline_asm_elementwise("fence.proxy.async.global;\n\tmov.u32 $0, $1;", "=r,r", [got], dtype=tl.int32,
                                  is_pure=False, pack=1)


@triton.jit
def ahead_release(counter):
    """After this program's copy: every thread's stores ordered before one release increment at GPU scope."""
    tl.debug_barrier()
    tl.atomic_add(counter, 1, sem="release", scope="gpu")


__all__ = ["AHEAD_ROWS_RANGE", "ahead_prefix", "ahead_release", "ahead_ticket", "ahead_wait", "gather_ahead_rows",
           "triton"]
