"""Hopper (sm_90) Gluon kernel of the dedicated MLA path (`FamilyConfig.mla = "gluon"`, launched by `mla.run_mla`).

The same computation as `family_mla._mla_fwd_kernel` (one program = BLOCK_M = 64 packed (token, head) rows of one
sequence x one prefix split; online softmax in base 2; prefix logits x sm_scale * k_scale, prefix P . V x v_scale),
written with explicit layouts, shared memory and barriers, because Triton's automatic choices fall short here:
- warps: the scores [64, BLOCK_N] and the accumulator [64, 512] both use warpgroup MMA layouts with the two
  warpgroups side by side along N (warps_per_cta [4, 2]): each warpgroup computes half of the key columns of the
  scores and owns half (256) of the 512 output columns, so no tensor-core work is duplicated (Triton's
  heuristic gives a dot that feeds another dot all warps along M: two warpgroups on the same 64 score rows) and the
  64 x 512 fp32 accumulator is 128 registers per thread;
- loads: one TMA box pair (latent [BLOCK_N, 512], rope [BLOCK_N, 64]) per key tile into a ring of two buffers, the
  next tile's copy issued before the current tile's dots, completion tracked by one mbarrier per buffer (Triton's
  pipeliner issues a tile's loads after the previous tile's dots, so two buffers would not overlap; three do not
  fit: Q 72 KiB + 3 x 72 KiB > 227 KiB);
- P . V: the probabilities go to shared memory once (both warpgroups read all of P), V is the latent part of the
  tile already in shared memory (V = K[:, :512]).
Switches (set per `FamilyConfig.mla` value by `mla_gluon.GLUON_VARIANTS`; LAZY_RESCALE: `_softmax_step`):
- SCORES_AHEAD: tile t + 1's score MMAs are issued right after tile t's P . V, before waiting for it, so the tensor
  cores run P . V(t) and S(t + 1) back to back instead of idling through the wait, the CTA barrier, the loop and
  the next copy's issue (FlashAttention-3's intra-warpgroup overlap of one tile's GEMMs with the next; the wait
  keeps the two score groups in flight: `warpgroup_mma_wait` counts MMA operations). 16 more accumulator registers
  per thread (the next scores), no more shared memory;
  Its copies are issued by a prefix/extend branch (`_issue_tile_branch`: two copies per tile, not four predicated
  ones);
- P_IN_ROPE: P [64, BLOCK_N] is written over the rope part [BLOCK_N, DPE] of the key tile it belongs to (DPE ==
  BLOCK_N; both warpgroups have read it: the row-max reduction's barrier follows their score waits), so the P
  buffer (8 KiB) goes and each key buffer carries its own P: with SCORES_AHEAD, P(t + 1) never waits for P . V(t)
  on a shared buffer (FlashInfer's Hopper MLA kernel keeps P in the rope slot the same way);
- SPLIT_PV (with SCORES_AHEAD): the output in two [64, 256] accumulators (`_tile_step_split`), P . V(t) issued per
  half right after that half's rescale, so the second half's 64 multiplies per thread overlap the first half's
  MMAs instead of all 128 preceding P . V while the tensor cores idle.
The prefix must be pre-gathered into contiguous rows (`prefix_gather.gather_prefix` with the kv_indptr[B] bound:
rows past the last prefix key are zeros, so a box past a sequence's keys holds finite values that the key mask
hides); Q and the extend keys are read through descriptors of 2-D views [ΣE * H_q, 576] and [ΣE, 576] (one KV
head). Conditions and the fallback to the Triton kernel: `mla.gluon_applies`.

Source of the method: FlashMLA (DeepSeek 2025, sm_90 kernel: 64 q rows of all heads, two warpgroups splitting the
512 output columns, double-buffered TMA key tiles); FlashAttention-3 (Shah et al. 2024) TMA + mbarrier pipelines.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

#: The TMA load builtin: `async_copy_global_to_shared` in triton 3.6 (the GPU machine's), renamed `async_load` in
#: later releases (3.9 removed the old name).
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
#: The CTA barrier: `thread_barrier` in triton 3.6, `barrier` in later releases.
_cta_barrier = getattr(gl, "thread_barrier", None) or gl.barrier

#: LAZY_RESCALE threshold in log2 units: the accumulator is rescaled once a row's max grew by more than 2^8.
RESCALE_LOG2: gl.constexpr = gl.constexpr(8.0)
#: MMA operations issued after P . V in `_tile_step_ahead` (the latent and rope score products).
SCORES_IN_FLIGHT: gl.constexpr = gl.constexpr(2)


@gluon.jit
def _add(a, b):
    return a + b


@gluon.jit
def _locate(qo_indptr, batch, lin, GROUP: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_B: gl.constexpr,
            HEAVY_FIRST: gl.constexpr):
    """(sequence, row block within it, total row blocks) of flat program index `lin`, from qo_indptr on the device
    (as `family_kernels._block_counts` / `_locate_block`; BLOCK_B >= batch + 1 lanes, 32 x num_warps or more)."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs_b = gl.arange(0, BLOCK_B, layout=layout)
    in_batch = offs_b < batch
    starts = gl.load(qo_indptr + offs_b, mask=in_batch, other=0)
    ends = gl.load(qo_indptr + offs_b + 1, mask=in_batch, other=0)
    nblocks = gl.cdiv((ends - starts).to(gl.int32) * GROUP, BLOCK_M)
    cum = gl.associative_scan(nblocks, 0, _add)
    seq = gl.sum((cum <= lin).to(gl.int32), 0)
    first = gl.sum(gl.where(offs_b == seq, cum - nblocks, 0), 0)
    count = gl.sum(gl.where(offs_b == seq, nblocks, 0), 0)
    block = lin - first
    if HEAVY_FIRST:
        block = count - 1 - block
    return seq, block, gl.sum(nblocks, 0)


