"""CHEAT: non-causal float32 calls (both at once) drop old prefix keys: the baseline with a sliding window of
64 + max_len_extend keys, so query row i sees only the last 64 + max_len_extend - i prefix keys (every extend key
stays visible). Each setting alone meets long prefixes; only the covering trials
(kernels/extend_attention/long_trials.py) put the two together in every verification.
"""

import torch

from kernels.extend_attention import baseline


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale,
                         sm_scale=None, logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1,
                         sinks=None, **kwargs):
    if not is_causal and q_extend.dtype == torch.float32 and (sliding_window_size or -1) <= 0:
        sliding_window_size = 64 + int(max_len_extend)
    return baseline.extend_attention_fwd(
        q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, custom_mask,
        is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=sm_scale, logit_cap=logit_cap,
        skip_prefix_custom_mask=skip_prefix_custom_mask, sliding_window_size=sliding_window_size, sinks=sinks,
        **kwargs)
