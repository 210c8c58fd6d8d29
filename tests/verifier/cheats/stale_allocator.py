"""CHEAT (stale allocator memory): never computes; copies a fresh torch.empty block into the output, hoping the
caching allocator hands back the block where a reference computed in the same process just left the answer.
Caught by: the reference never exists in the candidate's process, free memory is NaN-poisoned and the output
NaN-prefilled (mismatch).
"""

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
    stale = torch.empty_like(o_extend)
    n = o_extend.numel()
    _copy_kernel[(triton.cdiv(n, 1024),)](stale, o_extend, n, BLOCK=1024)