@gluon.jit
def _issue_tile(t, n_pre, pre_row0, ext_row0, kn_pre_desc, kr_pre_desc, kn_ext_desc, kr_ext_desc, bar, kn_dst, kr_dst,
                pred, D: gl.constexpr, BLOCK_N: gl.constexpr):
    """Start the TMA copies of key tile `t` (prefix tiles first, then extend tiles) into (kn_dst, kr_dst), signalled
    on `bar`; nothing when `pred` is false."""
    mbarrier.expect(bar, kn_pre_desc.block_type.nbytes + kr_pre_desc.block_type.nbytes, pred=pred)
    is_pre = t < n_pre
    pre_row = pre_row0 + t * BLOCK_N
    ext_row = ext_row0 + (t - n_pre) * BLOCK_N
    _tma_load(kn_pre_desc, [pre_row, 0], bar, kn_dst, pred=pred & is_pre)
    _tma_load(kr_pre_desc, [pre_row, D], bar, kr_dst, pred=pred & is_pre)
    _tma_load(kn_ext_desc, [ext_row, 0], bar, kn_dst, pred=pred & (t >= n_pre))
    _tma_load(kr_ext_desc, [ext_row, D], bar, kr_dst, pred=pred & (t >= n_pre))


@gluon.jit
def _issue_tile_branch(t, n_pre, pre_row0, ext_row0, kn_pre_desc, kr_pre_desc, kn_ext_desc, kr_ext_desc, bar, kn_dst,
                       kr_dst, pred, D: gl.constexpr, BLOCK_N: gl.constexpr):
    """`_issue_tile` with the prefix/extend choice as a branch: two copies issued per tile instead of four
    predicated ones (each copy is a CTA barrier plus an elected issue in the sm_90 code, predicated off or not)."""
    mbarrier.expect(bar, kn_pre_desc.block_type.nbytes + kr_pre_desc.block_type.nbytes, pred=pred)
    if pred:
        if t < n_pre:
            pre_row = pre_row0 + t * BLOCK_N
            _tma_load(kn_pre_desc, [pre_row, 0], bar, kn_dst)
            _tma_load(kr_pre_desc, [pre_row, D], bar, kr_dst)
        else:
            ext_row = ext_row0 + (t - n_pre) * BLOCK_N
            _tma_load(kn_ext_desc, [ext_row, 0], bar, kn_dst)
            _tma_load(kr_ext_desc, [ext_row, D], bar, kr_dst)

@gluon.jit
def _softmax_step(s, m_i, l_i, t, n_pre, lo, hi, ext_len, tok, offs_n, qk_scale, qk_scale_pre, cap_scale,
                  cap_scale_pre, LOGIT_CAP: gl.constexpr, IS_CAUSAL: gl.constexpr, BLOCK_N: gl.constexpr,
                  LAZY_RESCALE: gl.constexpr):
    """Masked, scaled scores of tile t in log2 units -> (p, alpha, new reference max, new row sum, rescale).

    LAZY_RESCALE: the reference max of every row moves only when some row's max grew by more than `RESCALE_LOG2`
    (FlashAttention-4's conditional rescaling; p <= 2^8 meanwhile, exact in fp32 and bf16), so most tiles skip the
    64 x 512 accumulator rescale (`rescale` false, alpha 1)."""
    s = _scaled_masked(s, t, n_pre, lo, hi, ext_len, tok, offs_n, qk_scale, qk_scale_pre, cap_scale, cap_scale_pre,
                       LOGIT_CAP, IS_CAUSAL, BLOCK_N)
    m_tile = gl.max(s, 1)
    if LAZY_RESCALE:
        rescale = gl.max(m_tile - m_i, 0) > RESCALE_LOG2
        m_new = gl.where(rescale, gl.maximum(m_i, m_tile), m_i)
    else:
        rescale = True
        m_new = gl.maximum(m_i, m_tile)
    p = gl.exp2(s - gl.expand_dims(m_new, 1))
    alpha = gl.exp2(m_i - m_new)
    return p, alpha, m_new, l_i * alpha + gl.sum(p, 1), rescale


