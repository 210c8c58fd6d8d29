"""Triton kernels of the optimized extend-attention family (launched by `family.run_family`).

One program = one block of BLOCK_M packed query rows x one head x one split of the prefix (with gather-ahead
it also copies part of a later KV head's prefix, `family_ahead.py`):
- multi-query blocks: with PACK = G (GQA group) a row is (token, q head of one KV head), so each K/V tile is
  loaded once for all G heads (FlashAttention "pack GQA");
- split-KV: the prefix of each sequence is cut into NUM_SPLITS chunks processed by separate programs; each
  writes a partial (output normalized by its own sum, log2-sum-exp) merged by `_merge_kernel`;
  an empty partial is (0, -inf) and merges to nothing;
- flat grid over (sequence, row block) pairs found from qo_indptr on the device (no host sync, no
  max_len_extend trust), heavy blocks first inside each causal sequence;
- online softmax in base 2 (exp2 with log2(e) folded into the scale), fp32 accumulators, unmasked full tiles
  and masked edge tiles, software pipelining left to num_stages;
- K/V tiles of contiguous rows (the extend keys, the pre-gathered prefix) optionally loaded through host-side
  tensor descriptors (TMA_EXT / TMA_PREFIX: Hopper TMA, one box per tile, issued by the pipeliner without
  per-element address arithmetic), switched inside the one load helper `_load_rows`.
Source of the method: FlashAttention-2 (Dao 2023) online softmax and work partitioning; Flash-Decoding
split-KV (Dao et al. 2023); the public extend-attention agent result (shared/reference/extend_attention.md).
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernels.extend_attention.family_ahead import ahead_prefix, ahead_release, ahead_ticket, ahead_wait
from kernels.extend_attention.family_pipelined import _pipelined_rows
from kernels.extend_attention.family_tiles import _attend_tile, _load_rows, _prefix_tile, _visible

LOG2E = 1.4426950408889634


@triton.jit
def _block_counts(qo_indptr, batch, PACK: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_B: tl.constexpr):
    """Row blocks per sequence and their inclusive prefix sum, from qo_indptr (BLOCK_B >= batch + 1 lanes)."""
    offs_b = tl.arange(0, BLOCK_B)
    in_batch = offs_b < batch
    starts = tl.load(qo_indptr + offs_b, mask=in_batch, other=0)
    ends = tl.load(qo_indptr + offs_b + 1, mask=in_batch, other=0)
    nblocks = tl.cdiv((ends - starts).to(tl.int32) * PACK, BLOCK_M)
    return nblocks, tl.cumsum(nblocks, 0)


@triton.jit
def _locate_block(nblocks, cum, lin, BLOCK_B: tl.constexpr, HEAVY_FIRST: tl.constexpr):
    """Map a flat program index to (sequence, row block within it, total row blocks, row blocks of that
    sequence)."""
    offs_b = tl.arange(0, BLOCK_B)
    seq = tl.sum((cum <= lin).to(tl.int32), 0)
    first = tl.sum(tl.where(offs_b == seq, cum - nblocks, 0), 0)
    count = tl.sum(tl.where(offs_b == seq, nblocks, 0), 0)
    block = lin - first
    if HEAVY_FIRST:
        block = count - 1 - block
    return seq, block, tl.sum(nblocks, 0), count


@triton.jit
def _prefix_range(pre_len, split, pre_lo_bound, NUM_SPLITS: tl.constexpr, BLOCK_N: tl.constexpr):
    """[lo, hi) of prefix keys for this split, lo aligned to the split start plus whole tiles."""
    chunk = tl.cdiv(tl.cdiv(pre_len, NUM_SPLITS), BLOCK_N) * BLOCK_N
    lo = split * chunk
    hi = tl.minimum(pre_len, lo + chunk)
    skip = tl.maximum(pre_lo_bound - lo, 0) // BLOCK_N * BLOCK_N
    return lo + skip, hi


@triton.jit
def _family_fwd_kernel(
    Q, K_ext, V_ext, O, K_buf, V_buf, qo_indptr, kv_indptr, kv_indices, mask_ptr, mask_indptr, mask_offsets_ptr,
    sinks_ptr, Mid_O, Mid_L, K_ext_desc, V_ext_desc, K_buf_desc, V_buf_desc, K_src, V_src, ahead_cnt, LSE, qk_scale,
    sm_scale, k_scale, v_scale, batch, head_base, num_heads, grid_blocks, stride_kst, stride_ksh, stride_vst,
    stride_vsh, stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh, stride_ot, stride_oh,
    stride_kbt, stride_kbh, stride_vbt, stride_vbh, stride_ms, stride_mt, stride_mh, stride_ls, stride_lt,
    stride_et, stride_eh,
    LQ: tl.constexpr, LV: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DPE: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_B: tl.constexpr, GROUP: tl.constexpr, PACK: tl.constexpr,
    NUM_SPLITS: tl.constexpr, WINDOW: tl.constexpr, LOGIT_CAP: tl.constexpr, IS_CAUSAL: tl.constexpr,
    USE_MASK: tl.constexpr, SKIP_PREFIX_MASK: tl.constexpr, HAS_SINK: tl.constexpr, V_IS_K: tl.constexpr,
    HEAVY_FIRST: tl.constexpr, FOLD_SCALE: tl.constexpr, GATHER_STAGES: tl.constexpr,
    PREFIX_CONTIG: tl.constexpr, TMA_EXT: tl.constexpr, TMA_PREFIX: tl.constexpr, AHEAD_ROWS: tl.constexpr,
    AHEAD_HEADS: tl.constexpr, AHEAD_SYNC: tl.constexpr, PROXY_FENCE: tl.constexpr, V_SCALED: tl.constexpr,
    STORE_LSE: tl.constexpr, SKIP_PREFIX: tl.constexpr, SKIP_EXTEND: tl.constexpr, MASK_OFFSET: tl.constexpr,
    SCORES_AHEAD: tl.constexpr = 0, HEADS_INNER: tl.constexpr = False,
):
    nblocks, cum = _block_counts(qo_indptr, batch, PACK, BLOCK_M, BLOCK_B)  # in flight while a ticket is taken
    lin = tl.program_id(0)
    head = tl.program_id(1) + head_base
    if HEADS_INNER:  # grid (row blocks x heads, 1, splits), heads fastest: every head's heaviest blocks go first
        lin = tl.program_id(0) // num_heads
        head = tl.program_id(0) % num_heads
    if AHEAD_SYNC:  # one launch over all heads: the work item comes from a ticket (see family_ahead.py)
        ticket = ahead_ticket(ahead_cnt)
        lin = ticket % grid_blocks
        head = ticket // grid_blocks
    seq, block, total, count = _locate_block(nblocks, cum, lin, BLOCK_B, HEAVY_FIRST)
    if lin >= total:
        return
    split = tl.program_id(2)
    kv_head = head if PACK > 1 else head // GROUP
    ext_start = tl.load(qo_indptr + seq).to(tl.int64)
    ext_len = (tl.load(qo_indptr + seq + 1) - ext_start).to(tl.int32)
    pre_start = tl.load(kv_indptr + seq).to(tl.int64)
    pre_len = (tl.load(kv_indptr + seq + 1) - pre_start).to(tl.int32)
    seq_len = pre_len + ext_len  # the row stride of the sequence's custom mask
    mask_start = tl.load(mask_indptr + seq).to(tl.int64) if USE_MASK else 0
    if MASK_OFFSET:  # SGLang's window_kv_offsets: the mask's first `off` columns are skipped
        off = tl.load(mask_offsets_ptr + seq).to(tl.int32)
        seq_len += off
        mask_start += off

    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    tok = rows // PACK
    q_head = head * PACK + rows % PACK if PACK > 1 else head + rows * 0
    valid = tok < ext_len
    tok_lo = block * BLOCK_M // PACK
    tok_hi = tl.minimum(ext_len - 1, ((block + 1) * BLOCK_M - 1) // PACK)
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    offs_n = tl.arange(0, BLOCK_N)
    d_ok = offs_d < LQ
    dv_ok = offs_dv < LV
    q_rows = (ext_start + tok.to(tl.int64)) * stride_qt + q_head.to(tl.int64) * stride_qh
    q = tl.load(Q + q_rows[:, None] + offs_d[None, :], mask=valid[:, None] & d_ok[None, :], other=0.0)
    qpe = q
    if BLOCK_DPE > 0:
        offs_dpe = BLOCK_D + tl.arange(0, BLOCK_DPE)
        qpe = tl.load(Q + q_rows[:, None] + offs_dpe[None, :], mask=valid[:, None], other=0.0)

    acc = tl.zeros([BLOCK_M, BLOCK_DV], dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - 1.0e30
    MASKED_ALWAYS: tl.constexpr = USE_MASK or WINDOW > 0

    # ---- prefix keys of this split, gathered through kv_indices; their logits x k_scale (SGLang's KV-cache
    # dequantization scales; the extend keys keep the softmax scale alone)
    ext_qk_scale = qk_scale
    ext_sm_scale = sm_scale
    qk_scale = qk_scale * k_scale
    sm_scale = sm_scale * k_scale
    lo_bound = pre_len + tok_lo - WINDOW if WINDOW > 0 else 0
    lo, hi = _prefix_range(pre_len, split, lo_bound, NUM_SPLITS, BLOCK_N)
    if SKIP_PREFIX:
        hi = lo
    kb_head = K_buf + kv_head.to(tl.int64) * stride_kbh
    vb_head = V_buf + kv_head.to(tl.int64) * stride_vbh
    PREFIX_MASKED: tl.constexpr = WINDOW > 0 or (USE_MASK and not SKIP_PREFIX_MASK)
    full_hi = hi if PREFIX_MASKED else lo + (hi - lo) // BLOCK_N * BLOCK_N
    if not PREFIX_MASKED:
        if GATHER_STAGES > 0:
            # tl.range pipelining also covers the kv_indices load that the K/V gathers depend on
            for start in tl.range(lo, full_hi, BLOCK_N, num_stages=GATHER_STAGES):
                acc, l_i, m_i = _prefix_tile(acc, l_i, m_i, q, qpe, start, hi, kv_indices, pre_start, kb_head, vb_head,
                                             stride_kbt, stride_vbt, K_buf_desc, V_buf_desc, kv_head, tok, valid,
                                             pre_len, seq_len, mask_ptr, mask_start, qk_scale, sm_scale, offs_n, offs_d,
                                             offs_dv, LQ, LV, BLOCK_D, BLOCK_DPE, BLOCK_DV, WINDOW, LOGIT_CAP,
                                             IS_CAUSAL, USE_MASK, SKIP_PREFIX_MASK, V_IS_K, FOLD_SCALE, False,
                                             PREFIX_CONTIG, TMA_PREFIX)
        elif AHEAD_ROWS > 0:  # gather-ahead (family_ahead.py): also copy a slice of head kv_head + AHEAD_HEADS
            target = kv_head + AHEAD_HEADS
            copies = target < num_heads
            target = tl.minimum(target, num_heads - 1)
            a_lo = block * tl.cdiv(pre_len, count)
            a_hi = tl.where(copies, tl.minimum(pre_len, a_lo + tl.cdiv(pre_len, count)), a_lo)
            if AHEAD_SYNC:
                if kv_head >= AHEAD_HEADS:  # this head's prefix is copied by the programs of kv_head - AHEAD_HEADS
                    ahead_wait(ahead_cnt + 1 + seq * num_heads + kv_head, count, PROXY_FENCE)
            acc, l_i, m_i = ahead_prefix(
                acc, l_i, m_i, q, qpe, lo, full_hi, hi, kv_indices, pre_start, kb_head, vb_head, stride_kbt,
                stride_vbt, K_buf_desc, V_buf_desc, kv_head, tok, valid, pre_len, seq_len, mask_ptr, mask_start,
                qk_scale, sm_scale, offs_n, offs_d, offs_dv, a_lo, a_hi, K_src + target.to(tl.int64) * stride_ksh,
                V_src + target.to(tl.int64) * stride_vsh, K_buf + target.to(tl.int64) * stride_kbh,
                V_buf + target.to(tl.int64) * stride_vbh, stride_kst, stride_vst, LQ, LV, BLOCK_D, BLOCK_DPE,
                BLOCK_DV, BLOCK_N, WINDOW, LOGIT_CAP, IS_CAUSAL, USE_MASK, SKIP_PREFIX_MASK, V_IS_K, FOLD_SCALE,
                PREFIX_CONTIG, TMA_PREFIX, AHEAD_ROWS, SCORES_AHEAD)
            if AHEAD_SYNC:
                if copies:
                    ahead_release(ahead_cnt + 1 + seq * num_heads + target)
        elif SCORES_AHEAD and PREFIX_CONTIG and BLOCK_DPE == 0:  # family_pipelined.py
            acc, l_i, m_i = _pipelined_rows(acc, l_i, m_i, q, lo, full_hi, kb_head + pre_start * stride_kbt,
                                            vb_head + pre_start * stride_vbt, stride_kbt, stride_vbt, K_buf_desc,
                                            V_buf_desc, pre_start.to(tl.int32), kv_head, valid, qk_scale, sm_scale,
                                            offs_n, offs_d, offs_dv, LQ, LV, BLOCK_D, BLOCK_DV, BLOCK_N, LOGIT_CAP,
                                            V_IS_K, FOLD_SCALE, TMA_PREFIX, SCORES_AHEAD)
        else:
            for start in range(lo, full_hi, BLOCK_N):
                acc, l_i, m_i = _prefix_tile(acc, l_i, m_i, q, qpe, start, hi, kv_indices, pre_start, kb_head, vb_head,
                                             stride_kbt, stride_vbt, K_buf_desc, V_buf_desc, kv_head, tok, valid,
                                             pre_len, seq_len, mask_ptr, mask_start, qk_scale, sm_scale, offs_n, offs_d,
                                             offs_dv, LQ, LV, BLOCK_D, BLOCK_DPE, BLOCK_DV, WINDOW, LOGIT_CAP,
                                             IS_CAUSAL, USE_MASK, SKIP_PREFIX_MASK, V_IS_K, FOLD_SCALE, False,
                                             PREFIX_CONTIG, TMA_PREFIX)
    tail_lo = lo if PREFIX_MASKED else full_hi
    if AHEAD_ROWS > 0:  # a box past the prefix could hold rows nobody copied (a next sequence without queries,
        # 0 * NaN = NaN in P @ V): the partial last tile is read through kv_indices from the cache instead
        for start in range(tail_lo, hi, BLOCK_N):
            acc, l_i, m_i = _prefix_tile(acc, l_i, m_i, q, qpe, start, hi, kv_indices, pre_start,
                                         K_src + kv_head.to(tl.int64) * stride_ksh,
                                         V_src + kv_head.to(tl.int64) * stride_vsh, stride_kst, stride_vst,
                                         K_buf_desc, V_buf_desc, kv_head, tok, valid, pre_len, seq_len, mask_ptr,
                                         mask_start, qk_scale, sm_scale, offs_n, offs_d, offs_dv, LQ, LV, BLOCK_D,
                                         BLOCK_DPE, BLOCK_DV, WINDOW, LOGIT_CAP, IS_CAUSAL, USE_MASK, SKIP_PREFIX_MASK,
                                         V_IS_K, FOLD_SCALE, True, False, False)
    else:
        for start in range(tail_lo, hi, BLOCK_N):
            acc, l_i, m_i = _prefix_tile(acc, l_i, m_i, q, qpe, start, hi, kv_indices, pre_start, kb_head, vb_head,
                                         stride_kbt, stride_vbt, K_buf_desc, V_buf_desc, kv_head, tok, valid, pre_len,
                                         seq_len, mask_ptr, mask_start, qk_scale, sm_scale, offs_n, offs_d, offs_dv, LQ,
                                         LV, BLOCK_D, BLOCK_DPE, BLOCK_DV, WINDOW, LOGIT_CAP, IS_CAUSAL, USE_MASK,
                                         SKIP_PREFIX_MASK, V_IS_K, FOLD_SCALE, True, PREFIX_CONTIG, TMA_PREFIX)

    if V_SCALED:  # the prefix part of the accumulator times v_scale (the online softmax rescales acc uniformly)
        acc = acc * v_scale

    # ---- extend keys (contiguous); the last split does them
    if split == NUM_SPLITS - 1 and not SKIP_EXTEND:
        acc, l_i, m_i = _extend_keys(acc, l_i, m_i, q, qpe, K_ext, V_ext, K_ext_desc, V_ext_desc, ext_start, ext_len,
                                     pre_len, seq_len, tok, valid, tok_lo, tok_hi, kv_head, stride_kt, stride_kh,
                                     stride_vt, stride_vh, mask_ptr, mask_start, ext_qk_scale, ext_sm_scale, offs_n,
                                     offs_d, offs_dv, LQ, LV, BLOCK_D, BLOCK_DPE, BLOCK_DV, BLOCK_N, WINDOW, LOGIT_CAP,
                                     IS_CAUSAL, USE_MASK, MASKED_ALWAYS, V_IS_K, FOLD_SCALE, TMA_EXT, SCORES_AHEAD)

    _write_result(acc, l_i, m_i, O, Mid_O, Mid_L, LSE, sinks_ptr, ext_start, tok, q_head, valid, split, offs_dv,
                  dv_ok, stride_ot, stride_oh, stride_ms, stride_mt, stride_mh, stride_ls, stride_lt, stride_et,
                  stride_eh, NUM_SPLITS, HAS_SINK, STORE_LSE)


@triton.jit
def _extend_keys(acc, l_i, m_i, q, qpe, K_ext, V_ext, k_desc, v_desc, ext_start, ext_len, pre_len, seq_len, tok,
                 valid, tok_lo, tok_hi, kv_head, stride_kt, stride_kh, stride_vt, stride_vh, mask_ptr, mask_start,
                 qk_scale, sm_scale, offs_n, offs_d, offs_dv, LQ: tl.constexpr, LV: tl.constexpr, BLOCK_D: tl.constexpr,
                 BLOCK_DPE: tl.constexpr, BLOCK_DV: tl.constexpr, BLOCK_N: tl.constexpr, WINDOW: tl.constexpr,
                 LOGIT_CAP: tl.constexpr, IS_CAUSAL: tl.constexpr, USE_MASK: tl.constexpr,
                 MASKED_ALWAYS: tl.constexpr, V_IS_K: tl.constexpr, FOLD_SCALE: tl.constexpr, TMA: tl.constexpr,
                 SCORES_AHEAD: tl.constexpr):
    """Online softmax over the extend keys: unmasked full tiles below the block's first row (SCORES_AHEAD: the
    next tile's scores issued before this tile's softmax, `family_pipelined.py`), then masked."""
    causal = IS_CAUSAL and not USE_MASK
    end = tok_hi + 1 if causal else ext_len
    full_end = ((tok_lo + 1) // BLOCK_N) * BLOCK_N if causal else (ext_len // BLOCK_N) * BLOCK_N
    start0 = 0
    if WINDOW > 0:
        start0 = tl.maximum(tok_lo - WINDOW, 0) // BLOCK_N * BLOCK_N
    if MASKED_ALWAYS:
        full_end = start0
    k_head = K_ext + ext_start * stride_kt + kv_head.to(tl.int64) * stride_kh
    v_head = V_ext + ext_start * stride_vt + kv_head.to(tl.int64) * stride_vh
    row0 = ext_start.to(tl.int32)  # TMA only: the sequence's first row in k_extend / v_extend
    if SCORES_AHEAD and BLOCK_DPE == 0:
        acc, l_i, m_i = _pipelined_rows(acc, l_i, m_i, q, start0, full_end, k_head, v_head, stride_kt, stride_vt,
                                        k_desc, v_desc, row0, kv_head, valid, qk_scale, sm_scale, offs_n, offs_d,
                                        offs_dv, LQ, LV, BLOCK_D, BLOCK_DV, BLOCK_N, LOGIT_CAP, V_IS_K, FOLD_SCALE,
                                        TMA, SCORES_AHEAD)
        start0 = full_end
    for start in range(start0, full_end, BLOCK_N):
        acc, l_i, m_i = _extend_tile(acc, l_i, m_i, q, qpe, start, end, k_head, v_head, stride_kt, stride_vt,
                                     k_desc, v_desc, row0, kv_head, tok, valid, pre_len, seq_len, mask_ptr,
                                     mask_start, qk_scale, sm_scale, offs_n, offs_d, offs_dv, LQ, LV, BLOCK_D,
                                     BLOCK_DPE, BLOCK_DV, WINDOW, LOGIT_CAP, IS_CAUSAL, USE_MASK, V_IS_K, FOLD_SCALE,
                                     False, TMA)
    for start in range(full_end, end, BLOCK_N):
        acc, l_i, m_i = _extend_tile(acc, l_i, m_i, q, qpe, start, end, k_head, v_head, stride_kt, stride_vt,
                                     k_desc, v_desc, row0, kv_head, tok, valid, pre_len, seq_len, mask_ptr,
                                     mask_start, qk_scale, sm_scale, offs_n, offs_d, offs_dv, LQ, LV, BLOCK_D,
                                     BLOCK_DPE, BLOCK_DV, WINDOW, LOGIT_CAP, IS_CAUSAL, USE_MASK, V_IS_K, FOLD_SCALE,
                                     True, TMA)
    return acc, l_i, m_i


@triton.jit
def _extend_tile(acc, l_i, m_i, q, qpe, start, end, k_head, v_head, stride_kt, stride_vt, k_desc, v_desc, row0,
                 kv_head, tok, valid, pre_len, seq_len, mask_ptr, mask_start, qk_scale, sm_scale, offs_n, offs_d,
                 offs_dv, LQ: tl.constexpr, LV: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DPE: tl.constexpr,
                 BLOCK_DV: tl.constexpr, WINDOW: tl.constexpr, LOGIT_CAP: tl.constexpr, IS_CAUSAL: tl.constexpr,
                 USE_MASK: tl.constexpr, V_IS_K: tl.constexpr, FOLD_SCALE: tl.constexpr, MASKED: tl.constexpr,
                 TMA: tl.constexpr):
    """One tile of contiguous extend K/V folded into the online softmax (masked: causal/custom/window); with
    TMA the tile is one descriptor load per K and V at row row0 + start."""
    kpos_e = start + offs_n
    key_ok = kpos_e < end
    krow = kpos_e.to(tl.int64)
    k = _load_rows(k_head, krow, key_ok, stride_kt, offs_d, k_desc, row0 + start, kv_head * LQ, LQ, BLOCK_D, MASKED,
                   TMA)
    kpe = k
    if BLOCK_DPE > 0:
        kpe = _load_rows(k_head, krow, key_ok, stride_kt, BLOCK_D + tl.arange(0, BLOCK_DPE), k_desc, row0, 0,
                         BLOCK_DPE, BLOCK_DPE, MASKED, False)
    if V_IS_K:
        v = k
    else:
        v = _load_rows(v_head, krow, key_ok, stride_vt, offs_dv, v_desc, row0 + start, kv_head * LV, LV, BLOCK_DV,
                       MASKED, TMA)
    vis = valid[:, None]
    if MASKED:
        vis = _visible(tok, valid, pre_len + kpos_e, key_ok, pre_len, seq_len, mask_ptr, mask_start, False,
                       WINDOW, IS_CAUSAL, USE_MASK, False)
    return _attend_tile(acc, l_i, m_i, q, qpe, k, kpe, v, vis, qk_scale, sm_scale, LOGIT_CAP, BLOCK_DPE, MASKED,
                        FOLD_SCALE)


@triton.jit
def _write_result(acc, l_i, m_i, O, Mid_O, Mid_L, LSE, sinks_ptr, ext_start, tok, q_head, valid, split, offs_dv,
                  dv_ok, stride_ot, stride_oh, stride_ms, stride_mt, stride_mh, stride_ls, stride_lt, stride_et,
                  stride_eh, NUM_SPLITS: tl.constexpr, HAS_SINK: tl.constexpr, STORE_LSE: tl.constexpr):
    """Single split: normalize (plus sink) and store o, and with STORE_LSE the natural-log LSE. Several: store the
    partial (o / l, m + log2 l)."""
    row = ext_start + tok.to(tl.int64)
    store_mask = valid[:, None] & dv_ok[None, :]
    if NUM_SPLITS == 1:
        denom = l_i
        sink = m_i
        if HAS_SINK:
            sink = tl.load(sinks_ptr + q_head, mask=valid, other=0.0).to(tl.float32) * 1.4426950408889634
            denom += tl.exp2(tl.minimum(sink - m_i, 126.0))
        out = acc / tl.where(denom == 0.0, 1.0, denom)[:, None]
        tl.store(O + row[:, None] * stride_ot + q_head.to(tl.int64)[:, None] * stride_oh + offs_dv[None, :],
                 out.to(O.dtype.element_ty), mask=store_mask)
        if STORE_LSE:
            _store_lse(LSE, row, q_head, valid, m_i, l_i, sink, stride_et, stride_eh, HAS_SINK)
    else:
        out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
        lse = tl.where(l_i == 0.0, float("-inf"), m_i + tl.log2(l_i))
        split64 = split.to(tl.int64)
        mid_row = split64 * stride_ms + row * stride_mt + q_head.to(tl.int64) * stride_mh
        tl.store(Mid_O + mid_row[:, None] + offs_dv[None, :], out, mask=store_mask)
        tl.store(Mid_L + split64 * stride_ls + row * stride_lt + q_head, lse, mask=valid)


@triton.jit
def _store_lse(LSE, row, q_head, valid, m, l, sink, stride_et, stride_eh, HAS_SINK: tl.constexpr):
    """LSE[row, q_head] = ln 2 * log2(l * 2^m + 2^sink) (sink in log2 units, only with HAS_SINK), computed around
    max(m, sink); -inf where nothing was summed (SGLang's empty-row convention, which merges to nothing)."""
    top = m
    if HAS_SINK:
        top = tl.maximum(m, sink)
    top = tl.where(top == float("-inf"), 0.0, top)
    total = l * tl.exp2(m - top)
    if HAS_SINK:
        total += tl.exp2(sink - top)
    lse = tl.where(total == 0.0, float("-inf"), (top + tl.log2(total)) * 0.6931471805599453)
    tl.store(LSE + row * stride_et + q_head.to(tl.int64) * stride_eh, lse.to(LSE.dtype.element_ty), mask=valid)


@triton.jit
def _merge_kernel(Mid_O, Mid_L, O, LSE, sinks_ptr, num_q_heads, stride_ms, stride_mt, stride_mh, stride_ls,
                  stride_lt, stride_ot, stride_oh, stride_et, stride_eh, LV: tl.constexpr, BLOCK_DV: tl.constexpr,
                  NUM_SPLITS: tl.constexpr, BLOCK_S: tl.constexpr, HAS_SINK: tl.constexpr,
                  STORE_LSE: tl.constexpr):
    """Merge split-KV partials of one (token, q head): o = Σ_s 2^(lse_s - M) o_s / (Σ_s 2^(lse_s - M) + sink); with
    STORE_LSE also LSE = ln 2 * (M + log2 of that denominator), -inf when it is 0."""
    token = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    offs_s = tl.arange(0, BLOCK_S).to(tl.int64)
    offs_dv = tl.arange(0, BLOCK_DV)
    s_ok = offs_s < NUM_SPLITS
    lse = tl.load(Mid_L + offs_s * stride_ls + token * stride_lt + head, mask=s_ok, other=float("-inf"))
    m = tl.max(lse, 0)
    if HAS_SINK:
        sink = tl.load(sinks_ptr + head).to(tl.float32) * 1.4426950408889634
        m = tl.maximum(m, sink)
    m = tl.where(m == float("-inf"), 0.0, m)
    w = tl.exp2(lse - m)
    denom = tl.sum(w, 0)
    if HAS_SINK:
        denom += tl.exp2(sink - m)
    parts = tl.load(Mid_O + offs_s[:, None] * stride_ms + token * stride_mt + head * stride_mh + offs_dv[None, :],
                    mask=s_ok[:, None] & (offs_dv < LV)[None, :], other=0.0)
    out = tl.sum(parts * w[:, None], 0) / tl.where(denom == 0.0, 1.0, denom)
    tl.store(O + token * stride_ot + head * stride_oh + offs_dv, out.to(O.dtype.element_ty), mask=offs_dv < LV)
    if STORE_LSE:
        total = tl.where(denom == 0.0, float("-inf"), (m + tl.log2(denom)) * 0.6931471805599453)
        tl.store(LSE + token * stride_et + head * stride_eh, total.to(LSE.dtype.element_ty))


def merge_grid(total_extend: int, num_q_heads: int) -> tuple[int, int]:
    """Grid of `_merge_kernel`: one program per (token, q head)."""
    return (total_extend, num_q_heads)


__all__ = ["LOG2E", "_family_fwd_kernel", "_merge_kernel", "merge_grid", "triton"]
