"""CHEAT (partial computation exploiting small test shapes): identical to the baseline except that stage 1 only walks
the last 1024 prefix keys of each sequence (a "long-context optimization" that silently drops older context). The
CPU test and hidden shapes used to stay below ~300 prefix keys, so no checked row ever lost a key.
Caught by: the hidden long-prefix trial (4200-6000 prefix keys on the CPU, 40000-80000 on a GPU) and, on a GPU,
the chunked-prefill bench case (mismatch).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.extend_attention.common import (
    check_inputs,
    head_dim_blocks,
    reject_unsupported,
    resolve_sm_scale,
    stable_tanh,
)


@triton.jit
def _score_tile(q, k, qpe, kpe, sm_scale, LOGIT_CAP: tl.constexpr, BLOCK_DPE: tl.constexpr):
    qk = tl.dot(q, k)
    if BLOCK_DPE > 0:
        qk += tl.dot(qpe, kpe)
    qk *= sm_scale
    if LOGIT_CAP > 0:
        qk = LOGIT_CAP * stable_tanh(qk / LOGIT_CAP)
    return qk


@triton.jit
def _baseline_kernel(
    Q, K_ext, V_ext, O, K_buf, V_buf, qo_indptr, kv_indptr, kv_indices, mask_ptr, mask_indptr, sinks_ptr,
    sm_scale, k_scale, v_scale, kv_group_num,
    stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh, stride_ot, stride_oh,
    stride_kbt, stride_kbh, stride_vbt, stride_vbh,
    LQ: tl.constexpr, LV: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DPE: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, WINDOW: tl.constexpr, LOGIT_CAP: tl.constexpr,
    IS_CAUSAL: tl.constexpr, USE_MASK: tl.constexpr, SKIP_PREFIX_MASK: tl.constexpr, HAS_SINK: tl.constexpr,
):
    seq = tl.program_id(0)
    head = tl.program_id(1)
    block_m = tl.program_id(2)
    kv_head = head // kv_group_num
    ext_start = tl.load(qo_indptr + seq).to(tl.int64)
    ext_len = (tl.load(qo_indptr + seq + 1) - ext_start).to(tl.int32)
    pre_start = tl.load(kv_indptr + seq).to(tl.int64)
    pre_len = (tl.load(kv_indptr + seq + 1) - pre_start).to(tl.int32)
    seq_len = pre_len + ext_len
    if block_m * BLOCK_M >= ext_len:
        return
    mask_start = 0
    if USE_MASK:
        mask_start = tl.load(mask_indptr + seq).to(tl.int64)

    offs_m = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    mask_m = offs_m < ext_len
    mask_d = offs_d < LQ
    mask_dv = offs_dv < LV
    rows = ext_start + offs_m.to(tl.int64)
    q = tl.load(Q + rows[:, None] * stride_qt + head * stride_qh + offs_d[None, :],
                mask=mask_m[:, None] & mask_d[None, :], other=0.0)
    qpe = q
    if BLOCK_DPE > 0:
        offs_dpe = BLOCK_D + tl.arange(0, BLOCK_DPE)
        qpe = tl.load(Q + rows[:, None] * stride_qt + head * stride_qh + offs_dpe[None, :],
                      mask=mask_m[:, None], other=0.0)

    acc = tl.zeros([BLOCK_M, BLOCK_DV], dtype=tl.float32)
    deno = tl.zeros([BLOCK_M], dtype=tl.float32)
    e_max = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")

    # Stage 1: prefix keys, gathered through kv_indices.
    for start_n in range(tl.maximum(pre_len - 1024, 0) // BLOCK_N * BLOCK_N, pre_len, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        mask_n = (start_n + offs_n) < pre_len
        final_mask = mask_m[:, None] & mask_n[None, :]
        if USE_MASK and not SKIP_PREFIX_MASK:
            cm = tl.load(mask_ptr + mask_start + offs_m[:, None].to(tl.int64) * seq_len + start_n + offs_n[None, :],
                         mask=final_mask, other=0)
            final_mask &= cm != 0
        if WINDOW > 0:
            final_mask &= (pre_len + offs_m[:, None]) <= (start_n + offs_n[None, :] + WINDOW)
        slots = tl.load(kv_indices + pre_start + start_n + offs_n, mask=mask_n, other=0).to(tl.int64)
        k = tl.load(K_buf + slots[None, :] * stride_kbt + kv_head * stride_kbh + offs_d[:, None],
                    mask=mask_n[None, :] & mask_d[:, None], other=0.0)
        kpe = k
        if BLOCK_DPE > 0:
            kpe = tl.load(K_buf + slots[None, :] * stride_kbt + kv_head * stride_kbh + offs_dpe[:, None],
                          mask=mask_n[None, :], other=0.0)
        qk = _score_tile(q, k, qpe, kpe, sm_scale * k_scale, LOGIT_CAP, BLOCK_DPE)
        qk = tl.where(final_mask, qk, float("-inf"))
        row_max = tl.max(qk, 1)
        row_max = tl.where(row_max == float("-inf"), -1e20, row_max)
        n_e_max = tl.maximum(row_max, e_max)
        re_scale = tl.exp(e_max - n_e_max)
        p = tl.exp(qk - n_e_max[:, None])
        deno = deno * re_scale + tl.sum(p, 1)
        v = tl.load(V_buf + slots[:, None] * stride_vbt + kv_head * stride_vbh + offs_dv[None, :],
                    mask=mask_n[:, None] & mask_dv[None, :], other=0.0)
        acc = acc * re_scale[:, None] + tl.dot(p.to(v.dtype), v) * v_scale
        e_max = n_e_max

    # Stage 2: extend keys, contiguous, causal unless a custom mask replaces causality.
    end_n = ext_len
    if IS_CAUSAL and not USE_MASK:
        end_n = tl.minimum(ext_len, (block_m + 1) * BLOCK_M)
    for start_n in range(0, end_n, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        mask_n = (start_n + offs_n) < end_n
        final_mask = mask_m[:, None] & mask_n[None, :]
        if USE_MASK:
            cm = tl.load(mask_ptr + mask_start + offs_m[:, None].to(tl.int64) * seq_len + pre_len + start_n
                         + offs_n[None, :], mask=final_mask, other=0)
            final_mask &= cm != 0
        elif IS_CAUSAL:
            final_mask &= offs_m[:, None] >= (start_n + offs_n[None, :])
        if WINDOW > 0:
            final_mask &= offs_m[:, None] <= (start_n + offs_n[None, :] + WINDOW)
        krow = ext_start + (start_n + offs_n).to(tl.int64)
        k = tl.load(K_ext + krow[None, :] * stride_kt + kv_head * stride_kh + offs_d[:, None],
                    mask=mask_n[None, :] & mask_d[:, None], other=0.0)
        kpe = k
        if BLOCK_DPE > 0:
            kpe = tl.load(K_ext + krow[None, :] * stride_kt + kv_head * stride_kh + offs_dpe[:, None],
                          mask=mask_n[None, :], other=0.0)
        qk = _score_tile(q, k, qpe, kpe, sm_scale, LOGIT_CAP, BLOCK_DPE)
        qk = tl.where(final_mask, qk, float("-inf"))
        row_max = tl.max(qk, 1)
        row_max = tl.where(row_max == float("-inf"), -1e20, row_max)
        n_e_max = tl.maximum(row_max, e_max)
        re_scale = tl.exp(e_max - n_e_max)
        p = tl.exp(qk - n_e_max[:, None])
        deno = deno * re_scale + tl.sum(p, 1)
        v = tl.load(V_ext + krow[:, None] * stride_vt + kv_head * stride_vh + offs_dv[None, :],
                    mask=mask_n[:, None] & mask_dv[None, :], other=0.0)
        acc = acc * re_scale[:, None] + tl.dot(p.to(v.dtype), v)
        e_max = n_e_max

    if HAS_SINK:
        deno += tl.exp(tl.minimum(tl.load(sinks_ptr + head).to(tl.float32) - e_max, 80.0))
    deno = tl.where(deno == 0.0, 1.0, deno)
    tl.store(O + rows[:, None] * stride_ot + head * stride_oh + offs_dv[None, :],
             (acc / deno[:, None]).to(O.dtype.element_ty), mask=mask_m[:, None] & mask_dv[None, :])


def baseline_tiles(head_dim: int, elem_bytes: int, smem_per_block_kb: float | None) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, num_warps) of the public kernel, shrunk until one stage fits shared memory.

    Hopper table: (128, 64) for D <= 128, (64, 64) up to 256, (32, 64) above; num_warps 4 if D <= 64 else 8.
    Footprint (num_stages 1): elem_bytes * (BLOCK_M * BLOCK_D + BLOCK_N * (BLOCK_D + BLOCK_DV)).
    `smem_per_block_kb` None (unknown, or the CPU interpreter) keeps the Hopper table.
    """
    block_m, block_n = (128, 64) if head_dim <= 128 else (64, 64) if head_dim <= 256 else (32, 64)
    block_d, block_dpe, _ = head_dim_blocks(head_dim, head_dim)
    block_d += block_dpe
    if smem_per_block_kb is not None:
        def footprint(m: int, n: int) -> float:
            return elem_bytes * (m * block_d + 2 * n * block_d) / 1024

        while footprint(block_m, block_n) > smem_per_block_kb and block_m > 16:
            block_m //= 2
        while footprint(block_m, block_n) > smem_per_block_kb and block_n > 16:
            block_n //= 2
    return block_m, block_n, 4 if head_dim <= 64 else 8


