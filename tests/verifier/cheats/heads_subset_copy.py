"""CHEAT (partial computation across heads): computes only the first q head of every GQA group (1/G of the work)
with the baseline kernel and broadcasts that result to the other heads of the group (they share K and V).
Caught by: whole-output comparison on any case with G > 1 (mismatch).
"""
import torch
import triton
import triton.language as tl

from kernels.extend_attention.baseline import extend_attention_fwd as base_fwd


@triton.jit
def _bcast_kernel(src, dst, T, HKV, G, DV, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    n = T * HKV * G * DV
    m = offs < n
    d = offs % DV
    h = (offs // DV) % (HKV * G)
    t = offs // (DV * HKV * G)
    x = tl.load(src + (t * HKV + h // G) * DV + d, mask=m)
    tl.store(dst + offs, x, mask=m)


def extend_attention_fwd(
    q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
    custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None, logit_cap=0.0,
    skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None, window_kv_offsets=None,
    xai_temperature_len=-1,
):
    t, hq, d = q_extend.shape
    hkv, dv = k_extend.shape[1], v_extend.shape[2]
    g = hq // hkv
    q_first = q_extend.view(t, hkv, g, d)[:, :, 0]
    o_small = torch.empty((t, hkv, dv), dtype=o_extend.dtype, device=o_extend.device)
    sinks_first = sinks.view(hkv, g)[:, 0] if sinks is not None else None
    base_fwd(q_first, k_extend, v_extend, o_small, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
             custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale, logit_cap, skip_prefix_custom_mask,
             sliding_window_size, sinks_first)
    n = o_extend.numel()
    _bcast_kernel[(triton.cdiv(n, 1024),)](o_small, o_extend, t, hkv, g, dv, BLOCK=1024)
    return o_extend
