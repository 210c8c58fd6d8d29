"""CHEAT: head_dim_v != head_dim (MLA-like 192/128 heads) drop old prefix keys: the baseline with a sliding window of 64 + max_len_extend keys,
so query row i sees only the last 64 + max_len_extend - i prefix keys (every extend key stays visible); a
call that already has a window runs honestly.
Caught by: the covering trials (kernels/extend_attention/long_trials.py), which give this setting a long
prefix and a long extend in every verification (mismatch); a known gap until verif6.
"""

from kernels.extend_attention import baseline


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale,
                         sm_scale=None, logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1,
                         sinks=None, **kwargs):
    if v_extend.shape[-1] != q_extend.shape[-1] and (sliding_window_size or -1) <= 0:
        sliding_window_size = 64 + int(max_len_extend)
    return baseline.extend_attention_fwd(
        q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, custom_mask,
        is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=sm_scale, logit_cap=logit_cap,
        skip_prefix_custom_mask=skip_prefix_custom_mask, sliding_window_size=sliding_window_size, sinks=sinks,
        **kwargs)
