"""Warp-specialized Hopper (sm_90) Gluon kernel of the dedicated MLA path (`FamilyConfig.mla = "gluon_ws"`, launched
by `mla_gluon.launch_gluon`).

The computation of `family_mla_gluon._mla_gluon_kernel` (one program = BLOCK_M = 64 packed (token, head) rows of one
sequence x one prefix split, 64-key tiles, online softmax in base 2, prefix logits x sm_scale * k_scale, prefix
P . V x v_scale), with the two warpgroups given different jobs instead of halves of every job:
- the softmax warpgroup (default partition) computes the whole score tile S = Q K^T [64, 64] (warpgroup MMA with
  N = 64: each 16-deep step reads 2 KiB of Q and 2 KiB of K from shared memory for 64 x 64 x 16 MACs, the ratio at
  which shared memory keeps the tensor cores fed; halves of N = 32 per warpgroup read 3 KiB for half the work), the
  online softmax of its own rows (row max and sum within a warp: no shared-memory reduction, no CTA barrier), writes
  P and the rescale factors to shared memory, and accumulates output columns [D/2, D);
- the output warpgroup (worker partition) issues every TMA copy (Q once, key tiles into a ring of two buffers, the
  next copy as soon as both warpgroups have released a buffer) and accumulates output columns [0, D/2) from the P
  that the softmax warpgroup published; its P . V runs while the softmax warpgroup computes the next scores.
Synchronization is by mbarriers only (tile loaded, P published, buffer released, final row statistics): the
single-program kernel pays 13 CTA-wide barriers per key tile (scores reduced across warpgroups, barriers around
every TMA issue), this one none. P is written over the tile's rope part [64, DPE] once the scores have read it
(DPE = BLOCK_N), so the footprint is that of the single-program kernel without its P buffer.

Source of the method: FlashInfer's Hopper MLA kernel (`include/flashinfer/attention/mla_hopper.cuh`, 2025: one
warpgroup computes the scores, softmax and half of P . V, the other loads and computes the other half, P in the
rope slot of the key buffer); FlashMLA (DeepSeek 2025, deep-dive notes) for the split of the 512 output columns
over two warpgroups; FlashAttention-3 (Shah et al. 2024) for producer/consumer mbarrier pipelines.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from kernels.extend_attention.family_mla_gluon import _issue_tile, _locate, _softmax_step, _store_result, _tma_load

#: mbarrier slots: Q loaded; per key buffer: tile loaded, P published, released by the softmax warpgroup; the final
#: row statistics.
BAR_Q: gl.constexpr = gl.constexpr(0)
BAR_KV: gl.constexpr = gl.constexpr(1)
BAR_P: gl.constexpr = gl.constexpr(3)
BAR_FREE: gl.constexpr = gl.constexpr(5)
BAR_STATS: gl.constexpr = gl.constexpr(7)
NUM_BARS: gl.constexpr = gl.constexpr(8)
#: Registers per thread of the output warpgroup (its 64 x 256 fp32 accumulator is 128 of them).
OUTPUT_REGS = 192


@gluon.jit
def _issue_scores(q_n, q_r, k_n, k_r, buf, s_layout: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    """Start S = Q K^T of the tile in buffer `buf` (latent and rope parts); returns the async accumulator."""
    s = warpgroup_mma(q_n, k_n.index(buf).permute((1, 0)), gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout),
                      use_acc=False, is_async=True)
    return warpgroup_mma(q_r, k_r.index(buf).permute((1, 0)), s, is_async=True)


@gluon.jit
def _tile_softmax(s, m_i, l_i, t, n_pre, lo, hi, ext_len, tok, offs_n, qk_scale, qk_scale_pre, cap_scale,
                  cap_scale_pre, v_scale, BLOCK_N: gl.constexpr, LOGIT_CAP: gl.constexpr, IS_CAUSAL: gl.constexpr,
                  SCALE_V: gl.constexpr):
    """Online softmax of tile t's scores (eager rescale) -> (P in the input dtype's range, alpha, m, l)."""
    p, alpha, m_i, l_i, _ = _softmax_step(s, m_i, l_i, t, n_pre, lo, hi, ext_len, tok, offs_n, qk_scale,
                                          qk_scale_pre, cap_scale, cap_scale_pre, LOGIT_CAP, IS_CAUSAL, BLOCK_N,
                                          False)
    if SCALE_V:
        if t < n_pre:
            p = p * v_scale
    return p, alpha, m_i, l_i


@gluon.jit
def _p_buffer(k_r, p_bufs, buf, P_IN_ROPE: gl.constexpr):
    """P's shared-memory buffer for key buffer `buf`: the rope slot (the scores have read it) or its own."""
    if P_IN_ROPE:
        p_smem = k_r.index(buf)
    else:
        p_smem = p_bufs.index(buf)
    return p_smem


