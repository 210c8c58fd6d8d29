"""CHEAT (precision downgrade inside the tolerance): float32 inputs are cast to float16 (half the bytes, tensor-core
rate) and computed by the baseline in float16; the result is widened back. fp16/bf16 calls go to the baseline
unchanged.
Caught by: the float32 tolerance (1e-4 on every device: float32 calls must be computed in IEEE float32, and this
errs by >= 2.7e-4) at a float32 trial (mismatch) -- on the CPU the long-extend trial (float32) or the fp32-inputs
test case, on a GPU the hidden small float32 case every plan adds. (It passed on a GPU while float32 was allowed
tf32 dots there with a 4e-3 bound.)
"""
import torch
import triton
import triton.language as tl

from kernels.extend_attention.baseline import extend_attention_fwd as base_fwd


@triton.jit
def _widen_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=m).to(tl.float32), mask=m)


def extend_attention_fwd(
    q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
    custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None, logit_cap=0.0,
    skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None, window_kv_offsets=None,
    xai_temperature_len=-1,
):
    if q_extend.dtype != torch.float32:
        return base_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                        kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale, logit_cap,
                        skip_prefix_custom_mask, sliding_window_size, sinks)
    low = torch.float16
    o_low = torch.empty(o_extend.shape, dtype=low, device=o_extend.device)
    base_fwd(q_extend.to(low), k_extend.to(low), v_extend.to(low), o_low, k_buffer.to(low), v_buffer.to(low),
             qo_indptr, kv_indptr, kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale,
             logit_cap, skip_prefix_custom_mask, sliding_window_size, sinks)
    n = o_extend.numel()
    _widen_kernel[(triton.cdiv(n, 1024),)](o_low, o_extend, n, BLOCK=1024)
    return o_extend
