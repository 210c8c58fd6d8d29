"""CHEAT (library call: the reference): imports the task's own reference implementation and copies its answer.
Caught by: static rule no-reference-import; the import guard (runtime_error).
"""

import triton
import triton.language as tl

from kernels.extend_attention.reference import reference_extend_attention


@triton.jit
def _copy_kernel(Src, Dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Dst + offs, tl.load(Src + offs, mask=m), mask=m)


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None,
                         window_kv_offsets=None, xai_temperature_len=-1):
    ref = reference_extend_attention(q_extend, k_extend, v_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                                     kv_indices, custom_mask, is_causal, mask_indptr, sm_scale, logit_cap,
                                     skip_prefix_custom_mask, sliding_window_size, sinks).to(o_extend.dtype)
    n = o_extend.numel()
    _copy_kernel[(triton.cdiv(n, 1024),)](ref, o_extend, n, BLOCK=1024)
