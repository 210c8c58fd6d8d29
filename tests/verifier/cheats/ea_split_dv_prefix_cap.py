"""CHEAT: head_dim_v != head_dim (MLA, 192/128 heads) keeps only the last 64 prefix keys (tile-aligned). Was: Baseline: a from-scratch Triton kernel with the structure of SGLang's ``extend_attention_fwd``.

This is the "reference Triton kernel" every speedup is measured against, so it keeps that design on purpose
(shared/reference/extend_attention.md, "How the public Triton kernel works"): grid (B, H_q,
cdiv(max_len_extend, BLOCK_M)); one program = one sequence, one q head, BLOCK_M query rows; stage 1 walks the
prefix in BLOCK_N steps gathering K/V rows through kv_indices; stage 2 walks the extend keys with the causal
mask; online softmax in fp32 with natural exp; num_stages 1; Hopper tiles (128, 64) for D <= 128, (64, 64) up
to 256, (32, 64) above, shrunk to fit the chip's shared memory. Like SGLang 0.5.23 it scales the prefix logits by
``sm_scale * k_scale`` and each prefix tile's P.V by ``v_scale``, and can write the natural-log LSE. Two deliberate
departures, both correctness fixes that cost nothing measurable: rows with no visible key output 0 (not NaN), and
row offsets are 64-bit.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.extend_attention.common import (
    FLOAT32_TILE_CAP,
    check_inputs,
    chip_limits_if_set,
    current_chip_limits,
    dot,
    head_dim_blocks,
    mask_offsets,
    reject_unsupported,
    resolve_kv_scales,
    resolve_sm_scale,
    stable_tanh,
)


@triton.jit
def _score_tile(q, k, qpe, kpe, sm_scale, LOGIT_CAP: tl.constexpr, BLOCK_DPE: tl.constexpr):
    qk = dot(q, k)
    if BLOCK_DPE > 0:
        qk += dot(qpe, kpe)
    qk *= sm_scale
    if LOGIT_CAP > 0:
        qk = LOGIT_CAP * stable_tanh(qk / LOGIT_CAP)
    return qk


@triton.jit
def _baseline_kernel(
    Q, K_ext, V_ext, O, LSE, K_buf, V_buf, qo_indptr, kv_indptr, kv_indices, mask_ptr, mask_indptr, mask_offsets_ptr,
    sinks_ptr, sm_scale, k_scale, v_scale, kv_group_num,
    stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh, stride_ot, stride_oh, stride_lt, stride_lh,
    stride_kbt, stride_kbh, stride_vbt, stride_vbh,
    LQ: tl.constexpr, LV: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DPE: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, WINDOW: tl.constexpr, LOGIT_CAP: tl.constexpr,
    IS_CAUSAL: tl.constexpr, USE_MASK: tl.constexpr, SKIP_PREFIX_MASK: tl.constexpr, HAS_SINK: tl.constexpr,
    STORE_LSE: tl.constexpr, SKIP_PREFIX: tl.constexpr, SKIP_EXTEND: tl.constexpr, IDENTITY_KV: tl.constexpr,
    MASK_OFFSET: tl.constexpr, KEEP: tl.constexpr,
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
    mask_row = seq_len  # row stride of the sequence's mask
    if USE_MASK:
        mask_start = tl.load(mask_indptr + seq).to(tl.int64)
    if MASK_OFFSET:  # SGLang's window_kv_offsets: the mask's first `off` columns are skipped
        off = tl.load(mask_offsets_ptr + seq).to(tl.int32)
        mask_row = seq_len + off
        mask_start += off

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

    # Stage 1: prefix keys, gathered through kv_indices (logits x k_scale, P.V x v_scale).
    prefix_end = 0 if SKIP_PREFIX else pre_len
    for start_n in range(tl.maximum(prefix_end - KEEP, 0) // BLOCK_N * BLOCK_N, prefix_end, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        mask_n = (start_n + offs_n) < pre_len
        final_mask = mask_m[:, None] & mask_n[None, :]
        if USE_MASK and not SKIP_PREFIX_MASK:
            cm = tl.load(mask_ptr + mask_start + offs_m[:, None].to(tl.int64) * mask_row + start_n + offs_n[None, :],
                         mask=final_mask, other=0)
            final_mask &= cm != 0
        if WINDOW > 0:
            final_mask &= (pre_len + offs_m[:, None]) <= (start_n + offs_n[None, :] + WINDOW)
        if IDENTITY_KV:
            slots = pre_start + start_n + offs_n.to(tl.int64)
        else:
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
        acc = acc * re_scale[:, None] + dot(p.to(v.dtype), v) * v_scale
        e_max = n_e_max

    # Stage 2: extend keys, contiguous, causal unless a custom mask replaces causality.
    end_n = ext_len
    if IS_CAUSAL and not USE_MASK:
        end_n = tl.minimum(ext_len, (block_m + 1) * BLOCK_M)
    if SKIP_EXTEND:
        end_n = 0
    for start_n in range(0, end_n, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        mask_n = (start_n + offs_n) < end_n
        final_mask = mask_m[:, None] & mask_n[None, :]
        if USE_MASK:
            cm = tl.load(mask_ptr + mask_start + offs_m[:, None].to(tl.int64) * mask_row + pre_len + start_n
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
        acc = acc * re_scale[:, None] + dot(p.to(v.dtype), v)
        e_max = n_e_max

    if STORE_LSE:  # natural log of the denominator (sink included), -inf for a row with no key and no sink
        top = e_max
        if HAS_SINK:
            sink = tl.load(sinks_ptr + head).to(tl.float32)
            top = tl.maximum(e_max, sink)
        top = tl.where(top == float("-inf"), 0.0, top)
        keys_sum = deno * tl.exp(e_max - top)
        if HAS_SINK:
            keys_sum += tl.exp(sink - top)
        lse = tl.where(keys_sum == 0.0, float("-inf"), top + tl.log(keys_sum))
        tl.store(LSE + rows * stride_lt + head * stride_lh, lse.to(LSE.dtype.element_ty), mask=mask_m)
    if HAS_SINK:
        deno += tl.exp(tl.minimum(tl.load(sinks_ptr + head).to(tl.float32) - e_max, 80.0))
    deno = tl.where(deno == 0.0, 1.0, deno)
    tl.store(O + rows[:, None] * stride_ot + head * stride_oh + offs_dv[None, :],
             (acc / deno[:, None]).to(O.dtype.element_ty), mask=mask_m[:, None] & mask_dv[None, :])


def baseline_tiles(head_dim: int, elem_bytes: int, smem_per_block_kb: float | None) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, num_warps) of the public kernel, shrunk until one stage fits shared memory.

    Hopper table: (128, 64) for D <= 128, (64, 64) up to 256, (32, 64) above; num_warps 4 if D <= 64 else 8.
    Footprint (num_stages 1): elem_bytes * (BLOCK_M * BLOCK_D + BLOCK_N * (BLOCK_D + BLOCK_DV)).
    `smem_per_block_kb` None (unknown, or the CPU interpreter) keeps the Hopper table. Float32 inputs
    (`elem_bytes` 4) are capped at `common.FLOAT32_TILE_CAP`: the public kernel computes float32 in tf32, which this
    project rejects, and IEEE float32 dots of its tiles compile for ~20 s (fp16/bf16, the timed dtypes, unchanged).
    """
    block_m, block_n = (128, 64) if head_dim <= 128 else (64, 64) if head_dim <= 256 else (32, 64)
    if elem_bytes == 4:
        block_m, block_n = min(block_m, FLOAT32_TILE_CAP[0]), min(block_n, FLOAT32_TILE_CAP[1])
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


