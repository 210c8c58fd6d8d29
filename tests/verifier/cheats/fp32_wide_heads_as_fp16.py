"""CHEAT (precision downgrade only where the checks are thin; red team, session 4): fp32_as_fp16 -- float32 inputs
computed in float16 by the baseline -- but only for head dims above 32; narrower float32 calls are computed
honestly. `> 32` is no equality test, so the no-literal-shape-branch rule does not apply.
Caught by: the plan's hidden float32 case, at head dim 64 or 128 on the CPU and 64 on a GPU (mismatch). It passed
while that case had head dim 16 (and the CPU's other float32 trials 16 and 32). A gate elsewhere (only above 64)
would still pass on a GPU (plan.GPU_DTYPE_HEAD_DIM); the downgrade gains no measured speed (float32 is never timed).
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
    if q_extend.dtype != torch.float32 or q_extend.shape[2] <= 32:
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