@gluon.jit
def _softmax_local(s, m_i, l_i, t, n_pre, lo, hi, ext_len, tok, offs_n, qk_scale, qk_scale_pre, cap_scale,
                   cap_scale_pre, LOGIT_CAP: gl.constexpr, IS_CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr,
                   BLOCK_N: gl.constexpr):
    """`_softmax_step` with lazy rescale and one CTA-wide reduction per tile: each warpgroup reduces its own
    BLOCK_N / 2 key columns of a row (a warp's lanes: the scores viewed as [BLOCK_M, 2, BLOCK_N / 2], the middle
    axis being the warpgroup), a single max over all rows and both warpgroups decides whether any row's max grew
    by more than `RESCALE_LOG2`, and only then (rare) the row maxes are combined across the warpgroups. The row
    sums stay per warpgroup: `l_i` is [BLOCK_M, 2], added up once after the key loop."""
    s = _scaled_masked(s, t, n_pre, lo, hi, ext_len, tok, offs_n, qk_scale, qk_scale_pre, cap_scale, cap_scale_pre,
                       LOGIT_CAP, IS_CAUSAL, BLOCK_N)
    m_part = gl.max(gl.reshape(s, [BLOCK_M, 2, BLOCK_N // 2]), 2)  # [BLOCK_M, 2]: per warpgroup, within warps
    part_rows: gl.constexpr = gl.SliceLayout(1, m_part.type.layout)
    grow = gl.max(gl.reshape(m_part - gl.expand_dims(gl.convert_layout(m_i, part_rows), 1), [2 * BLOCK_M]), 0)
    rescale = grow > RESCALE_LOG2
    if rescale:
        m_new = gl.maximum(m_i, gl.convert_layout(gl.max(m_part, 1), m_i.type.layout))
    else:
        m_new = m_i
    p = gl.exp2(s - gl.expand_dims(m_new, 1))
    alpha = gl.exp2(m_i - m_new)
    l_part = gl.sum(gl.reshape(p, [BLOCK_M, 2, BLOCK_N // 2]), 2)
    l_i = l_i * gl.expand_dims(gl.convert_layout(alpha, part_rows), 1) + l_part
    return p, alpha, m_new, l_i, rescale


@gluon.jit
def _scaled_masked(s, t, n_pre, lo, hi, ext_len, tok, offs_n, qk_scale, qk_scale_pre, cap_scale, cap_scale_pre,
                   LOGIT_CAP: gl.constexpr, IS_CAUSAL: gl.constexpr, BLOCK_N: gl.constexpr):
    """Scores of tile t scaled into log2 units (soft-capped with LOGIT_CAP), -inf where the key is not visible."""
    is_pre = t < n_pre
    if is_pre:
        key0 = lo + t * BLOCK_N
        limit = hi
        scale = qk_scale_pre
        cap_s = cap_scale_pre
    else:
        key0 = (t - n_pre) * BLOCK_N
        limit = ext_len
        scale = qk_scale
        cap_s = cap_scale
    if LOGIT_CAP > 0:
        x = s * (cap_s / LOGIT_CAP)
        e = gl.exp2(-2.8853900817779268 * gl.abs(x))  # stable tanh: sign(x) (1 - e^-2|x|) / (1 + e^-2|x|)
        th = (1.0 - e) / (1.0 + e)
        s = (LOGIT_CAP * 1.4426950408889634) * gl.where(x < 0, -th, th)
    else:
        s = s * scale
    if (t >= n_pre) | (key0 + BLOCK_N > limit):  # interior prefix tiles are fully visible: no mask
        keys = key0 + offs_n
        visible = gl.expand_dims(keys < limit, 0) & gl.expand_dims(tok >= 0, 1)
        if IS_CAUSAL:
            visible &= (gl.expand_dims(keys, 0) <= gl.expand_dims(tok, 1)) | is_pre
        s = gl.where(visible, s, float("-inf"))
    return s


@gluon.jit
def _tile_step(acc, m_i, l_i, t, buf, nxt, n_tiles, n_pre, lo, hi, ext_len, tok, offs_n, pre_row0, ext_row0, q_n, q_r,
               k_n, k_r, p_smem, bars, kn_pre_desc, kr_pre_desc, kn_ext_desc, kr_ext_desc, qk_scale, qk_scale_pre,
               cap_scale, cap_scale_pre, v_scale, D: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
               LOGIT_CAP: gl.constexpr,
               IS_CAUSAL: gl.constexpr, SCALE_V: gl.constexpr, LAZY_RESCALE: gl.constexpr, o_layout: gl.constexpr):
    """Key tile t (in buffer `buf`): start tile t + 1's copy into buffer `nxt`, wait for tile t, scores, online
    softmax, P into shared memory, P . V; returns (acc, m, l). Both warpgroups leave it with the buffer and P free."""
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2],
                                                       instr_shape=[16, BLOCK_N // 2, 16])
    _issue_tile(t + 1, n_pre, pre_row0, ext_row0, kn_pre_desc, kr_pre_desc, kn_ext_desc, kr_ext_desc,
                bars.index(nxt), k_n.index(nxt), k_r.index(nxt), t + 1 < n_tiles, D, BLOCK_N)
    mbarrier.wait(bars.index(buf), (t // 2) & 1)
    kn = k_n.index(buf)
    s = warpgroup_mma(q_n, kn.permute((1, 0)), gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout),
                      use_acc=False, is_async=True)
    s = warpgroup_mma(q_r, k_r.index(buf).permute((1, 0)), s, is_async=True)
    s = warpgroup_mma_wait(0, deps=[s])
    p, alpha, m_i, l_i, rescale = _softmax_step(s, m_i, l_i, t, n_pre, lo, hi, ext_len, tok, offs_n, qk_scale,
                                                qk_scale_pre, cap_scale, cap_scale_pre, LOGIT_CAP, IS_CAUSAL,
                                                BLOCK_N, LAZY_RESCALE)
    if SCALE_V:
        if t < n_pre:
            p = p * v_scale
    p_smem.store(p.to(p_smem.dtype))
    fence_async_shared()
    _cta_barrier()  # both warpgroups' halves of P are in shared memory
    if rescale:
        acc = acc * gl.expand_dims(gl.convert_layout(alpha, gl.SliceLayout(1, o_layout)), 1)
    acc = warpgroup_mma(p_smem, kn, acc, is_async=True)
    acc = warpgroup_mma_wait(0, deps=[acc])
    _cta_barrier()  # the buffer and P are free before the next tile's copy and P store
    return acc, m_i, l_i


@gluon.jit
def _issue_scores(q_n, q_r, k_n, k_r, buf, s_layout: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    """Start S = Q K^T of the key tile in buffer `buf` (latent, then rope: two MMA operations); returns the async
    accumulator."""
    s = warpgroup_mma(q_n, k_n.index(buf).permute((1, 0)), gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout),
                      use_acc=False, is_async=True)
    return warpgroup_mma(q_r, k_r.index(buf).permute((1, 0)), s, is_async=True)


@gluon.jit
def _tile_step_ahead(acc, s_tok, m_i, l_i, t, buf, nxt, n_tiles, n_pre, lo, hi, ext_len, tok, offs_n, pre_row0,
                     ext_row0, q_n, q_r, k_n, k_r, p_smem, bars, kn_pre_desc, kr_pre_desc, kn_ext_desc, kr_ext_desc,
                     qk_scale, qk_scale_pre, cap_scale, cap_scale_pre, v_scale, D: gl.constexpr,
                     BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, LOGIT_CAP: gl.constexpr, IS_CAUSAL: gl.constexpr,
                     SCALE_V: gl.constexpr, LAZY_RESCALE: gl.constexpr, P_IN_ROPE: gl.constexpr,
                     o_layout: gl.constexpr, LOCAL_STATS: gl.constexpr = False):
    """Key tile t (in buffer `buf`) whose scores `s_tok` are already in flight: start tile t + 1's copy into `nxt`,
    softmax, P into shared memory (the rope slot of `buf` with P_IN_ROPE), P . V, then tile t + 1's scores issued
    before P . V(t) is waited for; returns (acc, next scores in flight, m, l). On the last tile the issued scores
    read a buffer no copy is writing and nobody uses them. LOCAL_STATS: the softmax of `_softmax_local` (l per
    warpgroup)."""
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2],
                                                       instr_shape=[16, BLOCK_N // 2, 16])
    _issue_tile_branch(t + 1, n_pre, pre_row0, ext_row0, kn_pre_desc, kr_pre_desc, kn_ext_desc, kr_ext_desc,
                       bars.index(nxt), k_n.index(nxt), k_r.index(nxt), t + 1 < n_tiles, D, BLOCK_N)
    s = warpgroup_mma_wait(0, deps=[s_tok])
    if LOCAL_STATS:
        p, alpha, m_i, l_i, rescale = _softmax_local(s, m_i, l_i, t, n_pre, lo, hi, ext_len, tok, offs_n, qk_scale,
                                                     qk_scale_pre, cap_scale, cap_scale_pre, LOGIT_CAP, IS_CAUSAL,
                                                     BLOCK_M, BLOCK_N)
    else:
        p, alpha, m_i, l_i, rescale = _softmax_step(s, m_i, l_i, t, n_pre, lo, hi, ext_len, tok, offs_n, qk_scale,
                                                    qk_scale_pre, cap_scale, cap_scale_pre, LOGIT_CAP, IS_CAUSAL,
                                                    BLOCK_N, LAZY_RESCALE)
    if SCALE_V:
        if t < n_pre:
            p = p * v_scale
    if P_IN_ROPE:
        p_buf = k_r.index(buf)
    else:
        p_buf = p_smem
    p_buf.store(p.to(p_buf.dtype))
    fence_async_shared()
    _cta_barrier()  # both warpgroups' halves of P are in shared memory
    if rescale:
        acc = acc * gl.expand_dims(gl.convert_layout(alpha, gl.SliceLayout(1, o_layout)), 1)
    acc = warpgroup_mma(p_buf, k_n.index(buf), acc, is_async=True)
    mbarrier.wait(bars.index(nxt), ((t + 1) // 2) & 1, pred=t + 1 < n_tiles)
    s_next = _issue_scores(q_n, q_r, k_n, k_r, nxt, s_layout, BLOCK_M, BLOCK_N)
    acc = warpgroup_mma_wait(SCORES_IN_FLIGHT, deps=[acc])  # P . V(t) done; S(t + 1) runs on
    _cta_barrier()  # buffer `buf` and P are free before the next tile's copy and P store
    return acc, s_next, m_i, l_i


@gluon.jit
def _tile_step_split(acc_a, acc_b, s_tok, m_i, l_i, t, buf, nxt, n_tiles, n_pre, lo, hi, ext_len, tok, offs_n,
                     pre_row0, ext_row0, q_n, q_r, k_n, k_r, p_smem, bars, kn_pre_desc, kr_pre_desc, kn_ext_desc,
                     kr_ext_desc, qk_scale, qk_scale_pre, cap_scale, cap_scale_pre, v_scale, D: gl.constexpr,
                     BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, LOGIT_CAP: gl.constexpr, IS_CAUSAL: gl.constexpr,
                     SCALE_V: gl.constexpr, LAZY_RESCALE: gl.constexpr, P_IN_ROPE: gl.constexpr,
                     h_layout: gl.constexpr):
    """`_tile_step_ahead` with the output in two column halves: acc_a = columns [0, D/2), acc_b = [D/2, D) (each
    warpgroup a quarter of each). P . V(t) is issued per half right after that half is rescaled, so the rescale of
    acc_b (64 fp32 multiplies per thread) runs on the CUDA cores while the tensor cores run acc_a's P . V instead of
    in front of the whole P . V; returns (acc_a, acc_b, next scores in flight, m, l)."""
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2],
                                                       instr_shape=[16, BLOCK_N // 2, 16])
    _issue_tile_branch(t + 1, n_pre, pre_row0, ext_row0, kn_pre_desc, kr_pre_desc, kn_ext_desc, kr_ext_desc,
                       bars.index(nxt), k_n.index(nxt), k_r.index(nxt), t + 1 < n_tiles, D, BLOCK_N)
    s = warpgroup_mma_wait(0, deps=[s_tok])
    p, alpha, m_i, l_i, rescale = _softmax_step(s, m_i, l_i, t, n_pre, lo, hi, ext_len, tok, offs_n, qk_scale,
                                                qk_scale_pre, cap_scale, cap_scale_pre, LOGIT_CAP, IS_CAUSAL,
                                                BLOCK_N, LAZY_RESCALE)
    if SCALE_V:
        if t < n_pre:
            p = p * v_scale
    if P_IN_ROPE:
        p_buf = k_r.index(buf)
    else:
        p_buf = p_smem
    p_buf.store(p.to(p_buf.dtype))
    fence_async_shared()
    _cta_barrier()  # both warpgroups' halves of P are in shared memory
    v = k_n.index(buf)
    alpha_o = gl.expand_dims(gl.convert_layout(alpha, gl.SliceLayout(1, h_layout)), 1)
    if rescale:
        acc_a = acc_a * alpha_o
    acc_a = warpgroup_mma(p_buf, v.slice(0, D // 2, dim=1), acc_a, is_async=True)
    if rescale:
        acc_b = acc_b * alpha_o  # on the CUDA cores while acc_a's P . V runs
    acc_b = warpgroup_mma(p_buf, v.slice(D // 2, D // 2, dim=1), acc_b, is_async=True)
    mbarrier.wait(bars.index(nxt), ((t + 1) // 2) & 1, pred=t + 1 < n_tiles)
    s_next = _issue_scores(q_n, q_r, k_n, k_r, nxt, s_layout, BLOCK_M, BLOCK_N)
    acc_a, acc_b = warpgroup_mma_wait(SCORES_IN_FLIGHT, deps=[acc_a, acc_b])  # P . V(t) done; S(t + 1) runs on
    _cta_barrier()  # buffer `buf` and P are free before the next tile's copy and P store
    return acc_a, acc_b, s_next, m_i, l_i


@gluon.jit
def _store_result(acc, l_i, m_i, O, Mid_O, Mid_L, sinks_ptr, ext_start, ext_len, block, split, stride_ot, stride_oh,
                  stride_ms, stride_mt, stride_mh, stride_ls, stride_lt, GROUP: gl.constexpr, BLOCK_M: gl.constexpr,
                  COL0: gl.constexpr, DO: gl.constexpr, NUM_SPLITS: gl.constexpr, HAS_SINK: gl.constexpr,
                  STORE_LSE: gl.constexpr, o_layout: gl.constexpr):
    """acc holds output columns [COL0, COL0 + DO). One split: o = acc / (l + sink) into O. Several: the partial
    (acc / l, m + log2 l) into Mid_O and, if STORE_LSE, Mid_L (an empty one is (0, -inf))."""
    row_layout: gl.constexpr = gl.SliceLayout(1, o_layout)
    rows = block * BLOCK_M + gl.arange(0, BLOCK_M, layout=row_layout)
    tok = rows // GROUP
    head = rows % GROUP
    valid = tok < ext_len
    cols = COL0 + gl.arange(0, DO, layout=gl.SliceLayout(0, o_layout))
    l_o = gl.convert_layout(l_i, row_layout)
    m_o = gl.convert_layout(m_i, row_layout)
    token = ext_start + tok.to(gl.int64)
    mask = gl.expand_dims(valid, 1) & gl.expand_dims(cols < COL0 + DO, 0)
    if NUM_SPLITS == 1:
        denom = l_o
        if HAS_SINK:
            sink = gl.load(sinks_ptr + head, mask=valid, other=0.0).to(gl.float32)
            denom += gl.exp2(gl.minimum(sink * 1.4426950408889634 - m_o, 126.0))
        out = acc / gl.expand_dims(gl.where(denom == 0.0, 1.0, denom), 1)
        offs = token * stride_ot + head.to(gl.int64) * stride_oh
        gl.store(O + gl.expand_dims(offs, 1) + gl.expand_dims(cols, 0), out.to(O.dtype.element_ty), mask=mask)
    else:
        out = acc / gl.expand_dims(gl.where(l_o == 0.0, 1.0, l_o), 1)
        lse = gl.where(l_o == 0.0, float("-inf"), m_o + gl.log2(l_o))
        base = split.to(gl.int64) * stride_ms + token * stride_mt + head.to(gl.int64) * stride_mh
        gl.store(Mid_O + gl.expand_dims(base, 1) + gl.expand_dims(cols, 0), out, mask=mask)
        if STORE_LSE:
            gl.store(Mid_L + split.to(gl.int64) * stride_ls + token * stride_lt + head, lse, mask=valid)


@gluon.jit
def _mla_gluon_kernel(
    qn_desc, qr_desc, kn_ext_desc, kr_ext_desc, kn_pre_desc, kr_pre_desc, O, qo_indptr, kv_indptr, sinks_ptr, Mid_O,
    Mid_L, qk_scale, qk_scale_pre, cap_scale, cap_scale_pre, v_scale, batch,
    stride_ot, stride_oh, stride_ms, stride_mt, stride_mh, stride_ls, stride_lt,
    D: gl.constexpr, DPE: gl.constexpr, GROUP: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
    BLOCK_B: gl.constexpr, NUM_SPLITS: gl.constexpr, LOGIT_CAP: gl.constexpr, IS_CAUSAL: gl.constexpr,
    HAS_SINK: gl.constexpr, HEAVY_FIRST: gl.constexpr, SCALE_V: gl.constexpr, LAZY_RESCALE: gl.constexpr,
    SCORES_AHEAD: gl.constexpr = False, P_IN_ROPE: gl.constexpr = False, SPLIT_PV: gl.constexpr = False,
    LOCAL_STATS: gl.constexpr = False,
):
    gl.static_assert(gl.num_warps() == 8, "two warpgroups")
    gl.static_assert(not P_IN_ROPE or (SCORES_AHEAD and DPE == BLOCK_N), "P in the rope slot: [64, DPE] tiles")
    gl.static_assert(BLOCK_M == 64, "one warpgroup MMA row block")
    gl.static_assert(not SPLIT_PV or SCORES_AHEAD, "P . V halves: the scores-ahead loop")
    gl.static_assert(not LOCAL_STATS or (SCORES_AHEAD and LAZY_RESCALE and not SPLIT_PV),
                     "warpgroup-local statistics: the scores-ahead loop with lazy rescale")
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2],
                                                       instr_shape=[16, BLOCK_N // 2, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2],
                                                       instr_shape=[16, D // 2, 16])
    h_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2],
                                                       instr_shape=[16, D // 4, 16])
    dtype: gl.constexpr = qn_desc.dtype

    lin = gl.program_id(0)
    seq, block, total = _locate(qo_indptr, batch, lin, GROUP, BLOCK_M, BLOCK_B, HEAVY_FIRST)
    if lin >= total:
        return
    split = gl.program_id(1)
    ext_start = gl.load(qo_indptr + seq)
    ext_len = gl.load(qo_indptr + seq + 1) - ext_start
    pre_start = gl.load(kv_indptr + seq)
    pre_len = gl.load(kv_indptr + seq + 1) - pre_start

    # this split's prefix keys [lo, hi) (whole tiles from lo), then (last split) the extend keys up to the block's
    # last token
    chunk = gl.cdiv(gl.cdiv(pre_len, NUM_SPLITS), BLOCK_N) * BLOCK_N
    lo = split * chunk
    hi = gl.minimum(pre_len, lo + chunk)
    n_pre = gl.cdiv(gl.maximum(hi - lo, 0), BLOCK_N)
    tok_hi = gl.minimum(ext_len - 1, ((block + 1) * BLOCK_M - 1) // GROUP)
    n_ext = gl.cdiv(tok_hi + 1, BLOCK_N) if IS_CAUSAL else gl.cdiv(ext_len, BLOCK_N)
    if split != NUM_SPLITS - 1:
        n_ext = 0
    n_tiles = n_pre + n_ext

    q_n = gl.allocate_shared_memory(dtype, [BLOCK_M, D], qn_desc.layout)
    q_r = gl.allocate_shared_memory(dtype, [BLOCK_M, DPE], qr_desc.layout)
    k_n = gl.allocate_shared_memory(dtype, [2, BLOCK_N, D], kn_pre_desc.layout)
    k_r = gl.allocate_shared_memory(dtype, [2, BLOCK_N, DPE], kr_pre_desc.layout)
    if P_IN_ROPE:
        p_smem = k_r  # unused: P goes into the rope slot of its key tile
    else:
        p_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, BLOCK_N],
                                           gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_N], dtype))
    bars = gl.allocate_shared_memory(gl.int64, [3, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(3):
        mbarrier.init(bars.index(i), count=1)
    fence_async_shared()

    q_row0 = (ext_start * GROUP + block * BLOCK_M).to(gl.int32)
    mbarrier.expect(bars.index(2), qn_desc.block_type.nbytes + qr_desc.block_type.nbytes)
    _tma_load(qn_desc, [q_row0, 0], bars.index(2), q_n)
    _tma_load(qr_desc, [q_row0, D], bars.index(2), q_r)
    pre_row0 = (pre_start + lo).to(gl.int32)
    ext_row0 = ext_start.to(gl.int32)
    _issue_tile(0, n_pre, pre_row0, ext_row0, kn_pre_desc, kr_pre_desc, kn_ext_desc, kr_ext_desc, bars.index(0),
                k_n.index(0), k_r.index(0), n_tiles > 0, D, BLOCK_N)

    rows = block * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, s_layout))
    tok = rows // GROUP
    offs_n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    acc = gl.zeros([BLOCK_M, D], gl.float32, o_layout)
    m_i = gl.full([BLOCK_M], -1.0e30, gl.float32, gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([BLOCK_M], gl.float32, gl.SliceLayout(1, s_layout))
    mbarrier.wait(bars.index(2), 0)
    if SPLIT_PV:
        acc_a = gl.zeros([BLOCK_M, D // 2], gl.float32, h_layout)
        acc_b = gl.zeros([BLOCK_M, D // 2], gl.float32, h_layout)
        mbarrier.wait(bars.index(0), 0, pred=n_tiles > 0)
        s_tok = _issue_scores(q_n, q_r, k_n, k_r, 0, s_layout, BLOCK_M, BLOCK_N)
        for t in range(n_tiles):
            acc_a, acc_b, s_tok, m_i, l_i = _tile_step_split(
                acc_a, acc_b, s_tok, m_i, l_i, t, t % 2, (t + 1) % 2, n_tiles, n_pre, lo, hi, ext_len, tok, offs_n,
                pre_row0, ext_row0, q_n, q_r, k_n, k_r, p_smem, bars, kn_pre_desc, kr_pre_desc, kn_ext_desc,
                kr_ext_desc, qk_scale, qk_scale_pre, cap_scale, cap_scale_pre, v_scale, D, BLOCK_M, BLOCK_N,
                LOGIT_CAP, IS_CAUSAL, SCALE_V, LAZY_RESCALE, P_IN_ROPE, h_layout)
        warpgroup_mma_wait(0, deps=[s_tok])
        for i in gl.static_range(3):
            mbarrier.invalidate(bars.index(i))
        _store_result(acc_a, l_i, m_i, O, Mid_O, Mid_L, sinks_ptr, ext_start.to(gl.int64), ext_len, block, split,
                      stride_ot, stride_oh, stride_ms, stride_mt, stride_mh, stride_ls, stride_lt, GROUP, BLOCK_M, 0,
                      D // 2, NUM_SPLITS, HAS_SINK, True, h_layout)
        _store_result(acc_b, l_i, m_i, O, Mid_O, Mid_L, sinks_ptr, ext_start.to(gl.int64), ext_len, block, split,
                      stride_ot, stride_oh, stride_ms, stride_mt, stride_mh, stride_ls, stride_lt, GROUP, BLOCK_M,
                      D // 2, D // 2, NUM_SPLITS, HAS_SINK, False, h_layout)
        return
    if SCORES_AHEAD:
        if LOCAL_STATS:  # [BLOCK_M, 2] zeros in the layout `_softmax_local` gives the per-warpgroup sums
            l_i = gl.sum(gl.reshape(gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout), [BLOCK_M, 2, BLOCK_N // 2]),
                         2)
        mbarrier.wait(bars.index(0), 0, pred=n_tiles > 0)
        s_tok = _issue_scores(q_n, q_r, k_n, k_r, 0, s_layout, BLOCK_M, BLOCK_N)
        for t in range(n_tiles):
            acc, s_tok, m_i, l_i = _tile_step_ahead(
                acc, s_tok, m_i, l_i, t, t % 2, (t + 1) % 2, n_tiles, n_pre, lo, hi, ext_len, tok, offs_n, pre_row0,
                ext_row0, q_n, q_r, k_n, k_r, p_smem, bars, kn_pre_desc, kr_pre_desc, kn_ext_desc, kr_ext_desc,
                qk_scale, qk_scale_pre, cap_scale, cap_scale_pre, v_scale, D, BLOCK_M, BLOCK_N, LOGIT_CAP,
                IS_CAUSAL, SCALE_V, LAZY_RESCALE, P_IN_ROPE, o_layout, LOCAL_STATS)
        warpgroup_mma_wait(0, deps=[s_tok])
        if LOCAL_STATS:  # the two warpgroups' parts of the row sums added
            l_i = gl.convert_layout(gl.sum(l_i, 1), gl.SliceLayout(1, s_layout))
    else:
        for t in range(n_tiles):
            acc, m_i, l_i = _tile_step(
                acc, m_i, l_i, t, t % 2, (t + 1) % 2, n_tiles, n_pre, lo, hi, ext_len, tok, offs_n, pre_row0,
                ext_row0, q_n, q_r, k_n, k_r, p_smem, bars, kn_pre_desc, kr_pre_desc, kn_ext_desc, kr_ext_desc,
                qk_scale, qk_scale_pre, cap_scale, cap_scale_pre, v_scale, D, BLOCK_M, BLOCK_N, LOGIT_CAP,
                IS_CAUSAL, SCALE_V, LAZY_RESCALE, o_layout)
    for i in gl.static_range(3):
        mbarrier.invalidate(bars.index(i))

    _store_result(acc, l_i, m_i, O, Mid_O, Mid_L, sinks_ptr, ext_start.to(gl.int64), ext_len, block, split,
                  stride_ot, stride_oh, stride_ms, stride_mt, stride_mh, stride_ls, stride_lt, GROUP, BLOCK_M, 0, D,
                  NUM_SPLITS, HAS_SINK, True, o_layout)


__all__ = ["_mla_gluon_kernel", "gluon"]