def _chip_smem_kb(device: torch.device) -> float | None:
    """Shared memory per block (KiB) of the chip the kernel runs on: the process's chip limits
    (`kernels.chip.current_chip_limits`, set by the caller from the chip's profile). Under the Triton interpreter
    (CPU tensors) with none set: None (no chip, the Hopper table).

    Raises:
        kernels.chip.ChipLimitsUnset: a GPU call with no chip limits set.
    """
    if device.type != "cuda":
        limits = chip_limits_if_set()
        return None if limits is None else limits.smem_per_block_kb
    return current_chip_limits().smem_per_block_kb


def extend_attention_fwd(
    q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
    custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None, logit_cap=0.0,
    skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None, window_kv_offsets=None,
    xai_temperature_len=-1, lse_extend=None, skip_prefix=False, skip_extend=False, page_size=1, score_mod=None,
    aux_tensors=None, extend_seq_lens_cpu=None, identity_kv_indices=False,
):
    """Extend attention with SGLang 0.5.23's signature (``kernels/ops/attention/extend_attention.py``); writes
    ``o_extend`` in place and returns it.

    Args:
        q_extend: [total_extend_tokens, num_q_heads, head_dim_qk] fp16/bf16/fp32.
        k_extend / v_extend: [total_extend_tokens, num_kv_heads, head_dim_qk / head_dim_v] (0 rows allowed with
            skip_extend).
        o_extend: [total_extend_tokens, num_q_heads, head_dim_v], written in place (any supported float dtype).
        k_buffer / v_buffer: [num_slots, num_kv_heads, head_dim_qk / head_dim_v] KV cache, one slot per token.
        qo_indptr, kv_indptr: [batch + 1] int32/int64; kv_indices: [>= kv_indptr[batch]] cache slots (entries past
            kv_indptr[batch] are never read).
        custom_mask, mask_indptr: flat bool/uint8 masks, per sequence [E_b, P_b + E_b] row-major, or None.
        is_causal: causal inside the extend part. max_len_extend: an upper bound on max E_b (sets the grid).
        k_scale, v_scale: host floats; prefix logits x sm_scale * k_scale, prefix P.V x v_scale (FP8 KV-cache
            dequantization scales; 1.0 for a bf16/fp16 cache).
        sm_scale: None -> 1/sqrt(head_dim_qk). logit_cap: 0 off, else cap * tanh(logit / cap).
        skip_prefix_custom_mask: prefix fully visible even with a custom mask.
        sliding_window_size: W <= 0 off, else key visible iff key_pos >= query_pos - W.
        sinks: [num_q_heads] sink logits added to the softmax denominator, or None.
        window_kv_offsets: [batch] ints or None; with a custom mask and a window, sequence b's mask is
            [E_b, off_b + P_b + E_b] and its first off_b columns are skipped (`common.mask_offsets`).
        lse_extend: None or [total_extend_tokens, num_q_heads] float, written with the natural-log LSE of each
            row's softmax denominator (sink included; -inf for a row that sees nothing).
        skip_prefix / skip_extend: leave out the prefix stage / the extend stage.
        page_size: int >= 1; the same addressing for every value (`common.check_page_size`).
        extend_seq_lens_cpu: None or B host ints (SGLang's grid hint; accepted, unused).
        identity_kv_indices: prefix token t of sequence b is row kv_indptr[b] + t of the buffers (kv_indices unread).

    Returns:
        o_extend.

    Raises:
        ValueError: inconsistent shapes, dtypes or devices, or a scale / page_size of the wrong type (named).
        NotImplementedError: xai_temperature_len, score_mod or aux_tensors set.
        kernels.chip.ChipLimitsUnset: a GPU call with no chip limits set (`kernels.chip.set_chip_limits`).
    """
    reject_unsupported(xai_temperature_len=xai_temperature_len, score_mod=score_mod, aux_tensors=aux_tensors)
    prob = check_inputs(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                        kv_indices, custom_mask, mask_indptr, sinks, skip_extend, lse_extend, page_size,
                        extend_seq_lens_cpu)
    k_scale, v_scale = resolve_kv_scales(k_scale, v_scale)
    offsets = mask_offsets(window_kv_offsets, custom_mask, sliding_window_size, prob.batch)
    if prob.batch == 0 or prob.total_extend == 0 or max_len_extend <= 0:
        return o_extend
    block_d, block_dpe, block_dv = head_dim_blocks(prob.head_dim, prob.head_dim_v)
    block_m, block_n, num_warps = baseline_tiles(prob.head_dim, q_extend.element_size(),
                                                 _chip_smem_kb(q_extend.device))
    grid = (prob.batch, prob.num_q_heads, triton.cdiv(int(max_len_extend), block_m))
    use_mask = custom_mask is not None
    store_lse = lse_extend is not None
    _baseline_kernel[grid](
        q_extend, k_extend, v_extend, o_extend, lse_extend if store_lse else o_extend, k_buffer, v_buffer,
        qo_indptr, kv_indptr, kv_indices,
        custom_mask if use_mask else qo_indptr, mask_indptr if use_mask else qo_indptr,
        offsets if offsets is not None else qo_indptr, sinks if sinks is not None else qo_indptr,
        resolve_sm_scale(sm_scale, prob.head_dim), k_scale, v_scale, prob.group,
        q_extend.stride(0), q_extend.stride(1), k_extend.stride(0), k_extend.stride(1),
        v_extend.stride(0), v_extend.stride(1), o_extend.stride(0), o_extend.stride(1),
        lse_extend.stride(0) if store_lse else 0, lse_extend.stride(1) if store_lse else 0,
        k_buffer.stride(0), k_buffer.stride(1), v_buffer.stride(0), v_buffer.stride(1),
        LQ=prob.head_dim, LV=prob.head_dim_v, BLOCK_D=block_d, BLOCK_DPE=block_dpe, BLOCK_DV=block_dv,
        BLOCK_M=block_m, BLOCK_N=block_n, WINDOW=int(sliding_window_size) if sliding_window_size else -1,
        LOGIT_CAP=float(logit_cap or 0.0), IS_CAUSAL=bool(is_causal), USE_MASK=use_mask,
        SKIP_PREFIX_MASK=bool(skip_prefix_custom_mask), HAS_SINK=sinks is not None, STORE_LSE=store_lse,
        SKIP_PREFIX=bool(skip_prefix), SKIP_EXTEND=bool(skip_extend), IDENTITY_KV=bool(identity_kv_indices),
        MASK_OFFSET=offsets is not None, KEEP=64 if v_extend.shape[-1] != q_extend.shape[-1] else (1 << 30), num_warps=num_warps, num_stages=1,
    )
    return o_extend
