"""Triton kernels of the optimized extend-attention family (launched by `family.run_family`).

One program = one block of BLOCK_M packed query rows x one head x one split of the prefix:
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

from kernels.extend_attention.common import dot, stable_tanh

LOG2E = 1.4426950408889634


@triton.jit
def _locate_block(qo_indptr, batch, lin, PACK: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_B: tl.constexpr,
                  HEAVY_FIRST: tl.constexpr):
    """Map a flat program index to (sequence, row block within it, total row blocks, row blocks of that
    sequence)."""
    offs_b = tl.arange(0, BLOCK_B)
    in_batch = offs_b < batch
    starts = tl.load(qo_indptr + offs_b, mask=in_batch, other=0)
    ends = tl.load(qo_indptr + offs_b + 1, mask=in_batch, other=0)
    nblocks = tl.cdiv((ends - starts).to(tl.int32) * PACK, BLOCK_M)
    cum = tl.cumsum(nblocks, 0)
    seq = tl.sum((cum <= lin).to(tl.int32), 0)
    first = tl.sum(tl.where(offs_b == seq, cum - nblocks, 0), 0)
    count = tl.sum(tl.where(offs_b == seq, nblocks, 0), 0)
    block = lin - first
    if HEAVY_FIRST:
        block = count - 1 - block
    return seq, block, tl.sum(nblocks, 0), count


@triton.jit
def _attend_tile(acc, l_i, m_i, q, qpe, k, kpe, v, visible, qk_scale, sm_scale,
                 LOGIT_CAP: tl.constexpr, BLOCK_DPE: tl.constexpr, APPLY_MASK: tl.constexpr,
                 FOLD_SCALE: tl.constexpr):
    """One online-softmax step over a key tile. k: [N, D], v: [N, Dv]; scores in log2 units.

    FOLD_SCALE (scale > 0, no logit cap): the row max is taken on raw scores and the scale is applied in the
    same fused multiply-add that subtracts it, one operation per score fewer (FlashAttention-2 trick).
    """
    qk = dot(q, tl.trans(k))
    if BLOCK_DPE > 0:
        qk += dot(qpe, tl.trans(kpe))
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
    acc = acc * alpha[:, None]
    acc = dot(p.to(v.dtype), v, acc)
    return acc, l_i, m_new


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
        if TMA and MASKED:  # a box past the prefix may hold rows no one wrote yet (gather-ahead): 0 * NaN is NaN
            v = tl.where(key_ok[:, None], v, 0.0)
    vis = valid[:, None]
    if MASKED:
        vis = _visible(tok, valid, kpos, key_ok, pre_len, seq_len, mask_ptr, mask_start, True,
                       WINDOW, IS_CAUSAL, USE_MASK, SKIP_PREFIX_MASK)
    return _attend_tile(acc, l_i, m_i, q, qpe, k, kpe, v, vis, qk_scale, sm_scale, LOGIT_CAP, BLOCK_DPE,
                        MASKED, FOLD_SCALE)


@triton.jit
def _ahead_slots(a_tok, a_hi, kv_indices, pre_start):
    """Gather-ahead, step 1: cache slots of rows a_tok (< a_hi) of the sequence's prefix."""
    return tl.load(kv_indices + pre_start + a_tok, mask=a_tok < a_hi, other=0).to(tl.int64)


@triton.jit
def _ahead_load(a_tok, a_hi, slots, src_k, src_v, stride_kst, stride_vst, offs_d, offs_dv, LQ: tl.constexpr,
                LV: tl.constexpr):
    """Gather-ahead, step 2: those rows of the next KV head's K and V, read at their cache slots."""
    ok = a_tok < a_hi
    ak = tl.load(src_k + slots[:, None] * stride_kst + offs_d[None, :], mask=ok[:, None] & (offs_d < LQ)[None, :])
    av = tl.load(src_v + slots[:, None] * stride_vst + offs_dv[None, :], mask=ok[:, None] & (offs_dv < LV)[None, :])
    return ak, av


@triton.jit
def _ahead_store(ak, av, a_tok, a_hi, pre_start, dst_k, dst_v, stride_kgt, stride_vgt, offs_d, offs_dv,
                 LQ: tl.constexpr, LV: tl.constexpr):
    """Gather-ahead, step 3: write those rows at pre_start + a_tok of the contiguous prefix buffers."""
    ok = a_tok < a_hi
    rows = pre_start + a_tok.to(tl.int64)
    tl.store(dst_k + rows[:, None] * stride_kgt + offs_d[None, :], ak, mask=ok[:, None] & (offs_d < LQ)[None, :])
    tl.store(dst_v + rows[:, None] * stride_vgt + offs_dv[None, :], av, mask=ok[:, None] & (offs_dv < LV)[None, :])


