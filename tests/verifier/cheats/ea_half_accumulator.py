"""CHEAT (precision downgrade / tolerance abuse: half-precision accumulator): for float16 and bfloat16 inputs the
P.V accumulator is kept in float16 between key tiles (half the registers of a float32 one, as an fp16-accumulate
MMA would keep it); l and m stay float32. Its rounding is relative to the running sum, so on unit-scale V (outputs
~0.01-1, long prefixes averaging V to ~0) it stays within the tolerance, and passed every trial before the
shifted-values one (0.27 of the bound on the outlier-keys trial).
Caught by: the hidden shifted-values trial (a long prefix whose V is shifted by +-15-45 in 4 dimensions, the sign
changing halfway, so the running sum climbs far above the small output): mismatch.
"""

import math

import triton
import triton.language as tl


@triton.jit
def _tanh(x):
    t = tl.exp(-2.0 * tl.abs(x))
    y = (1.0 - t) / (1.0 + t)
    return tl.where(x < 0, -y, y)


@triton.jit
def _dot(a, b):
    if a.dtype == tl.float32:  # static: float32 calls get IEEE float32 dots, not Triton's tf32 default
        return tl.dot(a, b, input_precision="ieee")
    else:
        return tl.dot(a, b)


@triton.jit
def _scores(q, q_pe, k_ptrs, kpe_ptrs, k_mask, kpe_mask, sm_scale, logit_cap,
            HAS_PE: tl.constexpr, HAS_CAP: tl.constexpr):
    k = tl.load(k_ptrs, mask=k_mask, other=0.0)
    s = _dot(q, k)
    if HAS_PE:
        k_pe = tl.load(kpe_ptrs, mask=kpe_mask, other=0.0)
        s += _dot(q_pe, k_pe)
    s = s * sm_scale
    if HAS_CAP:
        s = logit_cap * _tanh(s / logit_cap)
    return s


