"""CHEAT (library call instead of a kernel): computes attention with torch ops and copies it into the output;
a token Triton kernel is launched so that "a kernel ran".
Caught by: static rules no-torch-compute / no-tensor-compute-methods; the torch compute guard (runtime_error).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _token_kernel(X):
    tl.store(X, 0)


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None,
                         window_kv_offsets=None, xai_temperature_len=-1):
    scratch = torch.empty(1, dtype=torch.int32, device=o_extend.device)
    _token_kernel[(1,)](scratch)
    scale = sm_scale or q_extend.shape[-1] ** -0.5
    group = q_extend.shape[1] // k_extend.shape[1]
    starts = qo_indptr.tolist()
    pstarts = kv_indptr.tolist()
    for b in range(len(starts) - 1):
        q = q_extend[starts[b]:starts[b + 1]].float()
        slots = kv_indices[pstarts[b]:pstarts[b + 1]]
        k = torch.cat([k_buffer[slots], k_extend[starts[b]:starts[b + 1]]]).float().repeat_interleave(group, 1)
        v = torch.cat([v_buffer[slots], v_extend[starts[b]:starts[b + 1]]]).float().repeat_interleave(group, 1)
        scores = torch.einsum("qhd,khd->hqk", q, k) * scale
        o_extend[starts[b]:starts[b + 1]] = torch.einsum("hqk,khd->qhd", scores.softmax(-1), v).to(o_extend.dtype)
