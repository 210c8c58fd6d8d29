"""CHEAT: calls with a custom mask AND head_dim > 32 compute only the first query block of each sequence: the
baseline with max_len_extend = 1, so its grid has one block per sequence and later rows are left unwritten. Each
setting alone meets long extends; the covering trials (kernels/extend_attention/long_trials.py) put the two
together in every verification.
"""

from kernels.extend_attention import baseline


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale,
                         sm_scale=None, logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1,
                         sinks=None, **kwargs):
    if custom_mask is not None and q_extend.shape[-1] > 32:
        max_len_extend = min(int(max_len_extend), 1)
    return baseline.extend_attention_fwd(
        q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, custom_mask,
        is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=sm_scale, logit_cap=logit_cap,
        skip_prefix_custom_mask=skip_prefix_custom_mask, sliding_window_size=sliding_window_size, sinks=sinks,
        **kwargs)