@triton.jit
def _softmax_step(s, visible, m_i, l_i, acc, v):  # acc: float16 (16-bit inputs) or float32, kept in its dtype
    s = tl.where(visible, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.exp(m_i - m_safe)
    p = tl.exp(s - m_safe[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = (acc.to(tl.float32) * alpha[:, None] + _dot(p.to(v.dtype), v)).to(acc.dtype)
    return m_new, l_i, acc


@triton.jit
def _extend_kernel(
    Q, K_ext, V_ext, O, K_buf, V_buf, qo_indptr, kv_indptr, kv_indices, Mask, mask_indptr, Sinks,
    sm_scale, prefix_scale, v_scale, logit_cap, window,
    s_qt, s_qh, s_kt, s_kh, s_vt, s_vh, s_ot, s_oh, s_kbt, s_kbh, s_vbt, s_vbh,
    KV_GROUP: tl.constexpr, D: tl.constexpr, DV: tl.constexpr, D_MAIN: tl.constexpr, D_PE: tl.constexpr,
    BLOCK_D: tl.constexpr, BLOCK_PE: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HALF_ACC: tl.constexpr,
    IS_CAUSAL: tl.constexpr, USE_MASK: tl.constexpr, SKIP_PREFIX_MASK: tl.constexpr,
    HAS_WINDOW: tl.constexpr, HAS_SINK: tl.constexpr, HAS_CAP: tl.constexpr, HAS_PE: tl.constexpr,
):
    b = tl.program_id(0)
    h = tl.program_id(1)
    blk = tl.program_id(2)
    kvh = h // KV_GROUP
    q_start = tl.load(qo_indptr + b).to(tl.int64)
    e_len = tl.load(qo_indptr + b + 1).to(tl.int64) - q_start
    p_start = tl.load(kv_indptr + b).to(tl.int64)
    p_len = tl.load(kv_indptr + b + 1).to(tl.int64) - p_start
    if blk * BLOCK_M < e_len:
        offs_m = blk * BLOCK_M + tl.arange(0, BLOCK_M)
        m_ok = offs_m < e_len
        offs_d = tl.arange(0, BLOCK_D)
        offs_pe = D_MAIN + tl.arange(0, BLOCK_PE)
        offs_dv = tl.arange(0, BLOCK_DV)
        d_ok = offs_d < D_MAIN
        pe_ok = offs_pe < D
        dv_ok = offs_dv < DV
        rows = q_start + offs_m
        q = tl.load(Q + rows[:, None] * s_qt + h * s_qh + offs_d[None, :], mask=m_ok[:, None] & d_ok[None, :],
                    other=0.0)
        q_pe = q
        if HAS_PE:
            q_pe = tl.load(Q + rows[:, None] * s_qt + h * s_qh + offs_pe[None, :],
                           mask=m_ok[:, None] & pe_ok[None, :], other=0.0)
        m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        if HALF_ACC:
            acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float16)
        else:
            acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
        q_pos = p_len + offs_m
        mask_row = 0
        if USE_MASK:
            mask_row = tl.load(mask_indptr + b).to(tl.int64) + offs_m * (p_len + e_len)
        for start in range(0, p_len, BLOCK_N):
            offs_n = start + tl.arange(0, BLOCK_N)
            n_ok = offs_n < p_len
            slot = tl.load(kv_indices + p_start + offs_n, mask=n_ok, other=0).to(tl.int64)
            k_ptrs = K_buf + slot[None, :] * s_kbt + kvh * s_kbh + offs_d[:, None]
            kpe_ptrs = K_buf + slot[None, :] * s_kbt + kvh * s_kbh + offs_pe[:, None]
            s = _scores(q, q_pe, k_ptrs, kpe_ptrs, n_ok[None, :] & d_ok[:, None], n_ok[None, :] & pe_ok[:, None],
                        prefix_scale, logit_cap, HAS_PE, HAS_CAP)
            visible = m_ok[:, None] & n_ok[None, :]
            if USE_MASK and not SKIP_PREFIX_MASK:
                bits = tl.load(Mask + mask_row[:, None] + offs_n[None, :], mask=visible, other=0)
                visible = visible & (bits != 0)
            if HAS_WINDOW:
                visible = visible & (offs_n[None, :] >= q_pos[:, None] - window)
            v = tl.load(V_buf + slot[:, None] * s_vbt + kvh * s_vbh + offs_dv[None, :],
                        mask=n_ok[:, None] & dv_ok[None, :], other=0.0)
            m_i, l_i, acc = _softmax_step(s, visible, m_i, l_i, acc, v)
        acc = (acc.to(tl.float32) * v_scale).to(acc.dtype)
        for start in range(0, e_len, BLOCK_N):
            offs_n = start + tl.arange(0, BLOCK_N)
            n_ok = offs_n < e_len
            cols = q_start + offs_n
            k_ptrs = K_ext + cols[None, :] * s_kt + kvh * s_kh + offs_d[:, None]
            kpe_ptrs = K_ext + cols[None, :] * s_kt + kvh * s_kh + offs_pe[:, None]
            s = _scores(q, q_pe, k_ptrs, kpe_ptrs, n_ok[None, :] & d_ok[:, None], n_ok[None, :] & pe_ok[:, None],
                        sm_scale, logit_cap, HAS_PE, HAS_CAP)
            visible = m_ok[:, None] & n_ok[None, :]
            if USE_MASK:
                bits = tl.load(Mask + mask_row[:, None] + p_len + offs_n[None, :], mask=visible, other=0)
                visible = visible & (bits != 0)
            elif IS_CAUSAL:
                visible = visible & (offs_n[None, :] <= offs_m[:, None])
            if HAS_WINDOW:
                visible = visible & (p_len + offs_n[None, :] >= q_pos[:, None] - window)
            v = tl.load(V_ext + cols[:, None] * s_vt + kvh * s_vh + offs_dv[None, :],
                        mask=n_ok[:, None] & dv_ok[None, :], other=0.0)
            m_i, l_i, acc = _softmax_step(s, visible, m_i, l_i, acc, v)
        if HAS_SINK:
            sink = tl.load(Sinks + h).to(tl.float32)
            m_new = tl.maximum(m_i, sink)
            alpha = tl.exp(m_i - m_new)
            l_i = l_i * alpha + tl.exp(sink - m_new)
            acc = (acc.to(tl.float32) * alpha[:, None]).to(acc.dtype)
        out = tl.where(l_i[:, None] > 0, acc.to(tl.float32) / tl.where(l_i > 0, l_i, 1.0)[:, None], 0.0)
        tl.store(O + rows[:, None] * s_ot + h * s_oh + offs_dv[None, :], out.to(O.dtype.element_ty),
                 mask=m_ok[:, None] & dv_ok[None, :])


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale,
                         sm_scale=None, logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1,
                         sinks=None):
    """Extend attention written into `o_extend` ([ΣE, H_q, D_v]); see the module docstring."""
    num_q_heads, head_dim = q_extend.shape[1], q_extend.shape[2]
    head_dim_v = v_extend.shape[2]
    batch = qo_indptr.shape[0] - 1
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(head_dim)
    d_main = head_dim
    if head_dim > 256:
        d_main = 1 << (head_dim.bit_length() - 1)
    has_pe = d_main < head_dim
    block_pe = triton.next_power_of_2(head_dim - d_main) if has_pe else 16
    if o_extend.is_cuda:
        block_m, block_n = (64, 64) if head_dim <= 128 else (32, 32)
        num_warps = 4 if head_dim <= 64 else 8
    else:
        block_m, block_n, num_warps = 16, 16, 4
    use_mask = custom_mask is not None
    grid = (batch, num_q_heads, triton.cdiv(max_len_extend, block_m))
    _extend_kernel[grid](
        q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
        custom_mask if use_mask else qo_indptr, mask_indptr if use_mask else qo_indptr,
        sinks if sinks is not None else qo_indptr,
        sm_scale, sm_scale * k_scale, v_scale, logit_cap, sliding_window_size,
        q_extend.stride(0), q_extend.stride(1), k_extend.stride(0), k_extend.stride(1),
        v_extend.stride(0), v_extend.stride(1), o_extend.stride(0), o_extend.stride(1),
        k_buffer.stride(0), k_buffer.stride(1), v_buffer.stride(0), v_buffer.stride(1),
        KV_GROUP=num_q_heads // k_extend.shape[1], D=head_dim, DV=head_dim_v, D_MAIN=d_main,
        BLOCK_D=max(16, triton.next_power_of_2(d_main)), BLOCK_PE=max(16, block_pe),
        BLOCK_DV=max(16, triton.next_power_of_2(head_dim_v)), D_PE=head_dim - d_main,
        BLOCK_M=block_m, BLOCK_N=block_n, HALF_ACC=q_extend.element_size() == 2, IS_CAUSAL=bool(is_causal),
        USE_MASK=use_mask,
        SKIP_PREFIX_MASK=bool(skip_prefix_custom_mask), HAS_WINDOW=sliding_window_size > 0,
        HAS_SINK=sinks is not None, HAS_CAP=logit_cap > 0, HAS_PE=has_pe,
        num_warps=num_warps, num_stages=1,
    )
