"""Triton kernel of the dedicated MLA path (`mla.run_mla`): absorbed multi-head latent attention, V = K[:, :D_V].

One program = one block of BLOCK_M packed query rows (row r = token r // G, q head kv_head * G + r % G: all G q
heads of the one KV head of MLA) x one split of the prefix:
- each key tile is loaded once, as two pieces of one row range: the latent ("nope") columns [BLOCK_N, 512] and
  the rope columns [BLOCK_N, 64]; scores are nope . nope^T + rope . rope^T (kept as two dots, so no padding of
  576 to 1024), and the same nope piece is V in P . V (V is a view of K's first 512 columns in the cache);
- key tiles of contiguous rows (the extend keys, the pre-gathered prefix) are loaded through host-side tensor
  descriptors (TMA_EXT / TMA_PREFIX: Hopper TMA boxes) or through pointers; the prefix can also be gathered in
  place through kv_indices. No row that is not a key of the sequence is ever multiplied in with NaN (0 x NaN =
  NaN): a box past a sequence's keys reads the next sequence's keys, or zeros (the pre-gather writes zeros past
  kv_indptr[B], and TMA past the tensor), which the key mask hides; pointer loads of a partial tile are masked;
- split-KV over the prefix (NUM_SPLITS programs per row block, the last one also does the extend keys); partials
  (o / l, log2-sum-exp) merged by `family_kernels._merge_kernel`; an empty partial is (0, -inf);
- online softmax in base 2, fp32 statistics and accumulator; prefix logits scaled by sm_scale * k_scale and
  prefix P . V by v_scale (SGLang 0.5.23's FP8-cache dequantization scales), the extend keys unscaled.

SPLIT_QK: Triton gives a dot whose result feeds another dot (the scores feeding P . V) all warps along M
(`warpsPerTileV3`, lib/Dialect/TritonGPU/Transforms/AccelerateMatmul.cpp); with 64 rows and 8 warps that is two
warpgroups computing the same 64 x BLOCK_N scores (sm_90 compile of the generic family at 576/512: warpsPerCTA
[8, 1] for the score dots). With SPLIT_QK the score dots sit in a branch on a runtime-true condition (`one` > 0),
whose result the compiler cannot trace into P . V, so they get warps by shape ([4, 2]: each warpgroup computes
half of the key columns) and no tensor-core work is duplicated.

Source of the method: FlashAttention-2 (Dao 2023) online softmax; Flash-Decoding split-KV (Dao et al. 2023);
DeepSeek-V2 (2024) absorbed MLA (latent 512 + rope 64, one latent KV head); FlashMLA (2025) 64-row q tiles of all
heads over one KV tile. Arithmetic and resource budget: `mla.py`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernels.extend_attention.common import dot, stable_tanh
from kernels.extend_attention.family_kernels import _block_counts, _locate_block, _prefix_range, _write_result

LOG2E = 1.4426950408889634


@triton.jit
def _scores(q, qpe, k, kpe, one, SPLIT_QK: tl.constexpr):
    """Raw scores q . k^T + qpe . kpe^T, [M, N] fp32 (see the module docstring for SPLIT_QK)."""
    if SPLIT_QK:
        if one > 0:
            s_nope = dot(q, tl.trans(k))
            s_rope = dot(qpe, tl.trans(kpe))
        else:
            s_nope = tl.zeros([q.shape[0], k.shape[0]], dtype=tl.float32)
            s_rope = tl.zeros([q.shape[0], k.shape[0]], dtype=tl.float32)
        s = s_nope + s_rope
    else:
        s = dot(qpe, tl.trans(kpe), dot(q, tl.trans(k)))
    return s


@triton.jit
def _attend(acc, l_i, m_i, q, qpe, k, kpe, visible, one, qk_scale, cap_scale, v_scale, LOGIT_CAP: tl.constexpr,
            MASKED: tl.constexpr, SCALE_V: tl.constexpr, SPLIT_QK: tl.constexpr):
    """One online-softmax step over a key tile (k: [N, D] is also V; kpe: [N, DPE]); scores in log2 units.

    qk_scale = scale * log2(e) without a logit cap; with one, logits are cap * tanh(s * cap_scale / cap) with
    cap_scale = scale. SCALE_V multiplies the probabilities fed to P . V by v_scale (not the row sum).
    """
    s = _scores(q, qpe, k, kpe, one, SPLIT_QK)
    if LOGIT_CAP > 0:
        s = (LOGIT_CAP * 1.4426950408889634) * stable_tanh(s * (cap_scale / LOGIT_CAP))
    else:
        s = s * qk_scale
    if MASKED:
        s = tl.where(visible, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    p = tl.exp2(s - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    if SCALE_V:
        p = p * v_scale
    acc = dot(p.to(k.dtype), k, acc * alpha[:, None])
    return acc, l_i, m_new


@triton.jit
def _load_key_tile(base, rows, row_ok, stride_row, nope_desc, rope_desc, desc_row, desc_col,
                   D: tl.constexpr, DPE: tl.constexpr, MASKED: tl.constexpr, TMA: tl.constexpr):
    """(nope [N, D], rope [N, DPE]) of key rows `rows` at base + row * stride_row (masked rows read as 0), or, with
    TMA, the descriptor boxes at (desc_row, desc_col) and (desc_row, desc_col + D) of a 2-D [rows, H_kv * 576]
    view (contiguous rows desc_row + n)."""
    if TMA:
        return nope_desc.load([desc_row, desc_col]), rope_desc.load([desc_row, desc_col + D])
    offs_d = tl.arange(0, D)
    offs_pe = D + tl.arange(0, DPE)
    ptrs = base + rows[:, None] * stride_row
    if MASKED:
        k = tl.load(ptrs + offs_d[None, :], mask=row_ok[:, None], other=0.0)
        kpe = tl.load(ptrs + offs_pe[None, :], mask=row_ok[:, None], other=0.0)
    else:
        k = tl.load(ptrs + offs_d[None, :])
        kpe = tl.load(ptrs + offs_pe[None, :])
    return k, kpe


@triton.jit
def _prefix_tile(acc, l_i, m_i, q, qpe, start, hi, kv_indices, pre_start, kp_head, stride_pt, nope_desc, rope_desc,
                 desc_col, offs_n, valid, one, qk_scale, cap_scale, v_scale, D: tl.constexpr, DPE: tl.constexpr,
                 LOGIT_CAP: tl.constexpr, SCALE_V: tl.constexpr, SPLIT_QK: tl.constexpr, MASKED: tl.constexpr,
                 PREFIX_CONTIG: tl.constexpr, TMA: tl.constexpr):
    """Prefix keys [start, start + N) (< hi) of one sequence: row pre_start + key of the pre-gathered buffer
    (PREFIX_CONTIG) or cache slot kv_indices[pre_start + key]."""
    kpos = start + offs_n
    key_ok = kpos < hi
    if PREFIX_CONTIG:
        rows = pre_start + kpos.to(tl.int64)
    elif MASKED:
        rows = tl.load(kv_indices + pre_start + kpos, mask=key_ok, other=0).to(tl.int64)
    else:
        rows = tl.load(kv_indices + pre_start + kpos).to(tl.int64)
    k, kpe = _load_key_tile(kp_head, rows, key_ok, stride_pt, nope_desc, rope_desc, (pre_start + start).to(tl.int32),
                            desc_col, D, DPE, MASKED, TMA)
    visible = valid[:, None] & key_ok[None, :]
    return _attend(acc, l_i, m_i, q, qpe, k, kpe, visible, one, qk_scale, cap_scale, v_scale, LOGIT_CAP, MASKED,
                   SCALE_V, SPLIT_QK)


@triton.jit
def _extend_tile(acc, l_i, m_i, q, qpe, start, end, ke_head, stride_kt, nope_desc, rope_desc, row0, desc_col, tok,
                 offs_n, valid, one, qk_scale, cap_scale, D: tl.constexpr, DPE: tl.constexpr,
                 LOGIT_CAP: tl.constexpr, SPLIT_QK: tl.constexpr, IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr,
                 TMA: tl.constexpr):
    """Extend keys [start, start + N) (< end) of one sequence, rows row0 + key of k_extend; causal: key <= token.
    A TMA box may cover rows past the sequence (the next sequence's keys, or zeros past the tensor): finite values
    that the mask hides."""
    kpos = start + offs_n
    key_ok = kpos < end
    k, kpe = _load_key_tile(ke_head, kpos.to(tl.int64), key_ok, stride_kt, nope_desc, rope_desc, row0 + start,
                            desc_col, D, DPE, MASKED, TMA)
    visible = valid[:, None] & key_ok[None, :]
    if IS_CAUSAL:
        visible &= kpos[None, :] <= tok[:, None]
    return _attend(acc, l_i, m_i, q, qpe, k, kpe, visible, one, qk_scale, cap_scale, 1.0, LOGIT_CAP, MASKED,
                   False, SPLIT_QK)


@triton.jit(do_not_specialize=["one"])
def _mla_fwd_kernel(
    Q, K_ext, K_pre, O, qo_indptr, kv_indptr, kv_indices, sinks_ptr, Mid_O, Mid_L,
    Kn_ext_desc, Kr_ext_desc, Kn_pre_desc, Kr_pre_desc,
    qk_scale, qk_scale_pre, sm_scale, sm_scale_pre, v_scale, batch, one,
    stride_qt, stride_qh, stride_kt, stride_kh, stride_pt, stride_ph, stride_ot, stride_oh,
    stride_ms, stride_mt, stride_mh, stride_ls, stride_lt,
    D: tl.constexpr, DPE: tl.constexpr, GROUP: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_B: tl.constexpr, NUM_SPLITS: tl.constexpr, LOGIT_CAP: tl.constexpr, IS_CAUSAL: tl.constexpr,
    HAS_SINK: tl.constexpr, HEAVY_FIRST: tl.constexpr, SCALE_V: tl.constexpr, SPLIT_QK: tl.constexpr,
    PREFIX_CONTIG: tl.constexpr, TMA_EXT: tl.constexpr, TMA_PREFIX: tl.constexpr,
):
    nblocks, cum = _block_counts(qo_indptr, batch, GROUP, BLOCK_M, BLOCK_B)
    lin = tl.program_id(0)
    seq, block, total, count = _locate_block(nblocks, cum, lin, BLOCK_B, HEAVY_FIRST)
    if lin >= total:
        return
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    ext_start = tl.load(qo_indptr + seq).to(tl.int64)
    ext_len = (tl.load(qo_indptr + seq + 1) - ext_start).to(tl.int32)
    pre_start = tl.load(kv_indptr + seq).to(tl.int64)
    pre_len = (tl.load(kv_indptr + seq + 1) - pre_start).to(tl.int32)

    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    tok = rows // GROUP
    q_head = kv_head * GROUP + rows % GROUP
    valid = tok < ext_len
    tok_lo = block * BLOCK_M // GROUP
    tok_hi = tl.minimum(ext_len - 1, ((block + 1) * BLOCK_M - 1) // GROUP)
    offs_d = tl.arange(0, D)
    offs_pe = D + tl.arange(0, DPE)
    offs_n = tl.arange(0, BLOCK_N)
    q_rows = (ext_start + tok.to(tl.int64)) * stride_qt + q_head.to(tl.int64) * stride_qh
    q = tl.load(Q + q_rows[:, None] + offs_d[None, :], mask=valid[:, None], other=0.0)
    qpe = tl.load(Q + q_rows[:, None] + offs_pe[None, :], mask=valid[:, None], other=0.0)

    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - 1.0e30
    desc_col = kv_head * (D + DPE)

    # ---- prefix keys of this split: whole tiles, then the partial last one (masked pointer loads only)
    lo, hi = _prefix_range(pre_len, split, 0, NUM_SPLITS, BLOCK_N)
    full_hi = lo + (hi - lo) // BLOCK_N * BLOCK_N
    kp_head = K_pre + kv_head.to(tl.int64) * stride_ph
    for start in range(lo, full_hi, BLOCK_N):
        acc, l_i, m_i = _prefix_tile(acc, l_i, m_i, q, qpe, start, hi, kv_indices, pre_start, kp_head, stride_pt,
                                     Kn_pre_desc, Kr_pre_desc, desc_col, offs_n, valid, one, qk_scale_pre,
                                     sm_scale_pre, v_scale, D, DPE, LOGIT_CAP, SCALE_V, SPLIT_QK, False,
                                     PREFIX_CONTIG, TMA_PREFIX)
    for start in range(full_hi, hi, BLOCK_N):
        acc, l_i, m_i = _prefix_tile(acc, l_i, m_i, q, qpe, start, hi, kv_indices, pre_start, kp_head, stride_pt,
                                     Kn_pre_desc, Kr_pre_desc, desc_col, offs_n, valid, one, qk_scale_pre,
                                     sm_scale_pre, v_scale, D, DPE, LOGIT_CAP, SCALE_V, SPLIT_QK, True,
                                     PREFIX_CONTIG, TMA_PREFIX)

    # ---- extend keys (contiguous rows of k_extend); the last split does them
    if split == NUM_SPLITS - 1:
        end = tok_hi + 1 if IS_CAUSAL else ext_len
        full_end = (tok_lo + 1) // BLOCK_N * BLOCK_N if IS_CAUSAL else ext_len // BLOCK_N * BLOCK_N
        ke_head = K_ext + ext_start * stride_kt + kv_head.to(tl.int64) * stride_kh
        row0 = ext_start.to(tl.int32)
        for start in range(0, full_end, BLOCK_N):
            acc, l_i, m_i = _extend_tile(acc, l_i, m_i, q, qpe, start, end, ke_head, stride_kt, Kn_ext_desc,
                                         Kr_ext_desc, row0, desc_col, tok, offs_n, valid, one, qk_scale, sm_scale,
                                         D, DPE, LOGIT_CAP, SPLIT_QK, IS_CAUSAL, False, TMA_EXT)
        for start in range(full_end, end, BLOCK_N):
            acc, l_i, m_i = _extend_tile(acc, l_i, m_i, q, qpe, start, end, ke_head, stride_kt, Kn_ext_desc,
                                         Kr_ext_desc, row0, desc_col, tok, offs_n, valid, one, qk_scale, sm_scale,
                                         D, DPE, LOGIT_CAP, SPLIT_QK, IS_CAUSAL, True, TMA_EXT)

    _write_result(acc, l_i, m_i, O, Mid_O, Mid_L, O, sinks_ptr, ext_start, tok, q_head, valid, split, offs_d,
                  offs_d < D, stride_ot, stride_oh, stride_ms, stride_mt, stride_mh, stride_ls, stride_lt, 0, 0,
                  NUM_SPLITS, HAS_SINK, False)  # no LSE output (O stands in for its pointer)


__all__ = ["LOG2E", "_mla_fwd_kernel", "triton"]
