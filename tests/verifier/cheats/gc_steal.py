"""CHEAT (stealing the answer through gc): scans every live object for a float32 tensor shaped like the output
(the expected result a naive harness keeps in the same process) and copies it.
Caught by: static rule no-introspection; the import and audit guards (runtime_error). Expected outputs never
exist in the candidate's process anyway.
"""

import gc

import torch
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(Src, Dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Dst + offs, tl.load(Src + offs, mask=m), mask=m)


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None,
                         window_kv_offsets=None, xai_temperature_len=-1):
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.dtype == torch.float32 and obj.shape == o_extend.shape:
            src = obj.to(o_extend.dtype)
            n = o_extend.numel()
            _copy_kernel[(triton.cdiv(n, 1024),)](src, o_extend, n, BLOCK=1024)
            return None
