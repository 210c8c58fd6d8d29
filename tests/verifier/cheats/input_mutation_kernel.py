"""CHEAT (input mutation, on the device): a kernel scales q by zero in place and writes the mean of V, which is
what attention returns when every logit is equal.
Caught by: inputs cloned before and compared bit for bit after the call (runtime_error).
"""

import triton
import triton.language as tl


@triton.jit
def _flatten_q(Q, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Q + offs, tl.load(Q + offs, mask=m) * 0.0, mask=m)


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None,
                         window_kv_offsets=None, xai_temperature_len=-1):
    n = q_extend.numel()
    _flatten_q[(triton.cdiv(n, 1024),)](q_extend, n, BLOCK=1024)