@triton.jit
def _prefix_range(pre_len, split, pre_lo_bound, NUM_SPLITS: tl.constexpr, BLOCK_N: tl.constexpr):
    """[lo, hi) of prefix keys for this split, lo aligned to the split start plus whole tiles."""
    chunk = tl.cdiv(tl.cdiv(pre_len, NUM_SPLITS), BLOCK_N) * BLOCK_N
    lo = split * chunk
    hi = tl.minimum(pre_len, lo + chunk)
    skip = tl.maximum(pre_lo_bound - lo, 0) // BLOCK_N * BLOCK_N
    return lo + skip, hi


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


@triton.jit
def _family_fwd_kernel(
    Q, K_ext, V_ext, O, K_buf, V_buf, qo_indptr, kv_indptr, kv_indices, mask_ptr, mask_indptr, sinks_ptr,
    Mid_O, Mid_L, K_ext_desc, V_ext_desc, K_buf_desc, V_buf_desc, K_src, V_src, qk_scale, sm_scale, batch,
    head_base, stride_kst, stride_ksh, stride_vst, stride_vsh,
    stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh, stride_ot, stride_oh,
    stride_kbt, stride_kbh, stride_vbt, stride_vbh, stride_ms, stride_mt, stride_mh, stride_ls, stride_lt,
    LQ: tl.constexpr, LV: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DPE: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_B: tl.constexpr, GROUP: tl.constexpr, PACK: tl.constexpr,
    NUM_SPLITS: tl.constexpr, WINDOW: tl.constexpr, LOGIT_CAP: tl.constexpr, IS_CAUSAL: tl.constexpr,
    USE_MASK: tl.constexpr, SKIP_PREFIX_MASK: tl.constexpr, HAS_SINK: tl.constexpr, V_IS_K: tl.constexpr,
    HEAVY_FIRST: tl.constexpr, FOLD_SCALE: tl.constexpr, GATHER_STAGES: tl.constexpr,
    PREFIX_CONTIG: tl.constexpr, TMA_EXT: tl.constexpr, TMA_PREFIX: tl.constexpr, AHEAD_ROWS: tl.constexpr,
):
    seq, block, total, count = _locate_block(qo_indptr, batch, tl.program_id(0), PACK, BLOCK_M, BLOCK_B,
                                             HEAVY_FIRST)
    if tl.program_id(0) >= total:
        return
    head = tl.program_id(1) + head_base
    split = tl.program_id(2)
    kv_head = head if PACK > 1 else head // GROUP
    ext_start = tl.load(qo_indptr + seq).to(tl.int64)
    ext_len = (tl.load(qo_indptr + seq + 1) - ext_start).to(tl.int32)
    pre_start = tl.load(kv_indptr + seq).to(tl.int64)
    pre_len = (tl.load(kv_indptr + seq + 1) - pre_start).to(tl.int32)
    seq_len = pre_len + ext_len
    mask_start = tl.load(mask_indptr + seq).to(tl.int64) if USE_MASK else 0

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

    # ---- prefix keys of this split, gathered through kv_indices
    lo_bound = pre_len + tok_lo - WINDOW if WINDOW > 0 else 0
    lo, hi = _prefix_range(pre_len, split, lo_bound, NUM_SPLITS, BLOCK_N)
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
        elif AHEAD_ROWS > 0:  # gather-ahead: this program also copies a slice of KV head kv_head + 1's prefix
            a_lo = block * tl.cdiv(pre_len, count)
            a_hi = tl.minimum(pre_len, a_lo + tl.cdiv(pre_len, count))
            a_src_k = K_src + (kv_head + 1).to(tl.int64) * stride_ksh
            a_src_v = V_src + (kv_head + 1).to(tl.int64) * stride_vsh
            a_dst_k = K_buf + (kv_head + 1).to(tl.int64) * stride_kbh
            a_dst_v = V_buf + (kv_head + 1).to(tl.int64) * stride_vbh
            # software-pipelined: at tile i the rows of chunk i (loaded at tile i - 1) are stored, chunk i + 1's rows
            # are loaded at slots read at tile i - 1 and chunk i + 2's slots are read, so neither the slot load nor
            # the row loads that depend on it stall the warps in front of the tile's tensor-core work
            a_tok = a_lo + tl.arange(0, AHEAD_ROWS)
            ak, av = _ahead_load(a_tok, a_hi, _ahead_slots(a_tok, a_hi, kv_indices, pre_start), a_src_k, a_src_v,
                                 stride_kst, stride_vst, offs_d, offs_dv, LQ, LV)
            n_slots = _ahead_slots(a_tok + AHEAD_ROWS, a_hi, kv_indices, pre_start)
            for start in range(lo, full_hi, BLOCK_N):
                n_tok = a_tok + AHEAD_ROWS
                nk, nv = _ahead_load(n_tok, a_hi, n_slots, a_src_k, a_src_v, stride_kst, stride_vst, offs_d, offs_dv,
                                     LQ, LV)
                n_slots = _ahead_slots(n_tok + AHEAD_ROWS, a_hi, kv_indices, pre_start)
                _ahead_store(ak, av, a_tok, a_hi, pre_start, a_dst_k, a_dst_v, stride_kbt, stride_vbt, offs_d, offs_dv,
                             LQ, LV)
                acc, l_i, m_i = _prefix_tile(acc, l_i, m_i, q, qpe, start, hi, kv_indices, pre_start, kb_head, vb_head,
                                             stride_kbt, stride_vbt, K_buf_desc, V_buf_desc, kv_head, tok, valid,
                                             pre_len, seq_len, mask_ptr, mask_start, qk_scale, sm_scale, offs_n, offs_d,
                                             offs_dv, LQ, LV, BLOCK_D, BLOCK_DPE, BLOCK_DV, WINDOW, LOGIT_CAP,
                                             IS_CAUSAL, USE_MASK, SKIP_PREFIX_MASK, V_IS_K, FOLD_SCALE, False,
                                             PREFIX_CONTIG, TMA_PREFIX)
                a_tok, ak, av = n_tok, nk, nv
            _ahead_store(ak, av, a_tok, a_hi, pre_start, a_dst_k, a_dst_v, stride_kbt, stride_vbt, offs_d, offs_dv,
                         LQ, LV)
            for a0 in range(a_lo + ((full_hi - lo) // BLOCK_N + 1) * AHEAD_ROWS, a_hi, AHEAD_ROWS):  # the rest
                r_tok = a0 + tl.arange(0, AHEAD_ROWS)
                rk, rv = _ahead_load(r_tok, a_hi, _ahead_slots(r_tok, a_hi, kv_indices, pre_start), a_src_k, a_src_v,
                                     stride_kst, stride_vst, offs_d, offs_dv, LQ, LV)
                _ahead_store(rk, rv, r_tok, a_hi, pre_start, a_dst_k, a_dst_v, stride_kbt, stride_vbt, offs_d,
                             offs_dv, LQ, LV)
        else:
            for start in range(lo, full_hi, BLOCK_N):
                acc, l_i, m_i = _prefix_tile(acc, l_i, m_i, q, qpe, start, hi, kv_indices, pre_start, kb_head, vb_head,
                                             stride_kbt, stride_vbt, K_buf_desc, V_buf_desc, kv_head, tok, valid,
                                             pre_len, seq_len, mask_ptr, mask_start, qk_scale, sm_scale, offs_n, offs_d,
                                             offs_dv, LQ, LV, BLOCK_D, BLOCK_DPE, BLOCK_DV, WINDOW, LOGIT_CAP,
                                             IS_CAUSAL, USE_MASK, SKIP_PREFIX_MASK, V_IS_K, FOLD_SCALE, False,
                                             PREFIX_CONTIG, TMA_PREFIX)
    tail_lo = lo if PREFIX_MASKED else full_hi
    for start in range(tail_lo, hi, BLOCK_N):
        acc, l_i, m_i = _prefix_tile(acc, l_i, m_i, q, qpe, start, hi, kv_indices, pre_start, kb_head, vb_head,
                                     stride_kbt, stride_vbt, K_buf_desc, V_buf_desc, kv_head, tok, valid, pre_len,
                                     seq_len, mask_ptr, mask_start, qk_scale, sm_scale, offs_n, offs_d, offs_dv, LQ, LV,
                                     BLOCK_D, BLOCK_DPE, BLOCK_DV, WINDOW, LOGIT_CAP, IS_CAUSAL, USE_MASK,
                                     SKIP_PREFIX_MASK, V_IS_K, FOLD_SCALE, True, PREFIX_CONTIG, TMA_PREFIX)

    # ---- extend keys (contiguous); the last split does them
    if split == NUM_SPLITS - 1:
        acc, l_i, m_i = _extend_keys(acc, l_i, m_i, q, qpe, K_ext, V_ext, K_ext_desc, V_ext_desc, ext_start, ext_len,
                                     pre_len, seq_len, tok, valid, tok_lo, tok_hi, kv_head, stride_kt, stride_kh,
                                     stride_vt, stride_vh, mask_ptr, mask_start, qk_scale, sm_scale, offs_n, offs_d,
                                     offs_dv, LQ, LV, BLOCK_D, BLOCK_DPE, BLOCK_DV, BLOCK_N, WINDOW, LOGIT_CAP,
                                     IS_CAUSAL, USE_MASK, MASKED_ALWAYS, V_IS_K, FOLD_SCALE, TMA_EXT)

    _write_result(acc, l_i, m_i, O, Mid_O, Mid_L, sinks_ptr, ext_start, tok, q_head, valid, split, offs_dv, dv_ok,
                  stride_ot, stride_oh, stride_ms, stride_mt, stride_mh, stride_ls, stride_lt, NUM_SPLITS, HAS_SINK)


@triton.jit
def _extend_keys(acc, l_i, m_i, q, qpe, K_ext, V_ext, k_desc, v_desc, ext_start, ext_len, pre_len, seq_len, tok,
                 valid, tok_lo, tok_hi, kv_head, stride_kt, stride_kh, stride_vt, stride_vh, mask_ptr, mask_start,
                 qk_scale, sm_scale, offs_n, offs_d, offs_dv, LQ: tl.constexpr, LV: tl.constexpr, BLOCK_D: tl.constexpr,
                 BLOCK_DPE: tl.constexpr, BLOCK_DV: tl.constexpr, BLOCK_N: tl.constexpr, WINDOW: tl.constexpr,
                 LOGIT_CAP: tl.constexpr, IS_CAUSAL: tl.constexpr, USE_MASK: tl.constexpr,
                 MASKED_ALWAYS: tl.constexpr, V_IS_K: tl.constexpr, FOLD_SCALE: tl.constexpr, TMA: tl.constexpr):
    """Online softmax over the extend keys: unmasked full tiles below the block's first row, then masked."""
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
def _write_result(acc, l_i, m_i, O, Mid_O, Mid_L, sinks_ptr, ext_start, tok, q_head, valid, split, offs_dv, dv_ok,
                  stride_ot, stride_oh, stride_ms, stride_mt, stride_mh, stride_ls, stride_lt,
                  NUM_SPLITS: tl.constexpr, HAS_SINK: tl.constexpr):
    """Single split: normalize (plus sink) and store o. Several: store the partial (o / l, m + log2 l)."""
    row = ext_start + tok.to(tl.int64)
    store_mask = valid[:, None] & dv_ok[None, :]
    if NUM_SPLITS == 1:
        denom = l_i
        if HAS_SINK:
            sink = tl.load(sinks_ptr + q_head, mask=valid, other=0.0).to(tl.float32)
            denom += tl.exp2(tl.minimum(sink * 1.4426950408889634 - m_i, 126.0))
        out = acc / tl.where(denom == 0.0, 1.0, denom)[:, None]
        tl.store(O + row[:, None] * stride_ot + q_head.to(tl.int64)[:, None] * stride_oh + offs_dv[None, :],
                 out.to(O.dtype.element_ty), mask=store_mask)
    else:
        out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
        lse = tl.where(l_i == 0.0, float("-inf"), m_i + tl.log2(l_i))
        split64 = split.to(tl.int64)
        mid_row = split64 * stride_ms + row * stride_mt + q_head.to(tl.int64) * stride_mh
        tl.store(Mid_O + mid_row[:, None] + offs_dv[None, :], out, mask=store_mask)
        tl.store(Mid_L + split64 * stride_ls + row * stride_lt + q_head, lse, mask=valid)


@triton.jit
def _merge_kernel(Mid_O, Mid_L, O, sinks_ptr, num_q_heads, stride_ms, stride_mt, stride_mh, stride_ls, stride_lt,
                  stride_ot, stride_oh, LV: tl.constexpr, BLOCK_DV: tl.constexpr, NUM_SPLITS: tl.constexpr,
                  BLOCK_S: tl.constexpr, HAS_SINK: tl.constexpr):
    """Merge split-KV partials of one (token, q head): o = Σ_s 2^(lse_s - M) o_s / (Σ_s 2^(lse_s - M) + sink)."""
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


def merge_grid(total_extend: int, num_q_heads: int) -> tuple[int, int]:
    """Grid of `_merge_kernel`: one program per (token, q head)."""
    return (total_extend, num_q_heads)


__all__ = ["LOG2E", "_family_fwd_kernel", "_merge_kernel", "merge_grid", "triton"]