@gluon.jit
def _publish_p(p, alpha, p_smem, alpha_smem, bars, buf):
    """P and the rescale factors into shared memory, signalled on the buffer's P barrier."""
    p_smem.store(p)
    alpha_smem.index(buf).store(alpha)
    fence_async_shared()
    mbarrier.arrive(bars.index(BAR_P + buf), count=1)


@gluon.jit
def _issue_pv(p, p_smem, acc, alpha, v_smem, o_layout: gl.constexpr, P_REGS: gl.constexpr):
    """acc * alpha + P . V started asynchronously (P from registers with P_REGS, else from `p_smem`, already
    published); returns (async accumulator, the register operand or None)."""
    acc = acc * gl.expand_dims(gl.convert_layout(alpha, gl.SliceLayout(1, o_layout)), 1)
    if P_REGS:
        p_op = gl.convert_layout(p, gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2))
        acc_tok = warpgroup_mma(p_op, v_smem, acc, is_async=True)
    else:
        p_op = p
        acc_tok = warpgroup_mma(p_smem, v_smem, acc, is_async=True)
    return acc_tok, p_op


@gluon.jit
def _softmax_partition(q_n, q_r, k_n, k_r, p_bufs, alpha_smem, stats_smem, bars, n_tiles, n_pre, lo, hi, ext_len,
                       block, split, ext_start, O, Mid_O, Mid_L, sinks_ptr, qk_scale, qk_scale_pre, cap_scale,
                       cap_scale_pre, v_scale, stride_ot, stride_oh, stride_ms, stride_mt, stride_mh, stride_ls,
                       stride_lt, D: gl.constexpr, GROUP: gl.constexpr, BLOCK_M: gl.constexpr,
                       BLOCK_N: gl.constexpr, NUM_SPLITS: gl.constexpr, LOGIT_CAP: gl.constexpr,
                       IS_CAUSAL: gl.constexpr, HAS_SINK: gl.constexpr, SCALE_V: gl.constexpr,
                       P_IN_ROPE: gl.constexpr, EARLY_QK: gl.constexpr, P_REGS: gl.constexpr):
    """Scores, softmax, P publication and output columns [D/2, D) (4 warps).

    EARLY_QK: the next tile's scores are issued right after this tile's P . V, before waiting for it, so the tensor
    cores go from one to the other without the wait, the release and the loop in between (the last tile issues a
    score product on a stale buffer that nothing reads). P_REGS: this warpgroup's P . V takes P from registers and
    starts before P is published for the output warpgroup."""
    DH: gl.constexpr = D // 2
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, DH, 16])
    rows = block * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, s_layout))
    tok = rows // GROUP
    offs_n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    acc = gl.zeros([BLOCK_M, DH], gl.float32, o_layout)
    m_i = gl.full([BLOCK_M], -1.0e30, gl.float32, gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([BLOCK_M], gl.float32, gl.SliceLayout(1, s_layout))
    mbarrier.wait(bars.index(BAR_Q), 0, pred=n_tiles > 0)
    if EARLY_QK:
        mbarrier.wait(bars.index(BAR_KV), 0, pred=n_tiles > 0)
        s_tok = _issue_scores(q_n, q_r, k_n, k_r, 0, s_layout, BLOCK_M, BLOCK_N)
    for t in range(n_tiles):
        buf = t % 2
        if EARLY_QK:
            s = warpgroup_mma_wait(0, deps=[s_tok])
        else:
            mbarrier.wait(bars.index(BAR_KV + buf), (t // 2) & 1)
            s = warpgroup_mma_wait(0, deps=[_issue_scores(q_n, q_r, k_n, k_r, buf, s_layout, BLOCK_M, BLOCK_N)])
        p, alpha, m_i, l_i = _tile_softmax(s, m_i, l_i, t, n_pre, lo, hi, ext_len, tok, offs_n, qk_scale,
                                           qk_scale_pre, cap_scale, cap_scale_pre, v_scale, BLOCK_N, LOGIT_CAP,
                                           IS_CAUSAL, SCALE_V)
        p_smem = _p_buffer(k_r, p_bufs, buf, P_IN_ROPE)
        p = p.to(p_smem.dtype)
        if not P_REGS:
            _publish_p(p, alpha, p_smem, alpha_smem, bars, buf)
        acc_tok, p_op = _issue_pv(p, p_smem, acc, alpha, k_n.index(buf).slice(DH, DH, dim=1), o_layout, P_REGS)
        if P_REGS:
            _publish_p(p, alpha, p_smem, alpha_smem, bars, buf)
        if EARLY_QK:
            nxt = (t + 1) % 2
            mbarrier.wait(bars.index(BAR_KV + nxt), ((t + 1) // 2) & 1, pred=t + 1 < n_tiles)
            s_tok = _issue_scores(q_n, q_r, k_n, k_r, nxt, s_layout, BLOCK_M, BLOCK_N)
            acc, p_op = warpgroup_mma_wait(1, deps=[acc_tok, p_op])  # P . V was committed before the scores
        else:
            acc, p_op = warpgroup_mma_wait(0, deps=[acc_tok, p_op])
        mbarrier.arrive(bars.index(BAR_FREE + buf), count=1)
    if EARLY_QK:
        warpgroup_mma_wait(0, deps=[s_tok])
    stats_smem.index(0).store(l_i)
    stats_smem.index(1).store(m_i)
    mbarrier.arrive(bars.index(BAR_STATS), count=1)
    _store_result(acc, l_i, m_i, O, Mid_O, Mid_L, sinks_ptr, ext_start, ext_len, block, split, stride_ot, stride_oh,
                  stride_ms, stride_mt, stride_mh, stride_ls, stride_lt, GROUP, BLOCK_M, DH, DH, NUM_SPLITS,
                  HAS_SINK, True, o_layout)


@gluon.jit
def _output_partition(qn_desc, qr_desc, kn_ext_desc, kr_ext_desc, kn_pre_desc, kr_pre_desc, q_n, q_r, k_n, k_r, p_bufs,
                      alpha_smem, stats_smem, bars, n_tiles, n_pre, pre_row0, ext_row0, q_row0, ext_len, block,
                      split, ext_start, O, Mid_O, Mid_L, sinks_ptr, stride_ot, stride_oh, stride_ms, stride_mt,
                      stride_mh, stride_ls, stride_lt, D: gl.constexpr, GROUP: gl.constexpr,
                      BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, NUM_SPLITS: gl.constexpr,
                      HAS_SINK: gl.constexpr, P_IN_ROPE: gl.constexpr):
    """TMA copies and output columns [0, D/2) (4 warps)."""
    DH: gl.constexpr = D // 2
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, DH, 16])
    row_layout: gl.constexpr = gl.SliceLayout(1, o_layout)
    any_tile = n_tiles > 0
    mbarrier.expect(bars.index(BAR_Q), qn_desc.block_type.nbytes + qr_desc.block_type.nbytes, pred=any_tile)
    _tma_load(qn_desc, [q_row0, 0], bars.index(BAR_Q), q_n, pred=any_tile)
    _tma_load(qr_desc, [q_row0, D], bars.index(BAR_Q), q_r, pred=any_tile)
    for t in gl.static_range(2):
        _issue_tile(t, n_pre, pre_row0, ext_row0, kn_pre_desc, kr_pre_desc, kn_ext_desc, kr_ext_desc,
                    bars.index(BAR_KV + t), k_n.index(t), k_r.index(t), t < n_tiles, D, BLOCK_N)
    acc = gl.zeros([BLOCK_M, DH], gl.float32, o_layout)
    for t in range(n_tiles):
        buf = t % 2
        phase = (t // 2) & 1
        mbarrier.wait(bars.index(BAR_KV + buf), phase)  # the tile's bytes, seen by this partition too
        mbarrier.wait(bars.index(BAR_P + buf), phase)
        if P_IN_ROPE:
            p_smem = k_r.index(buf)
        else:
            p_smem = p_bufs.index(buf)
        alpha = alpha_smem.index(buf).load(row_layout)
        acc = acc * gl.expand_dims(alpha, 1)
        acc = warpgroup_mma(p_smem, k_n.index(buf).slice(0, DH, dim=1), acc, is_async=True)
        acc = warpgroup_mma_wait(0, deps=[acc])
        mbarrier.wait(bars.index(BAR_FREE + buf), phase)  # the softmax warpgroup is done with the buffer too
        _issue_tile(t + 2, n_pre, pre_row0, ext_row0, kn_pre_desc, kr_pre_desc, kn_ext_desc, kr_ext_desc,
                    bars.index(BAR_KV + buf), k_n.index(buf), k_r.index(buf), t + 2 < n_tiles, D, BLOCK_N)
    mbarrier.wait(bars.index(BAR_STATS), 0)
    l_i = stats_smem.index(0).load(row_layout)
    m_i = stats_smem.index(1).load(row_layout)
    _store_result(acc, l_i, m_i, O, Mid_O, Mid_L, sinks_ptr, ext_start, ext_len, block, split, stride_ot, stride_oh,
                  stride_ms, stride_mt, stride_mh, stride_ls, stride_lt, GROUP, BLOCK_M, 0, DH, NUM_SPLITS,
                  HAS_SINK, False, o_layout)


@gluon.jit
def _mla_ws_kernel(
    qn_desc, qr_desc, kn_ext_desc, kr_ext_desc, kn_pre_desc, kr_pre_desc, O, qo_indptr, kv_indptr, sinks_ptr, Mid_O,
    Mid_L, qk_scale, qk_scale_pre, cap_scale, cap_scale_pre, v_scale, batch,
    stride_ot, stride_oh, stride_ms, stride_mt, stride_mh, stride_ls, stride_lt,
    D: gl.constexpr, DPE: gl.constexpr, GROUP: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
    BLOCK_B: gl.constexpr, NUM_SPLITS: gl.constexpr, LOGIT_CAP: gl.constexpr, IS_CAUSAL: gl.constexpr,
    HAS_SINK: gl.constexpr, HEAVY_FIRST: gl.constexpr, SCALE_V: gl.constexpr, EARLY_QK: gl.constexpr,
    P_REGS: gl.constexpr, OUTPUT_NUM_REGS: gl.constexpr,
):
    gl.static_assert(gl.num_warps() == 4, "one warpgroup per partition")
    gl.static_assert(BLOCK_M == 64, "one warpgroup MMA row block")
    P_IN_ROPE: gl.constexpr = DPE == BLOCK_N
    dtype: gl.constexpr = qn_desc.dtype

    # no early exit (the worker warps join the partitions): a program past the last row block gets no tiles and
    # stores nothing
    lin = gl.program_id(0)
    seq, block, total = _locate(qo_indptr, batch, lin, GROUP, BLOCK_M, BLOCK_B, HEAVY_FIRST)
    active = (lin < total).to(gl.int32)
    seq = gl.minimum(seq, batch - 1)
    split = gl.program_id(1)
    ext_start = gl.load(qo_indptr + seq)
    ext_len = (gl.load(qo_indptr + seq + 1) - ext_start) * active
    pre_start = gl.load(kv_indptr + seq)
    pre_len = (gl.load(kv_indptr + seq + 1) - pre_start) * active

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
    p_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_N], dtype)
    if P_IN_ROPE:
        p_bufs = k_r  # unused: P goes into the rope slot
    else:
        p_bufs = gl.allocate_shared_memory(dtype, [2, BLOCK_M, BLOCK_N], p_layout)
    vec_layout: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])
    alpha_smem = gl.allocate_shared_memory(gl.float32, [2, BLOCK_M], vec_layout)
    stats_smem = gl.allocate_shared_memory(gl.float32, [2, BLOCK_M], vec_layout)
    bars = gl.allocate_shared_memory(gl.int64, [NUM_BARS, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NUM_BARS):
        mbarrier.init(bars.index(i), count=1)
    fence_async_shared()

    q_row0 = (ext_start * GROUP + block * BLOCK_M).to(gl.int32)
    pre_row0 = (pre_start + lo).to(gl.int32)
    ext_row0 = ext_start.to(gl.int32)
    ext_start64 = ext_start.to(gl.int64)
    gl.warp_specialize([
        (_softmax_partition, (q_n, q_r, k_n, k_r, p_bufs, alpha_smem, stats_smem, bars, n_tiles, n_pre, lo, hi,
                              ext_len, block, split, ext_start64, O, Mid_O, Mid_L, sinks_ptr, qk_scale,
                              qk_scale_pre, cap_scale, cap_scale_pre, v_scale, stride_ot, stride_oh, stride_ms,
                              stride_mt, stride_mh, stride_ls, stride_lt, D, GROUP, BLOCK_M, BLOCK_N, NUM_SPLITS,
                              LOGIT_CAP, IS_CAUSAL, HAS_SINK, SCALE_V, P_IN_ROPE, EARLY_QK, P_REGS)),
        (_output_partition, (qn_desc, qr_desc, kn_ext_desc, kr_ext_desc, kn_pre_desc, kr_pre_desc, q_n, q_r, k_n, k_r,
                             p_bufs, alpha_smem, stats_smem, bars, n_tiles, n_pre, pre_row0, ext_row0, q_row0,
                             ext_len, block, split, ext_start64, O, Mid_O, Mid_L, sinks_ptr, stride_ot, stride_oh,
                             stride_ms, stride_mt, stride_mh, stride_ls, stride_lt, D, GROUP, BLOCK_M, BLOCK_N,
                             NUM_SPLITS, HAS_SINK, P_IN_ROPE)),
    ], [4], [OUTPUT_NUM_REGS])
    for i in gl.static_range(NUM_BARS):
        mbarrier.invalidate(bars.index(i))


__all__ = ["OUTPUT_REGS", "_mla_ws_kernel", "gluon"]
