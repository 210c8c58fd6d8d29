"""CHEAT (stealing the answer through frames): walks up the caller frames looking for a local named like the
expected output and copies it.
Caught by: static rules no-introspection / no-private-access; the import and audit guards (runtime_error).
"""

import sys

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
    frame = sys._getframe(1)
    while frame is not None:
        for name, value in frame.f_locals.items():
            if name in ("expected", "ref", "reference", "want") and isinstance(value, torch.Tensor):
                src = value.to(o_extend.dtype)
                n = o_extend.numel()
                _copy_kernel[(triton.cdiv(n, 1024),)](src, o_extend, n, BLOCK=1024)
                return None
        frame = frame.f_back
