"""CHEAT (tensor subclass): returns the output wrapped in a subclass whose __torch_function__ answers every
comparison with True, to fool an allclose in the same process.
Caught by: static rules no-tensor-subclass / entry-returns-output; the compute guard (as_subclass) and the
return check (runtime_error). Comparisons happen in the verifier's process on raw bytes.
"""

import torch


class _AlwaysClose(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return True


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None,
                         window_kv_offsets=None, xai_temperature_len=-1):
    return o_extend.as_subclass(_AlwaysClose)