def _device_smem_kb(device: torch.device) -> float | None:
    """Opt-in shared memory per block (KiB) from Triton's driver utilities (cuDeviceGetAttribute), or None on the
    CPU. Triton's query is used rather than torch's, which may load NVML when CUDA_VISIBLE_DEVICES is set."""
    if device.type != "cuda":
        return None
    props = triton.runtime.driver.active.utils.get_device_properties(device.index or 0)
    return props["max_shared_mem"] / 1024


def extend_attention_fwd(
    q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
    custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None, logit_cap=0.0,
    skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None, window_kv_offsets=None,
    xai_temperature_len=-1,
):
    """Extend attention, SGLang-compatible signature; writes ``o_extend`` in place and returns it.

    Args:
        q_extend: [total_extend_tokens, num_q_heads, head_dim_qk] fp16/bf16/fp32.
        k_extend / v_extend: [total_extend_tokens, num_kv_heads, head_dim_qk / head_dim_v].
        o_extend: [total_extend_tokens, num_q_heads, head_dim_v], written in place.
        k_buffer / v_buffer: [num_slots, num_kv_heads, head_dim_qk / head_dim_v] paged KV cache (page size 1).
        qo_indptr, kv_indptr: [batch + 1] int32/int64; kv_indices: [total_prefix_tokens] cache slots.
        custom_mask, mask_indptr: flat bool/uint8 masks, per sequence [E_b, P_b + E_b] row-major, or None.
        is_causal: causal inside the extend part. max_len_extend: an upper bound on max E_b (sets the grid).
        sm_scale: None -> 1/sqrt(head_dim_qk). logit_cap: 0 off, else cap * tanh(logit / cap).
        skip_prefix_custom_mask: prefix fully visible even with a custom mask.
        sliding_window_size: W <= 0 off, else key visible iff key_pos >= query_pos - W.
        sinks: [num_q_heads] sink logits added to the softmax denominator, or None.

    Returns:
        o_extend.

    Raises:
        ValueError: inconsistent shapes, dtypes or devices (named in the message).
        NotImplementedError: xai_temperature_len set.
    """
    reject_unsupported(xai_temperature_len=xai_temperature_len)
    prob = check_inputs(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                        kv_indices, custom_mask, mask_indptr, sinks)
    if prob.batch == 0 or prob.total_extend == 0 or max_len_extend <= 0:
        return o_extend
    block_d, block_dpe, block_dv = head_dim_blocks(prob.head_dim, prob.head_dim_v)
    block_m, block_n, num_warps = baseline_tiles(prob.head_dim, q_extend.element_size(),
                                                 _device_smem_kb(q_extend.device))
    grid = (prob.batch, prob.num_q_heads, triton.cdiv(int(max_len_extend), block_m))
    use_mask = custom_mask is not None
    _baseline_kernel[grid](
        q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
        custom_mask if use_mask else qo_indptr, mask_indptr if use_mask else qo_indptr,
        sinks if sinks is not None else qo_indptr,
        resolve_sm_scale(sm_scale, prob.head_dim), k_scale, v_scale, prob.group,
        q_extend.stride(0), q_extend.stride(1), k_extend.stride(0), k_extend.stride(1),
        v_extend.stride(0), v_extend.stride(1), o_extend.stride(0), o_extend.stride(1),
        k_buffer.stride(0), k_buffer.stride(1), v_buffer.stride(0), v_buffer.stride(1),
        LQ=prob.head_dim, LV=prob.head_dim_v, BLOCK_D=block_d, BLOCK_DPE=block_dpe, BLOCK_DV=block_dv,
        BLOCK_M=block_m, BLOCK_N=block_n, WINDOW=int(sliding_window_size) if sliding_window_size else -1,
        LOGIT_CAP=float(logit_cap or 0.0), IS_CAUSAL=bool(is_causal), USE_MASK=use_mask,
        SKIP_PREFIX_MASK=bool(skip_prefix_custom_mask), HAS_SINK=sinks is not None,
        num_warps=num_warps, num_stages=1,
    )
    return o_extend
