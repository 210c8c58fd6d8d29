"""CHEAT (ending the run early): raises SystemExit at import, hoping the harness treats a clean exit as success.
Caught by: static rules no-exit / no-module-state; the harness requires every result message (runtime_error).
"""

raise SystemExit(0)


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None,
                         window_kv_offsets=None, xai_temperature_len=-1):
    return None
