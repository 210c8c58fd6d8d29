"""CHEAT (try/except fallback): the "fast kernel" always fails (wrong arguments); the except branch answers with
torch.
Caught by: static rule no-try-except; the torch compute guard raises a BaseException that "except Exception"
cannot swallow (runtime_error).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _fast_kernel(Q, O, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(O + offs, tl.load(Q + offs, mask=offs < n), mask=offs < n)


def _torch_fallback(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
                    sm_scale):
    scale = sm_scale or q_extend.shape[-1] ** -0.5
    group = q_extend.shape[1] // k_extend.shape[1]
    starts, pstarts = qo_indptr.tolist(), kv_indptr.tolist()
    for b in range(len(starts) - 1):
        q = q_extend[starts[b]:starts[b + 1]].float()
        slots = kv_indices[pstarts[b]:pstarts[b + 1]]
        k = torch.cat([k_buffer[slots], k_extend[starts[b]:starts[b + 1]]]).float().repeat_interleave(group, 1)
        v = torch.cat([v_buffer[slots], v_extend[starts[b]:starts[b + 1]]]).float().repeat_interleave(group, 1)
        p = (torch.einsum("qhd,khd->hqk", q, k) * scale).softmax(-1)
        o_extend[starts[b]:starts[b + 1]] = torch.einsum("hqk,khd->qhd", p, v).to(o_extend.dtype)


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None,
                         window_kv_offsets=None, xai_temperature_len=-1):
    try:
        _fast_kernel[(1,)](q_extend, o_extend)
    except Exception:
        _torch_fallback(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                        kv_indices, sm_scale)
