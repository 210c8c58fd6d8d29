"""CHEAT (aliasing): rebinds the output's storage to an input's so the "output" is whatever the input holds.
Caught by: static rule no-tensor-compute-methods (set_); the compute guard and the storage-identity check
(runtime_error).
"""


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None,
                         window_kv_offsets=None, xai_temperature_len=-1):
    o_extend.set_(v_extend)
